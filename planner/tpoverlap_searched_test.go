package planner_test

import (
	"context"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// TP communication overlap is searched by default (Megatron-Core's --tp-comm-overlap:
// Transformer Engine's userbuffers, each GEMM hiding what its method allows), so on
// GPT-3 175B on 1024 H100 — the layout where Calculon finds it worth 18 % of its
// best plan — it is in the top plans, and pinning it off gives a slower best.
func TestTPOverlapSearched(t *testing.T) {
	e := step.New()
	req := planner.Request{Model: mustModel(t, "gpt3-175b"), Cluster: mustCluster(t, "dgx-h100", 128), GPUs: 1024, TopK: 10,
		Training: step.Training{SeqLen: 2048, GlobalBatch: 1536}}
	search := func(req planner.Request) planner.Result {
		t.Helper()
		res, err := planner.Search(context.Background(), e, req)
		if err != nil || len(res.Top) == 0 {
			t.Fatalf("%+v: %v %s", req.Constraints, err, res.NoPlan)
		}
		return res
	}
	res := search(req)
	with := 0
	for _, p := range res.Top {
		if p.Estimate.Layout.OverlapTP {
			with++
		}
	}
	if !res.Top[0].Estimate.Layout.OverlapTP || 2*with < len(res.Top) {
		t.Errorf("default search: the best plan overlaps TP %v; %d of the top %d do", res.Top[0].Estimate.Layout.OverlapTP, with, len(res.Top))
	}
	off := req
	off.Constraints.OverlapTP = []bool{false}
	resOff := search(off)
	for _, p := range resOff.Top {
		if p.Estimate.Layout.OverlapTP {
			t.Fatalf("pinned off: a plan overlaps TP: %+v", p.Estimate.Layout)
		}
	}
	if !(resOff.Top[0].Score > res.Top[0].Score) {
		t.Errorf("best without the overlap %.4f s, not slower than with it %.4f s", resOff.Top[0].Score, res.Top[0].Score)
	}
	t.Logf("gpt3-175b on 1024 H100: best %.3f s with TP overlap (%d of the top %d overlap), %.3f s without",
		res.Top[0].Score, with, len(res.Top), resOff.Top[0].Score)
}
