package step

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/hardware"
)

// Megatron-Core 0.12's router under moe_router_dtype fp32 runs F.linear on fp32
// copies (framework.Profile.MoERouterFP32Linear): its gating GEMM and the two
// backward GEMMs run on the CUDA cores. Qwen3-30B-A3B (128 experts, hidden 2 048)
// on 8 B200 at EP 8 with 4 096-token micro-batches, 8 micro-batches a step, under
// nemo-25.04: each of the 48 layers' routers does 2 × 4 096 × 128 × 2 048 = 2.15
// GFLOP forward. At the B200's 75 TFLOP/s of fp32 (NVIDIA's HGX B200
// specifications, the catalog's figure) that is at least 28.6 µs a layer and
// micro-batch, no faster
// than the peak, and no slower than at a third of it; the backward's two GEMMs of
// the same work add about twice the forward's. Under nemo (Megatron-Core 0.14, the
// forward through Transformer Engine's GEMM), without the option, or where the
// GPU has no fp32 rate, nothing changes.
func TestRouterFP32Linear(t *testing.T) {
	m := qwen3Arch(t)
	run := func(fw string, fp32 bool) (fwd, bwd float64) {
		res := qwen3OnB200EP8(t, func(tr *Training) {
			tr.Framework, tr.MoEPermuteFusion, tr.MoERouterFP32 = fw, true, fp32
		})
		return res.Breakdown.Forward, res.Breakdown.Backward
	}
	gpu, err := catalog.GPU("B200")
	if err != nil {
		t.Fatal(err)
	}
	peak32, err := gpu.Peak(hardware.FP32)
	if err != nil {
		t.Fatal(err)
	}
	calls := float64(m.Layers) * 8 // layers × micro-batches a step
	flops := 2.0 * 4096 * float64(m.MoE.Experts) * float64(m.Hidden)
	f32, b32 := run("nemo-25.04", true)
	f16, b16 := run("nemo-25.04", false)
	dF, dB := (f32-f16)/calls, (b32-b16)/calls
	t.Logf("a layer and micro-batch: forward +%.1f µs, backward +%.1f µs; the GEMM at the fp32 peak %.1f µs", 1e6*dF, 1e6*dB, 1e6*flops/peak32)
	if lo, hi := flops/peak32, 3*flops/peak32; dF < lo || dF > hi {
		t.Errorf("fp32 router: forward longer by %.1f µs a layer, want between %.1f (the fp32 peak) and %.1f µs (a third of it)", 1e6*dF, 1e6*lo, 1e6*hi)
	}
	if r := dB / dF; r < 1.5 || r > 2.5 {
		t.Errorf("fp32 router: backward longer by %.2f× the forward's addition, want about 2 (two GEMMs of the same work)", r)
	}
	for _, fw := range []string{"nemo", "megatron-core"} {
		a, b := run(fw, true)
		c, d := run(fw, false)
		if a != c || b != d {
			t.Errorf("%s: fp32 router moves the step (forward %.4g → %.4g s, backward %.4g → %.4g s), want no change", fw, c, a, d, b)
		}
	}
	// A GPU without an fp32 rate keeps the 16-bit price.
	k := DefaultConstants()
	g := gpu
	g.PeakTFLOPS = map[hardware.DType]float64{hardware.BF16: gpu.PeakTFLOPS[hardware.BF16]}
	if r, ok := k.rates(g, BF16); !ok || r.peak32 != 0 {
		t.Errorf("rates without an fp32 peak: peak32 %.3g, ok %v; want 0, true", r.peak32, ok)
	}
}
