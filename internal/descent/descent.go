// Package descent fits model constants to measurements by coordinate descent:
// each round tries every parameter at several multiples of its value, keeps the
// best move, and stops when a round improves nothing. The losses it is used on are
// piecewise (an algorithm or a tile count switches), so it tries large and small
// steps in both directions rather than following a gradient.
package descent

import "math"

// Param is one fitted constant of a K: how to read and write it, and its range.
type Param[K any] struct {
	Name     string
	Get      func(*K) float64
	Set      func(*K, float64)
	Min, Max float64
}

// Minimise returns the constants with the lowest loss found from start, and that
// loss. clone copies a K deeply enough that setting a parameter on the copy leaves
// the original alone. steps are the factors tried on each parameter; a parameter
// at 0 is tried at steps × 1 % of its maximum instead.
func Minimise[K any](start K, clone func(K) K, params []Param[K], steps []float64, rounds int, loss func(K) float64) (K, float64) {
	best := clone(start)
	bestLoss := loss(best)
	for range rounds {
		improved := false
		for _, p := range params {
			cur := p.Get(&best)
			cand, candLoss := best, bestLoss
			for _, f := range steps {
				nv := cur * f
				if cur == 0 {
					nv = p.Max * 0.01 * f
				}
				nv = math.Max(p.Min, math.Min(p.Max, nv))
				if nv == cur {
					continue
				}
				k := clone(best)
				p.Set(&k, nv)
				if l := loss(k); l < candLoss-1e-9 {
					cand, candLoss = k, l
				}
			}
			if candLoss < bestLoss {
				best, bestLoss, improved = cand, candLoss, true
			}
		}
		if !improved {
			break
		}
	}
	return best, bestLoss
}
