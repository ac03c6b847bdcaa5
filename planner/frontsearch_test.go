package planner

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// fronts.beaten finds the stair below a bound as slices.BinarySearchFunc with
// cmp.Compare does, over fronts built by add from random plans, bounds between,
// on and off their scores, and NaN and infinite ones.
func TestFrontsBeatenSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	byLibrary := func(f fronts, n, free int, bound, head float64) bool {
		for _, x := range f {
			if x.n != n || x.freeWhole < free {
				continue
			}
			i, _ := slices.BinarySearchFunc(x.stairs, bound, func(a stair, x float64) int { return cmp.Compare(a.score, x) })
			if i > 0 && x.stairs[i-1].head >= head {
				return true
			}
		}
		return false
	}
	checked, beaten := 0, 0
	for range 200 {
		var f fronts
		var scores []float64
		for range rng.IntN(40) {
			sc, hd := float64(rng.IntN(50)), float64(rng.IntN(20))
			f.add(8<<rng.IntN(2), rng.IntN(3), sc, hd)
			scores = append(scores, sc)
		}
		for range 50 {
			bound := float64(rng.IntN(55)) - 2
			switch rng.IntN(6) {
			case 0:
				bound += 0.5
			case 1:
				bound = math.Inf(1 - 2*rng.IntN(2))
			case 2:
				bound = math.NaN()
			case 3:
				if len(scores) > 0 {
					bound = scores[rng.IntN(len(scores))]
				}
			}
			n, free, head := 8<<rng.IntN(2), rng.IntN(3), float64(rng.IntN(22))-1
			got, want := f.beaten(n, free, bound, head), byLibrary(f, n, free, bound, head)
			if got != want {
				t.Fatalf("fronts %v, n %d free %d bound %v head %v: beaten %v, want %v", f, n, free, bound, head, got, want)
			}
			checked++
			if got {
				beaten++
			}
		}
	}
	if beaten == 0 || beaten == checked {
		t.Fatalf("%d of %d beaten: the cases do not tell", beaten, checked)
	}
}
