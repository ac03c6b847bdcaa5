package picture

import (
	"errors"
	"fmt"
	"math"

	"github.com/stepcost/stepcost/estimator/step"
)

// Pass is what a block of the schedule computes.
type Pass uint8

const (
	Forward Pass = iota
	// Backward is the whole backward pass, or, under the zero-bubble schedules, only
	// its activation-gradient part (Qi et al.'s B).
	Backward
	// WeightGrad is the weight-gradient GEMMs the zero-bubble schedules run apart
	// from the backward pass (Qi et al.'s W).
	WeightGrad
	numPasses
)

func (p Pass) String() string { return [...]string{"forward", "backward", "weight gradient"}[p] }

// Block is one pass of one micro-batch through one model chunk on one pipeline
// stage.
type Block struct {
	Stage      int // pipeline rank, 0 first
	MicroBatch int // 0-based
	// Chunk is the model chunk in model order (0 … chunks−1): the stage's virtual
	// stage under interleaving, the V's leg under ZB-V; under DualPipe the micro-batch's
	// stage, Direction telling which way it flows.
	Chunk      int
	Direction  int // DualPipe: 0 from the first stage, 1 from the last; else 0
	Pass       Pass
	Start, End float64 // seconds from the start of the pipeline
	// Comm is the exposed communication at the end of the block (TP, CP and EP of
	// the micro-batch and the pipeline send), part of End − Start.
	Comm float64
}

// Timeline is a simulated pipeline schedule.
type Timeline struct {
	Schedule step.Schedule
	Stages   int
	Chunks   int // model chunks per stage (v)
	// MicroBatches is the step's count; Simulated of them are in Blocks. When the
	// step has more than MaxSimulated allows, the rest run in the steady state and
	// add SteadyPerMicroBatch each: Makespan counts them.
	MicroBatches, Simulated int
	Blocks                  []Block
	SimulatedSpan           float64 // end of the last simulated block
	SteadyPerMicroBatch     float64
	Makespan                float64 // the whole pipeline, every micro-batch
}

// MaxBlocks bounds the blocks a timeline simulates (and a picture draws); a step
// with more micro-batches is simulated over the first ones and extrapolated.
const MaxBlocks = 6000

// errStuck is a schedule whose blocks wait on each other (a bug in a block order).
var errStuck = errors.New("picture: the pipeline schedule deadlocked")

// durations of one chunk's blocks on a stage, seconds.
type durations struct {
	compute [numPasses]float64
	comm    [numPasses]float64
}

func (d durations) of(p Pass) float64 { return d.compute[p] + d.comm[p] }

