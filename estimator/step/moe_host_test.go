package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Dropless MoE copies its token counts to the host before the expert-parallel
// all-to-all (Megatron-Core's MoEAlltoAllTokenDispatcher), so the host stops
// running ahead there: at each MoE layer's forward the GPU idles for the copy and
// the first operator after it (2 eager operators of 7 µs), and the host has lost
// whatever lead it had: the block's remaining operators (the all-to-alls'
// bookkeeping, the re-layout by local expert, the experts, the un-permutation) and
// its three all-to-alls (89 µs each: a torch.distributed call on an x86 host,
// PyTorch issue #138773) are issued from scratch. Padding the experts to capacity
// fixes the split sizes: no sync. Qwen3-30B-A3B (48 MoE layers of 128 experts of
// 768, top 8) on 8 B200 with EP 8:
//   - at 1024 tokens per micro-batch the layer waits for its host throughout (its
//     16 local experts see 512 tokens each, about 60 µs of grouped GEMMs): the host
//     never runs ahead, so the sync costs the stall alone, and the padded layer
//     pays its router's 5 capacity kernels (moe_utils.topk_softmax_with_capacity)
//     besides: dropless is 14 − 35 = −21 µs a layer off the padded forward; with
//     fused permutation the padded dispatcher still re-lays its chunks out by
//     local expert (4 operators, 28 µs) where the dropless one does not: −49 µs;
//   - at 16K tokens with context parallelism 8, each rank attends over 16K keys
//     for its 2K tokens: the GPU outlasts the host up to the sync, while the
//     block after it (2K tokens' experts) is issued slower than it runs. The sync
//     throws the host's lead away: more than the stall, at most the stall and
//     everything the host issues after it (11 operators, the experts' two grouped
//     linear modules of 36.2 µs, the three all-to-alls: 430 µs);
//   - at 16K tokens without context parallelism the experts run for
//     milliseconds: the host keeps up, only the stall remains.
func TestMoEHostSync(t *testing.T) {
	req := func(seq, cp int, pad, fused bool) step.Request {
		return step.Request{Model: arch(t, "qwen3-30b-a3b"), Cluster: cluster(t, "hgx-b200", 1),
			Training: step.Training{SeqLen: seq, GlobalBatch: 64, Precision: step.BF16,
				MoECapacityFactor: map[bool]float64{true: 1, false: 0}[pad], MoEPadToCapacity: pad, MoEPermuteFusion: fused},
			Layout: step.Layout{TP: 1, PP: 1, DP: 8 / cp, CP: cp, EP: 8, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone}}
	}
	const layers = 48
	const perOp, perCall, module = 7e-6, 89e-6, 99.66 / (37.08 / 13.48) * 1e-6
	// extra is what the sync adds to one MoE layer's forward.
	extra := func(seq, cp int, fused bool) float64 {
		mbs := float64(64 / (8 / cp))
		f := func(pad bool) float64 { return mustEstimate(t, req(seq, cp, pad, fused)).Breakdown.Forward }
		return (f(false) - f(true)) / (layers * mbs)
	}
	for _, c := range []struct {
		fused bool
		want  float64
	}{{false, (2 - 5) * perOp}, {true, (2 - 5 - 4) * perOp}} {
		if e := extra(1024, 1, c.fused); math.Abs(e-c.want) > 1e-9 {
			t.Errorf("1K tokens, fused permutation %v: dropless over padded %.1f µs per layer, want %.0f (the stall less the padded layer's own operators)", c.fused, 1e6*e, 1e6*c.want)
		}
	}
	e := extra(16384, 8, false)
	t.Logf("16K tokens, CP 8: the sync costs %.1f µs per MoE layer forward", 1e6*e)
	if hi := 2*perOp + 11*perOp + 2*module + 3*perCall; !(e > 2*perOp*1.01 && e <= hi*1.001) {
		t.Errorf("16K tokens, CP 8: the sync costs %.1f µs per layer, want more than the stall (14 µs) and at most %.0f µs", 1e6*e, 1e6*hi)
	}
	if e := extra(16384, 1, false); e < 2*perOp*0.999 || e > 2*perOp*1.001 {
		t.Errorf("16K tokens: the sync costs %.1f µs per layer, want the 14 µs stall alone", 1e6*e)
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
// capacity. The flex dispatcher has no re-layout by local expert after the
// dispatch and before the combine (sort_chunks_by_idxs is the all-to-all
// dispatcher's alone, token_dispatcher.py at 26.04-alpha.rc2): its forward is also
// short of the all-to-all dispatcher's unfused one by those two copies of k·h per
// token (read and write, 2 B each) at H100's 3.35 TB/s of HBM (H100 SXM
// specifications) at the model's 90 % (Constants.HBMEfficiency) — the GPU
// outlasts the host at 16K tokens, so their operators cost nothing more.
func TestDeepEPHostSyncs(t *testing.T) {
	const layers, mbs, stall = 48, 8, 2 * 7e-6
	const tokens, k, h, hbm = 16384, 8, 2048, 3350e9 * 0.90
	const relayout = tokens * 2 * (2 * k * h * 2) / hbm
	fwd := func(dispatcher string, pad bool) float64 {
		r := step.Request{Model: arch(t, "qwen3-30b-a3b"), Cluster: cluster(t, "dgx-h100", 1),
			Training: step.Training{SeqLen: 16384, GlobalBatch: 64, Precision: step.BF16, MoEDispatcher: dispatcher,
				MoECapacityFactor: map[bool]float64{true: 1, false: 0}[pad], MoEPadToCapacity: pad},
			Layout: step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, EP: 8, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone}}
		return mustEstimate(t, r).Breakdown.Forward / (layers * mbs)
	}
	for _, pad := range []bool{false, true} {
		want := -relayout
		if pad {
			want += stall
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
	// At 1K tokens the layer waits for its host throughout, so the sync costs
	// its stall alone (TestMoEHostSync): what later versions' padding spares
	// beyond Megatron-Core 0.10's.
	if want := 2 * 7e-6; math.Abs(later-v010-want) > 1e-9 {
		t.Errorf("megatron-core: padding spares %.1f µs per layer more than under nemo-24.12, want the sync's 14 µs stall", 1e6*(later-v010))
	}
	if want := -5 * 7e-6; math.Abs(v010-want) > 1e-9 {
		t.Errorf("nemo-24.12: padding spares %.3f µs per layer, want nothing but the router's 5 capacity kernels (%.0f µs; the permutation still syncs)", 1e6*v010, 1e6*want)
	}
}
