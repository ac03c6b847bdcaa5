package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Megatron-Core's TEGroupedMLP adds the experts' second bias outside the grouped
// GEMM (experts.py _apply_bias): per expert t + b·p with the router's fp32
// probabilities, then torch.cat and a cast back to 16 bits — 28 B forward and 36 B
// backward per element of the second GEMM's output. gpt-oss-20b at TP 2 × EP 4,
// expert TP 1, on 16 nodes, 8192 tokens a sequence: each rank's 8 local experts receive 4096 × 4
// rows of 2880 in each of 24 layers, at the catalog H100's HBM bandwidth times the
// elementwise efficiency.
func TestExpertBiasUnfused(t *testing.T) {
	const layers, seq, tp, topK, h = 24, 8192, 2, 4, 2880
	req := func(bias bool, fw string) step.Request {
		a := gptOSS20B(true)
		a.MoE.Bias = bias
		zero := 1
		if fw == "torchtitan" {
			zero = 3 // FSDP2
		}
		return step.Request{Model: a, Cluster: cluster(t, "dgx-h100", 16),
			Training: step.Training{SeqLen: seq, GlobalBatch: 64, Precision: step.BF16, Framework: fw,
				MoECapacityFactor: 1.25, MoEPermuteFusion: true},
			Layout: step.Layout{TP: tp, PP: 1, DP: 64, CP: 1, EP: 4, ETP: 1, SP: true, ZeRO: zero, MicroBatch: 1, Recompute: step.RecomputeNone}}
	}
	cl := cluster(t, "dgx-h100", 16)
	hbm := cl.GPU().MemoryBandwidthGBps * 1e9 * step.DefaultConstants().HBMEfficiency
	elems := float64(layers) * seq / tp * topK * h
	for _, fw := range []string{"megatron-core", "nemo"} {
		with, without := mustEstimate(t, req(true, fw)), mustEstimate(t, req(false, fw))
		df := with.Breakdown.Forward - without.Breakdown.Forward
		db := with.Breakdown.Backward - without.Breakdown.Backward
		wantF, wantB := elems*28/hbm, elems*36/hbm
		t.Logf("%s: the experts' bias adds %.2f ms forward (want %.2f), %.2f ms backward (want %.2f) to a %.3f s step", fw, 1e3*df, 1e3*wantF, 1e3*db, 1e3*wantB, with.StepTime)
		if math.Abs(df/wantF-1) > 0.01 || math.Abs(db/wantB-1) > 0.01 {
			t.Errorf("%s: expert bias forward %.3f ms, backward %.3f ms; want %.3f and %.3f", fw, 1e3*df, 1e3*db, 1e3*wantF, 1e3*wantB)
		}
	}
	// Frameworks that do not add it with separate kernels price nothing: NeMo 25.04's
	// Megatron-Core predates expert biases, torchtitan's profile does not say, and
	// under Transformer Engine's op fuser (nemo-te-ops) the bias is GroupedLinear's.
	for _, fw := range []string{"nemo-25.04", "torchtitan", "nemo-te-ops"} {
		if with, without := mustEstimate(t, req(true, fw)), mustEstimate(t, req(false, fw)); with.StepTime != without.StepTime {
			t.Errorf("%s: the experts' bias changes the step %.4f → %.4f s; its profile does not unfuse it", fw, without.StepTime, with.StepTime)
		}
	}
}
