package collective

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/stepcost/stepcost/estimator/topology"
)

// Auto's choice without the coefficients it cannot need.
//
// Under Auto, Estimate prices every algorithm that can run the call and keeps the
// fastest. Pricing the double binary tree needs its pipelines (treePipes: every
// flow of every channel's two trees placed on the links, per stage, then the
// window sums of the stages), and pricing the ring needs every channel's ring
// placed (famBase): on a group of a whole pipeline stage of a 100 000-GPU job that
// is hundreds of milliseconds, paid once per placement — for Transformer Engine's
// amax reductions, a few kilobytes each, which the NVLS tree or the double tree
// wins by their latency alone.
//
// autoBest gives the same answer with less work: it prices first the algorithms
// that have no cheap lower bound, then the others in increasing order of a lower
// bound on their price computed without their coefficients, and leaves out each
// whose bound is already above the fastest priced — it can neither win nor tie.
// Of equal times it keeps the algorithm first in algorithm order, as a loop over
// every algorithm in that order keeps it, so the estimate is the same to the bit
// (TestAutoBestLikeEveryAlgorithm).
//
// The bounds are the latency terms of the closed form (Model.price) with the
// contention coefficients' nonnegative parts dropped:
//
//   - ring all-reduce, all-gather, reduce-scatter: the fixed cost and the steps'
//     software cost, fixedUs + steps × StepUs; the ring's hop latency, network
//     step cost and transfer time are nonnegative;
//   - double binary tree all-reduce (Model.stream): fixedUs + D × StepUs +
//     Σ lat + Σ net × NetStepUs over the stages of channel 0's first tree
//     (treeHops), for the flows of one placed group: the pipeline holds these
//     stages and flows among others, so its depth and each stage's slowest hop
//     are at least these (a maximum over a superset, summed in the same order),
//     and the transfer time is nonnegative. The second tree is the first with
//     its heap over the nodes turned by one: as deep within a level, and walking
//     it too would double the bound's cost for a stage or so more.
//
// Each is the smallest over every protocol the algorithm runs, a bound on the one
// bestProtocol keeps whatever the protocol options. The tree's bound costs one
// walk of one tree of the group, kept with the placement, against the pipelines'
// walk of every channel's two trees with every concurrent group's flows and the
// windows over their stages; it is computed only for calls the pipelines
// cannot price above one chunk per channel (the latency-bound ones, where the
// bound is close to the price), so a bandwidth-bound call does not pay for it.

// autoBest is Estimate's choice under Auto: the fastest algorithm that AutoChoice
// allows and that can run op on the placement (best.TimeUs is +Inf if none).
func (m *Model) autoBest(p *Placement, op Op, bytes float64, o Options) Estimate {
	best, bestA := Estimate{TimeUs: math.Inf(1)}, numAlgos
	// take prices a and keeps the faster, or of equal times the earlier in
	// algorithm order: the first fastest, as a loop in that order keeps it.
	take := func(a Algorithm) {
		e := m.bestProtocol(p, op, a, bytes, o)
		if e.TimeUs < best.TimeUs || e.TimeUs == best.TimeUs && bestA < numAlgos && a < bestA {
			best, bestA = e, a
		}
	}
	// The bounded ones (ring and double tree at most), in increasing order of
	// their bounds.
	var later [2]Algorithm
	var bounds [2]float64
	n := 0
	for a := Ring; a < numAlgos; a++ {
		if !AutoChoice(op, a) {
			continue
		}
		if a == Ring || a == DoubleTree {
			if lb, ok := m.autoBound(p, op, a, bytes, o.Launch); ok {
				later[n], bounds[n] = a, lb
				if n == 1 && bounds[1] < bounds[0] {
					later[0], later[1], bounds[0], bounds[1] = later[1], later[0], bounds[1], bounds[0]
				}
				n++
				continue
			}
		}
		if m.autoRuns(p, op, a) && (o.nvlsRuns(op) || !isNVLS(a)) {
			take(a)
		}
	}
	for i, a := range later[:n] {
		// Priced at least its bound: slower than one already priced, or it cannot run.
		if bounds[i] <= best.TimeUs && m.autoRuns(p, op, a) {
			take(a)
			if !p.auto.priced[a].Load() {
				p.auto.priced[a].Store(true)
			}
		}
	}
	return best
}

