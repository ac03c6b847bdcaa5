package step

import (
	"math"

	"github.com/stepcost/stepcost/estimator/model"
)

// BalancedSplit is the layer split over stages model chunks (chunk c of pipeline
// rank s at c·pp + s, chunks in model order) whose most expensive chunk is the
// cheapest possible: each layer costs its forward FLOPs on one sequence of seq
// tokens (an MoE layer its active experts', so dense first layers weigh what they
// compute), the last chunk also the output layer's and the loss's (2·s·h·V), the
// first the embedding's (a gather, no FLOPs). Megatron-Core runs such splits
// (--decoder-first/last-pipeline-num-layers, --pipeline-model-parallel-layout), as
// DeepSeek's and Qwen's recipes do for 61 or 94 layers. Ties go to the split with
// more layers early (the loss weighs on the last chunk). It returns nil when there
// are fewer layers than chunks.
func BalancedSplit(a model.Arch, seq, stages int) []int {
	n := a.Layers
	if stages < 1 || n < stages || seq < 1 {
		return nil
	}
	cost := make([]float64, n+1) // prefix sums
	for i := range n {
		cost[i+1] = cost[i] + a.LayerFLOPs(i, seq).Causal().Total()
	}
	last := a.LogitsFLOPs(seq)
	chunk := func(from, to, k int) float64 { // layers [from, to) as chunk k
		c := cost[to] - cost[from]
		if k == stages-1 {
			c += last
		}
		return c
	}
	if stages*n*n/2 > exhaustiveSplitWork {
		return monotoneSplit(n, stages, chunk)
	}
	return exhaustiveSplit(n, stages, chunk)
}

// exhaustiveSplit tries every last chunk of every prefix: stages × n² / 2 steps.
func exhaustiveSplit(n, stages int, chunk func(from, to, k int) float64) []int {
	// best[k][i]: the lowest most expensive chunk of layers [0, i) in k+1 chunks.
	best := make([][]float64, stages)
	from := make([][]int, stages)
	for k := range best {
		best[k] = make([]float64, n+1)
		from[k] = make([]int, n+1)
		for i := range best[k] {
			best[k][i] = math.Inf(1)
		}
	}
	for i := 1; i <= n; i++ {
		best[0][i] = chunk(0, i, 0)
	}
	for k := 1; k < stages; k++ {
		for i := k + 1; i <= n-(stages-1-k); i++ {
			for t := i - 1; t >= k; t-- { // the last chunk is layers [t, i): latest t first
				v := max(best[k-1][t], chunk(t, i, k))
				if v < best[k][i] {
					best[k][i], from[k][i] = v, t
				}
			}
		}
	}
	split := make([]int, stages)
	i := n
	for k := stages - 1; k > 0; k-- {
		t := from[k][i]
		split[k], i = i-t, t
	}
	split[0] = i
	return split
}

// exhaustiveSplitWork bounds the steps of BalancedSplit's exhaustive search
// (stages × layers² / 2): every model of the catalog (at most a few hundred
// layers, up to 128 stages) is far under it. Past it, monotoneSplit finds the same
// split in stages × layers × log(layers) steps: the exhaustive search of 6 160
// layers over 500 stages took two minutes of CPU, in a request.
const exhaustiveSplitWork = 50_000_000

// monotoneSplit is BalancedSplit's search with binary searches in place of its
// inner loop, for chunk costs that grow with the chunk (prefix sums of costs ≥ 0).
// Then best[k-1][t] (the lowest most expensive of k chunks of layers [0, t))
// does not decrease with t, and the last chunk's cost chunk(t, i, k) does not grow
// with t, so max(best[k-1][t], chunk(t, i, k)) falls until the first t where the
// former reaches the latter (t0) and rises after it: its minimum is at t0 - 1 or
// t0, and the latest t reaching it (the exhaustive search's tie-break) is t0 - 1,
// or the last t of best[k-1]'s plateau from t0. Rounding keeps both monotone (a
// difference of prefix sums is monotone in each of them), so it finds the same
// split. Two rows of best suffice; the choices are kept to rebuild the split.
func monotoneSplit(n, stages int, chunk func(from, to, k int) float64) []int {
	prev, cur := make([]float64, n+1), make([]float64, n+1)
	for i := 1; i <= n; i++ {
		prev[i] = chunk(0, i, 0)
	}
	from := make([][]int32, stages)
	for k := 1; k < stages; k++ {
		from[k] = make([]int32, n+1)
		lo := k + 1
		hi := n - (stages - 1 - k)
		for i := lo; i <= hi; i++ {
			// t in [k, i-1]; t0 is the first t with prev[t] ≥ chunk(t, i, k), i if none.
			a, b := k, i
			for a < b {
				m := int(uint(a+b) >> 1)
				if prev[m] >= chunk(m, i, k) {
					b = m
				} else {
					a = m + 1
				}
			}
			t0 := a
			bestT, bestV := -1, math.Inf(1)
			if t0 <= i-1 {
				// The plateau of prev from t0: the last t ≤ i-1 with prev[t] ≤ prev[t0].
				v := prev[t0]
				a, b := t0, i-1
				for a < b {
					m := int(uint(a+b+1) >> 1)
					if prev[m] <= v {
						a = m
					} else {
						b = m - 1
					}
				}
				bestT, bestV = a, v
			}
			if t0-1 >= k {
				// Before t0 the last chunk is the larger: its cost, if lower (or equal
				// with no t0), is the minimum, at t0 - 1.
				if v := chunk(t0-1, i, k); v < bestV || bestT < 0 {
					bestT, bestV = t0-1, v
				}
			}
			cur[i], from[k][i] = bestV, int32(bestT)
		}
		prev, cur = cur, prev
	}
	split := make([]int, stages)
	i := n
	for k := stages - 1; k > 0; k-- {
		t := int(from[k][i])
		split[k], i = i-t, t
	}
	split[0] = i
	return split
}
