package accuracy

import (
	"math"
	"testing"
)

// Kendall's τ-b worked by hand: n = 3 gives 3 pairs.
func TestKendall(t *testing.T) {
	cases := []struct {
		name string
		x, y []float64
		tol  float64
		want float64
	}{
		{"same order", []float64{1, 2, 3}, []float64{10, 20, 30}, 0, 1},
		{"reversed", []float64{1, 2, 3}, []float64{30, 20, 10}, 0, -1},
		// One of three pairs swapped: (2 − 1)/3.
		{"one swap", []float64{1, 3, 2}, []float64{10, 20, 30}, 0, 1.0 / 3},
		// A predicted tie: 2 concordant, denominator √((2+1)·2).
		{"predicted tie", []float64{1, 2, 2}, []float64{10, 20, 30}, 0, 2 / math.Sqrt(6)},
		// The swapped pair measured 0.5 % apart is a tie at 1 %: 2/√(3·2).
		{"swap within tolerance", []float64{1, 3, 2}, []float64{10, 20, 20.1}, 0.01, 2 / math.Sqrt(6)},
		// 2.4 % apart is an order at 1 %.
		{"swap beyond tolerance", []float64{1, 3, 2}, []float64{10, 20, 20.5}, 0.01, 1.0 / 3},
		{"predictions tied", []float64{1, 1}, []float64{5, 6}, 0, 0},
	}
	for _, c := range cases {
		if got, ok := kendall(c.x, c.y, c.tol); !ok || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: τ = %v, want %v", c.name, got, c.want)
		}
	}
	// Measured values all tied: there is no order, and τ says so.
	if _, ok := kendall([]float64{1, 2}, []float64{355, 353}, 0.01); ok {
		t.Errorf("all measured pairs tied: ordered, want no order")
	}
}
