package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// PyTorch DDP (framework.Profile.TorchDDP: lightning at ZeRO 0 and 1, composer at
// ZeRO 0) reduces in buckets of int(25 × 1024 × 1024) B unless the request states
// them, and starts its first reduction once its first bucket, 1 MiB of the last
// layers' gradients, is complete: the backward that produces that 1 MiB hides
// nothing. A network-bound all-reduce (llama3-8b over 8 DGX H100, one micro-batch of 512 tokens)
// is hidden for the backward less the share of it that produces 1 MiB of the
// gradients; Megatron-Core's buckets (the first a whole bucket, not modelled) hide
// it for the whole backward.
func TestTorchDDPBuckets(t *testing.T) {
	at := func(framework string, zero int, bucket float64, seq int) step.Result {
		t.Helper()
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 8),
			Training: step.Training{SeqLen: seq, GlobalBatch: 64, Framework: framework, DPBucketParams: bucket, Optimizer: step.AdamMixed()},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 64, MicroBatch: 1, ZeRO: zero},
		}
		return mustEstimate(t, req)
	}
	same := func(what string, a, b step.Result) { t.Helper(); sameStepAndExposed(t, what, a, b) }
	// 25 MiB of 2-byte gradients, the last bucket exposed under a 4096-token
	// backward that hides the rest.
	same("lightning: 25 MiB", at("lightning", 0, 0, 4096), at("lightning", 0, 25*1024*1024/2, 4096))
	same("composer at ZeRO 0: 25 MiB", at("composer", 0, 0, 4096), at("composer", 0, 25*1024*1024/2, 4096))
	// FSDP is not DDP: the fallback bucket, 25·10⁶ B.
	same("fsdp: 25·10⁶ B", at("fsdp", 1, 0, 4096), at("fsdp", 1, 12.5e6, 4096))

	params := arch(t, "llama3-8b").Params().Total
	for _, tc := range []struct {
		framework string
		zero      int
		first     float64 // bytes of the first bucket, 0 for none
	}{
		{"lightning", 0, 1 << 20},
		{"lightning", 1, 1 << 20},
		{"composer", 0, 1 << 20},
		{"megatron-core", 0, 0},
	} {
		r := at(tc.framework, tc.zero, 0, 512)
		b := r.Breakdown
		if !(b.Exposed[step.CommDP] > 0.1*b.Backward) {
			t.Fatalf("%s ZeRO %d: %.4f s exposed of a %.4f s backward, want the reduction network-bound", tc.framework, tc.zero, b.Exposed[step.CommDP], b.Backward)
		}
		want := b.Backward * (1 - tc.first/(2*params))
		if math.Abs(b.Hidden[step.CommDP]-want) > 1e-3*(b.Backward-want)+1e-12 {
			t.Errorf("%s ZeRO %d: %.9f s hidden, want %.9f s (the backward %.9f s less its share producing %.0f B of %.3g B of gradients)",
				tc.framework, tc.zero, b.Hidden[step.CommDP], want, b.Backward, tc.first, 2*params)
		}
	}
}
