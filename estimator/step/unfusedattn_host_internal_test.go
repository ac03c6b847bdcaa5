package step

import (
	"math"
	"testing"
)

// Transformer Engine's unfused attention (v2.2 UnfusedDotProductAttention, the
// backend NeMo 25.04 runs for MLA's 192-wide heads on Blackwell) issues 15
// operators forward — get_full_mask's 11, baddbmm, the masked softmax, bmm and the
// output's contiguous copy — and 6 gradients backward, plus the 15 again where the
// attention core is recomputed. DeepSeek-V3 under nemo-25.04 on GB200 (TP 2,
// core_attn recomputed): 15 and 21 operators of Grace's 19.25 µs; without the
// recomputation 6 backward; on H100 (cuDNN attention, fused), with CUDA graphs, or
// under a framework without Transformer Engine layers, none.
func TestUnfusedAttentionHost(t *testing.T) {
	e := New()
	op := 7e-6 * graceHostRatio
	gb := dsv3MoERequest(t, "nemo-25.04", "gb200-nvl72", 2)
	if !gb.Training.UnfusedAttention {
		t.Fatal("nemo-25.04 on GB200: DeepSeek-V3's attention is not unfused")
	}
	c := e.layerHost(gb, true)
	if math.Abs(c.attnFwd-15*op) > 1e-12 || math.Abs(c.attnBwd-21*op) > 1e-12 {
		t.Errorf("core_attn recomputed: %.1f / %.1f µs, want 15 and 21 operators of %.2f µs", 1e6*c.attnFwd, 1e6*c.attnBwd, 1e6*op)
	}
	norc := dsv3MoERequest(t, "nemo-25.04", "gb200-nvl72", 2)
	norc.Layout.RecomputeModules = []string{"mla_up_proj"}
	if c := e.layerHost(norc, true); math.Abs(c.attnBwd-6*op) > 1e-12 {
		t.Errorf("attention core not recomputed: backward %.1f µs, want 6 operators", 1e6*c.attnBwd)
	}
	h100 := dsv3MoERequest(t, "nemo-25.04", "dgx-h100", 2)
	graphs := dsv3MoERequest(t, "nemo-25.04", "gb200-nvl72", 2)
	graphs.Training.CUDAGraphs = true
	tt := dsv3MoERequest(t, "torchtitan", "gb200-nvl72", 2)
	tt.Training.UnfusedAttention = true
	for name, r := range map[string]Request{"H100 (fused)": h100, "CUDA graphs": graphs, "torchtitan": tt} {
		if c := e.layerHost(r, true); c.attnFwd != 0 || c.attnBwd != 0 {
			t.Errorf("%s: %.1f / %.1f µs, want none", name, 1e6*c.attnFwd, 1e6*c.attnBwd)
		}
	}
	// The layer's forward and backward are never shorter than their host time
	// with them (the MoE block's own host work besides).
	k := DefaultConstants()
	r := catalogRates(t, &k, "GB200", BF16)
	lt := e.layerCompute(gb, &r, 4096, 4096, 4096, true)
	if host := c.layer + c.collFwd + c.attnFwd; lt.fwd < host {
		t.Errorf("forward %.3f ms, shorter than its host time %.3f ms", 1e3*lt.fwd, 1e3*host)
	}
	if host := 2*c.layer + c.collBwd + c.attnBwd; lt.bwd < host {
		t.Errorf("backward %.3f ms, shorter than its host time %.3f ms", 1e3*lt.bwd, 1e3*host)
	}
}

// Megatron-Core's router adds 5 kernels with a capacity factor (topk over the
// tokens, the capacity mask's zeros_like, scatter and cast, the masked
// probabilities; moe_utils.topk_softmax_with_capacity) and one more, the and with
// the routing map, without padding: DeepSeek-V3's group-limited router under
// nemo-25.04 launches 72 dropless, 77 padded to capacity, 78 dropping unpadded.
func TestRouterCapacityKernels(t *testing.T) {
	e := New()
	for _, c := range []struct {
		cf   float64
		pad  bool
		want float64
	}{{0, false, 72}, {1, true, 77}, {1, false, 78}} {
		r := dsv3MoERequest(t, "nemo-25.04", "gb200-nvl72", 2)
		r.Training.MoECapacityFactor, r.Training.MoEPadToCapacity = c.cf, c.pad
		if got := e.layerHost(r, true).routerOps; got != c.want {
			t.Errorf("capacity %.0f, padded %v: %v router kernels, want %v", c.cf, c.pad, got, c.want)
		}
	}
}
