package planner

import (
	"context"
	"fmt"

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

func allowed(list []int, v int) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func divisors(n int) []int {
	var out []int
	for d := 1; d <= n; d++ {
		if n%d == 0 {
			out = append(out, d)
		}
	}
	return out
}

// enumerate builds every candidate that passes the cheap checks — divisibility,
// placement on the free GPUs, the memory lower bound — with its lower-bound score.
func enumerate(ctx context.Context, e *step.Estimator, req *Request, st *Stats) ([]candidate, error) {
	a, t, cs := req.Model, req.Training, &req.Constraints
	a = a.Normalise()
	req.Model = a
	g := req.Cluster.Spec.GPUsPerNode
	capGB := req.Cluster.GPU().MemoryGB - cs.MinHeadroomGB
	maxMBS := cs.MaxMicroBatch
	if maxMBS == 0 {
		maxMBS = 16
	}
	recomputes := cs.Recompute
	if len(recomputes) == 0 {
		recomputes = []step.Recompute{step.RecomputeNone, step.RecomputeSelective, step.RecomputeFull}
	}
	zeros := cs.ZeRO
	if len(zeros) == 0 {
		zeros = []int{0, 1, 2, 3}
	}
	eps := []int{1}
	if a.MoE != nil {
		eps = divisors(a.MoE.Experts)
	}
	var out []candidate
	ordinal := 0
	for _, n := range gpuCounts(req) {
		st.GPUCounts = append(st.GPUCounts, n)
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
			pl := place(req.Cluster, req.Free, n, tp)
			if pl == nil {
				st.Pruned[PrunedPlacement]++
				continue
			}
			// Ranks on the first GPUs in order need no map: their communication groups
			// are cached by layout alone, across searches.
			var rm *step.RankMap
			if !identity(pl.Ranks) {
				var err error
				if rm, err = step.NewRankMap(req.Cluster, pl.Ranks); err != nil {
					return nil, err
				}
			}
			for _, cp := range divisors(n / tp) {
				if !allowed(cs.CP, cp) || t.SeqLen%cp != 0 {
					continue
				}
				for _, pp := range divisors(n / (tp * cp)) {
					if !allowed(cs.PP, pp) || pp > a.Layers {
						continue
					}
					var split []int
					uneven := a.Layers%pp != 0
					if uneven {
						if !cs.UnevenPP {
							st.Pruned[PrunedDivisibility]++
							continue
						}
						split = evenSplit(a.Layers, pp)
					}
					dp := n / (tp * cp * pp)
					if t.GlobalBatch%dp != 0 {
						st.Pruned[PrunedDivisibility]++
						continue
					}
					perReplica := t.GlobalBatch / dp
					for _, ep := range eps {
						if !allowed(cs.EP, ep) || dp%ep != 0 {
							continue
						}
						for _, mbs := range divisors(perReplica) {
							if mbs > maxMBS && len(cs.MicroBatch) == 0 || !allowed(cs.MicroBatch, mbs) {
								continue
							}
							m := perReplica / mbs
							scheds := schedules(pp, m, a.Layers, cs)
							for _, rc := range recomputes {
								for _, sp := range []bool{false, true} {
									if sp && tp == 1 || !allowedBool(cs.SP, sp) {
										continue
									}
									if sp && (t.SeqLen/cp)%tp != 0 {
										continue
									}
									// One compute bound per shape; schedules and ZeRO stages
									// only change the pipeline factor and the state sharding.
									base := step.Layout{TP: tp, PP: pp, DP: dp, CP: cp, EP: ep, MicroBatch: mbs,
										Recompute: rc, SP: sp, Schedule: step.OneFOneB, VirtualStages: 1, LayerSplit: split}
									b, ok := e.LowerBounds(step.Request{Model: a, Training: t, Cluster: req.Cluster, Layout: base, Ranks: rm})
									if !ok {
										st.Pruned[PrunedInvalid] += len(scheds) * len(zeros)
										continue
									}
									for _, zero := range zeros {
										if zero > 0 && dp*cp == 1 {
											continue // nothing to shard
										}
										w, gr, s := step.ModelStateBytes(b.Params, t.Optimizer, zero, dp*cp)
										memLB := (w+gr+s)/1e9 + b.ReserveGB
										for _, sc := range scheds {
											ordinal++
											st.Enumerated++
											if req.MaxLayouts > 0 && st.Enumerated > req.MaxLayouts {
												return nil, fmt.Errorf("%w: more than %d", ErrTooManyLayouts, req.MaxLayouts)
											}
											if memLB > capGB {
												st.Pruned[PrunedMemoryBound]++
												continue
											}
											ls := split
											if sc.v > 1 && a.Layers%(pp*sc.v) != 0 {
												ls = evenSplit(a.Layers, pp*sc.v)
											}
											stepLB := (float64(m) + float64(pp-1)/float64(sc.v)) * b.PerMicroBatch
											out = append(out, candidate{bound: boundScore(req, n, stepLB), ranks: rm, place: pl, split: ls,
												n: int32(n), ordinal: int32(ordinal), tp: int32(tp), pp: int32(pp), dp: int32(dp), cp: int32(cp),
												ep: int32(ep), mbs: int32(mbs), v: int16(sc.v), zero: int8(zero), rc: rcCode(rc), sched: schedCode(sc.s), sp: sp})
										}
									}
								}
							}
						}
					}
				}
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

type sched struct {
	s step.Schedule
	v int
}

// schedules lists the pipeline schedules to try: none without PP; else 1F1B,
// GPipe, and interleaved with every depth v ≥ 2 that divides the stage's layers (or,
// when the layers do not divide evenly anyway, every v up to 8), when the
// micro-batches are a multiple of PP.
func schedules(pp, m, layers int, cs *Constraints) []sched {
	if pp == 1 {
		return []sched{{step.OneFOneB, 1}}
	}
	var out []sched
	ok := func(s step.Schedule) bool {
		if len(cs.Schedules) == 0 {
			return true
		}
		for _, x := range cs.Schedules {
			if x == s {
				return true
			}
		}
		return false
	}
	if ok(step.OneFOneB) {
		out = append(out, sched{step.OneFOneB, 1})
	}
	if ok(step.GPipe) {
		out = append(out, sched{step.GPipe, 1})
	}
	if ok(step.Interleaved) && m%pp == 0 {
		for v := 2; v <= layers/pp; v++ {
			even := layers%pp == 0 && (layers/pp)%v == 0
			if (even || layers%pp != 0 && cs.UnevenPP && v <= 8) && allowed(cs.VirtualStages, v) {
				out = append(out, sched{step.Interleaved, v})
			}
		}
	}
	return out
}

func allowedBool(list []bool, v bool) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// evenSplit spreads layers over stages, earlier stages one more.
func evenSplit(layers, stages int) []int {
	out := make([]int, stages)
	for i := range out {
		out[i] = layers / stages
		if i < layers%stages {
			out[i]++
		}
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
