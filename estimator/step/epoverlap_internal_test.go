package step

import (
	"math"
	"testing"
)

// Megatron-Core's EP all-to-all overlap runs, per layer pair, combine_bwd beside
// pre_dispatch_fwd, dispatch_fwd then dispatch_bwd beside mlp_bwd, its weight
// gradients and mlp_fwd, and combine_fwd beside pre_dispatch_bwd
// (TransformerLayerSchedulePlan.run, model_chunk_schedule_plan.py at ae1c882). The
// figures are worked by hand from that table, not taken from the code.
func TestEPOverlapLayer(t *testing.T) {
	for _, tc := range []struct {
		name                                       string
		preF, mlpF, preB, mlpB, mlpBW, preBW, d, c float64
		layers                                     int
		want                                       float64
	}{
		// Every all-to-all shorter than the node beside it: all hidden.
		{"each node outlasts its all-to-all", 1, 1, 2, 1, 1, 0.5, 0.5, 0.5, 3, 0},
		// No compute: the comm stream runs the four back to back.
		{"no compute", 0, 0, 0, 0, 0, 0, 1, 1, 4, 4},
		// All-to-alls of 2 beside nodes of 1: the comm stream is busy from 0 to 8
		// (combine_bwd 0–2, dispatch_fwd 2–4, dispatch_bwd 4–6, combine_fwd 6–8)
		// against 4 of compute.
		{"all-to-alls outlast the nodes", 1, 1, 1, 1, 0, 0, 2, 2, 1, 4},
		// A 0.5 pre_dispatch_fwd under a combine_bwd of 1, every other node 2: the
		// layer waits 0.5 for the combine before mlp_bwd, the rest hides.
		{"short attention forward", 0.5, 2, 2, 2, 2, 0, 1, 1, 1, 0.5},
	} {
		got := epOverlapLayer(tc.preF, tc.mlpF, tc.preB, tc.mlpB, tc.mlpBW, tc.preBW, tc.d, tc.c, tc.layers)
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: %.6f exposed a layer, want %.6f", tc.name, got, tc.want)
		}
	}
}
