package step_test

import (
	"math"
	"slices"
	"testing"

	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
)

// chunkCosts are the forward FLOPs of each chunk of a split, the last with the
// output layer and loss.
func chunkCosts(a model.Arch, seq int, split []int) []float64 {
	out := make([]float64, len(split))
	layer := 0
	for i, n := range split {
		for range n {
			out[i] += a.LayerFLOPs(layer, seq).Causal().Total()
			layer++
		}
	}
	out[len(out)-1] += a.LogitsFLOPs(seq)
	return out
}

// compositions calls f with every split of n layers into k non-empty chunks.
func compositions(n, k int, prefix []int, f func([]int)) {
	if k == 1 {
		f(append(prefix, n))
		return
	}
	for first := 1; first <= n-k+1; first++ {
		compositions(n-first, k-1, append(prefix, first), f)
	}
}

// The balanced split is the cheapest most expensive chunk over every split (checked
// exhaustively on a DeepSeek-shaped model cut to 14 layers, 3 of them dense, on up
// to 5 chunks); DeepSeek-V3's 61 layers on 16 stages and on 4 × 4 chunks get a
// split that sums to 61, beats the even split, and leaves the last chunk (with the
// output layer) no more layers than the others.
func TestBalancedSplit(t *testing.T) {
	ds, err := model.Lookup("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	small := ds
	small.Layers = 14
	for k := 2; k <= 5; k++ {
		got := step.BalancedSplit(small, 4096, k)
		best := math.Inf(1)
		compositions(small.Layers, k, nil, func(s []int) { best = min(best, slices.Max(chunkCosts(small, 4096, s))) })
		if c := slices.Max(chunkCosts(small, 4096, got)); math.Abs(c-best) > 1e-9*best {
			t.Errorf("%d chunks: split %v costs %.4g, the best %.4g", k, got, c, best)
		}
	}
	for _, stages := range []int{16, 4 * 4} {
		got := step.BalancedSplit(ds, 4096, stages)
		sum := 0
		for _, n := range got {
			sum += n
		}
		even := step.EvenSplit(ds.Layers, stages)
		t.Logf("%d stages: %v (even %v)", stages, got, even)
		if sum != 61 || len(got) != stages || slices.Min(got) < 1 || got[stages-1] > slices.Min(got[:stages-1]) {
			t.Errorf("%d stages: split %v", stages, got)
		}
		if b, e := slices.Max(chunkCosts(ds, 4096, got)), slices.Max(chunkCosts(ds, 4096, even)); b >= e {
			t.Errorf("%d stages: balanced %.4g not below even %.4g", stages, b, e)
		}
	}
	if step.BalancedSplit(small, 4096, 15) != nil {
		t.Error("15 chunks of 14 layers")
	}
}

// Estimate takes DeepSeek-V3 on pp 16 without a layer split: the split it chose
// is in the answer.
func TestEstimateBalancesTheSplit(t *testing.T) {
	a := arch(t, "deepseek-v3")
	r, err := step.New().Estimate(step.Request{Model: a, Cluster: cluster(t, "hgx-h800", 32),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 512, Precision: step.FP8},
		Layout:   step.Layout{TP: 1, PP: 16, DP: 16, EP: 16, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeFull, Schedule: step.OneFOneB}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Layout.LayerSplit, step.BalancedSplit(a, 4096, 16); !slices.Equal(got, want) || len(got) != 16 {
		t.Errorf("split %v, want %v", got, want)
	}
}
