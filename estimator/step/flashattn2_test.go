package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// With Transformer Engine's cuDNN backend turned off (NVTE_FUSED_ATTN=0, as
// dgxc-benchmarking v25.02's Grok-1 recipe runs NeMo 24.12) the attention runs
// flash-attn 2: the step differs from the framework's own by the attention core
// alone, by the ratio of the two kernels' published speeds (Shah et al. 2024,
// Figs. 5–6: at 8k keys 529 / 333 TFLOP/s forward, 518 / 318 backward), and
// equals torchtitan's, whose SDPA runs FlashAttention-2 too. On Ampere, where
// Transformer Engine runs FlashAttention-2 anyway, it changes nothing.
func TestFlashAttention2(t *testing.T) {
	const s = 8192
	run := func(clusterName, fw string, fa2 bool) step.Result {
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, clusterName, 1),
			// The optimizer given: the frameworks hold their gradients in fp32 (nemo,
			// torchtitan) or not when none is, which moves more than the attention.
			Training: step.Training{SeqLen: s, GlobalBatch: 8, Framework: fw, FlashAttention2: fa2, Optimizer: step.AdamMixed()},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, ZeRO: 0, MicroBatch: 1, Recompute: step.RecomputeNone}, // DDP: FSDP2 (torchtitan, ZeRO 2–3) copies its weights and gradients on the compute stream
		}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	fused, fa2 := run("dgx-h100", "nemo", false), run("dgx-h100", "nemo", true)
	m := arch(t, "llama3-8b")
	flops := 0.5 * 2 * s * s * float64(m.QDim()+m.VOutDim()) // causal forward, one layer
	peak := cluster(t, "dgx-h100", 1).GPU().PeakTFLOPS[hardware.BF16] * 1e12
	slow := flops / (peak * step.DefaultConstants().AttentionEfficiency[hardware.Hopper]) * float64(m.Layers)
	wantF, wantB := slow*(1-333.0/529), 2.5*slow*(1-318.0/518)
	if d := fa2.Breakdown.Forward - fused.Breakdown.Forward; math.Abs(d-wantF) > 0.01*wantF {
		t.Errorf("forward: flash-attn 2 − cuDNN = %.4f s, want %.4f s", d, wantF)
	}
	if d := fa2.Breakdown.Backward - fused.Breakdown.Backward; math.Abs(d-wantB) > 0.01*wantB {
		t.Errorf("backward: flash-attn 2 − cuDNN = %.4f s, want %.4f s", d, wantB)
	}
	if tt := run("dgx-h100", "torchtitan", false); tt.Breakdown.Forward != fa2.Breakdown.Forward || tt.Breakdown.Backward != fa2.Breakdown.Backward {
		t.Errorf("flash-attn 2 under nemo %.4f+%.4f s, torchtitan's SDPA %.4f+%.4f s; want the same kernel", fa2.Breakdown.Forward, fa2.Breakdown.Backward, tt.Breakdown.Forward, tt.Breakdown.Backward)
	}
	if a, b := run("dgx-a100", "nemo", false), run("dgx-a100", "nemo", true); a.StepTime != b.StepTime {
		t.Errorf("A100: %.4f s with the framework's kernel, %.4f s with flash-attn 2; want the same", a.StepTime, b.StepTime)
	}
	found := false
	for _, n := range fa2.Assumptions {
		found = found || strings.Contains(n, "flash-attn 2")
	}
	if !found {
		t.Errorf("the answer's assumptions do not name flash-attn 2: %q", fa2.Assumptions)
	}
}

// A fused kernel named for an attention that runs unfused is refused by field.
func TestFlashAttention2Unfused(t *testing.T) {
	for _, tr := range []step.Training{
		{SeqLen: 2048, GlobalBatch: 8, FlashAttention2: true, UnfusedAttention: true},
		{SeqLen: 2048, GlobalBatch: 8, FlashAttention2: true, Framework: "megatron-lm-2021"},
	} {
		if err := tr.Validate(); err == nil || !invalid.Is(err) || !strings.Contains(err.Error(), "training.flash_attention_2") {
			t.Errorf("%+v: %v, want an error naming training.flash_attention_2", tr, err)
		}
	}
}