// Simulate lays out the pipeline schedule of an estimate: which block each stage
// runs when. Block lengths are the estimate's own per-micro-batch times
// (step.Result.PerMicroBatch) split evenly over the stage's model chunks; each
// forward and backward block ends with its share of the micro-batch's exposed TP,
// CP and EP communication (split in proportion to the compute of the two passes)
// and one pipeline send, so that the pipeline sends the estimate counts, 2·(v·M +
// P − 1), are the ones on the critical path. The block order is each schedule's
// published one:
//
//   - gpipe: every forward, then every backward (Huang et al. 2019);
//   - 1f1b: P − s − 1 warm-up forwards on stage s, then one forward and one
//     backward alternately, then the remaining backwards (PipeDream-Flush,
//     Narayanan et al. 2021 §2.2.1);
//   - interleaved: the same over v model chunks per stage, micro-batches taken in
//     groups of P through chunk 0, then chunk 1, …; (P − s − 1)·2 + (v − 1)·P
//     warm-up forwards (Narayanan et al. 2021 §2.2.2, Megatron-LM's order);
//   - zb-h1: the backward split into B (activation gradients) and W (weight
//     gradients); 1F1B's order of forwards and B's, each B followed by a W except
//     that stage s holds back its first s W's into the drain (Qi et al. 2023 §3.1);
//   - zb-v, dualpipe: B and W split the same way, run by list scheduling: a free
//     stage starts a ready B first, then a ready forward (the deeper chunk first),
//     and W only when nothing else is ready, so that W fills what would be bubble
//     (Qi et al. 2023 §3); a stage starts a new micro-batch only while it holds
//     fewer in flight than the schedule's memory allows (ZB-V: P micro-batches of
//     its two half-size chunks, Qi et al. §6; DualPipe: P + 1, DeepSeek-V3 report
//     Table 2). ZB-V places chunk k on stage k and chunk 2P−1−k back up the V;
//     DualPipe sends half the micro-batches from each end of the pipeline, stage s
//     holding stages s and P−1−s (DeepSeek-V3 report §3.2.1). These are not the
//     papers' hand-made block tables, so the drawn makespan differs from the
//     closed-form bubble the estimate uses: by a few per cent with many
//     micro-batches, up to about 15 % with as few micro-batches as stages, where
//     list scheduling leaves part of the V's fill and drain empty (TestMakespan). A
//     forward and a backward of two micro-batches run one after the other here,
//     where DualPipe overlaps them; the estimate prices that overlap as the
//     expert-parallel all-to-alls it hides, already out of the blocks.
//
// GPipe, 1F1B, interleaved 1F1B and ZB-H1 reproduce the estimate's pipeline time
// exactly.
//
// Every stage is drawn at the slowest stage's pace, as the estimate prices it;
// under the slow-GPU what-if the first stage computes at the slow GPU's speed.
func Simulate(r step.Result) (Timeline, error) {
	l := r.Layout
	tl := Timeline{Schedule: l.Schedule, Stages: max(1, l.PP), Chunks: max(1, l.VirtualStages), MicroBatches: r.MicroBatches}
	if l.PP <= 1 {
		tl.Schedule = step.OneFOneB // one stage: every schedule is forward, backward, …
	}
	if tl.MicroBatches < 1 {
		return tl, errors.New("picture: the estimate has no micro-batches")
	}
	if tl.Stages > MaxBlocks/2 {
		return tl, fmt.Errorf("picture: %d pipeline stages are more than a picture can draw", tl.Stages)
	}
	zb := tl.Schedule == step.ZeroBubble || tl.Schedule == step.ZeroBubbleV || tl.Schedule == step.DualPipe
	passes := 2
	if zb {
		passes = 3
	}
	// Model chunks per stage: the interleaving depth, the V's two legs, else one.
	p, v := tl.Stages, 1
	switch tl.Schedule {
	case step.Interleaved:
		v = tl.Chunks
	case step.ZeroBubbleV:
		v = 2
	}
	tl.Chunks = v
	perMB := passes * p * v // blocks of one micro-batch
	// Simulate enough micro-batches to reach the steady state (at least one per stage,
	// a multiple of P for interleaving), within MaxBlocks.
	sim := min(tl.MicroBatches, max(MaxBlocks/perMB, p, 1))
	if tl.Schedule == step.Interleaved && sim < tl.MicroBatches {
		sim = max(p, sim/p*p)
	}
	if tl.Schedule == step.DualPipe && sim < tl.MicroBatches {
		sim = max(2, sim/2*2)
	}
	tl.Simulated = sim

	d := chunkDurations(r, v, zb)
	slow := d
	if s := r.PerMicroBatch.SlowGPUSpeed; s > 0 && s < 1 {
		for i := range slow.compute {
			slow.compute[i] /= s
		}
	}
	dur := func(stage int) durations {
		if stage == 0 {
			return slow
		}
		return d
	}

	var err error
	switch tl.Schedule {
	case step.ZeroBubbleV, step.DualPipe:
		tl.Blocks, err = greedy(tl.Schedule, p, v, sim, dur)
	default:
		tl.Blocks, err = inOrder(tl.Schedule, p, v, sim, dur)
	}
	if err != nil {
		return tl, err
	}
	for _, b := range tl.Blocks {
		tl.SimulatedSpan = max(tl.SimulatedSpan, b.End)
	}
	// Past the simulated micro-batches every stage is busy: the pipeline grows by
	// the busiest stage's work per micro-batch.
	for s := range p {
		ds := dur(s)
		busy := 0.0
		for q := range Pass(passes) {
			busy += ds.of(q)
		}
		tl.SteadyPerMicroBatch = max(tl.SteadyPerMicroBatch, busy*float64(v))
	}
	tl.Makespan = tl.SimulatedSpan + float64(tl.MicroBatches-sim)*tl.SteadyPerMicroBatch
	return tl, nil
}

