package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// FSDP2 (torchtitan's data parallelism) copies each gathered weight out of the
// all-gather buffer and each gradient into the reduce-scatter buffer on the compute
// stream (framework.Profile.FSDP2Copies): under ZeRO-3 the forward pass of every
// micro-batch grows by the weights read and written once (2 B each in bf16), the
// backward pass by the same for its own gather plus the 16-bit gradients read and
// written in fp32 (torchtitan reduces in fp32: 2 + 4 B), all at the elementwise
// share of HBM bandwidth. DDP (ZeRO-0) copies nothing of the kind.
func TestFSDP2CopiesOnTheComputeStream(t *testing.T) {
	a := arch(t, "llama3-8b")
	req := func(system, fw string, zero int) step.Request {
		return step.Request{Model: a, Cluster: cluster(t, system, 1),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 8, Precision: step.BF16, Framework: fw},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, ZeRO: zero, MicroBatch: 1, Recompute: step.RecomputeOps}}
	}
	params := a.Params().Total
	for _, system := range []string{"hgx-b200", "dgx-h100"} {
		hbm := cluster(t, system, 1).GPU().MemoryBandwidthGBps * 1e9 * step.DefaultConstants().HBMEfficiency
		ddp := mustEstimate(t, req(system, "torchtitan", 0))
		fsdp := mustEstimate(t, req(system, "torchtitan", 3))
		o := fsdp.Training.Optimizer
		if o.WeightBytes != 2 || o.GradBytes != 4 {
			t.Fatalf("%s: torchtitan's optimizer %v, want 16-bit weights and fp32 gradients", system, o)
		}
		wantF := 2 * o.WeightBytes * params / hbm
		wantB := wantF + (o.WeightBytes+o.GradBytes)*params/hbm
		gotF := fsdp.Breakdown.Forward - ddp.Breakdown.Forward
		gotB := fsdp.Breakdown.Backward - ddp.Breakdown.Backward
		if math.Abs(gotF-wantF) > 1e-6*wantF || math.Abs(gotB-wantB) > 1e-6*wantB {
			t.Errorf("%s: FSDP2 adds %.2f / %.2f ms forward / backward, want %.2f / %.2f ms", system, 1e3*gotF, 1e3*gotB, 1e3*wantF, 1e3*wantB)
		}
		if fsdp.PerMicroBatch.Forward != fsdp.Breakdown.Forward || fsdp.PerMicroBatch.Backward != fsdp.Breakdown.Backward {
			t.Errorf("%s: per micro-batch %.4f / %.4f s, breakdown %.4f / %.4f s over one micro-batch", system,
				fsdp.PerMicroBatch.Forward, fsdp.PerMicroBatch.Backward, fsdp.Breakdown.Forward, fsdp.Breakdown.Backward)
		}
		// The reduce-scatter copy-in ran on the reduce-scatter stream before PyTorch
		// PR #129721 (2024-06-27): torchtitan of April 2024 pays the copy-out only.
		old := mustEstimate(t, req(system, "torchtitan-2024-04", 3))
		dec := mustEstimate(t, req(system, "torchtitan-2024", 3))
		if d, want := dec.Breakdown.Backward-old.Breakdown.Backward, (o.WeightBytes+o.GradBytes)*params/hbm; math.Abs(d-want) > 1e-6*want ||
			dec.Breakdown.Forward != old.Breakdown.Forward {
			t.Errorf("%s: December 2024 over April 2024: backward +%.2f ms (want the copy-in, %.2f ms), forward %+.4f ms (want 0)",
				system, 1e3*d, 1e3*want, 1e3*(dec.Breakdown.Forward-old.Breakdown.Forward))
		}
		t.Logf("Llama 3 8B on 8 %s, FSDP2 over 8, 8192 tokens: copies %.1f ms forward, %.1f ms backward; step %.3f s",
			system, 1e3*gotF, 1e3*gotB, fsdp.StepTime)
	}
}

// Routed experts sharded on dim 1 — torchtitan's apply_fsdp when the expert
// FSDP group times EP exceeds the experts (a rank's experts cannot be split on dim
// 0) — are gathered into a temporary and concatenated: twice the copy-out of
// experts sharded on dim 0.
func TestFSDP2CopiesExpertsShardedOnDim1(t *testing.T) {
	a := arch(t, "mixtral-8x7b")
	req := func(dp, ep, zero int) step.Request {
		return step.Request{Model: a, Cluster: cluster(t, "hgx-b200", dp/8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: dp, Precision: step.BF16, Framework: "torchtitan"},
			Layout:   step.Layout{TP: 1, PP: 1, DP: dp, CP: 1, EP: ep, ZeRO: zero, MicroBatch: 1, Recompute: step.RecomputeFull}}
	}
	p := a.Params()
	hbm := cluster(t, "hgx-b200", 1).GPU().MemoryBandwidthGBps * 1e9 * step.DefaultConstants().HBMEfficiency
	// The routed experts with their router, as the model holds an MoE layer's
	// parameters split over EP.
	routed := float64(p.MoELayers) * (p.PerLayerMoE - p.PerLayerShared)
	// 16 GPUs, EP 2: each expert is held by the 8 ranks of its expert-data-parallel
	// group, and 8 × 2 = 16 > 8 experts: dim 1. (The catalog's Mixtral has 8
	// experts, so every sharded expert group of it is on dim 1.) ZeRO-2 gathers once
	// a micro-batch, before its forward pass (fsdp2StepCopies, without dim 1's
	// second copy), ZeRO-3 before its forward and again before its backward.
	got := func(dp, ep int) float64 {
		return mustEstimate(t, req(dp, ep, 3)).Breakdown.Forward - mustEstimate(t, req(dp, ep, 2)).Breakdown.Forward
	}
	d := got(16, 2)
	// The rank's routed experts are half of them (EP 2), read and written twice
	// under ZeRO-3, once under ZeRO-2.
	want := 2 * 2 * routed / 2 / hbm
	if math.Abs(d-want) > 1e-6*want {
		t.Errorf("Mixtral on 16 B200, EP 2: ZeRO-3 adds %.6f ms forward over ZeRO-2, want %.6f ms (experts on dim 1: copied twice)", 1e3*d, 1e3*want)
	}
}
