package topology

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stepcost/stepcost/estimator/hardware"
)

// divisionPath is Path as it was written before its divisions became shifts
// (every node, domain and leaf found by dividing): the reference the shifts must
// reproduce on every shape, powers of two or not.
func divisionPath(c *Cluster, src, dst int, buf []int32) ([]int32, float64, bool) {
	if src == dst {
		return buf, 0, false
	}
	g := c.Spec.GPUsPerNode
	hop := func(a, b int, buf []int32) []int32 {
		if c.Spec.Intra.Kind == Mesh && a/g == b/g {
			return append(buf, int32(c.offPair+(a/g*g+a%g)*g+b%g))
		}
		return append(buf, int32(a), int32(c.offPortIn+b))
	}
	leaf := func(node, nic int) int {
		if c.Spec.Network.RailOptimized {
			return node/c.nodesLeaf*c.Spec.NICs.PerNode + nic
		}
		return node / c.nodesLeaf
	}
	sn, dn := src/g, dst/g
	if sn == dn || sn/c.domainNodes == dn/c.domainNodes {
		return hop(src, dst, buf), c.IntraLatUs, false
	}
	nics := c.Spec.NICs.PerNode
	lat := c.NetLatUs
	srcNIC, dstNIC := c.gpuNIC[src%g], c.gpuNIC[dst%g]
	if c.Spec.Network.RailOptimized && srcNIC != dstNIC {
		proxy := sn*g + c.railProxy[src%g][dstNIC]
		buf = hop(src, proxy, buf)
		lat += c.IntraLatUs
		srcNIC = dstNIC
	}
	buf = append(buf, int32(c.offNICOut+sn*nics+srcNIC), int32(c.offNICIn+dn*nics+dstNIC))
	sl, dl := leaf(sn, srcNIC), leaf(dn, dstNIC)
	if sl != dl {
		buf = append(buf, int32(c.offLeafUp+sl), int32(c.offLeafDown+dl))
		lat += c.SpineLatUs
	}
	return buf, lat, true
}

// shapes are clusters of node, domain and leaf sizes that are powers of two and
// that are not, switched and mesh, rail-optimised and not.
func shapes(t *testing.T) []*Cluster {
	t.Helper()
	gpu := hardware.GPU{Name: "H100-SXM", Arch: hardware.Hopper, PeakTFLOPS: map[hardware.DType]float64{hardware.BF16: 989}, MemoryGB: 80, MemoryBandwidthGBps: 3350, NVLinkGBps: 450}
	var out []*Cluster
	for _, g := range []int{1, 4, 6, 8} {
		for _, dom := range []int{0, 2, 3} {
			for _, leaf := range []int{2, 3, 4} {
				for _, rail := range []bool{false, true} {
					for _, kind := range []IntraKind{NVSwitch, Mesh} {
						if kind == Mesh && dom > 1 {
							continue
						}
						s := Spec{Name: "test", GPU: gpu, Nodes: 13, GPUsPerNode: g,
							Intra:   Intra{Kind: kind, DomainNodes: dom, GPUBandwidthGBps: 448},
							NICs:    NICs{PerNode: max(1, g/2), Gbps: 400, Kind: InfiniBand},
							Network: Network{RailOptimized: rail, NodesPerLeaf: leaf}}
						c, err := s.Build()
						if err != nil {
							t.Fatalf("%d GPUs a node, domain %d, leaf %d, rail %v, %s: %v", g, dom, leaf, rail, kind, err)
						}
						out = append(out, c)
					}
				}
			}
		}
	}
	return out
}

// TestPathLikeDivisions: Path, which divides by shifts where it can, gives the
// resources, latency and network crossing of the division-based reference, and
// Node and Local the node and local index, for every ordered GPU pair of 13-node
// clusters of every shape (sizes powers of two or not).
func TestPathLikeDivisions(t *testing.T) {
	for _, c := range shapes(t) {
		name := fmt.Sprintf("%d GPUs a node, domain %d, leaf %d, rail %v, %s", c.Spec.GPUsPerNode, c.domainNodes, c.nodesLeaf, c.Spec.Network.RailOptimized, c.Spec.Intra.Kind)
		for src := range c.GPUs() {
			for dst := range c.GPUs() {
				if src == 0 && (c.Node(dst) != dst/c.Spec.GPUsPerNode || c.Local(dst) != dst%c.Spec.GPUsPerNode) {
					t.Fatalf("%s: GPU %d: node %d, local %d", name, dst, c.Node(dst), c.Local(dst))
				}
				want, wlat, wnet := divisionPath(c, src, dst, nil)
				got, lat, net := c.Path(src, dst, nil)
				if !slices.Equal(got, want) || lat != wlat || net != wnet {
					t.Fatalf("%s: Path(%d, %d) = %v %v %v, want %v %v %v", name, src, dst, got, lat, net, want, wlat, wnet)
				}
			}
		}
	}
}

// TestMaxUtilisationLikeEveryResource: the largest load over capacity found by
// kind is the one found resource by resource, bit for bit, on healthy clusters
// and degraded ones, for random loads on random resources (repeats included).
func TestMaxUtilisationLikeEveryResource(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range shapes(t) {
		degraded, err := c.WithDegradedNICs(5, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range []*Cluster{c, degraded} {
			load := make([]float64, cl.Resources())
			for range 50 {
				var touched []int32
				for range 1 + rng.IntN(20) {
					r := int32(rng.IntN(cl.Resources()))
					if cl.Capacity(r) == 0 {
						continue // no such link (a mesh's pair links on one GPU a node)
					}
					load[r] += float64(1+rng.IntN(7)) * rng.Float64()
					touched = append(touched, r)
				}
				want := 0.0
				for _, r := range touched {
					want = max(want, load[r]/cl.Capacity(r))
				}
				if got := cl.MaxUtilisation(load, touched); got != want {
					t.Fatalf("%s: MaxUtilisation %v, resource by resource %v", cl.Spec.Name, got, want)
				}
				clear(load)
			}
		}
	}
}
