package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// DeepSeek-V3 (DeepSeek-AI 2024, arXiv:2412.19437): 2048 H800, PP 16 with DualPipe,
// EP 64 over 8 nodes, ZeRO-1 data parallelism over the rest, no TP, FP8, sequences of
// 4096 tokens, a global batch of 15360 (§3.1–3.3, §4.2). It reports 2.664 M H800
// GPU-hours for 14.8 T pre-training tokens: 180 K GPU-hours per trillion tokens. The
// 61 layers go over 16 stages 3, 4, …, 4, 3, 3 (the first and last stages also hold
// the embedding and the output layer with the multi-token-prediction module, which
// the catalog model leaves out).
func TestDeepSeekV3Cost(t *testing.T) {
	split := []int{3}
	for range 13 {
		split = append(split, 4)
	}
	split = append(split, 3, 3)
	req := step.Request{Model: arch(t, "deepseek-v3"), Cluster: cluster(t, "hgx-h800", 256),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 15360, Precision: step.FP8},
		Layout: step.Layout{TP: 1, PP: 16, DP: 128, EP: 64, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone,
			Schedule: step.DualPipe, LayerSplit: split}}
	r, err := step.New().Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	tokens := 15360.0 * 4096
	gpuHoursPerT := 2048 * r.StepTime / 3600 * 1e12 / tokens
	const published = 2.664e6 / 14.8 // GPU-hours per trillion tokens
	rel := gpuHoursPerT/published - 1
	t.Logf("step %.2f s, MFU %.1f%%: %.0f K H800 GPU-hours per trillion tokens, published %.0f K (%+.1f%%)",
		r.StepTime, 100*r.Throughput.MFU, gpuHoursPerT/1e3, published/1e3, 100*rel)
	if math.Abs(rel) > 0.15 {
		t.Errorf("DeepSeek-V3 cost off by %+.1f%%", 100*rel)
	}
}
