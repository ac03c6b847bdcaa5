package step

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Pass is what a block of a pipeline schedule computes.
type Pass uint8

const (
	PassForward Pass = iota
	// PassBackward is the backward pass of a block: under the zero-bubble schedules
	// only its activation-gradient part (Qi et al.'s B) unless the op is Full.
	PassBackward
	// PassWeightGrad is the weight-gradient GEMMs the zero-bubble schedules run
	// apart from the backward pass (Qi et al.'s W).
	PassWeightGrad
)

func (p Pass) String() string { return [...]string{"forward", "backward", "weight gradient"}[p] }

// Op is one block in a pipeline rank's order.
type Op struct {
	// Dir is DualPipe's direction: 0 for micro-batches fed from the first rank, 1
	// from the last; 0 for every other schedule.
	Dir  uint8
	Pass Pass
	// Full: a backward that computes its weight gradients too (no W block follows).
	Full bool
	// Fused: the op runs overlapped with the rank's next op, both starting once
	// both inputs have arrived (DualPipe's forward-and-backward chunk pairs).
	Fused bool
	// MB is the micro-batch (per direction under DualPipe), Chunk the model chunk
	// in model order along the direction.
	MB, Chunk int32
}

// PipelineOrders are the per-rank block orders of a schedule over p ranks with v
// chunks each and m micro-batches per replica — each schedule's published table:
//
//   - gpipe: every forward, then every backward (Huang et al. 2019);
//   - 1f1b: p − s − 1 warm-up forwards on rank s, then one forward and one
//     backward alternately, then the remaining backwards (PipeDream-Flush,
//     Narayanan et al. 2021 §2.2.1; Megatron-LM's order);
//   - interleaved: the same over v chunks per rank, micro-batches taken in groups of
//     p through chunk 0, then chunk 1, …; (p − s − 1)·2 + (v − 1)·p warm-up
//     forwards (Narayanan et al. 2021 §2.2.2, Megatron-LM's order);
//   - zb-h1: the backward split into B and W; 1F1B's order of forwards and B's,
//     each B followed by a W except that rank s holds back its first s W's into the
//     drain (Qi et al. 2024 §3.1, Figure 3);
//   - zb-v: the handcrafted ZB-V table of Qi et al. 2024 §6 (sail-sg
//     zero-bubble-pipeline-parallelism, get_zb_v_schedule): rank r warms up with
//     2(p − r) − 1 forwards of its first chunk, r pairs of forwards of both chunks
//     and p − r F-B-W triples of its second chunk, runs F-B-W of each chunk in
//     turn, and cools down with r B pairs, p − r B-W pairs of its first chunk and
//     the W's left; rank r holds model chunks r and 2p − 1 − r;
//   - dualpipe: DeepSeek's DualPipe.step (deepseek-ai/DualPipe dualpipe.py, the
//     eight steps of its loop): half the micro-batches fed from each end, rank r
//     holding stage r of one direction and p − 1 − r of the other; forward and
//     backward chunks of the two directions run overlapped (Fused) in the steady
//     state, and the W's of the zero-bubble backwards fill the fill and drain.
func PipelineOrders(s Schedule, p, v, m int) ([][]Op, error) {
	if p < 1 || v < 1 || m < 1 {
		return nil, fmt.Errorf("pipeline: %d ranks, %d chunks, %d micro-batches", p, v, m)
	}
	out := make([][]Op, p)
	for r := range p {
		o, err := appendOrder(make([]Op, 0, 3*chunksPerRank(s, v)*max(m, 2*p)), s, p, v, m, r)
		if err != nil {
			return nil, err
		}
		out[r] = o
	}
	return out, nil
}

// appendOrder appends rank r's order (PipelineOrders) to out.
func appendOrder(out []Op, s Schedule, p, v, m, r int) ([]Op, error) {
	switch s {
	case GPipe:
		return gpipeOrder(out, m, r), nil
	case OneFOneB:
		return interleavedOrder(out, p, 1, m, r), nil
	case Interleaved:
		return interleavedOrder(out, p, v, m, r), nil
	case ZeroBubble:
		return zbh1Order(out, p, m, r), nil
	case ZeroBubbleV:
		return zbvOrder(out, p, m, r), nil
	case DualPipe:
		if p%2 != 0 || m%2 != 0 {
			return nil, fmt.Errorf("pipeline: dualpipe needs an even pp and micro-batches (got %d, %d)", p, m)
		}
		return dualPipeOrder(out, p, m, r), nil
	}
	return nil, fmt.Errorf("pipeline: unknown schedule %q", s)
}

// chunksPerRank is the model chunks each pipeline rank holds under schedule s:
// the interleaving depth v, two for ZB-V's V shape, one otherwise.
func chunksPerRank(s Schedule, v int) int {
	switch s {
	case Interleaved:
		return v
	case ZeroBubbleV:
		return 2
	}
	return 1
}

// pipelineChunks is the number of model chunks along one direction.
func pipelineChunks(s Schedule, p, v int) int { return p * chunksPerRank(s, v) }

