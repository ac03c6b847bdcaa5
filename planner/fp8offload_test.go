package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// fp8 weights are searched where the framework stores them: on by default with fp8
// matmuls under Megatron-Core (never slower, never more memory), off when the
// constraints say so, both when they list both; refused by field without fp8.
func TestFP8WeightsSearched(t *testing.T) {
	e := step.New()
	base := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 1), GPUs: 8, TopK: 5,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Precision: step.FP8}}
	count := func(req planner.Request) (on, off int, best float64) {
		t.Helper()
		res, err := planner.Search(context.Background(), e, req)
		if err != nil || len(res.Top) == 0 {
			t.Fatalf("%+v: %v %s", req.Constraints, err, res.NoPlan)
		}
		for _, p := range res.Top {
			if p.Estimate.Layout.FP8Params {
				on++
			} else {
				off++
			}
		}
		return on, off, res.Top[0].Score
	}
	on, off, def := count(base)
	if on == 0 || off != 0 {
		t.Errorf("default: %d plans with fp8 weights, %d without", on, off)
	}
	pinned := base
	pinned.Constraints.FP8Params = []bool{false}
	on, off, without := count(pinned)
	if on != 0 || off == 0 || without < def {
		t.Errorf("pinned off: %d with, %d without; best %.4f s against %.4f s with fp8 weights", on, off, without, def)
	}
	both := base
	both.Constraints.FP8Params = []bool{true, false}
	if _, _, b := count(both); b != def {
		t.Errorf("both listed: best %.4f s, want the fp8-weight best %.4f s", b, def)
	}
	t.Logf("llama3-8b fp8 on 8 H100: best %.4f s with fp8 weights, %.4f s without", def, without)
	bad := base
	bad.Training.Precision = step.BF16
	bad.Constraints.FP8Params = []bool{true}
	if _, err := planner.Search(context.Background(), e, bad); err == nil || !strings.Contains(err.Error(), "constraints.fp8_params") {
		t.Errorf("fp8 weights under bf16: %v", err)
	}
	// bf16 searches do not list it.
	bf := base
	bf.Training.Precision = step.BF16
	if on, _, _ := count(bf); on != 0 {
		t.Errorf("bf16: %d plans with fp8 weights", on)
	}
}

// Activation offload rescues what fits no other way: Llama 3 8B on one DGX H100
// with micro-batches of 4 × 8192 tokens and no recomputation holds about 146 GB of
// activations a GPU; with them in host memory (2 TB a node) the GPU keeps two
// layers' worth. Not searched where it is not needed, pinnable off and on.
func TestActivationOffloadSearched(t *testing.T) {
	e := step.New()
	req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 1), GPUs: 8, TopK: 3,
		Training:    step.Training{SeqLen: 8192, GlobalBatch: 64},
		Constraints: planner.Constraints{TP: []int{1}, PP: []int{1}, CP: []int{1}, MicroBatch: []int{4}, Recompute: []step.Recompute{step.RecomputeNone}}}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Top) == 0 {
		t.Fatalf("no plan: %s", res.NoPlan)
	}
	for _, p := range res.Top {
		m := p.Estimate.Memory
		if !p.Estimate.Layout.OffloadActivations || !m.Fits || m.Host <= 100 {
			t.Errorf("plan %+v: offload %v, fits %v, host %.1f GB", p.Estimate.Layout, p.Estimate.Layout.OffloadActivations, m.Fits, m.Host)
		}
	}
	t.Logf("offloaded: %.3f s, %.1f GB of activations on the host", res.Top[0].Score, res.Top[0].Estimate.Memory.Host)
	off := req
	off.Constraints.OffloadActivations = []bool{false}
	none, err := planner.Search(context.Background(), e, off)
	if err != nil {
		t.Fatal(err)
	}
	if len(none.Top) != 0 || !strings.Contains(none.NoPlan, "memory") {
		t.Errorf("offload off: %d plans (%q)", len(none.Top), none.NoPlan)
	}
	// Where the layouts fit anyway, the default search does not offload; pinned
	// on, every plan does, and none is faster.
	fit := req
	fit.Constraints = planner.Constraints{}
	plain, err := planner.Search(context.Background(), e, fit)
	if err != nil || len(plain.Top) == 0 {
		t.Fatal(err)
	}
	for _, p := range plain.Top {
		if p.Estimate.Layout.OffloadActivations {
			t.Errorf("plan %+v offloads although it fits without", p.Estimate.Layout)
		}
	}
	fit.Constraints.OffloadActivations = []bool{true}
	pinned, err := planner.Search(context.Background(), e, fit)
	if err != nil || len(pinned.Top) == 0 {
		t.Fatal(err)
	}
	for _, p := range pinned.Top {
		l := p.Estimate.Layout
		if !l.OffloadActivations || !step.ActivationOffloadSchedule(l.Schedule, l.PP) {
			t.Errorf("pinned on: plan %+v", l)
		}
	}
	if pinned.Top[0].Score < plain.Top[0].Score {
		t.Errorf("offloaded best %.4f s beats %.4f s without", pinned.Top[0].Score, plain.Top[0].Score)
	}
}
