package step

import (
	"fmt"
	"slices"
	"testing"
)

// siblingsByScan is the plain definition of grid.siblings: every rank in turn,
// the groups of those not yet in one and sharing r's coordinates in same, each
// group's ranks sorted.
func siblingsByScan(g grid, r int, dims []Dim, same ...Dim) [][]int {
	var out [][]int
	seen := make([]bool, g.n)
	for x := range g.n {
		if seen[x] {
			continue
		}
		ok := true
		for _, d := range same {
			ok = ok && g.coord(x, d) == g.coord(r, d)
		}
		if !ok {
			continue
		}
		grp := g.group(x, dims...)
		for _, y := range grp {
			seen[y] = true
		}
		slices.Sort(grp)
		out = append(out, grp)
	}
	return out
}

// stagePairsByScan is the plain definition of grid.stagePairs.
func stagePairsByScan(g grid, peer int) [][]int {
	var out [][]int
	for r := range g.n {
		if g.coord(r, DimPP) == 0 {
			out = append(out, []int{r, r + peer})
		}
	}
	return out
}

// TestSiblingsWalkLikeScan checks that the groups a placement is made of — every
// communication's siblings of rank 0's stage and of other ranks' stages, and the
// pipeline's pairs — are the plain scan's, in the same order, on grids of every
// rank order with dimensions of size 1 and more, dense and expert.
func TestSiblingsWalkLikeScan(t *testing.T) {
	orders := []string{DefaultRankOrder, "tp-dp-cp-ep-pp", "cp-tp-dp-pp-ep", "pp-dp-ep-cp-tp", "dp-pp-tp-ep-cp"}
	layouts := []Layout{
		{TP: 2, CP: 2, DP: 3, PP: 2},
		{TP: 1, CP: 4, DP: 2, PP: 3},
		{TP: 4, CP: 1, DP: 4, PP: 1, EP: 2},
		{TP: 2, CP: 3, DP: 4, PP: 2, EP: 4, ETP: 1},
		{TP: 1, CP: 1, DP: 1, PP: 4},
		{TP: 8, CP: 2, DP: 5, PP: 4, EP: 8, ETP: 2},
	}
	comms := []Comm{CommTP, CommCP, CommEP, CommDP, CommZeRO3, commExpertData, commExpertTP}
	checked := 0
	for _, o := range orders {
		for _, l := range layouts {
			l.RankOrder = o
			grids := map[string]func(*Layout) (grid, error){"dense": newGrid, "expert": newExpertGrid}
			for kind, mk := range grids {
				g, err := mk(&l)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range comms {
					dims := groupDims(c)
					for _, r := range []int{0, g.n / 2, g.n - 1} {
						for _, same := range [][]Dim{{DimPP}, nil, {DimPP, DimTP}} {
							if slices.ContainsFunc(same, func(d Dim) bool { return slices.Contains(dims, d) }) {
								continue
							}
							name := fmt.Sprintf("%s %s %v r=%d same=%v", kind, g, c, r, same)
							if got, want := g.siblings(r, dims, same...), siblingsByScan(g, r, dims, same...); !slices.EqualFunc(got, want, slices.Equal) {
								t.Errorf("%s: %v, want %v", name, got, want)
							}
							checked++
						}
					}
				}
				for _, peer := range []int{g.stride[DimPP], (g.size[DimPP] - 1) * g.stride[DimPP]} {
					if got, want := g.stagePairs(0, peer), stagePairsByScan(g, peer); !slices.EqualFunc(got, want, slices.Equal) {
						t.Errorf("%s %s pairs +%d: %v, want %v", kind, g, peer, got, want)
					}
					checked++
				}
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d cases checked", checked)
	}
}
