package collective

import (
	"fmt"
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/topology"
)

// The coefficients placed one unit of each class (units.go) are bit for bit
// those of every flow placed, on every catalog system, for groups of every stride
// and size a rank grid gives (tensor, data, pipeline and context groups alike),
// on contiguous nodes and on nodes with holes (a free map), on healthy clusters
// and on degraded or loaded ones (where every flow is placed anyway).
func TestUnitClassesLikeEveryFlow(t *testing.T) {
	defer func(m, u int) { minUnitFlows, minUnits = m, u }(minUnitFlows, minUnits)
	minUnitFlows, minUnits = 0, 3 // small patterns too
	before := unitClassFlushes.Load()
	cases := 0
	for _, spec := range catalog.Systems() {
		for _, perLeaf := range []int{1, 4} {
			s := spec
			s.Network.NodesPerLeaf = perLeaf
			dom := max(1, s.Intra.DomainNodes)
			unitNodes := lcmInt(perLeaf, dom)
			s.Nodes = min(topology.MaxNodes, max(7*unitNodes, 6))
			if s.Nodes*s.GPUsPerNode > 1024 {
				s.Nodes = max(3*unitNodes, 1024/s.GPUsPerNode/unitNodes*unitNodes)
			}
			c, err := s.Build()
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			clusters := []*topology.Cluster{c}
			if s.NICs.PerNode > 0 {
				d, err := c.WithDegradedNICs(s.Nodes/2, 0.5)
				if err != nil {
					t.Fatal(err)
				}
				clusters = append(clusters, d)
				if c.Leaves() > 1 {
					ls, err := c.WithLeafShares(map[int]float64{1: 0.5}, "busy")
					if err != nil {
						t.Fatal(err)
					}
					clusters = append(clusters, ls)
				}
			}
			for ci, cl := range clusters {
				for _, holes := range []bool{false, true} {
					if holes && ci > 0 {
						continue
					}
					gpus := jobGPUs(cl, holes)
					J := len(gpus)
					for a, inner := range divisors(J) {
						for b, size := range divisors(J / inner) {
							// A third of the grids, every stride and size still met.
							if size < 2 || (a+b+ci)%3 != 0 {
								continue
							}
							groups := gridGroups(gpus, inner, size)
							name := fmt.Sprintf("%s/leaf%d/cluster%d/holes=%v/stride%d/size%d", s.Name, perLeaf, ci, holes, inner, size)
							compareFamilies(t, name, cl, groups)
							cases++
						}
					}
				}
			}
		}
	}
	if used := unitClassFlushes.Load() - before; used < int64(cases) {
		t.Errorf("%d of %d shapes' patterns placed by classes: the fast path was hardly tried", used, cases)
	}
	t.Logf("%d shapes, %d patterns placed by classes", cases, unitClassFlushes.Load()-before)
}

// compareFamilies computes the ring, hierarchical, send/recv and PAT families of
// the groups with and without unit classes, and compares them bit for bit.
func compareFamilies(t *testing.T, name string, c *topology.Cluster, groups [][]int) {
	t.Helper()
	coefs := [2]coefficients{}
	for i, off := range []bool{true, false} {
		unitClassesOff = off
		p, err := PlaceGroups(c, clone2(groups))
		if err != nil {
			unitClassesOff = false
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range []family{famBase, famHier, famNeighbor, famPAT} {
			computeFamily(p, f)
		}
		coefs[i] = p.coef
	}
	unitClassesOff = false
	want, got := coefs[0], coefs[1]
	check := func(what string, w, g coef) {
		if math.Float64bits(w.m) != math.Float64bits(g.m) || math.Float64bits(w.lat) != math.Float64bits(g.lat) ||
			math.Float64bits(w.net) != math.Float64bits(g.net) {
			t.Errorf("%s %s: every flow %+v, one unit a class %+v", name, what, w, g)
		}
	}
	check("ring", want.ring, got.ring)
	check("intra", want.intra, got.intra)
	check("rail", want.rail, got.rail)
	check("neighbor", want.neighbor, got.neighbor)
	for k := range want.pat {
		check(fmt.Sprintf("pat[%d]", k), want.pat[k], got.pat[k])
	}
}

// jobGPUs is the cluster's GPUs in order, or with holes: every fifth node left
// out, and the third node's first GPU (a free map that breaks the pattern).
func jobGPUs(c *topology.Cluster, holes bool) []int {
	var out []int
	g := c.Spec.GPUsPerNode
	for r := range c.GPUs() {
		if holes && (r/g%5 == 4 || r == 2*g) {
			continue
		}
		out = append(out, r)
	}
	if holes {
		// Keep a count with many divisors.
		out = out[:len(out)/(2*g)*(2*g)]
	}
	return out
}

// gridGroups are the groups of a rank grid over gpus: size ranks inner apart,
// every offset of the faster dimensions and every block of the slower ones.
func gridGroups(gpus []int, inner, size int) [][]int {
	var out [][]int
	for o := 0; o < len(gpus); o += inner * size {
		for t := range inner {
			grp := make([]int, size)
			for i := range grp {
				grp[i] = gpus[o+t+i*inner]
			}
			out = append(out, grp)
		}
	}
	return out
}

func divisors(n int) []int {
	var out []int
	for d := 1; d <= n; d++ {
		if n%d == 0 {
			out = append(out, d)
		}
	}
	return out
}

func lcmInt(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

func clone2(gs [][]int) [][]int {
	out := make([][]int, len(gs))
	for i, g := range gs {
		out[i] = append([]int(nil), g...)
	}
	return out
}
