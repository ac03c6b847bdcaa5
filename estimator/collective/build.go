package collective

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Limits of Build, so that a schedule always fits in memory.
const (
	// MaxChannels is the largest Params.Channels Build accepts.
	MaxChannels = 256
	// MaxChunks is the largest Params.Chunks Build accepts.
	MaxChunks = 1 << 16
	// MaxTransfers bounds the transfers of a schedule's pattern (counted per channel
	// and chunk, before empty ones are dropped and contiguous ones merged); Build
	// fails beyond it rather than fill memory.
	MaxTransfers = 1 << 21
	// maxElems keeps every buffer length and offset far from int64 overflow.
	maxElems = 1 << 60
)

// algoOps lists the operations each algorithm can carry out.
var algoOps = [numAlgos][]Op{
	Ring:         {AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv},
	Tree:         {AllReduce, Broadcast, Reduce},
	DoubleTree:   {AllReduce, Broadcast, Reduce},
	Hierarchical: {AllReduce},
	NVLS:         {AllReduce, AllGather, ReduceScatter},
	Direct:       {AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, SendRecv},
	PAT:          {AllGather, ReduceScatter},
	Pairwise:     {AllToAll},
	NVLSTree:     nil, // closed form only: its switch and network sides overlap, which a step-synchronous schedule cannot express
}

// Supports returns nil if algo can carry out op on a group of shape sh, and otherwise
// an error saying why not. nvls says whether the group's fabric offers NVLink SHARP
// (in-switch reduction and multicast).
func Supports(op Op, algo Algorithm, sh Shape, nvls bool) error {
	if op >= numOps {
		return fmt.Errorf("unknown collective %v", op)
	}
	if algo == Auto {
		return errors.New("auto is not an algorithm: choose a concrete one")
	}
	if algo >= numAlgos {
		return fmt.Errorf("unknown algorithm %v", algo)
	}
	if err := checkShape(sh); err != nil {
		return err
	}
	if len(algoOps[algo]) == 0 {
		return fmt.Errorf("%v has no explicit schedule (it is priced in closed form only)", algo)
	}
	if !slices.Contains(algoOps[algo], op) {
		names := make([]string, len(algoOps[algo]))
		for i, o := range algoOps[algo] {
			names[i] = o.String()
		}
		return fmt.Errorf("%v cannot run %v (it runs %s)", algo, op, strings.Join(names, ", "))
	}
	n := sh.N()
	switch algo {
	case Hierarchical:
		spans := domainSpans(sh)
		p := spans[0][1] - spans[0][0]
		for _, sp := range spans[1:] {
			if k := sp[1] - sp[0]; k != p {
				return fmt.Errorf("hierarchical needs the same number of ranks on every node (node %d has %d, node %d has %d)",
					sh.Node[spans[0][0]], p, sh.Node[sp[0]], k)
			}
		}
	case NVLS:
		if !nvls {
			return errors.New("nvls needs NVLink SHARP, which this fabric does not offer")
		}
		if n < 2 {
			return errors.New("nvls needs at least 2 ranks")
		}
		if sh.Node[0] != sh.Node[n-1] {
			return fmt.Errorf("nvls needs every rank in one scale-up domain (the group spans nodes %d to %d)", sh.Node[0], sh.Node[n-1])
		}
	case PAT:
		for r := 1; r < n; r++ {
			if sh.Node[r] == sh.Node[r-1] {
				return fmt.Errorf("pat needs exactly one rank per node (ranks %d and %d share node %d)", r-1, r, sh.Node[r])
			}
		}
	}
	return nil
}

// checkShape requires at least one rank and nodes in non-decreasing order (the ranks
// of a node contiguous).
func checkShape(sh Shape) error {
	if sh.N() < 1 {
		return errors.New("the group has no ranks")
	}
	for r := 1; r < sh.N(); r++ {
		if sh.Node[r] < sh.Node[r-1] {
			return fmt.Errorf("shape nodes must not decrease (rank %d is on node %d after node %d)", r, sh.Node[r], sh.Node[r-1])
		}
	}
	return nil
}

