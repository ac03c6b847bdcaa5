package step

import (
	"math"
	"testing"
)

// The input embedding's weight gradient is dense: each micro-batch writes a zeroed
// 16-bit gradient of the vocabulary slice, reads it back and adds it to the step's
// gradient (read and written at its width). On one stage, Llama 3 8B at TP 2 on an
// H100 moves 128256 × 4096 / 2 elements × (2·2 + 2·g) B at 90 % of 3350 GB/s more
// in its backward pass than its layers and output layer: 2 B gradients under
// megatron-core with a 16-bit-gradient optimizer stated (--grad-reduce-in-bf16),
// 4 B under nemo-25.04 (NeMo 2's fp32 gradient reduction). With a
// pipeline the embedding is on the first stage, which does not pace it.
func TestEmbeddingGradient(t *testing.T) {
	a, cl := catalogPair(t, "llama3-8b", "dgx-h100", 1)
	e := New()
	for _, c := range []struct {
		fw        string
		opt       Optimizer
		gradBytes float64
	}{{"megatron-core", AdamMixed(), 2}, {"nemo-25.04", Optimizer{}, 4}} {
		for _, pp := range []int{1, 2} {
			req := normalise(Request{Model: a, Cluster: cl,
				Training: Training{SeqLen: 4096, GlobalBatch: 8, Framework: c.fw, Optimizer: c.opt},
				Layout:   Layout{TP: 2, PP: pp, DP: 4 / pp, MicroBatch: 1, SP: true, Recompute: RecomputeNone}})
			if g := req.Training.Optimizer.GradBytes; g != c.gradBytes {
				t.Fatalf("%s: %v B gradients, want %v", c.fw, g, c.gradBytes)
			}
			r, ok := e.k.rates(cl.GPU(), BF16)
			if !ok {
				t.Fatal("no H100 rates")
			}
			cp := e.compute(req, &r, 4096, 4096, 4096)
			extra := cp.bwd - (cp.nDense*cp.lc.bwd + cp.nMoE*cp.lcMoE.bwd + cp.out[1])
			want := 0.0
			if pp == 1 {
				want = float64(a.Vocab) * float64(a.Hidden) / 2 * (2*2 + 2*c.gradBytes) / (0.90 * 3350e9)
			}
			if math.Abs(extra-want) > 1e-9+1e-6*want {
				t.Errorf("%s, PP %d: backward beyond the layers and output layer %.4f ms, want %.4f ms", c.fw, pp, extra*1e3, want*1e3)
			}
		}
	}
}
