package planner_test

import (
	"context"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// MoE parallel folding in the search (Megatron-Core's expert RankGenerator: ETP ×
// EP × PP must divide the world, so the expert groups fold over a stage's TP × CP ×
// DP ranks): Qwen3-235B-A22B as published on 256 H100 — TP 2, PP 8, EP 32, so DP
// 16 — is a layout the planner lists, with each rank holding 4 of the 128 experts
// whole (expert TP 1), and every MoE plan it returns folds its expert groups over
// its stage's ranks.
func TestMoEParallelFolding(t *testing.T) {
	e := step.New()
	req := planner.Request{Model: mustModel(t, "qwen3-235b-a22b"), Cluster: mustCluster(t, "dgx-h100", 32), GPUs: 256, TopK: 5,
		Training:    step.Training{SeqLen: 4096, GlobalBatch: 1024},
		Constraints: planner.Constraints{TP: []int{2}, PP: []int{8}, EP: []int{32}, CP: []int{1}}}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Top) == 0 {
		t.Fatalf("TP 2 × PP 8 × EP 32 on 256 GPUs: no plan (%s; %+v)", res.NoPlan, res.Stats.Pruned)
	}
	for _, p := range res.Top {
		l := p.Estimate.Layout
		if l.TP != 2 || l.PP != 8 || l.DP != 16 || l.EP != 32 || l.ETP != 1 {
			t.Errorf("plan %+v: want tp 2, pp 8, dp 16, ep 32 with the experts whole (etp 1)", l)
		}
		// The plan is what estimate says of its layout.
		r, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: l})
		if err != nil {
			t.Fatalf("estimate refuses the plan's layout %+v: %v", l, err)
		}
		if r.StepTime != p.Estimate.StepTime {
			t.Errorf("plan %+v: %.4g s, estimate %.4g s", l, p.Estimate.StepTime, r.StepTime)
		}
	}
	t.Logf("qwen3-235b-a22b tp2 pp8 ep32 dp16: %.3f s (%s)", res.Top[0].Score, res.Top[0].Estimate.Layout.Schedule)

	// Unpinned, the search lists EP beyond DP, and every plan's expert groups fold.
	req.Constraints = planner.Constraints{}
	req.TopK = 20
	res, err = planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(res.Top, res.Pareto...) {
		l := p.Estimate.Layout
		etp := l.ETP
		if etp == 0 {
			etp = l.TP
		}
		if (l.TP*l.CP*l.DP)%(etp*l.EP) != 0 || 128%l.EP != 0 {
			t.Errorf("plan %+v: etp × ep does not divide tp × cp × dp", l)
		}
	}
}

// A framework without MoE parallel folding's expert tensor-parallel setting (NeMo
// 24.12, Constraints.ExpertsWhole [false]) gets only plans whose experts split like
// the dense MLP; pinned to [true], every plan with TP > 1 holds them whole.
func TestExpertsWholeConstraint(t *testing.T) {
	e := step.New()
	req := planner.Request{Model: mustModel(t, "qwen3-235b-a22b"), Cluster: mustCluster(t, "dgx-h100", 32), GPUs: 256, TopK: 10,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 1024}}
	for _, whole := range []bool{false, true} {
		req.Constraints = planner.Constraints{TP: []int{2, 4}, PP: []int{8}, ExpertsWhole: []bool{whole}}
		res, err := planner.Search(context.Background(), e, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Top) == 0 {
			t.Fatalf("experts whole %v: no plan (%s)", whole, res.NoPlan)
		}
		for _, p := range append(res.Top, res.Pareto...) {
			l := p.Estimate.Layout
			if got := l.ETP == 1; got != whole {
				t.Errorf("experts whole %v: plan tp %d ep %d etp %d", whole, l.TP, l.EP, l.ETP)
			}
		}
	}
}