// PipelineRank is the rank that runs model chunk k of direction dir.
func PipelineRank(s Schedule, p, k, dir int) int {
	switch s {
	case ZeroBubbleV:
		if k < p {
			return k
		}
		return 2*p - 1 - k
	case DualPipe:
		if dir == 1 {
			return p - 1 - k
		}
		return k
	}
	return k % p
}

func gpipeOrder(out []Op, m, r int) []Op {
	for mb := range m {
		out = append(out, Op{Pass: PassForward, MB: int32(mb), Chunk: int32(r)})
	}
	for mb := range m {
		out = append(out, Op{Pass: PassBackward, Full: true, MB: int32(mb), Chunk: int32(r)})
	}
	return out
}

// interleavedOrder is 1F1B's order (v = 1) and Megatron-LM's interleaved order.
func interleavedOrder(out []Op, p, v, m, r int) []Op {
	total := m * v
	fwd := func(k int) Op {
		group, in := k/(p*v), k%(p*v)
		c, mb := in/p, group*p+in%p
		if group*p+p > m { // a last, smaller group (not under interleaving)
			size := m - group*p
			c, mb = in/size, group*p+in%size
		}
		return Op{Pass: PassForward, MB: int32(mb), Chunk: int32(c*p + r)}
	}
	bwd := func(k int) Op {
		x := fwd(k)
		c := int(x.Chunk) / p
		return Op{Pass: PassBackward, Full: true, MB: x.MB, Chunk: int32((v-1-c)*p + r)}
	}
	warm := min(interleavedWarmUp(p, v, r), total)
	for k := range warm {
		out = append(out, fwd(k))
	}
	for k := range total - warm {
		out = append(out, fwd(warm+k), bwd(k))
	}
	for k := total - warm; k < total; k++ {
		out = append(out, bwd(k))
	}
	return out
}

func zbh1Order(out []Op, p, m, r int) []Op {
	warm := min(p-r-1, m)
	nextW := 0
	w := func(upTo int) { // the W's of micro-batches below upTo
		for ; nextW < upTo; nextW++ {
			out = append(out, Op{Pass: PassWeightGrad, MB: int32(nextW), Chunk: int32(r)})
		}
	}
	f := func(mb int) Op { return Op{Pass: PassForward, MB: int32(mb), Chunk: int32(r)} }
	b := func(mb int) Op { return Op{Pass: PassBackward, MB: int32(mb), Chunk: int32(r)} }
	for mb := range warm {
		out = append(out, f(mb))
	}
	for j := range m - warm {
		out = append(out, f(warm+j), b(j))
		w(j - r + 1)
	}
	for j := m - warm; j < m; j++ {
		out = append(out, b(j))
		w(j - r + 1)
	}
	w(m)
	return out
}

func zbvOrder(out []Op, p, m, r int) []Op {
	n := max(2*p-1, m) // the table is laid out for at least 2p − 1 micro-batches
	k := [2]int32{int32(r), int32(2*p - 1 - r)}
	var f, b, w [2]int
	put := func(pass Pass, c int) {
		cnt := &f[c]
		switch pass {
		case PassBackward:
			cnt = &b[c]
		case PassWeightGrad:
			cnt = &w[c]
		}
		if *cnt < m { // the micro-batches past m are the table's padding
			out = append(out, Op{Pass: pass, MB: int32(*cnt), Chunk: k[c]})
		}
		*cnt++
	}
	for range 2*(p-r) - 1 {
		put(PassForward, 0)
	}
	for range r {
		put(PassForward, 1)
		put(PassForward, 0)
	}
	for range p - r {
		put(PassForward, 1)
		put(PassBackward, 1)
		put(PassWeightGrad, 1)
	}
	for f[1] < f[0] || f[0] < n {
		if f[0] < n {
			put(PassForward, 0)
		}
		put(PassBackward, 0)
		put(PassWeightGrad, 0)
		put(PassForward, 1)
		put(PassBackward, 1)
		put(PassWeightGrad, 1)
	}
	for range r {
		put(PassBackward, 0)
		put(PassBackward, 1)
	}
	for range p - r {
		put(PassBackward, 0)
		put(PassWeightGrad, 0)
	}
	for w[1] < b[1] {
		put(PassWeightGrad, 1)
	}
	for w[0] < b[0] {
		put(PassWeightGrad, 0)
	}
	return out
}

