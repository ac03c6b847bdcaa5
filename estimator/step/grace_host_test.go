package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

// A layer too small to keep the GPU busy runs at the speed its host issues it,
// and the host's speed is the node's CPU's: Transformer Engine issue #2053 times
// the same Python and C++ 2.75× slower on GB200's Grace (torch.nn.Linear's forward
// call: 37.08 µs) than on a DGX H100's Xeon 8480C (13.48 µs), and Transformer
// Engine's Linear at 99.66 µs on Grace. A Megatron-Core dense layer (NeMo's
// Transformer Engine layer spec) calls 5 modules — QKV with its norm, attention,
// output projection, MLP up with its norm, MLP down — and 5 eager operators (two
// residual adds, the activation, two rotary kernels) of 7 µs on x86: 5 × 99.66 /
// 2.75 + 5 × 7 = 216.2 µs on an x86 host, 594.7 µs on Grace. The same GB200
// cluster with an x86 host, a tiny layer at 512 tokens, eager: the forward pass
// differs by 378.4 µs per layer and micro-batch; with CUDA graphs, one launch of
// 4 µs × 2.75 a layer stays under the GPU's time, and Grace costs nothing.
func TestGraceHostBound(t *testing.T) {
	small := arch(t, "megatron-1.7b")
	small.Hidden, small.Heads, small.KVHeads, small.FFN, small.Vocab = 256, 4, 4, 1024, 32000
	grace := cluster(t, "gb200-nvl72", 1)
	spec, err := catalog.System("gb200-nvl72")
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes = 1
	spec.Host.CPU = topology.X86
	x86, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	const gpus = 4
	fwd := func(cl *topology.Cluster, graphs bool) float64 {
		req := step.Request{Model: small, Cluster: cl,
			Training: step.Training{SeqLen: 512, GlobalBatch: gpus, Precision: step.BF16, Framework: "nemo", CUDAGraphs: graphs},
			Layout:   step.Layout{TP: 1, PP: 1, DP: gpus, CP: 1, MicroBatch: 1, Recompute: step.RecomputeNone}}
		return mustEstimate(t, req).Breakdown.Forward
	}
	const ratio = 37.08 / 13.48
	const x86Layer = 5*99.66/ratio*1e-6 + 5*7e-6
	layers := float64(small.Layers)
	want := layers * x86Layer * (ratio - 1)
	got := fwd(grace, false) - fwd(x86, false)
	t.Logf("eager forward on Grace %.3f ms, on x86 %.3f ms: %.1f µs a layer more (want %.1f)", 1e3*fwd(grace, false), 1e3*fwd(x86, false), 1e6*got/layers, 1e6*want/layers)
	if math.Abs(got-want) > 1e-3*want {
		t.Errorf("Grace's forward is %.1f µs a layer longer than x86's, want %.1f", 1e6*got/layers, 1e6*want/layers)
	}
	if g, x := fwd(grace, true), fwd(x86, true); g != x || !(g < fwd(x86, false)) {
		t.Errorf("with CUDA graphs the forward takes %.3f ms on Grace and %.3f ms on x86 (%.3f ms eager): want the same, and shorter", 1e3*g, 1e3*x, 1e3*fwd(x86, false))
	}
}
