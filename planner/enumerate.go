package planner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/step"
)

// gpuCounts lists the job sizes to consider: the exact size, or every size in range
// that fills whole nodes (or divides one node).
func gpuCounts(req *Request) []int {
	if req.GPUs > 0 {
		return []int{req.GPUs}
	}
	g := req.Cluster.Spec.GPUsPerNode
	var out []int
	for n := max(1, req.MinGPUs); n <= req.MaxGPUs; n++ {
		if n%g == 0 || (n < g && g%n == 0) {
			out = append(out, n)
		}
	}
	return out
}

// allowed tells whether a constraint list admits v; an empty list admits anything.
func allowed[T comparable](list []T, v T) bool {
	return len(list) == 0 || slices.Contains(list, v)
}

func divisors(n int) []int {
	out := make([]int, 0, 16)
	var d int
	for d = 1; d*d < n; d++ {
		if n%d == 0 {
			out = append(out, d)
		}
	}
	small := len(out)
	if d*d == n {
		out = append(out, d)
	}
	for i := small - 1; i >= 0; i-- {
		out = append(out, n/out[i])
	}
	return out
}

// space is what the enumeration draws from, fixed for one search.
type space struct {
	recomputes []step.Recompute
	zeros      []int
	// zerosPP, when not empty, are the ZeRO stages searched with a pipeline
	// (Constraints.zeroWithPipeline).
	zerosPP []int
	// zerosFlat, when not empty, are those searched without one
	// (Constraints.zeroWithoutPipeline); ddpAlone keeps ZeRO 0 with data
	// parallelism to layouts without TP, PP or CP (Constraints.ddpAlone).
	zerosFlat []int
	ddpAlone  bool
	// fp8Sharded: fp8 weights only at ZeRO 1 and more (Constraints.fp8Sharded).
	fp8Sharded bool
	eps        []int
	maxMBS     int
	capGB      float64 // memory a layout may use per GPU
	// fp8s are the fp8-weight settings every shape tries (step.Layout.FP8Params),
	// offs the activation-offload ones (step.Layout.OffloadActivations); with
	// offRescue a shape none of whose layouts fits without offload tries it.
	fp8s, offs []bool
	offRescue  bool
}

func newSpace(req *Request) *space {
	cs := &req.Constraints
	sp := &space{recomputes: cs.Recompute, zeros: cs.ZeRO, zerosPP: cs.zeroWithPipeline, zerosFlat: cs.zeroWithoutPipeline, ddpAlone: cs.ddpAlone, fp8Sharded: cs.fp8Sharded, eps: []int{1}, maxMBS: cs.MaxMicroBatch,
		capGB: req.Cluster.GPU().MemoryGB - cs.MinHeadroomGB}
	if sp.maxMBS == 0 {
		sp.maxMBS = DefaultMaxMicroBatch
	}
	if len(sp.recomputes) == 0 {
		sp.recomputes = []step.Recompute{step.RecomputeNone, step.RecomputeSelective, step.RecomputeFull}
	}
	if len(sp.zeros) == 0 {
		sp.zeros = []int{0, 1, 2, 3}
	}
	switch cs.Offload {
	case step.OffloadOptimizer:
		// The host updates each rank's shard: ZeRO ≥ 1.
		sp.zeros = slices.DeleteFunc(slices.Clone(sp.zeros), func(z int) bool { return z < 1 })
	case step.OffloadParams:
		sp.zeros = slices.DeleteFunc(slices.Clone(sp.zeros), func(z int) bool { return z != 3 })
	}
	if req.Model.MoE != nil {
		sp.eps = divisors(req.Model.MoE.Experts)
	}
	fw, _ := framework.Get(req.Training.Framework)
	// fp8 weights, with fp8 matmuls: on where the framework stores them, unless the
	// constraints list it (the training's fp8_params pins it on). The same layout
	// with 16-bit weights is never faster and never holds less (it casts every
	// weight each step and keeps a second copy), so it would be dominated.
	sp.fp8s = []bool{false}
	if t := &req.Training; t.Precision == step.FP8 {
		switch {
		case t.FP8Params:
			sp.fp8s = []bool{true}
		case len(cs.FP8Params) > 0:
			sp.fp8s = cs.FP8Params
		case fw.FP8Params && cs.fp8Sharded && len(cs.ZeRO) > 0 && !slices.ContainsFunc(cs.ZeRO, func(z int) bool { return z >= 1 }):
			// The framework keeps fp8 weights only under a sharded optimizer
			// (framework.Runs.FP8ParamsSharded), and ZeRO 0 alone is asked for:
			// its weights stay in 16 bits.
		case fw.FP8Params:
			sp.fp8s = []bool{true}
		}
	}
	// Activation offload: as the constraints list it; else, where the framework
	// runs it and the cluster describes its hosts, for the shapes that fit no other
	// way (the same layout without it is never slower and it only frees memory).
	sp.offs = []bool{false}
	if len(cs.OffloadActivations) > 0 {
		sp.offs = cs.OffloadActivations
	} else {
		sp.offRescue = fw.ActivationOffload && req.Cluster.Spec.Host.Described()
	}
	return sp
}

// shape is one point of the search space before the pipeline schedule and the ZeRO
// stage are chosen: the layouts that share one compute bound. A search keeps its
// shapes (tens of thousands) rather than its layouts (hundreds of thousands, ten
// times the memory and the sorting) and expands a shape into layouts only when its
// best bound comes up (see queue). A shape holds no pointers (its placements,
// layer split and schedules are its part's, by index): the arrays of shapes are
// recycled from search to search and the garbage collector need not scan them.
type shape struct {
	shapeInfo
	bounds step.Bounds // as enumerated (its Backward and WeightGrad give the zero-bubble bubbles)
}

