package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Megatron-Core's all-to-all dispatcher re-lays the tokens a rank receives out by
// local expert after the dispatch, and back before the combine. Dropless, fused
// permutation does it inside Transformer Engine's fused kernels, the unfused path
// copies the chunks (split and concatenate); padded to capacity, the dispatcher
// copies them with view(...).transpose(0, 1).contiguous() whatever
// --moe-permute-fusion says (token_dispatcher.py, drop_and_pad branch). Qwen3-30B-A3B
// (48 MoE layers, 128 experts, top 8, hidden 2048) on 8 B200 with EP 8 (16 local
// experts) at 16K tokens per micro-batch, where the GEMMs hide the host: dropless,
// fusion saves the two copies of k·h per routed token (read and write, 2 B each),
// forward and backward; padded, it saves nothing.
func TestMoELocalRelayout(t *testing.T) {
	req := func(pad, fused bool) step.Request {
		tr := step.Training{SeqLen: 16384, GlobalBatch: 64, Precision: step.BF16, MoEPermuteFusion: fused}
		if pad {
			tr.MoECapacityFactor, tr.MoEPadToCapacity = 1, true
		}
		return step.Request{Model: arch(t, "qwen3-30b-a3b"), Cluster: cluster(t, "hgx-b200", 1), Training: tr,
			Layout: step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, EP: 8, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone}}
	}
	fb := func(pad, fused bool) float64 {
		b := mustEstimate(t, req(pad, fused)).Breakdown
		return b.Forward + b.Backward
	}
	const layers, mbs, tokens, k, h = 48, 8, 16384, 8, 2048
	// B200: 7.7 TB/s of HBM (HGX B200 specifications) at the model's 90 %
	// (Constants.HBMEfficiency).
	const hbm = 7700e9 * 0.90
	// Per routed token and layer, forward and again backward: two copies, each
	// reading and writing k·h values of 2 B.
	copies := float64(layers*mbs) * 2 * tokens * 2 * (2 * k * h * 2) / hbm
	dropless := fb(false, false) - fb(false, true)
	padded := fb(true, false) - fb(true, true)
	t.Logf("unfused − fused, forward + backward: dropless %.1f ms (two copies of k·h per token: %.1f ms), padded %.3f ms", 1e3*dropless, 1e3*copies, 1e3*padded)
	if math.Abs(dropless/copies-1) > 0.01 {
		t.Errorf("dropless: fusion saves %.2f ms, want the %.2f ms of the re-layout copies", 1e3*dropless, 1e3*copies)
	}
	if math.Abs(padded) > 0.01*copies {
		t.Errorf("padded to capacity: fusion saves %.3f ms, want nothing (the transpose copy stays)", 1e3*padded)
	}
}
