package collective

import "slices"

// Ring schedules. Channel ch runs on the ring channelRing(sh, ch, Params.Mesh) of
// structure.go — the order the closed form prices: every node's ranks in a row, in
// an order that differs per channel so that channels enter and leave nodes through
// different GPUs (and, on a mesh, use different links) — and moves channel ch's
// piece of every block. Position i of a ring is rank order[i] and sends to position
// i+1 (mod n); the block a position owns is its rank's block, so that reduce-scatter
// and all-gather leave and find rank r's data at block r whatever the ring.
//
//   - Reduce-scatter (n−1 steps): in step s, position i adds the block of position
//     (i−s−1) mod n into position i+1. Afterwards position i holds the sum of its own
//     block, having forwarded every block but its own.
//   - All-gather (n−1 steps): in step s, position i copies the block of position
//     (i−s) mod n to position i+1; every block but the successor's is forwarded.
//   - All-reduce: reduce-scatter in steps 0…n−2, then all-gather in steps n−1…2n−3.
//     A rank sends 2·D − |own block| − |successor's block| elements per channel
//     piece, 2(n−1)/n·D when n divides D.
//   - Broadcast: channel ch's ring rotated to start at the root (as NCCL does), so
//     that the channels cross node boundaries through different GPUs and NICs;
//     Reduce: the same chain reversed, ending at the root. Edge e of a channel's
//     chain moves its chunk j in step j+e, with Copy (broadcast) or Add (reduce):
//     Chunks+n−2 steps.
//   - SendRecv: one step; rank r copies its send buffer to rank (r+1) mod n.

// ringRS emits a ring reduce-scatter starting at step base over the ring order,
// position i owning own[i].
func (b *builder) ringRS(base int, order []int32, own []span) {
	k := len(order)
	for s := 0; s < k-1; s++ {
		for i := range k {
			blk := own[((i-s-1)%k+k)%k]
			b.emit(base+s, Add, order[i], order[(i+1)%k], blk.off, blk.off, blk.len)
		}
	}
}

// ringAG emits a ring all-gather starting at step base over the ring order,
// position i owning own[i].
func (b *builder) ringAG(base int, order []int32, own []span) {
	k := len(order)
	for s := 0; s < k-1; s++ {
		for i := range k {
			blk := own[((i-s)%k+k)%k]
			b.emit(base+s, Copy, order[i], order[(i+1)%k], blk.off, blk.off, blk.len)
		}
	}
}

func (b *builder) ring(op Op) {
	n, e := b.n, b.elems
	all := span{0, e}
	switch op {
	case AllReduce, AllGather, ReduceScatter:
		blocks := all.blocks(n)
		own := make([]span, n)
		for ch := range b.channels {
			order := channelRing(b.sh, ch, b.mesh)
			for i, r := range order {
				own[i] = blocks[r].part(b.channels, ch)
			}
			switch op {
			case AllReduce:
				b.ringRS(0, order, own)
				b.ringAG(n-1, order, own)
			case ReduceScatter:
				b.ringRS(0, order, own)
			case AllGather:
				b.ringAG(0, order, own)
			}
		}
	case Broadcast, Reduce:
		kind := Copy
		if op == Reduce {
			kind = Add
		}
		chain := make([]int32, n)
		for ch := range b.channels {
			order := channelRing(b.sh, ch, b.mesh)
			start := slices.Index(order, int32(b.root))
			for i := range chain {
				if op == Broadcast {
					chain[i] = order[(start+i)%n]
				} else {
					chain[i] = order[(start+n-1-i)%n]
				}
			}
			for edge := 0; edge+1 < n; edge++ {
				for j := range b.chunks {
					c := b.piece(all, ch, j)
					b.emit(j+edge, kind, chain[edge], chain[edge+1], c.off, c.off, c.len)
				}
			}
		}
	case SendRecv:
		b.sendRecv()
	}
}

// sendRecv is the single step of nccl-tests' sendrecv pattern.
func (b *builder) sendRecv() {
	for r := range b.n {
		b.emitCh(0, Copy, int32(r), int32((r+1)%b.n), 0, b.elems, b.elems)
	}
}

// hierarchical emits the three-phase all-reduce on m nodes of p ranks each; every
// channel ch runs its own copy on its piece of each block:
//
//   - Phase 1, steps 0…p−2: inside every node at once, a ring reduce-scatter (the
//     node's ranks in channelRing order) of the p blocks Part(D, p, l), leaving local
//     rank l with block l summed over its node.
//   - Phase 2, steps p−1…p−1+2(m−1)−1: for every local index l at once, a ring
//     all-reduce of block l among the m ranks of local index l (the rail, in node
//     order), with block l split into m sub-blocks by Part: reduce-scatter in steps
//     p−1…p+m−3, all-gather in steps p+m−2…p+2m−4.
//   - Phase 3, steps p−1+2(m−1)…2(p−1)+2(m−1)−1: inside every node, a ring all-gather
//     of the p blocks.
//
// With one node phase 2 is empty and this is the ring all-reduce; with one rank per
// node phases 1 and 3 are empty and phase 2 is the ring all-reduce across nodes.
func (b *builder) hierarchical() {
	spans := domainSpans(b.sh)
	m := len(spans)
	p := spans[0][1] - spans[0][0]
	blocks := span{0, b.elems}.blocks(p)
	phase2, phase3 := p-1, p-1+2*(m-1)
	own := make([]span, max(p, m))
	for ch := range b.channels {
		ring := channelRing(b.sh, ch, b.mesh)
		for _, sp := range spans {
			order := ring[sp[0]:sp[1]]
			for i, r := range order {
				own[i] = blocks[int(r)-sp[0]].part(b.channels, ch)
			}
			b.ringRS(0, order, own[:p])
			b.ringAG(phase3, order, own[:p])
		}
		rail := make([]int32, m)
		for l := range p {
			for d, sp := range spans {
				rail[d] = int32(sp[0] + l)
			}
			sub := blocks[l].part(b.channels, ch).blocks(m)
			b.ringRS(phase2, rail, sub)
			b.ringAG(phase2+m-1, rail, sub)
		}
	}
}
