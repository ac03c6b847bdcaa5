package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// torchtitan of late 2025 runs its MoE layer's own operators eagerly around the
// compiled submodules (framework.Profile.EagerMoEGlue): per routed copy of a token
// and hidden element 36 B more than the fused permutation every MoE layer is
// priced with, and 2 B per token (eagerMoEGlueBytes), forward and again backward.
// On Hopper with no recomputation nothing else tells torchtitan-2025-11 from
// torchtitan (its grouped-GEMM rate and attention recomputation are Blackwell's).
func TestEagerMoEGlue(t *testing.T) {
	a := arch(t, "mixtral-8x7b")
	req := func(fw string) step.Request {
		return step.Request{Model: a, Cluster: cluster(t, "dgx-h100", 1),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 8, Precision: step.BF16, Framework: fw},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, EP: 8, ZeRO: 3, MicroBatch: 1, Recompute: step.RecomputeNone}}
	}
	now := mustEstimate(t, req("torchtitan"))
	late := mustEstimate(t, req("torchtitan-2025-11"))
	hbm := cluster(t, "dgx-h100", 1).GPU().MemoryBandwidthGBps * 1e9 * step.DefaultConstants().HBMEfficiency
	k := float64(a.MoE.TopK)
	want := float64(a.Params().MoELayers) * 4096 * float64(a.Hidden) * (36*k + 2) / hbm
	df := late.Breakdown.Forward - now.Breakdown.Forward
	db := late.Breakdown.Backward - now.Breakdown.Backward
	if math.Abs(df-want) > 1e-6*want || math.Abs(db-want) > 1e-6*want {
		t.Errorf("Mixtral on 8 H100, EP 8: the eager MoE operators add %.2f / %.2f ms forward / backward, want %.2f ms each", 1e3*df, 1e3*db, 1e3*want)
	}
}
