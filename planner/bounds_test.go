package planner_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// Every layout a search prices scores no better than the bound it was queued and
// pruned by, on every placement, and every layout whose memory it checks holds no
// more headroom than the upper bound its dominance test took (candidate.maxHead): over the pinned searches, whose layouts run every
// schedule on pipelines up to 64 deep across nodes. A bound above a layout's score
// would let the search stop before a better plan (DualPipe's pipeline sends, which
// its estimate hides, were once counted in its bound: the llama3-405b search on 4096
// GPUs bounded a DualPipe layout at 25.19 s that the estimate prices at 25.05 s).
func TestPricedLayoutsKeepTheirBounds(t *testing.T) {
	var mu sync.Mutex
	var priced, failed atomic.Int64
	planner.SetVerifyPricedBounds(func(r step.Request, bound, score, headroom, maxHead float64) {
		priced.Add(1)
		if score < bound*(1-1e-12) || headroom > maxHead+1e-9 {
			if failed.Add(1) <= 5 {
				mu.Lock()
				t.Errorf("%s on %d GPUs, layout %+v: bound %.6g, score %.6g; headroom %.4g GB, at most %.4g", r.Model.Name,
					r.Layout.TP*r.Layout.PP*r.Layout.DP*r.Layout.CP, r.Layout, bound, score, headroom, maxHead)
				mu.Unlock()
			}
		}
	})
	defer planner.SetVerifyPricedBounds(nil)
	for _, s := range rankedSearches(t) {
		if s.slow && (testing.Short() || raceEnabled) {
			continue
		}
		if _, err := planner.Search(context.Background(), step.New(), s.req); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	if priced.Load() == 0 {
		t.Fatal("no layout was priced or checked")
	}
	t.Logf("%d layouts priced or checked, %d beyond their bounds", priced.Load(), failed.Load())
}
