package planner_test

import (
	"context"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// SearchGPUs counts what a search places: the sizes it reports trying.
func TestSearchGPUsMatchesTheSearch(t *testing.T) {
	for _, r := range []struct{ gpus, lo, hi int }{{16, 0, 0}, {0, 0, 32}, {0, 3, 24}} {
		req := llama8bRequest(t)
		req.GPUs, req.MinGPUs, req.MaxGPUs, req.TopK = r.gpus, r.lo, r.hi, 1
		res, err := planner.Search(context.Background(), step.New(), req)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for _, n := range res.Stats.GPUCounts {
			sum += n
		}
		if got := planner.SearchGPUs(req); got != sum || sum == 0 {
			t.Errorf("%+v: SearchGPUs %d, the search placed %d", r, got, sum)
		}
	}
	if got := planner.SearchGPUs(planner.Request{MinGPUs: 3, MaxGPUs: 5}); got != 3+4+5 {
		t.Errorf("no cluster, 3–5: %d", got)
	}
}
