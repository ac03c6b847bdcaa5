package collective_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
)

// RCCL's fixed costs stand to NCCL's as its tuner's base latencies do (tuning.cc
// baseLat ring, LL: RCCL 12.0 µs, NCCL 6.6 µs), the library's launch included and a
// framework's dispatch not: what one process driving 8 GPUs adds over a process per
// GPU is NCCL's extra launches scaled by 12.0/6.6 on MI355X and unscaled on H100,
// and what eager dispatch adds is the same on both.
func TestRCCLP2PFixedCost(t *testing.T) {
	k := collective.Default()
	m := collective.NewModel(k)
	latency := func(system string, launch collective.Launch) float64 {
		t.Helper()
		c := mustCluster(t, system, 1, nil)
		group, _, err := collective.NodeGroups(c, 1, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Estimate(mustPlace(t, c, group, nil), collective.AllToAll, 64, collective.Options{Launch: launch})
		if err != nil {
			t.Fatal(err)
		}
		if e.Protocol != collective.LL {
			t.Fatalf("64 B all-to-all on 8 %s: %s, want LL", system, e.Protocol)
		}
		return e.LatencyUs
	}
	extraLaunches := 8*k.LaunchUs[collective.SingleProcess] - k.LaunchUs[collective.PerProcess]
	for _, c := range []struct {
		system string
		ratio  float64
	}{{"dgx-h100", 1}, {"mi355x", 12.0 / 6.6}} {
		single := latency(c.system, collective.SingleProcess) - latency(c.system, collective.PerProcess)
		if want := extraLaunches * c.ratio; math.Abs(single-want) > 1e-6*want {
			t.Errorf("%s: one process driving 8 GPUs adds %.3f µs, want %.3f (NCCL's launches × %.3f)", c.system, single, want, c.ratio)
		}
		eager := latency(c.system, collective.Eager) - latency(c.system, collective.PerProcess)
		if want := k.LaunchUs[collective.Eager] - k.LaunchUs[collective.PerProcess]; math.Abs(eager-want) > 1e-6*want {
			t.Errorf("%s: eager dispatch adds %.3f µs, want the framework's %.3f unscaled", c.system, eager, want)
		}
	}
	// On MI355X the same call costs more than on H100 by RCCL's fixed cost alone:
	// its graph replay (no launch) pays the p2p kernel's base × (12.0/6.6 − 1) more.
	amd, nv := latency("mi355x", collective.Graph), latency("dgx-h100", collective.Graph)
	if d, want := amd-nv, k.P2PBaseUs*(12.0/6.6-1); d < want-1 || d > want+1 {
		t.Errorf("graph-replayed 64 B all-to-all: MI355X %.2f µs, H100 %.2f µs, difference %.2f, want about %.2f (paths within 1 µs)", amd, nv, d, want)
	}
}
