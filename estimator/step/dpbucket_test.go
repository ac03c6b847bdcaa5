package step_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// The last gradient bucket of a step is reduced after the backward pass. Its size
// is the stated one (training.dp_bucket_params), or the framework's: Megatron-Core's
// DistributedDataParallel takes max(40e6, 1e6 × DP) parameters
// (megatron/core/distributed/distributed_data_parallel.py), PyTorch DDP 25 MB.
func TestDPBucketSize(t *testing.T) {
	at := func(framework string, dp int, bucket float64) step.Result {
		t.Helper()
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", dp/8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: dp, Framework: framework, DPBucketParams: bucket, Optimizer: step.AdamMixed()},
			Layout:   step.Layout{TP: 1, PP: 1, DP: dp, MicroBatch: 1, ZeRO: 1},
		}
		return mustEstimate(t, req)
	}
	same := func(what string, a, b step.Result) { t.Helper(); sameStepAndExposed(t, what, a, b) }
	// Megatron-Core's default: 40 M parameters up to DP 40, then 1 M per replica.
	same("megatron-core at DP 32: 40 M parameters", at("megatron-core", 32, 0), at("megatron-core", 32, 40e6))
	same("megatron-core at DP 64: 64 M parameters", at("megatron-core", 64, 0), at("megatron-core", 64, 64e6))
	same("nemo at DP 64: Megatron-Core's", at("nemo", 64, 0), at("nemo", 64, 64e6))
	// PyTorch DDP's 25 MB of 2-byte gradients.
	same("fsdp: 25 MB", at("fsdp", 32, 0), at("fsdp", 32, 12.5e6))

	// A larger last bucket leaves more of the reduce-scatter after the backward:
	// what moves from hidden to exposed is the reduce-scatter's share of the
	// gradient the bucket holds (8.03 G parameters' gradient, one bucket of 768 M).
	small, big, whole := at("megatron-core", 32, 40e6), at("megatron-core", 32, 768e6), at("megatron-core", 32, 1e12)
	if whole.Breakdown.Hidden[step.CommDP] != 0 {
		t.Errorf("one bucket holding every gradient: %.4f s hidden, want none", whole.Breakdown.Hidden[step.CommDP])
	}
	moved := big.Breakdown.Exposed[step.CommDP] - small.Breakdown.Exposed[step.CommDP]
	hiddenLost := small.Breakdown.Hidden[step.CommDP] - big.Breakdown.Hidden[step.CommDP]
	if !(moved > 0) || math.Abs(moved-hiddenLost) > 1e-9 {
		t.Errorf("768 M bucket: %.4f s more exposed, %.4f s less hidden; want the same, above 0", moved, hiddenLost)
	}
	// Hidden with 40 M: the reduce-scatter less its last 40 M parameters' share;
	// moved to 768 M: 728 M parameters' share of it.
	// (The stage's parameters as the estimator counts them, within 0.1 %.)
	params := arch(t, "llama3-8b").Params().Total
	if want := small.Breakdown.Hidden[step.CommDP] * (768e6 - 40e6) / (params - 40e6); math.Abs(moved-want) > 1e-3*want {
		t.Errorf("768 M bucket: %.6f s more exposed, want %.6f s (the reduce-scatter's share of 728 M of %.3g parameters)", moved, want, params)
	}
	t.Logf("DP exposed %.1f / %.1f / %.1f ms with buckets of 40 M / 768 M / all parameters",
		1e3*small.Breakdown.Exposed[step.CommDP], 1e3*big.Breakdown.Exposed[step.CommDP], 1e3*whole.Breakdown.Exposed[step.CommDP])

	req := step.Request{
		Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 8, DPBucketParams: -1},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1},
	}
	_, err := step.New().Estimate(req)
	var inv *invalid.Error
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "training.dp_bucket_params") {
		t.Errorf("negative bucket: got %v, want an error naming training.dp_bucket_params", err)
	}
}

// Megatron-Core keeps the dense and the expert gradients in separate buffers, each
// bucketed on its own: a bucket as large as the larger of the two holds each
// buffer whole, so both reduce after the backward pass and nothing is hidden; a
// tenth smaller and part of the larger buffer reduces under it. (The buffers as
// counted here from the catalog model, within 1 % of the estimator's count.)
func TestDPBucketsPerBuffer(t *testing.T) {
	a := arch(t, "mixtral-8x7b")
	p := a.Params()
	const ep = 8
	expert := float64(p.MoELayers) * a.ExpertParamsPerLayer() / ep // each rank's experts (expert TP 1)
	dense := p.Total - float64(p.MoELayers)*a.ExpertParamsPerLayer()
	e := step.New()
	hidden := func(bucket float64) float64 {
		t.Helper()
		req := step.Request{
			Model: a, Cluster: cluster(t, "dgx-h100", 4),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 32, DPBucketParams: bucket, Optimizer: step.AdamMixed()},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 32, EP: ep, MicroBatch: 1, ZeRO: 1},
		}
		r, err := e.Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Breakdown.Hidden[step.CommDP]
	}
	larger := math.Max(expert, dense)
	t.Logf("per rank: %.2f G dense and %.2f G expert parameters", dense/1e9, expert/1e9)
	if h := hidden(1.01 * larger); h != 0 {
		t.Errorf("a bucket of %.3g parameters holds each buffer whole: %.6f s hidden, want none", 1.01*larger, h)
	}
	if h := hidden(0.9 * larger); !(h > 0) {
		t.Errorf("a bucket of %.3g parameters, a tenth less than the larger buffer: nothing hidden", 0.9*larger)
	}
}
