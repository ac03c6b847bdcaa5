package planner_test

import (
	"context"
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
