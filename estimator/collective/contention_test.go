package collective_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

func estimate(t *testing.T, p *collective.Placement, op collective.Op, size float64, algo collective.Algorithm) collective.Estimate {
	t.Helper()
	e, err := collective.NewModel(collective.Default()).Estimate(p, op, size, collective.Options{Algo: algo})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The data-parallel rings of a TP=8 job each use their own rail: on a DGX (one NIC
// per GPU) running all 8 at once costs the same as running one; on a p4d (two GPUs
// per NIC) the concurrent rings share NICs and the bandwidth part doubles.
func TestConcurrentGroupsShareNICs(t *testing.T) {
	const size = 1 << 30
	for _, tc := range []struct {
		system string
		slow   float64 // expected bandwidth slowdown with all rails busy
	}{
		{"dgx-h100", 1},
		{"aws-p4d", 2},
	} {
		c := mustCluster(t, tc.system, 4, nil)
		rails, err := collective.RailGroups(c, 4)
		if err != nil {
			t.Fatal(err)
		}
		alone := estimate(t, mustPlace(t, c, rails[0], nil), collective.AllReduce, size, collective.Ring)
		shared := estimate(t, mustPlace(t, c, rails[0], rails[1:]), collective.AllReduce, size, collective.Ring)
		got := (shared.TimeUs - shared.LatencyUs) / (alone.TimeUs - alone.LatencyUs)
		if math.Abs(got-tc.slow) > 0.01 {
			t.Errorf("%s: 8 concurrent rings take %.3f× the bandwidth time of one, want %.1f×", tc.system, got, tc.slow)
		}
	}
}

// An oversubscribed spine slows traffic that crosses leaves, not traffic that stays.
func TestOversubscribedSpine(t *testing.T) {
	const size = 1 << 30
	mk := func(over float64) *topology.Cluster {
		return mustCluster(t, "dgx-h100", 4, func(s *topology.Spec) {
			s.Network = topology.Network{NodesPerLeaf: 2, Oversubscription: over}
		})
	}
	time := func(c *topology.Cluster, nodes int) float64 {
		g, sib, err := collective.NodeGroups(c, nodes, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		return estimate(t, mustPlace(t, c, g, sib), collective.AllReduce, size, collective.Ring).TimeUs
	}
	if a, b := time(mk(1), 2), time(mk(4), 2); a != b {
		t.Errorf("2 nodes under one leaf: %v µs non-blocking vs %v µs at 4:1, want equal", a, b)
	}
	if a, b := time(mk(1), 4), time(mk(4), 4); !(b > 1.5*a) {
		t.Errorf("4 nodes over 2 leaves: %v µs non-blocking vs %v µs at 4:1, want much slower", a, b)
	}
}

// The same 8-way all-reduce costs very differently inside one node and across 8.
func TestPlacementMatters(t *testing.T) {
	c := mustCluster(t, "dgx-h100", 8, nil)
	inNode, _, _ := collective.NodeGroups(c, 1, 8, false)
	rails, _ := collective.RailGroups(c, 8)
	a := estimate(t, mustPlace(t, c, inNode, nil), collective.AllReduce, 256<<20, collective.Auto)
	b := estimate(t, mustPlace(t, c, rails[0], nil), collective.AllReduce, 256<<20, collective.Auto)
	if !(b.TimeUs > 4*a.TimeUs) {
		t.Errorf("8 GPUs in one node %.0f µs (%s), one per node over 8 nodes %.0f µs (%s): want the network far slower", a.TimeUs, a.Algo, b.TimeUs, b.Algo)
	}
}

// Multi-node ring all-reduce runs at min(intra-node ring, NICs × per-NIC bandwidth):
// a ring is as fast as its slowest link (NCCL's bwIntra and bwInter, src/graph/
// tuning.cc ncclTopoTuneModel at v2.27.7-1; docs/collective.md, "The cost of a
// step", rings across nodes). The rings alternate direction node by node, so every GPU
// leaving a node does so over its own NIC and the NVLink carries only 7 of every 8
// channels' traffic (450 GB/s × 0.815 × 8/7): on DGX H100 the 8 NDR NICs are the
// bound, as nccl-tests#309 measured (a forced 2-node ring at 392.7 GB/s busbw, "the
// IB limit of our network"); with 4 NICs per node they are all the more.
func TestMultiNodeRingBound(t *testing.T) {
	for _, tc := range []struct {
		nics int
		want float64
	}{
		{8, 8 * 50 * topology.InfiniBandEfficiency},
		{4, 4 * 50 * topology.InfiniBandEfficiency},
	} {
		c := mustCluster(t, "dgx-h100", 4, func(s *topology.Spec) { s.NICs.PerNode = tc.nics })
		g, _, _ := collective.NodeGroups(c, 4, 8, false)
		e := estimate(t, mustPlace(t, c, g, nil), collective.AllReduce, 8<<30, collective.Ring)
		if rel := e.BusBWGBps/tc.want - 1; math.Abs(rel) > 0.03 {
			t.Errorf("4×8 H100 with %d NICs: ring busbw %.1f GB/s, want %.1f GB/s (%+.1f%%)", tc.nics, e.BusBWGBps, tc.want, 100*rel)
		}
	}
}

func TestEstimateRejectsBadInput(t *testing.T) {
	c := mustCluster(t, "dgx-h100", 2, nil)
	g, _, _ := collective.NodeGroups(c, 2, 8, false)
	p := mustPlace(t, c, g, nil)
	m := collective.NewModel(collective.Default())
	for name, size := range map[string]float64{"negative": -1, "NaN": math.NaN(), "infinite": math.Inf(1), "too large": 1 << 51} {
		if _, err := m.Estimate(p, collective.AllReduce, size, collective.Options{}); !invalid.Is(err) {
			t.Errorf("size %s: got %v, want a field error", name, err)
		}
	}
	if _, err := m.Estimate(p, collective.AllReduce, 1<<20, collective.Options{Algo: collective.PAT}); !errors.Is(err, collective.ErrUnsupported) {
		t.Errorf("PAT all-reduce: got %v, want ErrUnsupported", err)
	}
	if _, err := m.Estimate(p, collective.AllReduce, 1<<20, collective.Options{Algo: collective.NVLS}); !errors.Is(err, collective.ErrUnsupported) {
		t.Errorf("NVLS across nodes: got %v, want ErrUnsupported", err)
	}
	for name, group := range map[string][]int{"empty": nil, "outside": {0, 99}, "duplicate": {1, 1}} {
		if _, err := collective.Place(c, group, nil); !invalid.Is(err) {
			t.Errorf("group %s: got %v, want a field error", name, err)
		}
	}
	if _, err := collective.Place(c, []int{0, 1}, [][]int{{1, 2}}); !invalid.Is(err) {
		t.Errorf("overlapping concurrent group accepted: %v", err)
	}
	if _, err := collective.Place(c, []int{0, 1}, [][]int{{2, 3, 4}}); !invalid.Is(err) {
		t.Errorf("concurrent group of another size accepted: %v", err)
	}
	one := mustPlace(t, c, []int{3}, nil)
	if e, err := m.Estimate(one, collective.AllReduce, 1<<20, collective.Options{}); err != nil || e.TimeUs != 0 {
		t.Errorf("one rank: %+v, %v; want no communication", e, err)
	}
}

// Place recycles its per-GPU bookkeeping: a placement refused halfway through a
// concurrent group leaves nothing behind that refuses the next one on the cluster.
func TestPlaceAfterARefusal(t *testing.T) {
	c := mustCluster(t, "dgx-h100", 2, nil)
	for range 3 {
		_, err := collective.Place(c, []int{0, 1, 2, 15}, [][]int{{4, 5, 6, 7}, {8, 9, 10, 15}})
		if !invalid.Is(err) {
			t.Fatalf("overlapping groups: %v", err)
		}
		// Every GPU the refused call touched, in new groups.
		if _, err := collective.Place(c, []int{0, 1, 2, 3}, [][]int{{8, 9, 10, 11}, {4, 5, 6, 7}}); err != nil {
			t.Fatalf("after a refusal: %v", err)
		}
	}
}

// One rule for a node group: NodeGroups and RailGroups refuse by CheckNodeGroup's
// words (the service checks it on its own before it sizes a cluster by nodes),
// and refuse on their own only more nodes than the cluster has.
func TestNodeGroupRule(t *testing.T) {
	c := mustCluster(t, "dgx-h100", 2, nil)
	for _, tc := range []struct {
		nodes, perNode int
		field          string // "" for accepted
	}{
		{1, 8, ""}, {2, 4, ""}, {2, 1, ""},
		{0, 8, "nodes"}, {-4, 8, "nodes"},
		{1, 3, "gpus_per_node"}, {1, 0, "gpus_per_node"}, {1, -2, "gpus_per_node"}, {1, 16, "gpus_per_node"},
	} {
		rule := collective.CheckNodeGroup(tc.nodes, tc.perNode, 8)
		got := ""
		var fe *invalid.Error
		if errors.As(rule, &fe) {
			got = fe.Field
		} else if rule != nil {
			got = "not a field error"
		}
		if got != tc.field {
			t.Errorf("nodes %d × %d: %v, want a violation of %q", tc.nodes, tc.perNode, rule, tc.field)
		}
		_, _, err := collective.NodeGroups(c, tc.nodes, tc.perNode, true)
		if (err == nil) != (rule == nil) || err != nil && err.Error() != rule.Error() {
			t.Errorf("nodes %d × %d: NodeGroups %v, the rule %v", tc.nodes, tc.perNode, err, rule)
		}
		if tc.perNode == 8 {
			if _, err := collective.RailGroups(c, tc.nodes); (err == nil) != (rule == nil) || err != nil && err.Error() != rule.Error() {
				t.Errorf("nodes %d: RailGroups %v, the rule %v", tc.nodes, err, rule)
			}
		}
	}
	// The fit in the cluster is NodeGroups' own.
	if _, _, err := collective.NodeGroups(c, 3, 8, false); !invalid.Is(err) || collective.CheckNodeGroup(3, 8, 8) != nil {
		t.Errorf("3 nodes of a 2-node cluster: %v", err)
	}
	if _, err := collective.RailGroups(c, 3); !invalid.Is(err) {
		t.Errorf("3 rails' nodes of a 2-node cluster: %v", err)
	}
}

// One rule for what Auto can run: AutoRuns (the service refuses a request by it
// before pricing) says yes exactly where Estimate under Auto prices the operation
// on an uncalibrated cluster, and no where it refuses it.
func TestAutoRunsIsEstimates(t *testing.T) {
	m := collective.NewModel(collective.Default())
	refused := 0
	// 65 nodes of 8: 520 ranks, over a broadcast/reduce chain's 513.
	for _, sys := range []string{"dgx-h100", "dgx-a100", "gb200-nvl72"} {
		c := mustCluster(t, sys, 65, nil)
		g := c.Spec.GPUsPerNode
		for _, shape := range [][2]int{{1, g}, {2, g}, {4, g}, {4, 1}, {3, 2}, {65, 8}} {
			group, _, err := collective.NodeGroups(c, shape[0], shape[1], false)
			if err != nil {
				continue
			}
			p := mustPlace(t, c, group, nil)
			for op := range collective.Op(7) {
				_, err := m.Estimate(p, op, 1<<20, collective.Options{})
				if err != nil && !errors.Is(err, collective.ErrUnsupported) {
					t.Fatalf("%s %v %s: %v", sys, shape, op, err)
				}
				if got := m.AutoRuns(p, op); got != (err == nil) {
					t.Errorf("%s, %d nodes × %d, %s: AutoRuns %v, Estimate %v", sys, shape[0], shape[1], op, got, err)
				}
				if err != nil {
					refused++
				}
			}
		}
	}
	if refused == 0 {
		t.Error("no case where Auto has no algorithm: the check above compared only yeses")
	}
}
