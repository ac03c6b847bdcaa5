package step

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stepcost/stepcost/estimator/invalid"
)

// Dim is a parallel dimension.
type Dim uint8

const (
	DimTP Dim = iota
	DimCP
	DimEP
	DimDP
	DimPP
	numDims
)

var dimNames = [numDims]string{"tp", "cp", "ep", "dp", "pp"}

func (d Dim) String() string { return dimNames[d] }

// DefaultRankOrder is Megatron-LM's: TP varies fastest (inside a node), PP slowest.
const DefaultRankOrder = "tp-cp-ep-dp-pp"

// grid maps a global rank (0 … N−1, GPU id on the nodes the job occupies) to its
// coordinate in every dimension and back. Two grids describe a job, as Megatron-Core's
// two RankGenerators do (megatron/core/parallel_state.py, initialize_model_parallel):
// the dense one (tp, cp, dp, pp; ep of size 1) for attention, dense layers and their
// data parallelism, and the expert one (tp = expert TP, cp = 1, ep, dp = the
// expert-data-parallel size TP·CP·DP/(ETP·EP), pp) for the MoE layers, both in the
// same rank order — "MoE parallel folding": expert groups are cut from the ranks of
// a pipeline stage independently of attention's, so EP may exceed DP.
var defaultOrder = func() [numDims]Dim {
	o, err := parseRankOrder(DefaultRankOrder)
	if err != nil {
		panic(err)
	}
	return o
}()

// parseRankOrder reads five two-letter names separated by '-', without allocating.
func parseRankOrder(order string) ([numDims]Dim, error) {
	var out [numDims]Dim
	if len(order) != 3*int(numDims)-1 {
		return out, badRankOrder(order)
	}
	var seen [numDims]bool
	for i := range int(numDims) {
		if i > 0 && order[3*i-1] != '-' {
			return out, badRankOrder(order)
		}
		name := strings.ToLower(order[3*i : 3*i+2])
		d := -1
		for j, n := range dimNames {
			if n == name {
				d = j
			}
		}
		if d < 0 || seen[d] {
			return out, badRankOrder(order)
		}
		seen[d] = true
		out[i] = Dim(d)
	}
	return out, nil
}

func badRankOrder(order string) error {
	return invalid.Field("layout.rank_order", "must name tp, cp, ep, dp and pp once each, separated by '-' (got %q)", order)
}

type grid struct {
	size   [numDims]int // extent of each dimension (EP counted separately from DP/EP)
	order  [numDims]Dim // fastest first
	stride [numDims]int
	n      int
}

func newGrid(l *Layout) (grid, error) {
	var g grid
	if l.RankOrder == "" || l.RankOrder == DefaultRankOrder {
		g.order = defaultOrder // every estimate asks; parse it once
	} else {
		var err error
		if g.order, err = parseRankOrder(l.RankOrder); err != nil {
			return g, err
		}
	}
	g.size = [numDims]int{DimTP: l.TP, DimCP: l.CP, DimEP: 1, DimDP: l.DP, DimPP: l.PP}
	g.strides()
	return g, nil
}

// newExpertGrid is the expert grid of layout l (see grid): expert TP, EP and the
// expert-data-parallel ranks in the dense grid's rank order. Validation has checked
// that ETP × EP divides the ranks of a stage.
func newExpertGrid(l *Layout) (grid, error) {
	g, err := newGrid(l)
	if err != nil {
		return g, err
	}
	return g.expertGrid(l), nil
}

// expertGrid is newExpertGrid of l cut from g, l's dense grid (newGrid), whose
// rank order it keeps: an estimate builds both, and l's order is parsed once.
func (g grid) expertGrid(l *Layout) grid {
	etp, ep := l.etp(), max(1, l.EP)
	g.size = [numDims]int{DimTP: etp, DimCP: 1, DimEP: ep, DimDP: max(1, l.TP*l.CP*l.DP/(etp*ep)), DimPP: l.PP}
	g.strides()
	return g
}

// strides sets the strides and the rank count from the sizes and the order.
func (g *grid) strides() {
	s := 1
	for _, d := range g.order {
		g.stride[d] = s
		s *= g.size[d]
	}
	g.n = s
}

// coord of rank r in dimension d.
func (g grid) coord(r int, d Dim) int { return r / g.stride[d] % g.size[d] }

// group returns the ranks that differ from rank r only in the given dimensions
// (e.g. {DimTP} for r's TP group, {DimEP, DimDP} for its DP group), in order.
func (g grid) group(r int, dims ...Dim) []int { return g.appendGroup(nil, r, dims) }

