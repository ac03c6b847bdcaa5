package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/hardware"
)

// Blackwell Ultra's cuDNN attention is priced at cudnn-frontend's measured GB300
// speed over its B200 speed (cuDNN 9.13, commit bb37575), per unit of peak. The
// expected ratios come from the kernels' measured times in the two CSV files
// (forward_time / backward_time, ms, 8k keys: B200 1.877 / 5.833, GB300 1.470 /
// 4.865), not from the TFLOP/s columns the code reads, and from the catalog's bf16
// peaks; cuDNN 9.17's GB300-over-GB200 times (commit b372d39: GB200 1.389 / 4.542,
// GB300 1.158 / 4.256 ms, the same peak) agree within 5 %.
func TestBlackwellUltraCuDNNAttention(t *testing.T) {
	b200, err := catalog.GPU("B200")
	if err != nil {
		t.Fatal(err)
	}
	gb300, err := catalog.GPU("GB300")
	if err != nil {
		t.Fatal(err)
	}
	peaks := gb300.PeakTFLOPS[hardware.BF16] / b200.PeakTFLOPS[hardware.BF16]
	wantF, wantB := 1.877/1.470/peaks, 5.833/4.865/peaks
	f, b := ultraAttentionSpeed("megatron-core", false, 8192, 128)
	if math.Abs(f/wantF-1) > 0.005 || math.Abs(b/wantB-1) > 0.005 {
		t.Errorf("Blackwell Ultra at 8k keys %.4f / %.4f of B200's per unit of peak; measured %.4f / %.4f", f, b, wantF, wantB)
	}
	if v917F, v917B := 1.389/1.158, 4.542/4.256; math.Abs(f/v917F-1) > 0.05 || math.Abs(b/v917B-1) > 0.05 {
		t.Errorf("cuDNN 9.13 ratio %.3f / %.3f against 9.17's GB300/GB200 %.3f / %.3f: more than 5 %% apart", f, b, v917F, v917B)
	}
	// 16k keys: B200 6.602 / 20.460 ms, GB300 5.167 / 17.345 ms.
	f16, b16 := ultraAttentionSpeed("nemo", false, 16384, 128)
	if w := 6.602 / 5.167 / peaks; math.Abs(f16/w-1) > 0.005 {
		t.Errorf("16k forward %.4f, measured %.4f", f16, w)
	}
	if w := 20.460 / 17.345 / peaks; math.Abs(b16/w-1) > 0.005 {
		t.Errorf("16k backward %.4f, measured %.4f", b16, w)
	}
	// The kernels the B200 price does not cover keep their price on Blackwell Ultra.
	for _, c := range []struct {
		fw      string
		flash2  bool
		headDim float64
	}{{"nemo", false, 64}, {"nemo", true, 128}, {"torchtitan", false, 128}} {
		if f, b := ultraAttentionSpeed(c.fw, c.flash2, 8192, c.headDim); f != 1 || b != 1 {
			t.Errorf("%s flash2=%v head %v: %.2f / %.2f, want 1", c.fw, c.flash2, c.headDim, f, b)
		}
	}
	// Only the Blackwell Ultra parts get it.
	for name, want := range map[string]bool{"B300": true, "b300-sxm": true, "GB300": true, "B200": false, "GB200": false, "B200-750W": false, "H100-SXM": false} {
		g, err := catalog.GPU(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.BlackwellUltra(); got != want {
			t.Errorf("%s: BlackwellUltra %v, want %v", name, got, want)
		}
		k := DefaultConstants()
		if r, ok := k.rates(g, BF16); ok && r.ultra != want {
			t.Errorf("%s: rates carry ultra %v, want %v", name, r.ultra, want)
		}
	}
}
