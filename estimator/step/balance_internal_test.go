package step

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The binary searches find the exhaustive search's split, ties included: layer
// costs drawn from a few small integers (many equal chunks), zeros among them, and
// an extra cost on the last chunk as the loss adds.
func TestMonotoneSplitIsTheExhaustiveOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 3000 {
		n := 1 + rng.IntN(40)
		stages := 1 + rng.IntN(n)
		cost := make([]float64, n+1)
		for i := range n {
			c := float64(rng.IntN(4))
			if trial%3 == 0 {
				c = rng.Float64() * 1e12
			}
			cost[i+1] = cost[i] + c
		}
		last := float64(rng.IntN(6))
		chunk := func(from, to, k int) float64 {
			c := cost[to] - cost[from]
			if k == stages-1 {
				c += last
			}
			return c
		}
		want, got := exhaustiveSplit(n, stages, chunk), monotoneSplit(n, stages, chunk)
		if !slices.Equal(got, want) {
			t.Fatalf("%d layers costing %v (+%v last) over %d stages: split %v, the exhaustive search's %v", n, cost, last, stages, got, want)
		}
	}
}
