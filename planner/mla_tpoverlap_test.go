package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// Megatron-Core overlaps no TP communication of a model with latent attention
// (framework.Runs.NoMLATPOverlap): the search under its profiles returns no plan
// with the overlap for DeepSeek-V3 (eight of its layers, on 64 GB200), constraints
// asking for it are refused naming constraints.overlap_tp and the framework, and a
// dense model's search still finds plans with it.
func TestMLATPOverlapNotSearched(t *testing.T) {
	e := step.New()
	dsv3 := mustModel(t, "deepseek-v3")
	dsv3.Layers = 8
	for _, fw := range []string{"megatron-core", "nemo-25.04"} {
		req := planner.Request{Model: dsv3, Cluster: mustCluster(t, "gb200-nvl72", 16), GPUs: 64, TopK: 50,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 256, Framework: fw}}
		res, err := planner.Search(context.Background(), e, req)
		if err != nil {
			t.Fatalf("%s: %v", fw, err)
		}
		if len(res.Top) == 0 {
			t.Fatalf("%s: no plan (%s)", fw, res.NoPlan)
		}
		tpPlans := 0
		for _, p := range append(res.Top, res.Pareto...) {
			if p.Estimate.Layout.TP > 1 {
				tpPlans++
			}
			if p.Estimate.Layout.OverlapTP {
				t.Errorf("%s: plan %+v overlaps TP communication", fw, p.Estimate.Layout)
			}
		}
		if tpPlans == 0 {
			t.Errorf("%s: no plan with tp > 1 among the %d: the rule is not exercised", fw, len(res.Top))
		}
		req.Constraints = planner.Constraints{OverlapTP: []bool{false, true}}
		_, err = planner.Search(context.Background(), e, req)
		if err == nil || !strings.Contains(err.Error(), "constraints.overlap_tp:") || !strings.Contains(err.Error(), fw) {
			t.Errorf("%s: DeepSeek-V3 asking for TP overlap: got %v, want an error naming constraints.overlap_tp and the framework", fw, err)
		}
	}
	req := planner.Request{Model: mustModel(t, "llama3-70b"), Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 64, TopK: 1,
		Training: step.Training{SeqLen: 8192, GlobalBatch: 64}, Constraints: planner.Constraints{OverlapTP: []bool{true}}}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil || len(res.Top) == 0 || !res.Top[0].Estimate.Layout.OverlapTP {
		t.Errorf("llama3-70b with TP overlap under megatron-core: %v, want a plan with it", err)
	}
}

// Under nemo-25.04 the search gives DeepSeek-V3 no context parallelism
// (framework.Runs.NoMLAContextParallel: Transformer Engine 2.2–2.4 has no attention
// backend for it), and constraints asking for it are refused naming constraints.cp
// and the framework; under nemo (Transformer Engine 2.5 on) it is searched.
func TestMLAContextParallelNotSearched(t *testing.T) {
	e := step.New()
	dsv3 := mustModel(t, "deepseek-v3")
	dsv3.Layers = 8
	req := planner.Request{Model: dsv3, Cluster: mustCluster(t, "gb200-nvl72", 16), GPUs: 64, TopK: 200,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 256, Framework: "nemo-25.04"}}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil || len(res.Top) == 0 {
		t.Fatalf("nemo-25.04: %v (%d plans)", err, len(res.Top))
	}
	for _, p := range append(res.Top, res.Pareto...) {
		if p.Estimate.Layout.CP > 1 {
			t.Errorf("nemo-25.04: plan %+v has context parallelism", p.Estimate.Layout)
		}
	}
	req.Constraints = planner.Constraints{CP: []int{1, 2}}
	if _, err := planner.Search(context.Background(), e, req); err == nil || !strings.Contains(err.Error(), "constraints.cp:") || !strings.Contains(err.Error(), "nemo-25.04") {
		t.Errorf("nemo-25.04: DeepSeek-V3 asking for cp 2: got %v, want an error naming constraints.cp and the framework", err)
	}
	req.Training.Framework = "nemo"
	req.Constraints = planner.Constraints{CP: []int{2}}
	if res, err := planner.Search(context.Background(), e, req); err != nil || len(res.Top) == 0 {
		t.Errorf("nemo: DeepSeek-V3 with cp 2: %v, want a plan", err)
	}
}
