package topology_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
)

// Hop is Path's latency and network crossing, bit for bit, on every GPU pair of
// every catalog system, on one and on four nodes a leaf.
func TestHopLikePath(t *testing.T) {
	for _, spec := range catalog.Systems() {
		for _, perLeaf := range []int{1, 4} {
			s := spec
			s.Network.NodesPerLeaf = perLeaf
			s.Nodes = max(3, min(12, 256/s.GPUsPerNode))
			if d := s.Intra.DomainNodes; d > 1 {
				s.Nodes = 2*d + 1
			}
			c, err := s.Build()
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			for src := range c.GPUs() {
				for dst := range c.GPUs() {
					_, wl, wc := c.Path(src, dst, nil)
					gl, gc := c.Hop(src, dst)
					if math.Float64bits(wl) != math.Float64bits(gl) || wc != gc {
						t.Fatalf("%s, %d a leaf, %d→%d: Path %v %v, Hop %v %v", s.Name, perLeaf, src, dst, wl, wc, gl, gc)
					}
				}
			}
		}
	}
}
