package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/framework"
)

// torchtitan's routed experts on Blackwell as torchao measured their kernel in
// October 2025: the forward and backward of one grouped GEMM at Llama 4 Scout's
// expert shapes (K 5120, N 8192; M = 128 000 tokens over 1, 2, 4, 8 groups) on a
// B200, torch._grouped_mm in bf16 and torchao's _to_mxfp8_then_scaled_grouped_mm
// (its casts included) — pytorch/ao torchao/prototype/moe_training/README.md at
// ff163084e (torch 2.10.0a0+gitf6de195, torchao 0.14.0+gitc7b8e13da), "Llama4
// Scout shapes". Priced under the torchtitan-2025-11 profile (the forward, input-
// and weight-gradient GEMMs, plus the MXFP8 casts of the two operands and the
// output gradient each way) the model is within 12 % of every row; under the
// later torchtitan profile it stays 1.5–1.8× faster than that kernel, which is
// why the efficiency is the profile's and not the GPU's.
func TestTorchGroupedMMBlackwell(t *testing.T) {
	k := DefaultConstants()
	gpu, err := catalog.GPU("B200")
	if err != nil {
		t.Fatal(err)
	}
	const m, n, kk = 128000.0, 8192.0, 5120.0
	for _, c := range []struct {
		groups      float64
		bf16, mxfp8 float64 // ms, forward + backward
	}{
		{1, 43.1402, 23.8670},
		{2, 39.4876, 23.3590},
		{4, 39.1892, 23.9455},
		{8, 37.7007, 22.1706},
	} {
		for _, p := range []Precision{BF16, FP8} {
			r, ok := k.rates(gpu, p)
			if !ok {
				t.Fatal("no B200 rates")
			}
			price := func(fw string) float64 {
				re := k.expertRates(&Training{Framework: fw, FP8Recipe: FP8MXFP8}, &r)
				g := c.groups
				s := k.gemmTime(gemm{m / g, n, kk, g, g > 1}, &re) + // forward
					k.gemmTime(gemm{m / g, kk, n, g, g > 1}, &re) + // input gradient
					k.gemmTime(gemm{kk, n, m / g, g, g > 1}, &re) // weight gradient
				if p == FP8 {
					// MXFP8 casts along both axes: the input and the output gradient,
					// and the grouped weights, each axis at the rate torchao measured
					// its casts at under the profile (BlackwellMXCastHBM).
					prof, err := framework.Lookup(fw)
					if err != nil {
						t.Fatal(err)
					}
					s += k.mxCastBytes(prof.BlackwellMXCastHBM) * (m*(kk+n) + g*n*kk) / r.hbm
				}
				return s * 1e3
			}
			want := c.bf16
			if p == FP8 {
				want = c.mxfp8
			}
			then, now := price("torchtitan-2025-11"), price("torchtitan")
			t.Logf("%v, %.0f groups: measured %.2f ms; torchtitan-2025-11 %.2f ms (%+.1f %%), torchtitan %.2f ms", p, c.groups, want, then, 100*(then/want-1), now)
			if math.Abs(then/want-1) > 0.12 {
				t.Errorf("%v, %.0f groups: %.2f ms under torchtitan-2025-11, torchao measured %.2f ms", p, c.groups, then, want)
			}
			if now/want > 1/1.4 {
				t.Errorf("%v, %.0f groups: %.2f ms under torchtitan, want well under the October 2025 kernel's %.2f ms", p, c.groups, now, want)
			}
		}
	}
	// Elsewhere the experts keep the model's efficiency: another architecture,
	// another framework's grouped GEMM.
	h100, err := catalog.GPU("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	rh, _ := k.rates(h100, BF16)
	if re := k.expertRates(&Training{Framework: "torchtitan-2025-11"}, &rh); re.gemmEff != rh.gemmEff {
		t.Errorf("H100: experts at %v, want the model's %v", re.gemmEff, rh.gemmEff)
	}
	rb, _ := k.rates(gpu, BF16)
	if re := k.expertRates(&Training{Framework: "megatron-core"}, &rb); re.gemmEff != rb.gemmEff {
		t.Errorf("B200 under megatron-core: experts at %v, want the model's %v", re.gemmEff, rb.gemmEff)
	}
}
