package collective_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
)

// On p5 and p6-b200, AWS's OFI tuner forces the algorithm and protocol of an
// all-reduce on 3 nodes or more from its measured regions (efa.go); on 2 nodes, or
// with NCCL_PROTO set, NCCL's own choice (here: the cheapest) runs.
func TestOFITunerRegions(t *testing.T) {
	m := collective.NewModel(collective.Default())
	price := func(system string, nodes int, size float64, o collective.Options) collective.Estimate {
		t.Helper()
		c := mustCluster(t, system, nodes, nil)
		group, _, err := collective.NodeGroups(c, nodes, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Estimate(mustPlace(t, c, group, nil), collective.AllReduce, size, o)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	const MiB = 1 << 20
	for _, c := range []struct {
		system string
		nodes  int
		size   float64
		algo   collective.Algorithm
		proto  collective.Protocol
		why    string
	}{
		// p5/p5e: TREE/LL128 below the edge (30 MiB, 16 ranks)–(36 MiB, 32 ranks)–(112 MiB, 64 ranks)
		{"aws-p5", 4, 8, collective.DoubleTree, collective.LL128, "p5 has no LL region"},
		{"aws-p5", 4, 1 * MiB, collective.DoubleTree, collective.LL128, "below 36 MiB at 32 ranks"},
		{"aws-p5", 8, 64 * MiB, collective.DoubleTree, collective.LL128, "below 112 MiB at 64 ranks"},
		// RING/LL128 between that edge and (1 GiB, 17 ranks)–(2 GiB, 64 ranks)
		{"aws-p5", 4, 64 * MiB, collective.Ring, collective.LL128, "above 36 MiB at 32 ranks"},
		// p6-b200: TREE/LL up to 384 KiB at every rank count, TREE/LL128 up to
		// (4.5 MiB, 16 ranks)–(17.5 MiB, 32 ranks), RING/LL128 in the band above at 32–128 ranks
		{"aws-p6-b200", 4, 256 << 10, collective.DoubleTree, collective.LL, "below 384 KiB"},
		{"aws-p6-b200", 4, 4 * MiB, collective.DoubleTree, collective.LL128, "384 KiB to 17.5 MiB at 32 ranks"},
		{"aws-p6-b200", 4, 64 * MiB, collective.Ring, collective.LL128, "17.5–127.5 MiB at 32 ranks"},
		{"aws-p6-b200", 4, 1 << 30, collective.Ring, collective.Simple, "right of the line (415 MiB, 32)–(1023 MiB, 64)"},
	} {
		e := price(c.system, c.nodes, c.size, collective.Options{})
		if e.Algo != c.algo || e.Protocol != c.proto {
			t.Errorf("%d×%s all-reduce of %.0f B: %s/%s, want %s/%s (%s)", c.nodes, c.system, c.size, e.Algo, e.Protocol, c.algo, c.proto, c.why)
		}
	}
	// One GPU per node (a tensor-parallel job's data-parallel groups) has regions of
	// its own.
	one := func(system string, nodes int, size float64) collective.Estimate {
		t.Helper()
		c := mustCluster(t, system, nodes, nil)
		group, _, err := collective.NodeGroups(c, nodes, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Estimate(mustPlace(t, c, group, nil), collective.AllReduce, size, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, c := range []struct {
		system string
		nodes  int
		size   float64
		algo   collective.Algorithm
		proto  collective.Protocol
		why    string
	}{
		// p5/p5e: RING/LL128 below the line (4.5 MiB, 2 ranks)–(257 MiB, 128 ranks), TREE/LL128
		// from 16 ranks below (2.3 MiB, 16)–(9.5 MiB, 64)–(114 MiB, 128), RING/Simple above
		{"aws-p5", 4, 1 * MiB, collective.Ring, collective.LL128, "below 8.9 MiB at 4 ranks"},
		{"aws-p5", 4, 64 * MiB, collective.Ring, collective.Simple, "above 8.9 MiB at 4 ranks"},
		{"aws-p5", 64, 4 * MiB, collective.DoubleTree, collective.LL128, "below 9.5 MiB at 64 ranks"},
		{"aws-p5", 64, 64 * MiB, collective.Ring, collective.LL128, "9.5–131 MiB at 64 ranks"},
		// p6-b200: TREE/LL up to 32 KiB, TREE/LL128 up to (128 KiB, 2)–(8 MiB, 128), RING/LL128
		// up to (3 MiB, 2)–(284 MiB, 128), RING/Simple above
		{"aws-p6-b200", 4, 16 << 10, collective.DoubleTree, collective.LL, "below 32 KiB"},
		{"aws-p6-b200", 4, 128 << 10, collective.DoubleTree, collective.LL128, "32–256 KiB at 4 ranks"},
		{"aws-p6-b200", 4, 1 * MiB, collective.Ring, collective.LL128, "256 KiB–6.3 MiB at 4 ranks"},
		{"aws-p6-b200", 4, 64 * MiB, collective.Ring, collective.Simple, "above 6.3 MiB at 4 ranks"},
	} {
		e := one(c.system, c.nodes, c.size)
		if e.Algo != c.algo || e.Protocol != c.proto {
			t.Errorf("%d×%s one GPU each, all-reduce of %.0f B: %s/%s, want %s/%s (%s)", c.nodes, c.system, c.size, e.Algo, e.Protocol, c.algo, c.proto, c.why)
		}
	}
	// Two nodes: the plugin leaves the choice to NCCL — NCCL's own, as on IB (the
	// NVLS tree at 1 MiB, where the regions of 3 nodes on would force the double
	// tree with LL128). NCCL's tuning does not see EFA's proxy cost (efaproxy.go),
	// so its choice is not the model's cheapest there.
	two := price("aws-p5", 2, 1*MiB, collective.Options{})
	if two.Algo != collective.NVLSTree || two.Protocol != collective.Simple {
		t.Errorf("2×p5 1 MiB: chosen %s/%s, want NCCL's own nvlstree/simple: the tuner must not apply on 2 nodes", two.Algo, two.Protocol)
	}
	// A calibrated cluster's measured choice comes first.
	{
		c := mustCluster(t, "aws-p5", 4, func(s *topology.Spec) {
			s.Algorithms = []topology.AlgoRange{{Op: "allreduce", Algo: "nvlstree"}}
		})
		group, _, err := collective.NodeGroups(c, 4, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Estimate(mustPlace(t, c, group, nil), collective.AllReduce, 1*MiB, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e.Algo != collective.NVLSTree {
			t.Errorf("4×p5 1 MiB with a measured nvlstree range: %s/%s, want the measured choice", e.Algo, e.Protocol)
		}
	}
	// NCCL_PROTO set: the plugin does not tune.
	if e := price("aws-p5", 4, 1*MiB, collective.Options{ForceProtocol: true, Protocol: collective.Simple}); e.Protocol != collective.Simple {
		t.Errorf("4×p5 1 MiB with Simple forced: %s/%s", e.Algo, e.Protocol)
	}
	// p4d has no regions (and runs Simple only across nodes).
	if e := price("aws-p4d", 4, 1*MiB, collective.Options{}); e.Protocol != collective.Simple {
		t.Errorf("4×p4d 1 MiB: %s/%s, want Simple", e.Algo, e.Protocol)
	}
	// The regions leave no gap up to 1 GiB: every all-reduce of 8 B–1 GiB on 3–512
	// nodes falls in one (a gap there would be a transcription error). Above, AWS's
	// own regions leave thin gaps where NCCL's choice runs (p5 at 48 ranks: ring/LL128
	// ends at 1.72 GiB, ring/Simple starts at 2.01 GiB).
	for _, system := range []string{"aws-p5", "aws-p6-b200"} {
		for _, nodes := range []int{3, 4, 6, 8, 16, 32, 64, 128, 512} {
			c := mustCluster(t, system, nodes, nil)
			for _, perNode := range []int{1, 8} {
				for s := 8.0; s <= 1<<30; s *= 2 {
					if !collective.OFITunerCovers(c, nodes, perNode, s) {
						t.Errorf("%d×%s, %d GPU(s) each: all-reduce of %.0f B falls in no region", nodes, system, perNode, s)
					}
				}
			}
		}
	}
	p5x6 := mustCluster(t, "aws-p5", 6, nil)
	for _, c := range []struct {
		gib  float64
		want bool
	}{{1.6, true}, {1.85, false}, {2.1, true}} {
		if got := collective.OFITunerCovers(p5x6, 6, 8, c.gib*(1<<30)); got != c.want {
			t.Errorf("6×p5 all-reduce of %.2f GiB in a region: %v, want %v", c.gib, got, c.want)
		}
	}
}