// chunkDurations splits the estimate's per-micro-batch times over v chunks.
func chunkDurations(r step.Result, v int, zb bool) durations {
	m := r.PerMicroBatch
	fwd, bwd, rc, w := finite(m.Forward), finite(m.Backward), finite(m.Recompute), finite(m.WeightGrad)
	comm, send := finite(m.ExposedComm), finite(m.Send)
	// The micro-batch's exposed TP/CP/EP communication follows its compute: the
	// estimate does not say which pass runs which call, and each pass runs its
	// collectives in proportion to its GEMMs.
	fShare := 0.5
	if tot := fwd + bwd + rc; tot > 0 {
		fShare = fwd / tot
	}
	vf := float64(v)
	var d durations
	d.compute[Forward] = fwd / vf
	d.comm[Forward] = comm*fShare/vf + send
	d.compute[Backward] = (bwd + rc) / vf
	d.comm[Backward] = comm*(1-fShare)/vf + send
	if zb {
		w = min(w, bwd)
		d.compute[Backward] = (bwd - w + rc) / vf
		d.compute[WeightGrad] = w / vf
	}
	return d
}

// ops indexes a timeline's blocks by (direction, micro-batch, chunk, pass).
type ops struct {
	chunks, mbs int
	end         []float64 // NaN until scheduled
}

func newOps(mbs, chunks int) *ops {
	o := &ops{chunks: chunks, mbs: mbs, end: make([]float64, 2*mbs*chunks*int(numPasses))}
	for i := range o.end {
		o.end[i] = math.NaN()
	}
	return o
}

func (o *ops) idx(dir, mb, chunk int, p Pass) int {
	return ((dir*o.mbs+mb)*o.chunks+chunk)*int(numPasses) + int(p)
}

func (o *ops) done(dir, mb, chunk int, p Pass) (float64, bool) {
	e := o.end[o.idx(dir, mb, chunk, p)]
	return e, !math.IsNaN(e)
}

// ready says when block (dir, mb, chunk, p) may start as far as the other blocks
// go: a forward after the previous chunk's forward, the last chunk's backward after
// its forward, another backward after the next chunk's backward, W after its B.
func (o *ops) ready(dir, mb, chunk int, p Pass) (float64, bool) {
	switch {
	case p == Forward && chunk == 0:
		return 0, true
	case p == Forward:
		return o.done(dir, mb, chunk-1, Forward)
	case p == Backward && chunk == o.chunks-1:
		return o.done(dir, mb, chunk, Forward)
	case p == Backward:
		return o.done(dir, mb, chunk+1, Backward)
	}
	return o.done(dir, mb, chunk, Backward)
}

// stageOf is the pipeline rank that runs model chunk k (of p·v, or p per DualPipe
// direction).
func stageOf(s step.Schedule, p, k, dir int) int {
	switch s {
	case step.ZeroBubbleV:
		if k < p {
			return k
		}
		return 2*p - 1 - k
	case step.DualPipe:
		if dir == 1 {
			return p - 1 - k
		}
		return k
	}
	return k % p
}

type op struct {
	dir, mb, chunk int
	pass           Pass
}

// inOrder runs the fixed per-stage orders of GPipe, 1F1B and interleaved 1F1B:
// each block starts as soon as its stage is free and its inputs have arrived.
func inOrder(s step.Schedule, p, v, m int, dur func(int) durations) ([]Block, error) {
	chunks := p * v
	order := make([][]op, p)
	for st := range p {
		order[st] = stageOrder(s, p, v, m, st)
	}
	remaining := 0
	for _, x := range order {
		remaining += len(x)
	}
	o := newOps(m, chunks)
	free := make([]float64, p)
	next := make([]int, p)
	blocks := make([]Block, 0, remaining)
	for remaining > 0 {
		progressed := false
		for st := range p {
			for next[st] < len(order[st]) {
				x := order[st][next[st]]
				at, ok := o.ready(x.dir, x.mb, x.chunk, x.pass)
				if !ok {
					break
				}
				d := dur(st)
				start := max(free[st], at)
				end := start + d.of(x.pass)
				o.end[o.idx(x.dir, x.mb, x.chunk, x.pass)] = end
				blocks = append(blocks, Block{Stage: st, MicroBatch: x.mb, Chunk: x.chunk, Pass: x.pass, Start: start, End: end, Comm: d.comm[x.pass]})
				free[st] = end
				next[st]++
				remaining--
				progressed = true
			}
		}
		if !progressed {
			return nil, errStuck
		}
	}
	return blocks, nil
}