// shapeInfo is a shape but for its bounds (which the enumeration writes in place
// first).
type shapeInfo struct {
	best    float64 // the lowest bound among its layouts that fit
	perMB   float64 // lower bound of one micro-batch through a stage
	zero3   float64 // lower bound of what ZeRO-3 exposes (step.Exposure), once exposed
	gather  float64 // lower bound of what ZeRO 1–2 expose (step.Exposure.ParamGather), once exposed
	send    float64 // lower bound of one pipeline send (step.Exposure.Send), once exposed
	wait    float64 // of an offload shape, the copies' waits perMB counts (step.OffloadWaitBound)
	n       int32
	ordinal int32 // enumeration order of its first layout
	m       int32 // micro-batches per replica
	tp, pp  int32
	dp, cp  int32
	ep, mbs int32
	part    int32  // its part (the placements) among the search's
	split   uint16 // its layer split among the part's
	scheds  uint16 // its schedules among the part's lists
	tables  uint16 // its zero-bubble schedules' tables among the part's
	fits    uint8  // bit z: the layouts with ZeRO stage z are searched and their states fit
	zeros   uint8  // bit z: the search tries ZeRO stage z on the shape (searched; set by fitStages)
	rc      uint8
	sp      bool
	etp1    bool // experts whole on each TP rank (step.Layout.ETP 1)
	otp     bool // TP comm-GEMM overlap (step.Layout.OverlapTP)
	ulysses bool // context parallelism by all-to-alls (step.Layout.CPAllToAll)
	exposed bool // perMB and zero3 count step.Exposure
	fp8     bool // matmul weights stored in fp8 (step.Layout.FP8Params)
	offAct  bool // activations offloaded to host memory (step.Layout.OffloadActivations)

	// The queue's: the shape came up first in line at its enumerated bound
	// (queue.comeUp), it need not be exposed (queue.nextBatch), and its best
	// bound once exposed.
	cameUp, unexposable bool
	keyExposed          float64
}

// expose adds to the shape's bounds the communication that step.Exposure bounds
// (the lowest over its placements): priced only for the shapes a search comes to,
// it only raises them. p is the shape's part; memos are the exposing worker's, one
// for each of the part's placements (step.ExposureMemo).
func (s *shape) expose(e *step.Estimator, req *Request, p *part, memos []step.ExposureMemo) {
	s.exposed = true
	base := s.baseLayout(p)
	var low step.Exposure
	for i, al := range p.alts {
		x := e.ExposedBoundsMemo(&step.Request{Model: req.Model, Training: req.Training, Cluster: al.cluster, Layout: base, Ranks: al.ranks}, &s.bounds, &memos[i])
		if i == 0 {
			low = x
		}
		low.PerMicroBatch, low.ZeRO3, low.ParamGather = min(low.PerMicroBatch, x.PerMicroBatch), min(low.ZeRO3, x.ZeRO3), min(low.ParamGather, x.ParamGather)
		low.Send = min(low.Send, x.Send)
	}
	s.perMB += low.PerMicroBatch
	s.zero3 = low.ZeRO3
	s.gather = low.ParamGather
	s.send = low.Send
}

// baseLayout is the layout the shape's bounds are computed for: 1F1B, no ZeRO.
func (s *shape) baseLayout(p *part) step.Layout {
	return step.Layout{TP: int(s.tp), PP: int(s.pp), DP: int(s.dp), CP: int(s.cp), EP: int(s.ep), MicroBatch: int(s.mbs),
		Recompute: recomputeCodes[s.rc], SP: s.sp, Schedule: step.OneFOneB, VirtualStages: 1, LayerSplit: p.splits[s.split], ETP: etpOf(s.etp1), OverlapTP: s.otp, CPAllToAll: s.ulysses,
		FP8Params: s.fp8, OffloadActivations: s.offAct}
}

// bestBound is the lowest bound of the shape's layouts whose memory lower bound
// fits (+Inf if none does). Stages 1 and 2 add the same to a schedule's bound, so
// their schedules are bounded once; of the schedules whose bubble is the fill and drain,
// the one with the most virtual stages has the lowest bound (bestSchedules).
func (s *shape) bestBound(req *Request, p *part) float64 {
	best := math.Inf(1)
	scheds := p.scheds[s.scheds]
	if s.perMB >= 0 && s.send == 0 {
		// With the sends bounded, deeper interleaving sends more: every depth.
		scheds = p.bestScheds[s.scheds]
	}
	// Each distinct extra once: what stage 0 adds (nothing), stages 1–2, stage 3.
	unexposed := s.fits&1 != 0 || s.fits&6 != 0 && s.gather == 0
	// With activation offload, only the schedules it runs with (shape.runs).
	bound := func(extra float64) {
		for _, sc := range scheds {
			if s.runs(sc) {
				best = min(best, s.schedBound(req, p, sc, extra))
			}
		}
	}
	if unexposed {
		bound(0)
	}
	if s.fits&6 != 0 && s.gather != 0 {
		bound(s.gather)
	}
	if s.fits&(1<<3) != 0 && (s.zero3 != 0 || !unexposed) && (s.zero3 != s.gather || s.fits&6 == 0) {
		bound(s.zero3)
	}
	return best
}

// searched tells whether the search tries the shape's layouts with ZeRO stage zero:
// sharding needs data or context parallelism, and a pipeline a stage the framework
// runs with one (space.zerosPP), and without one a stage it runs without
// (space.zerosFlat, space.ddpAlone); fp8 weights need a stage the framework keeps
// them under (space.fp8Sharded), ZeRO 1 over one rank where nothing else shards.
func (s *shape) searched(sp *space, zero int) bool {
	if sp.ddpAlone && zero == 0 && s.dp > 1 && (s.tp > 1 || s.pp > 1 || s.cp > 1) {
		return false
	}
	if sp.fp8Sharded && zero == 0 && s.fp8 {
		return false
	}
	// Without data or context parallelism there is nothing to shard, but fp8
	// weights the framework keeps only under its distributed optimizer run with
	// it over one rank: ZeRO 1 (Megatron-LM's validate_args asks it of
	// --fp8-param-gather whatever the data-parallel size), priced as ZeRO 0.
	shards := s.dp*s.cp > 1 || zero == 1 && sp.fp8Sharded && s.fp8
	return (zero == 0 || shards) && (s.pp < 2 || len(sp.zerosPP) == 0 || slices.Contains(sp.zerosPP, zero)) &&
		(s.pp > 1 || len(sp.zerosFlat) == 0 || slices.Contains(sp.zerosFlat, zero))
}

