package service

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// An answer depends on its request alone, not on what the service answered
// before: every EstimateStep key base, and variants of them that change what the
// answer's assumptions describe (the data-parallel bucket, which grows with dp
// under Megatron-Core; CUDA graphs; a Grace host), is answered by a fresh service
// and by one that answered all the others first, and the two answers are the
// same. The estimator kept its assumption texts by GPU, precision and framework,
// so the host's note of a model with MLA (9 Transformer Engine modules, 375 µs)
// was given to the next model without it on the same GPU (5 modules, 216 µs), and
// a bucket size to the next data-parallel size.
func TestAnswersDoNotDependOnHistory(t *testing.T) {
	var reqs []*pb.EstimateStepRequest
	for _, b := range keyBases(t) {
		r, ok := b.req.(*pb.EstimateStepRequest)
		if !ok {
			continue
		}
		reqs = append(reqs, r)
		wide := proto.CloneOf(r) // dp 64: a 128 MB bucket, not 80 MB
		wide.Layout.Dp, wide.Cluster.Nodes, wide.Training.GlobalBatch = 64, 64, 4096
		graphs := proto.CloneOf(r)
		graphs.Training.CudaGraphs = true
		reqs = append(reqs, wide, graphs)
	}
	grace := &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "gb200-nvl72"}, Nodes: 1},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 256, Framework: "megatron"},
		Layout:   &pb.Layout{Tp: 2, Pp: 1, Dp: 4, MicroBatch: 1}}
	b200 := proto.CloneOf(grace)
	b200.Cluster = &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "hgx-b200"}, Nodes: 1}
	reqs = append(reqs, grace, b200)

	ctx := context.Background()
	// The variants a base cannot take (a free map that does not hold 64 nodes)
	// are left out.
	reqs = slices.DeleteFunc(reqs, func(r *pb.EstimateStepRequest) bool {
		_, err := New(Options{}).EstimateStep(ctx, r)
		return err != nil
	})
	if len(reqs) < 25 {
		t.Fatalf("only %d requests resolve", len(reqs))
	}
	answer := func(s *Service, r *pb.EstimateStepRequest) *pb.EstimateStepResponse {
		resp, err := s.EstimateStep(ctx, r)
		if err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		return resp
	}
	t.Logf("%d requests", len(reqs))
	used := New(Options{})
	for _, r := range reqs {
		answer(used, r)
	}
	for i, r := range reqs {
		fresh, again := answer(New(Options{}), r), answer(used, r)
		if !proto.Equal(fresh, again) {
			fa, ga := fresh.GetEstimate().GetAssumptions(), again.GetEstimate().GetAssumptions()
			for j := range min(len(fa), len(ga)) {
				if fa[j] != ga[j] {
					t.Errorf("request %d (%s): after the others, assumption %d is\n  %s\nnot\n  %s", i, r.GetModel(), j, ga[j], fa[j])
				}
			}
			fresh.GetEstimate().Assumptions, again.GetEstimate().Assumptions = nil, nil
			if !proto.Equal(fresh, again) {
				t.Errorf("request %d: the answer after the others differs beyond its assumptions", i)
			}
		}
	}
}