// stageOrder is the order in which stage st runs its blocks (chunks in model
// order: chunk c·p + st is the stage's virtual stage c).
func stageOrder(s step.Schedule, p, v, m, st int) []op {
	if s == step.GPipe {
		out := make([]op, 0, 2*m)
		for mb := range m {
			out = append(out, op{0, mb, st, Forward})
		}
		for mb := range m {
			out = append(out, op{0, mb, st, Backward})
		}
		return out
	}
	if s == step.ZeroBubble {
		return zbh1Order(p, m, st)
	}
	// The k-th forward (and k-th backward) of the stage over its v chunks:
	// micro-batches in groups of p, each group through chunk 0, then chunk 1, …;
	// backwards through the chunks in reverse. With v = 1 this is 1F1B's order.
	total := m * v
	fwdOp := func(k int) op {
		group, inGroup := k/(p*v), k%(p*v)
		c, mb := inGroup/p, group*p+inGroup%p
		if group*p+p > m { // a last, smaller group (not under interleaving)
			size := m - group*p
			c, mb = inGroup/size, group*p+inGroup%size
		}
		return op{0, mb, c*p + st, Forward}
	}
	bwdOp := func(k int) op {
		x := fwdOp(k)
		c := x.chunk / p
		return op{0, x.mb, (v-1-c)*p + st, Backward}
	}
	warm := p - st - 1
	if v > 1 {
		warm = (p-st-1)*2 + (v-1)*p
	}
	warm = min(warm, total)
	out := make([]op, 0, 2*total)
	for k := range warm {
		out = append(out, fwdOp(k))
	}
	for k := range total - warm {
		out = append(out, fwdOp(warm+k), bwdOp(k))
	}
	for k := total - warm; k < total; k++ {
		out = append(out, bwdOp(k))
	}
	return out
}

// zbh1Order is ZB-H1's order on stage st (Qi et al. 2023 §3.1, Figure 3): 1F1B's
// warm-up and its forward/B pairs, each followed by a W — except that stage st
// holds back its first st W's, which run after its last B, in the drain that is
// 1F1B's bubble. Every stage then keeps at most P micro-batches' activations, the
// first stage's 1F1B peak.
func zbh1Order(p, m, st int) []op {
	warm := min(p-st-1, m)
	out := make([]op, 0, 3*m)
	nextW := 0
	w := func(upTo int) { // the W's of micro-batches below upTo
		for ; nextW < upTo; nextW++ {
			out = append(out, op{0, nextW, st, WeightGrad})
		}
	}
	for mb := range warm {
		out = append(out, op{0, mb, st, Forward})
	}
	for j := range m - warm {
		out = append(out, op{0, warm + j, st, Forward}, op{0, j, st, Backward})
		w(j - st + 1)
	}
	for j := m - warm; j < m; j++ {
		out = append(out, op{0, j, st, Backward})
		w(j - st + 1)
	}
	w(m)
	return out
}

