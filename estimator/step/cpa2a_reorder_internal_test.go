package step

import (
	"math"
	"testing"
)

// Transformer Engine's all-to-all context parallelism (context_parallel.py at
// v2.15, flash_attn_a2a_communicate) copies the query, key, value and output twice
// each in a forward, and the output gradient and the query, key and value
// gradients twice each in a backward: on one Llama 3 8B layer (32 query heads and
// 8 key-value heads of 128, so 4 096 + 2 × 1 024 + 4 096 = 10 240 elements a
// token) at 8 192 tokens a GPU that is 2 · 4 B · 8 192 · 10 240 = 671 MB each way,
// read and written once a copy. Ring context parallelism, CP 1 and a framework
// whose attention is not Transformer Engine's copy nothing of the kind; the
// attention's recomputation runs the forward's copies again.
func TestCPAllToAllReorderCopies(t *testing.T) {
	a, cl := catalogPair(t, "llama3-8b", "dgx-h100", 1)
	k := DefaultConstants()
	r := catalogRates(t, &k, "H100", BF16)
	const tokens = 8192
	layer := func(fw string, cp int, a2a bool, rc Recompute) layerTimes {
		req := normalise(Request{Model: a, Cluster: cl,
			Training: Training{SeqLen: 8192 * cp, GlobalBatch: 8, Precision: BF16, Framework: fw},
			Layout:   Layout{TP: 1, PP: 1, DP: 8 / cp, CP: cp, CPAllToAll: a2a, EP: 1, ETP: 1, MicroBatch: 1, Recompute: rc}})
		return New().layerCompute(req, &r, tokens, 8192, float64(8192*cp), false)
	}
	const want = 2 * 4 * tokens * (4096 + 2*1024 + 4096) // bytes a pass
	got := layer("megatron-core", 2, true, RecomputeNone)
	if b := got.cpReorder * r.hbm; math.Abs(b-want) > 1e-6*want {
		t.Errorf("megatron-core, CP 2 by all-to-all: %.0f MB of copies a pass, want %.0f", b/1e6, float64(want)/1e6)
	}
	for _, c := range []struct {
		name string
		lt   layerTimes
	}{
		{"megatron-core, CP 2 ring", layer("megatron-core", 2, false, RecomputeNone)},
		{"megatron-core, CP 1", layer("megatron-core", 1, false, RecomputeNone)},
		{"torchtitan, CP 2 by all-to-all", layer("torchtitan", 2, true, RecomputeNone)},
	} {
		if c.lt.cpReorder != 0 {
			t.Errorf("%s: %.1f µs of all-to-all reorder copies, want none", c.name, c.lt.cpReorder*1e6)
		}
	}
	sel := layer("megatron-core", 2, true, RecomputeSelective)
	if d := sel.modsFwd - sel.attnFwd; sel.cpReorder <= 0 || math.Abs(d-sel.cpReorder) > 1e-12 {
		t.Errorf("selective recomputation: %.1f µs recomputed beside the attention core, want the all-to-alls' copies' %.1f µs", d*1e6, sel.cpReorder*1e6)
	}
}
