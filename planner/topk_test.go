package planner

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The ranking offer builds is an exhaustive search's, whatever order the plans
// come in: the first K of the plans no other plan dominates (or of them all, with
// dominated plans included), by score then enumeration order. The plans are drawn
// from a few step times, headrooms, GPU counts and placements so that ties and
// dominance are common, and are offered in many shuffled orders; a plan pushed
// past position K must come back when a later plan dominates one ranked before it.
func TestOfferRanksAsAnExhaustiveSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	wholeFree := []*Placement{{FreeWholeNodes: 0}, {FreeWholeNodes: 1}}
	for trial := range 200 {
		n := 5 + rng.IntN(60)
		cands := make([]candidate, n)
		evs := make([]evaluated, n)
		for i := range cands {
			cands[i] = candidate{n: int32(64 << rng.IntN(2)), ordinal: int32(i), alts: []alt{{place: wholeFree[rng.IntN(2)]}}}
			step := 1 + float64(rng.IntN(12))/4
			evs[i] = evaluated{c: &cands[i], stepTime: step, score: step, headroom: float64(rng.IntN(6)), ok: true}
		}
		for _, includeDominated := range []bool{false, true} {
			for _, k := range []int{1, 3, 10, 1000} {
				req := &Request{TopK: k, IncludeDominated: includeDominated}
				want := exhaustiveTop(evs, k, includeDominated)
				for range 8 {
					order := rng.Perm(n)
					s := &evaluation{req: req, stats: &Stats{}}
					for _, i := range order {
						ev := evs[i]
						s.offer(&ev)
					}
					var got []int32
					for _, ev := range s.top[:min(k, len(s.top))] {
						got = append(got, ev.c.ordinal)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("trial %d, K %d, dominated included %v, order %v: top %v, exhaustively %v", trial, k, includeDominated, order, got, want)
					}
					if len(want) >= k && s.kth != evs[want[k-1]].score {
						t.Fatalf("trial %d, K %d: stop score %v, the K-th plan's %v", trial, k, s.kth, evs[want[k-1]].score)
					}
					if !includeDominated {
						if d := n - countUndominated(evs); s.stats.Dominated != d {
							t.Fatalf("trial %d, K %d: %d plans counted as dominated, %d are", trial, k, s.stats.Dominated, d)
						}
					}
				}
			}
		}
	}
}

// exhaustiveTop ranks every plan, drops those another dominates unless they are
// included, and keeps the first k ordinals.
func exhaustiveTop(evs []evaluated, k int, includeDominated bool) []int32 {
	var kept []*evaluated
	for i := range evs {
		if includeDominated || !slices.ContainsFunc(evs, func(o evaluated) bool { return dominates(&o, &evs[i]) }) {
			kept = append(kept, &evs[i])
		}
	}
	slices.SortFunc(kept, func(a, b *evaluated) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	var out []int32
	for _, ev := range kept[:min(k, len(kept))] {
		out = append(out, ev.c.ordinal)
	}
	return out
}

func countUndominated(evs []evaluated) int {
	n := 0
	for i := range evs {
		if !slices.ContainsFunc(evs, func(o evaluated) bool { return dominates(&o, &evs[i]) }) {
			n++
		}
	}
	return n
}