// dualPipeOrder is DualPipe.step's order on rank r. Phase 0 is the direction in
// which the rank is stage h = min(r, p − 1 − r), phase 1 the one in which it is
// stage p − 1 − h.
func dualPipeOrder(out []Op, p, m, r int) []Op {
	half, h, chunks := p/2, min(r, p-1-r), m/2
	var dir [2]uint8
	var stage [2]int32
	stage[0], stage[1] = int32(h), int32(p-1-h)
	if r >= half {
		dir[0], dir[1] = 1, 0
	} else {
		dir[0], dir[1] = 0, 1
	}
	var f, b [2]int32
	var pendingW []Op // zero-bubble backwards whose W has not run, first in first out
	F := func(ph int) Op {
		o := Op{Dir: dir[ph], Pass: PassForward, MB: f[ph], Chunk: stage[ph]}
		f[ph]++
		return o
	}
	B := func(ph int, zb bool) Op {
		o := Op{Dir: dir[ph], Pass: PassBackward, Full: !zb, MB: b[ph], Chunk: stage[ph]}
		b[ph]++
		if zb {
			pendingW = append(pendingW, Op{Dir: o.Dir, Pass: PassWeightGrad, MB: o.MB, Chunk: o.Chunk})
		}
		return o
	}
	W := func() Op {
		o := pendingW[0]
		pendingW = pendingW[1:]
		return o
	}
	fused := func(fo, bo Op) {
		fo.Fused = true
		out = append(out, fo, bo)
	}
	middle := h == half-1
	for range (half - h - 1) * 2 { // step 1: nF0
		out = append(out, F(0))
	}
	for range h + 1 { // step 2: nF0F1
		out = append(out, F(0), F(1))
	}
	for range half - h - 1 { // step 3: nB1W1F1, zero bubble
		out = append(out, B(1, true), W(), F(1))
	}
	for i := range chunks - p + h + 1 { // step 4, the main step: nF0B1F1B0
		if i == 0 && middle {
			out = append(out, F(0), B(1, false)) // the middle rank does not overlap these two
		} else {
			fused(F(0), B(1, false))
		}
		fused(F(1), B(0, false))
	}
	for range half - h - 1 { // step 5: nB1F1B0
		out = append(out, B(1, false))
		fused(F(1), B(0, false))
	}
	zb := false
	for i := range h + 1 { // step 6: nB1B0, the second half with zero bubble
		if i == (h+1)/2 && h%2 == 1 {
			zb = true
		}
		out = append(out, B(1, zb))
		if i == (h+1)/2 && h%2 == 0 {
			zb = true
		}
		out = append(out, B(0, zb))
	}
	for range half - h - 1 { // step 7: nWB0, zero bubble
		out = append(out, W(), B(0, true))
	}
	for range h + 1 { // step 8: nW
		out = append(out, W())
	}
	return out
}

// pipeDAG is a schedule's blocks in an order in which every block comes after
// the blocks it waits for (its rank's previous block and its input), so that
// executing it for given block lengths is one pass.
type pipeDAG struct {
	p     int
	nodes []pipeNode
	// witness are the path counts a search bounds with (witnesses), computed on
	// first use.
	wOnce   sync.Once
	witness []pathCount
}

type pipeNode struct {
	rank int32
	// dep is the node whose output this one needs, prev the rank's previous
	// node; -1 for none. A fused pair's second node has dep set and runs with the
	// first.
	dep, prev int32
	op        Op
	// blocking: the rank's stream waits for the send that ends this block (the
	// warm-up's forwards and the cool-down's backwards of 1F1B and
	// interleaving; elsewhere a forward before the rank's first backward, a
	// backward after its last forward); the steady state's sends run
	// asynchronously where BlockTimes.S and SB say so.
	blocking bool
}

var errDeadlock = errors.New("pipeline: the schedule's blocks wait on each other")

// compileScratch is compilePipe's working memory, recycled (compilePool): the
// ranks' orders one after the other, where each starts, the node that ran each
// block, and each rank's next op, last node and the block it waits for.
type compileScratch struct {
	ops  []Op
	from []int
	// firstB and lastF: each rank's first backward and last forward in ops.
	firstB, lastF []int
	done          []int32
	next          []int
	last          []int32
	wait          []int
}

var compilePool = sync.Pool{New: func() any { return new(compileScratch) }}

// compilePipe orders the blocks of a schedule's per-rank orders.
func compilePipe(s Schedule, p, v, m int) (*pipeDAG, error) {
	return compileInto(s, p, v, m, nil)
}

