package collective

// nvls emits the NVLink SHARP schedules on one scale-up domain; rank k owns block
// k = Part(D, n, k), split into channel pieces and each piece into Chunks chunks.
//
//   - AllReduce: in step j every rank k switch-reduces chunk j of its block (Dst k:
//     multimem.ld_reduce over every rank), and multicasts chunk j−1 of its block,
//     reduced in the previous step, to every rank (multimem.st). Chunks+1 steps.
//   - ReduceScatter: one step; every rank k switch-reduces its block.
//   - AllGather: one step; every rank k multicasts its block.
//
// Reduce-scatter and all-gather have a single stage, so chunking would only add
// steps; they ignore Chunks.
func (b *builder) nvls(op Op) {
	blocks := span{0, b.elems}.blocks(b.n)
	for k, blk := range blocks {
		r := int32(k)
		switch op {
		case AllReduce:
			for ch := range b.channels {
				for j := range b.chunks {
					c := b.piece(blk, ch, j)
					b.emit(j, SwitchReduce, -1, r, c.off, c.off, c.len)
					b.emit(j+1, Multicast, r, -1, c.off, c.off, c.len)
				}
			}
		case ReduceScatter:
			b.emitCh(0, SwitchReduce, -1, r, blk.off, blk.off, blk.len)
		case AllGather:
			b.emitCh(0, Multicast, r, -1, blk.off, blk.off, blk.len)
		}
	}
}
