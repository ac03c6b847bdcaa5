package collective_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
)

// A cluster that states no NCCL release is priced by one release's rules, the one
// collective.LibraryRelease names: NCCL 2.27's. Each release-dependent rule takes
// that release when none is stated — the NVLS channels of 2.27 on (24 inside a
// scale-up domain, 32 across), the p2p LL threshold of 2.22–2.28, the net peers'
// channels of 2.28 and before, and the NVLS tree tables and Blackwell tree LL128
// ceilings from before 2.28 — so every operation, size and system must price exactly
// as a cluster stating 2.27 does. A rule that took another release's behaviour for
// an unstated cluster would make the answer's statement of its rules untrue.
func TestUnstatedReleaseIsNCCL227(t *testing.T) {
	m := collective.NewModel(collective.Default())
	for _, sys := range []struct {
		name         string
		nodes, ranks int
	}{
		{"hgx-b200", 1, 8}, {"hgx-b200", 2, 16}, {"hgx-b200", 4, 32},
		{"dgx-h100", 4, 32}, {"gb200-nvl72", 18, 72}, {"gb300-nvl72", 2, 8},
	} {
		cluster := func(nccl string) *topology.Cluster {
			return mustCluster(t, sys.name, sys.nodes, func(s *topology.Spec) { s.NCCL = nccl })
		}
		unstated, stated := cluster(""), cluster("2.27")
		perNode := sys.ranks / sys.nodes
		place := func(c *topology.Cluster) *collective.Placement {
			g, sib, err := collective.NodeGroups(c, sys.nodes, perNode, false)
			if err != nil {
				t.Fatal(err)
			}
			return mustPlace(t, c, g, sib)
		}
		pu, ps := place(unstated), place(stated)
		for _, op := range collective.Ops() {
			for _, bytes := range []float64{8, 64 << 10, 1 << 20, 32 << 20, 1 << 30} {
				eu, err := m.Estimate(pu, op, bytes, collective.Options{})
				if err != nil {
					t.Fatal(err)
				}
				es, err := m.Estimate(ps, op, bytes, collective.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if eu.TimeUs != es.TimeUs {
					t.Errorf("%s, %d ranks, %v of %.0f B: %.3f µs stating no release, %.3f µs stating 2.27", sys.name, sys.ranks, op, bytes, eu.TimeUs, es.TimeUs)
				}
			}
		}
	}
	if got := collective.LibraryRelease(topology.Spec{}); got != "NCCL 2.27's rules: the cluster states no release (nccl)" {
		t.Errorf("LibraryRelease of a spec stating none = %q", got)
	}
}