// compileInto is compilePipe into nodes' room (nil: new room).
func compileInto(s Schedule, p, v, m int, nodes []pipeNode) (*pipeDAG, error) {
	if p < 1 || v < 1 || m < 1 {
		return nil, fmt.Errorf("pipeline: %d ranks, %d chunks, %d micro-batches", p, v, m)
	}
	sc := compilePool.Get().(*compileScratch)
	defer compilePool.Put(sc)
	ops, from := sc.ops[:0], append(sc.from[:0], 0)
	for r := range p {
		var err error
		if ops, err = appendOrder(ops, s, p, v, m, r); err != nil {
			return nil, err
		}
		from = append(from, len(ops))
	}
	sc.ops, sc.from = ops, from
	// firstB and lastF are each rank's first backward and last forward (indices
	// in ops): forwards before the one and backwards after the other are the
	// warm-up's and cool-down's.
	firstB := slices.Grow(sc.firstB[:0], p)[:p]
	lastF := slices.Grow(sc.lastF[:0], p)[:p]
	sc.firstB, sc.lastF = firstB, lastF
	for r := range p {
		firstB[r], lastF[r] = from[r+1], -1
		for i := from[r]; i < from[r+1]; i++ {
			if ops[i].Pass == PassForward {
				lastF[r] = i
			} else if firstB[r] == from[r+1] {
				firstB[r] = i
			}
		}
	}
	chunks := pipelineChunks(s, p, v)
	dirs := 1
	if s == DualPipe {
		dirs = 2
	}
	idx := func(dir, mb, chunk int, pass Pass) int {
		return ((dir*m+mb)*chunks+chunk)*3 + int(pass)
	}
	done := slices.Grow(sc.done[:0], dirs*m*chunks*3)[:dirs*m*chunks*3]
	sc.done = done
	for i := range done {
		done[i] = -1
	}
	// need is the block (its index in done) an op's input comes from, -1 for none.
	need := func(o Op) int {
		d, mb, k := int(o.Dir), int(o.MB), int(o.Chunk)
		switch {
		case o.Pass == PassForward && k == 0:
			return -1
		case o.Pass == PassForward:
			return idx(d, mb, k-1, PassForward)
		case o.Pass == PassBackward && k == chunks-1:
			return idx(d, mb, k, PassForward)
		case o.Pass == PassBackward:
			return idx(d, mb, k+1, PassBackward)
		}
		return idx(d, mb, k, PassBackward)
	}
	total := len(ops)
	if cap(nodes) < total {
		nodes = make([]pipeNode, 0, total)
	}
	nodes = nodes[:0]
	next := append(sc.next[:0], from[:p]...) // each rank's next op in ops
	last := slices.Grow(sc.last[:0], p)[:p]
	// wait is the block a rank's next op waits for (its index in done), -1 for
	// none: the rank is passed over until that block has run, as trying its op
	// again would find.
	wait := slices.Grow(sc.wait[:0], p)[:p]
	sc.next, sc.last, sc.wait = next, last, wait
	for i := range last {
		last[i], wait[i] = -1, -1
	}
	for len(nodes) < total {
		progressed := false
		for r := range p {
			if w := wait[r]; w >= 0 && done[w] < 0 {
				continue
			}
			wait[r] = -1
			for end := from[r+1]; next[r] < end; {
				o := ops[next[r]]
				if int(o.MB) >= m || int(o.Chunk) >= chunks || PipelineRank(s, p, int(o.Chunk), int(o.Dir)) != r {
					return nil, fmt.Errorf("pipeline: %s rank %d runs %+v", s, r, o)
				}
				var dep int32 = -1
				if j := need(o); j >= 0 {
					if dep = done[j]; dep < 0 {
						wait[r] = j
						break
					}
				}
				n := 1
				var dep2 int32 = -1
				if o.Fused {
					if next[r]+1 == end {
						return nil, fmt.Errorf("pipeline: %s rank %d ends with a fused %+v", s, r, o)
					}
					if j := need(ops[next[r]+1]); j >= 0 {
						if dep2 = done[j]; dep2 < 0 {
							wait[r] = j
							break
						}
					}
					n = 2
				}
				for j := range n {
					x, d := o, dep
					if j == 1 {
						x, d = ops[next[r]+1], dep2
					}
					at := int32(len(nodes))
					i := next[r] + j
					blocking := x.Pass == PassForward && i < firstB[r] || x.Pass != PassForward && i > lastF[r]
					if s == Interleaved || s == OneFOneB {
						// The warm-up's forwards and the cool-down's backwards,
						// as many as the rank warms up with: the steady state's
						// first forward and last backward post their sends and
						// go on (Megatron-Core core_v0.12.0 schedules.py
						// forward_backward_pipelining_with_interleaving: the
						// loops over range(num_warmup_microbatches) and
						// range(num_microbatches_remaining, total) block).
						warm := min(interleavedWarmUp(p, v, r), m*v)
						if s == OneFOneB {
							warm = min(interleavedWarmUp(p, 1, r), m)
						}
						blocking = x.Pass == PassForward && i-from[r] < warm || x.Pass != PassForward && from[r+1]-i <= warm
					}
					nodes = append(nodes, pipeNode{rank: int32(r), dep: d, prev: last[r], op: x, blocking: blocking})
					last[r] = at
					done[idx(int(x.Dir), int(x.MB), int(x.Chunk), x.Pass)] = at
				}
				next[r] += n
				progressed = true
			}
		}
		if !progressed {
			return nil, errDeadlock
		}
	}
	return &pipeDAG{p: p, nodes: nodes}, nil
}

