package planner_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// TestMemoryChecksOfValidLayouts: the search checks its layouts' memory without
// validating them again, the model's and training's part computed once
// (step.Estimator.MemoryOfValidWith). Over the pinned searches
// and searches with host offload of the optimizer, uneven pipelines, activation
// offload only and a slow GPU, every layout checked passes step's validation, and
// its memory is Memory's to the bit.
func TestMemoryChecksOfValidLayouts(t *testing.T) {
	var mu sync.Mutex
	var checked, failed atomic.Int64
	planner.SetVerifyMemoryChecks(func(e *step.Estimator, r step.Request, b *step.MemoryBasis) {
		checked.Add(1)
		want, err := e.Memory(r)
		got, with := e.MemoryOfValid(r), e.MemoryOfValidWith(r, b)
		if err != nil || got != want || with != want {
			if failed.Add(1) <= 5 {
				mu.Lock()
				t.Errorf("layout %+v: Memory %+v, %v; MemoryOfValid %+v; with the search's basis %+v", r.Layout, want, err, got, with)
				mu.Unlock()
			}
		}
	})
	defer planner.SetVerifyMemoryChecks(nil)
	searches := rankedSearches(t)
	h100 := func(model string, gpus, seq, gbs int) planner.Request {
		return planner.Request{Model: mustModel(t, model), Cluster: mustCluster(t, "dgx-h100", gpus/8), GPUs: gpus, TopK: 20,
			Training: step.Training{SeqLen: seq, GlobalBatch: gbs}}
	}
	r := h100("llama3-70b", 256, 8192, 512)
	r.Constraints.Offload = step.OffloadOptimizer
	searches = append(searches, struct {
		name string
		req  planner.Request
		slow bool
	}{"llama3-70b/256/offload-optimizer", r, false})
	r = h100("llama3-405b", 1024, 8192, 1024)
	r.Constraints.UnevenPP = true
	r.Constraints.OffloadActivations = []bool{true}
	r.SlowGPUSpeed = 0.8
	searches = append(searches, struct {
		name string
		req  planner.Request
		slow bool
	}{"llama3-405b/1024/uneven-offload-slow", r, false})
	for _, s := range searches {
		if s.slow && (testing.Short() || raceEnabled) {
			continue
		}
		if _, err := planner.Search(context.Background(), step.New(), s.req); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	if checked.Load() == 0 {
		t.Fatal("no layout's memory was checked")
	}
	t.Logf("%d layouts checked, %d invalid or different", checked.Load(), failed.Load())
}
