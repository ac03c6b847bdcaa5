package collective

import (
	"fmt"
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/topology"
)

// autoEvery is Auto's choice by pricing every algorithm that can run the call —
// Estimate's loop before autoBest — the reference autoBest must equal.
func autoEvery(m *Model, p *Placement, op Op, bytes float64, o Options) Estimate {
	best := Estimate{TimeUs: math.Inf(1)}
	for a := Ring; a < numAlgos; a++ {
		if !m.autoRuns(p, op, a) {
			continue
		}
		if e := m.bestProtocol(p, op, a, bytes, o); e.TimeUs < best.TimeUs {
			best = e
		}
	}
	return best
}

// boundShape is a group and the groups running with it, on a cluster.
type boundShape struct {
	name   string
	groups [][]int
}

// boundShapes are the groups the tests below place on cluster c of 96 nodes: one
// node, part of a node, two nodes, half nodes with the other halves at once, the
// rails, two pipeline stages of 20 nodes each, a group with an uneven last node,
// and every GPU of the cluster.
func boundShapes(t *testing.T, c *topology.Cluster) []boundShape {
	t.Helper()
	g := c.Spec.GPUsPerNode
	nodes := func(n, perNode int, concurrent bool) [][]int {
		grp, sib, err := NodeGroups(c, n, perNode, concurrent)
		if err != nil {
			t.Fatal(err)
		}
		return append([][]int{grp}, sib...)
	}
	span := func(from, n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = from + i
		}
		return out
	}
	rails, err := RailGroups(c, 8)
	if err != nil {
		t.Fatal(err)
	}
	out := []boundShape{
		{"one node", nodes(1, g, false)},
		{"two nodes", nodes(2, g, false)},
		{"rails of 8 nodes", rails},
		{"two stages of 20 nodes", [][]int{span(0, 20*g), span(20*g, 20*g)}},
		{"every GPU", [][]int{span(0, 96*g)}},
	}
	if g >= 4 {
		out = append(out,
			boundShape{"3 GPUs of a node", [][]int{span(0, 3)}},
			boundShape{"half nodes of 4 nodes, with the other halves", nodes(4, g/2, true)},
			boundShape{"2.5 nodes", [][]int{span(0, 2*g+g/2)}})
	}
	return out
}

