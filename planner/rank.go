package planner

import (
	"cmp"
	"slices"
)

// RankItem is what ranking needs of one configuration's estimate.
type RankItem struct {
	// Valid: the configuration was estimated (no error).
	Valid bool
	// Fits: its peak memory fits the GPU.
	Fits     bool
	GPUs     int
	Score    float64 // the objective's value, lower is better
	StepTime float64
	Headroom float64 // memory headroom, GB
}

// RankConfigs ranks configurations for a caller that gives them (RankConfigs, rank
// files): every configuration that fits before every one that does not, each group
// by score with ties in the given order; rank 1 is the best and a configuration that
// failed gets 0. dominated[i] says another valid configuration on as many GPUs
// dominates item i (Dominates); a scheduler would not choose it.
func RankConfigs(items []RankItem) (rank []int, dominated []bool) {
	idx := make([]int, 0, len(items))
	for i, it := range items {
		if it.Valid {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := items[a], items[b]
		if x.Fits != y.Fits {
			if x.Fits {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.Score, y.Score)
	})
	rank = make([]int, len(items))
	for r, i := range idx {
		rank[i] = r + 1
	}
	// Dominance among configurations of one GPU count: sorted by step time (then
	// most headroom first), a configuration is dominated when an earlier one keeps
	// at least its headroom and is strictly better in one.
	dominated = make([]bool, len(items))
	byGPUs := map[int][]int{}
	for _, i := range idx {
		byGPUs[items[i].GPUs] = append(byGPUs[items[i].GPUs], i)
	}
	for _, group := range byGPUs {
		slices.SortStableFunc(group, func(a, b int) int {
			if c := cmp.Compare(items[a].StepTime, items[b].StepTime); c != 0 {
				return c
			}
			return cmp.Compare(items[b].Headroom, items[a].Headroom)
		})
		for k, i := range group {
			for _, j := range group[:k] {
				if Dominates(items[j].StepTime, items[j].Headroom, items[i].StepTime, items[i].Headroom) {
					dominated[i] = true
					break
				}
			}
		}
	}
	return rank, dominated
}
