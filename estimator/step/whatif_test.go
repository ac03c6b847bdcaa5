package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// One GPU 20 % slower (speed 1/1.2): without pipelining every data-parallel replica
// waits for it at every step, so the compute of the step is 20 % longer; with eight
// pipeline stages only its stage is slow, and the pipeline's fill and drain pass the
// other stages at full speed, so the step grows by less.
func TestSlowGPU(t *testing.T) {
	const speed = 1 / 1.2
	run := func(pp, gbs int, slow float64) step.Result {
		req := step.Request{
			Model: arch(t, "llama3-70b"), Cluster: cluster(t, "dgx-h100", 8),
			Training:     step.Training{SeqLen: 4096, GlobalBatch: gbs},
			Layout:       step.Layout{TP: 8, PP: pp, DP: 8 / pp, MicroBatch: 1, ZeRO: 1, SP: true, Recompute: step.RecomputeFull},
			SlowGPUSpeed: slow,
		}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	compute := func(r step.Result) float64 { return r.Breakdown.Forward + r.Breakdown.Backward + r.Breakdown.Recompute }
	dp, dpSlow := run(1, 256, 0), run(1, 256, speed) // 32 micro-batches per replica
	if got := compute(dpSlow) / compute(dp); math.Abs(got-1.2) > 1e-9 {
		t.Errorf("DP only: compute ×%.4f, want ×1.2", got)
	}
	growDP := dpSlow.StepTime/dp.StepTime - 1
	pp, ppSlow := run(8, 8, 0), run(8, 8, speed) // 8 micro-batches through 8 stages
	growPP := ppSlow.StepTime/pp.StepTime - 1
	t.Logf("step time: DP only +%.1f%%, PP 8 +%.1f%% (bubble %.2f s, unchanged %v)", 100*growDP, 100*growPP, pp.Breakdown.Bubble, pp.Breakdown.Bubble == ppSlow.Breakdown.Bubble)
	if !(growDP > 0.12 && growDP <= 0.2) {
		t.Errorf("DP only: step +%.1f%%, want most of +20%%", 100*growDP)
	}
	if !(growPP > 0 && growPP < 0.75*growDP) || pp.Breakdown.Bubble != ppSlow.Breakdown.Bubble {
		t.Errorf("PP 8: step +%.1f%% (DP only +%.1f%%), bubble %v → %v", 100*growPP, 100*growDP, pp.Breakdown.Bubble, ppSlow.Breakdown.Bubble)
	}
	if n := ppSlow.Assumptions[len(ppSlow.Assumptions)-1]; !strings.Contains(n, "what-if") {
		t.Errorf("last assumption %q does not state the what-if", n)
	}
	req := step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1), Training: step.Training{SeqLen: 4096, GlobalBatch: 8},
		Layout: step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1}, SlowGPUSpeed: 1.5}
	if _, err := step.New().Estimate(req); err == nil || !strings.Contains(err.Error(), "slow_gpu_speed") {
		t.Errorf("speed 1.5: %v", err)
	}
}
