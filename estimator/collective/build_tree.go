package collective

import "slices"

// Tree schedules. Channel ch of tree t uses channelTree(sh, t, ch, Params.Mesh) of
// structure.go, the trees the closed form prices: every node's ranks form a chain,
// in the order of the channel's ring, whose first rank is the node's head, data
// flowing towards the head; the heads form a binary heap over the nodes (tree 1's
// heap differs from tree 0's). Tree uses tree 0 for all the data; DoubleTree runs
// trees 0 and 1 in the same steps, tree t carrying half t = Part(D, 2, t) of the
// data. Each tree's data is split into channel pieces and each piece into Chunks
// chunks; "chunk j" below is chunk j of every channel's piece.
//
// With h[r] the height of rank r (leaves 0, see TreeHeights), d[r] its depth (root
// 0, see TreeDepths) and H the root's height:
//
//   - AllReduce: rank r ≠ root adds chunk j into its parent at step j+h[r] (the step
//     after its last child's chunk j arrived); rank r with children copies the fully
//     reduced chunk j to each child at step j+H+d[r]. The root completes chunk j at
//     the end of step j+H−1, so a chunk goes down while later chunks still go up.
//     Steps: Chunks+2H−1, with H the largest root height over the trees and
//     channels used.
//   - Reduce: the tree re-rooted at Root (the path from Root to the tree's root
//     reversed, so the same links are used); rank r ≠ Root adds chunk j into its
//     parent at step j+h[r]. Steps: Chunks+H−1 (H of the re-rooted trees).
//   - Broadcast: the same re-rooted tree; rank r copies chunk j to each child at
//     step j+d[r]. Steps: Chunks+H−1.

// TreeParents returns the parent of every rank (−1 for the root) in tree which (0
// or 1: the two trees of the double binary tree; Tree uses tree 0) of channel 0 on a
// fabric that is not a mesh, for a group of shape sh. Channel ch's tree is
// channelTree(sh, which, ch, mesh). It returns nil if which is not 0 or 1 or the
// shape is empty or its nodes decrease.
func TreeParents(sh Shape, which int) []int32 {
	if (which != 0 && which != 1) || checkShape(sh) != nil {
		return nil
	}
	return channelTree(sh, which, 0, false)
}

// TreeDepths returns every rank's depth (the root's is 0) in the tree given by
// parent (−1 for the root), or nil if parent is not a tree: exactly one root, every
// other entry a rank in range, no cycle.
func TreeDepths(parent []int32) []int {
	n := len(parent)
	depth := make([]int, n)
	const unknown, visiting = -1, -2
	for r := range depth {
		depth[r] = unknown
	}
	roots := 0
	var path []int32
	for r := range n {
		// Walk up until a rank of known depth (or the root), then unwind.
		path = path[:0]
		v := int32(r)
		base := 0
		for {
			if depth[v] >= 0 {
				base = depth[v] + 1
				break
			}
			if depth[v] == visiting {
				return nil // a cycle
			}
			p := parent[v]
			if p == -1 {
				roots++
				depth[v] = 0
				base = 1
				break
			}
			if p < 0 || int(p) >= n {
				return nil
			}
			depth[v] = visiting
			path = append(path, v)
			v = p
		}
		for i := len(path) - 1; i >= 0; i-- {
			depth[path[i]] = base
			base++
		}
	}
	if roots != 1 {
		return nil
	}
	return depth
}

// TreeHeights returns every rank's height in the tree given by parent: 0 for a
// leaf, one more than its highest child otherwise. It returns nil if parent is not
// a tree (see TreeDepths).
func TreeHeights(parent []int32) []int {
	depth := TreeDepths(parent)
	if depth == nil {
		return nil
	}
	byDepth := make([]int32, len(parent))
	for i := range byDepth {
		byDepth[i] = int32(i)
	}
	// Deepest first, so every child is final before its parent is raised by it.
	slices.SortFunc(byDepth, func(a, b int32) int { return depth[b] - depth[a] })
	height := make([]int, len(parent))
	for _, r := range byDepth {
		if p := parent[r]; p >= 0 {
			height[p] = max(height[p], height[r]+1)
		}
	}
	return height
}

// reroot returns the tree parent with root as its root: the path from root to the
// old root is reversed, every other edge kept.
func reroot(parent []int32, root int) []int32 {
	out := slices.Clone(parent)
	prev := int32(-1)
	for v := int32(root); v >= 0; {
		next := parent[v]
		out[v] = prev
		prev, v = v, next
	}
	return out
}

// tree emits a pipelined tree schedule with trees trees (1: Tree, 2: DoubleTree).
func (b *builder) tree(op Op, trees int) {
	data := span{0, b.elems}
	for t := range trees {
		half := data.part(trees, t)
		for ch := range b.channels {
			parent := channelTree(b.sh, t, ch, b.mesh)
			if len(parent) != b.n || TreeDepths(parent) == nil {
				// channelTree returns a tree for every valid shape; checked so that a
				// broken structure is an error rather than a hang in reroot.
				b.fail("internal error: channel %d tree %d is not a tree: %v", ch, t, parent)
				return
			}
			if op != AllReduce {
				parent = reroot(parent, b.root)
			}
			height, depth := TreeHeights(parent), TreeDepths(parent)
			rootHeight := 0
			for r, p := range parent {
				if p < 0 {
					rootHeight = height[r]
				}
			}
			for j := range b.chunks {
				c := b.piece(half, ch, j)
				for r, p := range parent {
					if p < 0 {
						continue
					}
					switch op {
					case AllReduce:
						b.emit(j+height[r], Add, int32(r), p, c.off, c.off, c.len)
						b.emit(j+rootHeight+depth[p], Copy, p, int32(r), c.off, c.off, c.len)
					case Reduce:
						b.emit(j+height[r], Add, int32(r), p, c.off, c.off, c.len)
					case Broadcast:
						b.emit(j+depth[p], Copy, p, int32(r), c.off, c.off, c.len)
					}
				}
			}
		}
	}
}
