package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// Under NeMo (Transformer Engine: a sliding window runs under context parallelism
// only by all-to-alls, framework.Runs.NoSlidingWindowRingCP) the search gives a
// sliding-window model context parallelism only by all-to-alls, constraints asking
// for the ring are refused naming constraints.cp_all_to_all, and under torchtitan
// the ring is searched as before.
func TestSlidingWindowRingCPNotSearched(t *testing.T) {
	e := step.New()
	a := mustModel(t, "llama3-8b")
	a.SlidingWindow = 1024
	req := planner.Request{Model: a, Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 64, TopK: 200,
		Training:    step.Training{SeqLen: 8192, GlobalBatch: 64, Framework: "nemo"},
		Constraints: planner.Constraints{CP: []int{2, 4}}}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil || len(res.Top) == 0 {
		t.Fatalf("nemo: %v (%d plans)", err, len(res.Top))
	}
	for _, p := range append(res.Top, res.Pareto...) {
		if l := p.Estimate.Layout; l.CP > 1 && !l.CPAllToAll {
			t.Errorf("nemo: plan %+v runs ring context parallelism with a sliding window", l)
		}
	}
	req.Constraints.CPAllToAll = []bool{false, true}
	if _, err := planner.Search(context.Background(), e, req); err == nil || !strings.Contains(err.Error(), "constraints.cp_all_to_all") || !strings.Contains(err.Error(), "nemo") {
		t.Errorf("nemo: asking for ring CP with a sliding window: got %v, want an error naming constraints.cp_all_to_all and the framework", err)
	}
	req.Training.Framework, req.Constraints.CPAllToAll = "torchtitan", []bool{false}
	res, err = planner.Search(context.Background(), e, req)
	if err != nil || len(res.Top) == 0 || res.Top[0].Estimate.Layout.CP < 2 || res.Top[0].Estimate.Layout.CPAllToAll {
		t.Errorf("torchtitan: ring CP with a sliding window: %v, want ring plans", err)
	}
}
