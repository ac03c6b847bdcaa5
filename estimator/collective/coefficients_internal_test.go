package collective

import (
	"reflect"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Groups on disjoint rails are placed by the flows of the first rail's groups alone
// (railImages); every coefficient of every family must be bit for bit the one of
// placing all of them, and groups that share a NIC, a degraded cluster or groups
// on different nodes must not take the shortcut.
func TestRailImagesPlaceLikeEveryGroup(t *testing.T) {
	cluster := func(system string, nodes, perLeaf int) *topology.Cluster {
		t.Helper()
		s, err := catalog.System(system)
		if err != nil {
			t.Fatal(err)
		}
		s.Nodes = nodes
		if perLeaf > 0 {
			s.Network.NodesPerLeaf = perLeaf
		}
		c, err := s.Build()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// rails returns, for each local index, the group of that GPU on the given nodes.
	rails := func(c *topology.Cluster, locals, nodes []int) [][]int {
		g := c.Spec.GPUsPerNode
		out := make([][]int, len(locals))
		for j, l := range locals {
			for _, n := range nodes {
				out[j] = append(out[j], n*g+l)
			}
		}
		return out
	}
	seq := func(n, step int) []int {
		var out []int
		for i := 0; i < n; i += step {
			out = append(out, i)
		}
		return out
	}
	// pairs returns, node by node (or local index by local index when byRail), the
	// pairs of GPUs of each local index on node n and node n+off: the exchanges of
	// a pipeline or context-parallel group of two, thousands of them a rail.
	pairs := func(c *topology.Cluster, locals []int, nodes, off int, byRail bool) [][]int {
		g := c.Spec.GPUsPerNode
		var out [][]int
		if byRail {
			for _, l := range locals {
				for n := 0; n+off < nodes; n += 2 * off {
					for k := range off {
						out = append(out, []int{(n+k)*g + l, (n+k+off)*g + l})
					}
				}
			}
			return out
		}
		for n := 0; n+off < nodes; n += 2 * off {
			for k := range off {
				for _, l := range locals {
					out = append(out, []int{(n+k)*g + l, (n+k+off)*g + l})
				}
			}
		}
		return out
	}
	// multi returns, for each set of local indices, the group of those GPUs on the
	// given nodes (TP 4's data-parallel groups hold two GPUs of each node).
	multi := func(c *topology.Cluster, sets [][]int, nodes []int) [][]int {
		g := c.Spec.GPUsPerNode
		out := make([][]int, len(sets))
		for j, set := range sets {
			for _, n := range nodes {
				for _, l := range set {
					out[j] = append(out[j], n*g+l)
				}
			}
		}
		return out
	}
	dgx := cluster("dgx-h100", 37, 4) // ten leaves per rail, the last one short
	degraded, err := dgx.WithDegradedNICs(3, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	nvl := cluster("gb200-nvl72", 40, 0) // several trays a domain, a domain not full
	p4d := cluster("aws-p4d", 12, 4)     // two GPUs a NIC, one network plane
	for _, tc := range []struct {
		name   string
		c      *topology.Cluster
		groups [][]int
		images bool
	}{
		{"dgx-h100 eight rails", dgx, rails(dgx, seq(8, 1), seq(37, 1)), true},
		{"dgx-h100 three rails, every other node", dgx, rails(dgx, []int{5, 0, 2}, seq(37, 2)), true},
		{"dgx-h100 two rails, two nodes", dgx, rails(dgx, []int{1, 6}, []int{4, 30}), true},
		{"gb200-nvl72 four rails", nvl, rails(nvl, seq(4, 1), seq(40, 1)), true},
		{"gb200-nvl72 two rails inside a domain and across", nvl, rails(nvl, []int{1, 3}, seq(22, 3)), true},
		{"dgx-h100 pairs of neighbouring nodes, eight rails", dgx, pairs(dgx, seq(8, 1), 36, 1, false), true},
		{"dgx-h100 pairs 9 nodes apart, three rails, rail by rail", dgx, pairs(dgx, []int{6, 1, 3}, 36, 9, true), true},
		{"gb200-nvl72 pairs inside a domain and across", nvl, pairs(nvl, seq(4, 1), 40, 5, false), true},
		{"dgx-h100 pairs, one rail's on other nodes", dgx, append(pairs(dgx, []int{0}, 36, 1, false), pairs(dgx, []int{1}, 36, 2, false)[:18]...), false},
		{"dgx-h100 pairs, a rail with fewer", dgx, append(pairs(dgx, []int{0}, 36, 1, false), pairs(dgx, []int{1}, 36, 1, false)[:17]...), false},
		{"dgx-h100 pairs across local indices", dgx, [][]int{{0, 9}, {1, 10}, {2, 11}}, false},
		{"dgx-h100 two GPUs a node, four groups", dgx, multi(dgx, [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}, seq(37, 1)), true},
		{"dgx-h100 four GPUs a node, every third node", dgx, multi(dgx, [][]int{{0, 2, 4, 6}, {1, 3, 5, 7}}, seq(37, 3)), true},
		{"dgx-h100 two GPUs a node, not a shift", dgx, multi(dgx, [][]int{{0, 4}, {1, 7}, {2, 5}}, seq(37, 2)), true},
		{"gb200-nvl72 two GPUs a tray", nvl, multi(nvl, [][]int{{0, 1}, {2, 3}}, seq(40, 1)), true},
		{"dgx-h100 two GPUs a node, other indices on other nodes", dgx, [][]int{{0, 4, 8, 12}, {1, 5, 10, 14}}, false},
		{"aws-p4d two GPUs a node, NICs shared", p4d, multi(p4d, [][]int{{0, 2}, {4, 6}}, seq(12, 1)), false},
		{"dgx-h100 with a degraded NIC", degraded, rails(degraded, seq(8, 1), seq(37, 1)), false},
		{"aws-p4d, NICs shared", p4d, rails(p4d, seq(8, 1), seq(12, 1)), false},
		{"aws-p4d, not rail-optimised", p4d, rails(p4d, seq(8, 2), seq(12, 1)), false},
		{"dgx-h100 groups on different nodes", dgx, [][]int{{0, 8, 16}, {25, 33, 41}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, err := Place(tc.c, tc.groups[0], tc.groups[1:])
			if err != nil {
				t.Fatal(err)
			}
			if fast.railImages != tc.images {
				t.Fatalf("railImages = %v, want %v", fast.railImages, tc.images)
			}
			all, err := Place(tc.c, tc.groups[0], tc.groups[1:])
			if err != nil {
				t.Fatal(err)
			}
			all.railImages = false
			for f := range numFamilies {
				fast.ensure(f)
				all.ensure(f)
			}
			if !reflect.DeepEqual(fast.coef, all.coef) {
				t.Errorf("coefficients differ:\n  images %+v\n  every group %+v", fast.coef, all.coef)
			}
		})
	}
}
