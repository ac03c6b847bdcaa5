package planner_test

import (
	"slices"
	"testing"

	"github.com/stepcost/stepcost/planner"
)

// Configurations that do not fit rank after every one that fits, however fast; a
// failed one gets no rank; a configuration as slow as another on as many GPUs with
// less headroom is flagged dominated, one on other GPUs is not.
func TestRankConfigs(t *testing.T) {
	items := []planner.RankItem{
		{Valid: true, Fits: false, GPUs: 8, Score: 1, StepTime: 1, Headroom: -3}, // fastest, does not fit
		{Valid: true, Fits: true, GPUs: 8, Score: 3, StepTime: 3, Headroom: 10},  // fits
		{Valid: false}, // failed
		{Valid: true, Fits: true, GPUs: 8, Score: 2, StepTime: 2, Headroom: 5},  // best that fits
		{Valid: true, Fits: true, GPUs: 8, Score: 3, StepTime: 3, Headroom: 4},  // as slow as item 1, less headroom
		{Valid: true, Fits: true, GPUs: 16, Score: 3, StepTime: 3, Headroom: 1}, // other GPU count
		{Valid: true, Fits: false, GPUs: 8, Score: 0.5, StepTime: 0.5, Headroom: -9},
	}
	rank, dom := planner.RankConfigs(items)
	if want := []int{6, 2, 0, 1, 3, 4, 5}; !slices.Equal(rank, want) {
		t.Errorf("ranks %v, want %v", rank, want)
	}
	if want := []bool{false, false, false, false, true, false, false}; !slices.Equal(dom, want) {
		t.Errorf("dominated %v, want %v", dom, want)
	}
}
