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
		switch s {
		case GPipe:
			out[r] = gpipeOrder(p, m, r)
		case OneFOneB:
			out[r] = interleavedOrder(p, 1, m, r)
		case Interleaved:
			out[r] = interleavedOrder(p, v, m, r)
		case ZeroBubble:
			out[r] = zbh1Order(p, m, r)
		case ZeroBubbleV:
			out[r] = zbvOrder(p, m, r)
		case DualPipe:
			if p%2 != 0 || m%2 != 0 {
				return nil, fmt.Errorf("pipeline: dualpipe needs an even pp and micro-batches (got %d, %d)", p, m)
			}
			out[r] = dualPipeOrder(p, m, r)
		default:
			return nil, fmt.Errorf("pipeline: unknown schedule %q", s)
		}
	}
	return out, nil
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

func gpipeOrder(p, m, r int) []Op {
	out := make([]Op, 0, 2*m)
	for mb := range m {
		out = append(out, Op{Pass: PassForward, MB: int32(mb), Chunk: int32(r)})
	}
	for mb := range m {
		out = append(out, Op{Pass: PassBackward, Full: true, MB: int32(mb), Chunk: int32(r)})
	}
	return out
}

// interleavedOrder is 1F1B's order (v = 1) and Megatron-LM's interleaved order.
func interleavedOrder(p, v, m, r int) []Op {
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
	warm := p - r - 1
	if v > 1 {
		warm = (p-r-1)*2 + (v-1)*p
	}
	warm = min(warm, total)
	out := make([]Op, 0, 2*total)
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

func zbh1Order(p, m, r int) []Op {
	warm := min(p-r-1, m)
	out := make([]Op, 0, 3*m)
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

func zbvOrder(p, m, r int) []Op {
	n := max(2*p-1, m) // the table is laid out for at least 2p − 1 micro-batches
	k := [2]int32{int32(r), int32(2*p - 1 - r)}
	var f, b, w [2]int
	out := make([]Op, 0, 6*n)
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
func dualPipeOrder(p, m, r int) []Op {
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
	out := make([]Op, 0, 3*m)
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
}

var errDeadlock = errors.New("pipeline: the schedule's blocks wait on each other")

// compilePipe orders the blocks of a schedule's per-rank orders.
func compilePipe(s Schedule, p, v, m int) (*pipeDAG, error) {
	orders, err := PipelineOrders(s, p, v, m)
	if err != nil {
		return nil, err
	}
	chunks := pipelineChunks(s, p, v)
	dirs := 1
	if s == DualPipe {
		dirs = 2
	}
	idx := func(dir, mb, chunk int, pass Pass) int {
		return ((dir*m+mb)*chunks+chunk)*3 + int(pass)
	}
	done := make([]int32, dirs*m*chunks*3)
	for i := range done {
		done[i] = -1
	}
	// input is the node an op needs, -1 for none, or -2 when not run yet.
	input := func(o Op) int32 {
		d, mb, k := int(o.Dir), int(o.MB), int(o.Chunk)
		var j int
		switch {
		case o.Pass == PassForward && k == 0:
			return -1
		case o.Pass == PassForward:
			j = idx(d, mb, k-1, PassForward)
		case o.Pass == PassBackward && k == chunks-1:
			j = idx(d, mb, k, PassForward)
		case o.Pass == PassBackward:
			j = idx(d, mb, k+1, PassBackward)
		default:
			j = idx(d, mb, k, PassBackward)
		}
		if done[j] < 0 {
			return -2
		}
		return done[j]
	}
	total := 0
	for _, o := range orders {
		total += len(o)
	}
	dag := &pipeDAG{p: p, nodes: make([]pipeNode, 0, total)}
	next := make([]int, p)
	last := make([]int32, p)
	for i := range last {
		last[i] = -1
	}
	for len(dag.nodes) < total {
		progressed := false
		for r := range p {
			for next[r] < len(orders[r]) {
				o := orders[r][next[r]]
				if int(o.MB) >= m || int(o.Chunk) >= chunks || PipelineRank(s, p, int(o.Chunk), int(o.Dir)) != r {
					return nil, fmt.Errorf("pipeline: %s rank %d runs %+v", s, r, o)
				}
				dep := input(o)
				if dep == -2 {
					break
				}
				n := 1
				var dep2 int32 = -1
				if o.Fused {
					o2 := orders[r][next[r]+1]
					if dep2 = input(o2); dep2 == -2 {
						break
					}
					n = 2
				}
				for j := range n {
					x, d := o, dep
					if j == 1 {
						x, d = orders[r][next[r]+1], dep2
					}
					at := int32(len(dag.nodes))
					dag.nodes = append(dag.nodes, pipeNode{rank: int32(r), dep: d, prev: last[r], op: x})
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
	return dag, nil
}

// BlockTimes are the lengths of one rank's blocks of one model chunk: forward,
// backward (B alone under the zero-bubble schedules) and weight gradient, each
// with the communication that ends it.
type BlockTimes struct{ F, B, W float64 }

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
			start = max(start, end[n.dep])
		}
		if n.op.Fused { // both start once both inputs are in
			if n2 := &g.nodes[i+1]; n2.dep >= 0 {
				start = max(start, end[n2.dep])
			}
		}
		end[i] = start + d.of(n.op)
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
}

// NewSchedules returns an empty memo of compiled schedules.
func NewSchedules() *Schedules { return &pipeTables{m: map[pipeKey]*pipeDAG{}} }

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
	return pipelineSpan(e.groupCache, s, p, v, m, times, blocks)
}

// closedSpan is the span of GPipe, 1F1B and interleaved 1F1B (with a multiple of p
// micro-batches) when every rank runs the same blocks and none is asked for: v·m +
// p − 1 forward-and-backward slots of one chunk, what executing their tables gives
// (TestPipelineSteadyState checks it equal), without executing them.
func closedSpan(s Schedule, p, v, m int, times []BlockTimes, blocks *[]PipelineBlock) (float64, bool) {
	if blocks != nil || len(times) != 1 || times[0].W != 0 {
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
	return pipelineSpan(nil, s, p, v, m, times, blocks)
}

func pipelineSpan(c *groupCache, s Schedule, p, v, m int, times []BlockTimes, blocks *[]PipelineBlock) (span float64, simulated int, err error) {
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
	if c != nil && blocks == nil {
		var kb [256]byte
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
// estimator stays bounded (a key is 30 bytes, or 24 per rank with per-rank
// lengths: at most a few MB).
type spanMemo struct {
	m sync.Map
	n atomic.Int64
}

const maxSpans = 1 << 12

// spanMemo is the current generation of spans.
func (c *groupCache) spanMemo() *spanMemo {
	if m := c.spans.Load(); m != nil {
		return m
	}
	c.spans.CompareAndSwap(nil, &spanMemo{})
	return c.spans.Load()
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
	g, err := e.pipe(s, p, v, sim)
	if err != nil {
		return nil, err
	}
	g.wOnce.Do(func() { g.witness = witnesses(g) })
	return &PipelineTable{s: s, v: v, m: m, sim: sim, paths: g.witness}, nil
}

func add(a, b pathCount) pathCount { return pathCount{a[0] + b[0], a[1] + b[1], a[2] + b[2]} }

// witnesses are the block counts of the critical paths of executing g at a few
// ratios of forward, backward and weight-gradient lengths (the backward 1.2 or 2 ×
// the forward, W 0.4 or 0.9 × it): each counts the blocks of a real path, so for any block lengths the longest of them is
// at most the span.
func witnesses(g *pipeDAG) []pathCount {
	end := make([]float64, len(g.nodes))
	from := make([]int32, len(g.nodes))
	var out []pathCount
	for _, b := range []float64{1.2, 2.0} {
		for _, w := range []float64{0.4, 0.9} {
			c := g.critical(BlockTimes{F: 1, B: b, W: w}, end, from)
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// critical executes g with block lengths d and returns the block counts of a
// longest path.
func (g *pipeDAG) critical(d BlockTimes, end []float64, from []int32) pathCount {
	last, span := int32(-1), -1.0
	for i := 0; i < len(g.nodes); i++ {
		n := &g.nodes[i]
		start, f := 0.0, int32(-1)
		if n.prev >= 0 {
			start, f = end[n.prev], n.prev
		}
		if n.dep >= 0 && end[n.dep] > start {
			start, f = end[n.dep], n.dep
		}
		j := i
		if n.op.Fused {
			j = i + 1
			if q := g.nodes[j].dep; q >= 0 && end[q] > start {
				start, f = end[q], q
			}
			end[j] = start + d.of(n.op) + d.of(g.nodes[j].op)
			end[i], from[i], from[j] = end[j], f, f
		} else {
			end[i], from[i] = start+d.of(n.op), f
		}
		if end[j] > span {
			span, last = end[j], int32(j)
		}
		i = j
	}
	var c pathCount
	for k := last; k >= 0; {
		n := &g.nodes[k]
		w := weightOf(n.op)
		switch { // a DualPipe pair counts both its blocks
		case n.op.Fused:
			w = add(w, weightOf(g.nodes[k+1].op))
		case k > 0 && g.nodes[k-1].op.Fused:
			w = add(w, weightOf(g.nodes[k-1].op))
		}
		c = add(c, w)
		k = from[k]
	}
	return c
}

// LowerBound is a lower bound of the pipeline span of a layout with this table's
// schedule whose bounds (LowerBounds, for any schedule) are b and whose micro-batch
// takes at least perMB through a stage (b.PerMicroBatch, or more once exposure is
// added): its blocks are at least the compute of b's passes with perMB's
// communication beyond them split as the estimate splits it, no sends, and the
// span grows with every block's length.
func (t *PipelineTable) LowerBound(b Bounds, perMB float64) float64 {
	comm := max(0, perMB-b.Forward-b.Backward-b.Recompute)
	d := blockTimes(t.s, t.v, b.Forward, b.Backward, b.Recompute, b.WeightGrad, comm, 0).BlockTimes
	span := 0.0
	for _, c := range t.paths {
		span = max(span, float64(c[0])*d.F+float64(c[1])*d.B+float64(c[2])*d.W)
	}
	return span + float64(t.m-t.sim)*float64(t.v)*(d.F+d.B+d.W)
}