// BlockTimes are the lengths of one rank's blocks of one model chunk: forward,
// backward (B alone under the zero-bubble schedules) and weight gradient, each
// with the communication that ends it — and S and SB, the pipeline sends after a
// forward and after a backward block that the blocks do not include because they
// run asynchronously (framework.PipelineSendOverlap): a steady-state block's
// successor on the next rank starts S (SB) after the block ends, its own rank
// goes on at once; a blocking block (the warm-up's forwards, the cool-down's
// backwards) lasts S (SB) longer and its successor starts when it ends. The rank
// waits for a send before it posts the one after the next (it waits on the
// previous handle after posting a send), which the model takes to be done by
// then: a send shorter than a block. S and SB differ where the hops a rank sends
// on do (its forwards' to the next rank, its backwards' to the previous one).
type BlockTimes struct{ F, B, W, S, SB float64 }

// send is the asynchronous send that ends a block of pass o.
func (d BlockTimes) send(o Op) float64 {
	if o.Pass == PassForward {
		return d.S
	}
	return d.SB
}

func (d BlockTimes) of(o Op) float64 {
	switch o.Pass {
	case PassForward:
		return d.F
	case PassWeightGrad:
		return d.W
	}
	if o.Full {
		return d.B + d.W
	}
	return d.B
}

// PipelineBlock is one executed block.
type PipelineBlock struct {
	Rank       int
	Op         Op
	Start, End float64
}

// execute runs the blocks as soon as their rank is free and their input has
// arrived; times gives each rank's block lengths (one entry: every rank's). It
// returns the makespan and, when blocks is not nil, appends the blocks to it.
func (g *pipeDAG) execute(times []BlockTimes, end []float64, blocks *[]PipelineBlock) float64 {
	span := 0.0
	for i := 0; i < len(g.nodes); i++ {
		n := &g.nodes[i]
		d := times[0]
		if len(times) > 1 {
			d = times[n.rank]
		}
		start := 0.0
		if n.prev >= 0 {
			start = end[n.prev]
		}
		if n.dep >= 0 {
			start = max(start, end[n.dep]+g.inFlight(times, n.dep))
		}
		if n.op.Fused { // both start once both inputs are in
			if n2 := &g.nodes[i+1]; n2.dep >= 0 {
				start = max(start, end[n2.dep]+g.inFlight(times, n2.dep))
			}
		}
		end[i] = start + d.of(n.op)
		if n.blocking {
			end[i] += d.send(n.op)
		}
		if blocks != nil {
			*blocks = append(*blocks, PipelineBlock{Rank: int(n.rank), Op: n.op, Start: start, End: end[i]})
		}
		if n.op.Fused {
			// The pair computes one after the other and sends both outputs when
			// both are done (DualPipe's _forward_backward_chunk).
			i++
			n2 := &g.nodes[i]
			mid := end[i-1]
			end[i] = mid + d.of(n2.op)
			end[i-1] = end[i]
			if blocks != nil {
				*blocks = append(*blocks, PipelineBlock{Rank: int(n2.rank), Op: n2.op, Start: mid, End: end[i]})
			}
		}
		span = max(span, end[i])
	}
	return span
}

// inFlight is how long the output of node j travels after its block ends: its
// rank's asynchronous send, none where the block waited for it.
func (g *pipeDAG) inFlight(times []BlockTimes, j int32) float64 {
	n := &g.nodes[j]
	if n.blocking {
		return 0
	}
	if len(times) > 1 {
		return times[n.rank].send(n.op)
	}
	return times[0].send(n.op)
}

// pathCount counts the forward, backward and weight-gradient block lengths along
// a path of the schedule's blocks (a backward that computes its weight gradients
// counts one of each).
type pathCount [3]int32

func weightOf(o Op) pathCount {
	switch o.Pass {
	case PassForward:
		return pathCount{1, 0, 0}
	case PassWeightGrad:
		return pathCount{0, 0, 1}
	}
	if o.Full {
		return pathCount{0, 1, 1}
	}
	return pathCount{0, 1, 0}
}

// endPool recycles the executions' arrays of block end times.
var endPool = sync.Pool{New: func() any { return new([]float64) }}

type pipeKey struct {
	s       Schedule
	p, v, m int
}

// pipe is the compiled schedule, cached when c is not nil.
func (c *groupCache) pipe(s Schedule, p, v, m int) (*pipeDAG, error) {
	if c == nil {
		return compilePipe(s, p, v, m)
	}
	return c.pipes.get(s, p, v, m)
}

// Schedules memoises compiled pipeline schedules (and the witnesses of their
// critical paths, computed on first use). A compiled schedule is a function of the
// schedule, the depth, the chunks and the micro-batches alone — of no model,
// training or cluster — so estimators of different clusters can share one
// (Estimator.ShareSchedules): the first search on a new cluster, whose estimator
// places every communication group afresh, then finds the tables earlier searches
// compiled (a cold GPT-3 175B search on 1024 GPUs spent 13 % of its CPU compiling
// them again). It holds at most maxSharedBlocks blocks, then starts again empty.
// Safe for concurrent use; the zero value is not: use NewSchedules.
type Schedules = pipeTables

