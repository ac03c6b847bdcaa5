package step

import (
	"math"
	"testing"
)

// NeMo 2.3's loss reduction (framework.Profile.LossReductionHostSync) syncs with
// the host once a micro-batch where the loss is computed; the GPU then idles while
// the host issues, counted in NeMo 7a8f1cc and Megatron-Core core_v0.12.0, 18
// eager operators and one torch.distributed all-reduce before the output layer's
// backward: 18 × 7 µs + 89 µs = 215 µs on an x86 host, 37.08 / 13.48 times that on
// Grace (Transformer Engine #2053's torch.nn.Linear). Llama 3 8B at TP 2: the
// slowest stage's forward is its layers, the output layer and that gap — with a
// pipeline too, where the last stage paces it — and nothing more under
// megatron-core, whose training loop reduces the loss once a step.
func TestLossReductionHostSync(t *testing.T) {
	const x86 = (18*7 + 89) * 1e-6
	e := New()
	for _, c := range []struct {
		cluster string
		fw      string
		want    float64
	}{
		{"dgx-h100", "nemo-25.04", x86},
		{"gb200-nvl72", "nemo-25.04", x86 * 37.08 / 13.48},
		{"dgx-h100", "megatron-core", 0},
		{"gb200-nvl72", "nemo", 0},
	} {
		a, cl := catalogPair(t, "llama3-8b", c.cluster, 2)
		for _, pp := range []int{1, 2} {
			req := normalise(Request{Model: a, Cluster: cl,
				Training: Training{SeqLen: 4096, GlobalBatch: 8, Framework: c.fw},
				Layout:   Layout{TP: 2, PP: pp, DP: 8 / (2 * pp), MicroBatch: 1, SP: true, Recompute: RecomputeNone}})
			r, ok := e.k.rates(cl.GPU(), BF16)
			if !ok {
				t.Fatalf("%s: no rates", c.cluster)
			}
			cp := e.compute(req, &r, 4096, 4096, 4096)
			extra := cp.fwd - (cp.nDense*cp.lc.fwd + cp.nMoE*cp.lcMoE.fwd + cp.out[0])
			if math.Abs(extra-c.want) > 1e-12+1e-9*c.want {
				t.Errorf("%s on %s, PP %d: forward beyond the layers and output layer %.1f µs, want %.1f µs",
					c.fw, c.cluster, pp, extra*1e6, c.want*1e6)
			}
		}
	}
}
