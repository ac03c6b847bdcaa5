package collective

import (
	"slices"
	"sync"
)

// The shapes every algorithm moves data along. Schedules (build_*.go) and the
// coefficients of the closed form (coefficients.go) both derive from these functions,
// so that the two levels describe the same communication.

// domainSpans returns [start, end) of each scale-up domain's ranks.
func domainSpans(sh Shape) [][2]int {
	if len(sh.Node) == 0 {
		return nil
	}
	out := make([][2]int, 0, sh.Node[len(sh.Node)-1]+1) // domains are numbered in order
	for i := 0; i < len(sh.Node); {
		j := i
		for j < len(sh.Node) && sh.Node[j] == sh.Node[i] {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// channelRing is the order of channel ch's ring: every domain's ranks in a row
// (domainOrder), every other domain's row reversed. A row enters its domain at one
// GPU and leaves it at another; reversed, the next domain enters at the GPU whose
// local index the previous one left from and leaves at the one it entered by, so
// that every crossing between domains joins two GPUs of the same local index —
// two NICs of the same rail — and each GPU sends to the network over its own NIC,
// its data not crossing the scale-up fabric first. That is NCCL's ring since it
// searches rings with crossNic 2: channels come in pairs, the second entering on
// the NIC the first leaves by, and ncclTopoPostset swaps the pair on every
// odd-numbered node ("Alternate rings to avoid crossing rails", graph/connect.cc).
// With an odd number of domains the ring's wrap from the last domain to the first
// still crosses rails, as NCCL's does. order[i] is the rank at ring position i.
func channelRing(sh Shape, ch int, mesh bool) []int32 {
	return appendChannelRing(make([]int32, 0, len(sh.Node)), domainSpans(sh), ch, mesh)
}

// appendChannelRing is channelRing appended to buf, given the shape's domainSpans.
func appendChannelRing(buf []int32, spans [][2]int, ch int, mesh bool) []int32 {
	order := appendDomainOrder(buf, spans, ch, mesh)
	base := len(buf)
	for d, sp := range spans {
		if d%2 == 1 {
			slices.Reverse(order[base+sp[0] : base+sp[1]])
		}
	}
	return order
}

// domainOrder is every domain's ranks in a row, rotated by ch inside the domain, so
// that successive channels enter and leave each node through different GPUs — and
// hence different NICs — as NCCL's rings do. Trees use it as is: NCCL's trees are
// symmetric (every node's chain starts at the same local GPU and NIC).
//
// On a mesh (every GPU pair directly linked), a ring that always steps to the next
// index would use one link of each GPU; channel ch instead steps by the ch-th stride
// coprime with the domain size, so that successive channels use different links.
func domainOrder(sh Shape, ch int, mesh bool) []int32 {
	return appendDomainOrder(make([]int32, 0, len(sh.Node)), domainSpans(sh), ch, mesh)
}

// appendDomainOrder is domainOrder appended to order, given the shape's domainSpans.
func appendDomainOrder(order []int32, spans [][2]int, ch int, mesh bool) []int32 {
	for _, sp := range spans {
		k := sp[1] - sp[0]
		if mesh && k > 2 {
			cyc := meshCycles(k)
			c := cyc[ch%len(cyc)]
			for j := range k { // rotated so that channels enter the node at different GPUs
				order = append(order, int32(sp[0])+c[(ch+j)%k])
			}
			continue
		}
		for j := range k {
			order = append(order, int32(sp[0]+(ch+j)%k))
		}
	}
	return order
}

// meshCycles returns directed Hamiltonian cycles of the complete graph on k
// vertices that share no directed edge: Walecki's zigzag cycles (a vertex ∞ plus
// the zigzag j, j+1, j−1, j+2, … around a circle of the other k−1), each taken in
// both directions, keeping those edge-disjoint from the ones already kept. For k = 8
// that is 6 cycles covering 48 of the 56 links; the ring channels of a mesh cycle
// through them. The cycles of each k are built once and shared: callers read them
// and never change them.
func meshCycles(k int) [][]int32 {
	if c, ok := meshCyclesOf.Load(k); ok {
		return c.([][]int32)
	}
	c, _ := meshCyclesOf.LoadOrStore(k, walecki(k))
	return c.([][]int32)
}

// meshCyclesOf keeps meshCycles' answer per domain size: the rings and trees of a
// group ask for it once per domain (and channel), and building it takes a map and
// dozens of allocations — on a group of 2 048 eight-GPU mesh nodes that was most
// of the group's tree pipelines.
var meshCyclesOf sync.Map // int → [][]int32

// walecki builds meshCycles(k).
func walecki(k int) [][]int32 {
	m := k - 1 // circle size; vertex m is ∞
	used := map[[2]int32]bool{}
	var out [][]int32
	for j := range m {
		cyc := []int32{int32(m)}
		for i := 0; len(cyc) < k; i++ {
			off := (i + 1) / 2
			if i%2 == 1 {
				off = -off
			}
			v := int32(((j+off)%m + m) % m)
			if slices.Contains(cyc, v) {
				break
			}
			cyc = append(cyc, v)
		}
		if len(cyc) != k {
			continue
		}
		edges := make([][2]int32, 0, 2*k)
		ok := true
		for i := range k {
			a, b := cyc[i], cyc[(i+1)%k]
			if used[[2]int32{a, b}] || used[[2]int32{b, a}] {
				ok = false
				break
			}
			edges = append(edges, [2]int32{a, b}, [2]int32{b, a})
		}
		if !ok {
			continue
		}
		for _, e := range edges {
			used[e] = true
		}
		rev := make([]int32, k)
		for i := range k {
			rev[i] = cyc[(k-i)%k]
		}
		out = append(out, cyc, rev)
	}
	return out
}

// channelTree gives channel ch's tree number which (0 or 1; the double binary tree
// uses both): each domain's ranks form a chain in domainOrder(sh, ch) order whose
// first rank is the domain's head, data flowing towards the head; heads form a
// binary heap over the domains, in domain order for tree 0 and in domain order
// rotated by one for tree 1, so that tree 1's root and inner nodes differ from
// tree 0's. parent[r] is −1 for the root.
func channelTree(sh Shape, which, ch int, mesh bool) []int32 {
	n := len(sh.Node)
	parent := make([]int32, n)
	spans := domainSpans(sh)
	m := len(spans)
	heads := make([]int32, m)
	order := domainOrder(sh, ch, mesh)
	for d, sp := range spans {
		k := sp[1] - sp[0]
		prev := int32(-1)
		for j := range k {
			r := order[sp[0]+j]
			if prev < 0 {
				heads[d] = r
			} else {
				parent[r] = prev
			}
			prev = r
		}
	}
	// Heap position i holds domain pos[i].
	for i := range m {
		d := i
		if which == 1 {
			d = (i + 1) % m
		}
		if i == 0 {
			parent[heads[d]] = -1
			continue
		}
		pd := (i - 1) / 2
		if which == 1 {
			pd = ((i-1)/2 + 1) % m
		}
		parent[heads[d]] = heads[pd]
	}
	return parent
}

// treeLevels returns every rank's height (leaves 0, a parent one more than its
// highest child) and depth (root 0), and the root's height H and the largest
// depth. In a pipelined tree all-reduce chunk j leaves a rank of height h towards
// its parent at step j+h, and leaves a rank of depth d towards its children at
// step j+H+d: H up-stages followed by maxDepth down-stages.
func treeLevels(parent []int32) (height, depth []int, rootHeight, maxDepth int) {
	n := len(parent)
	height = make([]int, n)
	depth = make([]int, n)
	// Depth by walking up to a rank whose depth is known (or the root) and setting
	// the ranks walked on the way back, so that every rank is walked once: a walk
	// from every rank to the root was most of a pipeline's cost on a group of
	// 50 000 ranks (a chain of a node plus a heap over thousands of nodes).
	for r := range depth {
		depth[r] = -1
	}
	var path []int32
	for r := range n {
		path = path[:0]
		v := int32(r)
		for depth[v] < 0 && parent[v] >= 0 {
			path = append(path, v)
			v = parent[v]
		}
		if depth[v] < 0 {
			depth[v] = 0 // the root
		}
		d := depth[v]
		for i := len(path) - 1; i >= 0; i-- {
			d++
			depth[path[i]] = d
		}
		maxDepth = max(maxDepth, depth[r])
	}
	// Heights: ranks from the deepest up (each depth's ranks in rank order), so
	// that every child is final before it raises its parent; the ranks sorted by
	// depth by counting.
	start := make([]int32, maxDepth+2)
	for _, d := range depth {
		start[d+1]++
	}
	for d := 1; d < len(start); d++ {
		start[d] += start[d-1]
	}
	order := make([]int32, n)
	next := append([]int32(nil), start[:maxDepth+1]...)
	for r, d := range depth {
		order[next[d]] = int32(r)
		next[d]++
	}
	for d := maxDepth; d >= 0; d-- {
		for _, r := range order[start[d]:start[d+1]] {
			if p := parent[r]; p >= 0 {
				height[p] = max(height[p], height[r]+1)
			} else {
				rootHeight = height[r]
			}
		}
	}
	return height, depth, rootHeight, maxDepth
}

// patBlocks is how many blocks a PAT all-gather rank sends in step k of n ranks: all
// it holds after k steps (2^k), but no more than the n−2^k still missing elsewhere.
func patBlocks(n, k int) int {
	return min(1<<k, n-(1<<k))
}

// patSteps is ceil(log2 n).
func patSteps(n int) int {
	s := 0
	for 1<<s < n {
		s++
	}
	return s
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
