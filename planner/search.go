package planner

import (
	"cmp"
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

// candidate is one layout of the search space with its lower-bound score and the
// placements it may take.
type candidate struct {
	bound              float64 // lower bound of the objective
	alts               []alt
	split              []int
	n                  int32
	ordinal            int32 // enumeration order: the deterministic tie-break
	tp, pp, dp, cp, ep int32
	mbs                int32
	v                  int16
	zero               int8
	rc, sched          uint8
	sp                 bool
	etp1               bool
	otp                bool // TP comm-GEMM overlap
	oep                bool // expert-parallel all-to-all overlap
	ulysses            bool // context parallelism by all-to-alls
	fp8                bool // fp8 weights
	offAct             bool // activation offload
	// maxHead ≥ the layout's memory headroom: the GPU's memory less the memory
	// lower bound of its ZeRO stage (+Inf where none is known).
	maxHead float64
}

var (
	recomputeCodes = [...]step.Recompute{step.RecomputeNone, step.RecomputeSelective, step.RecomputeFull, step.RecomputeOps}
	scheduleCodes  = [...]step.Schedule{step.OneFOneB, step.GPipe, step.Interleaved, step.ZeroBubble, step.DualPipe, step.ZeroBubbleV}
)

func (c *candidate) layout() step.Layout {
	return step.Layout{TP: int(c.tp), PP: int(c.pp), DP: int(c.dp), CP: int(c.cp), EP: int(c.ep), ZeRO: int(c.zero),
		MicroBatch: int(c.mbs), Recompute: recomputeCodes[c.rc], SP: c.sp, Schedule: scheduleCodes[c.sched],
		VirtualStages: int(c.v), LayerSplit: c.split, ETP: etpOf(c.etp1), OverlapTP: c.otp, OverlapEP: c.oep, CPAllToAll: c.ulysses,
		FP8Params: c.fp8, OffloadActivations: c.offAct}
}

// DefaultPlacementTolerance is Request.PlacementTolerance when it is unset: a scheduler
// keeps the cluster unfragmented for the next job unless that costs this job more
// than 2 %.
const DefaultPlacementTolerance = 0.02

// alt is a placement a layout may take: the GPUs, and the rank map (nil for the
// first GPUs in order).
type alt struct {
	place *Placement
	ranks *step.RankMap
	// cluster prices the placement: the request's, or a copy whose leaves the
	// other jobs on the free map's busy GPUs load (Request.clusterFor).
	cluster *topology.Cluster
	// slow, nic and link are the what-ifs the placement is priced with
	// (step.Request's SlowGPUSpeed, DegradedNICSpeed, DegradedLinkSpeed): the
	// request's, with those of the degraded nodes it uses (Request.whatIfs).
	slow, nic, link float64
}

// mostWholeNodesFree is the most whole nodes any of the candidate's placements
// leaves free.
func (c *candidate) mostWholeNodesFree() int { return mostWholeNodesFree(c.alts) }

// mostWholeNodesFree is the most whole nodes any of the placements leaves free.
func mostWholeNodesFree(alts []alt) int {
	most := 0
	for _, a := range alts {
		most = max(most, a.place.FreeWholeNodes)
	}
	return most
}

// etpOf is the step.Layout.ETP of a candidate: 1 for whole experts, else the TP
// default.
func etpOf(whole bool) int {
	if whole {
		return 1
	}
	return 0
}

// layoutWith is the candidate's layout with the search-wide settings of req.
func (c *candidate) layoutWith(req *Request) step.Layout {
	l := c.layout()
	if o := req.Constraints.Offload; o != step.OffloadNone {
		l.Offload = o
	}
	return l
}

// queue hands out the layouts of the shapes best bound first, ties in enumeration
// order — the order of sorting every layout, without holding them all. A shape is
// expanded once no layout already in the heap is better than its best bound; every
// layout still unexpanded then has a bound above the heap's top, and all layouts
// tied with the top are in the heap. A shape that comes up for the first time adds
// its communication bounds (step.Exposure) and goes back in line by its new best
// bound. The heap holds small entries, and a layout becomes a candidate only when it
// is taken.
type queue struct {
	e         *step.Estimator
	workers   int
	req       *Request
	sp        *space
	parts     []part
	shapes    []*shape
	unexposed shapeLine  // the shapes not exposed yet, by best bound, then ordinal
	exposing  []shapeKey // the next of them, being exposed (the first in line first)
	// exposingFirst is the first in line of those being exposed, as it was: the
	// workers raise the keys in exposing.
	exposingFirst shapeKey
	// memos are each exposing worker's memos of the grids it exposed shapes on:
	// memos[w][part] holds a part's grids (its shapes' pipeline depths: TP, CP
	// and GPUs are the part's, so DP follows), each with a memo for each of the
	// part's placements (alternatives).
	memos   [][]gridMemo
	exposed sync.WaitGroup
	done    atomic.Bool // the batch being exposed is
	batch   int         // shapes in the next batch
	// beyond is a bound no layout the search takes reaches, as far as it knows
	// (the K-th plan's score): a batch takes no shape beyond it but the first.
	beyond float64
	order  shapeHeap // the shapes exposed and not expanded, by best bound, then ordinal
	// items are the layouts of the expanded shapes, each shape's sorted by bound,
	// then ordinal; heap holds each expanded shape's first layout not taken, so
	// its top is the best layout left (a merge of the shapes' sorted layouts:
	// the heap holds a shape, not its every layout).
	items []layoutItem
	heap  []layoutRun
	// fronts are the evaluation's (nil: none): a shape's layouts that a plan in
	// hand beats whatever their memory (fronts.beaten on their bound and their
	// ZeRO stage's maxHeadroom) are set aside when it is expanded, as the
	// evaluation would set them aside when taken (the fronts only grow), and
	// counted in setAside until the evaluation reads them.
	fronts   *fronts
	setAside int
}

// layoutRun is an expanded shape's layouts not taken yet, items[pos:end], and the
// bound and ordinal of the first.
type layoutRun struct {
	bound    float64
	ordinal  int32
	pos, end int32
}

// layoutItem is a layout in the queue: its bound and ordinal, its shape, ZeRO
// stage and schedule (among the shape's).
type layoutItem struct {
	bound   float64
	ordinal int32
	shape   int32
	sched   uint16
	zero    int8
}

// newQueue orders the shapes: best bound first, ties in enumeration order.
func newQueue(e *step.Estimator, workers int, req *Request, sp *space, en *enumeration, buf *buffers) *queue {
	unexposed := slices.Grow(buf.unexposed[:0], len(en.shapes))
	for i, s := range en.shapes {
		unexposed = append(unexposed, shapeKey{s.best, s.ordinal, int32(i)})
	}
	q := &queue{e: e, workers: max(1, workers), req: req, sp: sp, parts: en.parts, shapes: en.shapes, unexposed: shapeLine{keys: unexposed},
		order: buf.order[:0], items: buf.items[:0], heap: buf.heap[:0], batch: maxExposeBatch / 2, beyond: math.Inf(1)}
	buf.line = q.unexposed.sort(buf.line)
	n := q.workers * len(en.parts)
	if cap(buf.memos) < n {
		buf.memos = append(buf.memos[:cap(buf.memos)], make([][]gridMemo, n-cap(buf.memos))...)
	}
	q.memos = buf.memos[:n]
	return q
}

// gridMemo is a worker's memos of one grid of a part (queue.memos): one for each
// of the part's placements.
type gridMemo struct {
	pp    int32
	memos []step.ExposureMemo
}

// memosFor are worker w's memos of shape s's grid, one for each placement of its
// part p.
func (q *queue) memosFor(w int, s *shape, p *part) []step.ExposureMemo {
	grids := &q.memos[w*len(q.parts)+int(p.idx)]
	for i := range *grids {
		if (*grids)[i].pp == s.pp {
			return (*grids)[i].memos
		}
	}
	// The array's next entry, if any, is a grid of an earlier search: its memos'
	// room is reused (emptied when that search ended, releaseMemos).
	var m []step.ExposureMemo
	if n := len(*grids); n < cap(*grids) {
		if old := (*grids)[:n+1][n].memos; cap(old) >= len(p.alts) {
			m = old[:len(p.alts)]
		}
	}
	if m == nil {
		m = make([]step.ExposureMemo, len(p.alts))
	}
	*grids = append(*grids, gridMemo{pp: s.pp, memos: m})
	return m
}

// releaseMemos empties the memos for the next search, keeping their room: they
// point to this search's clusters and placements. No shape may be exposed any more.
func (q *queue) releaseMemos() [][]gridMemo {
	for i, grids := range q.memos {
		for j := range grids {
			clear(grids[j].memos)
		}
		q.memos[i] = grids[:0]
	}
	return q.memos
}

type shapeKey struct {
	best    float64
	ordinal int32
	idx     int32
}

func (a *shapeKey) less(b *shapeKey) bool {
	return a.best < b.best || a.best == b.best && a.ordinal < b.ordinal
}

// shapeLine is shape keys in line: sorted once, then taken from the front. The
// shapes not exposed yet are all in line when the search begins and only leave
// it, so sorting them gives the order a heap of them would (keys are unique:
// ordinals are), at a fraction of the cost: a heap of the llama3-405b search's
// 5 781 shapes, or a comparison sort, cost about 0.5 ms a search; a radix sort
// on the bounds' bits and the ordinals about a tenth.
type shapeLine struct {
	keys []shapeKey
	next int // the first in line
}

// sort sorts the line by best bound, then ordinal (bounds are never NaN), with
// scratch room as large (made if not); it returns the scratch room. Least
// significant digit first, each pass stable: the ordinal's four bytes, then the
// bound's bits eleven at a time (six passes). A search's line comes in
// enumeration order, its ordinals ascending: then the stable passes on the bound
// keep that order among equal bounds, and the ordinal's are not needed.
func (l *shapeLine) sort(scratch []shapeKey) []shapeKey {
	a := l.keys
	if cap(scratch) < len(a) {
		scratch = make([]shapeKey, len(a))
	}
	b := scratch[:len(a)]
	if len(a) == 0 {
		return scratch
	}
	inOrder := true
	for i := 1; i < len(a) && inOrder; i++ {
		inOrder = a[i].ordinal > a[i-1].ordinal
	}
	if !inOrder {
		var counts [4][256]int32
		for i := range a {
			for d := range 4 {
				counts[d][byte(uint32(a[i].ordinal)>>(8*d))]++
			}
		}
		for d := range 4 {
			c := &counts[d]
			if int(c[byte(uint32(a[0].ordinal)>>(8*d))]) == len(a) {
				continue // one value of this digit: the order stays
			}
			var sum int32
			for i := range c {
				sum, c[i] = sum+c[i], sum
			}
			for i := range a {
				x := byte(uint32(a[i].ordinal) >> (8 * d))
				b[c[x]] = a[i]
				c[x]++
			}
			a, b = b, a
		}
	}
	const bits, digits = 11, (64 + 10) / 11
	const mask = 1<<bits - 1
	var counts [digits][1 << bits]int32
	for i := range a {
		u := orderedBits(a[i].best)
		for d := range digits {
			counts[d][u>>(bits*d)&mask]++
		}
	}
	for d := range digits {
		c := &counts[d]
		if int(c[orderedBits(a[0].best)>>(bits*d)&mask]) == len(a) {
			continue
		}
		var sum int32
		for i := range c {
			sum, c[i] = sum+c[i], sum
		}
		for i := range a {
			x := orderedBits(a[i].best) >> (bits * d) & mask
			b[c[x]] = a[i]
			c[x]++
		}
		a, b = b, a
	}
	if &a[0] != &l.keys[0] {
		copy(l.keys, a)
	}
	return scratch
}

// orderedBits maps a float64 other than NaN to a uint64 in the same order (−0
// as +0).
func orderedBits(f float64) uint64 {
	if f == 0 {
		return 1 << 63
	}
	u := math.Float64bits(f)
	if u>>63 != 0 {
		return ^u
	}
	return u | 1<<63
}

func (l *shapeLine) len() int { return len(l.keys) - l.next }

// first is the first key in line (the line must not be empty).
func (l *shapeLine) first() *shapeKey { return &l.keys[l.next] }

// pop takes the first key; it stays in the array, before the line's start.
func (l *shapeLine) pop() shapeKey {
	l.next++
	return l.keys[l.next-1]
}

// shapeHeap is a binary min-heap of shape keys.
type shapeHeap []shapeKey

func (h shapeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h shapeHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h[r].less(&h[l]) {
			j = r
		}
		if !h[j].less(&h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

func (h *shapeHeap) push(k shapeKey) {
	*h = append(*h, k)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].less(&s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

// pop removes the first key and returns it; it stays in the array, just past the
// heap's end.
func (h *shapeHeap) pop() shapeKey {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0], s[last] = s[last], top
	s = s[:last]
	s.down(0)
	*h = s
	return top
}

// peek returns the best layout left, without taking it (nil if none is left).
func (q *queue) peek() *layoutRun {
	for {
		// The first shape in line, exposed or not (keys are unique: ordinals are).
		var k *shapeKey
		exposed := len(q.order) > 0
		if u := q.firstUnexposed(); u != nil && (!exposed || u.less(&q.order[0])) {
			k, exposed = u, false
		} else if exposed {
			k = &q.order[0]
		}
		if k == nil || len(q.heap) > 0 && k.best > q.heap[0].bound {
			break
		}
		if !exposed {
			q.expose()
			continue
		}
		k2 := q.order.pop()
		s := q.shapes[k2.idx]
		if !s.cameUp {
			// Exposed in a batch, back in line by its enumerated bound: it comes up
			// now, where it would have come up unexposed (comeUp).
			if q.comeUp(s) {
				k2.best = s.keyExposed
				q.order.push(k2)
			}
			continue
		}
		p := &q.parts[s.part]
		start := len(q.items)
		var skip func(zero int) bool
		head, free := 0.0, 0 // of the ZeRO stage being expanded, of the part's placements
		if q.fronts != nil && len(*q.fronts) > 0 {
			// A ZeRO stage's layouts are bounded by the shape's best bound and
			// have at most its maxHeadroom: beaten there, they all are; else
			// each on its own bound.
			free = mostWholeNodesFree(p.alts)
			skip = func(zero int) bool {
				head = s.maxHeadroom(q.req, p, zero)
				return q.fronts.beaten(int(s.n), free, k2.best, head)
			}
		}
		q.setAside += s.layouts(q.req, q.sp, p, skip, func(bound float64, ordinal int32, zero int8, sched uint16) {
			if skip != nil && bound > k2.best && q.fronts.beaten(int(s.n), free, bound, head) {
				q.setAside++
				return
			}
			q.items = append(q.items, layoutItem{bound: bound, ordinal: ordinal, shape: k2.idx, sched: sched, zero: zero})
		})
		if run := q.items[start:]; len(run) > 0 {
			sortItems(run)
			q.push(layoutRun{bound: run[0].bound, ordinal: run[0].ordinal, pos: int32(start), end: int32(len(q.items))})
		}
	}
	if len(q.heap) == 0 {
		return nil
	}
	return &q.heap[0]
}

// Batches of exposure: the queue exposes the shape that comes up and the next ones
// in line among those not exposed yet, which come up before any layout beyond their
// (lower) bounds is taken; exposing one early changes nothing but when it is
// priced. A batch is minExposeBatch shapes to maxExposeBatch: the first is half the
// largest, as the first layouts taken need many shapes exposed, and a batch doubles
// when the queue has to wait for the one before and halves when it did not; once
// the top K is full, a batch takes no shape whose bound is past the K-th plan's
// score but the one that came up (the rest would likely be exposed in vain).
const (
	minExposeBatch = 64
	maxExposeBatch = 256
)

// firstUnexposed is the first in line of the shapes not back in line exposed yet
// (nil if none is left): those being exposed come before those waiting.
func (q *queue) firstUnexposed() *shapeKey {
	if len(q.exposing) > 0 {
		return &q.exposingFirst
	}
	if q.unexposed.len() > 0 {
		return q.unexposed.first()
	}
	return nil
}

// expose puts the first shapes in line not exposed yet back in line by their best
// bounds with their exposure, and starts exposing the next batch in the background
// (the queue's goroutine goes on taking layouts meanwhile): a search exposes at most
// maxExposeBatch shapes more than it needs.
//
// With one worker nothing exposes in the background: the shape that comes up is
// exposed alone, in line, and no shape the search never comes to is exposed (with
// batches, a single-core llama3-70b search on 256 GPUs exposed 896 shapes and came
// to 604 of them; on 16 384 GPUs 1 089 and 851).
func (q *queue) expose() {
	if q.workers == 1 {
		k := q.unexposed.pop()
		if q.comeUp(q.shapes[k.idx]) {
			k.best = q.shapes[k.idx].keyExposed
			q.order.push(k)
		}
		return
	}
	if len(q.exposing) > 0 {
		if q.done.Load() {
			q.batch = max(minExposeBatch, q.batch/2)
		} else {
			q.batch = min(maxExposeBatch, 2*q.batch)
		}
		q.exposed.Wait()
	} else {
		q.exposing = q.nextBatch()
		q.exposeAll(q.exposing)
	}
	for _, k := range q.exposing {
		// Back in line by its enumerated bound: peek sees it come up there.
		k.best = q.shapes[k.idx].best
		q.order.push(k)
	}
	q.exposing = q.nextBatch()
	if batch := q.exposing; len(batch) > 0 {
		q.exposingFirst = batch[0] // its key until exposed: below the others'
		q.done.Store(false)
		q.exposed.Add(1)
		go func() {
			defer q.exposed.Done()
			q.exposeAll(batch)
			q.done.Store(true)
		}()
	}
}

// nextBatch takes the next shapes in line from those not exposed yet; they stay in
// the line's array, before its start, the first in line first.
func (q *queue) nextBatch() []shapeKey {
	n := 0
	start := q.unexposed.next
	for n < q.batch && q.unexposed.len() > 0 && (n == 0 || q.unexposed.first().best < q.beyond) {
		k := q.unexposed.pop()
		// Beaten now, it is beaten when it comes up (the fronts only grow):
		// comeUp sets it aside unexposed.
		s := q.shapes[k.idx]
		s.unexposable = q.beaten(s)
		n++
	}
	return q.unexposed.keys[start : start+n]
}

// exposeAll adds their exposure to the shapes of a batch, over the workers, and
// raises their keys to their new best bounds.
func (q *queue) exposeAll(batch []shapeKey) {
	parallel(context.Background(), q.workers, len(batch), func(w, i int) {
		if s := q.shapes[batch[i].idx]; !s.unexposable {
			batch[i].best = q.exposeShape(w, s)
		}
	})
}

// exposeShape exposes a shape (worker w's memos) and returns its new key's bound,
// also kept as its keyExposed.
func (q *queue) exposeShape(w int, s *shape) float64 {
	p := &q.parts[s.part]
	s.expose(q.e, q.req, p, q.memosFor(w, s, p))
	s.keyExposed = max(s.best, s.bestBound(q.req, p))
	return s.keyExposed
}

// comeUp is a shape coming up first in line at its enumerated bound (its best
// bound unexposed), whether it was exposed in a batch meanwhile or not: the
// search's sequence of these events depends on neither the workers nor the
// batches. When the fronts beat every layout of the shape at that bound with
// the most headroom its ZeRO stage can have, its layouts are set aside as
// dominated (counted in setAside) and it leaves the queue unexposed, as the
// evaluation would set each aside when taken (its bounds only rise with the
// exposure, and the fronts only grow); it returns false. Else it is exposed, if
// it is not yet, and goes back in line by keyExposed: it returns true.
func (q *queue) comeUp(s *shape) bool {
	s.cameUp = true
	if q.beaten(s) {
		q.setAside += s.layouts(q.req, q.sp, &q.parts[s.part], func(int) bool { return true }, nil)
		return false
	}
	if !s.exposed {
		// Alone (with one worker), or not exposed with its batch because it was
		// beaten when the batch began, which it still is: never so. Worker 0's
		// memos are the queue's goroutine's once no batch is being exposed.
		q.exposed.Wait()
		q.exposeShape(0, s)
	}
	return true
}

// beaten tells whether the fronts beat every layout of the shape at its
// enumerated bound with the most headroom its ZeRO stage can have
// (shape.maxHeadroom). Only the queue's goroutine calls it, between the
// evaluation's changes of the fronts.
func (q *queue) beaten(s *shape) bool {
	if q.fronts == nil || len(*q.fronts) == 0 {
		return false
	}
	p := &q.parts[s.part]
	free := mostWholeNodesFree(p.alts)
	for _, zero := range q.sp.zeros {
		if s.fits&(1<<zero) != 0 && !q.fronts.beaten(int(s.n), free, s.best, s.maxHeadroom(q.req, p, zero)) {
			return false
		}
	}
	return true
}

// wait returns once no shape is being exposed: the shapes may then be released.
func (q *queue) wait() { q.exposed.Wait() }

func before(a, b *layoutRun) bool {
	return a.bound < b.bound || a.bound == b.bound && a.ordinal < b.ordinal
}

// sortItems sorts a shape's layouts by bound, then ordinal (by insertion: a shape
// has a few dozen, emitted in ordinal order).
func sortItems(run []layoutItem) {
	for i := 1; i < len(run); i++ {
		x := run[i]
		j := i
		for ; j > 0 && (x.bound < run[j-1].bound || x.bound == run[j-1].bound && x.ordinal < run[j-1].ordinal); j-- {
			run[j] = run[j-1]
		}
		run[j] = x
	}
}

func (q *queue) push(c layoutRun) {
	h := append(q.heap, c)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !before(&h[i], &h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	q.heap = h
}

// pop removes the best layout and makes it a candidate; call it after peek
// returned one.
func (q *queue) pop() candidate {
	h := q.heap
	top := q.items[h[0].pos]
	if next := h[0].pos + 1; next < h[0].end {
		// The shape's next layout takes its place.
		h[0].pos, h[0].bound, h[0].ordinal = next, q.items[next].bound, q.items[next].ordinal
	} else {
		last := len(h) - 1
		h[0] = h[last]
		h = h[:last]
	}
	for i := 0; ; {
		l, r, best := 2*i+1, 2*i+2, i
		if l < len(h) && before(&h[l], &h[best]) {
			best = l
		}
		if r < len(h) && before(&h[r], &h[best]) {
			best = r
		}
		if best == i {
			break
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
	q.heap = h
	s := q.shapes[top.shape]
	return s.candidate(q.req, &q.parts[s.part], top.bound, top.ordinal, top.zero, top.sched)
}

// buffers are the arrays a search needs until it returns, recycled from search to
// search (bufferPool) with the arrays of shapes (chunkPool): a warm search then
// allocates little, and the garbage collector runs less often.
type buffers struct {
	shapes           []*shape
	unexposed, order []shapeKey
	items            []layoutItem
	heap             []layoutRun
	caches           []workerCache // the enumerating goroutines'
	memos            [][]gridMemo  // the exposing workers' (queue.memos)
	line             []shapeKey    // the unexposed line's scratch room for sorting
	arrays           []*chunkArray
	evaluated        []evaluated
}

var bufferPool = sync.Pool{New: func() any { return new(buffers) }}

// Search enumerates, prunes, evaluates and ranks. The same request always gives the
// same answer: candidates are evaluated best-bound first in fixed batches, and ties
// are broken by enumeration order.
func Search(ctx context.Context, e *step.Estimator, req Request) (Result, error) {
	start := time.Now()
	// The constraint lists as the request gave them, before normalise fills in the
	// framework's (a no-plan answer tells the two apart; lengths only).
	asGiven := req.Constraints
	if err := req.normalise(); err != nil {
		return Result{}, err
	}
	workers := req.parallelism()
	tr := tracer{trace: req.Trace}
	defer tr.end(0)
	sp := newSpace(&req)
	stats := Stats{Pruned: map[string]int{}}
	tr.begin(PhaseEnumerate)
	buf := bufferPool.Get().(*buffers)
	en, err := enumerate(ctx, e, &req, sp, &stats, workers, buf)
	if err != nil {
		bufferPool.Put(buf)
		return Result{}, err
	}
	tr.end(en.kept)
	q := newQueue(e, workers, &req, sp, en, buf)
	ev := newEvaluation(e, &req, workers, &stats, en.kept, buf)
	if !req.IncludeDominated {
		q.fronts = &ev.fronts // the queue reads what the evaluation adds
	}
	defer func() {
		// The plans returned hold no candidate.
		ev.release()
		clear(ev.out)
		buf.arrays, buf.evaluated = ev.arrays[:0], ev.out[:0]
		bufferPool.Put(buf)
	}()
	tr.begin(PhaseEvaluate)
	err = ev.run(ctx, q)
	ev.checks.Wait() // a chunk past the stop may still be checked
	// The candidates taken hold no shape: the shapes and the queue's arrays go back
	// for the next search.
	q.wait()
	en.release()
	buf.memos = q.releaseMemos()
	buf.shapes, buf.unexposed, buf.order, buf.items, buf.heap = en.shapes[:0], q.unexposed.keys[:0], q.order[:0], q.items[:0], q.heap[:0]
	if err != nil {
		return Result{}, err
	}
	tr.end(stats.Evaluated)

	res := Result{}
	tr.begin(PhaseRank)
	if res.Top, err = ev.rank(); err != nil {
		return Result{}, err
	}
	tr.end(len(res.Top))
	ev.sortFeasible()
	tr.begin(PhasePareto)
	if res.Pareto, err = ev.pareto(); err != nil {
		return Result{}, err
	}
	tr.end(len(res.Pareto))
	stats.Elapsed = time.Since(start)
	res.Stats = stats
	if len(res.Top) == 0 {
		res.NoPlan = noPlanReason(&req, stats, asGiven.given())
	}
	return res, nil
}

// normalise checks the request and fills in its defaults, so that every phase after
// it reads one canonical request (and equal requests search alike).
func (r *Request) normalise() error {
	if err := r.validate(); err != nil {
		return err
	}
	// The node lists are sets (validate refused repeats, naming the entries as
	// given): in node order, equal sets search and read alike.
	r.ExcludeNodes = inOrder(r.ExcludeNodes)
	r.DegradedNodes = sortedDegraded(r.DegradedNodes)
	r.busy = r.Free.busy(r.Cluster, r.ExcludeNodes)
	if len(r.ExcludeNodes) > 0 {
		mapped, listed := r.Free != nil, len(r.Free)
		r.Free = r.Free.without(r.Cluster, r.ExcludeNodes)
		if len(r.Free) == 0 {
			return excludedAll(r, mapped, listed)
		}
	}
	r.avoid, r.readmitOrders, r.degradedAt = nil, nil, nil
	if len(r.DegradedNodes) > 0 {
		r.readmitOrders = readmitOrders(r.DegradedNodes)
		nodes := make([]int, len(r.DegradedNodes))
		r.degradedAt = make([]int32, r.Cluster.Spec.Nodes)
		for i := range r.degradedAt {
			r.degradedAt[i] = -1
		}
		for i, d := range r.DegradedNodes {
			nodes[i] = d.Node
			r.degradedAt[d.Node] = int32(i)
		}
		r.avoid = r.Free.without(r.Cluster, nodes)
	}
	if r.Objective == "" {
		r.Objective = FastestStep
	}
	if r.TopK == 0 {
		r.TopK = DefaultTopK
	}
	r.Constraints = r.Constraints.Canonical()
	if r.Training.Optimizer == (step.Optimizer{}) {
		r.Training.Optimizer = step.AdamMixed()
	}
	if r.Training.Precision == "" {
		r.Training.Precision = step.BF16
	}
	r.Model = r.Model.Normalise()
	return nil
}

// parallelism is how many goroutines enumerate and price layouts: Request.Workers,
// or every CPU the process may use.
func (r *Request) parallelism() int {
	if r.Workers > 0 {
		return r.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// tracer reports the phases of a search to Request.Trace one at a time. Search
// defers end(0), so the phase running when the search fails is still ended and a
// caller's span or timer never stays open.
type tracer struct {
	trace   func(phase string) (end func(items int))
	inPhase func(items int) // the end of the running phase, if any
}

func (t *tracer) begin(phase string) {
	if t.trace != nil {
		t.inPhase = t.trace(phase)
	}
}

func (t *tracer) end(items int) {
	if t.inPhase != nil {
		t.inPhase(items)
		t.inPhase = nil
	}
}

// evaluated is a layout checked and priced on its placements.
type evaluated struct {
	c        *candidate
	setAside string // why it was not priced (a Pruned reason), if it was not
	alt      int    // the placement taken
	// The quick estimate's step time and memory headroom (what ranking, dominance
	// and the Pareto front read; the returned plans are estimated again in full).
	stepTime, headroom float64
	score              float64
	ok                 bool
	err                error
}

// point is a feasible plan, compactly: the search keeps every one for the Pareto
// front, and only these numbers of each.
type point struct {
	n          int
	step, head float64
	c          *candidate
	alt        int
}

// dominates tells whether plan a dominates plan b. A plan that leaves more whole
// nodes free is not dominated by one that leaves fewer (the placement is part of what
// a scheduler weighs).
func dominates(a, b *evaluated) bool {
	return a.c.n == b.c.n && a.c.alts[a.alt].place.FreeWholeNodes >= b.c.alts[b.alt].place.FreeWholeNodes &&
		Dominates(a.stepTime, a.headroom, b.stepTime, b.headroom)
}

// better tells whether a ranks before b: by score, ties in enumeration order so that
// the ranking does not depend on the order plans were priced in.
func better(a, b *evaluated) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.c.ordinal < b.c.ordinal
}

// evaluation is the evaluate phase: it takes layouts from the queue, prices them and
// keeps the top K, every feasible plan (for the Pareto front) and the fronts that set
// later layouts aside. The workers only read it (evaluate); the search's goroutine
// alone changes it, between chunks.
type evaluation struct {
	e       *step.Estimator
	req     *Request
	basis   *step.MemoryBasis // of the request's model and training, for the memory checks
	workers int
	stats   *Stats
	tol     float64       // the placement tolerance
	kept    int           // layouts the enumeration kept
	taken   int           // layouts taken from the queue
	chunk   int           // layouts in the next chunk
	top     []*evaluated  // the ranking (offer): the top K are its first K
	arrays  []*chunkArray // the chunks' candidates
	out     []evaluated   // the current chunk's evaluations
	// mems are the arrays of the last two chunks' memory checks (nextMems is the
	// next to fill), and checks counts those running.
	mems     [2][]memoryResult
	nextMems int
	checks   sync.WaitGroup
	todo     []int // the layouts of a chunk to estimate
	fronts   fronts
	added    []frontPlan // the current chunk's plans, for the fronts once it is taken
	all      []point     // every feasible plan
	kth      float64     // the K-th plan's score once the ranking holds K

	// caches are the enumerating goroutines' (idle once the enumeration is done),
	// holding the layers' compute times the bounds took: pricing worker w prices
	// with caches[w] (step.Estimator.QuickCached), which times no layer again.
	caches []workerCache
}

func newEvaluation(e *step.Estimator, req *Request, workers int, stats *Stats, kept int, buf *buffers) *evaluation {
	tol := req.Tolerance()
	// Chunks grow from 8 layouts to maxChunk: the first plans priced are the best
	// placed to set the later ones aside.
	basis := step.NewMemoryBasis(step.Request{Model: req.Model, Training: req.Training})
	return &evaluation{e: e, req: req, basis: basis, workers: workers, caches: buf.caches, stats: stats, tol: tol, kept: kept, chunk: 8,
		arrays: buf.arrays[:0], out: buf.evaluated[:0], kth: math.Inf(1)}
}

// run takes layouts from the queue best bound first until the next one's bound cannot
// beat the K-th plan: the evaluated set, and so the Pareto front, depend on the
// bounds alone, not on the parallelism or on how the work is batched. A chunk of
// layouts is checked and priced at once over the workers — the memory of each first:
// a layout that does not fit, or that a plan from an earlier chunk beats on a lower
// bound of its time and on its exact memory, is not priced — and the chunk is then
// taken in order, one layout at a time, the stop test before each (what lies past the
// stop is dropped by the answer). The chunk sizes are fixed, so the layouts set aside
// (counted in the statistics) do not depend on the parallelism either.
//
// The queue does not depend on the prices, nor a layout's memory on the plans
// taken: while a chunk is priced, the next is taken from the queue (its shapes
// exposed) and the memory of its layouts checked in the background, unless the
// search is expected to stop in this one. Expected: with the top K full, the layouts from the first whose bound
// cannot beat the K-th plan on are priced only if the search comes to them (a plan
// that dominates others can take them out of the top K), on the fronts as they were
// when the chunk began (take records the chunk's plans in the fronts at its end).
func (s *evaluation) run(ctx context.Context, q *queue) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	next := q.peek()
	if next == nil || s.stopBefore(next.bound) {
		return nil
	}
	cands := s.nextChunk(q)
	checked := s.checkMemory(ctx, cands)
	for {
		priced := len(cands)
		if len(s.top) >= s.req.TopK {
			// The first layout stopBefore stops at: its bound above the K-th plan's score.
			priced, _ = slices.BinarySearchFunc(cands, s.kth, func(c candidate, kth float64) int {
				if c.bound <= kth {
					return -1
				}
				return 1
			})
		}
		var following []candidate
		var followingChecked *memoryCheck
		if priced == len(cands) && q.peek() != nil {
			following = s.nextChunk(q)
			followingChecked = s.checkMemory(ctx, following)
		}
		<-checked.done
		if err := ctx.Err(); err != nil {
			return err
		}
		out := slices.Grow(s.out[:0], len(cands))[:len(cands)]
		s.out = out
		if err := s.price(ctx, cands[:priced], checked.mems, out); err != nil {
			return err
		}
		for j := range cands {
			if s.stopBefore(cands[j].bound) {
				return nil
			}
			if j == priced {
				if err := s.price(ctx, cands[j:], checked.mems[j:], out[j:]); err != nil {
					return err
				}
			}
			s.taken++
			s.take(&out[j])
		}
		for _, a := range s.added {
			s.fronts.add(a.n, a.freeWhole, a.score, a.head)
		}
		s.added = s.added[:0]
		if len(s.top) >= s.req.TopK {
			q.beyond = s.kth // exposing shapes past it is likely wasted
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if following == nil && q.peek() != nil {
			following = s.nextChunk(q)
			followingChecked = s.checkMemory(ctx, following)
		}
		if len(following) == 0 || s.stopBefore(following[0].bound) {
			return nil
		}
		cands, checked = following, followingChecked
	}
}

// memoryCheck is the memory of a chunk's layouts, checked in the background.
type memoryCheck struct {
	mems []memoryResult
	done chan struct{} // closed once mems are filled in
}

// memoryResult is what the search reads of a layout's memory.
type memoryResult struct {
	headroom float64
	fits     bool
	beaten   bool // set aside on its headroom's upper bound, its memory not computed
}

// checkMemory starts checking the memory of a chunk's layouts over the workers: it
// does not depend on the plans taken so far, and is most of their pricing. The
// evaluation keeps the arrays of the two last chunks' results.
func (s *evaluation) checkMemory(ctx context.Context, cands []candidate) *memoryCheck {
	buf := &s.mems[s.nextMems]
	s.nextMems = 1 - s.nextMems
	*buf = slices.Grow((*buf)[:0], len(cands))[:len(cands)]
	mc := &memoryCheck{mems: *buf, done: make(chan struct{})}
	// A layout that a plan in hand beats even with the most headroom it could
	// have is set aside without its memory: the fronts only grow, so it is
	// beaten when its chunk is priced too.
	for j := range cands {
		c := &cands[j]
		mc.mems[j] = memoryResult{beaten: !s.req.IncludeDominated && s.fronts.beaten(int(c.n), c.mostWholeNodesFree(), c.bound, c.maxHead)}
	}
	check := func() {
		defer close(mc.done)
		parallel(ctx, s.workers, len(cands), func(_, j int) {
			if !mc.mems[j].beaten {
				mc.mems[j] = s.memory(&cands[j])
			}
		})
	}
	if s.workers == 1 {
		// Nothing to run beside the queue: checked now, without a goroutine
		// that the scheduler would have to switch to and back.
		check()
		return mc
	}
	s.checks.Add(1)
	go func() {
		defer s.checks.Done()
		check()
	}()
	return mc
}

// stopBefore tells whether the search stops before a layout of this bound — the
// ranking holds K plans and the bound is above the K-th plan's score — and then
// counts the layouts never taken as pruned by the time bound. Every layout left
// scores at least its bound, so it can neither rank before the K-th plan nor
// dominate one of the first K (a dominating plan scores no more than the plan it
// dominates); a bound equal to the K-th score is taken: a plan of that score could
// still rank before the K-th plan by enumeration order, or dominate it.
func (s *evaluation) stopBefore(bound float64) bool {
	if len(s.top) >= s.req.TopK && bound > s.kth {
		s.stats.Pruned[PrunedTimeBound] += s.kept - s.taken
		return true
	}
	return false
}

// maxChunk is the most layouts a chunk holds. The plans a chunk prices join the
// fronts only when it is taken, so a smaller chunk sets more of the next ones
// aside before their memory is checked: 64 rather than 256 checks the memory of
// 1 376 layouts instead of 1 716 in the llama3-405b search on 4096 GPUs, 488
// instead of 859 for gpt3-175b on 1024 (32 saves little more), and still gives
// every worker of a large machine layouts to check.
const maxChunk = 64

// chunkArray holds the candidates of one chunk.
type chunkArray [maxChunk]candidate

// candidatePool recycles the chunks' arrays from search to search.
var candidatePool = sync.Pool{New: func() any { return new(chunkArray) }}

// nextChunk takes the next chunk of layouts from the queue. Each chunk has its own
// array, kept until the search returns: the plans kept in the top K and the Pareto
// points point into it.
func (s *evaluation) nextChunk(q *queue) []candidate {
	a := candidatePool.Get().(*chunkArray)
	s.arrays = append(s.arrays, a)
	cands := a[:0:s.chunk]
	for len(cands) < s.chunk && q.peek() != nil {
		cands = append(cands, q.pop())
	}
	// The layouts the queue set aside as dominated are taken (they do not count
	// in the chunk's size: its layouts are the next ones the fronts leave).
	if q.setAside > 0 {
		s.taken += q.setAside
		s.stats.Pruned[PrunedDominatedBound] += q.setAside
		q.setAside = 0
	}
	s.chunk = min(2*s.chunk, maxChunk)
	return cands
}

// release gives the chunks' arrays back for the next search; nothing may read the
// candidates after.
func (s *evaluation) release() {
	for _, a := range s.arrays {
		clear(a[:]) // drop the placements and splits they point to
		candidatePool.Put(a)
	}
	clear(s.arrays)
	s.arrays = s.arrays[:0]
}

// price evaluates layouts into out, given their memory: it sets aside those that do
// not fit or that a plan in hand beats, and estimates the others over the workers,
// each taking the next layout left.
func (s *evaluation) price(ctx context.Context, cands []candidate, mems []memoryResult, out []evaluated) error {
	todo := s.todo[:0]
	for j := range cands {
		if out[j] = s.setAside(&cands[j], &mems[j]); out[j].setAside == "" {
			todo = append(todo, j)
		}
	}
	s.todo = todo
	parallel(ctx, s.workers, len(todo), func(w, i int) { j := todo[i]; out[j] = s.evaluate(&cands[j], s.layers(w)) })
	return ctx.Err()
}

// memory is a layout's memory. It does not depend on the placement. The request
// was validated when the search began and the enumeration builds its layouts by
// the estimator's rules, so the layout is not validated again here
// (TestMemoryChecksOfValidLayouts); the layouts priced are, by Quick.
func (s *evaluation) memory(c *candidate) memoryResult {
	req := s.req
	r := step.Request{Model: req.Model, Training: req.Training, Cluster: c.alts[0].cluster, Layout: c.layoutWith(req), Ranks: c.alts[0].ranks}
	if verifyMemoryChecks != nil {
		verifyMemoryChecks(s.e, r, s.basis)
	}
	mem := s.e.MemoryOfValidWith(r, s.basis)
	if verifyPricedBounds != nil {
		verifyPricedBounds(r, c.bound, math.Inf(1), mem.Headroom, c.maxHead)
	}
	return memoryResult{headroom: mem.Headroom, fits: mem.Fits}
}

// verifyPricedBounds, set by a test, sees every layout the search prices on each
// placement — its bound and score, its headroom and the upper bound of it the
// search took (candidate.maxHead) — and every layout whose memory it checks (the
// score +Inf).
var verifyPricedBounds func(r step.Request, bound, score, headroom, maxHead float64)

// verifyMemoryChecks, set by a test, sees every layout whose memory the search
// checks, and the search's memory basis.
var verifyMemoryChecks func(*step.Estimator, step.Request, *step.MemoryBasis)

// setAside is a layout, of memory mem, set aside before it is priced — it does not
// fit, or a plan in hand beats it (the reason is then set) — or else the layout
// alone.
func (s *evaluation) setAside(c *candidate, mem *memoryResult) evaluated {
	req := s.req
	switch {
	case mem.beaten:
		return evaluated{c: c, setAside: PrunedDominatedBound}
	case !mem.fits || mem.headroom < req.Constraints.MinHeadroomGB:
		return evaluated{c: c, setAside: PrunedMemory}
	case !req.IncludeDominated && s.fronts.beaten(int(c.n), c.mostWholeNodesFree(), c.bound, mem.headroom):
		return evaluated{c: c, setAside: PrunedDominatedBound}
	}
	return evaluated{c: c}
}

// layers is pricing worker w's cache of the layers' compute times (nil: none).
func (s *evaluation) layers(w int) *step.BoundsCache {
	if w < len(s.caches) {
		return &s.caches[w].layers
	}
	return nil
}

// evaluate prices one layout on each of its placements, keeping the preferred,
// with the layers' times of cache (nil: none; step.Estimator.QuickCached); it only
// reads the search's state, so the workers run it concurrently, each with its own
// cache.
func (s *evaluation) evaluate(c *candidate, cache *step.BoundsCache) evaluated {
	req := s.req
	r := step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: c.layoutWith(req)}
	var best evaluated
	for i, al := range c.alts {
		r.Ranks, r.Cluster, r.SlowGPUSpeed, r.DegradedNICSpeed, r.DegradedLinkSpeed = al.ranks, al.cluster, al.slow, al.nic, al.link
		res, err := s.e.QuickCached(r, cache)
		ev := evaluated{c: c, alt: i, stepTime: res.StepTime, headroom: res.Memory.Headroom, err: err}
		if err == nil {
			ev.score = score(req, int(c.n), res)
			ev.ok = res.Memory.Fits && res.Memory.Headroom >= req.Constraints.MinHeadroomGB
			if verifyPricedBounds != nil {
				verifyPricedBounds(r, c.bound, ev.score, res.Memory.Headroom, c.maxHead)
			}
		}
		if i == 0 || s.prefer(&best, &ev) {
			best = ev
		}
	}
	return best
}

// prefer tells whether placement b of a layout is kept over a. Of one layout's
// placements the search keeps one: the one that leaves the most whole nodes free,
// unless another is better by more than the placement tolerance (placements in
// order, each against the one kept so far).
func (s *evaluation) prefer(a, b *evaluated) bool {
	switch {
	case !b.ok:
		return false
	case !a.ok:
		return true
	}
	if d := (a.score - b.score) / max(math.Abs(a.score), 1e-300); d > s.tol {
		return true
	} else if d < -s.tol {
		return false
	}
	if fa, fb := a.c.alts[a.alt].place.FreeWholeNodes, b.c.alts[b.alt].place.FreeWholeNodes; fa != fb {
		return fb > fa
	}
	return b.score < a.score
}

// take counts one evaluated layout in the statistics and, if it gave a feasible plan,
// records it for the Pareto front and for setting later chunks' layouts aside (run
// adds it to the fronts once the chunk is taken), and offers it to the top K.
func (s *evaluation) take(ev *evaluated) {
	if ev.setAside != "" {
		s.stats.Pruned[ev.setAside]++
		return
	}
	s.stats.Evaluated++
	switch {
	case ev.err != nil:
		s.stats.Pruned[PrunedInvalid]++
		return
	case !ev.ok:
		s.stats.Pruned[PrunedMemory]++
		return
	}
	s.stats.Feasible++
	s.all = append(s.all, point{int(ev.c.n), ev.stepTime, ev.headroom, ev.c, ev.alt})
	s.added = append(s.added, frontPlan{int(ev.c.n), ev.c.alts[ev.alt].place.FreeWholeNodes, ev.score, ev.headroom})
	s.offer(ev)
}

// offer inserts a feasible plan into the ranking. Without dominated plans the
// ranking holds every plan taken so far that no other taken plan dominates, not
// only the first K: a plan pushed past position K comes back when a later plan
// dominates one ranked before it, so the first K are those of an exhaustive search
// over the plans taken, whatever order they were taken in. A plan that dominates
// another scores no more (same GPU count, no slower), so it ranks before it: the
// dominated plans are found among those ranked after the new plan's place, and its
// dominators among those before (ties of score on either side). With dominated
// plans included nothing ever leaves, and the ranking is cut at K. The stop score
// is the K-th plan's once there are K.
func (s *evaluation) offer(ev *evaluated) {
	k := s.req.TopK
	if !s.req.IncludeDominated {
		// A dominated plan stays out; one the new plan dominates leaves.
		if slices.ContainsFunc(s.top, func(t *evaluated) bool { return t.score <= ev.score && dominates(t, ev) }) {
			s.stats.Dominated++
			return
		}
		n := len(s.top)
		s.top = slices.DeleteFunc(s.top, func(t *evaluated) bool { return t.score >= ev.score && dominates(ev, t) })
		s.stats.Dominated += n - len(s.top)
	}
	pos := len(s.top)
	for pos > 0 && better(ev, s.top[pos-1]) {
		pos--
	}
	if !s.req.IncludeDominated || pos < k {
		keep := new(evaluated)
		*keep = *ev
		s.top = slices.Insert(s.top, pos, keep)
		if s.req.IncludeDominated && len(s.top) > k {
			clear(s.top[k:])
			s.top = s.top[:k]
		}
	}
	if len(s.top) >= k {
		s.kth = s.top[k-1].score
	}
}

// plan estimates a layout again in full on one of its placements (communication
// table, assumptions): the search priced it with the quick estimate only.
func (s *evaluation) plan(c *candidate, alt int) (Plan, error) {
	req := s.req
	al := c.alts[alt]
	r := step.Request{Model: req.Model, Training: req.Training, Cluster: al.cluster, Layout: c.layoutWith(req), Ranks: al.ranks, SlowGPUSpeed: al.slow, DegradedNICSpeed: al.nic, DegradedLinkSpeed: al.link}
	est, err := s.e.Estimate(r)
	if err != nil {
		return Plan{}, err
	}
	if note := req.degradedNote(al.place); note != "" {
		est.Assumptions = append(slices.Clip(est.Assumptions), note)
	}
	p := Plan{GPUs: int(c.n), Layout: est.Layout, Placement: *al.place, Estimate: est, Score: score(req, int(c.n), est)}
	if req.PricePerGPUHour > 0 && req.TokenBudget > 0 {
		p.CostUSD = trainingCost(est.StepTime, int(c.n), float64(est.Training.GlobalBatch)*float64(est.Training.SeqLen), req.PricePerGPUHour, req.TokenBudget)
	}
	return p, nil
}

// rank makes the top K into plans, numbered from 1; with dominated plans included,
// each is flagged when a feasible plan dominates it.
func (s *evaluation) rank() ([]Plan, error) {
	var plans []Plan
	for i, ev := range s.top[:min(len(s.top), s.req.TopK)] {
		p, err := s.plan(ev.c, ev.alt)
		if err != nil {
			return nil, err
		}
		p.Rank = i + 1
		if s.req.IncludeDominated {
			p.Dominated = slices.ContainsFunc(s.all, func(a point) bool {
				return a.n == p.GPUs && Dominates(a.step, a.head, ev.stepTime, ev.headroom)
			})
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// sortFeasible puts the feasible plans in the order pareto reads them: by step time,
// then fewer GPUs, then more headroom, ties in enumeration order.
func (s *evaluation) sortFeasible() {
	slices.SortStableFunc(s.all, func(a, b point) int {
		switch {
		case a.step < b.step:
			return -1
		case a.step > b.step:
			return 1
		case a.n != b.n:
			return a.n - b.n
		case a.head > b.head:
			return -1
		case a.head < b.head:
			return 1
		}
		return int(a.c.ordinal - b.c.ordinal)
	})
}

// pareto is the Pareto front over (GPUs, step time, headroom) among the feasible
// plans, sorted by sortFeasible: in order of step time, a plan is dominated when an
// earlier one (no slower) uses no more GPUs and keeps at least as much headroom.
// Front members are estimated again for their full result (the search keeps only
// three numbers per plan).
func (s *evaluation) pareto() ([]Plan, error) {
	sizes := slices.Clone(s.stats.GPUCounts)
	slices.Sort(sizes)
	best := make([]float64, len(sizes)) // best headroom so far per GPU count
	for i := range best {
		best[i] = math.Inf(-1)
	}
	var front []Plan
	for _, a := range s.all {
		idx, _ := slices.BinarySearch(sizes, a.n)
		if slices.ContainsFunc(best[:idx+1], func(h float64) bool { return h >= a.head }) {
			continue
		}
		best[idx] = a.head
		p, err := s.plan(a.c, a.alt)
		if err != nil {
			return nil, err
		}
		front = append(front, p)
	}
	return front, nil
}

// score is the objective's value of an estimate (lower is better).
func score(req *Request, n int, r step.Result) float64 {
	tokens := float64(r.Training.GlobalBatch) * float64(r.Training.SeqLen)
	return Score(req.Objective, r.StepTime, r.Throughput.TokensPerSecPerGPU, n, tokens, req.PricePerGPUHour, req.TokenBudget)
}

// Score is an objective's value of an estimate, lower is better: the step time,
// minus the tokens per second per GPU, or the cost of training budget tokens on
// gpus GPUs at price per GPU-hour, tokensPerStep tokens a step.
func Score(obj Objective, stepTime, tokensPerSPerGPU float64, gpus int, tokensPerStep, price, budget float64) float64 {
	switch obj {
	case Throughput:
		return -tokensPerSPerGPU
	case Cost:
		return trainingCost(stepTime, gpus, tokensPerStep, price, budget)
	}
	return stepTime
}

// trainingCost is the cost of training the token budget: steps × step time × GPUs × price.
func trainingCost(stepTime float64, gpus int, tokensPerStep, price, budget float64) float64 {
	return budget / tokensPerStep * stepTime * float64(gpus) * price / 3600
}

// boundScore turns a step-time lower bound into a lower bound of the objective.
func boundScore(req *Request, n int, stepLB float64) float64 {
	switch req.Objective {
	case Throughput:
		tokens := float64(req.Training.GlobalBatch) * float64(req.Training.SeqLen)
		return -tokens / (stepLB * float64(n))
	case Cost:
		tokens := float64(req.Training.GlobalBatch) * float64(req.Training.SeqLen)
		return trainingCost(stepLB, n, tokens, req.PricePerGPUHour, req.TokenBudget)
	}
	return stepLB
}

// fronts hold, per GPU count and whole nodes left free, the staircase of the
// evaluated plans that no other beats on both score and memory headroom: scores
// ascending, headrooms strictly ascending. A search has a few GPU counts and
// placements: a slice, which beaten walks faster than a map's iterator starts.
type fronts []front

type front struct {
	frontKey
	stairs []stair
}

type frontKey struct{ n, freeWhole int }

// frontPlan is a plan to add to the fronts.
type frontPlan struct {
	n, freeWhole int
	score, head  float64
}

type stair struct{ score, head float64 }

// add records a feasible evaluated plan on n GPUs that leaves freeWhole whole nodes
// free.
func (f *fronts) add(n, freeWhole int, score, head float64) {
	k := frontKey{n, freeWhole}
	fi := slices.IndexFunc(*f, func(x front) bool { return x.frontKey == k })
	if fi < 0 {
		*f = append(*f, front{frontKey: k})
		fi = len(*f) - 1
	}
	s := (*f)[fi].stairs
	i, _ := slices.BinarySearchFunc(s, score, func(a stair, x float64) int { return cmp.Compare(a.score, x) })
	// The plans of no greater score hold as much headroom at best at i−1 (and at i
	// when it ties the score).
	if i > 0 && s[i-1].head >= head || i < len(s) && s[i].score == score && s[i].head >= head {
		return
	}
	j := i
	for j < len(s) && s[j].head <= head {
		j++
	}
	(*f)[fi].stairs = slices.Insert(slices.Delete(s, i, j), i, stair{score, head})
}

// beaten tells whether an evaluated plan on n GPUs, leaving at least free whole
// nodes free (the most any placement of a layout leaves), has a score below bound,
// a layout's lower bound, and at least headroom head: it then dominates the layout
// whatever its time and placement (scores grow with the step time on a fixed
// number of GPUs), so the layout can be neither in the top K nor on the Pareto
// front.
func (f fronts) beaten(n, free int, bound, head float64) bool {
	for _, x := range f {
		if x.n != n || x.freeWhole < free {
			continue
		}
		// The first stair not below bound (slices.BinarySearchFunc by
		// cmp.Compare, written out: the queue asks this for every shape that comes
		// up and every layout it takes, and the generic call was not inlined).
		s := x.stairs
		i, j := 0, len(s)
		for i < j {
			h := int(uint(i+j) >> 1)
			if cmp.Less(s[h].score, bound) {
				i = h + 1
			} else {
				j = h
			}
		}
		if i > 0 && s[i-1].head >= head {
			return true
		}
	}
	return false
}

// parallel runs do(w, 0) … do(w, n−1) on at most workers goroutines, the caller's
// among them, each taking the next index left, and returns once they are all done;
// w is the goroutine's number, from 0 (the caller) to workers − 1. A goroutine stops
// taking indices when ctx is done.
func parallel(ctx context.Context, workers, n int, do func(w, i int)) {
	var next atomic.Int64
	work := func(w int) {
		for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
			do(w, i)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < min(max(1, workers), n); w++ {
		wg.Go(func() { work(w) })
	}
	work(0)
	wg.Wait()
}
