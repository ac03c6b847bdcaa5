package planner

import (
	"cmp"
	"container/heap"
	"context"
	"github.com/stepcost/stepcost/estimator/invalid"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stepcost/stepcost/estimator/step"
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
}

var (
	recomputeCodes = [...]step.Recompute{step.RecomputeNone, step.RecomputeSelective, step.RecomputeFull, step.RecomputeOps}
	scheduleCodes  = [...]step.Schedule{step.OneFOneB, step.GPipe, step.Interleaved, step.ZeroBubble, step.DualPipe, step.ZeroBubbleV}
)

func (c *candidate) layout() step.Layout {
	return step.Layout{TP: int(c.tp), PP: int(c.pp), DP: int(c.dp), CP: int(c.cp), EP: int(c.ep), ZeRO: int(c.zero),
		MicroBatch: int(c.mbs), Recompute: recomputeCodes[c.rc], SP: c.sp, Schedule: scheduleCodes[c.sched],
		VirtualStages: int(c.v), LayerSplit: c.split, ETP: etpOf(c.etp1)}
}

// DefaultPlacementTolerance is Request.PlacementTolerance when it is 0: a scheduler
// keeps the cluster unfragmented for the next job unless that costs this job more
// than 2 %.
const DefaultPlacementTolerance = 0.02

// alt is a placement a layout may take: the GPUs, and the rank map (nil for the
// first GPUs in order).
type alt struct {
	place *Placement
	ranks *step.RankMap
}

