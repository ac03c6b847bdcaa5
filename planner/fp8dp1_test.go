package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// Under a profile that keeps fp8 weights only with a sharded optimizer
// (framework.Runs.FP8ParamsSharded, megatron-core by default), fp8 weights are on
// where the framework stores them, and a layout without data or context
// parallelism still runs: its distributed optimizer shards over one rank (ZeRO 1,
// priced as ZeRO 0 with nothing to shard), or its weights stay in 16 bits where
// ZeRO 0 is asked for. Llama 3 70B in fp8 on 64 H100 with tp 8 × pp 8 (dp 1) had
// no plan ("the constraints leave no layout to search: constraints.tp [8],
// constraints.pp [8] …"), with 16-bit weights pinned 47.12 s; with zero [0] the
// same, naming neither the weights nor the optimizer.
func TestFP8WeightsWithoutDataParallelism(t *testing.T) {
	e := step.New()
	base := planner.Request{Model: mustModel(t, "llama3-70b"), Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 64, TopK: 10,
		Training: step.Training{SeqLen: 8192, GlobalBatch: 512, Precision: step.FP8}}
	for _, tc := range []struct {
		name  string
		cons  planner.Constraints
		check func(l step.Layout) bool
	}{
		{"tp 8 × pp 8", planner.Constraints{TP: []int{8}, PP: []int{8}}, func(l step.Layout) bool { return l.DP == 1 && l.FP8Params && l.ZeRO == 1 }},
		{"zero 0", planner.Constraints{ZeRO: []int{0}}, func(l step.Layout) bool { return !l.FP8Params && l.ZeRO == 0 }},
	} {
		req := base
		req.Constraints = tc.cons
		res, err := planner.Search(context.Background(), e, req)
		if err != nil || len(res.Top) == 0 {
			t.Errorf("%s: %v, no plan: %s", tc.name, err, res.NoPlan)
			continue
		}
		for _, p := range res.Top {
			if !tc.check(p.Layout) {
				t.Errorf("%s: plan %s, fp8 weights %v", tc.name, describe(p.Layout), p.Layout.FP8Params)
			}
		}
		roundTrip(t, e, tc.name, req, res)
	}
	// fp8 weights pinned with ZeRO 0 alone: no plan, and the answer says why.
	req := base
	req.Constraints = planner.Constraints{ZeRO: []int{0}, FP8Params: []bool{true}}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil || len(res.Top) > 0 || !strings.Contains(res.NoPlan, "constraints.fp8_params") || !strings.Contains(res.NoPlan, "ZeRO 1 or more") {
		t.Errorf("fp8 weights at ZeRO 0 alone: %v, %d plans, %q; want none, naming constraints.fp8_params and the sharded optimizer", err, len(res.Top), res.NoPlan)
	}
}
