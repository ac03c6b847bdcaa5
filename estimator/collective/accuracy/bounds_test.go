package accuracy_test

import (
	"math"
	"slices"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/collective/accuracy"
	"github.com/stepcost/stepcost/estimator/topology"
)

// shipped are the constants the model ships with, as the fit sees them.
func shipped() accuracy.Knobs {
	return accuracy.Knobs{K: collective.Default(), Links: accuracy.Links{
		IntraLatencyUs: topology.NVLinkHopLatencyUs,
		RackLatencyUs:  topology.NVLinkRackHopLatencyUs,
		NetLatencyUs:   topology.NetHopLatencyUs,
		EFALatencyUs:   topology.EFAHopLatencyUs,
	}}
}

// knownAtBound are the shipped constants that still sit on a bound of their fit,
// each a piece of physics the model lacks (docs/calibration.md, "Constants at a
// bound"): Simple's fixed cost carries the 1–128 MiB slowdown of Simple rings and
// trees (A100 rings, 2–8-node trees) that no per-call cost explains, and Simple's
// network step cost is absorbed by the network hop latency. The list may only
// shrink: a constant that leaves its bound must leave the list.
var knownAtBound = []string{"BaseUs.simple", "NetStepUs.simple"}

// No shipped constant sits on a bound of its fit, but for the known ones above.
func TestNoShippedConstantAtBound(t *testing.T) {
	var at []string
	for _, p := range accuracy.AtBound(shipped(), accuracy.FitParams()) {
		at = append(at, p.Name)
		if !slices.Contains(knownAtBound, p.Name) {
			t.Errorf("%s = %g sits on a bound of its fit [%g, %g]: missing physics, not a value", p.Name, *p.Get(ptr(shipped())), p.Min, p.Max)
		}
	}
	for _, name := range knownAtBound {
		if !slices.Contains(at, name) {
			t.Errorf("%s no longer sits on a bound: take it off knownAtBound", name)
		}
	}
}

func ptr(k accuracy.Knobs) *accuracy.Knobs { return &k }

// AtBound flags values on or within a hair of either bound, and nothing else.
func TestAtBound(t *testing.T) {
	var k accuracy.Knobs
	p := accuracy.Param{Name: "x", Get: func(k *accuracy.Knobs) *float64 { return &k.K.P2PBaseUs }, Min: 0, Max: 80}
	for _, c := range []struct {
		v    float64
		want bool
	}{{0, true}, {0.05, true}, {0.5, false}, {40, false}, {79, false}, {79.5, true}, {80, true}} {
		k.K.P2PBaseUs = c.v
		if got := len(accuracy.AtBound(k, []accuracy.Param{p})) == 1; got != c.want {
			t.Errorf("value %g in [0, 80]: at bound %v, want %v", c.v, got, c.want)
		}
	}
	q := accuracy.Param{Name: "y", Get: p.Get, Min: 1024, Max: 1 << 30}
	for _, c := range []struct {
		v    float64
		want bool
	}{{1024, true}, {1030, true}, {1100, false}, {math.Pow(2, 29), false}} {
		k.K.P2PBaseUs = c.v
		if got := len(accuracy.AtBound(k, []accuracy.Param{q})) == 1; got != c.want {
			t.Errorf("value %g in [1024, 2^30]: at bound %v, want %v", c.v, got, c.want)
		}
	}
}

// Point-to-point rows of 64 KiB and less (send/recv and all-to-all, scored) are
// priced within 25 % of the published sweeps.
func TestSmallP2PWithin25Percent(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	res := accuracy.Evaluate(collective.NewModel(collective.Default()), accuracy.Cases(rows))
	n := 0
	for _, r := range res {
		if !r.Scored || r.Err != nil || r.Bytes > 64<<10 || (r.Op != collective.SendRecv && r.Op != collective.AllToAll) {
			continue
		}
		n++
		t.Logf("%-40s %8.0f B measured %7.2f µs, predicted %7.2f µs (%s/%s) %+.1f%%", r.Row.ID, r.Bytes, r.MeasuredUs, r.Predicted.TimeUs, r.Predicted.Algo, r.Predicted.Protocol, 100*r.RelErr)
		if !(math.Abs(r.RelErr) <= 0.25) {
			t.Errorf("%s: %+.1f%% off the measured %.2f µs", r.Row.ID, 100*r.RelErr, r.MeasuredUs)
		}
	}
	if n < 6 {
		t.Errorf("only %d small send/recv and all-to-all rows", n)
	}
}
