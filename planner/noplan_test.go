package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// A search without a plan says why: the free GPUs cannot host the job (excluded
// nodes on a cluster sized to it), or nothing fits in memory.
func TestNoPlanSaysWhy(t *testing.T) {
	e := step.New()
	for _, tc := range []struct {
		name string
		req  planner.Request
		want []string
	}{
		{"excluded nodes", planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 4), GPUs: 32,
			Training: step.Training{SeqLen: 8192, GlobalBatch: 64}, ExcludeNodes: []int{3, 1}},
			[]string{"needs 32 GPUs; 16 are free on 2 of the cluster's 4 nodes", "nodes 1, 3 excluded", "cluster.nodes"}},
		{"memory", planner.Request{Model: mustModel(t, "gpt3-175b"), Cluster: mustCluster(t, "dgx-h100", 1), GPUs: 8,
			Training: step.Training{SeqLen: 2048, GlobalBatch: 64}},
			[]string{"do not fit in the GPUs' memory"}},
	} {
		res, err := planner.Search(context.Background(), e, tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(res.Top) != 0 {
			t.Fatalf("%s: %d plans", tc.name, len(res.Top))
		}
		for _, w := range tc.want {
			if !strings.Contains(res.NoPlan, w) {
				t.Errorf("%s: reason %q does not say %q", tc.name, res.NoPlan, w)
			}
		}
	}
	res, err := planner.Search(context.Background(), e, llama8bRequest(t))
	if err != nil || len(res.Top) == 0 || res.NoPlan != "" {
		t.Errorf("a search with plans: %d plans, reason %q, %v", len(res.Top), res.NoPlan, err)
	}
}

// TP comm-GEMM overlap is searched by default and can be pinned: GPT-3 175B on 1024
// H100 has it in its best plans, and constraints that say off leave it out.
func TestTPOverlapSearched(t *testing.T) {
	e := step.New()
	req := planner.Request{Model: mustModel(t, "gpt3-175b"), Cluster: mustCluster(t, "dgx-h100", 128), GPUs: 1024,
		Training: step.Training{SeqLen: 2048, GlobalBatch: 1536}, TopK: 5}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil || len(res.Top) == 0 {
		t.Fatal(err)
	}
	if !res.Top[0].Layout.OverlapTP {
		t.Errorf("best plan %+v without TP overlap", res.Top[0].Layout)
	}
	req.Constraints.OverlapTP = []bool{false}
	off, err := planner.Search(context.Background(), e, req)
	if err != nil || len(off.Top) == 0 {
		t.Fatal(err)
	}
	for _, p := range off.Top {
		if p.Layout.OverlapTP {
			t.Errorf("overlap pinned off, plan %+v", p.Layout)
		}
	}
	if !(res.Top[0].Score < off.Top[0].Score) {
		t.Errorf("best with overlap %.3f s, without %.3f s", res.Top[0].Score, off.Top[0].Score)
	}
}

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
