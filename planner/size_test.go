package planner_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
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

// One rule for a node's free GPUs: the planner refuses a free map by it, in the
// words the service uses for the request's entry.
func TestFreeGPUsRule(t *testing.T) {
	for _, c := range []struct {
		gpus []int
		at   int
		why  string
	}{
		{[]int{0, 1, 7}, -1, ""},
		{[]int{0, 8}, 1, "must be a GPU of the node, 0 to 7 (got 8)"},
		{[]int{3, -1}, 1, "must be a GPU of the node, 0 to 7 (got -1)"},
		{[]int{2, 5, 2}, 2, "GPU 2 is listed twice"},
	} {
		at, why := planner.CheckNodeGPUs(c.gpus, 8)
		if at != c.at || why != c.why {
			t.Errorf("%v: %d %q, want %d %q", c.gpus, at, why, c.at, c.why)
		}
		if c.at < 0 {
			continue
		}
		req := llama8bRequest(t)
		req.Free = planner.FreeMap{0: c.gpus}
		if _, err := planner.Search(context.Background(), step.New(), req); err == nil || !strings.Contains(err.Error(), "free_gpus[0]: "+c.why) {
			t.Errorf("%v: search %v", c.gpus, err)
		}
	}
}

// One rule for an objective and its prices: the search refuses by
// CheckObjective, in its words, and takes what it takes.
func TestObjectiveRule(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		obj           planner.Objective
		price, budget float64
		field         string // "" for accepted
	}{
		{planner.FastestStep, 0, 0, ""},
		{planner.Cost, 2.5, 1e12, ""},
		{planner.Cost, 0, 1e12, "objective"},
		{planner.Cost, 2.5, 0, "objective"},
		{planner.Cost, nan, 1e12, "price_per_gpu_hour"},
		{planner.Throughput, 0, -1, "token_budget"},
		// A price so small that a cost underflows to 0 (or towards it): refused.
		{planner.Cost, 1e-300, 1e12, "price_per_gpu_hour"},
		{planner.Cost, 5e-324, 1e12, "price_per_gpu_hour"},
		{planner.Cost, planner.MinPricePerGPUHour, 1e12, ""},
		{"latency", 0, 0, "objective"},
	} {
		rule := planner.CheckObjective(c.obj, c.price, c.budget)
		got := ""
		var fe *invalid.Error
		if errors.As(rule, &fe) {
			got = fe.Field
		} else if rule != nil {
			got = "not a field error"
		}
		if got != c.field {
			t.Errorf("%s, %v, %v: %v, want a violation of %q", c.obj, c.price, c.budget, rule, c.field)
		}
		if rule == nil {
			continue
		}
		req := llama8bRequest(t)
		req.Objective, req.PricePerGPUHour, req.TokenBudget = c.obj, c.price, c.budget
		if _, err := planner.Search(context.Background(), step.New(), req); err == nil || !strings.Contains(err.Error(), rule.Error()) {
			t.Errorf("%s, %v, %v: search %v, the rule %v", c.obj, c.price, c.budget, err, rule)
		}
	}
}

// A token budget below one step's tokens (global_batch × seq_len) trains no run:
// the cost of a fraction of a step (1e-300 tokens priced at 1e-308 dollars) is no
// answer. Refused naming token_budget, with the step's tokens; one step's tokens
// are taken.
func TestTokenBudgetBelowOneStepIsRefused(t *testing.T) {
	for _, budget := range []float64{1e-300, 1, 8192*256 - 1} {
		req := llama8bRequest(t)
		req.Objective, req.PricePerGPUHour, req.TokenBudget = planner.Cost, 2, budget
		_, err := planner.Search(context.Background(), step.New(), req)
		var fe *invalid.Error
		if !errors.As(err, &fe) || fe.Field != "token_budget" || !strings.Contains(fe.Rule, "2097152") {
			t.Errorf("token_budget %v: %v, want refused naming token_budget and the step's 2097152 tokens", budget, err)
		}
	}
	req := llama8bRequest(t)
	req.Objective, req.PricePerGPUHour, req.TokenBudget = planner.Cost, 2, 8192*256
	if _, err := planner.Search(context.Background(), step.New(), req); err != nil {
		t.Errorf("one step's tokens: %v", err)
	}
}
