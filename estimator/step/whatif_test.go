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

// A NIC at half its bandwidth halves the pace of every collective through its node:
// the data-parallel reduction across two nodes takes about twice as long (the
// per-step latency does not grow), while a job inside one node does not notice it.
// A GPU's NVLink at half speed does the same to its tensor-parallel group.
func TestDegradedLinks(t *testing.T) {
	run := func(nodes, tp int, nic, link float64) step.Result {
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", nodes),
			Training:          step.Training{SeqLen: 4096, GlobalBatch: 64},
			Layout:            step.Layout{TP: tp, PP: 1, DP: nodes * 8 / tp, MicroBatch: 1, ZeRO: 1, SP: tp > 1, Recompute: step.RecomputeNone},
			DegradedNICSpeed:  nic,
			DegradedLinkSpeed: link,
		}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	call := func(r step.Result, kind, op string) step.CommCall {
		for _, c := range r.Comms {
			if c.KindName == kind && c.Op == op {
				return c
			}
		}
		t.Fatalf("no %s %s in %+v", kind, op, r.Comms)
		return step.CommCall{}
	}
	healthy, slow := run(2, 1, 0, 0), run(2, 1, 0.5, 0)
	h, s := call(healthy, "dp", "reducescatter"), call(slow, "dp", "reducescatter")
	if got := s.TimeUs / h.TimeUs; !(got > 1.7 && got <= 2.0001) {
		t.Errorf("DP reduce-scatter of %.0f MB over 2 nodes with one NIC at 50%%: ×%.2f (%.0f → %.0f µs), want about ×2", h.Bytes/1e6, got, h.TimeUs, s.TimeUs)
	}
	t.Logf("DP reduce-scatter ×%.3f, step %.3f → %.3f s", s.TimeUs/h.TimeUs, healthy.StepTime, slow.StepTime)
	if !(slow.StepTime > healthy.StepTime) {
		t.Errorf("step %.3f s with a degraded NIC, %.3f s healthy", slow.StepTime, healthy.StepTime)
	}
	if n := slow.Assumptions[len(slow.Assumptions)-1]; !strings.Contains(n, "NICs at 50%") {
		t.Errorf("last assumption %q does not state the what-if", n)
	}
	if a, b := run(1, 8, 0, 0), run(1, 8, 0.5, 0); a.StepTime != b.StepTime {
		t.Errorf("one node: step %.4f s with a degraded NIC, %.4f s without", b.StepTime, a.StepTime)
	}
	a, b := run(1, 8, 0, 0), run(1, 8, 0, 0.5)
	ha, hb := call(a, "tp", "allgather"), call(b, "tp", "allgather")
	t.Logf("TP all-gather ×%.3f, step %.3f → %.3f s", hb.TimeUs/ha.TimeUs, a.StepTime, b.StepTime)
	if got := hb.TimeUs / ha.TimeUs; !(got > 1.3 && got <= 2.0001) {
		t.Errorf("TP 8 all-gather of %.0f MB with one GPU's NVLink at 50%%: ×%.2f, want up to ×2", ha.Bytes/1e6, got)
	}
	req := step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1), Training: step.Training{SeqLen: 4096, GlobalBatch: 8},
		Layout: step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1}, DegradedNICSpeed: -1, DegradedLinkSpeed: 2}
	_, err := step.New().Estimate(req)
	if err == nil || !strings.Contains(err.Error(), "degraded_nic_speed") || !strings.Contains(err.Error(), "degraded_link_speed") {
		t.Errorf("speeds -1 and 2: %v", err)
	}
}

// A job inside one node sends nothing through its NICs: with rank 0's node's NICs
// degraded its estimate is the healthy one, and its assumptions say the NICs carry
// none of its collectives instead of "every collective through it runs at its pace".
// Across two nodes the data-parallel reduction goes through them and the text says
// so; a degraded scale-up link beside the NIC still paces the one-node job.
func TestDegradedNICAssumptionSaysWhatApplies(t *testing.T) {
	run := func(nodes int, nic, link float64) string {
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", nodes),
			Training:          step.Training{SeqLen: 4096, GlobalBatch: 64},
			Layout:            step.Layout{TP: 8, PP: 1, DP: nodes, MicroBatch: 1, ZeRO: 1, SP: true},
			DegradedNICSpeed:  nic,
			DegradedLinkSpeed: link,
		}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Assumptions[len(r.Assumptions)-1]
	}
	const paced = "every collective through it runs at its pace"
	if a := run(1, 0.5, 0); !strings.Contains(a, "NICs at 50%") || strings.Contains(a, paced) || !strings.Contains(a, "no collective") {
		t.Errorf("one node, NICs at 50%%: %q; want the what-if and that no collective goes through the NICs", a)
	}
	if a := run(1, 0.5, 0.5); !strings.Contains(a, "scale-up link at 50%") || !strings.Contains(a, "no collective") || !strings.Contains(a, "through the link runs at its pace") {
		t.Errorf("one node, NICs and a link at 50%%: %q; want the NICs carrying nothing and the link pacing its collectives", a)
	}
	if a := run(2, 0.5, 0); !strings.Contains(a, paced) {
		t.Errorf("two nodes, NICs at 50%%: %q; want %q", a, paced)
	}
	if a := run(1, 0, 0.5); !strings.Contains(a, paced) {
		t.Errorf("one node, a link at 50%%: %q; want %q", a, paced)
	}
}
