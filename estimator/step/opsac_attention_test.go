package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// torchtitan from PR #1196 (2025-05-14) runs cuDNN's attention first on Blackwell
// and, until PR #2095 (2025-12-01), leaves it out of per-op SAC's save list: under
// op-level checkpointing the backward runs the attention forward again (profile
// torchtitan-0.1). What it adds is the attention core that selective recomputation
// (Megatron's core_attn) runs again, computed apart; nothing on Hopper, where the
// flash kernel it saves runs, and nothing under the current torchtitan profile.
func TestTorchtitanOpSACRecomputesBlackwellAttention(t *testing.T) {
	req := func(fw, system string, rc step.Recompute) step.Request {
		return step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, system, 1),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 8, Precision: step.BF16, Framework: fw},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, ZeRO: 3, MicroBatch: 1, Recompute: rc}}
	}
	for _, system := range []string{"hgx-b200", "dgx-h100"} {
		now := mustEstimate(t, req("torchtitan", system, step.RecomputeOps))
		mid := mustEstimate(t, req("torchtitan-0.1", system, step.RecomputeOps))
		// The attention core selective recomputation runs again, priced apart: torchtitan
		// has no such mode (framework.Profile.Runs.Recompute), so it is priced under
		// Megatron-Core's profile with the FlashAttention-2 kernel, whose attention runs
		// at torchtitan's speed (attentionSpeed: 1 off Hopper's cuDNN attention).
		flash := func(rc step.Recompute) step.Request {
			r := req("megatron-core", system, rc)
			r.Training.FlashAttention2 = true
			return r
		}
		none := mustEstimate(t, flash(step.RecomputeNone))
		attn := mustEstimate(t, flash(step.RecomputeSelective))
		core := attn.Breakdown.Recompute - none.Breakdown.Recompute
		extra := mid.Breakdown.Recompute - now.Breakdown.Recompute
		if !(core > 0) {
			t.Fatalf("%s: selective recomputation runs %.4f s of attention again, want > 0", system, core)
		}
		if mid.Breakdown.Forward != now.Breakdown.Forward || mid.Breakdown.Backward != now.Breakdown.Backward {
			t.Errorf("%s: forward/backward %.4f/%.4f s under torchtitan-0.1, %.4f/%.4f s under torchtitan; want the same",
				system, mid.Breakdown.Forward, mid.Breakdown.Backward, now.Breakdown.Forward, now.Breakdown.Backward)
		}
		switch system {
		case "hgx-b200":
			if math.Abs(extra-core) > 1e-9*core {
				t.Errorf("B200: torchtitan-0.1 recomputes %.4f s more than torchtitan, want the attention forward %.4f s", extra, core)
			}
			if !(mid.StepTime > now.StepTime) {
				t.Errorf("B200: step %.4f s under torchtitan-0.1, %.4f s under torchtitan; want slower", mid.StepTime, now.StepTime)
			}
			t.Logf("Llama 3 8B on 8 B200, batch 1 × 8192, per-op SAC: attention forward recomputed %.1f ms, step %.3f → %.3f s",
				1e3*extra, now.StepTime, mid.StepTime)
		default:
			if extra != 0 || mid.StepTime != now.StepTime {
				t.Errorf("H100: torchtitan-0.1 recomputes %.4f s more, step %.4f vs %.4f s; want the same (flash attention, saved)",
					extra, mid.StepTime, now.StepTime)
			}
		}
	}
}
