package step

import (
	"math"
	"testing"
)

// Grok-1's routed experts on H100 in fp8 as two releases of NVIDIA's DGX Cloud
// recipes ran them, both through Transformer Engine's per-tensor fp8 cuBLASLt GEMMs,
// one local expert a GPU (EP 8 of 8 experts), each a Transformer Engine Linear of
// Megatron-Core's SequentialMLP (docs/step-model.md, "Transformer Engine's fp8 expert
// GEMMs on Hopper"):
//
//   - dgxc-benchmarking v25.02.02 (NeMo 24.12, Megatron-Core core_r0.10.0, Transformer
//     Engine 1.13) from 32 GPUs: the experts split over TP 4 like the dense MLP, 8 192
//     tokens an expert (4 096 a rank × top-2, gathered over the TP group): up
//     8 192 × 16 384 × 6 144, down 8 192 × 6 144 × 8 192. Its fp8 rows lack about a
//     quarter of their expert GEMMs' priced time (as if they ran at 0.45 of the fp8
//     peak).
//   - v25.05.05 (NeMo 25.04) on 512 GPUs: whole experts (expert TP 1), a quarter of
//     the 8 192 tokens on each TP rank: up 2 048 × 65 536 × 6 144, down
//     2 048 × 6 144 × 32 768. With its TP overlap stated it too is priced fast at the
//     dense 0.55 (−7 %).
//
// The same work per GEMM in two aspects, neither near a small-problem regime (3–31
// tile waves on 132 SMs): the model's shape terms (tile waves, start-up, the soft
// roofline of the fp32 weight-gradient accumulation) price them within 3 % of each
// other and within 10 % of the large-problem efficiency, so what both rows lack is a
// rate of the path (Constants.TEExpertFP8Efficiency), not a shape term.
func TestGrokFP8ExpertShapesPriceAlike(t *testing.T) {
	k := DefaultConstants()
	r := catalogRates(t, &k, "H100-SXM", FP8)
	// The weight gradients accumulate into fp32 main gradients (Megatron-Core's
	// gradient_accumulation_fusion, TE's fuse_wgrad_accumulation).
	rw := r
	rw.accBytes = wgradAccumulationBytes(4)
	// expertPass prices an expert's up (gated: two matrices) and down GEMMs forward,
	// data and weight gradient, and returns the time and the share of the fp8 peak
	// it reaches.
	expertPass := func(m, ef float64) (float64, float64) {
		const h = 6144
		var s, flops float64
		for _, g := range []gemm{{m, 2 * ef, h, 1, false}, {m, h, ef, 1, false}} {
			s += k.gemmTime(g, &r) + k.gemmTime(gemm{g.m, g.k, g.n, 1, false}, &r) + k.gemmTime(gemm{g.k, g.n, g.m, 1, false}, &rw)
			flops += 3 * g.flops()
		}
		return s, flops / s / r.peak
	}
	tp4, eff4 := expertPass(8192, 32768/4) // v25.02.02: expert TP 4
	whole, eff1 := expertPass(2048, 32768) // v25.05.05: expert TP 1
	t.Logf("expert GEMMs a layer and micro-batch: expert TP 4 %.2f ms (%.3f of the fp8 peak), whole experts %.2f ms (%.3f); fitted %.2f", tp4*1e3, eff4, whole*1e3, eff1, r.gemmEff)
	if d := math.Abs(tp4/whole - 1); d > 0.03 {
		t.Errorf("the same expert work priced %.1f %% apart in the two aspects, want within 3 %%", 100*d)
	}
	for _, e := range []float64{eff4, eff1} {
		if e < 0.9*r.gemmEff || e > r.gemmEff {
			t.Errorf("expert GEMMs at %.3f of the fp8 peak, want 0.9–1.0 of the fitted %.2f", e, r.gemmEff)
		}
	}
}
