package service

import (
	"context"
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Every refusal over --max-gpus names the flag (docs/service.md: "a limit is for
// the caller to change, not to retry", and the operator's to raise), as a layout's
// and a cluster's did: EstimatePlan's gpus or max_gpus said only "the service's
// limit of 131072", and SimulateCollective's nodes "must be between 1 and 16384
// nodes", a bound the request could not tell from a field's own range.
func TestMaxGPUsRefusalsNameTheFlag(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	lim := s.Limits().MaxGPUs
	model := &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}}
	cluster := &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}
	training := &pb.Training{SeqLen: 4096, GlobalBatch: 512}
	for _, tc := range []struct {
		name, field string
		call        func() error
	}{
		{"plan gpus", "gpus", func() error {
			_, err := s.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: model, Cluster: cluster, Training: training, Gpus: int32(lim + 1)})
			return err
		}},
		{"plan max_gpus", "max_gpus", func() error {
			_, err := s.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: model, Cluster: cluster, Training: training, MaxGpus: int32(lim + 8)})
			return err
		}},
		{"collective nodes", "nodes", func() error {
			_, err := s.SimulateCollective(ctx, &pb.SimulateCollectiveRequest{Cluster: cluster, Nodes: int32(lim/8 + 1),
				Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 20})
			return err
		}},
	} {
		err := tc.call()
		if err == nil || !strings.HasPrefix(err.Error(), tc.field+": ") || !strings.Contains(err.Error(), "--max-gpus") {
			t.Errorf("%s over --max-gpus: %v; want a refusal naming %s and the flag", tc.name, err, tc.field)
		}
	}
}
