package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Transformer Engine's per-tensor current scaling under sequence parallelism
// all-reduces (MAX) one amax over the TP group before each cast of a tensor that is
// gathered over it: the input of every column-parallel linear module forward and the
// output gradient of every row-parallel one backward (module/linear.py,
// layernorm_linear.py, layernorm_mlp.py at v2.8, _customize_quantizers_float8_
// current_scaling; csrc/quantizer.cpp: amax, allreduce(...)->wait(), scale, cast).
// Llama 3 8B at TP 2 × PP 2 × DP 8 with sequence parallelism on 4 H100 nodes: 16
// layers a stage, 2 forward and 2 backward a layer, 8 micro-batches; full
// recomputation runs the forward ones again; Mixtral's MoE layers have no shared
// experts, so 1 and 1 a layer. The TP term holds them exactly (current against
// delayed scaling: nothing else of the TP pricing depends on the recipe without TP
// overlap). Delayed scaling, bf16, TP 1, no sequence parallelism and torchtitan's
// torchao casts (no Transformer Engine modules) reduce nothing here.
func TestFP8CurrentScalingTPAmaxReduce(t *testing.T) {
	e := step.New()
	cl := cluster(t, "dgx-h100", 4)
	type variant struct {
		model      string
		prec       step.Precision
		recipe     step.FP8Recipe
		framework  string
		tp, dp     int
		sp         bool
		recompute  step.Recompute
		wantPerMB  float64 // amax all-reduces a micro-batch
		wantListed bool
	}
	run := func(v variant) step.Result {
		t.Helper()
		r, err := e.Estimate(step.Request{
			Model: arch(t, v.model), Cluster: cl,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: v.framework, Optimizer: step.AdamMixed(),
				Precision: v.prec, FP8Recipe: v.recipe},
			Layout: step.Layout{TP: v.tp, PP: 2, DP: v.dp, MicroBatch: 1, SP: v.sp, ZeRO: 1, Recompute: v.recompute},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	amaxCalls := func(r step.Result) []step.CommCall { return commsWhen(r, "amax all-reduce under current scaling") }
	cases := map[string]variant{
		"dense":           {"llama3-8b", step.FP8, step.FP8Current, "megatron-core", 2, 8, true, step.RecomputeNone, 16 * 4, true},
		"full recompute":  {"llama3-8b", step.FP8, step.FP8Current, "megatron-core", 2, 8, true, step.RecomputeFull, 16 * (2*2 + 2), true},
		"moe":             {"mixtral-8x7b", step.FP8, step.FP8Current, "megatron-core", 2, 8, true, step.RecomputeNone, 16 * 2, true},
		"delayed":         {"llama3-8b", step.FP8, step.FP8Delayed, "megatron-core", 2, 8, true, step.RecomputeNone, 0, false},
		"bf16":            {"llama3-8b", step.BF16, "", "megatron-core", 2, 8, true, step.RecomputeNone, 0, false},
		"tp 1":            {"llama3-8b", step.FP8, step.FP8Current, "megatron-core", 1, 16, false, step.RecomputeNone, 0, false},
		"no sp":           {"llama3-8b", step.FP8, step.FP8Current, "megatron-core", 2, 8, false, step.RecomputeNone, 0, false},
		"torchao's casts": {"llama3-8b", step.FP8, step.FP8Current, "torchtitan", 2, 8, true, step.RecomputeNone, 0, false},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			r := run(v)
			calls := amaxCalls(r)
			if !v.wantListed {
				if len(calls) != 0 {
					t.Fatalf("%d current-scaling amax all-reduces listed, want none", len(calls))
				}
				return
			}
			if len(calls) != 1 {
				t.Fatalf("%d current-scaling amax all-reduces listed, want 1 line", len(calls))
			}
			c := calls[0]
			want := v.wantPerMB * float64(r.MicroBatches)
			if c.Kind != step.CommTP || c.Op != "allreduce" || c.Bytes != 4 || c.Group != 2 || c.PerStep != want || !(c.TimeUs > 0) {
				t.Fatalf("%+v, want a 4-byte all-reduce over the TP pair, %g a step", c, want)
			}
			if r.MicroBatches != 8 {
				t.Fatalf("%d micro-batches, want 8", r.MicroBatches)
			}
			// Against delayed scaling, the TP term is larger by exactly these calls.
			d := v
			d.recipe = step.FP8Delayed
			del := run(d)
			got := r.Breakdown.Exposed[step.CommTP] - del.Breakdown.Exposed[step.CommTP]
			wantS := want * c.TimeUs * 1e-6
			if math.Abs(got-wantS) > 1e-9 {
				t.Errorf("TP exposed %.1f µs above delayed scaling's, want %.1f µs", 1e6*got, 1e6*wantS)
			}
		})
	}
}
