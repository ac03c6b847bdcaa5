package collective_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
)

// placed is a group on a cluster, with the groups that run at the same time.
type placed struct {
	name string
	p    *collective.Placement
}

func mustCluster(t testing.TB, system string, nodes int, edit func(*topology.Spec)) *topology.Cluster {
	t.Helper()
	s, err := catalog.System(system)
	if err != nil {
		t.Fatal(err)
	}
	s.Nodes = nodes
	if edit != nil {
		edit(&s)
	}
	c, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustPlace(t testing.TB, c *topology.Cluster, group []int, sib [][]int) *collective.Placement {
	t.Helper()
	p, err := collective.Place(c, group, sib)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// placements spans the shapes the closed form must handle: one node, several nodes,
// rail groups with their concurrent siblings, partial nodes, shared NICs, a mesh, a
// multi-node NVLink domain, PCIe, and an oversubscribed fat tree.
func placements(t testing.TB) []placed {
	var out []placed
	add := func(name string, c *topology.Cluster, nodes, perNode int, concurrent bool) {
		g, sib, err := collective.NodeGroups(c, nodes, perNode, concurrent)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, placed{name, mustPlace(t, c, g, sib)})
	}
	rails := func(name string, c *topology.Cluster, nodes int) {
		rs, err := collective.RailGroups(c, nodes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, placed{name, mustPlace(t, c, rs[0], rs[1:])})
	}
	h100 := mustCluster(t, "dgx-h100", 4, nil)
	add("dgx-h100/1x8", h100, 1, 8, false)
	add("dgx-h100/2x8", h100, 2, 8, false)
	add("dgx-h100/4x8", h100, 4, 8, false)
	add("dgx-h100/3x4+concurrent", h100, 3, 4, true)
	rails("dgx-h100/rails-4", h100, 4)
	a100 := mustCluster(t, "dgx-a100", 2, nil)
	add("dgx-a100/2x8", a100, 2, 8, false)
	p4d := mustCluster(t, "aws-p4d", 3, nil)
	rails("aws-p4d/rails-3 (2 GPUs per NIC)", p4d, 3)
	add("aws-p4d/3x2+concurrent", p4d, 3, 2, true)
	mi := mustCluster(t, "oci-mi300x", 2, nil)
	add("oci-mi300x/1x8 mesh", mi, 1, 8, false)
	add("oci-mi300x/2x8 mesh", mi, 2, 8, false)
	gb := mustCluster(t, "gb200-nvl72", 2, nil)
	add("gb200-nvl72/2x4 one domain", gb, 2, 4, false)
	pcie := mustCluster(t, "dgx-h100", 2, func(s *topology.Spec) {
		s.Name = "pcie-box"
		s.Intra = topology.Intra{Kind: topology.PCIe, GPUBandwidthGBps: 64}
		s.NICs.PerNode = 2
		s.Network.RailOptimized = false
	})
	add("pcie/2x8", pcie, 2, 8, false)
	fat := mustCluster(t, "dgx-h100", 6, func(s *topology.Spec) {
		s.Name = "fat-tree-2:1"
		s.Network = topology.Network{NodesPerLeaf: 2, Oversubscription: 2}
	})
	rails("fat-tree-2:1/rails-6", fat, 6)
	add("fat-tree-2:1/6x8", fat, 6, 8, false)
	return out
}

// The closed form the hot path uses must agree with pricing the explicit schedule
// transfer by transfer, within 1 %, for every applicable algorithm, operation and
// protocol on every placement. The schedule pricer is step-synchronous; ring
// broadcast and reduce and the trees stream their chunks (hop latencies paid once,
// see Model.stream), so for them the data-movement parts are compared and their
// latency is checked by TestStreamedChainLatency.
func TestClosedFormMatchesSchedule(t *testing.T) {
	const elem = 4 // bytes per element (fp32)
	m := collective.NewModel(collective.Default())
	sizes := []float64{96 << 10, 3 << 20, 48 << 20}
	checked := 0
	for _, pl := range placements(t) {
		p := pl.p
		mesh := p.Cluster.Spec.Intra.Kind == topology.Mesh
		for _, op := range collective.Ops() {
			for _, algo := range collective.Algorithms() {
				if m.Supports(p, op, algo) != nil || algo == collective.NVLSTree { // no explicit schedule: TestNVLSTree
					continue
				}
				for _, S := range sizes {
					// A whole number of elements that every rank count divides.
					elems := int64(S/elem) / int64(p.N()) * int64(p.N())
					bytes := float64(elems * elem)
					for _, pr := range []collective.Protocol{collective.Simple, collective.LL128, collective.LL} {
						opts := collective.Options{Algo: algo, ForceProtocol: true, Protocol: pr}
						e, err := m.Estimate(p, op, bytes, opts)
						if err != nil {
							t.Fatalf("%s %s %s: %v", pl.name, op, algo, err)
						}
						if e.Protocol != pr {
							continue // Simple-only algorithm, already checked
						}
						name := fmt.Sprintf("%s/%s/%s/%s/%.0fB", pl.name, op, algo, pr, bytes)
						s, err := collective.Build(op, algo, p.Shape, elems, collective.Params{
							Channels: e.Channels, Chunks: max(1, e.Chunks), Mesh: mesh,
						})
						if err != nil {
							t.Fatalf("%s: build: %v", name, err)
						}
						sc, err := m.PriceSchedule(p, s, elem, pr, opts.Launch)
						if err != nil {
							t.Fatalf("%s: price: %v", name, err)
						}
						got, want := e.TimeUs, sc.TimeUs
						if algo == collective.Tree || algo == collective.DoubleTree || algo == collective.Ring && (op == collective.Broadcast || op == collective.Reduce) {
							got, want = e.TimeUs-e.LatencyUs, 0
							for _, st := range sc.Steps {
								want += st.TimeUs - st.LatencyUs
							}
						}
						if rel := got/want - 1; !(math.Abs(rel) <= 0.01) {
							t.Errorf("%s: closed form %.2f µs, schedule %.2f µs (%+.2f%%), %d vs %d steps",
								name, got, want, 100*rel, e.Steps, len(sc.Steps))
						}
						checked++
					}
				}
			}
		}
	}
	if checked < 300 {
		t.Errorf("only %d combinations checked", checked)
	}
	t.Logf("%d (placement, op, algorithm, protocol, size) combinations agree within 1%%", checked)
}
