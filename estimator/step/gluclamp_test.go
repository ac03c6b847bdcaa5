package step_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
)

// gptOSS20B is openai/gpt-oss-20b's shape (config.json: 24 layers, hidden 2880,
// 64 query heads of 64, 8 KV heads, 32 experts of 2880, top 4, SwiGLU clamped at
// 7, 128-token windows on every other layer) with the MLPerf v6.0 benchmark's
// vocabulary of 128256.
func gptOSS20B(clamp bool) model.Arch {
	return model.Arch{Name: "gpt-oss-20b", Layers: 24, Hidden: 2880, Heads: 64, KVHeads: 8, HeadSize: 64,
		FFN: 2880, GatedMLP: true, GLUClamp: clamp, Vocab: 128256, SlidingWindow: 128, GlobalEvery: 2,
		MoE: &model.MoE{Experts: 32, TopK: 4, ExpertFFN: 2880, Frequency: 1}}
}

// Megatron-Core clamps a gated MLP's inputs with PyTorch's operators ahead of its
// fused activation (weighted_bias_quick_geglu_impl: chunk, clamp, clamp, cat).
// Per element of the experts' first GEMM output (gate and up, 16 bits) the
// forward moves 8 bytes more (each half read and written by its clamp, the whole
// read and written by the concatenation) and the backward 15 (clamp_backward's
// comparisons, logical and and where on the two halves, 8 and 14 B, and chunk's
// backward concatenating the gradients, 4 B). gpt-oss-20b at TP 2 × EP 4 on 16
// nodes, 8192 tokens a sequence: each rank routes 4096 tokens to 4 experts, 16384
// rows of 2 × 2880 elements, in each of 24 layers, at the catalog H100's HBM
// bandwidth times the elementwise efficiency.
func TestGLUClampUnfused(t *testing.T) {
	const layers, seq, tp, topK, ef = 24, 8192, 2, 4, 2880
	req := func(clamp bool, fw string) step.Request {
		zero := 1
		if fw == "torchtitan" {
			zero = 3 // FSDP2
		}
		return step.Request{Model: gptOSS20B(clamp), Cluster: cluster(t, "dgx-h100", 16),
			Training: step.Training{SeqLen: seq, GlobalBatch: 64, Precision: step.BF16, Framework: fw,
				MoECapacityFactor: 1.25, MoEPermuteFusion: true},
			Layout: step.Layout{TP: tp, PP: 1, DP: 64, CP: 1, EP: 4, SP: true, ZeRO: zero, MicroBatch: 1, Recompute: step.RecomputeNone}}
	}
	cl := cluster(t, "dgx-h100", 16)
	hbm := cl.GPU().MemoryBandwidthGBps * 1e9 * step.DefaultConstants().HBMEfficiency
	elems := float64(layers) * seq / tp * topK * 2 * ef
	for _, fw := range []string{"megatron-core", "nemo"} {
		with, without := mustEstimate(t, req(true, fw)), mustEstimate(t, req(false, fw))
		df := with.Breakdown.Forward - without.Breakdown.Forward
		db := with.Breakdown.Backward - without.Breakdown.Backward
		wantF, wantB := elems*8/hbm, elems*15/hbm
		t.Logf("%s: the clamp adds %.2f ms forward (want %.2f), %.2f ms backward (want %.2f) to a %.3f s step", fw, 1e3*df, 1e3*wantF, 1e3*db, 1e3*wantB, with.StepTime)
		if math.Abs(df/wantF-1) > 0.01 || math.Abs(db/wantB-1) > 0.01 {
			t.Errorf("%s: clamp forward %.3f ms, backward %.3f ms; want %.3f and %.3f", fw, 1e3*df, 1e3*db, 1e3*wantF, 1e3*wantB)
		}
	}
	// A framework that does not run the clamp as separate kernels prices nothing:
	// torchtitan's, and nemo with the experts in Transformer Engine's op fuser
	// (nemo-te-ops: the clamp is ScaledClampedQGeGLU's own).
	for _, fw := range []string{"torchtitan", "nemo-te-ops"} {
		if with, without := mustEstimate(t, req(true, fw)), mustEstimate(t, req(false, fw)); with.StepTime != without.StepTime {
			t.Errorf("%s: the clamp changes the step %.4f → %.4f s; its profile does not unfuse it", fw, without.StepTime, with.StepTime)
		}
	}
	// A clamp needs a gated MLP to clamp.
	bad := gptOSS20B(true)
	bad.GatedMLP = false
	var ie *invalid.Error
	if err := bad.Validate(); !errors.As(err, &ie) || ie.Field != "glu_clamp" {
		t.Errorf("glu_clamp without gated_mlp: %v, want an error naming glu_clamp", err)
	}
}
