package collective

// Kind is what a transfer does at its destination.
type Kind uint8

const (
	// Copy: dst.buf[DstOff:DstOff+Len] = src.buf[SrcOff:SrcOff+Len].
	Copy Kind = iota
	// Add: dst.buf[DstOff:DstOff+Len] += src.buf[SrcOff:SrcOff+Len].
	Add
	// SwitchReduce is NVLS multimem.ld_reduce issued by Dst: the switch reads
	// buf[SrcOff:SrcOff+Len] of every rank of the group (Src is -1), sums them and
	// returns the sum into Dst's buf[DstOff:DstOff+Len]. Every rank's switch port
	// sends Len; Dst's port receives Len.
	SwitchReduce
	// Multicast is NVLS multimem.st issued by Src: the switch writes
	// Src.buf[SrcOff:SrcOff+Len] into buf[DstOff:DstOff+Len] of every rank of the
	// group (Dst is -1). Src's port sends Len; every rank's port receives Len.
	Multicast
)

func (k Kind) String() string {
	switch k {
	case Copy:
		return "copy"
	case Add:
		return "add"
	case SwitchReduce:
		return "switch-reduce"
	case Multicast:
		return "multicast"
	}
	return "kind?"
}

// Transfer moves Len elements between two ranks of the group (indices into
// Shape.Node, not global GPU ids).
type Transfer struct {
	Kind           Kind
	Src, Dst       int32
	SrcOff, DstOff int64
	Len            int64
}

// Step is a set of transfers that run at the same time. All reads of a step see the
// buffers as they were when the step began.
type Step struct {
	Transfers []Transfer
}

// Shape is where the ranks of a group sit: Node[r] is the scale-up domain (node, or
// multi-node NVLink domain) of rank r. Ranks of one domain are contiguous and
// domains ascend, the order NCCL builds its rings in.
type Shape struct {
	Node []int32
}

// N is the number of ranks.
func (s Shape) N() int { return len(s.Node) }

// Params tune a schedule.
type Params struct {
	// Channels splits the data into this many independent copies of the pattern
	// (NCCL channels); ≥ 1.
	Channels int
	// Chunks pipelines each channel's data in this many pieces for the pipelined
	// algorithms (trees, broadcast/reduce chains, NVLS all-reduce); the others
	// ignore it. ≥ 1.
	Chunks int
	// Root is the root rank of Broadcast and Reduce.
	Root int
	// Mesh says the scale-up fabric links every GPU pair directly: rings then step
	// by strides coprime with the domain size so channels use different links.
	Mesh bool
}

// Schedule is an explicit algorithm: the executor runs it on vectors, the pricer
// places it on links.
type Schedule struct {
	Op    Op
	Algo  Algorithm
	Shape Shape
	// Elems is the operation's size in elements, with nccl-tests conventions: the
	// buffer for all-reduce, broadcast, reduce; the total (all ranks) for all-gather
	// and reduce-scatter; the per-rank send buffer for all-to-all and send/recv.
	Elems int64
	// BufLen is the length of every rank's working buffer (see Layout).
	BufLen int64
	Params Params
	Steps  []Step
}

// Part splits total elements into n nearly equal contiguous parts and returns the
// offset and length of part i (the first total%n parts are one longer).
func Part(total int64, n, i int) (off, length int64) {
	q, r := total/int64(n), total%int64(n)
	ii := int64(i)
	if ii < r {
		return ii * (q + 1), q + 1
	}
	return r*(q+1) + (ii-r)*q, q
}
