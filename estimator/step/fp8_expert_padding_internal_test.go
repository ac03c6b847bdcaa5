package step

import (
	"math"
	"testing"
)

// Megatron-Core 0.12's TEGroupedMLP under fp8 copies its experts' input rows
// through Transformer Engine v2.2's Fp8Padding and their output rows through
// Fp8Unpadding (framework.Profile.FP8GroupedExpertPadding): 8 B per element of the
// routed rows forward and 8 B backward. Qwen3-30B-A3B (top-8, hidden 2 048) on 8
// B200 at EP 8, 4 096-token micro-batches padded to capacity 1: each rank's experts
// take 4 096 × 8 rows of 2 048 a layer and micro-batch, 48 layers and 8
// micro-batches a step, at the GPU's elementwise HBM rate. Without grouped
// experts (SequentialMLP), in bf16, or under a framework whose grouped MLP does not
// pad (nemo: Megatron-Core 2436e3d), nothing changes.
func TestFP8GroupedExpertPadding(t *testing.T) {
	run := func(fw string, grouped bool, p Precision) (fwd, bwd float64) {
		res := qwen3OnB200EP8(t, func(tr *Training) {
			tr.Framework, tr.MoEPermuteFusion, tr.MoEGroupedGEMM, tr.Precision = fw, true, grouped, p
			if p == FP8 {
				tr.FP8Recipe = FP8Delayed
			}
		})
		return res.Breakdown.Forward, res.Breakdown.Backward
	}
	k := DefaultConstants()
	r := catalogRates(t, &k, "B200", FP8)
	m := qwen3Arch(t)
	calls := float64(m.Layers) * 8
	want := 4096 * float64(m.MoE.TopK) * float64(m.Hidden) * 8 / r.hbm * calls
	f1, b1 := run("nemo-25.04", true, FP8)
	f0, b0 := run("nemo-25.04", false, FP8)
	t.Logf("a step: forward +%.2f ms, backward +%.2f ms; the four copies' bytes at the HBM rate %.2f ms each way", 1e3*(f1-f0), 1e3*(b1-b0), 1e3*want)
	if d := f1 - f0; math.Abs(d-want) > 0.01*want {
		t.Errorf("fp8 padding: forward longer by %.4g s a step, want %.4g s", d, want)
	}
	if d := b1 - b0; math.Abs(d-want) > 0.01*want {
		t.Errorf("fp8 padding: backward longer by %.4g s a step, want %.4g s", d, want)
	}
	for _, c := range []struct {
		what string
		fw   string
		p    Precision
	}{{"bf16", "nemo-25.04", BF16}, {"nemo (Megatron-Core 2436e3d)", "nemo", FP8}, {"megatron-core", "megatron-core", FP8}} {
		a, b := run(c.fw, true, c.p)
		x, y := run(c.fw, false, c.p)
		if a != x || b != y {
			t.Errorf("%s: grouped experts move the step (forward %.4g → %.4g s, backward %.4g → %.4g s), want no change", c.what, x, a, y, b)
		}
	}
}
