package step

import (
	"math"
	"testing"
)

// MLA's unfused rotary embedding and the cats around it (mlaUnfusedRoPEBytes),
// DeepSeek-V3 at TP 2 (64 heads a rank: position-free 128, rotary 64, value 128),
// counted operator by operator in bytes a token. Forward: the query's rotary chain
// 28 B × 64 heads × 64 = 114 688 and the shared key's 28 × 64 = 1 792; the query's
// cat reads 64 × (128 + 64) × 2 = 24 576 and writes as much; the key's cat reads
// 64 × 128 × 2 = 16 384 and the broadcast rotary key's 128, writes 24 576; the
// value's copy reads and writes 64 × 128 × 2 = 16 384 each: 239 488 B. Backward:
// the chains 34 × 64 × 64 = 139 264 and 34 × 64 = 2 176; the query's split
// backward 2 × 24 576, the key-value split backward 2 × 32 768, the broadcast's
// sum 64 × 64 × 2 read and 128 written: 264 448 B. The layer prices them at the
// GPU's HBM rate under nemo-25.04 (Megatron-Core 0.12, rotary fusion off), and
// under mla_up_proj recomputes the forward part; nemo (fused kernels) adds none.
func TestMLAUnfusedRoPETraffic(t *testing.T) {
	req := normalise(mlaRequest(t, "nemo-25.04", true))
	fwdBytes := 114688.0 + 1792 + 2*24576 + 16384 + 128 + 24576 + 2*16384
	bwdBytes := 139264.0 + 2176 + 2*24576 + 2*32768 + 64*64*2 + 128
	if fwdBytes != 239488 || bwdBytes != 264448 {
		t.Fatalf("hand counts %v / %v", fwdBytes, bwdBytes)
	}
	f, b := mlaUnfusedRoPEBytes(req.Model.MLA, float64(req.Model.Heads)/2)
	if f != fwdBytes || b != bwdBytes {
		t.Errorf("mlaUnfusedRoPEBytes at 64 heads: %v / %v B a token, want %v / %v", f, b, fwdBytes, bwdBytes)
	}
	k := DefaultConstants()
	r := catalogRates(t, &k, "H100", BF16)
	e := New()
	const tokens = 4096
	lt := e.layerCompute(req, &r, tokens, tokens, tokens, false)
	if want := tokens * fwdBytes / r.hbm; math.Abs(lt.mlaRoPEFwd-want) > 1e-12 {
		t.Errorf("nemo-25.04: %.4g s forward, want %.4g s (%v B a token at the HBM rate)", lt.mlaRoPEFwd, want, fwdBytes)
	}
	if want := tokens * bwdBytes / r.hbm; math.Abs(lt.mlaRoPEBwd-want) > 1e-12 {
		t.Errorf("nemo-25.04: %.4g s backward, want %.4g s", lt.mlaRoPEBwd, want)
	}
	up := e.layerCompute(normalise(mlaRequest(t, "nemo-25.04", true, "mla_up_proj")), &r, tokens, tokens, tokens, false)
	if d := up.modsFwd - lt.modsFwd; d < lt.mlaRoPEFwd*0.999 {
		t.Errorf("mla_up_proj recomputes %.4g s, want at least the unfused rotary forward's %.4g s", up.modsFwd, lt.mlaRoPEFwd)
	}
	if n := e.layerCompute(normalise(mlaRequest(t, "nemo", true)), &r, tokens, tokens, tokens, false); n.mlaRoPEFwd != 0 || n.mlaRoPEBwd != 0 {
		t.Errorf("nemo (fused rotary kernels): %.3g / %.3g s of unfused rotary traffic, want none", n.mlaRoPEFwd, n.mlaRoPEBwd)
	}
}