// layouts calls emit with each layout of the shape whose memory lower bound fits, in
// enumeration order (ZeRO stage, then schedule), with its bound, ordinal, ZeRO stage
// and schedule (its index among the shape's). The layouts of a ZeRO stage for which
// skip (when not nil) says true are not bounded nor emitted: it returns how many.
func (s *shape) layouts(req *Request, sp *space, p *part, skip func(zero int) bool, emit func(bound float64, ordinal int32, zero int8, sched uint16)) (skipped int) {
	ordinal := s.ordinal
	scheds := p.scheds[s.scheds]
	for _, zero := range sp.zeros {
		if s.zeros&(1<<zero) == 0 {
			continue // not searched (nothing to shard)
		}
		if s.fits&(1<<zero) == 0 {
			ordinal += int32(len(scheds))
			continue
		}
		if skip != nil && skip(zero) {
			ordinal += int32(len(scheds))
			for _, sc := range scheds {
				if s.runs(sc) {
					skipped++
				}
			}
			continue
		}
		for i, sc := range scheds {
			ordinal++
			if s.runs(sc) {
				emit(s.schedBound(req, p, sc, s.zeroBound(zero)), ordinal, int8(zero), uint16(i))
			}
		}
	}
	return skipped
}

// candidate is the shape's layout with ZeRO stage zero and its schedule i.
func (s *shape) candidate(req *Request, p *part, bound float64, ordinal int32, zero int8, i uint16) candidate {
	sc := p.scheds[s.scheds][i]
	ls := p.splits[s.split]
	if st := int(s.pp) * sc.v; sc.v > 1 && req.Model.Layers%st != 0 {
		ls = p.chunkSplit(req, st)
	}
	return candidate{bound: bound, alts: p.alts, split: ls,
		n: s.n, ordinal: ordinal, tp: s.tp, pp: s.pp, dp: s.dp, cp: s.cp, ep: s.ep, mbs: s.mbs,
		v: int16(sc.v), zero: zero, rc: s.rc, sched: schedCode(sc.s), sp: s.sp, etp1: s.etp1, otp: s.otp,
		oep: overlapEP(req, s, sc.s), ulysses: s.ulysses, fp8: s.fp8, offAct: s.offAct, maxHead: s.maxHeadroom(req, p, int(zero))}
}

// chunkSplit is the layer split of an interleaved layout's st model chunks when
// they do not divide the layers (step.PipelineSplit, else step.BalancedSplit),
// made once per part: only the queue's goroutine makes candidates.
func (p *part) chunkSplit(req *Request, st int) []int {
	if ls, ok := p.chunkSplits[st]; ok {
		return ls
	}
	ls := step.PipelineSplit(req.Model.Layers, st)
	if ls == nil {
		ls = step.BalancedSplit(req.Model, req.Training.SeqLen, st)
	}
	if p.chunkSplits == nil {
		p.chunkSplits = map[int][]int{}
	}
	p.chunkSplits[st] = ls
	return ls
}

// overlapEP says the layout overlaps its expert-parallel all-to-alls: wherever the
// framework runs it (step's validateOverlapEP rules) unless the constraints say
// off. The all-to-alls are not in the shape's bound, so the bound holds either way.
func overlapEP(req *Request, s *shape, sched step.Schedule) bool {
	if req.Model.MoE == nil || s.ep < 2 || !allowed(req.Constraints.OverlapEP, true) || sched == step.DualPipe {
		return false
	}
	return (s.pp == 1 || sched == step.Interleaved) && recomputeCodes[s.rc] != step.RecomputeFull
}

// statesFit tells whether the model states of params parameters per GPU under a
// ZeRO stage, with reserveGB (the runtime reserve and the activations), fit in the
// memory a layout may use: the memory lower bound.
func (s *shape) statesFit(req *Request, sp *space, params, reserveGB float64, zero int) bool {
	w, gr, st := step.ModelStateBytes(params, req.Training.Optimizer, zero, int(s.dp*s.cp))
	switch req.Constraints.Offload {
	case step.OffloadOptimizer:
		st = 0 // in host memory
	case step.OffloadParams:
		w, gr, st = 0, 0, 0
	}
	return (w+gr+st)/1e9+reserveGB <= sp.capGB
}

// maxHeadroom is an upper bound of the memory headroom of the shape's layouts with
// a ZeRO stage: the GPU's memory less their memory lower bound (statesFit's, which
// every schedule keeps at least, and ZeRO-3's gathered layers: part.gatheredGB),
// +Inf with fp8 weights (held in fewer bytes than the optimizer's). p is the
// shape's part.
func (s *shape) maxHeadroom(req *Request, p *part, zero int) float64 {
	if req.Training.FP8Params || s.fp8 {
		return math.Inf(1)
	}
	w, gr, st := step.ModelStateBytes(s.bounds.Params, req.Training.Optimizer, zero, int(s.dp*s.cp))
	switch req.Constraints.Offload {
	case step.OffloadOptimizer:
		st = 0
	case step.OffloadParams:
		w, gr, st = 0, 0, 0
	}
	var gathered float64
	if zero == 3 && s.dp*s.cp > 1 && !req.Training.OnDemandGathers {
		gathered = p.gatheredGB
	}
	return req.Cluster.GPU().MemoryGB - ((w+gr+st)/1e9 + s.bounds.ReserveGB + s.bounds.ActivationsGB + gathered)
}

// gatheredGB is at least what flat ZeRO-3 holds of the two layers it keeps
// gathered (the one computing, the one prefetched: step's memoryOf) on a GPU with
// TP tp: twice a layer's weights, a layer holding at least its attention and the
// smaller of a dense MLP and the shared experts, split over TP (step's
// leastRankParams), in the optimizer's weight bytes.
func gatheredGB(req *Request, tp int) float64 {
	p := req.Model.Params()
	mlp := p.PerLayerDenseMLP
	if req.Model.MoE != nil {
		mlp = min(mlp, p.PerLayerShared)
	}
	return 2 * (p.PerLayerAttention + mlp) / float64(tp) * req.Training.Optimizer.WeightBytes / 1e9
}

