package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/hardware"
)

// cuDNN's fused attention on an H100 with 64-wide heads, against FlashAttention-2
// with 128-wide ones (Shah et al. 2024, Figs. 5–6): at 8k keys 379 against 333
// TFLOP/s forward (causal) and 432 against 318 backward; 128-wide heads 529 and
// 518; 96-wide halfway; wider than 128 as 128; other frameworks and GPUs 1.
func TestHopperFusedAttentionHeadDim(t *testing.T) {
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: %.4f, want %.4f", what, got, want)
		}
	}
	f, b := attentionSpeed(hardware.Hopper, "nemo", false, 8192, 64)
	near("head 64 forward", f, 379.0/333)
	near("head 64 backward", b, 432.0/318)
	f, b = attentionSpeed(hardware.Hopper, "megatron-core", false, 8192, 128)
	near("head 128 forward", f, 529.0/333)
	near("head 128 backward", b, 518.0/318)
	f, _ = attentionSpeed(hardware.Hopper, "nemo", false, 8192, 96)
	near("head 96 forward", f, (379.0+529)/2/333)
	f, _ = attentionSpeed(hardware.Hopper, "nemo", false, 8192, 192)
	near("head 192 forward", f, 529.0/333)
	f, _ = attentionSpeed(hardware.Hopper, "nemo", false, 8192, 32)
	near("head 32 forward (held at 64's)", f, 379.0/333)
	f, b = attentionSpeed(hardware.Hopper, "torchtitan", false, 8192, 64)
	near("FlashAttention-2's framework", f*b, 1)
	f, b = attentionSpeed(hardware.Ampere, "nemo", false, 8192, 64)
	near("Ampere", f*b, 1)
}
