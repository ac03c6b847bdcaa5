package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
)

// teH200GEMMPass is one pass of Transformer Engine's GEMM benchmark on an H200 NVL
// (SM90): the per-layer sum of four GEMM kernels in bf16 (torch.matmul) and in fp8
// with per-tensor current scaling, pre-quantized (the fp8 operands quantized once
// before the timed loop, so only the cuBLASLt fp8 kernel is timed), CUDA events, 100
// iterations after 10 warm-up ones. NVIDIA/TransformerEngine
// docs/examples/gemm_profiling/gemm_profiling.rst (PR #2863, 1609c890e; "Worked Example: 5B
// Model on H200", pre-quantized table: BF16 ms, FP8Current ms), produced by
// benchmarks/gemm/benchmark_gemm.py for hidden 4096, intermediate 16384, micro-batch
// 31 × sequence 512 (M = 15 872 tokens). Its shapes (M × K × N, compute_gemm_shapes):
// forward QKV 15872 × 4096 × 12288, attention output 15872 × 4096 × 4096, MLP up
// 15872 × 4096 × 16384, MLP down 15872 × 16384 × 4096; the data-gradient pass swaps K
// and N; the weight-gradient pass contracts over the tokens (K = 15 872).
type teH200GEMMPass struct {
	name       string
	shapes     [4][3]float64 // M, K, N
	bf16, fp8C float64       // ms
}

var teH200PrequantPasses = []teH200GEMMPass{
	{"forward", [4][3]float64{{15872, 4096, 12288}, {15872, 4096, 4096}, {15872, 4096, 16384}, {15872, 16384, 4096}}, 10.632, 5.577},
	{"data gradient", [4][3]float64{{15872, 12288, 4096}, {15872, 4096, 4096}, {15872, 16384, 4096}, {15872, 4096, 16384}}, 10.747, 5.661},
	{"weight gradient", [4][3]float64{{4096, 15872, 12288}, {4096, 15872, 4096}, {4096, 15872, 16384}, {16384, 15872, 4096}}, 10.530, 5.547},
}

// deepGEMMTileK0 is the fixed cost of one output tile (prologue, pipeline fill,
// epilogue) in steps of K of an fp8 main loop on Hopper, fitted to DeepGEMM's 4096-row
// fp8 GEMMs (deepseek-ai/DeepGEMM PR #81, H800, 256 × 128 tiles: 777, 1 204, 1 159,
// 1 377 and 1 500 TFLOP/s at K = 512, 1 536, 2 048, 7 168 and 16 384, reproduced within
// 7 % by 1 546 × K / (K + 507)). The same time is half as many steps of a bf16 loop,
// whose steps take twice as long at half the rate.
const deepGEMMTileK0 = 500

// teB300Prequant is the same benchmark's pre-quantized table on a B300 SXM6 AC
// (gemm_profiling.rst, "Autocast vs Pre-quantized"), per pass (forward, data
// gradient, weight gradient) in ms: bf16, fp8 per-tensor current scaling and MXFP8.
var teB300Prequant = struct{ bf16, fp8C, mxfp8 [3]float64 }{
	bf16:  [3]float64{4.250, 4.434, 4.418},
	fp8C:  [3]float64{2.158, 2.329, 2.325},
	mxfp8: [3]float64{2.365, 2.397, 2.400},
}

