package step_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
)

// A cache reset for the next search keeps the layers' compute times only for the
// same model, training and cluster: the bounds of every search, through one cache
// reset between them, equal the bounds without a cache — also when the next model
// differs only inside its MoE block, or the training only in precision.
func TestBoundsCacheResetFor(t *testing.T) {
	e := step.New()
	cl, other := cluster(t, "dgx-h100", 8), cluster(t, "dgx-h100", 8)
	mixtral := arch(t, "mixtral-8x7b")
	topK := mixtral
	moe := *mixtral.MoE
	moe.TopK++
	topK.MoE = &moe
	bf16 := step.Training{SeqLen: 4096, GlobalBatch: 256}
	fp8 := bf16
	fp8.Precision = step.FP8
	searches := []struct {
		a  model.Arch
		t  step.Training
		cl bool // the other cluster
	}{
		{arch(t, "gpt3-175b"), bf16, false}, {arch(t, "gpt3-175b"), bf16, false}, {arch(t, "gpt3-175b"), fp8, false},
		{arch(t, "llama3-8b"), fp8, false}, {arch(t, "llama3-8b"), fp8, true}, {mixtral, bf16, true}, {topK, bf16, true},
		{mixtral, bf16, true},
	}
	var c step.BoundsCache
	checked := 0
	for i, s := range searches {
		c2 := cl
		if s.cl {
			c2 = other
		}
		c.ResetFor(e, s.a, s.t, c2)
		for _, tp := range []int{1, 2, 8} {
			for _, rc := range []step.Recompute{step.RecomputeNone, step.RecomputeSelective, step.RecomputeFull} {
				r := step.Request{Model: s.a, Training: s.t, Cluster: c2,
					Layout: step.Layout{TP: tp, PP: 2, DP: 32 / tp, MicroBatch: 1, Recompute: rc, SP: tp > 1}}
				if s.a.MoE != nil {
					r.Layout.EP = 8 / tp
				}
				want, ok := e.LowerBounds(r)
				if !ok {
					continue
				}
				if got, _ := e.LowerBoundsCached(r, &c); got != want {
					t.Errorf("search %d (%s), tp %d, %s: bounds through the kept cache %+v, without %+v", i, s.a.Name, tp, rc, got, want)
				}
				checked++
			}
		}
	}
	if checked < 3*len(searches) {
		t.Fatalf("only %d bounds checked", checked)
	}
}
