package service

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Each plan of an EstimatePlan answer lists every GPU of its placement, so the
// answer grows with top_k × the job's GPUs. Nothing bounded it: llama3-405b on
// 98 304 GPUs with top_k 1000 (409 plans found) took the daemon to 3.4 GB resident
// (its memory budget is 540 MiB, the manifests' pod 1 GiB) and 51 s of CPU for one
// call. The product is refused before the search, naming top_k and the flag; the
// default top_k on the largest job allowed still passes.
func TestAnswerSizeIsBounded(t *testing.T) {
	s := New(Options{})
	req := func(gpus, maxGPUs, topK int32) *pb.EstimatePlanRequest {
		return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-405b"}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Training: &pb.Training{SeqLen: 8192, GlobalBatch: 4096}, Gpus: gpus, MaxGpus: maxGPUs, MinGpus: max(0, maxGPUs-8), TopK: topK}
	}
	for _, c := range []struct {
		req  *pb.EstimatePlanRequest
		want string // "": accepted
	}{
		{req(98304, 0, 1000), "98304000 GPUs"},
		{req(98304, 0, 22), "2162688 GPUs"},
		{req(0, 131072, 17), "2228224 GPUs"},
		{req(98304, 0, 21), ""},
		{req(131072, 0, 0), ""}, // the default top_k, 10
		{req(131072, 0, 16), ""},
	} {
		_, err := s.estimatePlan(c.req)
		var le *wire.LimitError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("gpus %d max_gpus %d top_k %d: %v", c.req.Gpus, c.req.MaxGpus, c.req.TopK, err)
		case c.want == "":
		case !errors.As(err, &le) || le.Field != "top_k" || codeOf(err) != InvalidArgument ||
			!strings.Contains(err.Error(), "--max-answer-gpus") || !strings.Contains(err.Error(), c.want):
			t.Errorf("gpus %d max_gpus %d top_k %d: got %v, want INVALID_ARGUMENT on top_k naming --max-answer-gpus and %q", c.req.Gpus, c.req.MaxGpus, c.req.TopK, err, c.want)
		}
	}
}
