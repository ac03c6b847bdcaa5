package step_test

import (
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// A layout switch of a parallelism the layout does not use changed nothing and
// was echoed back as if it had: cp_all_to_all (Ulysses) with cp 1, overlap_tp
// with tp 1. Like sp with tp 1, each is refused naming the field.
func TestSwitchesOfAnUnusedParallelismAreRefused(t *testing.T) {
	for field, l := range map[string]step.Layout{
		"layout.cp_all_to_all": {TP: 8, PP: 1, DP: 2, CP: 1, MicroBatch: 1, CPAllToAll: true},
		"layout.overlap_tp":    {TP: 1, PP: 1, DP: 16, CP: 1, MicroBatch: 1, OverlapTP: true},
	} {
		req := step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 2),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: l}
		_, err := step.New().Estimate(req)
		if !invalid.Is(err) || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s: got %v, want it refused by name", field, err)
		}
	}
}
