package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/model"
)

// The activation terms the MoE and MLA mechanisms add or drop, term by term on
// DeepSeek-V3's shapes (h 7168, 128 heads of 192/128, latents 1536 + 512 + 64,
// 8 routed experts of 2048 and a shared one, SwiGLU), one 4096-token sequence, no
// TP: each against the bytes the mechanism's description gives.
func TestActivationTermsMoE(t *testing.T) {
	a, err := model.Lookup("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	const s, b = 4096.0, 1.0
	h := float64(a.Hidden)
	sbh := s * b * h
	act := func(mods uint8, fp8 bool) float64 {
		return activationBytes(&a, true, s, s, b, 1, false, RecomputeSelective, false, mods, fp8, 1, framework.MLADownProjDuplicated)
	}
	base := act(rmCoreAttn, false)
	// The dispatched tokens (8 copies of each in 16 bits) are part of it.
	if got := base - act(rmCoreAttn|rmMoE, false); got < 16*sbh {
		t.Errorf("the MoE module holds %.0f MB, less than its 8 dispatched copies (%.0f MB)", got/1e6, 16*sbh/1e6)
	}
	for _, c := range []struct {
		name string
		mods uint8
		want float64 // bytes dropped
	}{
		{"layernorm: both norm outputs", rmLayerNorm, 4 * sbh},
		// mla_up_proj: the per-head tensors go, and of the latents only the
		// checkpoint's inputs stay (1536 + 512 before their norms, and the 64-wide
		// rotary key) where the up-projections kept the norms' inputs and outputs.
		{"mla_up_proj: Q (128×192), K (128×192), V (128×128), the latents' second copies less the rotary key", rmMLAUp,
			2*float64(128*192+128*192+128*128)*s + 2*float64(2*(1536+512)-(1536+512+64))*s},
		{"moe_act: the 8 experts' SwiGLU output", rmMoEAct, 2 * 8 * 2048 * s},
		{"shared_experts: the shared expert's gate, up and SwiGLU output", rmShared, 6 * 2048 * s},
		{"no dropout: two masks", actNoDropout, 2 * sbh},
	} {
		if got := base - act(rmCoreAttn|c.mods, false); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("%s: %.1f MB dropped, want %.1f MB", c.name, got/1e6, c.want/1e6)
		}
	}
	// The busiest rank of a 1.5× imbalanced router holds 1.5× the routed experts'
	// tensors (the 8 dispatched copies and their GEMMs' SwiGLU tensors), not the
	// shared expert's.
	routed := 2*8*sbh + 6*8*2048*s
	if got := activationBytes(&a, true, s, s, b, 1, false, RecomputeSelective, false, rmCoreAttn, false, 1.5, framework.MLADownProjDuplicated) - base; math.Abs(got-0.5*routed) > 1e-9*routed {
		t.Errorf("imbalance 1.5 adds %.1f MB, want %.1f MB", got/1e6, 0.5*routed/1e6)
	}
	// fp8 activations: the norm outputs (the latents' too), and dispatched tokens at 1 B, the
	// SwiGLU inputs and outputs at 1 B, the attention output at 12 bits.
	fp8 := act(rmCoreAttn, true)
	want := 2*sbh + float64(1536+512)*s + 8*sbh + 0.5*float64(128*128)*s + (3*2-3)*9*2048*s
	if got := base - fp8; math.Abs(got-want) > 1e-9*want {
		t.Errorf("fp8 activations save %.1f MB, want %.1f MB", got/1e6, want/1e6)
	}
	t.Logf("DeepSeek-V3 MoE layer, 4096 tokens: %.0f MB in 16 bits; %.0f MB as it ran (fp8, layernorm + mla_up_proj + moe_act, no dropout)",
		base/1e6, activationBytes(&a, true, s, s, b, 1, false, RecomputeSelective, false, rmLayerNorm|rmMLAUp|rmMoEAct|actNoDropout, true, 1, framework.MLADownProjDuplicated)/1e6)
}

// Node-limited routing: 8 experts spread over the 4 nodes a token may reach land on
// 4·(1 − (3/4)^8) = 3.60 of them on average; with no limit, over 8 nodes, on
// 8·(1 − (7/8)^8) = 5.25; within one node, on 1.
func TestMoENodeReach(t *testing.T) {
	for _, c := range []struct {
		k, nodes, groups, topk int
		want                   float64
	}{
		{8, 8, 8, 4, 4 * (1 - math.Pow(0.75, 8))},
		{8, 8, 0, 0, 8 * (1 - math.Pow(0.875, 8))},
		{8, 1, 8, 4, 1},
		{2, 4, 0, 0, 4 * (1 - math.Pow(0.75, 2))},
	} {
		if got := moeNodeReach(c.k, c.nodes, c.groups, c.topk); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("k %d over %d nodes (groups %d, top %d): %.4f nodes, want %.4f", c.k, c.nodes, c.groups, c.topk, got, c.want)
		}
	}
}
