package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/step"
)

// Composer's DecoupledAdamW updates each parameter with eight elementwise kernels
// (80 B of HBM traffic an fp32 parameter) where a fused multi-tensor Adam moves
// 30 B: under the composer profile the optimizer step of the same layout takes
// 80/30 of the fused one's, and nothing else in the step changes.
func TestComposerDecoupledAdamW(t *testing.T) {
	req := step.Request{
		Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-a100", 2),
		Training: step.Training{SeqLen: 2048, GlobalBatch: 32},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 16, MicroBatch: 2, ZeRO: 3, Recompute: step.RecomputeFull},
	}
	fused, composer := req, req
	fused.Training.Framework = "fsdp"
	composer.Training.Framework = "composer"
	e := step.New()
	a, err := e.Estimate(fused)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Estimate(composer)
	if err != nil {
		t.Fatal(err)
	}
	k := step.DefaultConstants()
	want := framework.ComposerDecoupledAdamWBytes / k.OptimizerBytes
	t.Logf("optimizer step %.2f ms fused, %.2f ms under Composer (×%.3f, want ×%.3f)",
		1e3*a.Breakdown.Optimizer, 1e3*b.Breakdown.Optimizer, b.Breakdown.Optimizer/a.Breakdown.Optimizer, want)
	if !(a.Breakdown.Optimizer > 0) || math.Abs(b.Breakdown.Optimizer/a.Breakdown.Optimizer-want) > 1e-9 {
		t.Errorf("optimizer step %.4f s under Composer against %.4f s fused: want ×%.3f", b.Breakdown.Optimizer, a.Breakdown.Optimizer, want)
	}
	// A100 80 GB: 2039 GB/s at HBMEfficiency; the rank owns 1/16 of the parameters.
	owned := b.Memory.Optimizer * 1e9 / req.Training.Optimizer.StateBytes
	if req.Training.Optimizer.StateBytes == 0 {
		owned = b.Memory.Optimizer * 1e9 / step.AdamMixed().StateBytes
	}
	if got, w := b.Breakdown.Optimizer, owned*framework.ComposerDecoupledAdamWBytes/(2039e9*k.HBMEfficiency); math.Abs(got/w-1) > 0.01 {
		t.Errorf("Composer's update %.4f s, want %.4f s (%.3g owned parameters at 80 B)", got, w, owned)
	}
}
