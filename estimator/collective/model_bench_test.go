package collective_test

import (
	"fmt"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
)

// BenchmarkEstimate times the closed-form estimate of one collective on a placed
// group — what the step-cost model and the planner call on their hot path. Auto
// prices every applicable algorithm and protocol and keeps the cheapest.
func BenchmarkEstimate(b *testing.B) {
	cases := []struct {
		system        string
		nodes, per    int
		op            collective.Op
		size          float64
		algo          collective.Algorithm
		concurrent    bool
		railsOnlyName string
	}{
		{"dgx-h100", 1, 8, collective.AllReduce, 64 << 20, collective.Auto, false, ""},
		{"dgx-h100", 1, 8, collective.AllReduce, 64 << 20, collective.Ring, false, ""},
		{"dgx-h100", 16, 8, collective.AllReduce, 1 << 30, collective.Auto, false, ""},
		{"dgx-h100", 16, 8, collective.ReduceScatter, 1 << 30, collective.Auto, false, ""},
		{"dgx-h100", 16, 1, collective.AllReduce, 1 << 30, collective.Auto, true, ""},
		{"dgx-h100", 4, 8, collective.AllToAll, 256 << 20, collective.Auto, false, ""},
	}
	for _, c := range cases {
		cl := mustCluster(b, c.system, c.nodes, nil)
		g, sib, err := collective.NodeGroups(cl, c.nodes, c.per, c.concurrent)
		if err != nil {
			b.Fatal(err)
		}
		p := mustPlace(b, cl, g, sib)
		m := collective.NewModel(collective.Default())
		name := fmt.Sprintf("%s/ranks=%d/groups=%d/op=%s/algo=%s/size=%.0fMiB", c.system, p.N(), len(p.Siblings), c.op, c.algo, c.size/(1<<20))
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			opts := collective.Options{Algo: c.algo}
			var sink float64
			for b.Loop() {
				e, err := m.Estimate(p, c.op, c.size, opts)
				if err != nil {
					b.Fatal(err)
				}
				sink += e.TimeUs
			}
			if sink <= 0 {
				b.Fatal("no time")
			}
		})
	}
}

// BenchmarkPlace times building a placement (its contention coefficients), which
// callers do once per group shape and reuse.
func BenchmarkPlace(b *testing.B) {
	for _, nodes := range []int{1, 16, 64} {
		cl := mustCluster(b, "dgx-h100", nodes, nil)
		rails, err := collective.RailGroups(cl, nodes)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("dgx-h100/dp-rails/nodes=%d", nodes), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := collective.Place(cl, rails[0], rails[1:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