// fp8SpeedupByPass prices the benchmark's twelve GEMMs on gpuName in bf16 and fp8 and
// checks the priced fp8 speed-up over bf16 against the measured one (bf16 and fp8 ms
// per pass): each pass's speed-up relative to the whole layer's within passTol, and
// the layer's priced speed-up at 0.90–1.0 of the measured one. tileK0 > 0 prices a
// fixed cost per output tile of tileK0 fp8 steps (half as many bf16 ones) on top of
// the model, for comparison; the spreads of the passes' speed-ups (max / min − 1),
// measured and with that cost, are returned.
func fp8SpeedupByPass(t *testing.T, gpuName string, bf16, fp8 [3]float64, passTol, tileK0 float64) (spreadMeasured, spreadTile float64) {
	t.Helper()
	k := DefaultConstants()
	gpu, err := catalog.GPU(gpuName)
	if err != nil {
		t.Fatal(err)
	}
	r16, ok := k.rates(gpu, BF16)
	r8, ok8 := k.rates(gpu, FP8)
	if !ok || !ok8 {
		t.Fatalf("no %s rates", gpuName)
	}
	pass := func(p teH200GEMMPass, k0 float64) (bf, f8 float64) {
		for _, s := range p.shapes {
			g := gemm{s[0], s[2], s[1], 1, false}
			b, f := k.gemmTime(g, &r16), k.gemmTime(g, &r8)
			if k0 > 0 {
				b *= (s[1] + k0/2) / s[1]
				f *= (s[1] + k0) / s[1]
			}
			bf += b
			f8 += f
		}
		return bf, f8
	}
	var mB, mF, pB, pF, kB, kF float64
	for i, p := range teH200PrequantPasses {
		b, f := pass(p, 0)
		tb, tf := pass(p, tileK0)
		mB, mF, pB, pF, kB, kF = mB+bf16[i], mF+fp8[i], pB+b, pF+f, kB+tb, kF+tf
	}
	measured, priced := mB/mF, pB/pF
	t.Logf("%s layer: measured fp8 speed-up %.3f, priced %.3f (%.3f of it)", gpuName, measured, priced, priced/measured)
	if q := priced / measured; !(q >= 0.90 && q <= 1.0) {
		t.Errorf("%s layer: priced fp8 speed-up %.3f is %.3f of the measured %.3f, want 0.90–1.0", gpuName, priced, q, measured)
	}
	lo, hi, tlo, thi := math.Inf(1), 0.0, math.Inf(1), 0.0
	for i, p := range teH200PrequantPasses {
		b, f := pass(p, 0)
		m := (bf16[i] / fp8[i]) / measured
		q := (b / f) / priced
		tb, tf := pass(p, tileK0)
		tile := (tb / tf) / (kB / kF)
		t.Logf("%s %-15s measured %.3f (%.3f of the layer's), priced %.3f (%.3f)", gpuName, p.name, bf16[i]/fp8[i], m, b/f, q)
		if tileK0 > 0 {
			t.Logf("%s %-15s with a %.0f-step tile cost: priced %.3f (%.3f)", gpuName, p.name, tileK0, tb/tf, tile)
		}
		if math.Abs(q/m-1) > passTol {
			t.Errorf("%s %s: priced speed-up %.3f of the layer's, measured %.3f: want within %.1f %%", gpuName, p.name, q, m, 100*passTol)
		}
		lo, hi = math.Min(lo, m), math.Max(hi, m)
		tlo, thi = math.Min(tlo, tile), math.Max(thi, tile)
	}
	return hi/lo - 1, thi/tlo - 1
}

// Hopper's fp8 GEMM efficiency as the step model prices it does not depend on K (the
// reduction dimension) beyond the tile waves, and neither does the measured one.
// Transformer Engine's own kernel-only benchmark on Hopper (teH200PrequantPasses) runs
// fp8 per-tensor GEMMs 1.906× faster than bf16 in the forward pass, whose GEMMs carry
// two thirds of their work at K = 4 096, 1.898× in the data-gradient pass (K 4 096 –
// 16 384) and 1.898× in the weight-gradient pass (K = 15 872 throughout): the fp8
// speed-up is the same at K = 4 096 as at 16 K within 0.5 %. A fixed cost per output
// tile of DeepGEMM's size (deepGEMMTileK0, the same time in both precisions) would
// make the forward pass's fp8 speed-up 2.7 % smaller than the weight-gradient pass's;
// the benchmark shows it 0.4 % larger. So a K-dependent fp8 efficiency on Hopper is
// not what the data show, and the model prices none.
//
// The test prices the benchmark's twelve GEMMs with the shipped constants on an H200
// (132 SMs like the H200 NVL; the speed-up does not depend on the peak, which is
// twice as high in fp8 as in bf16 on every Hopper part) and checks (1) each pass's
// priced speed-up over the whole layer's is the measured one within 1 %, (2) the
// whole layer's priced speed-up is 0.90–1.0 of the measured 1.90× — the shipped
// constants (fp8 0.55 of the fp8 peak, bf16 0.61 of the bf16 peak) price fp8 at 0.90
// of bf16's fraction of the peak where TE's kernels reach 0.95, never faster than the
// kernels alone, since the runs' fp8 GEMMs are fitted with what runs beside them —
// and (3) that the measurement's spread between passes stays under half of what the
// tile cost would price. The B300's table (Blackwell, fp8 peak twice bf16's as on
// Hopper) is held to the same layer bounds, per-tensor fp8 (1.92×) and MXFP8 (1.83×),
// and its passes within 2.5 and 2 %: per-tensor fp8's forward pass runs 2.4 % over
// the layer's speed-up, MXFP8's 1.8 % under it — no common direction in K.
func TestHopperFP8SpeedupByPassAgainstTE(t *testing.T) {
	var bf, f8 [3]float64
	for i, p := range teH200PrequantPasses {
		bf[i], f8[i] = p.bf16, p.fp8C
	}
	sm, st := fp8SpeedupByPass(t, "H200", bf, f8, 0.01, deepGEMMTileK0)
	t.Logf("spread of the passes' speed-ups on Hopper: measured %.1f %%, with the tile cost %.1f %%", 100*sm, 100*st)
	if sm > st/2 {
		t.Errorf("measured spread %.1f %% is over half the %.1f %% a %d-step tile cost prices", 100*sm, 100*st, deepGEMMTileK0)
	}
	fp8SpeedupByPass(t, "B300", teB300Prequant.bf16, teB300Prequant.fp8C, 0.025, 0)
	fp8SpeedupByPass(t, "B300", teB300Prequant.bf16, teB300Prequant.mxfp8, 0.02, 0)
}

