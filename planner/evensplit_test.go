package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// Constraints.EvenSplit (a framework that splits the layers only evenly, as
// Megatron-LM of 2021 does): GPT-3 175B's 96 layers on 5 pipeline stages take a
// cost-balanced split without it and no plan with it; unpinned, every plan keeps
// the same layers on every stage and model chunk.
func TestEvenSplitConstraint(t *testing.T) {
	e := step.New()
	req := planner.Request{Model: mustModel(t, "gpt3-175b"), Cluster: mustCluster(t, "dgx-a100", 40), GPUs: 320, TopK: 5,
		Training:    step.Training{SeqLen: 2048, GlobalBatch: 640},
		Constraints: planner.Constraints{TP: []int{8}, PP: []int{5}}}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Top) == 0 {
		t.Fatalf("96 layers on 5 stages without even_split: no plan (%s)", res.NoPlan)
	}
	req.Constraints.EvenSplit = true
	if res, err = planner.Search(context.Background(), e, req); err != nil {
		t.Fatal(err)
	} else if len(res.Top) > 0 {
		t.Errorf("96 layers on 5 stages with even_split: plan %+v", res.Top[0].Estimate.Layout)
	}
	req.Constraints = planner.Constraints{TP: []int{8}, EvenSplit: true}
	req.TopK = 20
	if res, err = planner.Search(context.Background(), e, req); err != nil {
		t.Fatal(err)
	}
	if len(res.Top) == 0 {
		t.Fatalf("even_split: no plan (%s)", res.NoPlan)
	}
	for _, p := range append(res.Top, res.Pareto...) {
		l := p.Estimate.Layout
		if v := max(1, l.VirtualStages); 96%(l.PP*v) != 0 || l.LayerSplit != nil {
			t.Errorf("even_split: plan pp %d v %d split %v", l.PP, l.VirtualStages, l.LayerSplit)
		}
	}
}

// A framework that splits the layers only evenly (framework.Runs.EvenLayerSplit:
// megatron-lm-2021) searches as constraints.even_split does without it being
// given, and interleaves only more than 2 pipeline stages; uneven_pp is refused.
func TestEvenLayerSplitFramework(t *testing.T) {
	e := step.New()
	search := func(req planner.Request) planner.Result {
		t.Helper()
		res, err := planner.Search(context.Background(), e, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	layouts := func(res planner.Result) []step.Layout {
		var out []step.Layout
		for _, p := range append(res.Top, res.Pareto...) {
			out = append(out, p.Estimate.Layout)
		}
		return out
	}
	req := planner.Request{Model: mustModel(t, "gpt3-175b"), Cluster: mustCluster(t, "dgx-a100", 40), GPUs: 320, TopK: 5,
		Training:    step.Training{SeqLen: 2048, GlobalBatch: 640, Framework: "megatron-lm-2021"},
		Constraints: planner.Constraints{TP: []int{8}, PP: []int{5}}}
	if res := search(req); len(res.Top) > 0 || res.Stats.Enumerated > 0 || !strings.Contains(res.NoPlan, "constraints.even_split") {
		t.Errorf("96 layers on 5 stages under megatron-lm-2021: %d layouts enumerated, %d plans, no plan because %q; want none enumerated, for even_split",
			res.Stats.Enumerated, len(res.Top), res.NoPlan)
	}

	req.Constraints = planner.Constraints{TP: []int{8}}
	req.TopK = 20
	byFramework := search(req)
	req.Constraints.EvenSplit = true
	given := search(req)
	if len(byFramework.Top) == 0 {
		t.Fatalf("megatron-lm-2021: no plan (%s)", byFramework.NoPlan)
	}
	// Only even splits enumerated, none of them left for the estimator to refuse.
	if a, b := byFramework.Stats, given.Stats; a.Enumerated != b.Enumerated || a.Pruned[planner.PrunedInvalid] != 0 {
		t.Errorf("megatron-lm-2021: %d layouts enumerated, %d refused by the step model; with even_split given %d",
			a.Enumerated, a.Pruned[planner.PrunedInvalid], b.Enumerated)
	}
	got, want := layouts(byFramework), layouts(given)
	if len(got) != len(want) {
		t.Fatalf("megatron-lm-2021: %d plans, with even_split given %d", len(got), len(want))
	}
	for i, l := range got {
		if v := max(1, l.VirtualStages); 96%(l.PP*v) != 0 || l.LayerSplit != nil || l.Schedule == step.Interleaved && l.PP <= 2 {
			t.Errorf("megatron-lm-2021: plan pp %d v %d %s split %v", l.PP, l.VirtualStages, l.Schedule, l.LayerSplit)
		}
		if l.PP != want[i].PP || l.VirtualStages != want[i].VirtualStages || l.DP != want[i].DP || l.MicroBatch != want[i].MicroBatch ||
			l.Schedule != want[i].Schedule || l.Recompute != want[i].Recompute || l.ZeRO != want[i].ZeRO {
			t.Errorf("plan %d: %+v under megatron-lm-2021, %+v with even_split given", i, l, want[i])
		}
	}

	// Interleaving 2 stages: megatron-core's search finds it, megatron-lm-2021's does not.
	small := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-a100", 1), GPUs: 8, TopK: 3,
		Training:    step.Training{SeqLen: 2048, GlobalBatch: 64},
		Constraints: planner.Constraints{TP: []int{1}, PP: []int{2}, Schedules: []step.Schedule{step.Interleaved}}}
	if res := search(small); len(res.Top) == 0 {
		t.Fatalf("interleaved pp 2 under megatron-core: no plan (%s)", res.NoPlan)
	}
	small.Training.Framework = "megatron-lm-2021"
	if res := search(small); len(res.Top) > 0 || res.Stats.Pruned[planner.PrunedInvalid] > 0 {
		t.Errorf("interleaved pp 2 under megatron-lm-2021: %d plans, %d layouts refused by the step model; want none searched",
			len(res.Top), res.Stats.Pruned[planner.PrunedInvalid])
	}

	req.Constraints = planner.Constraints{TP: []int{8}, UnevenPP: true}
	_, err := planner.Search(context.Background(), e, req)
	if err == nil || !strings.Contains(err.Error(), "constraints.uneven_pp") {
		t.Errorf("uneven_pp under megatron-lm-2021: got %v, want an error naming constraints.uneven_pp", err)
	}
}
