package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/framework"
)

// torchao's Llama 4 Scout MXFP8 run leaves attention.wk and attention.wv in bf16
// (pytorch/ao torchao/prototype/moe_training/README.md, its configuration list,
// 2f903f81a: "mxfp8 applied to all linear layers except: output, router.gate,
// attention.wk, attention.wv"; torchtitan's MXLinear converter skips every
// nn.Linear whose name matches filter_fqns, components/quantization/utils.py
// module_filter_fn at 35bffe989). On a Scout layer at 8192 tokens a rank
// (hidden 5120, 8 KV heads of 128: K and V 2048 wide):
//   - the K and V projections, 2 · 8192 · 2048 · 5120 = 172 GFLOP forward, run at
//     the 16-bit rate, the Q projection alone at the fp8 rate;
//   - their input is cast once, by wq's linear, not three times: 2 · 8192 · 5120
//     elements less, forward; their output gradients (8192 · 2048) and weights
//     (5120 · 2048) are not cast.
//
// The forward then moves by the GEMMs' difference less the casts saved, at the
// profile's cast rate; under bf16, or under a framework that casts a fused QKV
// input once (no per-projection linears), the flag changes nothing.
func TestFP8KVProjectionsIn16Bits(t *testing.T) {
	k := DefaultConstants()
	e := New()
	r8 := catalogRates(t, &k, "GB200", FP8)
	r16 := routerRates(&r8)
	layer := func(fw string, p Precision, kv16 bool) layerTimes {
		req := scoutRequest(t, fw, 1)
		req.Training.Precision = p
		if p == FP8 {
			req.Training.FP8Recipe = FP8MXFP8
		}
		req.Training.FP8KVIn16Bits = kv16
		r := r8
		if p != FP8 {
			r = catalogRates(t, &k, "GB200", p)
		}
		return e.layerCompute(req, &r, 8192, 8192, 8192, true)
	}
	const tokens, h, kv = 8192.0, 5120.0, 2048.0
	fw, err := framework.Get("torchtitan-2025-11")
	if err != nil {
		t.Fatal(err)
	}
	per := k.mxCastBytes(fw.BlackwellMXCastHBM)
	wantGEMM := k.gemmTime(gemm{tokens, h, h, 1, false}, &r8) + k.gemmTime(gemm{tokens, kv, h, 1, false}, &r16) -
		k.gemmTime(gemm{tokens, h + kv, h, 1, false}, &r8)
	saved := per * (2*tokens*h + h*kv) / r8.hbm // the inputs cast again, the weights
	off, on := layer("torchtitan-2025-11", FP8, false), layer("torchtitan-2025-11", FP8, true)
	got := on.fwd - off.fwd
	t.Logf("Scout layer forward %.3f → %.3f ms (K and V GEMMs at 16 bits %+.1f µs, casts saved %.1f µs); backward %.3f → %.3f ms",
		1e3*off.fwd, 1e3*on.fwd, 1e6*wantGEMM, 1e6*saved, 1e3*off.bwd, 1e3*on.bwd)
	if wantGEMM <= 0 {
		t.Fatalf("K and V at 16 bits %.1f µs no slower than in fp8", 1e6*wantGEMM)
	}
	if want := wantGEMM - saved; math.Abs(got-want) > 1e-3*off.fwd {
		t.Errorf("forward moves %+.1f µs, want %+.1f (GEMMs %+.1f, casts −%.1f)", 1e6*got, 1e6*want, 1e6*wantGEMM, 1e6*saved)
	}
	// The backward runs two 16-bit GEMMs for each of K and V where fp8 ones ran:
	// slower, though it casts less.
	if !(on.bwd > off.bwd) {
		t.Errorf("backward %.4g → %.4g s: want slower with K and V's gradients at 16 bits", off.bwd, on.bwd)
	}
	for _, c := range []struct {
		fw string
		p  Precision
	}{{"torchtitan-2025-11", BF16}, {"megatron-core", FP8}} {
		a, b := layer(c.fw, c.p, false), layer(c.fw, c.p, true)
		if a.fwd != b.fwd || a.bwd != b.bwd {
			t.Errorf("%s %s: the flag moves the layer (forward %.4g → %.4g s, backward %.4g → %.4g s), want no change", c.fw, c.p, a.fwd, b.fwd, a.bwd, b.bwd)
		}
	}
}
