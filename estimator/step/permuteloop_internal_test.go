package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/model"
)

// Transformer Engine's fused permutation before TE PR #1927 loops over every
// expert for every token and every 1 024-wide block of the hidden dimension
// (framework.Profile.MoEPermuteExpertLoop). NVIDIA's account of DeepSeek-V3 on 256
// GB200 (Megatron-LM docs/discussions/deepseek-v3-gb200-optimization, 79e8592)
// measured the PR together with another change: "Fuse torch.zeros for scaling
// factor allocation & Permute kernel Optimization" took its baseline (TP 1, PP 8 ×
// VP 4, EP 32, micro-batch 1 of 4 096 tokens, 8 layers × 64 micro-batches a GPU
// and step, 8.52 PFLOP a GPU and step at its TFLOPS_per_GPU) from 494.46 to
// 529.55 TFLOPS, 17.23 → 16.09 s a step. What the old kernels cost beyond their
// traffic at that shape, forward and backward, cannot exceed that 1.14 s; and the
// PR's speed-up is "up to 10x", so no kernel may last more than 10× its traffic
// (the new kernel's floor).
func TestPermuteExpertLoopNVIDIAAccount(t *testing.T) {
	k := DefaultConstants()
	gpu, err := catalog.GPU("GB200")
	if err != nil {
		t.Fatal(err)
	}
	r, ok := k.rates(gpu, BF16)
	if !ok {
		t.Fatal("no GB200 rates")
	}
	const tokens, experts, h, topK = 4096, 256, 7168, 8
	x := permuteExpertLoop(tokens, experts, h, topK, &r)
	perStep := 2 * x * 8 * 64 // forward and backward, 8 layers × 64 micro-batches
	t.Logf("beyond traffic: %.3f ms a layer forward, %.2f s a step", 1e3*x, perStep)
	gain := 8.52e15/494.46e12 - 8.52e15/529.55e12
	if !(perStep > 0 && perStep <= gain) {
		t.Errorf("the old kernels cost %.2f s a step beyond their traffic, want more than 0 and at most the %.2f s the account measured with the PR", perStep, gain)
	}
	permute := tokens * 2 * 2 * topK * h / r.hbm
	unpermute := tokens * 2 * (topK + 1) * h / r.hbm
	// Each kernel lasts its chain: two waves (4 096 programs over 148 SMs × 16)
	// of 256 experts × 7 blocks of loads.
	waves := 2.0
	chain := waves * experts * 7 * gpuL2HitLatency
	if got := max(0, chain-permute) + max(0, chain-unpermute); got != x {
		t.Errorf("permuteExpertLoop %.4g s, want %.4g s (two waves of 256 × 7 loads)", x, got)
	}
	for _, c := range []struct {
		name    string
		traffic float64
	}{{"permutation", permute}, {"un-permutation", unpermute}} {
		if ratio := chain / c.traffic; ratio < 1 || ratio > 10 {
			t.Errorf("%s: the old kernel lasts %.1f× its traffic, want between 1 and the PR's 10×", c.name, ratio)
		}
	}
	// Few experts: the chain is shorter than the copy and nothing is added
	// (Grok-1: 8 experts, hidden 6 144, top 2, 8 192 tokens).
	if x := permuteExpertLoop(8192, 8, 6144, 2, &r); x != 0 {
		t.Errorf("8 experts: %.3g s beyond the traffic, want 0", x)
	}
}

// The chain is priced where the profile runs those kernels and the permutation
// is fused: Qwen3-30B-A3B (128 experts, hidden 2 048, top 8) on 8 B200 with EP 8
// and 4 096-token micro-batches, experts padded to capacity. Under nemo-25.04 each
// MoE layer's forward is longer by permuteExpertLoop than under nemo (Transformer
// Engine after the PR), which prices the same forward otherwise but for NeMo 2.3's
// loss sync (18 operators and an all-reduce's call on the x86 host, 215 µs a
// micro-batch: TestLossReductionHostSync); unfused, they differ by that alone.
func TestPermuteExpertLoopByProfile(t *testing.T) {
	m := qwen3Arch(t)
	dispatcher := DispatchAllToAll
	fwd := func(fw string, fused bool) float64 {
		return qwen3OnB200EP8(t, func(tr *Training) {
			tr.Framework, tr.MoEPermuteFusion, tr.MoEDispatcher = fw, fused, dispatcher
		}).Breakdown.Forward
	}
	k := DefaultConstants()
	gpu, _ := catalog.GPU("B200")
	r, _ := k.rates(gpu, BF16)
	layers, mbs := float64(m.Layers), 8.0
	want := layers * mbs * permuteExpertLoop(4096, 128, 2048, 8, &r)
	lossSync := mbs * (18*7 + 89) * 1e-6
	got := fwd("nemo-25.04", true) - fwd("nemo", true) - lossSync
	t.Logf("forward a step: %.2f ms longer under nemo-25.04, permuteExpertLoop gives %.2f ms", 1e3*got, 1e3*want)
	if !(want > 0) || got < want*0.999 || got > want*1.001 {
		t.Errorf("nemo-25.04's forward is %.3f ms longer than nemo's, want %.3f ms (the expert loop)", 1e3*got, 1e3*want)
	}
	if d := fwd("nemo-25.04", false) - fwd("nemo", false); math.Abs(d-lossSync) > 1e-12 {
		t.Errorf("unfused permutation: nemo-25.04's forward differs from nemo's by %.3f ms, want %.3f ms (the loss sync)", 1e3*d, 1e3*lossSync)
	}
	// On DeepEP the kernels permute the received tokens over the 16 local experts
	// only: a chain 8× shorter, over 8× the tokens.
	dispatcher = DispatchDeepEP
	deep := fwd("nemo-25.04", true) - fwd("nemo", true) - lossSync
	wantDeep := layers * mbs * permuteExpertLoop(4096*8, 16, 2048, 1, &r)
	t.Logf("DeepEP: %.2f ms longer, want %.2f ms", 1e3*deep, 1e3*wantDeep)
	if deep < wantDeep*0.999 || deep > wantDeep*1.001 || !(deep < got) {
		t.Errorf("DeepEP: nemo-25.04's forward is %.3f ms longer than nemo's, want %.3f ms, under the all-to-all dispatcher's %.3f ms", 1e3*deep, 1e3*wantDeep, 1e3*got)
	}
}

// qwen3OnB200EP8 estimates Qwen3-30B-A3B (128 experts, hidden 2 048, top 8) on 8 B200
// with EP 8, 4 096-token micro-batches and the experts padded to capacity, in bf16,
// with the training as edit sets it.
func qwen3OnB200EP8(t *testing.T, edit func(*Training)) Result {
	t.Helper()
	cl, err := catalog.Cluster("hgx-b200", 1)
	if err != nil {
		t.Fatal(err)
	}
	tr := Training{SeqLen: 4096, GlobalBatch: 64, Precision: BF16, MoECapacityFactor: 1, MoEPadToCapacity: true}
	edit(&tr)
	res, err := New().Estimate(Request{Model: qwen3Arch(t), Cluster: cl, Training: tr,
		Layout: Layout{TP: 1, PP: 1, DP: 8, CP: 1, EP: 8, ZeRO: 1, MicroBatch: 1, Recompute: RecomputeNone}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// qwen3Arch is the catalog's Qwen3-30B-A3B.
func qwen3Arch(t *testing.T) model.Arch {
	t.Helper()
	m, err := model.Lookup("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	return m
}
