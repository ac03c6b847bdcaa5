package accuracy_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/collective/accuracy"
)

// A fit from several starts returns the best of its descents, whatever the order of
// the starts (the descents run concurrently), with the loss of the constants it
// returns; no single start's descent does better.
func TestFitFromKeepsTheBestDescent(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	cases := accuracy.Cases(rows)
	params := accuracy.FitParams()
	starts := []accuracy.Knobs{accuracy.Prior(), shipped()}
	const rounds = 1
	a, la := accuracy.FitFrom(cases, starts, params, rounds)
	b, lb := accuracy.FitFrom(cases, []accuracy.Knobs{starts[1], starts[0]}, params, rounds)
	if la != lb {
		t.Errorf("loss %v with the starts in one order, %v in the other", la, lb)
	}
	for _, p := range params {
		if *p.Get(&a) != *p.Get(&b) {
			t.Errorf("%s = %v with the starts in one order, %v in the other", p.Name, *p.Get(&a), *p.Get(&b))
		}
	}
	for i, s := range starts {
		if _, l := accuracy.Fit(cases, s, params, rounds); l < la {
			t.Errorf("start %d alone reaches loss %v, below the best of all starts %v", i, l, la)
		}
	}
	if got := accuracy.Loss(accuracy.Price(collective.NewModel(a.K), accuracy.PrepareWith(accuracy.FitCases(cases), a.Links))); math.Abs(got-la) > 1e-9 {
		t.Errorf("reported loss %v, loss of the returned constants %v", la, got)
	}
}

// Starts spreads a start along the fixed/per-step split and only there, inside the
// fit's ranges.
func TestStartsSplitFixedAndPerStepCosts(t *testing.T) {
	params := accuracy.FitParams()
	p := accuracy.Prior()
	ss := accuracy.Starts(p, params, 2)
	if len(ss) != 3 {
		t.Fatalf("%d starts, want the start and two spread", len(ss))
	}
	up, down := ss[1], ss[2]
	if up.K.BaseUs[collective.Simple] != 2*p.K.BaseUs[collective.Simple] || up.K.StepUs[collective.Simple] != p.K.StepUs[collective.Simple]/2 ||
		up.Links.NetLatencyUs != p.Links.NetLatencyUs/2 || up.K.LaunchUs[collective.PerProcess] != 2*p.K.LaunchUs[collective.PerProcess] {
		t.Errorf("fixed ×2, per-step ÷2: got base %v step %v hop %v launch %v", up.K.BaseUs[collective.Simple], up.K.StepUs[collective.Simple], up.Links.NetLatencyUs, up.K.LaunchUs[collective.PerProcess])
	}
	if down.K.BaseUs[collective.LL] != p.K.BaseUs[collective.LL]/2 || down.K.NVLSStepUs != 2*p.K.NVLSStepUs {
		t.Errorf("fixed ÷2, per-step ×2: got LL base %v, NVLS step %v", down.K.BaseUs[collective.LL], down.K.NVLSStepUs)
	}
	if up.K.ChunkBytes != p.K.ChunkBytes || up.K.NVLSChunkBytes != p.K.NVLSChunkBytes {
		t.Error("a byte size moved")
	}
	for _, s := range accuracy.Starts(p, params, 100) {
		for _, q := range params {
			if v := *q.Get(&s); v < q.Min || v > q.Max {
				t.Errorf("%s = %v outside [%v, %v]", q.Name, v, q.Min, q.Max)
			}
		}
	}
}