// greedy runs ZB-V and DualPipe as list scheduling: whenever a stage is
// free it starts, in this order of preference, a ready B (the earliest ready, then
// the lowest micro-batch), a ready forward of a micro-batch already in the
// pipeline (the deepest chunk first), a new micro-batch if the stage's memory
// allows it, or a pending W; otherwise it waits for the next block to end.
func greedy(s step.Schedule, p, v, m int, dur func(int) durations) ([]Block, error) {
	chunks := p * v
	dirs := 1
	if s == step.DualPipe {
		chunks, dirs = p, 2
	}
	// Micro-batches per direction: DualPipe sends the first half from stage 0 and
	// the rest from the last stage.
	first := m
	if dirs == 2 {
		first = (m + 1) / 2
	}
	dirOf := func(mb int) int {
		if mb < first {
			return 0
		}
		return 1
	}
	capacity := func(st int) int {
		switch s {
		case step.ZeroBubbleV:
			return 2 * p // P micro-batches of half-size chunks, on every stage
		}
		return p + 1
	}
	// Every block a stage runs, with its stage-local bookkeeping.
	type pending struct {
		op
		stage int
	}
	perStage := make([][]pending, p)
	for mb := range m {
		dir := dirOf(mb)
		for k := range chunks {
			st := stageOf(s, p, k, dir)
			for q := range numPasses {
				perStage[st] = append(perStage[st], pending{op{dir, mb, k, q}, st})
			}
		}
	}
	o := newOps(m, chunks)
	idx := func(x op) int { return o.idx(x.dir, x.mb, x.chunk, x.pass) }
	free := make([]float64, p)
	inFlight := make([]int, p) // micro-batch chunks started and not yet through W
	scheduled := make([]bool, len(o.end))
	var ends []float64 // end times of scheduled blocks, to wait for
	blocks := make([]Block, 0, 3*m*chunks)
	// A stage with nothing to start is marked waiting; once every stage at the
	// earliest time waits, they move on to the next time anything can change: a
	// block ending, or another stage reaching its next decision.
	waiting := make([]bool, p)
	total := 3 * m * chunks
	for len(blocks) < total {
		// The stage that is free first decides next (not waiting before waiting,
		// then the lowest).
		st := 0
		for i := 1; i < p; i++ {
			if free[i] < free[st] || free[i] == free[st] && waiting[st] && !waiting[i] {
				st = i
			}
		}
		t := free[st]
		if waiting[st] {
			next := math.Inf(1)
			for _, e := range ends {
				if e > t {
					next = min(next, e)
				}
			}
			for _, f := range free {
				if f > t {
					next = min(next, f)
				}
			}
			if math.IsInf(next, 1) {
				return nil, errStuck
			}
			for i := range free {
				if free[i] == t {
					free[i], waiting[i] = next, false
				}
			}
			continue
		}
		best, bestRank := -1, [4]float64{}
		for i, x := range perStage[st] {
			if scheduled[idx(x.op)] {
				continue
			}
			at, ok := o.ready(x.dir, x.mb, x.chunk, x.pass)
			if !ok || at > t {
				continue
			}
			var class float64
			switch {
			case x.pass == Backward:
				class = 0
			case x.pass == Forward && x.chunk == 0 && inFlight[st] >= capacity(st):
				continue
			case x.pass == Forward && x.chunk > 0:
				class = 1
			case x.pass == Forward:
				class = 2
			default:
				class = 3
			}
			// Lower is better: class, then the earliest ready, the deepest chunk
			// (forwards), the lowest micro-batch.
			rank := [4]float64{class, at, -float64(x.chunk), float64(x.mb)}
			if x.pass != Forward {
				rank[2] = 0
			}
			if best < 0 || less(rank, bestRank) {
				best, bestRank = i, rank
			}
		}
		if best < 0 {
			waiting[st] = true
			continue
		}
		x := perStage[st][best]
		d := dur(st)
		end := t + d.of(x.pass)
		o.end[idx(x.op)] = end
		scheduled[idx(x.op)] = true
		switch x.pass {
		case Forward:
			inFlight[st]++
		case WeightGrad:
			inFlight[st]--
		}
		blocks = append(blocks, Block{Stage: st, MicroBatch: x.mb, Chunk: x.chunk, Direction: x.dir, Pass: x.pass, Start: t, End: end, Comm: d.comm[x.pass]})
		ends = append(ends, end)
		free[st] = end
		// A block that ends at once (zero length) can make others ready now.
		clear(waiting)
		// Drop what is scheduled from the front of the stage's list, so the scans
		// stay short.
		for len(perStage[st]) > 0 && scheduled[idx(perStage[st][0].op)] {
			perStage[st] = perStage[st][1:]
		}
	}
	return blocks, nil
}

func less(a, b [4]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
