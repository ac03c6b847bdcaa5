package collective

import (
	"math"

	"github.com/stepcost/stepcost/estimator/topology"
)

// GroupCut describes groups of equal size that run a collective at the same time,
// for a lower bound of its price that needs no placement (CutBound): a search asks
// for bounds on thousands of layouts it never prices, and placing every concurrent
// group of a 100 000-GPU job costs time in proportion to its GPUs, where this costs
// the GPUs of one scale-up domain.
type GroupCut struct {
	N int // ranks per group
	// InDomain counts, for each group with ranks in one scale-up domain (the bound's
	// cut is around it), how many of its ranks are there; the first is the group
	// the bound prices.
	InDomain []int
	// OnePerDomain says no two ranks of a group share a scale-up domain.
	OnePerDomain bool
}

// CutBound is a lower bound, in µs, of what Estimate charges for op (all-gather,
// reduce-scatter, all-to-all or send/recv; others 0) of bytes on the first group of
// g with the others running at the same time, whatever algorithm and protocol it
// picks. Bandwidth: a transfer's time is at least the bytes on its busiest link
// over that link's bandwidth, so at least
//   - across the cut around the domain: every group with p of its n ranks inside
//     brings the (n−p)/n·bytes of its other ranks' blocks in (all-gather, all-to-all:
//     each inside rank receives its block from each outside one) or sends them out
//     reduced (reduce-scatter), at least once — no algorithm reduces across domains
//     on the way — over the domain's NICs together;
//   - each rank receives (or sends) (n−1)/n·bytes through its scale-up port and its
//     NIC (inside one domain: its port, or on a mesh its links to the others);
//   - send/recv: a group that spans domains has a transfer through a NIC, and the
//     step waits for its slowest transfer.
//
// Latency: the call's fixed cost, and the per-step costs of the cheapest algorithm
// the model offers: a ring's n−1 steps, each paying the mean hop latency of a ring
// that leaves each of the ⌈n/domain⌉ or more domains it spans once; PAT's ⌈log₂ n⌉
// network steps; one step otherwise. Protocol factors and start-up only add.
func (m *Model) CutBound(c *topology.Cluster, op Op, bytes float64, g GroupCut) float64 {
	n := g.N
	if n < 2 || bytes <= 0 || len(g.InDomain) == 0 {
		return 0
	}
	switch op {
	case AllGather, ReduceScatter, AllToAll, SendRecv:
	default:
		return 0
	}
	k := &m.k
	minStep, minNetStep, fixed, maxBWF := math.Inf(1), math.Inf(1), math.Inf(1), 0.0
	for pr := range numProtos {
		minStep = min(minStep, k.StepUs[pr])
		minNetStep = min(minNetStep, k.NetStepUs[pr])
		fixed = min(fixed, k.BaseUs[pr])
		maxBWF = max(maxBWF, k.BWFactor[pr])
	}
	fixed = min(fixed, k.NVLSBaseUs)
	launch := math.Inf(1)
	for _, us := range k.LaunchUs {
		launch = min(launch, us)
	}
	fixed += launch
	if maxBWF <= 0 {
		return fixed
	}
	nf := float64(n)
	spec := c.Spec
	mesh := spec.Intra.Kind == topology.Mesh
	if g.InDomain[0] == n {
		port := c.IntraBW
		if mesh {
			port = min(port, (nf-1)*c.PairBW)
		}
		lat := fixed + min(minStep, k.NVLSStepUs) + c.IntraLatUs
		if op == SendRecv {
			if mesh {
				port = c.PairBW
			}
			return lat + bytes/port/maxBWF
		}
		return lat + (nf-1)/nf*bytes/port/maxBWF
	}
	netStep := minStep + c.NetLatUs + minNetStep // one step with a transfer through a NIC
	if op == SendRecv {
		return fixed + netStep + bytes/c.NICBW/maxBWF
	}
	domGPUs := c.DomainGPUs()
	nics := float64(spec.NICs.PerNode * domGPUs / spec.GPUsPerNode)
	if nics == 0 {
		return fixed
	}
	var crossing float64
	for _, p := range g.InDomain {
		pf := float64(p)
		if op == AllToAll {
			crossing += pf * (nf - pf) / nf * bytes
		} else {
			crossing += (nf - pf) / nf * bytes
		}
	}
	perRank := (nf - 1) / nf * bytes / (c.IntraBW + c.NICBW)
	xfer := max(crossing/(nics*c.NICBW), perRank) / maxBWF
	lat := fixed + netStep // all-to-all: direct's one step, pairwise's first
	if op != AllToAll {
		// Ring: every channel's ring leaves each domain it spans once.
		doms := max(2, (n+domGPUs-1)/domGPUs)
		d := float64(doms)
		// More domains mean more network hops: fewer if those are the cheaper ones.
		hop := min((d*c.NetLatUs+(nf-d)*c.IntraLatUs)/nf, c.NetLatUs)
		ring := (nf - 1) * (minStep + hop + d/nf*minNetStep)
		if g.OnePerDomain && patSteps(n) <= maxPATSteps {
			ring = min(ring, float64(patSteps(n))*netStep)
		}
		lat = fixed + ring
	}
	return lat + xfer
}
