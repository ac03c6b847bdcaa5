package planner

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/stepcost/stepcost/estimator/step"
)

// candidate is one layout of the search space with its lower-bound score.
type candidate struct {
	n       int
	layout  step.Layout
	ranks   *step.RankMap
	place   *Placement
	bound   float64 // lower bound of the objective
	ordinal int     // enumeration order: the deterministic tie-break
}

// Search enumerates, prunes, evaluates and ranks. The same request always gives the
// same answer: candidates are evaluated best-bound first in fixed batches, and ties
// are broken by enumeration order.
func Search(ctx context.Context, e *step.Estimator, req Request) (Result, error) {
	start := time.Now()
	if err := req.validate(); err != nil {
		return Result{}, err
	}
	if req.Objective == "" {
		req.Objective = FastestStep
	}
	if req.TopK == 0 {
		req.TopK = 10
	}
	workers := req.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	stats := Stats{Pruned: map[string]int{}}
	cands, err := enumerate(ctx, e, &req, &stats)
	if err != nil {
		return Result{}, err
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		switch {
		case a.bound < b.bound:
			return -1
		case a.bound > b.bound:
			return 1
		}
		return a.ordinal - b.ordinal
	})

	type evaluated struct {
		c     *candidate
		res   step.Result
		score float64
		ok    bool
		err   error
	}
	var top, all []evaluated
	kth := math.Inf(1)
	batch := 16 * workers
	for i := 0; i < len(cands); i += batch {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if len(top) >= req.TopK && cands[i].bound >= kth {
			stats.Pruned[PrunedTimeBound] += len(cands) - i
			break
		}
		end := min(len(cands), i+batch)
		out := make([]evaluated, end-i)
		var wg sync.WaitGroup
		per := (end - i + workers - 1) / workers
		for w := 0; w < workers; w++ {
			lo, hi := i+w*per, min(end, i+(w+1)*per)
			if lo >= hi {
				break
			}
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				for j := lo; j < hi; j++ {
					if ctx.Err() != nil {
						return
					}
					c := &cands[j]
					r := step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: c.layout, Ranks: c.ranks}
					res, err := e.Estimate(r)
					ev := evaluated{c: c, res: res, err: err}
					if err == nil {
						ev.score = score(&req, c.n, res)
						ev.ok = res.Memory.Headroom >= req.Constraints.MinHeadroomGB
					}
					out[j-i] = ev
				}
			}(lo, hi)
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		for _, ev := range out {
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
			all = append(all, ev)
			top = append(top, ev)
			slices.SortStableFunc(top, func(a, b evaluated) int {
				switch {
				case a.score < b.score:
					return -1
				case a.score > b.score:
					return 1
				}
				return a.c.ordinal - b.c.ordinal
			})
			if len(top) > req.TopK {
				top = top[:req.TopK]
			}
			if len(top) == req.TopK {
				kth = top[len(top)-1].score
			}
		}
	}

	res := Result{}
	toPlan := func(ev evaluated) Plan {
		p := Plan{GPUs: ev.c.n, Layout: ev.res.Layout, Placement: *ev.c.place, Estimate: ev.res, Score: ev.score}
		if req.PricePerGPUHour > 0 && req.TokenBudget > 0 {
			p.CostUSD = cost(&req, ev.c.n, ev.res)
		}
		return p
	}
	for i, ev := range top {
		p := toPlan(ev)
		p.Rank = i + 1
		res.Top = append(res.Top, p)
	}
	// Pareto front over (GPUs, step time, headroom) among the evaluated plans: a plan
	// stays unless another uses no more GPUs, is no slower and keeps no less
	// headroom, and is strictly better in one.
	slices.SortStableFunc(all, func(a, b evaluated) int {
		if a.c.n != b.c.n {
			return a.c.n - b.c.n
		}
		switch {
		case a.res.StepTime < b.res.StepTime:
			return -1
		case a.res.StepTime > b.res.StepTime:
			return 1
		}
		return a.c.ordinal - b.c.ordinal
	})
	for i, a := range all {
		dominated := false
		for j, b := range all {
			if i == j {
				continue
			}
			if b.c.n <= a.c.n && b.res.StepTime <= a.res.StepTime && b.res.Memory.Headroom >= a.res.Memory.Headroom &&
				(b.c.n < a.c.n || b.res.StepTime < a.res.StepTime || b.res.Memory.Headroom > a.res.Memory.Headroom ||
					b.c.ordinal < a.c.ordinal) {
				dominated = true
				break
			}
		}
		if !dominated {
			res.Pareto = append(res.Pareto, toPlan(a))
		}
	}
	stats.Elapsed = time.Since(start)
	res.Stats = stats
	return res, nil
}

// score is the objective's value of an estimate (lower is better).
func score(req *Request, n int, r step.Result) float64 {
	switch req.Objective {
	case Throughput:
		return -r.Throughput.TokensPerSecPerGPU
	case Cost:
		return cost(req, n, r)
	}
	return r.StepTime
}

// cost of training the token budget: steps × step time × GPUs × price.
func cost(req *Request, n int, r step.Result) float64 {
	tokens := float64(r.Training.GlobalBatch) * float64(r.Training.SeqLen)
	return req.TokenBudget / tokens * r.StepTime * float64(n) * req.PricePerGPUHour / 3600
}

// boundScore turns a step-time lower bound into a lower bound of the objective.
func boundScore(req *Request, n int, stepLB float64) float64 {
	switch req.Objective {
	case Throughput:
		tokens := float64(req.Training.GlobalBatch) * float64(req.Training.SeqLen)
		return -tokens / (stepLB * float64(n))
	case Cost:
		tokens := float64(req.Training.GlobalBatch) * float64(req.Training.SeqLen)
		return req.TokenBudget / tokens * stepLB * float64(n) * req.PricePerGPUHour / 3600
	}
	return stepLB
}
