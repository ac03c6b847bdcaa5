package step_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Pipelines that do not divide the layers run without a hand-written layer_split:
// the embedding and the loss count as a layer of the first and last model chunk,
// as Megatron-LM's account-for-embedding/loss options do. 126 layers on pp 16 × 4
// chunks: 128 / 64 = 2 per chunk, the first and last 1. 70 layers on pp 12: 72 / 12
// = 6, the first and last 5.
func TestAccountedPipelineSplit(t *testing.T) {
	for _, c := range []struct {
		name            string
		layers, pp, vpp int
		first, mid, end int
	}{
		{"llama3-405b", 126, 16, 4, 1, 2, 1},
		{"", 70, 12, 1, 5, 6, 5},
	} {
		a := arch(t, "llama3-70b")
		if c.name != "" {
			a = arch(t, c.name)
		}
		a.Layers = c.layers
		req := step.Request{Model: a, Cluster: cluster(t, "dgx-h100", c.pp*8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 512},
			Layout:   step.Layout{TP: 8, PP: c.pp, DP: 8, MicroBatch: 1, VirtualStages: c.vpp, Recompute: step.RecomputeFull}}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatalf("%d layers, pp %d × %d: %v", c.layers, c.pp, c.vpp, err)
		}
		s := r.Layout.LayerSplit
		if len(s) != c.pp*c.vpp || s[0] != c.first || s[len(s)-1] != c.end || s[1] != c.mid {
			t.Errorf("%d layers, pp %d × %d: split %v", c.layers, c.pp, c.vpp, s)
		}
		sum := 0
		for _, n := range s {
			sum += n
		}
		if sum != c.layers || !r.Layout.AccountForLoss {
			t.Errorf("%d layers: split sums to %d, account_for_loss %v", c.layers, sum, r.Layout.AccountForLoss)
		}
	}
	// Not even counting the embedding and loss: the cost-balanced split, reported.
	a := arch(t, "llama3-70b")
	a.Layers = 81
	r, err := step.New().Estimate(step.Request{Model: a, Cluster: cluster(t, "dgx-h100", 64),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 512},
		Layout:   step.Layout{TP: 8, PP: 8, DP: 8, MicroBatch: 1}})
	if err != nil || !slices.Equal(r.Layout.LayerSplit, step.BalancedSplit(a, 4096, 8)) {
		t.Fatalf("81 layers on pp 8: split %v, %v", r.Layout.LayerSplit, err)
	}
	// Impossible: more stages than layers; the error names the field.
	a.Layers = 6
	if _, err := step.New().Estimate(step.Request{Model: a, Cluster: cluster(t, "dgx-h100", 64),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 512},
		Layout:   step.Layout{TP: 8, PP: 8, DP: 8, MicroBatch: 1}}); err == nil || !strings.Contains(err.Error(), "layout.pp") {
		t.Fatalf("6 layers on pp 8: %v", err)
	}
	if got := step.AccountedSplit(80, 8, false, false); !slices.Equal(got, step.EvenSplit(80, 8)) {
		t.Errorf("nothing counted: %v, want the even split", got)
	}
	if got := step.PipelineSplit(80, 8); got != nil {
		t.Errorf("80 layers on 8 stages need no accounting: %v", got)
	}
}

// Counting the loss as a layer balances the stages: the last stage's output layer
// is paid for with a layer less, so the step is no slower than the even split with
// the output layer on top of a full last stage.
func TestAccountedSplitBalancesTheLastStage(t *testing.T) {
	a := arch(t, "llama3-8b") // vocabulary 128 256: the output layer weighs about a layer
	run := func(split []int) float64 {
		req := step.Request{Model: a, Cluster: cluster(t, "dgx-h100", 4),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 64},
			Layout:   step.Layout{TP: 1, PP: 4, DP: 8, MicroBatch: 1, Recompute: step.RecomputeFull, LayerSplit: split}}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.StepTime
	}
	even, counted := run(nil), run([]int{8, 8, 9, 7})
	t.Logf("32 layers on pp 4: even %.3f s, last stage one layer lighter %.3f s", even, counted)
	if !(counted <= even) {
		t.Errorf("moving a layer off the last stage made the step slower: %.4f s vs %.4f s", counted, even)
	}
}