// mostWholeNodesFree is the most whole nodes any of the candidate's placements
// leaves free.
func (c *candidate) mostWholeNodesFree() int {
	most := 0
	for _, a := range c.alts {
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
// its communication bounds (step.Exposure); if that raises its best bound it goes
// back among the shapes instead.
type queue struct {
	e       *step.Estimator
	workers int
	req     *Request
	sp      *space
	shapes  []shape
	order   shapeHeap // the shapes not expanded, by best bound, then ordinal
	heap    []candidate
}

// newQueue orders the shapes: best bound first, ties in enumeration order (small
// keys sort faster than shapes; a sorted slice is a heap).
func newQueue(e *step.Estimator, workers int, req *Request, sp *space, shapes []shape) *queue {
	order := make(shapeHeap, len(shapes))
	for i := range shapes {
		order[i] = shapeKey{shapes[i].best, shapes[i].ordinal, int32(i)}
	}
	slices.SortFunc(order, func(a, b shapeKey) int {
		if c := cmp.Compare(a.best, b.best); c != 0 {
			return c
		}
		return cmp.Compare(a.ordinal, b.ordinal)
	})
	return &queue{e: e, workers: max(1, workers), req: req, sp: sp, shapes: shapes, order: order}
}

type shapeKey struct {
	best    float64
	ordinal int32
	idx     int32
}

// shapeHeap is a container/heap of shape keys.
type shapeHeap []shapeKey

func (h shapeHeap) Len() int { return len(h) }
func (h shapeHeap) Less(i, j int) bool {
	return h[i].best < h[j].best || h[i].best == h[j].best && h[i].ordinal < h[j].ordinal
}
func (h shapeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *shapeHeap) Push(x any)   { *h = append(*h, x.(shapeKey)) }
func (h *shapeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (q *queue) peek() *candidate {
	for len(q.order) > 0 && (len(q.heap) == 0 || q.order[0].best <= q.heap[0].bound) {
		if s := &q.shapes[q.order[0].idx]; !s.exposed {
			q.expose()
			continue
		}
		k := heap.Pop(&q.order).(shapeKey)
		q.shapes[k.idx].layouts(q.req, q.sp, q.push)
	}
	if len(q.heap) == 0 {
		return nil
	}
	return &q.heap[0]
}

// exposeBatch is how many shapes the queue exposes at once, over the workers: the
// shape that comes up and the next ones in line not yet exposed, which are likely
// to come up soon (exposing one early changes nothing but when it is priced).
const exposeBatch = 64

// expose adds their exposure to the first shapes in line not yet exposed, and puts
// them back in line by their new best bounds.
func (q *queue) expose() {
	batch := make([]shapeKey, 0, exposeBatch)
	for len(batch) < exposeBatch && len(q.order) > 0 && !q.shapes[q.order[0].idx].exposed {
		batch = append(batch, heap.Pop(&q.order).(shapeKey))
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(q.workers, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(batch); i = int(next.Add(1)) - 1 {
				s := &q.shapes[batch[i].idx]
				s.expose(q.e, q.req)
				batch[i].best = max(batch[i].best, s.bestBound(q.req, q.sp))
			}
		}()
	}
	wg.Wait()
	for _, k := range batch {
		heap.Push(&q.order, k)
	}
}

func before(a, b *candidate) bool {
	return a.bound < b.bound || a.bound == b.bound && a.ordinal < b.ordinal
}

func (q *queue) push(c candidate) {
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

// pop removes the best layout; call it after peek returned one.
func (q *queue) pop() candidate {
	h := q.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
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
	return top
}

// Search enumerates, prunes, evaluates and ranks. The same request always gives the
// same answer: candidates are evaluated best-bound first in fixed batches, and ties
// are broken by enumeration order.
func Search(ctx context.Context, e *step.Estimator, req Request) (Result, error) {
	start := time.Now()
	if err := req.validate(); err != nil {
		return Result{}, err
	}
	if len(req.ExcludeNodes) > 0 {
		req.Free = req.Free.without(req.Cluster, req.ExcludeNodes)
		if len(req.Free) == 0 {
			return Result{}, invalid.Field("exclude_nodes", "no node of the cluster is left")
		}
	}
	if req.Objective == "" {
		req.Objective = FastestStep
	}
	if req.TopK == 0 {
		req.TopK = DefaultTopK
	}
	req.Constraints = req.Constraints.Canonical()
	if req.Training.Optimizer == (step.Optimizer{}) {
		req.Training.Optimizer = step.AdamMixed()
	}
	if req.Training.Precision == "" {
		req.Training.Precision = step.BF16
	}
	workers := req.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Phases are reported one at a time; the one running when the search fails is
	// ended with the items it got to.
	var inPhase func(int)
	begin := func(phase string) {
		if req.Trace != nil {
			inPhase = req.Trace(phase)
		}
	}
	end := func(items int) {
		if inPhase != nil {
			inPhase(items)
			inPhase = nil
		}
	}
	defer end(0)
	req.Model = req.Model.Normalise()
	sp := newSpace(&req)
	stats := Stats{Pruned: map[string]int{}}
	begin(PhaseEnumerate)
	shapes, kept, err := enumerate(ctx, e, &req, sp, &stats, workers)
	end(kept)
	if err != nil {
		return Result{}, err
	}
	q := newQueue(e, workers, &req, sp, shapes)

	type evaluated struct {
		c        *candidate
		setAside string // why it was not priced (a Pruned reason), if it was not
		alt      int    // the placement taken
		res      step.Result
		score    float64
		ok       bool
		err      error
	}
	// A plan that leaves more whole nodes free is not dominated by one that leaves
	// fewer (the placement is part of what a scheduler weighs).
	dominates := func(a, b *evaluated) bool {
		return a.c.n == b.c.n && a.c.alts[a.alt].place.FreeWholeNodes >= b.c.alts[b.alt].place.FreeWholeNodes &&
			Dominates(a.res.StepTime, a.res.Memory.Headroom, b.res.StepTime, b.res.Memory.Headroom)
	}
	better := func(a, b *evaluated) bool { // a ranks before b
		if a.score != b.score {
			return a.score < b.score
		}
		return a.c.ordinal < b.c.ordinal
	}
	// Of one layout's placements the search keeps one: the one that leaves the most
	// whole nodes free, unless another is better by more than the placement
	// tolerance (placements in order, each against the one kept so far).
	tol := req.PlacementTolerance
	if tol == 0 {
		tol = DefaultPlacementTolerance
	}
	prefer := func(a, b *evaluated) bool { // b over a
		switch {
		case !b.ok:
			return false
		case !a.ok:
			return true
		}
		if d := (a.score - b.score) / math.Max(math.Abs(a.score), 1e-300); d > tol {
			return true
		} else if d < -tol {
			return false
		}
		if fa, fb := a.c.alts[a.alt].place.FreeWholeNodes, b.c.alts[b.alt].place.FreeWholeNodes; fa != fb {
			return fb > fa
		}
		return b.score < a.score
	}
	// Every feasible plan, compactly, for the Pareto front.
	type point struct {
		n          int
		step, head float64
		c          *candidate
		alt        int
	}
	var top []*evaluated
	fronts := fronts{}
	taken := 0 // layouts taken from the queue
	var all []point
	kth := math.Inf(1)
	// Layouts are taken from the queue best bound first until the next one's bound
	// cannot beat the K-th plan: the evaluated set, and so the Pareto front, depend
	// on the bounds alone, not on the parallelism or on how the work is batched. A
	// chunk of layouts is checked and priced at once over the workers — the memory
	// of each first: a layout that does not fit, or that a plan from an earlier chunk
	// beats on a lower bound of its time and on its exact memory, is not priced —
	// and the chunk is then taken in order, one layout at a time, the stop test
	// before each (what lies past the stop is dropped by the answer). The chunk sizes
	// are fixed, so the layouts set aside (counted in the statistics) do not depend
	// on the parallelism either.
	// Chunks grow from 8 layouts to 256: the first plans priced are the best
	// placed to set the later ones aside.
	chunk := 8
	// evaluate checks and prices one layout on each of its placements, keeping the
	// preferred; it only reads the search's state.
	evaluate := func(c *candidate) evaluated {
		// The memory does not depend on the placement.
		r := step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: c.layoutWith(&req), Ranks: c.alts[0].ranks}
		mem, err := e.Memory(r)
		switch {
		case err != nil:
			return evaluated{c: c, setAside: PrunedInvalid}
		case !mem.Fits || mem.Headroom < req.Constraints.MinHeadroomGB:
			return evaluated{c: c, setAside: PrunedMemory}
		case !req.IncludeDominated && fronts.beaten(c, mem.Headroom):
			return evaluated{c: c, setAside: PrunedDominatedBound}
		}
		var best evaluated
		for i, al := range c.alts {
			r.Ranks, r.SlowGPUSpeed, r.DegradedNICSpeed, r.DegradedLinkSpeed = al.ranks, req.SlowGPUSpeed, req.DegradedNICSpeed, req.DegradedLinkSpeed
			res, err := e.Quick(r)
			ev := evaluated{c: c, alt: i, res: res, err: err}
			if err == nil {
				ev.score = score(&req, int(c.n), res)
				ev.ok = res.Memory.Fits && res.Memory.Headroom >= req.Constraints.MinHeadroomGB
			}
			if i == 0 || prefer(&best, &ev) {
				best = ev
			}
		}
		return best
	}
	begin(PhaseEvaluate)
	for stopped := false; !stopped; {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		next := q.peek()
		if next == nil {
			break
		}
		if len(top) >= req.TopK && next.bound >= kth {
			stats.Pruned[PrunedTimeBound] += kept - taken
			break
		}
		// Each chunk has its own arrays: the plans kept in the top K and the Pareto
		// points point into them.
		cands := make([]candidate, 0, chunk)
		for len(cands) < chunk && q.peek() != nil {
			cands = append(cands, q.pop())
		}
		chunk = min(2*chunk, 256)
		out := make([]evaluated, len(cands))
		var nextC atomic.Int64
		var wg sync.WaitGroup
		for range min(workers, len(cands)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := int(nextC.Add(1)) - 1; j < len(cands) && ctx.Err() == nil; j = int(nextC.Add(1)) - 1 {
					out[j] = evaluate(&cands[j])
				}
			}()
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		for j := range cands {
			if len(top) >= req.TopK && cands[j].bound >= kth {
				stats.Pruned[PrunedTimeBound] += kept - taken
				stopped = true
				break
			}
			taken++
			ev := &out[j]
			if ev.setAside != "" {
				stats.Pruned[ev.setAside]++
				continue
			}
			stats.Evaluated++
			switch {
			case ev.err != nil:
				stats.Pruned[PrunedInvalid]++
				continue
			case !ev.ok:
				stats.Pruned[PrunedMemory]++
				continue
			}
			stats.Feasible++
			all = append(all, point{int(ev.c.n), ev.res.StepTime, ev.res.Memory.Headroom, ev.c, ev.alt})
			fronts.add(int(ev.c.n), ev.c.alts[ev.alt].place.FreeWholeNodes, ev.score, ev.res.Memory.Headroom)
			if !req.IncludeDominated {
				// A dominated plan stays out; one the new plan dominates leaves.
				if slices.ContainsFunc(top, func(t *evaluated) bool { return dominates(t, ev) }) {
					stats.Dominated++
					continue
				}
				n := len(top)
				top = slices.DeleteFunc(top, func(t *evaluated) bool { return dominates(ev, t) })
				stats.Dominated += n - len(top)
			}
			// Insert into the sorted top K.
			pos := len(top)
			for pos > 0 && better(ev, top[pos-1]) {
				pos--
			}
			if pos < req.TopK {
				keep := new(evaluated)
				*keep = *ev
				top = slices.Insert(top, pos, keep)
				if len(top) > req.TopK {
					top = top[:req.TopK]
				}
			}
			if len(top) == req.TopK {
				kth = top[len(top)-1].score
			}
		}
	}

	end(stats.Evaluated)

	res := Result{}
	// Plans are estimated again in full (communication table, assumptions).
	toPlan := func(c *candidate, alt int) (Plan, error) {
		al := c.alts[alt]
		r := step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: c.layoutWith(&req), Ranks: al.ranks, SlowGPUSpeed: req.SlowGPUSpeed, DegradedNICSpeed: req.DegradedNICSpeed, DegradedLinkSpeed: req.DegradedLinkSpeed}
		est, err := e.Estimate(r)
		if err != nil {
			return Plan{}, err
		}
		p := Plan{GPUs: int(c.n), Layout: est.Layout, Placement: *al.place, Estimate: est, Score: score(&req, int(c.n), est)}
		if req.PricePerGPUHour > 0 && req.TokenBudget > 0 {
			p.CostUSD = trainingCost(est.StepTime, int(c.n), float64(est.Training.GlobalBatch)*float64(est.Training.SeqLen), req.PricePerGPUHour, req.TokenBudget)
		}
		return p, nil
	}
	begin(PhaseRank)
	for i, ev := range top {
		p, err := toPlan(ev.c, ev.alt)
		if err != nil {
			return Result{}, err
		}
		p.Rank = i + 1
		if req.IncludeDominated {
			p.Dominated = slices.ContainsFunc(all, func(a point) bool {
				return int(a.n) == p.GPUs && Dominates(a.step, a.head, ev.res.StepTime, ev.res.Memory.Headroom)
			})
		}
		res.Top = append(res.Top, p)
	}
	end(len(res.Top))
	// Pareto front over (GPUs, step time, headroom) among the evaluated plans: in order
	// of step time, a plan is dominated when an earlier one (no slower) uses no more
	// GPUs and keeps at least as much headroom. Front members are estimated again for
	// their full result (the search keeps only three numbers per plan).
	slices.SortStableFunc(all, func(a, b point) int {
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
	begin(PhasePareto)
	sizes := slices.Clone(stats.GPUCounts)
	slices.Sort(sizes)
	best := make([]float64, len(sizes)) // best headroom so far per GPU count
	for i := range best {
		best[i] = math.Inf(-1)
	}
	for _, a := range all {
		idx, _ := slices.BinarySearch(sizes, a.n)
		dominated := false
		for j := 0; j <= idx; j++ {
			if best[j] >= a.head {
				dominated = true
				break
			}
		}
		if dominated {
			continue
		}
		best[idx] = a.head
		p, err := toPlan(a.c, a.alt)
		if err != nil {
			return Result{}, err
		}
		res.Pareto = append(res.Pareto, p)
	}
	end(len(res.Pareto))
	stats.Elapsed = time.Since(start)
	res.Stats = stats
	return res, nil
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
// ascending, headrooms strictly ascending.
type fronts map[frontKey][]stair

type frontKey struct{ n, freeWhole int }

type stair struct{ score, head float64 }

// add records a feasible evaluated plan on n GPUs that leaves freeWhole whole nodes
// free.
func (f fronts) add(n, freeWhole int, score, head float64) {
	k := frontKey{n, freeWhole}
	s := f[k]
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
	f[k] = slices.Insert(slices.Delete(s, i, j), i, stair{score, head})
}

// beaten tells whether an evaluated plan on as many GPUs, leaving as many whole
// nodes free as any placement of c, has a score below c's lower bound and at least
// headroom head: it then dominates c whatever c's time and placement (scores grow
// with the step time on a fixed number of GPUs), so c can be neither in the top K
// nor on the Pareto front.
func (f fronts) beaten(c *candidate, head float64) bool {
	free := c.mostWholeNodesFree()
	for k, s := range f {
		if k.n != int(c.n) || k.freeWhole < free {
			continue
		}
		i, _ := slices.BinarySearchFunc(s, c.bound, func(a stair, x float64) int { return cmp.Compare(a.score, x) })
		if i > 0 && s[i-1].head >= head {
			return true
		}
	}
	return false
}