// appendGroup is group appended to buf, expanded in place (each rank's copies
// along the next dimension written from the last rank back, so that none is
// overwritten before it is read): one allocation at most, for the siblings of a
// large job (50 000 groups on 100 000 GPUs) none.
func (g grid) appendGroup(buf []int, r int, dims []Dim) []int {
	base := r
	size := 1
	for _, d := range dims {
		base -= g.coord(r, d) * g.stride[d]
		size *= g.size[d]
	}
	start := len(buf)
	buf = slices.Grow(buf, size)[:start+size]
	out := buf[start:]
	out[0] = base
	k := 1
	for _, d := range dims {
		sz, st := g.size[d], g.stride[d]
		for b := k - 1; b >= 0; b-- {
			x := out[b]
			for i := sz - 1; i >= 0; i-- {
				out[b*sz+i] = x + i*st
			}
		}
		k *= sz
	}
	return buf
}

// siblings returns every group of the same dimensions whose ranks share r's
// coordinate in `same` (e.g. the TP groups of r's pipeline stage), r's own included,
// ordered by their first rank, each group's ranks in ascending order (the ring order
// collective.PlaceGroups keeps: it sorts a group that is not). dims and same are
// disjoint. The groups share one array, of the ranks that share r's coordinates.
//
// A group's first rank has coordinate 0 in dims and r's in same; the other
// dimensions take every value, walked fastest first (ascending ranks), so no rank
// is visited that is not a first rank, and no array of the job's size marks the
// ranks seen.
func (g grid) siblings(r int, dims []Dim, same ...Dim) [][]int {
	base := 0
	for _, d := range same {
		base += g.coord(r, d) * g.stride[d]
	}
	var free, desc [numDims]Dim
	nf, count := 0, 1
	for _, d := range g.order {
		if g.size[d] > 1 && !slices.Contains(dims, d) && !slices.Contains(same, d) {
			free[nf] = d
			nf++
			count *= g.size[d]
		}
	}
	nd := g.descending(dims, &desc)
	size := 1
	for _, d := range dims {
		size *= g.size[d]
	}
	flat := make([]int, 0, count*size)
	out := make([][]int, 0, count)
	var c [numDims]int
	for x := base; len(out) < count; x = g.next(x, free[:nf], &c) {
		at := len(flat)
		flat = g.appendGroup(flat, x, desc[:nd]) // count × size ranks: no growth
		out = append(out, flat[at:len(flat):len(flat)])
	}
	return out
}

// descending writes into out the dimensions of dims of size over 1, slowest (largest
// stride) first, and returns how many: appendGroup expands the last of its
// dimensions fastest, so a group expanded in this order comes out in ascending
// rank order (grid strides are nested: a dimension's stride exceeds the ranks
// every faster dimension spans).
func (g grid) descending(dims []Dim, out *[numDims]Dim) int {
	n := 0
	for _, d := range dims {
		if g.size[d] <= 1 {
			continue
		}
		i := n
		for i > 0 && g.stride[out[i-1]] < g.stride[d] {
			out[i] = out[i-1]
			i--
		}
		out[i] = d
		n++
	}
	return n
}

// next is the rank after x among those that differ from it only in the
// dimensions free (fastest first), counted in c (x's coordinates in them, from
// zero): the next in ascending order, or the first again after the last.
func (g grid) next(x int, free []Dim, c *[numDims]int) int {
	for i, d := range free {
		c[i]++
		x += g.stride[d]
		if c[i] < g.size[d] {
			return x
		}
		c[i] = 0
		x -= g.size[d] * g.stride[d]
	}
	return x
}

// siblingsBelow returns the groups spanning dims whose ranks are all below limit,
// among pipeline stage 0's, ordered by their first rank.
func (g grid) siblingsBelow(limit int, dims []Dim) [][]int {
	var out [][]int
	seen := make([]bool, min(limit, g.n))
	for x := range seen {
		if seen[x] || g.coord(x, DimPP) != 0 {
			continue
		}
		grp := g.group(x, dims...)
		if grp[len(grp)-1] >= limit {
			continue
		}
		for _, y := range grp {
			seen[y] = true
		}
		out = append(out, grp)
	}
	return out
}

func (g grid) String() string {
	var b strings.Builder
	for i, d := range g.order {
		if i > 0 {
			b.WriteByte('-')
		}
		fmt.Fprintf(&b, "%s%d", d, g.size[d])
	}
	return b.String()
}
