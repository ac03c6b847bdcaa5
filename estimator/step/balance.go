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
				v := math.Max(best[k-1][t], chunk(t, i, k))
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
