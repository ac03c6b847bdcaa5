package wire_test

import (
	"strings"
	"testing"

	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A cluster too small for the job names the size field the request gave: gpus
// is the job's size, max_gpus only the top of a range ("up to"), so a refusal
// of max_gpus 64 on 4 nodes never calls 64 the job's GPUs.
func TestClusterTooSmallNamesTheSizeField(t *testing.T) {
	pool := wire.NewClusters(4)
	for _, tc := range []struct {
		name          string
		set           func(*pb.EstimatePlanRequest)
		want, wantNot string
	}{
		{"gpus", func(r *pb.EstimatePlanRequest) { r.Gpus = 64 }, "4 nodes of 8 GPUs cannot hold the job's 64 GPUs (gpus 64)", "up to"},
		{"max_gpus", func(r *pb.EstimatePlanRequest) { r.MaxGpus = 64 }, "4 nodes of 8 GPUs cannot hold jobs of up to 64 GPUs (max_gpus 64)", "the 64 GPUs"},
		{"min_gpus and max_gpus", func(r *pb.EstimatePlanRequest) { r.MinGpus, r.MaxGpus = 40, 64 }, "cannot hold jobs of up to 64 GPUs (max_gpus 64)", "the 64 GPUs"},
	} {
		r := &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 4},
			Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}}
		tc.set(r)
		_, err := wire.ResolvePlan(pool, r, 131072, 1<<20)
		fes := wire.FieldErrors(err)
		if len(fes) != 1 || fes[0].Field != "cluster.nodes" || !strings.Contains(fes[0].Rule, tc.want) || strings.Contains(fes[0].Rule, tc.wantNot) {
			t.Errorf("%s: got %v, want cluster.nodes: …%s…", tc.name, err, tc.want)
		}
	}
}
