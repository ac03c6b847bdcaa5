package step_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

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
