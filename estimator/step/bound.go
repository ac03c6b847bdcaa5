package step

import "github.com/stepcost/stepcost/estimator/collective"

// Bounds are cheap lower bounds on a layout's step time and memory, for pruning a
// search before the full estimate: a layout whose bound is already worse than the
// plans in hand cannot beat them.
type Bounds struct {
	// StepTime ≤ the estimate's step time: the compute of the slowest pipeline
	// stage for every micro-batch plus the pipeline's fill and drain, without any
	// communication.
	StepTime float64
	// StatesGB ≤ the estimate's memory: the GPU's share of weights, gradients and
	// optimizer states, plus the runtime reserve.
	StatesGB float64
	// The parts, so that a search can vary the schedule and ZeRO stage without
	// recomputing: StepTime = (M + (P−1)/v) × PerMicroBatch, StatesGB =
	// states(Params, ZeRO) + ReserveGB.
	PerMicroBatch float64
	Params        float64 // parameters held per GPU before ZeRO sharding
	ReserveGB     float64
}

// LowerBounds computes Bounds without placing any communication. The request must be
// valid (Estimate validates; LowerBounds only guards against division by zero).
func (e *Estimator) LowerBounds(req Request) (Bounds, bool) {
	req = normalise(req)
	a, t, l, cl := req.Model, req.Training, req.Layout, req.Cluster
	if cl == nil || l.TP < 1 || l.PP < 1 || l.DP < 1 || l.CP < 1 || l.MicroBatch < 1 || t.SeqLen < 1 {
		return Bounds{}, false
	}
	r, ok := e.k.rates(cl.GPU(), t.Precision)
	if !ok {
		return Bounds{}, false
	}
	// The step's compute: every micro-batch through the slowest stage, the pipeline's
	// fill and drain; the estimate adds communication and the optimizer on top.
	m := float64(t.GlobalBatch / max(1, l.DP*l.MicroBatch))
	sLocal := float64(t.SeqLen) / float64(l.CP)
	cp := e.compute(req, &r, float64(l.MicroBatch)*sLocal, sLocal, float64(t.SeqLen))
	perMB := cp.fwd + cp.bwd + cp.rc
	if l.TP > 1 && !l.OverlapTP {
		// TP communication is on the critical path of every micro-batch; its
		// groups are few and cached, so pricing it here is cheap and tightens the
		// bound a lot for TP layouts.
		tp, err := e.tpCommPerMB(req, float64(l.MicroBatch)*sLocal, float64(cp.stageLayers))
		if err != nil {
			return Bounds{}, false
		}
		perMB += tp
	}
	stepLB := (m + float64(l.PP-1)/float64(max(1, l.VirtualStages))) * perMB
	p := a.Params()
	experts := float64(p.MoELayers) * a.ExpertParamsPerLayer()
	params := (p.Total-experts)/float64(l.TP*l.PP) + experts/float64(l.TP*l.PP*max(1, l.EP))
	w, g, s := ModelStateBytes(params, t.Optimizer, l.ZeRO, l.DP*l.CP)
	reserve := e.k.RuntimeReserveGB + e.k.Fragmentation*cl.GPU().MemoryGB
	return Bounds{
		StepTime:      stepLB,
		StatesGB:      (w+g+s)/1e9 + reserve,
		PerMicroBatch: perMB,
		Params:        params,
		ReserveGB:     reserve,
	}, true
}

// tpCommPerMB is the TP communication of the slowest stage for one micro-batch, as
// Estimate prices it: per layer 2 all-reduces forward and 2 backward (+2 with full
// recomputation), each an all-gather and a reduce-scatter with sequence parallelism.
func (e *Estimator) tpCommPerMB(req Request, tokens, layers float64) (float64, error) {
	l := req.Layout
	g, err := newGrid(l)
	if err != nil {
		return 0, err
	}
	p, err := e.placement(req.Cluster, req.Ranks, g, CommTP)
	if err != nil {
		return 0, err
	}
	act := tokens * float64(req.Model.Hidden) * 2
	n := 4 + l.tpRepeats(int(layers))
	if l.SP {
		ag, err := e.collCost(p, collective.AllGather, act)
		if err != nil {
			return 0, err
		}
		rs, err := e.collCost(p, collective.ReduceScatter, act)
		if err != nil {
			return 0, err
		}
		return (ag.TimeUs + rs.TimeUs) * 1e-6 * n * layers, nil
	}
	ar, err := e.collCost(p, collective.AllReduce, act)
	if err != nil {
		return 0, err
	}
	return ar.TimeUs * 1e-6 * n * layers, nil
}
