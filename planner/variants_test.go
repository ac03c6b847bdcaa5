package planner_test

import (
	"context"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// MoE plans overlap their expert-parallel all-to-alls wherever Megatron-Core runs
// it (ep > 1; no pipeline or interleaved; no full recomputation) and nowhere else;
// constraints can switch it off.
func TestEPOverlapWhereFrameworksRunIt(t *testing.T) {
	e := step.New()
	req := planner.Request{Model: mustModel(t, "qwen3-30b-a3b"), Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 64,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 512}, TopK: 20, IncludeDominated: true}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil || len(res.Top) == 0 {
		t.Fatal(err)
	}
	on := 0
	for _, p := range append(res.Top, res.Pareto...) {
		l := p.Layout
		can := l.EP > 1 && (l.PP == 1 || l.Schedule == step.Interleaved) && l.Recompute != step.RecomputeFull && l.Schedule != step.DualPipe
		if l.OverlapEP != can {
			t.Errorf("plan %+v: overlap_ep %v", l, l.OverlapEP)
		}
		if l.OverlapEP {
			on++
		}
	}
	if on == 0 {
		t.Error("no plan overlaps its all-to-alls")
	}
	req.Constraints.OverlapEP = []bool{false}
	off, err := planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(off.Top, off.Pareto...) {
		if p.Layout.OverlapEP {
			t.Errorf("overlap_ep off, plan %+v", p.Layout)
		}
	}
	if len(off.Top) == 0 {
		t.Fatal("no plan without the overlap")
	}
	t.Logf("qwen3-30b-a3b on 64 H100: best %.3f s (%+v), %.3f s without the overlap (%+v)",
		res.Top[0].Score, res.Top[0].Layout, off.Top[0].Score, off.Top[0].Layout)
	// The overlap is switched on only where it is never slower, so the search
	// that may use it is never beaten by the one that may not.
	if res.Top[0].Score > off.Top[0].Score {
		t.Errorf("best with the overlap %.4f s, without %.4f s", res.Top[0].Score, off.Top[0].Score)
	}
}

// Ulysses and ring context parallelism are both searched when asked, and either can
// be pinned; by default ring only.
func TestCPVariantsSearched(t *testing.T) {
	e := step.New()
	req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 4), GPUs: 32,
		Training: step.Training{SeqLen: 65536, GlobalBatch: 32}, TopK: 10, Constraints: planner.Constraints{CP: []int{4}}}
	def, err := planner.Search(context.Background(), e, req)
	if err != nil || len(def.Top) == 0 {
		t.Fatal(err)
	}
	for _, p := range def.Top {
		if p.Layout.CPAllToAll {
			t.Errorf("default search, plan %+v with Ulysses", p.Layout)
		}
	}
	req.Constraints.CPAllToAll = []bool{false, true}
	both, err := planner.Search(context.Background(), e, req)
	if err != nil || len(both.Top) == 0 {
		t.Fatal(err)
	}
	for _, v := range []bool{false, true} {
		req.Constraints.CPAllToAll = []bool{v}
		one, err := planner.Search(context.Background(), e, req)
		if err != nil || len(one.Top) == 0 {
			t.Fatal(err)
		}
		for _, p := range one.Top {
			if p.Layout.CPAllToAll != v {
				t.Errorf("cp_all_to_all pinned %v, plan %+v", v, p.Layout)
			}
		}
		if one.Stats.Enumerated >= both.Stats.Enumerated {
			t.Errorf("pinned %v: %d layouts, both variants %d", v, one.Stats.Enumerated, both.Stats.Enumerated)
		}
		if one.Top[0].Score < both.Top[0].Score {
			t.Errorf("pinned %v beats the search of both: %.4f < %.4f", v, one.Top[0].Score, both.Top[0].Score)
		}
	}
}
