package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/hardware"
)

// Transformer Engine's cuDNN attention on Blackwell is priced at the same share of
// its measured speed as on Hopper: with the shipped efficiency, cuDNN 9.13's
// 1171 / 943 TFLOP/s (forward / backward, causal, 8k keys, head dimension 128,
// cudnn-frontend's B200 benchmark) come out at 0.6–0.7 of those, as cuDNN's 529 / 518
// on an H100 (Shah et al. 2024) come out at 0.64 / 0.67 there; and faster than the
// tied FlashAttention-2-class price, which flash-attn 2's own B200 figures sit below.
func TestBlackwellCuDNNAttention(t *testing.T) {
	k := DefaultConstants()
	eff := k.AttentionEfficiency[hardware.Blackwell]
	hf, hb := attentionSpeed(hardware.Hopper, "nemo", false, 8192, 128)
	hopperF := eff * 989 * hf / 529
	hopperB := eff * 989 * hb / 518
	bf, bb := attentionSpeed(hardware.Blackwell, "nemo", false, 8192, 128)
	bwF := eff * 2250 * bf / 1171.278
	bwB := eff * 2250 * bb / 942.509
	if math.Abs(bwF/hopperF-1) > 0.1 || math.Abs(bwB/hopperB-1) > 0.1 {
		t.Errorf("priced share of measured cuDNN speed: B200 %.2f / %.2f, H100 %.2f / %.2f (forward / backward); want within 10 %%",
			bwF, bwB, hopperF, hopperB)
	}
	if !(bf > 1.5 && bb > 1.25) {
		t.Errorf("B200 cuDNN attention at 8k keys %.2f / %.2f of the tied price; want faster", bf, bb)
	}
	// Longer keys run faster, as measured (4k: 856 / 701 TFLOP/s; 16k: 1332 / 1075).
	f4, b4 := attentionSpeed(hardware.Blackwell, "megatron-core", false, 4096, 128)
	f16, b16 := attentionSpeed(hardware.Blackwell, "megatron-core", false, 16384, 128)
	if !(f4 < bf && bf < f16 && b4 < bb && bb < b16) {
		t.Errorf("speed by key length not increasing: 4k %.2f/%.2f, 8k %.2f/%.2f, 16k %.2f/%.2f", f4, b4, bf, bb, f16, b16)
	}
	// Unmeasured head widths, flash-attn 2 and frameworks without TE's fused
	// attention keep the tied price.
	for _, c := range []struct {
		fw      string
		flash2  bool
		headDim float64
	}{{"nemo", false, 64}, {"nemo", false, 192}, {"nemo", true, 128}, {"torchtitan", false, 128}} {
		if f, b := attentionSpeed(hardware.Blackwell, c.fw, c.flash2, 8192, c.headDim); f != 1 || b != 1 {
			t.Errorf("%s flash2=%v head %v: %.2f / %.2f, want 1", c.fw, c.flash2, c.headDim, f, b)
		}
	}
}