type pipeTables struct {
	mu     sync.RWMutex
	m      map[pipeKey]*pipeDAG
	blocks int
	// w are the witnesses of schedules compiled only to bound with (witnessesOf):
	// a search bounds with dozens of tables and executes few of them, so their
	// blocks are not kept.
	w map[pipeKey][]pathCount
}

// NewSchedules returns an empty memo of compiled schedules.
func NewSchedules() *Schedules {
	return &pipeTables{m: map[pipeKey]*pipeDAG{}, w: map[pipeKey][]pathCount{}}
}

// maxWitnessTables bounds the schedules whose witnesses alone a memo keeps (a few
// path counts each).
const maxWitnessTables = 1 << 14

// nodesPool recycles the blocks of schedules compiled only for their witnesses.
var nodesPool = sync.Pool{New: func() any { return new([]pipeNode) }}

// witnessesOf are the witnesses of the compiled schedule: those of the memo's
// compiled schedule if it has it, else of a compilation whose blocks are not kept.
func (t *pipeTables) witnessesOf(s Schedule, p, v, m int) ([]pathCount, error) {
	k := pipeKey{s, p, v, m}
	t.mu.RLock()
	w, ok := t.w[k]
	g := t.m[k]
	t.mu.RUnlock()
	if ok {
		return w, nil
	}
	if g != nil {
		g.wOnce.Do(func() { g.witness = witnesses(g) })
		return g.witness, nil
	}
	buf := nodesPool.Get().(*[]pipeNode)
	defer nodesPool.Put(buf)
	g, err := compileInto(s, p, v, m, *buf)
	if err != nil {
		return nil, err
	}
	*buf = g.nodes
	w = witnesses(g)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.w) >= maxWitnessTables {
		t.w = map[pipeKey][]pathCount{}
	}
	t.w[k] = w
	return w, nil
}

// maxSharedBlocks bounds the blocks of the shared compiled schedules: about 24 MB
// of nodes (a table of a search has at most maxTableBlocks blocks, a span's a few
// times more).
const maxSharedBlocks = 1 << 20

func (t *pipeTables) get(s Schedule, p, v, m int) (*pipeDAG, error) {
	k := pipeKey{s, p, v, m}
	t.mu.RLock()
	g, ok := t.m[k]
	t.mu.RUnlock()
	if ok {
		return g, nil
	}
	g, err := compilePipe(s, p, v, m)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if q, ok := t.m[k]; ok {
		return q, nil // another estimator's, with its witnesses
	}
	if t.blocks+len(g.nodes) > maxSharedBlocks {
		t.m, t.blocks = map[pipeKey]*pipeDAG{}, 0
	}
	t.m[k] = g
	t.blocks += len(g.nodes)
	return g, nil
}

// SimulatedMicroBatches is how many of m micro-batches a schedule's execution runs
// before the pipeline is in its steady state, where each further micro-batch adds
// the busiest rank's work and nothing else: m up to 2p (DualPipe's and ZB-V's
// tables reach their steady state there); past it, a count of the same class under
// the schedule's rules (a multiple of p for interleaving, even for DualPipe).
// TestPipelineSteadyState checks the execution of every m against the extrapolation.
func SimulatedMicroBatches(s Schedule, p, m int) int {
	base, step := 2*p, 1
	switch s {
	case Interleaved:
		step = p
	case DualPipe:
		step = 2
	}
	if m <= base+step {
		return m
	}
	return m - (m-base)/step*step
}

// PipelineSpan executes schedule s over p ranks of v chunks with m micro-batches
// per replica: the time from the first block to the last, every rank running
// times' block lengths (one entry: every rank alike, else one per rank). With
// blocks not nil the simulated blocks are appended to it: the first
// SimulatedMicroBatches (simulated) of them, the rest adding the busiest rank's
// work each. The estimator keeps the compiled tables.
func (e *Estimator) PipelineSpan(s Schedule, p, v, m int, times []BlockTimes, blocks *[]PipelineBlock) (span float64, simulated int, err error) {
	return pipelineSpan(e.groupCache, s, p, v, m, times, blocks, true)
}

// closedSpan is the span of GPipe, 1F1B and interleaved 1F1B (with a multiple of p
// micro-batches) when every rank runs the same blocks and none is asked for: v·m +
// p − 1 forward-and-backward slots of one chunk, what executing their tables gives
// (TestPipelineSteadyState checks it equal), without executing them.
func closedSpan(s Schedule, p, v, m int, times []BlockTimes, blocks *[]PipelineBlock) (float64, bool) {
	if blocks != nil || len(times) != 1 || times[0].W != 0 || times[0].S != 0 || times[0].SB != 0 {
		return 0, false
	}
	switch {
	case s == GPipe, s == OneFOneB:
		v = 1
	case s == Interleaved && m%p == 0:
	default:
		return 0, false
	}
	d := times[0]
	return float64(v*m+p-1) * (d.F + d.B), true
}

// ExecutePipeline is PipelineSpan without an estimator's cache of tables.
func ExecutePipeline(s Schedule, p, v, m int, times []BlockTimes, blocks *[]PipelineBlock) (span float64, simulated int, err error) {
	return pipelineSpan(nil, s, p, v, m, times, blocks, false)
}

