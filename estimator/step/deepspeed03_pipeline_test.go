package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/step"
)

// DeepSpeed v0.3.14, which the deepspeed-2021 profile stands for: its pipeline
// engine reduces the gradients with buffered_allreduce_fallback whatever the ZeRO
// stage (an all-reduce of the whole 16-bit gradients, each bucket flattened,
// averaged in place and copied back: 12 B an element besides the collective), and
// the stage-1 optimizer checks every gradient it holds for overflow and takes its
// norm through an fp32 copy (20 B an element) before its update. Without a
// pipeline the same ZeRO-1 run reduce-scatters, and the checks stay.
func TestDeepSpeed03PipelineZeRO1(t *testing.T) {
	req := step.Request{
		Model: arch(t, "gpt3-175b"), Cluster: cluster(t, "dgx-a100", 16),
		Training: step.Training{SeqLen: 2048, GlobalBatch: 256, Framework: "deepspeed-2021"},
		Layout:   step.Layout{TP: 8, PP: 4, DP: 4, MicroBatch: 1, ZeRO: 1, Recompute: step.RecomputeFull},
	}
	e := step.New()
	res, err := e.Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	k := step.DefaultConstants()
	hbm := 2039e9 * k.HBMEfficiency // A100 80 GB
	o := step.AdamMixed()
	held := res.Memory.Weights * 1e9 / o.WeightBytes // the stage's parameters on this rank
	owned := res.Memory.Optimizer * 1e9 / o.StateBytes

	var ar, rs, ag *step.CommCall
	for i, c := range res.Comms {
		if c.Kind != step.CommDP {
			continue
		}
		switch c.Op {
		case collective.AllReduce.String():
			ar = &res.Comms[i]
		case collective.ReduceScatter.String():
			rs = &res.Comms[i]
		case collective.AllGather.String():
			ag = &res.Comms[i]
		}
	}
	if ar == nil || rs != nil || ag == nil {
		t.Fatalf("pipelined ZeRO-1 under deepspeed-2021: want the gradients all-reduced and the parameters all-gathered, got %+v", res.Comms)
	}
	if got, want := ar.Bytes, held*o.GradBytes; math.Abs(got/want-1) > 1e-6 {
		t.Errorf("gradient all-reduce of %.4g B, want the whole gradients, %.4g B", got, want)
	}
	passes := held * framework.PipelineFallbackPassBytes / hbm
	if floor := ar.TimeUs*1e-6 + passes; res.Breakdown.Exposed[step.CommDP] < floor {
		t.Errorf("exposed data-parallel time %.4f s, less than the all-reduce and the fallback's passes (%.4f s)",
			res.Breakdown.Exposed[step.CommDP], floor)
	}
	want := owned*k.OptimizerBytes/hbm + held*framework.FP16GradCheckBytesDeepSpeed03/hbm
	t.Logf("optimizer %.2f ms (update of %.3g owned parameters and the checks of %.3g held), want %.2f ms",
		1e3*res.Breakdown.Optimizer, owned, held, 1e3*want)
	if math.Abs(res.Breakdown.Optimizer/want-1) > 0.01 {
		t.Errorf("optimizer step %.4f s, want %.4f s", res.Breakdown.Optimizer, want)
	}

	// No pipeline: the engine's allreduce_gradients reduce-scatters under ZeRO-1.
	flat := req
	flat.Layout.PP, flat.Layout.DP = 1, 16
	res, err = e.Estimate(flat)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Comms {
		if c.Kind == step.CommDP && c.Op == collective.AllReduce.String() {
			t.Errorf("ZeRO-1 without a pipeline all-reduces its gradients: %+v", c)
		}
	}
}
