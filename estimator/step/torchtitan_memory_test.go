package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// torchtitan's FSDP2 reduces in fp32 (framework.Profile.GradReduceBytes): under a
// pipeline, where its gradients stay whole until the last micro-batch, they are held
// at 4 B per parameter, twice Megatron-Core's 16-bit gradients under
// --grad-reduce-in-bf16 (the request's optimizer: 2 B gradients). And torchao casts the fp8 weights inside each layer's forward
// (FP8WeightsCastInForward): under full recomputation only the layer recomputed and
// the next hold their copies, where Transformer Engine keeps every layer's for the
// step; without recomputation both hold them all.
func TestTorchtitanGradientsAndFP8Copies(t *testing.T) {
	req := func(fw string, rc step.Recompute) step.Request {
		var o step.Optimizer // torchtitan: its profile's fp32 gradients
		if fw == "megatron-core" {
			o = step.AdamMixed()
		}
		return step.Request{Model: arch(t, "llama3-70b"), Cluster: cluster(t, "dgx-h100", 4),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 32, Precision: step.FP8, FP8Recipe: step.FP8Current, Framework: fw, Optimizer: o},
			Layout: step.Layout{TP: 4, PP: 4, DP: 2, CP: 1, ZeRO: 1, MicroBatch: 1, SP: true, Schedule: step.OneFOneB,
				Recompute: rc}}
	}
	for _, rc := range []step.Recompute{step.RecomputeFull, step.RecomputeNone} {
		tt := mustEstimate(t, req("torchtitan", rc)).Memory
		mc := mustEstimate(t, req("megatron-core", rc)).Memory
		if r := tt.Gradients / mc.Gradients; math.Abs(r-2) > 1e-9 {
			t.Errorf("%s: gradients %.2f GB under torchtitan, %.2f GB under megatron-core: ×%.3f, want ×2 (fp32 against bf16)", rc, tt.Gradients, mc.Gradients, r)
		}
		if tt.Weights != mc.Weights {
			t.Errorf("%s: weights %.2f GB under torchtitan, %.2f GB under megatron-core; want the same", rc, tt.Weights, mc.Weights)
		}
		layers := 80.0 / 4 // per stage
		want := mc.FP8Weights
		if rc == step.RecomputeFull {
			want *= 2 / layers
		}
		if math.Abs(tt.FP8Weights-want) > 1e-9*want {
			t.Errorf("%s: fp8 weight copies %.3f GB under torchtitan, want %.3f GB (megatron-core %.3f GB)", rc, tt.FP8Weights, want, mc.FP8Weights)
		}
	}
}
