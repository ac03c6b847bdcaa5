package planner

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The line of unexposed shapes, radix sorted, comes in the order a heap of the same
// keys pops them in: by bound, ties (many here, and −0 against +0) by ordinal, over
// negative, zero, infinite and nearby bounds — with the ordinals in any order, and
// ascending as a search's line has them (the sort then skips their digits).
func TestShapeLineOrder(t *testing.T) {
	for _, ascending := range []bool{false, true} {
		testShapeLineOrder(t, ascending)
	}
}

func testShapeLineOrder(t *testing.T, ascending bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := []float64{math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), -1.5, 1e-300, 3.25, 3.2500000000000004, 7e12}
	var scratch []shapeKey
	for _, size := range []int{0, 1, 2, 17, 300, 5000} {
		keys := make([]shapeKey, size)
		perm := rng.Perm(size * 40)
		if ascending {
			perm = perm[:size]
			slices.Sort(perm)
		}
		for i := range keys {
			b := values[rng.IntN(len(values))]
			if rng.IntN(2) == 0 {
				b = rng.NormFloat64() * 100
			}
			keys[i] = shapeKey{best: b, ordinal: int32(perm[i]), idx: int32(i)}
		}
		h := shapeHeap(append([]shapeKey(nil), keys...))
		h.init()
		line := shapeLine{keys: keys}
		scratch = line.sort(scratch)
		for i := 0; len(h) > 0; i++ {
			want := h.pop()
			if got := line.pop(); got != want {
				t.Fatalf("%d keys (ordinals ascending %v): key %d is %+v, the heap's %+v", size, ascending, i, got, want)
			}
		}
		if line.len() != 0 {
			t.Fatalf("%d keys: %d left in line", size, line.len())
		}
	}
}