// bound is the objective's lower bound for the shape run with v virtual stages,
// plus extra seconds.
func (s *shape) bound(req *Request, v int, extra float64) float64 {
	// GPipe, 1F1B and interleaving run v·M + pp − 1 slots of one chunk's forward
	// and backward (step's closedSpan), each with its two sends; 2·v·M of
	// them are exposed and the rest lengthen the bubble.
	sends := 2 * float64(v*int(s.m)+int(s.pp)-1) * s.send
	if v > 1 && step.PipelineSendsOverlap(req.Training.Framework, step.Interleaved) {
		// The steady state's sends run under the next chunk's compute and the
		// rest may fall in the first rank's waits: none counted.
		sends = 0
	}
	slots := float64(s.m) + float64(s.pp-1)/float64(v)
	stepLB := slots*s.perMB + float64(s.m)*s.bounds.Contention + sends
	if s.wait > 0 {
		// With activation offload, what ZeRO exposes hides under the copies'
		// waits as under the compute (the estimate's ZeRO-3 exposure shrinks as
		// the waits lengthen the layers): the larger of the bound with the waits
		// and the bound without them but with ZeRO's exposure, each of which
		// step's TestLowerBoundsHold checks apart.
		return boundScore(req, int(s.n), max(stepLB, stepLB-slots*s.wait+extra))
	}
	return boundScore(req, int(s.n), stepLB+extra)
}

// zeroBound is the lower bound of the step time that a ZeRO stage adds.
func (s *shape) zeroBound(zero int) float64 {
	switch zero {
	case 3:
		return s.zero3
	case 1, 2:
		return s.gather
	}
	return 0
}

// schedBound is the bound of one schedule of the shape. The zero-bubble schedules
// are bounded by executing their tables (step.PipelineTable.LowerBound) with the
// shape's lower bounds of the blocks — except ZB-V for a MoE model, whose V puts
// other MoE layers on the slowest rank than the shape's compute counted: that
// counts only the compute (no bubble, no ZeRO-3 exposure, which is priced on the
// shape's compute).
func (s *shape) schedBound(req *Request, p *part, sc sched, extra float64) float64 {
	cont := float64(s.m) * s.bounds.Contention
	if sc.s == step.ZeroBubbleV && req.Model.MoE != nil {
		return boundScore(req, int(s.n), float64(s.m)*s.perMB+cont)
	}
	perMB := s.perMB
	if sc.s == step.DualPipe {
		// DualPipe's TP communication on its pair's layer counts (step.Bounds).
		perMB -= s.bounds.PerMicroBatch - s.bounds.DualPipePerMB
		cont = float64(s.m) * s.bounds.DualPipeContention
	}
	if i := zbIndex(sc.s); i >= 0 {
		// The sends: 2·c·M exposed (c chunks a rank, two down ZB-V's V), at
		// least; they lengthen the blocks the tables run, so the span bounds
		// still hold. DualPipe's none: its estimate hides them under the paired
		// chunks' compute (step's pricing.pipeline).
		sends := 2 * float64(s.m) * s.send
		switch sc.s {
		case step.ZeroBubbleV:
			sends *= 2
		case step.DualPipe:
			sends = 0
		}
		if t := p.tables[s.tables][i]; t != nil {
			return boundScore(req, int(s.n), max(float64(s.m)*perMB+sends, t.LowerBound(&s.bounds, perMB))+cont+extra)
		}
		fill, _ := step.PipelineFillBound(sc.s, int(s.pp), s.bounds.Forward) // a table too large to bound with
		return boundScore(req, int(s.n), float64(s.m)*perMB+sends+fill+cont+extra)
	}
	return s.bound(req, sc.v, extra)
}

// zbIndex is a zero-bubble schedule's index in part.tables, -1 for another.
func zbIndex(s step.Schedule) int {
	switch s {
	case step.ZeroBubble:
		return 0
	case step.ZeroBubbleV:
		return 1
	case step.DualPipe:
		return 2
	}
	return -1
}

