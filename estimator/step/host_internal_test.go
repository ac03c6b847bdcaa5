package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/model"
)

// The host's count of a DeepSeek-V3 MoE layer follows the framework version:
// Megatron-Core's router for group-limited routing launches 72 kernels, 31 with
// --moe-router-fusion (NVIDIA's DeepSeek-V3 GB200 account, §2.1.4), which NeMo
// 25.04 (Megatron-Core 0.12) does not have and Megatron-Bridge's recipes set; and
// NeMo 25.04's DeepSeek-V3 applies MLA's rotary embedding unfused
// (apply_rope_fusion False): 13 kernels per call of rope_utils'
// _apply_rotary_pos_emb_bshd for the queries and the shared key, and the two cats
// after them — 28 operators against the fused kernels' 4. On Grace each operator
// costs 7 µs × 2.75. A model without group-limited routing keeps the router's 10
// operators.
func TestLayerHostByFramework(t *testing.T) {
	ds, cl := catalogPair(t, "deepseek-v3", "gb200-nvl72", 1)
	e := New()
	host := func(a model.Arch, fw string, moe bool) layerHostCosts {
		return e.layerHost(Request{Model: a, Cluster: cl, Training: Training{Framework: fw}}, moe)
	}
	op := 7e-6 * 37.08 / 13.48
	old, now := host(ds, "nemo-25.04", true), host(ds, "nemo", true)
	if old.routerOps != 72 || now.routerOps != 31 {
		t.Errorf("router operators: nemo-25.04 %v, nemo %v; want 72 and 31", old.routerOps, now.routerOps)
	}
	if d := old.layer - now.layer; math.Abs(d-24*op) > 1e-12 {
		t.Errorf("NeMo 25.04's layer takes %.1f µs more on the host, want 24 unfused rotary operators of %.2f µs (%.1f)", 1e6*d, 1e6*op, 24e6*op)
	}
	mixtral, err := model.Lookup("mixtral-8x7b")
	if err != nil {
		t.Fatal(err)
	}
	if r := host(mixtral, "nemo-25.04", true).routerOps; r != 10 {
		t.Errorf("top-2 softmax router: %v operators, want 10", r)
	}
	if c := host(ds, "torchtitan", true); c.te || math.Abs(c.op-op) > 1e-12 {
		t.Errorf("torchtitan: Transformer Engine layers %v, operator %.2f µs; want none and %.2f µs", c.te, 1e6*c.op, 1e6*op)
	}
}
