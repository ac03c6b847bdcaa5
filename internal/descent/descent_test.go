package descent

import (
	"math"
	"testing"
)

type point struct{ x, y float64 }

// A separable bowl with its minimum at (3, 0.5): the descent walks to it within the
// resolution of its smallest step, respects the bounds, and never reports a loss
// other than the loss of the point it returns.
func TestMinimiseFindsTheBowl(t *testing.T) {
	loss := func(p point) float64 { return math.Abs(math.Log(p.x/3)) + math.Abs(math.Log(p.y/0.5)) }
	params := []Param[point]{
		{"x", func(p *point) float64 { return p.x }, func(p *point, v float64) { p.x = v }, 0.1, 10},
		{"y", func(p *point) float64 { return p.y }, func(p *point, v float64) { p.y = v }, 0.1, 10},
	}
	clone := func(p point) point { return p }
	steps := []float64{1.3, 1.1, 1.03, 1 / 1.03, 1 / 1.1, 1 / 1.3}
	got, l := Minimise(point{1, 5}, clone, params, steps, 100, loss)
	if math.Abs(got.x/3-1) > 0.03 || math.Abs(got.y/0.5-1) > 0.03 {
		t.Errorf("minimum at %+v, want (3, 0.5) within 3 %%", got)
	}
	if l != loss(got) {
		t.Errorf("reported loss %v, loss of the result %v", l, loss(got))
	}

	// Bounded below the minimum: x stops at its maximum.
	params[0].Max = 2
	got, _ = Minimise(point{1, 5}, clone, params, steps, 100, loss)
	if got.x != 2 {
		t.Errorf("x = %v, want its bound 2", got.x)
	}

	// A parameter at 0 is tried at a share of its maximum.
	params[0].Max, params[0].Min = 10, 0
	got, _ = Minimise(point{0, 0.5}, clone, params, []float64{4, 2, 1.1, 0.5}, 100, func(p point) float64 {
		if p.x == 0 {
			return 10
		}
		return loss(p)
	})
	if got.x == 0 {
		t.Error("x stayed at 0")
	}

	// No rounds: the start, with its loss.
	got, l = Minimise(point{1, 5}, clone, params, steps, 0, loss)
	if got != (point{1, 5}) || l != loss(point{1, 5}) {
		t.Errorf("zero rounds gave %+v, %v", got, l)
	}
}
