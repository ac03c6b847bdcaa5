package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Megatron-Core's shared experts are an MLP of Transformer Engine's column- and
// row-parallel modules split over the attention's TP group
// (megatron/core/transformer/moe/shared_experts.py, moe_module_specs.py at
// core_r0.12.0): they compute on the whole sequence, so under sequence
// parallelism a MoE layer with shared experts gathers its input and
// reduce-scatters their output as a dense layer's MLP does, where the routed
// experts alone (all-to-all dispatcher, expert TP 1) run no TP collective. Checked
// on Llama 4 Scout (every layer MoE, one shared expert) against a dense twin with
// the same attention and layer count, and against the same model without its
// shared expert:
//   - without the shared experts' overlap the MoE layers run the dense layers' TP
//     collectives (ratio 1; 1/2 without shared experts), and under TP comm-GEMM
//     overlap exposed plus hidden is still what the layout without it exposes;
//   - with --moe-shared-expert-overlap the gather and reduce-scatter are
//     Megatron-Core's own calls on the shared experts' stream (pre_forward_comm,
//     post_forward_comm): listed apart, each of the micro-batch's 16-bit
//     activations, twice per MoE layer and micro-batch (forward, and the reverse
//     backward), added to the exposed TP time and hidden under the all-to-alls
//     where those are longer (8 nodes of DGX H100: they are).
func TestSharedExpertsTPCollectives(t *testing.T) {
	e := step.New()
	scout := arch(t, "llama4-scout")
	noShared := scout
	m := *scout.MoE
	m.SharedExperts = 0
	noShared.MoE = &m
	dense := scout
	dense.MoE = nil
	dense.FFN = 4 * scout.Hidden
	const tp, seq, gbs, nodes = 4, 4096, 64, 8
	run := func(t *testing.T, a string, overlapTP, overlapShared bool) step.Result {
		t.Helper()
		r := step.Request{Model: scout, Cluster: cluster(t, "dgx-h100", nodes),
			Training: step.Training{SeqLen: seq, GlobalBatch: gbs, Framework: "megatron-core"},
			Layout: step.Layout{TP: tp, PP: 1, DP: 8 * nodes / tp, EP: 16, ETP: 1, MicroBatch: 1, SP: true, ZeRO: 1,
				Recompute: step.RecomputeNone, OverlapTP: overlapTP, OverlapSharedExpert: overlapShared}}
		switch a {
		case "dense":
			r.Model, r.Layout.EP, r.Layout.ETP = dense, 0, 0
		case "no shared":
			r.Model = noShared
		}
		res, err := e.Estimate(r)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		return res
	}
	tpExp := func(r step.Result) float64 { return r.Breakdown.Exposed[step.CommTP] }
	d, s, n := run(t, "dense", false, false), run(t, "scout", false, false), run(t, "no shared", false, false)
	if r := tpExp(s) / tpExp(d); math.Abs(r-1) > 1e-9 {
		t.Errorf("shared experts without their overlap: the MoE layers' TP collectives %.6f of the dense layers', want 1", r)
	}
	if r := tpExp(n) / tpExp(d); math.Abs(r-0.5) > 1e-9 {
		t.Errorf("no shared experts: the MoE layers' TP collectives %.6f of the dense layers', want 1/2", r)
	}
	o := run(t, "scout", true, false)
	if got := tpExp(o) + o.Breakdown.Hidden[step.CommTP]; math.Abs(got-tpExp(s)-regathers(o)) > 1e-9*tpExp(s) {
		t.Errorf("TP overlap: exposed %.6f + hidden %.6f = %.6f s, want the %.6f s the layout exposes without it and its %.6f s of re-gathers", tpExp(o), o.Breakdown.Hidden[step.CommTP], got, tpExp(s), regathers(o))
	}

	on := run(t, "scout", false, true)
	var side float64
	var calls int
	micro := float64(gbs / (8 * nodes / tp))
	for _, c := range on.Comms {
		if !strings.Contains(c.When, "overlapped shared experts'") {
			continue
		}
		calls++
		if want := seq * float64(scout.Hidden) * 2; c.Bytes != want {
			t.Errorf("%s: %.0f bytes, want %.0f (the micro-batch's activations in 16 bits)", c.Op, c.Bytes, want)
		}
		if want := float64(scout.Layers) * 2 * micro; c.PerStep != want {
			t.Errorf("%s: %v calls a step, want %v (forward and backward, per MoE layer and micro-batch)", c.Op, c.PerStep, want)
		}
		side += c.TimeUs * 1e-6 * c.PerStep
	}
	if calls != 2 {
		t.Fatalf("%d shared-expert collectives listed, want an all-gather and a reduce-scatter", calls)
	}
	if got := tpExp(on) - tpExp(n); math.Abs(got-side) > 1e-9*side {
		t.Errorf("overlapped shared experts add %.6f s of TP time to the attention's, want their collectives' %.6f s", got, side)
	}
	if !(on.Breakdown.Hidden[step.CommEP] >= side) || !(on.Breakdown.Hidden[step.CommEP] <= s.Breakdown.Exposed[step.CommEP]) {
		t.Errorf("all-to-all hidden %.6f s: want at least the shared experts' collectives (%.6f s), at most the %.6f s exposed without the overlap",
			on.Breakdown.Hidden[step.CommEP], side, s.Breakdown.Exposed[step.CommEP])
	}
	if !(on.StepTime < s.StepTime) {
		t.Errorf("the overlap: step %.4f s, without it %.4f s", on.StepTime, s.StepTime)
	}
	t.Logf("Scout TP %d EP 16, %d nodes: TP exposed dense %.3f, MoE %.3f (no shared expert %.3f), overlapped %.3f (side %.3f s, all-to-all hidden %.3f s); step %.3f → %.3f s",
		tp, nodes, tpExp(d), tpExp(s), tpExp(n), tpExp(on), side, on.Breakdown.Hidden[step.CommEP], s.StepTime, on.StepTime)
}
