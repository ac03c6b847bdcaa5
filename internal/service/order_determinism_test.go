package service

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The same request gets the same bytes, asked twice and 8 times at once, and a
// request whose repeated fields are the same sets in another order (constraint
// lists, exclude_nodes, degraded_nodes; a RankConfigs batch's items aside, whose
// index is their order) gets the same answer too, apart from the search's
// elapsed time. The search keys its cache on the canonical constraints
// (Constraints.Canonical), so an answer that depended on the lists' order would
// also be served to the other order from the cache.
func TestSameAnswerInAnyOrderAndAtOnce(t *testing.T) {
	s := New(Options{})
	plan := func(tp, mbs, rc []int32, excl []int32, degraded []*pb.DegradedNode) *pb.EstimatePlanRequest {
		recompute := make([]pb.Recompute, len(rc))
		for i, r := range rc {
			recompute[i] = pb.Recompute(r)
		}
		return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 6},
			Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Gpus: 16, TopK: 5, IncludeDominated: true,
			Constraints:  &pb.Constraints{Tp: tp, MicroBatch: mbs, Recompute: recompute, Schedules: []pb.Schedule{pb.Schedule_SCHEDULE_1F1B, pb.Schedule_SCHEDULE_INTERLEAVED}},
			ExcludeNodes: excl, DegradedNodes: degraded}
	}
	d := func(node int32, nic float64) *pb.DegradedNode { return &pb.DegradedNode{Node: node, NicSpeed: nic} }
	a := plan([]int32{1, 2, 4, 8}, []int32{1, 2}, []int32{1, 2, 3}, []int32{1, 4}, []*pb.DegradedNode{d(0, 0.5), d(2, 0.25)})
	b := plan([]int32{8, 4, 2, 1}, []int32{2, 1}, []int32{3, 1, 2}, []int32{4, 1}, []*pb.DegradedNode{d(2, 0.25), d(0, 0.5)})
	b.Constraints.Schedules = []pb.Schedule{pb.Schedule_SCHEDULE_INTERLEAVED, pb.Schedule_SCHEDULE_1F1B}
	answer := func(r *pb.EstimatePlanRequest) []byte {
		t.Helper()
		resp, err := s.EstimatePlan(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetPlans()) == 0 {
			t.Fatalf("no plan: %s", resp.GetNoPlanReason())
		}
		resp.Stats.ElapsedMs = 0
		out, err := proto.MarshalOptions{Deterministic: true}.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := answer(a)
	if got := answer(a); !bytes.Equal(got, want) {
		t.Error("the same EstimatePlan twice: answers differ")
	}
	if got := answer(b); !bytes.Equal(got, want) {
		t.Error("the same sets in another order: answers differ")
	}
	got := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			r := a
			if i%2 == 1 {
				r = b
			}
			resp, err := s.EstimatePlan(context.Background(), r)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Stats.ElapsedMs = 0
			got[i], _ = proto.MarshalOptions{Deterministic: true}.Marshal(resp)
		})
	}
	wg.Wait()
	for i, g := range got {
		if !bytes.Equal(g, want) {
			t.Errorf("at once, answer %d differs", i)
		}
	}

	rank := &pb.RankConfigsRequest{Objective: pb.Objective_OBJECTIVE_COST, PricePerGpuHour: 2, TokenBudget: 1e12}
	for _, l := range []*pb.Layout{{Tp: 8, Dp: 2, MicroBatch: 1}, {Tp: 2, Dp: 8, MicroBatch: 2}, {Tp: 4, Pp: 2, Dp: 2, MicroBatch: 1}, {Tp: 3, Dp: 1, MicroBatch: 1}} {
		rank.Configs = append(rank.Configs, &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
			Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: l})
	}
	ranked := func() []byte {
		resp, err := s.RankConfigs(context.Background(), rank)
		if err != nil {
			t.Error(err)
			return nil
		}
		out, _ := proto.MarshalOptions{Deterministic: true}.Marshal(resp)
		return out
	}
	first := ranked()
	rs := make([][]byte, 8)
	for i := range rs {
		wg.Go(func() { rs[i] = ranked() })
	}
	wg.Wait()
	for i, r := range append(rs, ranked()) {
		if !bytes.Equal(r, first) {
			t.Errorf("RankConfigs answer %d differs from the first", i)
		}
	}
}
