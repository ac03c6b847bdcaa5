package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// A MoE step reduces the gradients of every parameter a rank holds: the dense ones
// over DP·CP ranks, the experts (sharded over EP) over the DP·CP/EP ranks that hold
// the same experts. The DP calls' bytes add up to all of them.
func TestMoEGradientsCoverEveryParameter(t *testing.T) {
	a := arch(t, "mixtral-8x7b")
	p := a.Params()
	const tp, dp, ep = 2, 32, 8
	L := float64(a.Layers)
	// Every Mixtral layer is a MoE layer; the embedding and the untied output layer are
	// vocabulary-parallel over TP.
	dense := L*p.PerLayerAttention/tp + L*p.PerLayerNorm + (p.Embedding+p.Output)/tp
	expert := L * p.PerLayerMoE / (tp * ep)
	for _, zero := range []int{0, 1} {
		req := step.Request{
			Model: a, Cluster: cluster(t, "dgx-h100", 8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 256},
			Layout:   step.Layout{TP: tp, PP: 1, DP: dp, EP: ep, ZeRO: zero, MicroBatch: 1, SP: true},
		}
		res, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		var grads float64
		groups := map[int]bool{}
		for _, c := range res.Comms {
			if c.KindName == "dp" && (c.Op == "allreduce" || c.Op == "reducescatter") {
				grads += c.Bytes
				groups[c.Group] = true
			}
		}
		// fp32 gradients: megatron-core, the default framework, accumulates and
		// reduces them in fp32 under bf16 (Megatron-LM's arguments.py,
		// accumulate_allreduce_grads_in_fp32), 4 B a parameter.
		want := (dense + expert) * 4
		if math.Abs(grads-want) > 1e-9*want {
			t.Errorf("zero %d: DP gradient bytes %.6g, want dense + expert %.6g (dense alone %.6g)", zero, grads, want, dense*4)
		}
		if !groups[dp] || !groups[dp/ep] {
			t.Errorf("zero %d: gradient groups %v, want the dense group of %d and the expert group of %d", zero, groups, dp, dp/ep)
		}
	}
}

// Under ZeRO-3 the experts' shards are gathered per layer on the expert group too.
func TestMoEZeRO3GathersExperts(t *testing.T) {
	a := arch(t, "mixtral-8x7b")
	req := step.Request{
		Model: a, Cluster: cluster(t, "dgx-h100", 8),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 256},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 64, EP: 8, ZeRO: 3, MicroBatch: 1},
	}
	res, err := step.New().Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	p := a.Params()
	var expertGather float64
	for _, c := range res.Comms {
		if c.KindName == "zero3" && c.Op == "allgather" && c.Group == 8 {
			expertGather = c.Bytes
		}
	}
	// One layer's experts on one EP rank, in bf16.
	if want := p.PerLayerMoE / 8 * 2; math.Abs(expertGather-want) > 1e-9*want {
		t.Errorf("expert all-gather per layer %.6g bytes, want %.6g", expertGather, want)
	}
}

// Where a MoE layer's forward runs again in the backward pass (full recomputation,
// or the recompute module moe), so do its dispatch and combine: 3 of each per layer
// and micro-batch instead of 2.
func TestMoEAllToAllRecomputed(t *testing.T) {
	calls := func(rc step.Recompute, mods ...string) float64 {
		req := step.Request{
			Model: arch(t, "mixtral-8x7b"), Cluster: cluster(t, "dgx-h100", 8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 256},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 64, EP: 8, ZeRO: 1, MicroBatch: 1, Recompute: rc, RecomputeModules: mods},
		}
		res, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		n := 0.0
		for _, c := range res.Comms {
			if c.KindName == "ep" {
				n += c.PerStep
			}
		}
		return n
	}
	// 32 MoE layers × 4 micro-batches: dispatch and combine, forward and backward.
	base := calls(step.RecomputeNone)
	if want := 32.0 * 4 * 4; base != want {
		t.Errorf("without recomputation %v all-to-all calls listed, want %v", base, want)
	}
	for _, c := range []struct {
		name string
		rc   step.Recompute
		mods []string
	}{{"full", step.RecomputeFull, nil}, {"moe module", step.RecomputeSelective, []string{"moe"}}} {
		if got := calls(c.rc, c.mods...); got != 1.5*base {
			t.Errorf("%s: %v all-to-all calls, want %v", c.name, got, 1.5*base)
		}
	}
}

