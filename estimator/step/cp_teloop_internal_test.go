package step

import (
	"math"
	"testing"
)

// Transformer Engine's ring backward (AttnFuncWithCPAndKVP2P.backward,
// context_parallel.py at 9c61cd7) launches each step's send/recv before the step's
// attention and waits for it after: the first step sends the K/V block, the middle
// ones the K/V block and the dK/dV partial sum, the last the dK/dV sum alone. So a
// layer's backward moves 2·(CP − 1) blocks, each step's under its own attention, and
// nothing is left to send once the last step's attention is done.
func TestRingBackwardFollowsTransformerEnginesLoop(t *testing.T) {
	const p2p = 100e-6 // one block's send/recv, s
	cases := []struct {
		cp, stepB float64
		wantExp   float64 // backward exposure per layer, s
	}{
		// CP 2: the K/V block under step 0, the dK/dV block home under step 1.
		{cp: 2, stepB: 150e-6, wantExp: 0},
		{cp: 2, stepB: 60e-6, wantExp: 2 * 40e-6},
		// CP 4: one block under the first and last steps, two under each of the two
		// middle ones.
		{cp: 4, stepB: 150e-6, wantExp: 2 * 50e-6},
		{cp: 4, stepB: 250e-6, wantExp: 0},
	}
	for _, c := range cases {
		r := ring{cp: c.cp, layers: 1, stepF: 1, stepB: c.stepB,
			passes: (c.cp - 1) + 2*(c.cp-1)}
		exp, hid, _ := r.perMB(ringPrices{p2p: p2p})
		if math.Abs(exp-c.wantExp) > 1e-12 {
			t.Errorf("CP %.0f, backward step %.0f µs: exposed %.1f µs a layer, want %.1f (Transformer Engine's loop)",
				c.cp, c.stepB*1e6, exp*1e6, c.wantExp*1e6)
		}
		if total := (3*c.cp - 3) * p2p; math.Abs(exp+hid-total) > 1e-12 {
			t.Errorf("CP %.0f: exposed + hidden %.1f µs, want the %.0f blocks' %.1f µs", c.cp, (exp+hid)*1e6, 3*c.cp-3, total*1e6)
		}
	}
	// The passes ringAttentionOf counts: CP − 1 forward, 2·(CP − 1) backward.
	cp := &computeParts{stageLayers: 2, nDense: 2}
	for _, n := range []int{2, 4, 8} {
		r := ringAttentionOf(&Layout{CP: n}, cp, 8192, 4096, 0.25, 1, 1, 3e12, false)
		if want := 3 * float64(n-1); r.passes != want {
			t.Errorf("CP %d: %.0f block passes a layer, want %.0f (CP − 1 forward, 2·(CP − 1) backward)", n, r.passes, want)
		}
	}
}
