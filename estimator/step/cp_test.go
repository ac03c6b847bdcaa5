package step_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Ring attention is never free: every step merges its partial output (an fp32
// accumulator read and written), and a short sequence leaves too little attention
// per step to hide a transfer under. At 8K tokens on 8 GPUs of CP the exposed CP time
// is at least one send/recv per layer and micro-batch, and the exposed share of the
// step grows as the blocks shrink.
func TestContextParallelRingIsNotFree(t *testing.T) {
	a := arch(t, "llama3-70b")
	exposedShare := func(seq int) float64 {
		req := step.Request{
			Model: a, Cluster: cluster(t, "dgx-h100", 8),
			Training: step.Training{SeqLen: seq, GlobalBatch: 64},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 8, ZeRO: 3, MicroBatch: 1},
		}
		res, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		var p2pS float64
		for _, c := range res.Comms {
			if c.KindName == "cp" {
				p2pS = c.TimeUs * 1e-6
			}
		}
		if p2pS == 0 {
			t.Fatalf("seq %d: no CP send/recv in the communication table", seq)
		}
		exposed := res.Breakdown.Exposed[step.CommCP]
		floor := p2pS * float64(res.StageLayers*res.MicroBatches)
		if !(exposed > 0) {
			t.Errorf("seq %d: no exposed CP time", seq)
		}
		if seq <= 8192 && exposed < floor {
			t.Errorf("seq %d: exposed CP %.4g s < one send/recv per layer and micro-batch %.4g s", seq, exposed, floor)
		}
		return exposed / res.StepTime
	}
	long, short := exposedShare(131072), exposedShare(8192)
	t.Logf("exposed CP share of the step: %.4f at 128K tokens, %.4f at 8K", long, short)
	if !(short > long) {
		t.Errorf("exposed share at 8K (%.3f) not above 128K (%.3f)", short, long)
	}
}
