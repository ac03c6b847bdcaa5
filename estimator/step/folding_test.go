package step_test

import (
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// commOf returns the first communication of the given kind and operation whose
// description contains when.
func commOf(r step.Result, kind, op, when string) (step.CommCall, bool) {
	for _, c := range r.Comms {
		if c.KindName == kind && c.Op == op && strings.Contains(c.When, when) {
			return c, true
		}
	}
	return step.CommCall{}, false
}

// commsWhen returns every communication whose description contains when.
func commsWhen(r step.Result, when string) []step.CommCall {
	var out []step.CommCall
	for _, c := range r.Comms {
		if strings.Contains(c.When, when) {
			out = append(out, c)
		}
	}
	return out
}

// MoE parallel folding (Megatron-Core, megatron/core/parallel_state.py: the expert
// RankGenerator takes tp = expert TP, ep = EP, dp = world/(ETP·EP·PP), cp = 1 in the
// same rank order as the dense one): the expert groups are cut from the TP × CP ×
// DP ranks of a stage, so EP may exceed DP. Qwen3-235B-A22B as published with TP 2,
// PP 8, EP 32 on 256 H100 (DP 16, expert TP 1): one EP group spans all 32 ranks of
// a stage — 4 nodes —, every rank holds 128/32 = 4 experts whole, and no other rank
// holds them (no expert gradient reduction).
func TestMoEParallelFolding(t *testing.T) {
	req := func(tp, dp, ep, etp int, order string) step.Request {
		return step.Request{Model: arch(t, "qwen3-235b-a22b"), Cluster: cluster(t, "dgx-h100", 32),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 1024, Precision: step.BF16},
			Layout: step.Layout{TP: tp, PP: 8, DP: dp, EP: ep, ETP: etp, SP: tp > 1, ZeRO: 1, MicroBatch: 1,
				Recompute: step.RecomputeFull, Schedule: step.OneFOneB, VirtualStages: 1, RankOrder: order}}
	}
	r, err := step.New().Estimate(req(2, 16, 32, 1, ""))
	if err != nil {
		t.Fatalf("TP 2 × PP 8 × EP 32 on 256 GPUs (DP 16): %v", err)
	}
	a2a, ok := commOf(r, "ep", "alltoall", "")
	if !ok || a2a.Group != 32 || a2a.Nodes != 4 {
		t.Errorf("EP all-to-all over %d ranks on %d nodes, want 32 on 4 (%v)", a2a.Group, a2a.Nodes, ok)
	}
	if _, ok := commOf(r, "dp", "reducescatter", "expert"); ok {
		t.Errorf("expert gradients reduced, but EP 32 × ETP 1 covers the stage's 32 ranks: one holder each")
	}
	// The experts' weights: 4 of 128 per MoE layer per GPU, whole.
	a := arch(t, "qwen3-235b-a22b")
	p := a.Params()
	stageLayers := float64(r.StageLayers)
	expertW := stageLayers * (p.PerLayerMoE - p.PerLayerShared) / 32 * 2 / 1e9
	if r.Memory.Weights < expertW || r.Memory.Weights > expertW+stageLayers*p.PerLayerAttention/2*2/1e9+p.Embedding*2/1e9+0.1 {
		t.Errorf("weights %.2f GB per GPU, want the %.2f GB of 4 whole experts per layer plus attention", r.Memory.Weights, expertW)
	}
	t.Logf("qwen3-235b-a22b TP 2 PP 8 EP 32 DP 16: %.2f s, a2a %.1f MB over %d ranks / %d nodes, weights %.1f GB", r.StepTime, a2a.Bytes/1e6, a2a.Group, a2a.Nodes, r.Memory.Weights)

	// Folding with expert TP 1 puts rank r's EP peers at r … r+EP−1 (ETP varies
	// fastest): EP 8 of TP 2 × DP 16 stays in one node; with the experts split over
	// TP (ETP 2) EP 8 spans 16 ranks, two nodes, and the expert-TP group gathers the
	// dispatched tokens.
	in, err := step.New().Estimate(req(2, 16, 8, 1, ""))
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := commOf(in, "ep", "alltoall", ""); c.Group != 8 || c.Nodes != 1 {
		t.Errorf("EP 8 with ETP 1 over %d ranks on %d nodes, want 8 on 1", c.Group, c.Nodes)
	}
	if c, _ := commOf(in, "dp", "reducescatter", "expert"); c.Group != 4 {
		t.Errorf("expert-data-parallel group of %d ranks, want 32/(1·8) = 4", c.Group)
	}
	split, err := step.New().Estimate(req(2, 16, 8, 0, ""))
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := commOf(split, "ep", "alltoall", ""); c.Group != 8 || c.Nodes != 2 {
		t.Errorf("EP 8 with ETP 2 over %d ranks on %d nodes, want 8 on 2", c.Group, c.Nodes)
	}
	if c, ok := commOf(split, "tp", "allgather", "dispatched tokens"); !ok || c.Group != 2 {
		t.Errorf("expert-TP all-gather of the dispatched tokens: %v over %d ranks", ok, c.Group)
	}

	// Async TP overlaps the linear layers' collectives, not the dispatcher's
	// expert-TP gathers of the routed tokens: those stay exposed.
	ov := req(2, 16, 8, 0, "")
	ov.Layout.OverlapTP = true
	ro, err := step.New().Estimate(ov)
	if err != nil {
		t.Fatal(err)
	}
	var expertTP float64
	for _, c := range ro.Comms {
		if c.KindName == "tp" && (strings.Contains(c.When, "dispatched tokens") || strings.Contains(c.When, "experts' output")) {
			expertTP += c.TimeUs * 1e-6 * c.PerStep
		}
	}
	if expertTP <= 0 || ro.Breakdown.Exposed[step.CommTP] < expertTP*(1-1e-9) {
		t.Errorf("with async TP: TP exposed %.3f s, the expert-TP gathers take %.3f s", ro.Breakdown.Exposed[step.CommTP], expertTP)
	}

	// Bad layouts name the field.
	for _, c := range []struct {
		name  string
		req   step.Request
		field string
	}{
		{"etp × ep over the stage", req(2, 16, 32, 2, ""), "layout.ep"},
		{"ep not dividing the experts", req(2, 16, 24, 1, ""), "layout.ep"},
		{"pp inside the stage", req(2, 16, 32, 1, "tp-pp-cp-ep-dp"), "layout.rank_order"},
	} {
		_, err := step.New().Estimate(c.req)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.field)
		}
	}
}
