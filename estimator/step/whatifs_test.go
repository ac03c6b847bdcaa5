package step_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// One rule for the what-ifs: below its minimum a what-if is refused by the step
// model, by a search and before a request is resolved, in the same words (it was
// (0, 1] in the step model and the planner, and only the service bounded it).
func TestWhatIfBoundsAreOneRule(t *testing.T) {
	c := cluster(t, "dgx-h100", 1)
	want := step.CheckWhatIfs(0.005, 0, 0, c)
	if want == nil || !strings.HasPrefix(want.Error(), "slow_gpu_speed: must be 0 (none) or from 0.01 to 1") {
		t.Fatalf("CheckWhatIfs: %v", want)
	}
	req := step.Request{Model: arch(t, "llama3-8b"), Cluster: c, Training: step.Training{SeqLen: 4096, GlobalBatch: 8},
		Layout: step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1}, SlowGPUSpeed: 0.005}
	if _, err := step.New().Estimate(req); err == nil || !strings.Contains(err.Error(), want.Error()) {
		t.Errorf("estimate: %v, want %v", err, want)
	}
	pr := planner.Request{Model: req.Model, Cluster: c, Training: req.Training, GPUs: 8, SlowGPUSpeed: 0.005}
	if _, err := planner.Search(context.Background(), step.New(), pr); err == nil || !strings.Contains(err.Error(), want.Error()) {
		t.Errorf("search: %v, want %v", err, want)
	}
	if err := step.CheckWhatIfs(0.5, 0.5, 0.5, c); err != nil {
		t.Errorf("in range: %v", err)
	}
}
