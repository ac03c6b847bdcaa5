package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// A MoE layer whose experts are not split over TP (expert TP 1) runs, under TP
// with sequence parallelism, only its attention block's TP collectives: the
// attention's all-gather before the QKV projection and reduce-scatter after the
// output projection, forward and again backward. Megatron-Core's all-to-all token
// dispatcher (megatron/core/transformer/moe/token_dispatcher.py,
// MoEAlltoAllTokenDispatcher) routes each rank's own sequence-parallel share of
// the tokens and gathers over the expert-TP group only when its size is above 1,
// so the MoE block adds none. TP comm-GEMM overlap (Transformer Engine's
// userbuffers, torch async TP) changes how much of those collectives is exposed,
// not how many run: exposed plus hidden under overlap is what the layout without
// overlap exposes. Checked on Qwen3-235B-A22B (every layer MoE) and on a dense twin
// with the same attention and layer count, whose layers run twice the collectives.
// With expert TP equal to TP the dispatcher's expert-TP gathers come on top, not
// overlapped (userbuffers overlap the linear layers' collectives only): the
// overlapped layout exposes them whole and hides only the attention's.
func TestTPOverlapMoELayersCountTheirAttentionOnce(t *testing.T) {
	e := step.New()
	moe := arch(t, "qwen3-235b-a22b")
	dense := moe
	dense.MoE = nil
	dense.FFN = 4 * moe.Hidden
	for _, tc := range []struct {
		fw      string
		tp, etp int
	}{{"megatron-core", 8, 1}, {"megatron-core", 4, 1}, {"nemo", 8, 1}, {"megatron-core", 4, 4}} {
		tp := func(a string, overlap bool) (exposed, hidden float64) {
			t.Helper()
			r := step.Request{Model: moe, Cluster: cluster(t, "dgx-h100", 8),
				Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: tc.fw},
				Layout: step.Layout{TP: tc.tp, PP: 1, DP: 64 / tc.tp, EP: 8, ETP: tc.etp, MicroBatch: 1, SP: true, ZeRO: 1,
					Recompute: step.RecomputeFull, OverlapTP: overlap}}
			if a == "dense" {
				r.Model, r.Layout.EP, r.Layout.ETP = dense, 0, 0
			}
			res, err := e.Estimate(r)
			if err != nil {
				t.Fatalf("%s %s TP %d: %v", a, tc.fw, tc.tp, err)
			}
			// The userbuffers' backward re-gathers, which only the overlapped
			// layout prices, are left out of what it hides (regathers).
			return res.Breakdown.Exposed[step.CommTP], res.Breakdown.Hidden[step.CommTP] - regathers(res)
		}
		dPlain, _ := tp("dense", false)
		dExp, dHid := tp("dense", true)
		mPlain, _ := tp("moe", false)
		mExp, mHid := tp("moe", true)
		t.Logf("%s TP %d ETP %d: dense %.4f s without overlap, %.4f exposed + %.4f hidden with it; MoE %.4f s, %.4f + %.4f", tc.fw, tc.tp, tc.etp,
			dPlain, dExp, dHid, mPlain, mExp, mHid)
		if r := mPlain / dPlain; tc.etp == 1 && math.Abs(r-0.5) > 1e-9 || tc.etp > 1 && !(r > 0.5) {
			t.Errorf("%s TP %d: MoE layers' TP collectives %.6f of the dense layers', want one half (attention only) with ETP 1, above it with the expert-TP gathers", tc.fw, tc.tp, r)
		}
		if math.Abs(dExp+dHid-dPlain) > 1e-9*dPlain {
			t.Errorf("%s TP %d: dense with overlap %.6f + %.6f, without %.6f", tc.fw, tc.tp, dExp, dHid, dPlain)
		}
		if math.Abs(mExp+mHid-mPlain) > 1e-9*mPlain {
			t.Errorf("%s TP %d: MoE with overlap %.6f exposed + %.6f hidden = %.6f, without overlap %.6f (%.3f of it)", tc.fw, tc.tp,
				mExp, mHid, mExp+mHid, mPlain, (mExp+mHid)/mPlain)
		}
	}
}
