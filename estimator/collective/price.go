package collective

import (
	"fmt"

	"github.com/stepcost/stepcost/estimator/invalid"
)

// StepCost is the price of one step of an explicit schedule.
type StepCost struct {
	TimeUs      float64
	LatencyUs   float64 // software + hardware latency of the step
	Bottleneck  int32   // most loaded link (resource id), −1 if none
	BottleneckU float64 // its utilisation time, µs (before the protocol's bandwidth factor)
}

// ScheduleCost is the price of a whole schedule.
type ScheduleCost struct {
	TimeUs float64
	Steps  []StepCost
}

// PriceSchedule prices an explicit schedule on a placement, link by link: in every
// step, each transfer of every concurrent group is placed on the links it crosses,
// every link's load is divided by its achievable bandwidth, and the step lasts as
// long as its slowest link plus the step's latency. elemBytes is the size of one
// element of the schedule. This is the reference the closed form (Model.Estimate) is
// tested against.
func (m *Model) PriceSchedule(p *Placement, s *Schedule, elemBytes float64, pr Protocol, launch Launch) (ScheduleCost, error) {
	if s.Shape.N() != p.N() {
		return ScheduleCost{}, invalid.Field("schedule", "has %d ranks, the placement %d", s.Shape.N(), p.N())
	}
	if !(elemBytes > 0) {
		return ScheduleCost{}, invalid.Field("elem_bytes", "must be positive (got %v)", elemBytes)
	}
	if pr >= numProtos || launch >= numLaunch {
		return ScheduleCost{}, invalid.Field("protocol", "unknown protocol %d or launch %d", pr, launch)
	}
	c := p.Cluster
	l := newLoads(c)
	stepUs, bwf := m.k.StepUs[pr], m.k.BWFactor[pr]
	if s.Algo == Tree || s.Algo == DoubleTree {
		stepUs = m.treeStepUs(pr) // a tree hop's software cost (model.go)
	}
	if s.Algo == NVLS {
		stepUs = m.k.NVLSStepUs
		bwf *= m.nvlsEfficiency(c.GPU().Arch)
		if bwf == 0 {
			return ScheduleCost{}, fmt.Errorf("%w: no NVLS efficiency for %s", ErrUnsupported, c.GPU().Arch)
		}
	}
	out := ScheduleCost{TimeUs: m.fixedUs(p, s.Op, s.Algo, pr, launch), Steps: make([]StepCost, 0, len(s.Steps))}
	// Ring steps pay the mean latency of their hops (see loads.takeRing).
	ringLike := s.Algo == Ring && (s.Op == AllReduce || s.Op == AllGather || s.Op == ReduceScatter) || s.Algo == Hierarchical
	// Point-to-point calls run NCCL's p2p kernel: a floor of
	// what their channels can copy and a cost per further peer (p2p.go).
	p2p := isP2P(s.Op, s.Algo)
	var chanUs float64
	if p2p {
		stepUs = 0 // one step, whose software cost is the call's (baseUs)
		perPeer, peers, _ := p.p2pShape(s.Op, float64(s.Elems)*elemBytes)
		nch, _ := p2pPlan(p, perPeer)
		chanUs = m.p2pChannelUs(p, s.Op, perPeer, peers, nch, pr)
	}
	for _, st := range s.Steps {
		for _, t := range st.Transfers {
			w := float64(t.Len) * elemBytes
			switch t.Kind {
			case Copy, Add:
				if t.Src < 0 || int(t.Src) >= p.N() || t.Dst < 0 || int(t.Dst) >= p.N() {
					return ScheduleCost{}, fmt.Errorf("transfer %d→%d outside the group", t.Src, t.Dst)
				}
				for _, g := range p.Siblings {
					l.flow(g[t.Src], g[t.Dst], w)
				}
			case SwitchReduce:
				for _, g := range p.Siblings {
					l.switchReduce(g, g[t.Dst], w)
				}
			case Multicast:
				for _, g := range p.Siblings {
					l.multicast(g, g[t.Src], w)
				}
			}
		}
		sc := StepCost{Bottleneck: -1}
		for _, r := range l.touched {
			if u := l.load[r] / c.Capacity(r); u > sc.BottleneckU {
				sc.BottleneckU, sc.Bottleneck = u, r
			}
		}
		lat, net := l.lat, b2f(l.net)
		if ringLike && l.flows > 0 {
			lat, net = l.latSum/l.flows, l.netSum/l.flows
		}
		sc.LatencyUs = stepUs + lat + net*m.k.NetStepUs[pr]
		sc.TimeUs = sc.LatencyUs + sc.BottleneckU/bwf
		if p2p {
			sc.TimeUs = sc.LatencyUs + max(sc.BottleneckU/bwf, chanUs)
		}
		l.reset()
		out.Steps = append(out.Steps, sc)
		out.TimeUs += sc.TimeUs
	}
	// EFA's proxy cost (efaproxy.go), as in the closed form, spread evenly over the
	// steps.
	if n := len(out.Steps); n > 0 {
		fixed := m.fixedUs(p, s.Op, s.Algo, pr, launch)
		if add := efaProxyUs(p, s.Op, s.Algo, pr, float64(s.Elems)*elemBytes, s.Params.Channels, s.Params.Chunks, fixed, out.TimeUs); add > 0 {
			for i := range out.Steps {
				out.Steps[i].TimeUs += add / float64(n)
			}
			out.TimeUs += add
		}
	}
	if s.Algo == Pairwise && len(out.Steps) > 0 {
		// The steps' net channels bound the call's transfer time (pairwiseNetUs),
		// as in the closed form; the shortfall is spread evenly over the steps.
		var xfer float64
		for _, st := range out.Steps {
			xfer += st.TimeUs - st.LatencyUs
		}
		if short := m.pairwiseNetUs(p, float64(s.Elems)*elemBytes/float64(p.N()), pr) - xfer; short > 0 {
			for i := range out.Steps {
				out.Steps[i].TimeUs += short / float64(len(out.Steps))
			}
			out.TimeUs += short
		}
	}
	return out, nil
}
