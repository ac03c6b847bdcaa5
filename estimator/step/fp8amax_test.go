package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/step"
)

// Transformer Engine's delayed scaling reduces the amaxes of a model chunk's fp8
// tensors (MAX) over Megatron-Core's amax reduction group, the TP × CP × DP ranks
// of a stage (parallel_state.get_amax_reduction_group(with_context_parallel=True)),
// when the chunk's outer fp8_autocast exits and when its backward ends: one fp32
// per fp8 tensor, three per GEMM forward, two backward (Transformer Engine's
// num_gemms × 3 / × 2 fp8 metadata). Llama 3 8B at TP 2 × PP 2 × DP 8 on 4 nodes:
// 4 GEMMs a layer, 16 layers a stage, 192 and 128 amaxes, on the 2 stages' groups
// of 16 (ranks tp + 2·dp + 16·pp), once per micro-batch each, each stage's at its
// own time in the pipeline (priced as stage 0's group alone, as the model prices a
// stage's collectives); 8 micro-batches at GBS 64, micro-batch 1.
// Current scaling and bf16 reduce nothing here.
func TestFP8DelayedAmaxReduction(t *testing.T) {
	e := step.New()
	m := collective.NewModel(collective.Default())
	cl := cluster(t, "dgx-h100", 4)
	run := func(prec step.Precision, recipe step.FP8Recipe) step.Result {
		t.Helper()
		r, err := e.Estimate(step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cl,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: "megatron-core", Optimizer: step.AdamMixed(),
				Precision: prec, FP8Recipe: recipe},
			Layout: step.Layout{TP: 2, PP: 2, DP: 8, MicroBatch: 1, SP: true, ZeRO: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	amaxCalls := func(r step.Result) []step.CommCall { return commsWhen(r, "amax reduction") }
	var groups [][]int
	for pp := range 2 {
		var g []int
		for dp := range 8 {
			g = append(g, 2*dp+16*pp, 2*dp+1+16*pp)
		}
		groups = append(groups, g)
	}
	p, err := collective.PlaceGroups(cl, groups[:1])
	if err != nil {
		t.Fatal(err)
	}
	r := run(step.FP8, step.FP8Delayed)
	calls := amaxCalls(r)
	if len(calls) != 2 {
		t.Fatalf("delayed scaling: %d amax reductions listed, want forward and backward", len(calls))
	}
	gemms := 4.0 * float64(arch(t, "llama3-8b").Layers) / 2
	for i, per := range []float64{3, 2} {
		c := calls[i]
		want, err := m.Estimate(p, collective.AllReduce, per*gemms*4, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Group != 16 || c.Concurrent != 1 || c.Bytes != per*gemms*4 || c.PerStep != float64(r.MicroBatches) || math.Abs(c.TimeUs-want.TimeUs) > 1e-6 {
			t.Errorf("%+v, want %g bytes over stage 0's group of 16, %.1f µs, %d a step", c, per*gemms*4, want.TimeUs, r.MicroBatches)
		}
	}
	if r.MicroBatches != 8 {
		t.Errorf("%d micro-batches, want 8", r.MicroBatches)
	}
	// The DP term holds them: delayed minus current scaling is exactly the two
	// reductions per micro-batch (nothing else of the data-parallel pricing
	// depends on the recipe here: fp8 weights off).
	cur := run(step.FP8, step.FP8Current)
	if c := amaxCalls(cur); len(c) != 0 {
		t.Errorf("current scaling: %d amax reductions listed, want none", len(c))
	}
	got := r.Breakdown.Exposed[step.CommDP] - cur.Breakdown.Exposed[step.CommDP]
	want := float64(r.MicroBatches) * (calls[0].TimeUs + calls[1].TimeUs) * 1e-6
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("DP exposed %.1f µs above current scaling's, want %.1f µs", 1e6*got, 1e6*want)
	}
	if c := amaxCalls(run(step.BF16, "")); len(c) != 0 {
		t.Errorf("bf16: %d amax reductions listed, want none", len(c))
	}
}
