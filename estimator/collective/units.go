package collective

import (
	"math"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/stepcost/stepcost/estimator/topology"
)

// The first search on a fleet places millions of flows, most of them the same
// few transfers repeated from leaf group to leaf group: a data-parallel ring of
// 25 000 ranks over 3 125 nodes loads every leaf group it passes through as the
// one before. flush places only the flows that load one unit of each kind.
//
// topology.Cluster.UnitGPUs splits a healthy cluster into units of whole leaf
// groups and domains such that every resource a flow crosses belongs to the unit
// of its source or of its destination, and moving a flow's ends by whole units
// moves its resources alike, with the same latency. A unit's resources are loaded
// by the flows with an end in it, in the order they are placed. Two units whose
// such flows are the same relative to each unit (the same GPU offsets inside it
// and the same bytes, the far end's offset included, in the same order) therefore
// carry the same loads, each the same sum of the same numbers in the same order,
// bit for bit. flush sorts the units into such classes, by comparing their flows,
// and places every flow with an end in the first unit of each class: those units'
// loads are complete, and every other unit's are those of its class's first. The
// flows placed also load parts of other units; a part of a sum of positive
// numbers, added in the same order, is at most the whole (rounding is monotone),
// so those partial loads are at most the units' own, and the most loaded
// resource, over each kind's one capacity (MaxUtilisation), is the same number as
// when every flow is placed. A ring flow's latency and network crossing are still
// taken as it is queued (queueRing; topology.Cluster.Hop, Path's sums without
// the resources): the byte-weighted sums of rings are those of every flow, added
// in the same order. Other patterns (queue) need only the slowest hop and whether
// any flow leaves the domain, and every flow's are those of its image in the
// first unit of its unit's class, a flow placed. All the flows of one coefficient are
// queued before its take sorts them: classes of part of them would leave no unit
// complete.
//
// It does not hold, and every flow is placed, on a degraded cluster or one whose
// leaves other jobs share (the capacities differ resource by resource) and on one
// without NICs (topology.Cluster.UnitGPUs is 0); every flow is placed too where
// there are too few flows or units for the classes to pay. A queue holds the
// flows of one kind (queue or queueRing) between takes.

// minUnitFlows is the fewest queued flows flush sorts into unit classes: below it
// the classes cost more than the flows they leave out. minUnits is the fewest units a cluster has for its flows to be queued at all:
// the classes cost about as much a flow as placing it (the comparisons, and a
// ring flow's latency), and pay where each class's first unit is a small part of
// the flows — a few units of hundreds (100 000 GPUs: 391 units of 32 nodes). On
// fewer, queue places each flow at once. Variables for the tests, which set them
// lower to sort small patterns too.
var (
	minUnitFlows = 4096
	minUnits     = 128
)

// queueing tells whether c's flows are worth queueing (minUnits).
func queueing(c *topology.Cluster) bool {
	u := c.UnitGPUs()
	return u > 0 && (c.GPUs()+u-1)/u >= minUnits
}

// unitClassesOff places every flow (the tests' reference); unitClassFlushes counts
// the flushes that placed one unit of each class (the tests check they ran).
var (
	unitClassesOff   bool
	unitClassFlushes atomic.Int64
)

// unitScratch is the space flush reuses from pattern to pattern.
type unitScratch struct {
	off, ends, ent []int32
	rep            []int32 // by unit: the first unit of its class, or -1 for a unit no flow touches
	need           []bool
}

// queueRing is flow whose bytes go on its resources at the next flush
// (takeRing): its latency and crossing are taken now, in order, for the ring's
// byte-weighted sums.
func (l *loads) queueRing(src, dst int, w float64) {
	if l.direct {
		l.flow(src, dst, w)
		return
	}
	if src == dst || w == 0 {
		return
	}
	lat, cross := l.c.Hop(src, dst)
	l.hop(lat, cross, w)
	l.pend = append(l.pend, queuedFlow{int32(src), int32(dst), w})
}

// queue is flow placed at the next flush (take): the slowest hop and whether one
// leaves the domain are those of the flows placed, as every flow's latency and
// crossing is that of its image in the first unit of its unit's class.
func (l *loads) queue(src, dst int, w float64) {
	if l.direct {
		l.flow(src, dst, w)
		return
	}
	if src == dst || w == 0 {
		return
	}
	l.deferHops = true
	l.pend = append(l.pend, queuedFlow{int32(src), int32(dst), w})
}

// placeQueued puts every queued flow's bytes on its resources.
func (l *loads) placeQueued() {
	for _, f := range l.pend {
		l.place(f)
	}
	l.pend, l.deferHops = l.pend[:0], false
}

// place puts a queued flow's bytes on its resources, and takes its latency and
// crossing if they were not taken when it was queued.
func (l *loads) place(f queuedFlow) {
	if l.deferHops {
		l.flow(int(f.src), int(f.dst), f.w)
		return
	}
	l.route(int(f.src), int(f.dst), f.w)
}

