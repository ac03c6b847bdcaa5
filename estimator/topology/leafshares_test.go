package topology_test

import (
	"strings"
	"testing"
)

// A leaf share scales that leaf's uplinks and the spine's downlinks into it, and
// nothing else; the copy keeps its base (rank maps of the base hold for it) and
// says why; bad shares and leaves are refused.
func TestWithLeafShares(t *testing.T) {
	s := spec()
	s.Nodes, s.Network.NodesPerLeaf, s.Network.Oversubscription, s.Network.RailOptimized = 4, 2, 4, false
	c := build(t, s)
	if c.Leaves() != 2 {
		t.Fatalf("%d leaves, want 2", c.Leaves())
	}
	l, err := c.WithLeafShares(map[int]float64{1: 0.25}, "busy neighbours")
	if err != nil {
		t.Fatal(err)
	}
	if l.Base() != c || l.Loaded != "busy neighbours" || c.Loaded != "" {
		t.Errorf("base %p (want %p), loaded %q", l.Base(), c, l.Loaded)
	}
	// A transfer from leaf 0 to leaf 1 crosses leaf 0's uplinks and leaf 1's
	// downlinks: only the second is scaled.
	path, _, _ := c.Path(0, 3*s.GPUsPerNode, nil)
	var scaled int
	for _, r := range path {
		if got, want := l.Capacity(r), c.Capacity(r); got != want {
			scaled++
			if got != want*0.25 {
				t.Errorf("%s: %v of %v", c.Describe(r), got, want)
			}
		}
	}
	if scaled != 1 {
		t.Errorf("%d resources of the path scaled, want 1 (leaf 1's downlinks)", scaled)
	}
	for _, bad := range []map[int]float64{{2: 0.5}, {0: 0}, {0: 1.5}} {
		if _, err := c.WithLeafShares(bad, ""); err == nil || !strings.Contains(err.Error(), "leaf") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
