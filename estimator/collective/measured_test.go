package collective_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
)

// A cluster's measured algorithm ranges (topology.AlgoRange) decide the automatic
// choice where they apply — that collective, that group shape, that size range —
// and nowhere else; a range naming an algorithm the group cannot run leaves the
// model's own choice.
func TestMeasuredChoice(t *testing.T) {
	m := collective.NewModel(collective.Default())
	ranges := []topology.AlgoRange{
		{Op: "allreduce", Nodes: 2, GPUsPerNode: 8, MinBytes: 64 << 20, Algo: "ring"},
		{Op: "allreduce", Nodes: 2, GPUsPerNode: 8, MinBytes: 1 << 10, MaxBytes: 1 << 20, Algo: "nvls"}, // A100s have no NVLS
	}
	plain := mustCluster(t, "oci-bm-gpu-a100", 4, nil)
	measured := mustCluster(t, "oci-bm-gpu-a100", 4, func(s *topology.Spec) { s.Algorithms = ranges })
	place := func(c *topology.Cluster, nodes, perNode int) *collective.Placement {
		g, sib, err := collective.NodeGroups(c, nodes, perNode, false)
		if err != nil {
			t.Fatal(err)
		}
		return mustPlace(t, c, g, sib)
	}
	est := func(p *collective.Placement, op collective.Op, bytes float64, a collective.Algorithm) collective.Estimate {
		e, err := m.Estimate(p, op, bytes, collective.Options{Algo: a})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// The base model's own choice for a 1 GiB all-reduce on 2 × 8 A100 is the double
	// tree; the measured range makes it the ring, priced as the forced ring.
	if e := est(place(plain, 2, 8), collective.AllReduce, 1<<30, collective.Auto); e.Algo != collective.DoubleTree {
		t.Fatalf("base model picks %s for 1 GiB on 2 × 8 A100, the test expects dbtree", e.Algo)
	}
	p := place(measured, 2, 8)
	got, ring := est(p, collective.AllReduce, 1<<30, collective.Auto), est(p, collective.AllReduce, 1<<30, collective.Ring)
	if got.Algo != collective.Ring || got.TimeUs != ring.TimeUs || got.Protocol != ring.Protocol {
		t.Errorf("1 GiB on 2 × 8 with a measured ring range: %s/%s %.1f µs, want ring %.1f µs", got.Algo, got.Protocol, got.TimeUs, ring.TimeUs)
	}
	for _, tc := range []struct {
		name       string
		nodes, per int
		op         collective.Op
		bytes      float64
	}{
		{"below the range", 2, 8, collective.AllReduce, 32 << 20},
		{"another node count", 4, 8, collective.AllReduce, 1 << 30},
		{"another GPUs per node", 2, 4, collective.AllReduce, 1 << 30},
		{"another collective", 2, 8, collective.AllGather, 1 << 30},
		{"an algorithm the group cannot run", 2, 8, collective.AllReduce, 64 << 10},
	} {
		a := est(place(plain, tc.nodes, tc.per), tc.op, tc.bytes, collective.Auto)
		b := est(place(measured, tc.nodes, tc.per), tc.op, tc.bytes, collective.Auto)
		if a.Algo != b.Algo || a.TimeUs != b.TimeUs {
			t.Errorf("%s: %s %.1f µs with the ranges, %s %.1f µs without: the ranges must not apply", tc.name, b.Algo, b.TimeUs, a.Algo, a.TimeUs)
		}
	}
}