// pipelineSpan is PipelineSpan with c's tables (nil: compiled per call); with
// memoise, c's span memo keeps the spans of calls without blocks.
func pipelineSpan(c *groupCache, s Schedule, p, v, m int, times []BlockTimes, blocks *[]PipelineBlock, memoise bool) (span float64, simulated int, err error) {
	v = chunksPerRank(s, v)
	if len(times) != 1 && len(times) != p {
		return 0, 0, fmt.Errorf("pipeline: %d ranks' block lengths for %d ranks", len(times), p)
	}
	if span, ok := closedSpan(s, p, v, m, times, blocks); ok {
		if math.IsNaN(span) {
			return 0, 0, errors.New("pipeline: block lengths are not numbers")
		}
		return span, m, nil
	}
	sim := SimulatedMicroBatches(s, p, m)
	var key []byte
	if memoise && c != nil && blocks == nil {
		var kb [640]byte // the key of up to 15 ranks' lengths
		key = spanKey(kb[:0], s, p, v, m, times)
		if span, ok := c.spanMemo().m.Load(string(key)); ok {
			return span.(float64), sim, nil
		}
	}
	g, err := c.pipe(s, p, v, sim)
	if err != nil {
		return 0, 0, err
	}
	buf := endPool.Get().(*[]float64)
	if cap(*buf) < len(g.nodes) {
		*buf = make([]float64, len(g.nodes))
	}
	span = g.execute(times, (*buf)[:len(g.nodes)], blocks)
	endPool.Put(buf)
	if sim < m {
		busy := 0.0
		for _, d := range times {
			busy = max(busy, float64(v)*(d.F+d.B+d.W))
		}
		span += float64(m-sim) * busy
	}
	if math.IsNaN(span) {
		return 0, 0, errors.New("pipeline: block lengths are not numbers")
	}
	if key != nil {
		memo := c.spanMemo()
		if memo.n.Add(1) > maxSpans {
			c.spans.CompareAndSwap(memo, &spanMemo{})
			memo = c.spanMemo()
			memo.n.Add(1)
		}
		memo.m.Store(string(key), span)
	}
	return span, sim, nil
}

// spanMemo is one generation of executed spans (spanKey → span): a search prices
// the layouts it returns again in full, and layouts that differ only in what the
// blocks do not depend on (often the ZeRO stage) have the same block lengths. Once
// a generation holds maxSpans spans a fresh one replaces it, so that a long-lived
// estimator stays bounded (a key is about 70 bytes, 32 more per rank with per-rank
// lengths: at most a few MB).
type spanMemo struct {
	m sync.Map
	n atomic.Int64
}

const maxSpans = 1 << 12

// spanMemo is the current generation of spans.
func (c *groupCache) spanMemo() *spanMemo {
	return currentGeneration(&c.spans, func() *spanMemo { return &spanMemo{} })
}

// spanKey appends to b what a span depends on: the schedule, depth, chunks,
// micro-batches and every block length (as bits).
func spanKey(b []byte, s Schedule, p, v, m int, times []BlockTimes) []byte {
	b = append(append(b, byte(len(s))), s...)
	b = binary.LittleEndian.AppendUint64(b, uint64(p))
	b = binary.LittleEndian.AppendUint64(b, uint64(v))
	b = binary.LittleEndian.AppendUint64(b, uint64(m))
	for _, t := range times {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t.F))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t.B))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t.W))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t.S))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t.SB))
	}
	return b
}

// maxTableBlocks bounds the tables a search compiles to bound layouts with.
const maxTableBlocks = 6000

// PipelineTable is a schedule compiled for one pipeline depth and micro-batch
// count, to bound many layouts' spans without executing it each time.
type PipelineTable struct {
	s         Schedule
	v, m, sim int
	paths     []pathCount // witnesses
}

// PipelineTable compiles schedule s over p ranks of v chunks with m micro-batches
// per replica (cached).
func (e *Estimator) PipelineTable(s Schedule, p, v, m int) (*PipelineTable, error) {
	_, v = MicroBatchBlocks(Result{Layout: Layout{Schedule: s, VirtualStages: v}})
	sim := SimulatedMicroBatches(s, p, m)
	if 3*p*v*sim > maxTableBlocks {
		return nil, fmt.Errorf("pipeline: %d ranks × %d chunks × %d micro-batches is too large a table to bound with", p, v, sim)
	}
	w, err := e.pipes.witnessesOf(s, p, v, sim)
	if err != nil {
		return nil, err
	}
	return &PipelineTable{s: s, v: v, m: m, sim: sim, paths: w}, nil
}

func add(a, b pathCount) pathCount { return pathCount{a[0] + b[0], a[1] + b[1], a[2] + b[2]} }