// Build returns the explicit schedule of op carried out by algo on a group of shape
// sh with elems elements (the sizes and buffer layouts are described at BufLen).
// It fails, never panics, on bad input: an unsupported combination (see Supports;
// NVLS is assumed available), an empty or unordered shape, elems < 0, Channels or
// Chunks outside [1, MaxChannels] and [1, MaxChunks], or Root outside [0, n).
//
// Every channel runs an independent copy of the pattern on its own piece of every
// block (Part of the block into Channels pieces), in the same steps. Chunks
// pipelines the pipelined algorithms (ring broadcast and reduce chains, trees,
// NVLS all-reduce); the others ignore it. Transfers of a step that continue each
// other (same kind, source and destination, adjacent source and destination
// ranges) are merged into one, no transfer is empty, and steps left without
// transfers (only possible with fewer elements than pieces) are dropped.
//
// The step numbering of each algorithm, which the closed form follows, is documented
// on the builder of that algorithm (ring, hierarchical, tree, nvls, direct, pat,
// pairwise).
func Build(op Op, algo Algorithm, sh Shape, elems int64, p Params) (*Schedule, error) {
	if err := Supports(op, algo, sh, true); err != nil {
		return nil, err
	}
	n := sh.N()
	switch {
	case elems < 0:
		return nil, fmt.Errorf("elements must be ≥ 0 (got %d)", elems)
	case elems > maxElems:
		return nil, fmt.Errorf("elements must be ≤ %d (got %d)", int64(maxElems), elems)
	case p.Channels < 1 || p.Channels > MaxChannels:
		return nil, fmt.Errorf("channels must be in [1, %d] (got %d)", MaxChannels, p.Channels)
	case p.Chunks < 1 || p.Chunks > MaxChunks:
		return nil, fmt.Errorf("chunks must be in [1, %d] (got %d)", MaxChunks, p.Chunks)
	case p.Root < 0 || p.Root >= n:
		return nil, fmt.Errorf("root must be a rank in [0, %d) (got %d)", n, p.Root)
	}
	if t := patternTransfers(op, algo, sh, p); t > MaxTransfers {
		return nil, fmt.Errorf("the schedule would need about %.3g transfers, more than %d: use fewer ranks, channels or chunks", t, MaxTransfers)
	}
	sh = Shape{Node: slices.Clone(sh.Node)}
	b := &builder{sh: sh, n: n, elems: elems, channels: p.Channels, chunks: p.Chunks, root: p.Root, mesh: p.Mesh}
	switch algo {
	case Ring:
		b.ring(op)
	case Tree:
		b.tree(op, 1)
	case DoubleTree:
		b.tree(op, 2)
	case Hierarchical:
		b.hierarchical()
	case NVLS:
		b.nvls(op)
	case Direct:
		b.direct(op)
	case PAT:
		b.pat(op)
	case Pairwise:
		b.pairwise()
	}
	if b.err != nil {
		return nil, b.err
	}
	s := &Schedule{
		Op:     op,
		Algo:   algo,
		Shape:  sh,
		Elems:  elems,
		BufLen: BufLen(op, n, elems),
		Params: p,
	}
	for _, ts := range b.steps {
		if ts = compact(ts); len(ts) > 0 {
			s.Steps = append(s.Steps, Step{Transfers: ts})
		}
	}
	return s, nil
}

