package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Dropless MoE copies its token counts to the host before the expert-parallel
// all-to-all (Megatron-Core's MoEAlltoAllTokenDispatcher), so the host stops
// running ahead there: at each MoE layer's forward the GPU idles for the copy and
// the first operator after it (2 eager operators of 7 µs), and then waits for the
// host wherever the block's remaining operators (the all-to-alls' bookkeeping, the
// permutation, the experts, the un-permutation: 15 operators unfused, 105 µs) and
// its three all-to-alls (the tokens, their probabilities and the combine, 89 µs
// each: a torch.distributed call on an x86 host, PyTorch issue #138773) take
// longer to issue than the GPU takes to run them. Qwen3-30B-A3B (48 MoE layers of
// 128 experts of 768, top 8) on 8 B200 with EP 8 at 1024 tokens per micro-batch:
// each rank's 16 experts see 512 tokens, about 60 µs of grouped GEMMs, so the
// block is host-bound. Padding the experts to capacity fixes the split sizes: no
// sync, and the host runs ahead again.
func TestMoEHostSync(t *testing.T) {
	req := func(pad, fused bool) step.Request {
		return step.Request{Model: arch(t, "qwen3-30b-a3b"), Cluster: cluster(t, "hgx-b200", 1),
			Training: step.Training{SeqLen: 1024, GlobalBatch: 64, Precision: step.BF16,
				MoECapacityFactor: map[bool]float64{true: 1, false: 0}[pad], MoEPadToCapacity: pad, MoEPermuteFusion: fused},
			Layout: step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, EP: 8, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone}}
	}
	const layers, mbs = 48, 8
	const perOp, perCall = 7e-6, 89e-6
	fwd := func(pad, fused bool) float64 { return mustEstimate(t, req(pad, fused)).Breakdown.Forward }
	dropless, padded := fwd(false, false), fwd(true, false)
	extra := (dropless - padded) / (layers * mbs)
	t.Logf("forward per step: dropless %.2f ms, padded to capacity %.2f ms: %.1f µs per MoE layer", 1e3*dropless, 1e3*padded, 1e6*extra)
	if !(extra >= 2*perOp*0.999 && extra <= ((2+15)*perOp+3*perCall)*1.001) {
		t.Errorf("the sync costs %.1f µs per layer forward, want between the stall (14 µs) and the stall plus the block's host time (386 µs)", 1e6*extra)
	}
	if !(extra > 2*perOp*1.01) {
		t.Errorf("at 512 tokens per expert the block should be host-bound after the sync: %.1f µs per layer", 1e6*extra)
	}
	// Fused permutation issues 2 operators where the unfused one issues 6 and
	// sorts the received chunks by local expert (4 more): less host time to wait for.
	fusedExtra := (fwd(false, true) - fwd(true, true)) / (layers * mbs)
	if !(fusedExtra < extra) {
		t.Errorf("fused permutation: the sync costs %.1f µs per layer, unfused %.1f µs; want less", 1e6*fusedExtra, 1e6*extra)
	}
	// At 16K tokens per micro-batch the experts run for milliseconds: the host
	// keeps up, only the stall remains.
	long := func(pad bool) float64 {
		r := req(pad, false)
		r.Training.SeqLen = 16384
		return mustEstimate(t, r).Breakdown.Forward
	}
	if e := (long(false) - long(true)) / (layers * mbs); e < 2*perOp*0.999 || e > 2*perOp*1.001 {
		t.Errorf("16K tokens: the sync costs %.1f µs per layer, want the 14 µs stall alone", 1e6*e)
	}
}

// CUDA graphs replay a layer's kernels with one launch: a layer too small to hide
// its 20 kernel launches (80 µs) runs at its GPU time instead. A GPT of hidden 256
// (4 heads, FFN 1024) at 512 tokens per micro-batch on one H100: a layer's forward is
// 2 × 512 × 12 × 256² = 0.8 GFLOP, a few µs of GEMMs even on a fraction of the SMs,
// so eager it is launch-bound at 80 µs and with graphs it is not.
// An MoE block keeps its eager operators after the dropless sync.
func TestCUDAGraphs(t *testing.T) {
	small := arch(t, "megatron-1.7b")
	small.Hidden, small.Heads, small.KVHeads, small.FFN, small.Vocab = 256, 4, 4, 1024, 32000
	req := step.Request{Model: small, Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 512, GlobalBatch: 8, Precision: step.BF16},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, MicroBatch: 1, Recompute: step.RecomputeNone}}
	eager := mustEstimate(t, req).Breakdown.Forward
	req.Training.CUDAGraphs = true
	graphs := mustEstimate(t, req).Breakdown.Forward
	layers := float64(req.Model.Layers)
	t.Logf("forward: eager %.3f ms, CUDA graphs %.3f ms", 1e3*eager, 1e3*graphs)
	if !(eager >= layers*80e-6 && graphs < eager && graphs < layers*80e-6) {
		t.Errorf("forward eager %.3f ms (want ≥ %d layers × 80 µs), with graphs %.3f ms (want less)", 1e3*eager, int(layers), 1e3*graphs)
	}
	moe := func(graphs bool) float64 {
		r := step.Request{Model: arch(t, "qwen3-30b-a3b"), Cluster: cluster(t, "hgx-b200", 1),
			Training: step.Training{SeqLen: 1024, GlobalBatch: 64, Precision: step.BF16, CUDAGraphs: graphs},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, EP: 8, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone}}
		return mustEstimate(t, r).Breakdown.Forward
	}
	if e, g := moe(false), moe(true); !(g <= e && g > 0.5*e) {
		t.Errorf("dropless MoE forward eager %.2f ms, graphs %.2f ms: want at most eager and the post-sync block still eager", 1e3*e, 1e3*g)
	}
}