// teH200AutocastLayerMs is the same benchmark's per-layer time of the twelve GEMMs
// run as te.Linear forwards under autocast (the casts timed with the GEMM): delayed
// scaling 18.978 ms, current scaling 20.285 ms ("Per-layer total", the autocast
// table of the H200 example), against 16.785 ms for the pre-quantized current-scaling
// kernels alone (teH200PrequantPasses).
const (
	teH200DelayedAutocastMs = 18.978
	teH200CurrentAutocastMs = 20.285
)

// The step model's price of Transformer Engine's fp8 casts on Hopper — fp8CastBytes
// per element (read 16 bits, write the fp8 value and its transpose), fp8AmaxBytes more
// for current scaling's amax pass, at HBMEfficiency of the bandwidth — against what
// the casts cost in TE's own benchmark: the autocast layer less the pre-quantized
// kernels, 2.19 ms with delayed and 3.50 ms with current scaling. In the benchmark
// each shape is a te.Linear forward of an input M × K that does not require its
// gradient and a weight K × N that does (TE module/linear.py at 1609c890e:
// backward_needs_input = weight.requires_grad, so the input is cast with its
// transpose; the weight's columnwise copy only if the input requires its gradient, so
// the weight is cast without its transpose). Priced so on the H200's 4.8 TB/s (the
// H200 NVL's too): 2.07 and 3.22 ms, 0.94 and 0.92 of the measured — the casts of a
// current Transformer Engine run at about 0.85 of the HBM bandwidth, where the 0.39
// of its first cast-transpose kernel (PR #101, TE 0.x) would price them at 4.8 and
// 7.4 ms.
func TestHopperFP8CastsAgainstTEAutocast(t *testing.T) {
	k := DefaultConstants()
	gpu, err := catalog.GPU("H200")
	if err != nil {
		t.Fatal(err)
	}
	r8, ok := k.rates(gpu, FP8)
	if !ok {
		t.Fatal("no H200 rates")
	}
	var inputs, weights, prequant float64
	for _, p := range teH200PrequantPasses {
		for _, s := range p.shapes {
			inputs += s[0] * s[1]
			weights += s[1] * s[2]
		}
		prequant += p.fp8C
	}
	weightCast := float64(fp8CastBytes - fp8TransposeWriteBytes)
	for _, c := range []struct {
		name     string
		bytes    float64
		autocast float64
	}{
		{"delayed", fp8CastBytes*inputs + weightCast*weights, teH200DelayedAutocastMs},
		{"current", (fp8CastBytes+fp8AmaxBytes)*inputs + (weightCast+fp8AmaxBytes)*weights, teH200CurrentAutocastMs},
	} {
		priced := c.bytes / r8.hbm * 1e3
		measured := c.autocast - prequant
		t.Logf("%s scaling: casts measured %.2f ms (%.2f TB/s), priced %.2f ms (%.2f of it)", c.name, measured, c.bytes/measured/1e9, priced, priced/measured)
		if q := priced / measured; !(q >= 0.85 && q <= 1.1) {
			t.Errorf("%s scaling: priced casts %.2f ms are %.2f of the measured %.2f ms, want 0.85–1.1", c.name, priced, q, measured)
		}
	}
}
