package collective

// direct emits the one-shot schedules, where every transfer goes straight to its
// final rank; blocks are Part(D, n, k).
//
//   - AllReduce (two-shot): step 0, every rank adds its block j into rank j (j ≠
//     itself); step 1, every rank j copies its reduced block j to every other rank.
//   - AllGather: one step; every rank copies its block to every other rank.
//   - ReduceScatter: one step; every rank adds its block j into rank j.
//   - AllToAll: one step; every rank r copies its send block j into rank j's receive
//     slot r, its own block included (a local copy, Src = Dst).
//   - Broadcast: one step; the root copies its buffer to every other rank.
//   - Reduce: one step; every other rank adds its buffer into the root.
//   - SendRecv: one step; rank r copies its send buffer to rank (r+1) mod n.
func (b *builder) direct(op Op) {
	n, e := b.n, b.elems
	blocks := span{0, e}.blocks(n)
	root := int32(b.root)
	for i := range n {
		r := int32(i)
		switch op {
		case AllReduce, ReduceScatter, AllGather:
			for j, blk := range blocks {
				if j == i {
					continue
				}
				switch op {
				case AllReduce:
					b.emitCh(0, Add, r, int32(j), blk.off, blk.off, blk.len)
					b.emitCh(1, Copy, int32(j), r, blk.off, blk.off, blk.len)
				case ReduceScatter:
					b.emitCh(0, Add, r, int32(j), blk.off, blk.off, blk.len)
				case AllGather:
					own := blocks[i]
					b.emitCh(0, Copy, r, int32(j), own.off, own.off, own.len)
				}
			}
		case AllToAll:
			for j, blk := range blocks {
				b.emitCh(0, Copy, r, int32(j), blk.off, a2aRecvOff(n, e, i), blk.len)
			}
		case Broadcast:
			if r != root {
				b.emitCh(0, Copy, root, r, 0, 0, e)
			}
		case Reduce:
			if r != root {
				b.emitCh(0, Add, r, root, 0, 0, e)
			}
		}
	}
	if op == SendRecv {
		b.sendRecv()
	}
}

// pat emits the Bruck-style schedules of NCCL's PAT for one rank per node, in
// ceil(log2 n) steps (patSteps); blocks are Part(D, n, k).
//
//   - AllGather: in step k, rank r copies the patBlocks(n, k) = min(2^k, n−2^k)
//     blocks r, r+1, … (mod n) — all it holds after k steps, or in the last step of
//     a non-power-of-two n only those the receiver still lacks — to rank r−2^k, at
//     their own positions (one transfer per contiguous range, two where the blocks
//     wrap past the last).
//   - ReduceScatter: the transpose, steps in reverse order: in step s, with
//     k = steps−1−s, rank q adds blocks q+2^k, …, q+2^k+patBlocks(n, k)−1 (mod n)
//     into rank q+2^k. Every contribution to block b travels the all-gather's
//     broadcast tree of block b backwards, so it is summed exactly once.
func (b *builder) pat(op Op) {
	n := b.n
	blocks := span{0, b.elems}.blocks(n)
	steps := patSteps(n)
	for k := range steps {
		dist, cnt := 1<<k, patBlocks(n, k)
		for i := range n {
			switch op {
			case AllGather:
				dst := int32(((i-dist)%n + n) % n)
				for x := range cnt {
					blk := blocks[(i+x)%n]
					b.emitCh(k, Copy, int32(i), dst, blk.off, blk.off, blk.len)
				}
			case ReduceScatter:
				dst := (i + dist) % n
				for x := range cnt {
					blk := blocks[(dst+x)%n]
					b.emitCh(steps-1-k, Add, int32(i), int32(dst), blk.off, blk.off, blk.len)
				}
			}
		}
	}
}

// pairwise emits the pairwise-exchange all-to-all: in step k−1 (k = 1…n−1) rank r
// copies its send block for rank (r+k) mod n into that rank's receive slot r; step
// 0 also holds every rank's local copy of its own block. n−1 steps (one, the local
// copy, for a single rank).
func (b *builder) pairwise() {
	n, e := b.n, b.elems
	blocks := span{0, e}.blocks(n)
	for i := range n {
		own := blocks[i]
		b.emitCh(0, Copy, int32(i), int32(i), own.off, a2aRecvOff(n, e, i), own.len)
		for k := 1; k < n; k++ {
			j := (i + k) % n
			blk := blocks[j]
			b.emitCh(k-1, Copy, int32(i), int32(j), blk.off, a2aRecvOff(n, e, i), blk.len)
		}
	}
}