// Megatron-Core's flex dispatcher on DeepEP synchronises the host with the GPU
// once in every MoE block's forward, padded or not (Megatron-Core 2436e3d):
// DeepEP's dispatch waits for the count of the tokens a rank receives
// (fused_a2a.py), which it hands back as a host tensor, so the permutation's
// tokens_per_expert.sum().item() (token_dispatcher.py _DeepepManager) waits for
// nothing. At 16K tokens the block's GPU work outlasts its host work, so the sync
// costs its stall alone (2 operators of 7 µs): 14 µs a layer, as the all-to-all
// dispatcher's dropless sync, and 14 against none when the experts are padded to
// capacity.
func TestDeepEPHostSyncs(t *testing.T) {
	const layers, mbs, stall = 48, 8, 2 * 7e-6
	fwd := func(dispatcher string, pad bool) float64 {
		r := step.Request{Model: arch(t, "qwen3-30b-a3b"), Cluster: cluster(t, "dgx-h100", 1),
			Training: step.Training{SeqLen: 16384, GlobalBatch: 64, Precision: step.BF16, MoEDispatcher: dispatcher,
				MoECapacityFactor: map[bool]float64{true: 1, false: 0}[pad], MoEPadToCapacity: pad},
			Layout: step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, EP: 8, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone}}
		return mustEstimate(t, r).Breakdown.Forward / (layers * mbs)
	}
	for _, pad := range []bool{false, true} {
		want := 0.0
		if pad {
			want = stall
		}
		if got := fwd(step.DispatchDeepEP, pad) - fwd(step.DispatchAllToAll, pad); math.Abs(got-want) > 1e-9 {
			t.Errorf("padded %v: DeepEP's forward %.1f µs a layer above the all-to-all dispatcher's, want %.0f", pad, 1e6*got, 1e6*want)
		}
	}
}

// Megatron-Core 0.10 (NeMo 24.12, the nemo-24.12 profile) selects the routed
// tokens with masked_select, whose output size the GPU reports to the host
// (moe_utils.py at core_r0.10.0, permute), so padding the experts to capacity does
// not spare an MoE layer's forward its sync; Megatron-LM f27a04f (core_v0.11.0)
// gave the padded case a fixed-size argsort. Under nemo-24.12 the padded run pays
// the dropless one's sync; under a later Megatron-Core (the megatron-core
// profile) padding removes it. Everything else the two settings change is the
// same in both profiles (the same test's layouts as TestMoEHostSync): the router's
// five capacity kernels (topk_softmax_with_capacity: the top-capacity tokens, the
// mask's zeros_like, scatter and cast, the masked probabilities) of 7 µs, which
// the padded layer issues besides.
func TestMoEPaddedPermuteSync(t *testing.T) {
	fwd := func(fw string, pad bool) float64 {
		return mustEstimate(t, step.Request{Model: arch(t, "qwen3-30b-a3b"), Cluster: cluster(t, "dgx-h100", 1),
			Training: step.Training{SeqLen: 1024, GlobalBatch: 64, Precision: step.BF16, Framework: fw,
				MoECapacityFactor: map[bool]float64{true: 1, false: 0}[pad], MoEPadToCapacity: pad},
			Layout: step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, EP: 8, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone}}).Breakdown.Forward
	}
	const layers, mbs = 48, 8
	later := (fwd("megatron-core", false) - fwd("megatron-core", true)) / (layers * mbs)
	v010 := (fwd("nemo-24.12", false) - fwd("nemo-24.12", true)) / (layers * mbs)
	t.Logf("dropless over padded, per MoE layer forward: megatron-core %.1f µs, nemo-24.12 %.1f µs", 1e6*later, 1e6*v010)
	if !(later >= 2*7e-6*0.999) {
		t.Errorf("megatron-core: padding spares %.1f µs per layer, want at least the sync's 14 µs stall", 1e6*later)
	}
	if want := -5 * 7e-6; math.Abs(v010-want) > 1e-9 {
		t.Errorf("nemo-24.12: padding spares %.3f µs per layer, want nothing but the router's 5 capacity kernels (%.0f µs; the permutation still syncs)", 1e6*v010, 1e6*want)
	}
}
