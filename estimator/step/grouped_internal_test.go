package step

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
)

// A grouped GEMM of many small expert problems (Qwen3-30B-A3B: 16 local experts of
// width 768 on EP 8, a few hundred tokens each) is faster than the same problems run
// one after another — one launch, and their tiles share the waves — and slower than
// one GEMM of all their tokens, whose tiles are full.
func TestGroupedExpertGEMMs(t *testing.T) {
	k := DefaultConstants()
	r := catalogRates(t, &k, "H100-SXM", BF16)
	for _, tokens := range []float64{96, 512, 2048} {
		seq := k.gemmTime(gemm{tokens, 2 * 768, 2048, 16, false}, &r)
		grp := k.gemmTime(gemm{tokens, 2 * 768, 2048, 16, true}, &r)
		one := k.gemmTime(gemm{16 * tokens, 2 * 768, 2048, 1, false}, &r)
		t.Logf("%4.0f tokens × 16 experts: sequential %.1f µs, grouped %.1f µs, one GEMM of all tokens %.1f µs", tokens, seq*1e6, grp*1e6, one*1e6)
		if !(grp < seq && grp >= one) {
			t.Errorf("%v tokens: grouped %.3g s not between one GEMM %.3g s and sequential %.3g s", tokens, grp, one, seq)
		}
	}
	// One problem: grouped or not, the same GEMM.
	if a, b := k.gemmTime(gemm{512, 1536, 2048, 1, true}, &r), k.gemmTime(gemm{512, 1536, 2048, 1, false}, &r); a != b {
		t.Errorf("a group of one: %v s, plain %v s", a, b)
	}
}

// fp8 grouped expert GEMMs at the shapes DeepSeek-V3's MoE layers run (N × K of
// 4096 × 7168 for the gate and up projections, 7168 × 2048 for the down one) on an
// H800, against DeepGEMM's published table (deepseek-ai/DeepGEMM README at commit
// 55ab91f, 2025-03-25, H800 SXM5, NVCC 12.8): its TFLOPS divided by its speedup
// over "our internally and carefully optimized implementation based on CUTLASS
// 3.6" — the class of kernel DeepSeek-V3 was trained with and Transformer Engine's
// fp8 GEMMs belong to (the model's fp8 efficiency) — for the contiguous layout
// (training's) and the masked layout down to 256 tokens per expert, where the
// weights take as long to stream as the work to compute (the soft roofline). The model
// is within 25 % of that baseline and never faster than DeepGEMM itself by more
// than 10 %.
func TestGroupedFP8ExpertGEMMsH800(t *testing.T) {
	k := DefaultConstants()
	r := catalogRates(t, &k, "H800", FP8)
	for _, c := range []struct {
		groups, m, n, k   float64
		deepGEMM, speedup float64 // TFLOPS, × over the CUTLASS 3.6 implementation
	}{
		{4, 8192, 4096, 7168, 1346, 1.3},
		{4, 8192, 7168, 2048, 1214, 1.3},
		{8, 4096, 4096, 7168, 1346, 1.3},
		{8, 4096, 7168, 2048, 1214, 1.2},
		{1, 1024, 4096, 7168, 1233, 1.2},
		{1, 1024, 7168, 2048, 925, 1.2},
		{2, 512, 4096, 7168, 1040, 1.2},
		{2, 512, 7168, 2048, 916, 1.2},
		{4, 256, 4096, 7168, 932, 1.1},
		{4, 256, 7168, 2048, 815, 1.2},
	} {
		tm := k.gemmTime(gemm{c.m, c.n, c.k, c.groups, c.groups > 1}, &r)
		got := 2 * c.groups * c.m * c.n * c.k / tm / 1e12
		base := c.deepGEMM / c.speedup
		t.Logf("%.0f × %.0f × %.0f × %.0f: model %.0f TFLOPS, CUTLASS-based %.0f, DeepGEMM %.0f", c.groups, c.m, c.n, c.k, got, base, c.deepGEMM)
		if got/base > 1.25 || got/base < 0.8 || got > 1.1*c.deepGEMM {
			t.Errorf("%.0f × %.0f × %.0f × %.0f: %.0f TFLOPS, CUTLASS-based kernel %.0f, DeepGEMM %.0f", c.groups, c.m, c.n, c.k, got, base, c.deepGEMM)
		}
	}
}

// Expert GEMMs lose efficiency as the tokens per expert fall and each expert's
// weights are read for fewer rows: DeepGEMM's table (README at 55ab91f, H800) runs
// DeepSeek-V3's gate and up projection 1.44× slower per FLOP at 256 tokens per
// expert than at 4096 (932 against 1346 TFLOPS), the down projection 1.49× (815
// against 1214). The same work split over 32 experts of 256 tokens must cost at
// least 1.2× as much as over 4 experts of 2048 — grouped or looped over, bf16 on
// an H100 as well as fp8.
func TestExpertGEMMsAtFewTokensPerExpert(t *testing.T) {
	k := DefaultConstants()
	gpu, err := catalog.GPU("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Precision{BF16, FP8} {
		r, ok := k.rates(gpu, p)
		if !ok {
			t.Fatalf("no H100 %v rates", p)
		}
		for _, grouped := range []bool{true, false} {
			for _, nk := range [][2]float64{{4096, 7168}, {7168, 2048}} {
				few := k.gemmTime(gemm{256, nk[0], nk[1], 32, grouped}, &r)
				many := k.gemmTime(gemm{2048, nk[0], nk[1], 4, grouped}, &r)
				t.Logf("%v grouped %v N×K %.0f×%.0f: 32 × 256 tokens %.0f µs, 4 × 2048 tokens %.0f µs (%.2f×)", p, grouped, nk[0], nk[1], few*1e6, many*1e6, few/many)
				if few < 1.2*many {
					t.Errorf("%v grouped %v N×K %.0f×%.0f: 32 experts × 256 tokens %.3g s, only %.2f× 4 × 2048 tokens", p, grouped, nk[0], nk[1], few, few/many)
				}
			}
		}
	}
}

// A weight-gradient GEMM that accumulates into the step's fp32 gradients reads and
// writes them whole, whatever its tokens: DeepSeek-V3's 32 local experts of an EP 8
// rank (gate and up 4096 × 7168, down 7168 × 2048) at 256 tokens each cannot take
// less than 8 B per weight at the H100's datasheet bandwidth (3.35 TB/s), nor less
// than their work at the bf16 peak.
func TestExpertWeightGradientFloor(t *testing.T) {
	k := DefaultConstants()
	gpu, err := catalog.GPU("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	r, ok := k.rates(gpu, BF16)
	if !ok {
		t.Fatal("no H100 rates")
	}
	r.accBytes = wgradAccumulationBytes(4)
	for _, nk := range [][2]float64{{4096, 7168}, {7168, 2048}} {
		// dW[K×N] = Aᵀ·dC over 256 tokens, per expert.
		g := gemm{nk[1], nk[0], 256, 32, true}
		tm := k.gemmTime(g, &r)
		traffic := 8 * nk[0] * nk[1] * 32 / (gpu.MemoryBandwidthGBps * 1e9)
		work := g.flops() / (r.peak16)
		t.Logf("N×K %.0f×%.0f: %.0f µs, fp32 gradient traffic at the datasheet bandwidth %.0f µs, work at peak %.0f µs", nk[0], nk[1], tm*1e6, traffic*1e6, work*1e6)
		if tm < traffic || tm < work {
			t.Errorf("N×K %.0f×%.0f: %.3g s, under the traffic floor %.3g s or the work floor %.3g s", nk[0], nk[1], tm, traffic, work)
		}
	}
}