// autoBound is a lower bound on what bestProtocol prices algorithm a at for op on
// the placement, without the coefficients of a's family; false where none is
// kept (the algorithm is then priced).
func (m *Model) autoBound(p *Placement, op Op, a Algorithm, bytes float64, launch Launch) (float64, bool) {
	if p.auto.priced[a].Load() {
		// Priced on this placement before: its coefficients are there, and pricing
		// it costs less than bounding it.
		return 0, false
	}
	switch {
	case a == Ring && (op == AllReduce || op == AllGather || op == ReduceScatter):
		steps := p.N() - 1
		if op == AllReduce {
			steps *= 2
		}
		lb := math.Inf(1)
		for _, pr := range protocols(Ring) {
			lb = min(lb, m.fixedUs(p, op, Ring, pr, launch)+float64(steps)*m.k.StepUs[pr])
		}
		return lb, true
	case a == DoubleTree && op == AllReduce:
		// Only where the pipelines price one chunk per channel (Model.chunks): above
		// that the transfer term grows and the bound, latency alone, rarely prunes.
		if bytes/float64(2*p.coef.channels) > m.k.ChunkBytes {
			return 0, false
		}
		h := p.treeHops()
		if h.deep {
			// Channel 0's first tree is deeper than the pipelines are built for
			// (maxPipeDepth): the double tree cannot run here (treePipes).
			return math.Inf(1), true
		}
		lb := math.Inf(1)
		for _, pr := range protocols(DoubleTree) {
			lb = min(lb, m.fixedUs(p, op, DoubleTree, pr, launch)+
				(float64(h.D)*m.treeStepUs(pr)+h.path.lat+h.path.net*m.k.NetStepUs[pr]))
		}
		return lb, true
	}
	return 0, false
}

// autoState is what autoBest keeps with a placement: the double tree's treeHops,
// and which algorithms it has priced there (their coefficients computed).
type autoState struct {
	hopsOnce sync.Once
	hops     treeHops
	priced   [numAlgos]atomic.Bool
}

// treeHops is what the double tree's pipeline (coefficients.dtree, treePipes) is
// known to hold without being built: the stages of channel 0's first tree and,
// summed over them in stage order, the slowest hop's latency and whether a hop
// leaves the scale-up domain, for the flows of the first placed group.
type treeHops struct {
	D    int    // stages: the tree's root height plus its depth
	path winSum // m unused
	deep bool   // the tree has more than maxPipeDepth stages
}

// treeHops computes the placement's treeHops once.
func (p *Placement) treeHops() *treeHops {
	h := &p.auto.hops
	p.auto.hopsOnce.Do(func() { h.compute(p) })
	return h
}

// compute walks channel 0's first tree as treePipes places it: a rank r sends up
// at stage height[r] and its parent sends down to it at stage H + the parent's
// depth.
func (h *treeHops) compute(p *Placement) {
	c := p.Cluster
	if p.N() < 2 {
		return
	}
	mesh := c.Spec.Intra.Kind == topology.Mesh
	g := p.placed()[0]
	parent := channelTree(p.Shape, 0, 0, mesh)
	height, depth, H, maxD := treeLevels(parent)
	if H+maxD > maxPipeDepth {
		h.deep = true
		return
	}
	lat := make([]float64, H+maxD)
	net := make([]bool, H+maxD)
	var buf []int32
	hop := func(s, src, dst int) {
		var l float64
		var cross bool
		buf, l, cross = c.Path(g[src], g[dst], buf[:0])
		lat[s] = max(lat[s], l)
		net[s] = net[s] || cross
	}
	for r, pr := range parent {
		if pr >= 0 {
			hop(height[r], r, int(pr))
			hop(H+depth[pr], int(pr), r)
		}
	}
	h.D = len(lat)
	for s := range lat {
		h.path = h.path.plus(winSum{lat: lat[s], net: b2f(net[s])})
	}
}
