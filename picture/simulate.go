package picture

import (
	"errors"
	"fmt"

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

// durations of one chunk's blocks on a stage, seconds.
type durations struct {
	compute [numPasses]float64
	comm    [numPasses]float64
	// send and sendB are the pipeline sends that run under the next block after
	// a forward and after a backward (step.MicroBatch.SendOverlapped), 0 where
	// comm holds them.
	send, sendB float64
}

func (d durations) of(p Pass) float64 { return d.compute[p] + d.comm[p] }

// ErrTooManyStages is a schedule of more pipeline stages than a picture draws.
var ErrTooManyStages = errors.New("picture: more pipeline stages than a picture can draw")

// Simulate lays out the pipeline schedule of an estimate: which block each stage
// runs when. It executes the schedule's block table as the estimate does
// (step.PipelineOrders, step.ExecutePipeline): the block lengths are the
// estimate's own per-micro-batch times (step.Result.PerMicroBatch) split over the
// stage's model chunks; each forward and backward block ends with its share of
// the micro-batch's exposed TP, CP and EP communication (split in proportion to the
// compute of the two passes) and one pipeline send. Past the first
// step.SimulatedMicroBatches micro-batches the pipeline is in its steady state and
// each further one adds the busiest stage's work.
//
// Every stage is drawn at the slowest stage's pace, as the estimate prices it;
// under the slow-GPU what-if the first stage computes at the slow GPU's speed
// (where the estimate prices the fill and drain at the other stages' speed).
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
		return tl, fmt.Errorf("%w: %d, at most %d", ErrTooManyStages, tl.Stages, MaxBlocks/2)
	}
	zb := step.SplitsWeightGrad(tl.Schedule)
	passes := 2
	if zb {
		passes = 3
	}
	_, v := step.MicroBatchBlocks(step.Result{Layout: step.Layout{Schedule: tl.Schedule, VirtualStages: tl.Chunks}})
	tl.Chunks = v
	p := tl.Stages

	d := chunkDurations(r, v, zb)
	slow := d
	if s := r.PerMicroBatch.SlowGPUSpeed; s > 0 && s < 1 {
		for i := range slow.compute {
			slow.compute[i] /= s
		}
	}
	dur := func(stage int) durations {
		ds := d
		if stage == 0 {
			ds = slow
		}
		if r.PerMicroBatch.HopSends != nil {
			// The stage's sends on its own hops (step.RankSends): in flight, or
			// in its blocks in place of the one send chunkDurations put there.
			f, b := step.RankSends(r, stage)
			if r.PerMicroBatch.SendOverlapped {
				ds.send, ds.sendB = f, b
			} else {
				ds.comm[Forward] += finite(f) - finite(r.PerMicroBatch.Send)
				ds.comm[Backward] += finite(b) - finite(r.PerMicroBatch.Send)
			}
		}
		return ds
	}
	times := make([]step.BlockTimes, p)
	for st := range p {
		ds := dur(st)
		times[st] = step.BlockTimes{F: ds.of(Forward), B: ds.of(Backward), W: ds.of(WeightGrad), S: ds.send, SB: ds.sendB}
	}
	var blocks []step.PipelineBlock
	span, sim, err := step.ExecutePipeline(tl.Schedule, p, v, tl.MicroBatches, times, &blocks)
	if err != nil {
		return tl, err
	}
	tl.Simulated = sim
	tl.Blocks = make([]Block, 0, len(blocks))
	for _, b := range blocks {
		pass := Pass(b.Op.Pass)
		mb := int(b.Op.MB)
		if b.Op.Dir == 1 {
			mb += sim / 2 // DualPipe: the second half of the micro-batches
		}
		comm := dur(b.Rank).comm[pass]
		tl.Blocks = append(tl.Blocks, Block{Stage: b.Rank, MicroBatch: mb, Chunk: int(b.Op.Chunk), Direction: int(b.Op.Dir),
			Pass: pass, Start: b.Start, End: b.End, Comm: comm})
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
	tl.Makespan = span
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
	if m.SendOverlapped {
		d.send, d.sendB, send = send, send, 0
	}
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