// enumerate builds every shape with a layout that passes the cheap checks —
// divisibility, placement on the free GPUs, the memory lower bound — and returns
// them with the number of such layouts. The work is split by (GPU count, TP, CP)
// over the workers; the parts are joined in enumeration order, so the shapes, their
// ordinals and the statistics are those of a sequential enumeration.
func enumerate(ctx context.Context, e *step.Estimator, req *Request, sp *space, st *Stats, workers int, buf *buffers) (*enumeration, error) {
	a, t, cs := req.Model, req.Training, &req.Constraints
	g := req.Cluster.Spec.GPUsPerNode
	var parts []part
	for _, n := range gpuCounts(req) {
		st.GPUCounts = append(st.GPUCounts, n)
		// On a free cluster the placement does not depend on TP (a node's GPUs are
		// a multiple of it, and so is n): placed once per size.
		var wholeAlts []alt
		for _, tp := range divisors(n) {
			if !allowed(cs.TP, tp) || a.Heads%tp != 0 || a.FFN%tp != 0 {
				continue
			}
			if kv := a.KVHeads; kv%tp != 0 && tp%kv != 0 {
				continue
			}
			if tp > g && (!cs.TPAcrossNodes || tp%g != 0) {
				continue
			}
			if tp <= g && g%tp != 0 {
				st.Pruned[PrunedDivisibility]++
				continue // TP groups would straddle nodes
			}
			alts := wholeAlts
			if alts == nil {
				pls := req.placements(n, tp)
				if len(pls) == 0 {
					st.Pruned[PrunedPlacement]++
					continue
				}
				alts = make([]alt, len(pls))
				for i, pl := range pls {
					// Ranks on the first GPUs in order need no map: their communication
					// groups are cached by layout alone, across searches.
					alts[i].place = pl
					alts[i].slow, alts[i].nic, alts[i].link = req.whatIfs(pl)
					var err error
					if alts[i].cluster, err = req.clusterFor(e, pl); err != nil {
						return nil, err
					}
					if !identity(pl.Ranks) {
						if alts[i].ranks, err = step.NewRankMap(req.Cluster, pl.Ranks); err != nil {
							return nil, err
						}
					}
				}
				if req.Free == nil {
					wholeAlts = alts
				}
			}
			for _, cp := range divisors(n / tp) {
				if allowed(cs.CP, cp) && t.SeqLen%cp == 0 {
					parts = append(parts, part{idx: int32(len(parts)), n: n, tp: tp, cp: cp, alts: alts, gatheredGB: gatheredGB(req, tp)})
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}

	var total atomic.Int64
	en := &enumeration{parts: parts}
	defer func() {
		if en.shapes == nil {
			en.release() // failed: nothing will read the shapes
		}
	}()
	caches := buf.caches
	if len(caches) < max(1, workers) {
		caches = make([]workerCache, max(1, workers))
		buf.caches = caches
	}
	for i := range caches {
		caches[i].reset(e, req)
	}
	parallel(ctx, workers, len(parts), func(w, i int) { parts[i].enumerate(ctx, e, req, sp, &total, &caches[w]) })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	count := 0
	for i := range parts {
		count += parts[i].count
	}
	out := buf.shapes[:0] // the parts' shapes stay where they are
	out = slices.Grow(out, count)
	kept, ordinal := 0, 0
	for i := range parts {
		p := &parts[i]
		if p.err != nil {
			return nil, p.err
		}
		for j := range p.count {
			sh := &p.chunks[j/shapeChunk][j%shapeChunk]
			sh.ordinal += int32(ordinal)
			out = append(out, sh)
		}
		ordinal += p.enumerated
		kept += p.kept
		st.Enumerated += p.enumerated
		if p.refused > 0 && (st.refused == 0 || p.firstRefused.m > st.firstRefused.m) {
			st.firstRefused = p.firstRefused
		}
		st.refused += p.refused
		for reason, k := range map[string]int{PrunedDivisibility: p.divisibility, PrunedInvalid: p.invalid, PrunedMemoryBound: p.memoryBound} {
			if k > 0 {
				st.Pruned[reason] += k
			}
		}
	}
	en.shapes, en.kept = out, kept
	return en, nil
}

// enumeration is what enumerate found: the parts, their shapes in enumeration
// order, and the number of layouts that passed the cheap checks.
type enumeration struct {
	parts  []part
	shapes []*shape
	kept   int
}

// release gives the parts' arrays of shapes back for the next search; the shapes
// must not be read after.
func (en *enumeration) release() {
	for i := range en.parts {
		p := &en.parts[i]
		for _, c := range p.chunks {
			chunkPool.Put(c)
		}
		p.chunks, p.count = nil, 0
	}
	clear(en.shapes)
}

// part is the enumeration of one GPU count, TP and CP degree: its shapes, with
// ordinals counted from the part's start, and its statistics.
type part struct {
	idx        int32 // among the search's parts
	n, tp, cp  int
	alts       []alt
	gatheredGB float64   // gatheredGB of its TP
	splits     [][]int   // the layer splits of its shapes (shape.split)
	scheds     [][]sched // the schedule lists of its shapes (shape.scheds)
	bestScheds [][]sched // of each list, those that can give its best bound
	// tables are the compiled ZB-H1, ZB-V and DualPipe tables of its shapes' depth
	// and micro-batches (shape.tables; nil where the schedule is not listed).
	tables [][3]*step.PipelineTable
	// chunkSplits are the interleaved layouts' splits by model chunks (chunkSplit).
	chunkSplits map[int][]int

	chunks                             []*[shapeChunk]shape // its count shapes, in recycled arrays
	count                              int
	kept, enumerated                   int
	divisibility, invalid, memoryBound int
	// refused counts the pipelines (depth, micro-batch size) the job divides
	// into that no schedule searched runs (schedules: the frameworks' rules, the
	// schedules and interleaving depths asked for); firstRefused is the first of
	// those with the most micro-batches per replica.
	refused      int
	firstRefused refusal
	err          error
}

// refusal is a pipeline the job divides into that no schedule searched runs: pp
// stages, dp replicas, micro-batches of mbs sequences, m of them per replica.
type refusal struct{ pp, dp, mbs, m int }

// shapeChunk is how many shapes one array of a part holds: a part grows by whole
// arrays, never copying the shapes it has (a shape is a few hundred bytes, and a
// search has thousands), and the arrays go back to chunkPool when the search ends;
// 64 keep an array under the allocator's 32 KB small-object size.
const shapeChunk = 64

// chunkPool recycles the arrays of shapes from search to search: a search's
// shapes are most of what it allocates.
var chunkPool = sync.Pool{New: func() any { return new([shapeChunk]shape) }}

// slot is where the next shape goes: filled in place, and kept by add.
func (p *part) slot() *shape {
	if p.count == len(p.chunks)*shapeChunk {
		p.chunks = append(p.chunks, chunkPool.Get().(*[shapeChunk]shape))
	}
	return &p.chunks[p.count/shapeChunk][p.count%shapeChunk]
}

// add keeps the shape filled in at slot.
func (p *part) add() { p.count++ }

// workerCache is what an enumerating goroutine keeps across the parts it
// enumerates: the search's layouts share the model, training and cluster, and so
// the layers' compute times, and the schedule lists of a pipeline depth.
type workerCache struct {
	layers step.BoundsCache
	scheds map[schedKey]schedLists
	// splits are the cost-balanced splits by pipeline depth (read only once made).
	splits map[int][]int
	// tables are the compiled zero-bubble tables by schedule, depth, chunks and
	// micro-batches (nil: too large or not compiled), for all its parts.
	tables map[tableKey]*step.PipelineTable
	// tablesOf is the estimator that compiled the tables: they depend on nothing
	// else, so they stay from one search to the next of the same estimator.
	tablesOf *step.Estimator
}

// reset empties the cache for another search, keeping its maps' room (a search
// fills thousands of layer times: growing the maps anew was a third of what a warm
// search allocated), the layers' times when the search before was of the same
// model, training and cluster (step.BoundsCache.ResetFor), and the tables when it
// was of the same estimator.
func (w *workerCache) reset(e *step.Estimator, req *Request) {
	w.layers.ResetFor(e, req.Model, req.Training, req.Cluster)
	clear(w.scheds)
	clear(w.splits)
	if w.tablesOf != e {
		clear(w.tables)
		w.tablesOf = e
	}
}

type tableKey struct {
	s        step.Schedule
	pp, v, m int
}

// table is e.PipelineTable, kept for the goroutine's other parts (nil if it cannot
// be compiled).
func (w *workerCache) table(e *step.Estimator, s step.Schedule, pp, v, m int) *step.PipelineTable {
	k := tableKey{s, pp, v, m}
	if t, ok := w.tables[k]; ok {
		return t
	}
	t, err := e.PipelineTable(s, pp, v, m)
	if err != nil {
		t = nil
	}
	if w.tables == nil {
		w.tables = map[tableKey]*step.PipelineTable{}
	}
	w.tables[k] = t
	return t
}

// balancedSplit is step.BalancedSplit of the request's model over pp stages, made
// once per goroutine.
func (w *workerCache) balancedSplit(req *Request, pp int) []int {
	if s, ok := w.splits[pp]; ok {
		return s
	}
	s := step.BalancedSplit(req.Model, req.Training.SeqLen, pp)
	if w.splits == nil {
		w.splits = map[int][]int{}
	}
	w.splits[pp] = s
	return s
}

type schedKey struct{ pp, m int }

// schedLists are schedules' list and its bestSchedules.
type schedLists struct{ all, best []sched }

// schedules is the package's schedules(pp, m, …) and its bestSchedules, listed once
// (read only).
func (w *workerCache) schedules(pp, m, layers int, cs *Constraints) schedLists {
	k := schedKey{pp, schedClass(pp, m)}
	l, ok := w.scheds[k]
	if !ok {
		all := schedules(pp, m, layers, cs)
		l = schedLists{all, bestSchedules(all)}
		if w.scheds == nil {
			w.scheds = map[schedKey]schedLists{}
		}
		w.scheds[k] = l
	}
	return l
}

// enumerate fills the part. total counts the layouts of every part, to stop the
// search as soon as it passes Request.MaxLayouts; wc is the calling goroutine's.
func (p *part) enumerate(ctx context.Context, e *step.Estimator, req *Request, sp *space, total *atomic.Int64, wc *workerCache) {
	layers := &wc.layers
	a, t, cs := req.Model, req.Training, &req.Constraints
	n, tp, cp := p.n, p.tp, p.cp
	ordinal := 0
	r := step.Request{Model: a, Training: t, Cluster: req.Cluster} // its layout and ranks set per shape
	for _, pp := range divisors(n / (tp * cp)) {
		if !allowed(cs.PP, pp) || pp > a.Layers {
			continue
		}
		if ctx.Err() != nil {
			return // the caller reports it
		}
		var split []int
		if a.Layers%pp != 0 && cs.EvenSplit {
			p.divisibility++
			continue
		}
		if a.Layers%pp != 0 {
			// Counting the loss (and embedding) as layers, as Megatron can, or with
			// uneven_pp spreading them earlier-stages-first.
			split = step.PipelineSplit(a.Layers, pp)
			if split == nil {
				split = wc.balancedSplit(req, pp)
			}
			if split == nil {
				p.divisibility++
				continue
			}
		}
		dp := n / (tp * cp * pp)
		if t.GlobalBatch%dp != 0 {
			p.divisibility++
			continue
		}
		perReplica := t.GlobalBatch / dp
		splitIdx := uint16(len(p.splits))
		p.splits = append(p.splits, split)
		// The schedules depend on the depth and on the micro-batches' class under the
		// frameworks' rules (schedClass): listed once per depth and class, shared by
		// its shapes (read only).
		var schedsByClass [numSchedClasses]int // indices in p.scheds, + 1
		schedsFor := func(m int) ([]sched, uint16) {
			i := schedClass(pp, m)
			if schedsByClass[i] == 0 {
				schedsByClass[i] = len(p.scheds) + 1
				l := wc.schedules(pp, m, a.Layers, cs)
				p.scheds = append(p.scheds, l.all)
				p.bestScheds = append(p.bestScheds, l.best)
			}
			return p.scheds[schedsByClass[i]-1], uint16(schedsByClass[i] - 1)
		}
		// The zero-bubble schedules' tables, by micro-batch count.
		tablesFor := map[int]uint16{}
		tables := func(m int, scheds []sched) uint16 {
			if i, ok := tablesFor[m]; ok {
				return i
			}
			var ts [3]*step.PipelineTable
			for _, sc := range scheds {
				if i := zbIndex(sc.s); i >= 0 {
					ts[i] = wc.table(e, sc.s, pp, sc.v, m) // nil if it cannot compile: bounded without a bubble
				}
			}
			i := uint16(len(p.tables))
			p.tables = append(p.tables, ts)
			tablesFor[m] = i
			return i
		}
		// MoE parallel folding (Megatron-Core parallel_state.py: the expert
		// RankGenerator cuts ETP × EP groups from the world over PP and raises
		// unless ETP × EP × PP divides it): the expert groups fold over the tp ×
		// cp × dp ranks of a stage, so EP may exceed DP (foldsExperts).
		stageRanks := tp * cp * dp
		for _, ep := range sp.eps {
			if !allowed(cs.EP, ep) || stageRanks%ep != 0 {
				continue
			}
			for _, mbs := range divisors(perReplica) {
				if mbs > sp.maxMBS && len(cs.MicroBatch) == 0 && !(cs.oneMicroBatch && pp == 1) || !allowed(cs.MicroBatch, mbs) {
					continue
				}
				if cs.oneMicroBatch && pp == 1 && mbs != perReplica {
					// No gradient accumulation (framework.Runs.NoGradAccumulation):
					// without a pipeline the micro-batch is the local batch.
					continue
				}
				m := perReplica / mbs
				scheds, schedsIdx := schedsFor(m)
				if len(scheds) == 0 {
					// No layout: said when the search finds no plan (noPlanReason).
					if p.refused == 0 || m > p.firstRefused.m {
						p.firstRefused = refusal{pp, dp, mbs, m}
					}
					p.refused++
					continue
				}
				tablesIdx := tables(m, scheds)
				for _, rc := range sp.recomputes {
					for _, seqPar := range []bool{false, true} {
						if seqPar && tp == 1 || !allowed(cs.SP, seqPar) {
							continue
						}
						if seqPar && (t.SeqLen/cp)%tp != 0 {
							continue
						}
						// MoE layers with TP and SP also try each TP rank holding its experts
						// whole (expert tensor parallelism 1).
						etps := []int{0}
						if a.MoE != nil && tp > 1 && seqPar && allowed(cs.ExpertsWhole, true) {
							etps = append(etps, 1)
							if !allowed(cs.ExpertsWhole, false) {
								etps = etps[1:]
							}
						}
						// With TP and SP, TP communication overlapping the GEMMs
						// (Megatron-LM's --tp-comm-overlap, torch async TP). Unless the
						// constraints list it, only on: the same layout without it holds
						// the same memory and is never faster (what the GEMMs hide,
						// max(0, C − (t−1)/t·G) left of each collective C, costs only its
						// SMs' share of the compute under it), so it would be dominated.
						otps := overlapsTP[:1]
						if tp > 1 && seqPar {
							otps = overlapsTP[1:]
							if len(cs.OverlapTP) > 0 {
								otps = overlapsTP[:]
							}
						}
						// With CP, ring attention and, when the constraints list it and
						// tp × cp divides the heads (and cp the KV heads or they it),
						// Ulysses' all-to-alls. Not by default: it adds half as many
						// layouts again (DeepSeek-V3 on 2048 GPUs past a million).
						cpa := overlapsTP[:1]
						if cp > 1 && allowed(cs.CPAllToAll, true) && len(cs.CPAllToAll) > 0 && a.Heads%(tp*cp) == 0 && (max(1, a.KVHeads)%cp == 0 || cp%max(1, a.KVHeads) == 0) {
							cpa = overlapsTP[:]
						}
						for _, etp := range etps {
							if !foldsExperts(stageRanks, tp, ep, etp) {
								continue // no expert groups of etp × ep ranks on the stage
							}
							for _, otp := range otps {
								for _, uly := range cpa {
									if !allowed(cs.OverlapTP, otp) || cp > 1 && !allowed(cs.CPAllToAll, uly) {
										continue
									}
									for _, fp8 := range sp.fp8s {
										for _, off := range sp.offs {
											if p.shapeOf(e, req, sp, layers, &r, total, shapeInfo{n: int32(n), ordinal: int32(ordinal), m: int32(m), tp: int32(tp),
												pp: int32(pp), dp: int32(dp), cp: int32(cp), ep: int32(ep), mbs: int32(mbs), part: p.idx, split: splitIdx,
												scheds: schedsIdx, tables: tablesIdx, rc: rcCode(rc), sp: seqPar, etp1: etp == 1, otp: otp, ulysses: uly, fp8: fp8, offAct: off},
												split, scheds, &ordinal) {
												return
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// shapeOf enumerates the shape si (its layout's other fields in r's): it bounds it
// on every placement, keeps it if any of its layouts fits the memory lower bound —
// with activation offload (where the search tries it for what fits no other way,
// space.offRescue) when nothing fits without — and counts its layouts in the
// part's statistics and total. It returns true when the search must stop.
func (p *part) shapeOf(e *step.Estimator, req *Request, sp *space, layers *step.BoundsCache, r *step.Request, total *atomic.Int64,
	si shapeInfo, split []int, scheds []sched, ordinal *int) bool {
	l := step.Layout{TP: int(si.tp), PP: int(si.pp), DP: int(si.dp), CP: int(si.cp), EP: int(si.ep), MicroBatch: int(si.mbs),
		Recompute: recomputeCodes[si.rc], SP: si.sp, Schedule: step.OneFOneB, VirtualStages: 1, LayerSplit: split, ETP: etpOf(si.etp1),
		OverlapTP: si.otp, CPAllToAll: si.ulysses, FP8Params: si.fp8, OffloadActivations: si.offAct}
	runs := len(scheds) // the schedules its layouts run
	if si.offAct {
		if runs = offloadScheds(int(si.pp), scheds); runs == 0 {
			return false // no layout: Megatron-Core offloads under 1F1B and interleaving only
		}
	}
	// One compute bound per shape; schedules and ZeRO stages only change the
	// pipeline factor and the state sharding. On several placements, the lowest
	// of their bounds bounds them all.
	bounds := func(l step.Layout) (step.Bounds, bool) {
		r.Layout = l
		r.Ranks, r.Cluster = p.alts[0].ranks, p.alts[0].cluster
		b, ok := e.LowerBoundsCached(*r, layers)
		for _, al := range p.alts[1:] {
			if !ok {
				break
			}
			var b2 step.Bounds
			r.Ranks, r.Cluster = al.ranks, al.cluster
			if b2, ok = e.LowerBoundsCached(*r, layers); ok {
				b.PerMicroBatch = min(b.PerMicroBatch, b2.PerMicroBatch)
				b.Contention = min(b.Contention, b2.Contention)
				b.DualPipePerMB = min(b.DualPipePerMB, b2.DualPipePerMB)
				b.DualPipeContention = min(b.DualPipeContention, b2.DualPipeContention)
			}
		}
		return b, ok
	}
	s := p.slot()
	var ok bool
	if s.bounds, ok = bounds(l); !ok {
		p.invalid += len(scheds) * len(sp.zeros)
		return false
	}
	si.perMB = s.bounds.PerMicroBatch
	s.shapeInfo = si
	// The layouts that fit are those of the ZeRO stages whose states fit, under
	// every schedule; the deepest interleaving has the smallest bubble and so the
	// best bound (bounds grow with the step time under every objective).
	stages, fits := s.fitStages(req, sp)
	if fits == 0 && !si.offAct && sp.offRescue && s.statesLeaveRoom(req, sp) {
		if n := offloadScheds(int(si.pp), scheds); n > 0 {
			// With the activations in host memory the GPU keeps at least two
			// layers' worth; the time bounds without offload plus a bound of the
			// copies' waits (step.OffloadWaitBound) bound it, without pricing
			// the shape again.
			held := s.bounds.ActivationsGB
			s.bounds.ActivationsGB = min(held, 2*s.bounds.LayerActivationsGB)
			if _, fits = s.fitStages(req, sp); fits > 0 {
				s.offAct, runs = true, n
				w := step.OffloadWaitBound(p.alts[0].cluster, req.Model, s.bounds)
				for _, al := range p.alts[1:] {
					w = min(w, step.OffloadWaitBound(al.cluster, req.Model, s.bounds))
				}
				s.bounds.PerMicroBatch += w
				s.perMB, s.wait = s.bounds.PerMicroBatch, w
			} else {
				s.bounds.ActivationsGB = held
			}
		}
	}
	size := stages * len(scheds)
	*ordinal += size
	p.enumerated += size
	if req.MaxLayouts > 0 && total.Add(int64(size)) > int64(req.MaxLayouts) {
		p.err = fmt.Errorf("%w: more than %d", ErrTooManyLayouts, req.MaxLayouts)
		return true
	}
	fits *= runs
	p.memoryBound += size - fits
	if fits > 0 {
		s.best = s.bestBound(req, p)
		p.kept += fits
		p.add()
	}
	return false
}

// fitStages sets the shape's fits bits — the ZeRO stages it searches whose states
// fit under its bounds — and its zeros bits (the stages it searches), and returns
// how many stages it searches and how many fit.
func (s *shape) fitStages(req *Request, sp *space) (stages, fits int) {
	b := &s.bounds
	s.fits, s.zeros = 0, 0
	for _, zero := range sp.zeros {
		if s.searched(sp, zero) {
			s.zeros |= 1 << zero
			stages++
			if s.statesFit(req, sp, b.Params, b.ReserveGB+b.ActivationsGB, zero) {
				s.fits |= 1 << zero
				fits++
			}
		}
	}
	return stages, fits
}

// statesLeaveRoom tells whether some ZeRO stage the shape searches fits its model
// states and reserve with no activations at all: else activation offload cannot
// make any of its layouts fit.
func (s *shape) statesLeaveRoom(req *Request, sp *space) bool {
	for _, zero := range sp.zeros {
		if s.zeros&(1<<zero) != 0 && s.statesFit(req, sp, s.bounds.Params, s.bounds.ReserveGB, zero) {
			return true
		}
	}
	return false
}

// offloadScheds is how many of the schedules activation offload runs with over pp
// ranks (step.ActivationOffloadSchedule).
func offloadScheds(pp int, scheds []sched) int {
	n := 0
	for _, sc := range scheds {
		if step.ActivationOffloadSchedule(sc.s, pp) {
			n++
		}
	}
	return n
}

// runs tells whether the shape's layouts run schedule sc: with activation offload,
// only those Megatron-Core offloads under.
func (s *shape) runs(sc sched) bool {
	return !s.offAct || step.ActivationOffloadSchedule(sc.s, int(s.pp))
}

// foldsExperts tells whether expert groups of ep ranks, each expert split over etp
// of them (0: tp), fold over a pipeline stage's ranks: ETP × EP must divide them
// (Megatron-Core's expert RankGenerator; step's validation says the same of
// layout.ep).
func foldsExperts(stageRanks, tp, ep, etp int) bool {
	if etp == 0 {
		etp = tp
	}
	return stageRanks%(etp*ep) == 0
}

// overlapsTP are the TP overlap settings a shape with TP and SP tries, off first.
var overlapsTP = [2]bool{false, true}

type sched struct {
	s step.Schedule
	v int
}

// schedules lists the pipeline schedules to try: none without PP; else each
// schedule whose framework runs pp ranks with m micro-batches per replica
// (step.ScheduleRule): 1F1B, GPipe, ZB-H1, DualPipe, ZB-V, and interleaved with every
// depth v ≥ 2 that divides the stage's layers (or, when the layers do not divide
// evenly anyway, every v up to 8).
func schedules(pp, m, layers int, cs *Constraints) []sched {
	if pp == 1 {
		return []sched{{step.OneFOneB, 1}}
	}
	var out []sched
	split := layers%pp != 0 // the search's split over pp is uneven or accounted
	try := func(s step.Schedule, v int, split bool) {
		if r, ok := step.RuleOf(s); ok && allowed(cs.Schedules, s) && r.Allows(pp, v, m, layers, split) {
			out = append(out, sched{s, v})
		}
	}
	try(step.OneFOneB, 1, split)
	try(step.GPipe, 1, split)
	try(step.ZeroBubble, 1, split)
	try(step.DualPipe, 1, split)
	try(step.ZeroBubbleV, 2, false)
	for v := 2; v <= layers/pp; v++ {
		even := layers%pp == 0 && (layers/pp)%v == 0
		counted := !even && !cs.EvenSplit && step.PipelineSplit(layers, pp*v) != nil
		if cs.interleaveOver2 && pp <= 2 {
			break
		}
		if (even || counted || layers%pp != 0 && v <= maxBalancedChunks(cs)) && allowed(cs.VirtualStages, v) {
			try(step.Interleaved, v, !even)
		}
	}
	return out
}

// maxBalancedChunks is the deepest interleaving searched with a cost-balanced split
// (step.BalancedSplit) on layers the pipeline does not divide: 8 chunks per rank
// with uneven_pp, none otherwise (a plain pipeline of any depth takes one without
// it; interleaving them all multiplies DeepSeek-V3's layouts on 2048 GPUs past a
// million).
func maxBalancedChunks(cs *Constraints) int {
	if cs.UnevenPP {
		return 8
	}
	return 1
}

// Micro-batch classes: the schedules' rules depend on the micro-batches per replica
// m only through whether m is a multiple of pp, even, and at least 2 × pp.
const numSchedClasses = 8

func schedClass(pp, m int) int {
	c := 0
	if m%pp == 0 {
		c |= 1
	}
	if m%2 == 0 {
		c |= 2
	}
	if m >= 2*pp {
		c |= 4
	}
	return c
}

// bestSchedules are the schedules of a list that can give a shape's best bound:
// the zero-bubble ones, and of the others — whose bound (M + (P−1)/v) × the
// micro-batch's time falls as v grows, for any time ≥ 0 — the first with the most
// virtual stages.
func bestSchedules(list []sched) []sched {
	var out []sched
	plain := -1
	for i, sc := range list {
		if step.SplitsWeightGrad(sc.s) {
			out = append(out, sc) // as schedBound tells them apart
		} else if plain < 0 || sc.v > list[plain].v {
			plain = i
		}
	}
	if plain >= 0 {
		out = append(out, list[plain])
	}
	return out
}

func identity(ranks []int) bool {
	for i, g := range ranks {
		if g != i {
			return false
		}
	}
	return true
}

func rcCode(r step.Recompute) uint8 {
	for i, x := range recomputeCodes {
		if x == r {
			return uint8(i)
		}
	}
	return 0
}

func schedCode(s step.Schedule) uint8 {
	for i, x := range scheduleCodes {
		if x == s {
			return uint8(i)
		}
	}
	return 0
}
