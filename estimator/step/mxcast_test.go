package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// torchao's MXFP8 casts on Blackwell run at the rates torchao measured its kernels
// at then (framework.Profile.BlackwellMXCastHBM), each axis at its own: torchao's
// mx_formats README puts the dim0 cast (to_mx under torch.compile) at up to 5.5 TB/s
// from 2025-04-01 (934d11ead) and 6.3 TB/s from 2025-10-19 (d20876810), the dim1 cast
// (the Triton kernel) at up to 3.9 TB/s; from 2026-01-02 (4446ad91b) it times them on
// a 1000 W B200 at 6462 GB/s (dim0) and 5404 GB/s (dim1, a CUDA kernel) — all of a
// B200's 8 TB/s, where the model's elementwise kernels reach HBMEfficiency of it.
// Priced on Llama 3 8B on 8 B200 without recomputation (so nothing else of the three
// torchtitan profiles differs for a dense model): the profiles' compute differs by the
// casts' time in the ratio of their bytes at the model's rate, and not at all in bf16
// or under tensorwise scaling, whose casts those measurements are not of.
func TestTorchaoMXCastsOnBlackwell(t *testing.T) {
	compute := func(fw string, p step.Precision, rec step.FP8Recipe) float64 {
		r := mustEstimate(t, step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "hgx-b200", 1),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 8, Precision: p, FP8Recipe: rec, Framework: fw},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, ZeRO: 3, MicroBatch: 1, Recompute: step.RecomputeNone}})
		return r.Breakdown.Forward + r.Breakdown.Backward
	}
	for _, c := range []struct {
		p   step.Precision
		rec step.FP8Recipe
	}{{step.BF16, ""}, {step.FP8, step.FP8Current}} {
		now := compute("torchtitan", c.p, c.rec)
		for _, fw := range []string{"torchtitan-0.1", "torchtitan-2025-11"} {
			if got := compute(fw, c.p, c.rec); got != now {
				t.Errorf("%s %s %s: compute %.6f s, torchtitan %.6f s; want the same", fw, c.p, c.rec, got, now)
			}
		}
	}
	now := compute("torchtitan", step.FP8, step.FP8MXFP8)
	aug := compute("torchtitan-0.1", step.FP8, step.FP8MXFP8)
	nov := compute("torchtitan-2025-11", step.FP8, step.FP8MXFP8)
	// Bytes per element at the model's elementwise rate (0.9 of 8 TB/s) that take as
	// long as 3 B along each axis at the measured rates (TB/s).
	k := step.DefaultConstants().HBMEfficiency * 8
	perAug := 3*k/5.5 + 3*k/3.9
	perNov := 3*k/6.3 + 3*k/3.9
	perNow := 3*k/6.462 + 3*k/5.404
	if !(aug > nov && nov > now) {
		t.Fatalf("MXFP8 compute: torchtitan-0.1 %.4f, torchtitan-2025-11 %.4f, torchtitan %.4f s; want in that order, slowest first", aug, nov, now)
	}
	got, want := (aug-now)/(nov-now), (perAug-perNow)/(perNov-perNow)
	if math.Abs(got/want-1) > 1e-6 {
		t.Errorf("the profiles' cast times differ in ratio %.4f, want %.4f (%.2f, %.2f and %.2f B an element)", got, want, perAug, perNov, perNow)
	}
	model := (aug - now) / (perAug - perNow) * 6
	t.Logf("Llama 3 8B on 8 B200, MXFP8: casts %.1f ms at the model's rate; %.1f ms (torchao of August 2025), %.1f ms (November 2025), %.1f ms (2026)",
		1e3*model, 1e3*model*perAug/6, 1e3*model*perNov/6, 1e3*model*perNow/6)
}