// Megatron-Core's --moe-shared-expert-overlap runs the shared experts while the
// micro-batch's own all-to-alls are in flight: exposed all-to-all falls by at most
// the shared experts' GEMM time, and a model without shared experts is refused.
func TestSharedExpertOverlap(t *testing.T) {
	run := func(model string, overlap bool) (step.Result, error) {
		return step.New().Estimate(step.Request{
			Model: arch(t, model), Cluster: cluster(t, "dgx-h100", 8),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 64},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 64, EP: 16, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone, OverlapSharedExpert: overlap},
		})
	}
	off, err := run("llama4-scout", false)
	if err != nil {
		t.Fatal(err)
	}
	on, err := run("llama4-scout", true)
	if err != nil {
		t.Fatal(err)
	}
	gain := off.Breakdown.Exposed[step.CommEP] - on.Breakdown.Exposed[step.CommEP]
	if !(gain > 0) || math.Abs(on.Breakdown.Hidden[step.CommEP]-gain) > 1e-9 {
		t.Errorf("exposed all-to-all %.3f → %.3f s, hidden %.3f s", off.Breakdown.Exposed[step.CommEP], on.Breakdown.Exposed[step.CommEP], on.Breakdown.Hidden[step.CommEP])
	}
	if !(on.Breakdown.Hidden[step.CommEP] < on.Breakdown.Forward+on.Breakdown.Backward) {
		t.Errorf("hidden %.3f s exceeds the compute", on.Breakdown.Hidden[step.CommEP])
	}
	t.Logf("llama4-scout EP 16 over 8 nodes: exposed all-to-all %.3f s, %.3f s with the shared expert overlapped", off.Breakdown.Exposed[step.CommEP], on.Breakdown.Exposed[step.CommEP])
	if _, err := run("mixtral-8x7b", true); err == nil || !strings.Contains(err.Error(), "layout.overlap_shared_expert") {
		t.Errorf("mixtral (no shared expert): %v", err)
	}
}

// Megatron-Core's all-to-all dispatcher sends bf16 tokens whether the experts' GEMMs
// run in fp8 or not (the tokens are cast inside each expert's linear layer): an fp8
// step of a NeMo recipe on H100 moves the same expert-parallel bytes as its bf16
// step, so the dispatch cannot account for a difference between the two precisions
// (docs/step-model.md, "fp8 gains less than estimated on H100 MoE").
func TestMoEDispatchBytesSameUnderFP8(t *testing.T) {
	ep := func(p step.Precision) float64 {
		tr := step.Training{SeqLen: 4096, GlobalBatch: 256, Precision: p, Framework: "nemo-24.12"}
		if p == step.FP8 {
			tr.FP8Recipe = step.FP8Delayed
		}
		req := step.Request{
			Model: arch(t, "mixtral-8x7b"), Cluster: cluster(t, "dgx-h100", 8),
			Training: tr,
			Layout:   step.Layout{TP: 2, PP: 1, DP: 32, EP: 8, MicroBatch: 1, SP: true},
		}
		res, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		var bytes float64
		for _, c := range res.Comms {
			if c.KindName == "ep" {
				bytes += c.Bytes * c.PerStep
			}
		}
		return bytes
	}
	b16, b8 := ep(step.BF16), ep(step.FP8)
	if b16 == 0 || b8 != b16 {
		t.Errorf("expert-parallel bytes a step: bf16 %.6g, fp8 %.6g; want the same, not 0", b16, b8)
	}
}
