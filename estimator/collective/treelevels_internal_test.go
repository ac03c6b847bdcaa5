package collective

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// treeLevels gives the depths of TreeDepths and the heights of TreeHeights (two
// other walks), and the root's height and the largest depth, on every channel's
// two trees of shapes with even and uneven nodes, on a mesh and not, and on
// random trees with up to 2 000 ranks.
func TestTreeLevelsLikeDepthsAndHeights(t *testing.T) {
	var trees [][]int32
	for _, perNode := range [][]int{{8}, {8, 8}, {4, 4, 4}, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8}, {8, 8, 3}, {1, 1, 1, 1, 1}, {2}} {
		var sh Shape
		for node, k := range perNode {
			for range k {
				sh.Node = append(sh.Node, int32(node))
			}
		}
		for which := range 2 {
			for ch := range 9 {
				trees = append(trees, channelTree(sh, which, ch, false), channelTree(sh, which, ch, true))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(2000)
		perm := rng.Perm(n) // rank perm[i] hangs below a rank of an earlier i
		parent := make([]int32, n)
		parent[perm[0]] = -1
		for i := 1; i < n; i++ {
			lo := 0
			if rng.IntN(2) == 0 {
				lo = max(0, i-3) // long chains as well as bushy trees
			}
			parent[perm[i]] = int32(perm[lo+rng.IntN(i-lo)])
		}
		trees = append(trees, parent)
	}
	for k, parent := range trees {
		height, depth, H, maxD := treeLevels(parent)
		wantDepth, wantHeight := TreeDepths(parent), TreeHeights(parent)
		root := slices.Index(parent, -1)
		if !slices.Equal(depth, wantDepth) || !slices.Equal(height, wantHeight) || H != wantHeight[root] || maxD != slices.Max(wantDepth) {
			t.Fatalf("tree %d (%d ranks): treeLevels depths %v heights %v H %d max depth %d; want %v, %v, %d, %d",
				k, len(parent), depth, height, H, maxD, wantDepth, wantHeight, wantHeight[root], slices.Max(wantDepth))
		}
	}
}

// meshCycles shares one answer per domain size: the cycles walecki builds, the
// same slices on every call, from any number of goroutines at once.
func TestMeshCyclesShared(t *testing.T) {
	for k := 3; k <= 16; k++ {
		want := walecki(k)
		var got [4][][]int32
		done := make(chan int)
		for i := range got {
			go func() { got[i] = meshCycles(k); done <- i }()
		}
		for range got {
			<-done
		}
		for i := range got {
			if len(got[i]) != len(want) || len(got[i]) > 0 && &got[i][0][0] != &got[0][0][0] {
				t.Fatalf("k=%d: call %d gave other cycles than call 0", k, i)
			}
			for j := range want {
				if !slices.Equal(got[i][j], want[j]) {
					t.Fatalf("k=%d: cycle %d is %v, walecki builds %v", k, j, got[i][j], want[j])
				}
			}
		}
	}
}