// place places groups afresh (no coefficient computed yet).
func place(t *testing.T, c *topology.Cluster, groups [][]int) *Placement {
	t.Helper()
	p, err := Place(c, groups[0], groups[1:])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// autoBest prices every call as pricing every algorithm does, to the bit, on every
// catalog system and group shape, operation, size, launch mode and protocol
// option; and its bounds are bounds: below the price of every protocol wherever
// the algorithm runs, and the tree's hops within the double tree's pipeline.
func TestAutoBestLikeEveryAlgorithm(t *testing.T) {
	m := NewModel(Default())
	sizes := []float64{8, 1536, 96 << 10, 4 << 20, 64 << 20}
	var opts []Options
	for _, l := range []Launch{PerProcess, SingleProcess} { // the others differ from PerProcess by a constant
		opts = append(opts, Options{Launch: l})
		for _, pr := range allProtocols {
			opts = append(opts, Options{Launch: l, ForceProtocol: true, Protocol: pr})
		}
	}
	var cases, pruned [numAlgos]int
	for _, s := range catalog.Systems() {
		s.Nodes = 96
		c, err := s.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range boundShapes(t, c) {
			name := s.Name + "/" + sh.name
			ref := place(t, c, sh.groups)
			for _, op := range Ops() {
				fast := place(t, c, sh.groups) // nothing computed before autoBest asks
				for _, S := range sizes {
					for _, o := range opts {
						got, want := m.autoBest(fast, op, S, o), autoEvery(m, ref, op, S, o)
						if got != want {
							t.Fatalf("%s %s %.0f B %+v: autoBest\n  %+v\nevery algorithm\n  %+v", name, op, S, o, got, want)
						}
						for _, a := range []Algorithm{Ring, DoubleTree} {
							lb, ok := m.autoBound(ref, op, a, S, o.Launch)
							if !ok || m.why(ref, op, a) != "" {
								continue
							}
							cases[a]++
							if lb > want.TimeUs {
								pruned[a]++
							}
							for _, pr := range protocols(a) {
								if e := m.price(ref, op, a, pr, S, o.Launch); !(lb <= e.TimeUs) {
									t.Fatalf("%s %s %s %s %.0f B launch %d: bound %v above the price %v", name, op, a, pr, S, o.Launch, lb, e.TimeUs)
								}
							}
						}
					}
				}
			}
			ref.ensure(famTrees)
			h, dt := ref.treeHops(), &ref.coef.dtree
			if h.deep && dt.ok {
				t.Errorf("%s: channel 0's trees too deep, the double tree's pipeline built", name)
			}
			if dt.ok && (h.D > dt.D || h.path.lat > dt.path.lat || h.path.net > dt.path.net) {
				t.Errorf("%s: channel 0's trees %d stages, path %+v; the double tree's pipeline %d, %+v", name, h.D, h.path, dt.D, dt.path)
			}
		}
	}
	for _, a := range []Algorithm{Ring, DoubleTree} {
		t.Logf("%s: bound checked on %d calls, above Auto's choice on %d", a, cases[a], pruned[a])
		if pruned[a] == 0 {
			t.Errorf("%s: the bound never exceeds Auto's choice, so it never saves a price", a)
		}
	}
}

// A latency-bound all-reduce over a pipeline stage of a large job — Transformer
// Engine's amax reduction, a kilobyte and a half — is priced without building the
// ring's coefficients where another algorithm wins on latency (on DGX H100 the NVLS
// tree, on DGX A100 the double tree beats the ring; the double tree won on DGX H100
// too until the NVLS tree's fixed cost was refitted to 12.4 µs),
// and to the bit as pricing every algorithm does; a bandwidth-bound call on the
// same group builds what it needs and agrees too.
func TestAutoBestSkipsLatencyBoundBuilds(t *testing.T) {
	m := NewModel(Default())
	for _, tc := range []struct {
		system          string
		small           Algorithm
		ringless, nodbt bool
	}{
		{"dgx-h100", NVLSTree, true, false},
		{"dgx-a100", DoubleTree, true, false},
	} {
		s, err := catalog.System(tc.system)
		if err != nil {
			t.Fatal(err)
		}
		s.Nodes = 512
		c, err := s.Build()
		if err != nil {
			t.Fatal(err)
		}
		stage := c.GPUs() / 2 // two pipeline stages of 256 nodes
		groups := [][]int{make([]int, stage), make([]int, stage)}
		for i := range stage {
			groups[0][i], groups[1][i] = i, stage+i
		}
		fast, ref := place(t, c, groups), place(t, c, groups)
		for _, S := range []float64{1536, 64 << 20} {
			got := m.autoBest(fast, AllReduce, S, Options{}) // where NCCL has no choice of its own
			if want := autoEvery(m, ref, AllReduce, S, Options{}); got != want {
				t.Fatalf("%s, %.0f B: Estimate\n  %+v\nevery algorithm\n  %+v", tc.system, S, got, want)
			}
			if S > 1536 {
				continue
			}
			what := fmt.Sprintf("%s, %.0f B all-reduce over %d GPUs", tc.system, S, stage)
			if got.Algo != tc.small {
				t.Errorf("%s: %s chosen, want %s", what, got.Algo, tc.small)
			}
			if tc.ringless && fast.coef.ring != (coef{}) {
				t.Errorf("%s: the ring's coefficients were computed", what)
			}
			if tc.nodbt && fast.coef.dtree.D != 0 {
				t.Errorf("%s: the double tree's pipeline was built", what)
			}
		}
	}
}
