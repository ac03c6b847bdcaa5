package step

import (
	"math"
	"math/rand/v2"
	"testing"
)

// On one hardware queue the layer pair runs its nodes in launch order
// (TransformerLayerSchedulePlan.run at ae1c882): combine_bwd, pre_dispatch_fwd,
// mlp_bwd, dispatch_fwd, dispatch_bwd, mlp_fwd, combine_fwd, pre_dispatch_bwd. The
// figures are worked by hand from that order, not taken from the code.
func TestEPOverlapLayerOneQueue(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		preF, mlpF, preB, mlpB, d, c float64
		layers                       int
		want                         float64
	}{
		// The Qwen3-235B-A22B overlap run's nodes as docs/step-model.md gives them
		// (ms): attention forward 1.08, experts forward 1.26, attention backward
		// 2.09, expert backward 1.45 + 1.08 of weight gradients, each all-to-all
		// 0.97. Layer 1: combine_bwd 0–0.97 beside pre_dispatch_fwd 0–1.08;
		// mlp_bwd 1.08–3.61; dispatch_fwd, launched after it, 3.61–4.58 beside
		// nothing; dispatch_bwd 4.58–5.55 beside mlp_fwd 4.58–5.84; combine_fwd
		// 5.84–6.81 beside pre_dispatch_bwd 5.84–7.93. Layer 2 starts at 7.93 and
		// repeats: 7.93 a layer against 6.96 of compute, the dispatch's 0.97
		// exposed.
		{"qwen3 overlap run", 1.08, 1.26, 2.09, 1.45 + 1.08, 0.97, 0.97, 3, 0.97},
		// No compute: the four all-to-alls back to back.
		{"no compute", 0, 0, 0, 0, 1, 1, 2, 4},
		// All-to-alls of 2 beside nodes of 1: combine_bwd 0–2 (pre_dispatch_fwd
		// 0–1), mlp_bwd 2–3, dispatch_fwd 3–5, dispatch_bwd 5–7 (mlp_fwd 5–6),
		// combine_fwd 7–9 (pre_dispatch_bwd 7–8): 9 against 4 of compute.
		{"all-to-alls outlast the nodes", 1, 1, 1, 1, 2, 2, 1, 5},
	} {
		got := epOverlapLayerOneQueue(tc.preF, tc.mlpF, tc.preB, tc.mlpB, tc.d, tc.c, tc.layers)
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %.6f exposed a layer, want %.6f", tc.name, got, tc.want)
		}
	}
}

// One queue only adds an order to what starts when: over any nodes and
// all-to-alls it never leaves less exposed than the two streams running freely
// (epOverlapLayer, the weight gradients apart there), and never more than the
// layer's four all-to-alls.
func TestOneQueueNeverHidesMore(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 20000 {
		v := func() float64 {
			if r.IntN(5) == 0 {
				return 0
			}
			return r.Float64() * 3
		}
		preF, mlpF, mlpB, mlpBW, d, c := v(), v(), v(), v(), v(), v()
		preBW := v()
		preB := preBW + v()
		layers := 1 + r.IntN(6)
		many := epOverlapLayer(preF, mlpF, preB, mlpB, mlpBW, preBW, d, c, layers)
		one := epOverlapLayerOneQueue(preF, mlpF, preB, mlpB+mlpBW, d, c, layers)
		if one < many-1e-9 || one > 2*(d+c)+1e-9 {
			t.Fatalf("case %d (preF %.3f mlpF %.3f preB %.3f mlpB %.3f mlpBW %.3f preBW %.3f d %.3f c %.3f, %d layers): one queue %.4f exposed, many %.4f, all-to-alls %.4f",
				i, preF, mlpF, preB, mlpB, mlpBW, preBW, d, c, layers, one, many, 2*(d+c))
		}
	}
}
