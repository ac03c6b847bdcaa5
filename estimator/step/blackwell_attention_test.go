package step_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Transformer Engine before 2.5 runs cuDNN's fused attention on Blackwell only for
// heads up to 128 wide, and flash-attn only for equal query and value heads (up to
// 256): DeepSeek-V3's MLA (queries and keys 192 wide, values 128) falls back to
// unfused attention on B200 and GB200 under NeMo 25.04 (profile nemo-25.04), and
// runs fused on H100, under later NeMo (profile nemo) and with equal 192-wide heads.
func TestBlackwellWideHeadsUnfused(t *testing.T) {
	req := func(fw, system string, mla bool) step.Request {
		a := arch(t, "deepseek-v3")
		if !mla {
			// Equal heads of 192 (Nemotron-4 340B's width): flash-attn 2 takes them.
			a.MLA, a.HeadSize = nil, 192
		}
		return step.Request{Model: a, Cluster: cluster(t, system, 16),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 512, Precision: step.BF16, Framework: fw},
			Layout: step.Layout{TP: 2, PP: 4, DP: 16, CP: 1, EP: 32, ETP: 1, SP: true, ZeRO: 1, MicroBatch: 1, LayerSplit: []int{15, 16, 16, 14},
				Recompute: step.RecomputeSelective, RecomputeModules: []string{"core_attn"}}}
	}
	cases := []struct {
		fw, system string
		mla, want  bool
	}{
		{"nemo-25.04", "hgx-b200", true, true},
		{"nemo-25.04", "dgx-h100", true, false},
		{"nemo", "hgx-b200", true, false},
		{"nemo-25.04", "hgx-b200", false, false},
	}
	times := map[bool]float64{}
	for _, c := range cases {
		r := mustEstimate(t, req(c.fw, c.system, c.mla))
		if r.Training.UnfusedAttention != c.want {
			t.Errorf("%s on %s (MLA %v): unfused attention %v, want %v", c.fw, c.system, c.mla, r.Training.UnfusedAttention, c.want)
		}
		if c.system == "hgx-b200" && c.mla {
			times[c.want] = r.StepTime
		}
	}
	// Unfused, the 64 local heads' 4096² scores go through HBM and the masked half
	// is computed too: the step is slower.
	if !(times[true] > times[false]) {
		t.Errorf("DeepSeek-V3 on B200: unfused attention %.2f s, fused %.2f s; want slower", times[true], times[false])
	}
}