// patternTransfers is an upper bound on the transfers Build emits (before dropping
// empty ones and merging), computed in float64 so that it cannot overflow. Patterns
// whose channels all take the same route emit one transfer for all channels.
func patternTransfers(op Op, algo Algorithm, sh Shape, p Params) float64 {
	n := float64(sh.N())
	ch, chunks := float64(p.Channels), float64(p.Chunks)
	pairs := n * (n - 1) // every rank to every other rank, once
	switch algo {
	case Ring:
		switch op {
		case AllReduce:
			return 2 * pairs * ch
		case Broadcast, Reduce:
			return (n - 1) * ch * chunks
		case SendRecv:
			return n
		}
		return pairs * ch
	case Tree, DoubleTree:
		return 2 * 2 * (n - 1) * ch * chunks
	case Hierarchical:
		spans := domainSpans(sh)
		m, k := float64(len(spans)), float64(spans[0][1]-spans[0][0])
		return 2 * (m*k*(k-1) + k*m*(m-1)) * ch
	case NVLS:
		if op == AllReduce {
			return 2 * n * ch * chunks
		}
		return n
	case Direct:
		switch op {
		case AllReduce:
			return 2 * pairs
		case AllToAll:
			return n * n
		case Broadcast, Reduce, SendRecv:
			return n
		}
		return pairs
	case PAT:
		return pairs
	case Pairwise:
		return n * n
	}
	return 0
}

// builder accumulates the transfers of a schedule, step by step.
type builder struct {
	sh       Shape
	n        int
	elems    int64
	channels int
	chunks   int
	root     int
	mesh     bool
	steps    [][]Transfer
	count    int
	err      error
}

// span is a range [off, off+len) of a buffer.
type span struct{ off, len int64 }

// part is piece i of sp split into k nearly equal parts (see Part).
func (sp span) part(k, i int) span {
	o, l := Part(sp.len, k, i)
	return span{sp.off + o, l}
}

// blocks splits sp into k parts.
func (sp span) blocks(k int) []span {
	out := make([]span, k)
	for i := range out {
		out[i] = sp.part(k, i)
	}
	return out
}

// piece is channel ch's piece of sp, and within it chunk j.
func (b *builder) piece(sp span, ch, j int) span {
	return sp.part(b.channels, ch).part(b.chunks, j)
}

// emit adds a transfer of l elements to step st, skipping empty ones.
func (b *builder) emit(st int, k Kind, src, dst int32, srcOff, dstOff, l int64) {
	if l <= 0 || b.err != nil {
		return
	}
	if b.count >= MaxTransfers {
		b.fail("the schedule would need more than %d transfers: use fewer ranks, channels or chunks", MaxTransfers)
		return
	}
	for len(b.steps) <= st {
		b.steps = append(b.steps, nil)
	}
	b.steps[st] = append(b.steps[st], Transfer{Kind: k, Src: src, Dst: dst, SrcOff: srcOff, DstOff: dstOff, Len: l})
	b.count++
}

// fail records the first error; emit does nothing after it.
func (b *builder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf(format, args...)
	}
}

// emitCh emits a range that every channel moves, each its own Part of it, along the
// same route in the same step. The channels' pieces are adjacent and would be merged
// by compact, so the whole range is emitted at once.
func (b *builder) emitCh(st int, k Kind, src, dst int32, srcOff, dstOff, l int64) {
	b.emit(st, k, src, dst, srcOff, dstOff, l)
}

// compact orders a step's transfers (by source, destination, kind, source offset)
// and merges those that continue each other.
func compact(ts []Transfer) []Transfer {
	slices.SortFunc(ts, func(a, b Transfer) int {
		return cmp.Or(cmp.Compare(a.Src, b.Src), cmp.Compare(a.Dst, b.Dst), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.SrcOff, b.SrcOff), cmp.Compare(a.DstOff, b.DstOff))
	})
	out := ts[:0]
	for _, t := range ts {
		if t.Len == 0 {
			continue
		}
		if k := len(out) - 1; k >= 0 {
			last := &out[k]
			if last.Src == t.Src && last.Dst == t.Dst && last.Kind == t.Kind &&
				last.SrcOff+last.Len == t.SrcOff && last.DstOff+last.Len == t.DstOff {
				last.Len += t.Len
				continue
			}
		}
		out = append(out, t)
	}
	return slices.Clip(out)
}