// witnessRatios are the block lengths (forward 1) witnesses executes a table
// with: the backward 1.2 or 2 × the forward, W 0.4 or 0.9 × it.
var witnessRatios = [numWitnesses]BlockTimes{{F: 1, B: 1.2, W: 0.4}, {F: 1, B: 1.2, W: 0.9}, {F: 1, B: 2, W: 0.4}, {F: 1, B: 2, W: 0.9}}

const numWitnesses = 4

// witnessPool recycles witnesses' arrays of end times and predecessors.
var witnessPool = sync.Pool{New: func() any { return new(witnessBufs) }}

type witnessBufs struct {
	end  [][numWitnesses]float64
	from [][numWitnesses]int32
}

// witnesses are the block counts of the critical paths of executing g at the
// witnessRatios, in that order, each once: each counts the blocks of a real path,
// so for any block lengths the longest of them is at most the span. The four
// executions run in one pass over the blocks (a table's blocks are read once, not
// four times); each takes, block by block, what an execution at its ratio alone
// takes: the same comparisons, the same sums in the same order.
func witnesses(g *pipeDAG) []pathCount {
	// The lengths of a forward, a B, a W and a full backward at each ratio
	// (BlockTimes.of).
	var lens [4][numWitnesses]float64
	for r, d := range witnessRatios {
		lens[0][r], lens[1][r], lens[2][r], lens[3][r] = d.F, d.B, d.W, d.B+d.W
	}
	kind := func(o Op) int {
		switch o.Pass {
		case PassForward:
			return 0
		case PassWeightGrad:
			return 2
		}
		if o.Full {
			return 3
		}
		return 1
	}
	bufs := witnessPool.Get().(*witnessBufs)
	defer witnessPool.Put(bufs)
	if cap(bufs.end) < len(g.nodes) {
		bufs.end = make([][numWitnesses]float64, len(g.nodes))
		bufs.from = make([][numWitnesses]int32, len(g.nodes))
	}
	end, from := bufs.end[:len(g.nodes)], bufs.from[:len(g.nodes)]
	var last [numWitnesses]int32
	span := [numWitnesses]float64{-1, -1, -1, -1}
	for i := 0; i < len(g.nodes); i++ {
		n := &g.nodes[i]
		var start [numWitnesses]float64
		f := [numWitnesses]int32{-1, -1, -1, -1}
		if n.prev >= 0 {
			start, f = end[n.prev], [numWitnesses]int32{n.prev, n.prev, n.prev, n.prev}
		}
		if q := n.dep; q >= 0 {
			for r := range numWitnesses {
				if end[q][r] > start[r] {
					start[r], f[r] = end[q][r], q
				}
			}
		}
		j := i
		l := &lens[kind(n.op)]
		if n.op.Fused {
			j = i + 1
			if q := g.nodes[j].dep; q >= 0 {
				for r := range numWitnesses {
					if end[q][r] > start[r] {
						start[r], f[r] = end[q][r], q
					}
				}
			}
			l2 := &lens[kind(g.nodes[j].op)]
			for r := range numWitnesses {
				end[j][r] = start[r] + l[r] + l2[r]
			}
			end[i], from[i], from[j] = end[j], f, f
		} else {
			for r := range numWitnesses {
				end[i][r] = start[r] + l[r]
			}
			from[i] = f
		}
		for r := range numWitnesses {
			if end[j][r] > span[r] {
				span[r], last[r] = end[j][r], int32(j)
			}
		}
		i = j
	}
	out := make([]pathCount, 0, numWitnesses)
	for r := range numWitnesses {
		var c pathCount
		for k := last[r]; k >= 0; {
			n := &g.nodes[k]
			w := weightOf(n.op)
			switch { // a DualPipe pair counts both its blocks
			case n.op.Fused:
				w = add(w, weightOf(g.nodes[k+1].op))
			case k > 0 && g.nodes[k-1].op.Fused:
				w = add(w, weightOf(g.nodes[k-1].op))
			}
			c = add(c, w)
			k = from[k][r]
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// LowerBound is a lower bound of the pipeline span of a layout with this table's
// schedule whose bounds (LowerBounds, for any schedule) are b and whose micro-batch
// takes at least perMB through a stage (b.PerMicroBatch, or more once exposure is
// added): its blocks are at least the compute of b's passes with perMB's
// communication beyond them split as the estimate splits it, no sends, and the
// span grows with every block's length. b is read in place (a search bounds each
// shape's zero-bubble layouts with it; Bounds are 264 bytes).
func (t *PipelineTable) LowerBound(b *Bounds, perMB float64) float64 {
	comm := max(0, perMB-b.Forward-b.Backward-b.Recompute)
	d := blockTimes(t.s, t.v, b.Forward, b.Backward, b.Recompute, b.WeightGrad, comm, 0).BlockTimes
	span := 0.0
	for _, c := range t.paths {
		span = max(span, float64(c[0])*d.F+float64(c[1])*d.B+float64(c[2])*d.W)
	}
	return span + float64(t.m-t.sim)*float64(t.v)*(d.F+d.B+d.W)
}