// route puts w bytes on the resources from GPU src to GPU dst (src ≠ dst).
func (l *loads) route(src, dst int, w float64) {
	l.path, _, _ = l.c.Path(src, dst, l.path[:0])
	for _, r := range l.path {
		l.add(r, w)
	}
}

// flush puts on their resources the bytes of the queued flows with an end in the
// first unit of each class (see above), or of every queued flow.
func (l *loads) flush() {
	fs := l.pend
	if len(fs) == 0 {
		return
	}
	need := l.unitClasses(fs)
	if need == nil {
		l.placeQueued()
		return
	}
	for k, f := range fs {
		if need[k] {
			l.place(f)
		}
	}
	l.pend, l.deferHops = fs[:0], false
}

// unitClasses returns, for each flow of fs, whether it has an end in the first
// unit of its unit's class; nil where the classes do not hold or do not pay.
func (l *loads) unitClasses(fs []queuedFlow) []bool {
	u := l.c.UnitGPUs()
	if u == 0 || len(fs) < minUnitFlows || unitClassesOff {
		return nil
	}
	units := (l.c.GPUs() + u - 1) / u
	if units < 3 {
		return nil
	}
	sc := &l.units
	shift := -1 // units are often a power of two GPUs (32 nodes of 8)
	if u&(u-1) == 0 {
		shift = bits.TrailingZeros(uint(u))
	}
	// Every unit's flows in order: ent[off[j]:off[j+1]] are the indices of the
	// flows with an end in unit j. ends[2k], ends[2k+1] are flow k's ends' units.
	off := slices.Grow(sc.off[:0], units+1)[:units+1]
	clear(off)
	ends := slices.Grow(sc.ends[:0], 2*len(fs))[:2*len(fs)]
	for k, f := range fs {
		var a, b int32
		if shift >= 0 {
			a, b = f.src>>uint(shift), f.dst>>uint(shift)
		} else {
			a, b = f.src/int32(u), f.dst/int32(u)
		}
		ends[2*k], ends[2*k+1] = a, b
		off[a+1]++
		if b != a {
			off[b+1]++
		}
	}
	for j := range units {
		off[j+1] += off[j]
	}
	ent := slices.Grow(sc.ent[:0], int(off[units]))[:off[units]]
	rep := slices.Grow(sc.rep[:0], units)[:units] // each unit's next entry, then its class's first unit
	copy(rep, off[:units])
	for k := range fs {
		a, b := ends[2*k], ends[2*k+1]
		ent[rep[a]] = int32(k)
		rep[a]++
		if b != a {
			ent[rep[b]] = int32(k)
			rep[b]++
		}
	}
	// Classes: a unit is first compared with the class of the unit before it (a
	// pattern that repeats from unit to unit), then with the classes whose flows
	// hash alike; the comparison of the flows decides.
	firsts := map[uint64][]int32{}
	last := int32(-1) // the class of the last unit touched
	for j := range units {
		rep[j] = -1
		flows := ent[off[j]:off[j+1]]
		if len(flows) == 0 {
			continue
		}
		if last >= 0 && sameUnitFlows(fs, ent[off[last]:off[last+1]], flows, int32(j-int(last))*int32(u)) {
			rep[j] = last
			continue
		}
		h := unitHash(fs, flows, int32(j*u))
		for _, r := range firsts[h] {
			if sameUnitFlows(fs, ent[off[r]:off[r+1]], flows, int32(j-int(r))*int32(u)) {
				rep[j] = r
				break
			}
		}
		if rep[j] < 0 {
			rep[j] = int32(j)
			firsts[h] = append(firsts[h], int32(j))
		}
		last = rep[j]
	}
	need := slices.Grow(sc.need[:0], len(fs))[:len(fs)]
	clear(need)
	for j := range units {
		if rep[j] == int32(j) {
			for _, k := range ent[off[j]:off[j+1]] {
				need[k] = true
			}
		}
	}
	sc.off, sc.ends, sc.ent, sc.rep, sc.need = off, ends, ent, rep, need
	unitClassFlushes.Add(1)
	return need
}

// unitHash hashes the flows of a unit whose first GPU is base, relative to it.
func unitHash(fs []queuedFlow, flows []int32, base int32) uint64 {
	h := uint64(14695981039346656037) // FNV-1a's offset basis and prime
	for _, k := range flows {
		f := fs[k]
		h = (h ^ uint64(uint32(f.src-base))) * 1099511628211
		h = (h ^ uint64(uint32(f.dst-base))) * 1099511628211
		h = (h ^ math.Float64bits(f.w)) * 1099511628211
	}
	return h
}

// sameUnitFlows tells whether the flows a (of one unit) and b (of a unit d GPUs
// further) are the same relative to their units, in the same order.
func sameUnitFlows(fs []queuedFlow, a, b []int32, d int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i, k := range a {
		f, g := fs[k], fs[b[i]]
		if g.src-f.src != d || g.dst-f.dst != d || math.Float64bits(g.w) != math.Float64bits(f.w) {
			return false
		}
	}
	return true
}
