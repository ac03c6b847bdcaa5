package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

func moeRequest(t *testing.T, name string, ep int) step.Request {
	t.Helper()
	return step.Request{Model: arch(t, name), Cluster: cluster(t, "dgx-h100", 2),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 64},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 16, EP: ep, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeFull}}
}

// estimateMixtral estimates Mixtral 8x7B on EP ep (moeRequest) as edit changes it.
func estimateMixtral(t *testing.T, ep int, edit func(*step.Request)) step.Result {
	t.Helper()
	req := moeRequest(t, "mixtral-8x7b", ep)
	edit(&req)
	r, err := step.New().Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func epBytes(r step.Result) float64 {
	for _, c := range r.Comms {
		if c.KindName == "ep" {
			return c.Bytes
		}
	}
	return 0
}

// Router imbalance: the busiest expert-parallel rank receives imbalance × the mean
// tokens, so the all-to-all it takes part in carries that many times the bytes and
// its expert GEMMs that much more work; a capacity factor caps it (tokens beyond it
// are dropped); top-2 routes twice the tokens of top-1.
func TestMoEImbalanceCapacityTopK(t *testing.T) {
	run := func(edit func(*step.Request)) step.Result { return estimateMixtral(t, 8, edit) }
	base := run(func(*step.Request) {})
	skew := run(func(r *step.Request) { r.Training.MoEImbalance = 1.5 })
	capped := run(func(r *step.Request) { r.Training.MoEImbalance, r.Training.MoECapacityFactor = 1.5, 1.25 })
	top1 := run(func(r *step.Request) { m := *r.Model.MoE; m.TopK = 1; r.Model.MoE = &m })
	if b := epBytes(base); b == 0 || math.Abs(epBytes(skew)/b-1.5) > 1e-9 || math.Abs(epBytes(capped)/b-1.25) > 1e-9 || math.Abs(b/epBytes(top1)-2) > 1e-9 {
		t.Errorf("all-to-all bytes: balanced %g, imbalance 1.5 %g, capped at 1.25 %g, top-1 %g", b, epBytes(skew), epBytes(capped), epBytes(top1))
	}
	if !(skew.Breakdown.Forward > capped.Breakdown.Forward && capped.Breakdown.Forward > base.Breakdown.Forward) {
		t.Errorf("forward: balanced %.4f, capped %.4f, imbalanced %.4f s", base.Breakdown.Forward, capped.Breakdown.Forward, skew.Breakdown.Forward)
	}
	// Padded to capacity (Megatron-Core's --moe-pad-expert-input-to-capacity): a
	// balanced router still computes and sends capacity × the mean tokens.
	padded := run(func(r *step.Request) {
		r.Training.MoECapacityFactor, r.Training.MoEPadToCapacity = 1.25, true
	})
	if b := epBytes(base); math.Abs(epBytes(padded)/b-1.25) > 1e-9 || !(padded.Breakdown.Forward > base.Breakdown.Forward) {
		t.Errorf("padded to capacity 1.25 with a balanced router: all-to-all ×%.3f, forward %.4f vs %.4f s", epBytes(padded)/b, padded.Breakdown.Forward, base.Breakdown.Forward)
	}
	req := moeRequest(t, "mixtral-8x7b", 8)
	req.Training.MoEPadToCapacity = true
	if _, err := step.New().Estimate(req); err == nil || !strings.Contains(err.Error(), "training.moe_pad_to_capacity") {
		t.Errorf("padding without a capacity factor: %v", err)
	}
	req = moeRequest(t, "mixtral-8x7b", 8)
	req.Training.MoEImbalance = 0.5
	if _, err := step.New().Estimate(req); err == nil || !strings.Contains(err.Error(), "training.moe_imbalance") {
		t.Errorf("imbalance 0.5: %v", err)
	}
}

// On one expert-parallel rank the router's imbalance among experts changes nothing:
// the rank holds every expert and computes every routed token, so an imbalance
// stated with EP 1 prices as the balanced router does, while padding to capacity
// still computes the padded rows.
func TestMoEImbalanceOnOneRank(t *testing.T) {
	run := func(edit func(*step.Request)) step.Result { return estimateMixtral(t, 1, edit) }
	base := run(func(*step.Request) {})
	skew := run(func(r *step.Request) { r.Training.MoEImbalance = 1.5 })
	if skew.StepTime != base.StepTime || skew.Memory.Activations != base.Memory.Activations {
		t.Errorf("EP 1, imbalance 1.5: %.6f s, %.3f GB of activations; balanced %.6f s, %.3f GB", skew.StepTime, skew.Memory.Activations, base.StepTime, base.Memory.Activations)
	}
	padded := run(func(r *step.Request) { r.Training.MoECapacityFactor, r.Training.MoEPadToCapacity = 1.25, true })
	if !(padded.Breakdown.Forward > base.Breakdown.Forward) {
		t.Errorf("EP 1 padded to capacity 1.25: forward %.4f s, balanced %.4f s", padded.Breakdown.Forward, base.Breakdown.Forward)
	}
}

// Shared experts see every token and are replicated over expert parallelism: with
// EP 16, a GPU of Llama 4 Scout holds one routed expert per layer but the whole
// shared expert, and the step does the shared expert's work for every token.
func TestSharedExperts(t *testing.T) {
	with := moeRequest(t, "llama4-scout", 16)
	without := moeRequest(t, "llama4-scout", 16)
	m := *without.Model.MoE
	m.SharedExperts = 0
	without.Model.MoE = &m
	rw, err := step.New().Estimate(with)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := step.New().Estimate(without)
	if err != nil {
		t.Fatal(err)
	}
	// One shared expert (3 × 5120 × 8192 parameters) per layer, 48 layers, bf16
	// weights, unsharded by EP: 12.1 GB more weights per GPU.
	shared := 48 * 3 * 5120 * 8192.0
	if d := rw.Memory.Weights - ro.Memory.Weights; math.Abs(d-2*shared/1e9) > 0.01 {
		t.Errorf("weights per GPU grow by %.2f GB with the shared expert, want %.2f GB", d, 2*shared/1e9)
	}
	if !(rw.Breakdown.Forward > 1.2*ro.Breakdown.Forward) {
		t.Errorf("forward %.3f s with the shared expert, %.3f s without: every token passes it (top-1 routing: about twice the MLP work)", rw.Breakdown.Forward, ro.Breakdown.Forward)
	}
}

// Expert tensor parallelism 1 against the experts split over TP 2 (Mixtral 8x7B,
// TP 2, EP 8, DP 8, SP): each TP rank holds its experts whole (twice the expert
// weights), skips the expert-TP all-gather of the dispatched tokens and the
// reduce-scatter of the experts' output, and reduces expert gradients over a group
// twice as large. Either way each rank sends its own sequence-parallel share of
// the tokens through the all-to-all (Megatron-Core's MoEAlltoAllTokenDispatcher
// gathers over the expert-TP group after it): the same all-to-all bytes.
func TestExpertTensorParallelism(t *testing.T) {
	run := func(etp int, sp bool) (step.Result, error) {
		return step.New().Estimate(step.Request{Model: arch(t, "mixtral-8x7b"), Cluster: cluster(t, "dgx-h100", 2),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64},
			Layout:   step.Layout{TP: 2, PP: 1, DP: 8, EP: 8, ETP: etp, SP: sp, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeFull}})
	}
	split, err := run(0, true)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := run(1, true)
	if err != nil {
		t.Fatal(err)
	}
	group := func(r step.Result, when string) (int, float64) {
		for _, c := range r.Comms {
			if c.KindName == "dp" && c.Op == "reducescatter" && strings.Contains(c.When, when) {
				return c.Group, c.Bytes
			}
		}
		return 0, 0
	}
	p := arch(t, "mixtral-8x7b").Params()
	expertPerGPU := func(etp int) float64 { return 32 * (p.PerLayerMoE - p.PerLayerShared) / float64(etp*8) }
	if d := whole.Memory.Weights - split.Memory.Weights; math.Abs(d*1e9-2*(expertPerGPU(1)-expertPerGPU(2))) > 1e-3*d*1e9 {
		t.Errorf("weights %.2f → %.2f GB, want + %.2f GB of whole experts", split.Memory.Weights, whole.Memory.Weights, 2*(expertPerGPU(1)-expertPerGPU(2))/1e9)
	}
	if r := epBytes(whole) / epBytes(split); math.Abs(r-1) > 1e-9 {
		t.Errorf("all-to-all bytes ×%.3f with etp 1, want ×1", r)
	}
	if !(whole.Breakdown.Exposed[step.CommTP] < split.Breakdown.Exposed[step.CommTP]) {
		t.Errorf("TP exposed %.4f s with etp 1, %.4f s split", whole.Breakdown.Exposed[step.CommTP], split.Breakdown.Exposed[step.CommTP])
	}
	gs, _ := group(split, "expert")
	gw, _ := group(whole, "expert")
	// EP 8 of DP 8: split over TP each expert has one holder; whole, the two TP
	// ranks hold it and reduce its gradients.
	if gs != 0 || gw != 2 {
		t.Errorf("expert-data reduce-scatter over %d ranks with etp 1, %d split (0: none)", gw, gs)
	}
	t.Logf("etp 2: %.3f s, a2a %.0f MB, TP %.3f s; etp 1: %.3f s, a2a %.0f MB, TP %.3f s; expert group %d → %d",
		split.StepTime, epBytes(split)/1e6, split.Breakdown.Exposed[step.CommTP], whole.StepTime, epBytes(whole)/1e6, whole.Breakdown.Exposed[step.CommTP], gs, gw)
	if _, err := run(1, false); err == nil || !strings.Contains(err.Error(), "layout.etp") {
		t.Errorf("etp 1 without sp: %v", err)
	}
	if _, err := run(3, true); err == nil || !strings.Contains(err.Error(), "layout.etp") {
		t.Errorf("etp 3 of tp 2: %v", err)
	}
}

// A capacity factor far below one drops almost every token, but an expert's
// capacity is a whole number of tokens (Megatron-Core's get_capacity rounds up): the
// step stays finite, no slower than with a capacity of the mean, and every tiny
// factor prices alike (before the round-up, 1e-30 took 3.6e24 s and 1e-200 NaN).
func TestTinyCapacityFactorKeepsOneToken(t *testing.T) {
	run := func(c float64) float64 {
		req := moeRequest(t, "mixtral-8x7b", 8)
		req.Training.MoECapacityFactor = c
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.StepTime
	}
	one := run(1)
	for _, c := range []float64{1e-6, 1e-30, 1e-200, 1e-302} {
		if s := run(c); !(s > 0 && s <= one) || math.IsInf(s, 0) {
			t.Errorf("capacity factor %g: step %v s (capacity of the mean: %v s)", c, s, one)
		}
	}
	if a, b := run(1e-30), run(1e-302); math.Abs(a/b-1) > 1e-6 {
		t.Errorf("capacity factors 1e-30 and 1e-302 price %v and %v s", a, b)
	}
}
