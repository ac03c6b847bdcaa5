package step

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
)

// The collective-cost memo returns what the collective model returns, and a
// generation that fills up is replaced, so the memo never holds much more than
// maxMemoCosts entries however many sizes an estimator sees.
func TestCollectiveCostMemo(t *testing.T) {
	cl, err := catalog.Cluster("dgx-h100", 2)
	if err != nil {
		t.Fatal(err)
	}
	e := New()
	p, err := collective.Place(cl, []int{0, 1, 2, 3, 4, 5, 6, 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := e.costs.Load()
	for i := 1; i <= maxMemoCosts+10; i++ {
		bytes := float64(i) * 4096
		got, err := e.collCost(p, collective.AllReduce, bytes)
		if err != nil {
			t.Fatal(err)
		}
		if i%4099 == 1 {
			want, _ := e.coll.Estimate(p, collective.AllReduce, bytes, collective.Options{})
			if got != want {
				t.Fatalf("%v bytes: memo %+v, model %+v", bytes, got, want)
			}
			// Asked again, the memo answers the same.
			if again, _ := e.collCost(p, collective.AllReduce, bytes); again != want {
				t.Fatalf("%v bytes: second answer %+v, want %+v", bytes, again, want)
			}
		}
	}
	cur := e.costs.Load()
	if cur == first {
		t.Fatal("the memo generation was never replaced")
	}
	if n := len(cur.m); n < 1 || n > 64 {
		t.Errorf("new generation holds %d entries, want the few stored since the swap", n)
	}
}

// Layouts that split the same ranks into different dimensions share one placement:
// ZeRO-3's group of TP 2 × CP 2 × DP 8 and of TP 2 × DP 16 is every even rank, with
// the odd ranks' group beside it; a different set (TP 4 × DP 8) is placed anew, and
// the shared placement is the one the set's own siblings give.
func TestPlacementSharedAcrossSplits(t *testing.T) {
	cl, err := catalog.Cluster("dgx-h100", 4)
	if err != nil {
		t.Fatal(err)
	}
	e := New()
	place := func(l Layout) *collective.Placement {
		t.Helper()
		g, err := newGrid(&l)
		if err != nil {
			t.Fatal(err)
		}
		p, err := e.placement(cl, nil, g, CommZeRO3)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := place(Layout{TP: 2, CP: 2, DP: 8, PP: 1})
	b := place(Layout{TP: 2, CP: 1, DP: 16, PP: 1})
	if a != b {
		t.Errorf("TP 2 × CP 2 × DP 8 and TP 2 × DP 16 placed twice")
	}
	if len(a.Ranks) != 16 || a.Ranks[1] != 2 || len(a.Siblings) != 2 || a.Siblings[1][0] != 1 {
		t.Errorf("placement: ranks %v, %d siblings", a.Ranks, len(a.Siblings))
	}
	if c := place(Layout{TP: 4, CP: 1, DP: 8, PP: 1}); c == a {
		t.Errorf("TP 4 × DP 8 (every fourth rank) shares TP 2's placement")
	}
	// The pipeline's pairs: stage 0 is ranks 0–15 of 32 however it is split.
	g1, _ := newGrid(&Layout{TP: 2, CP: 2, DP: 4, PP: 2})
	g2, _ := newGrid(&Layout{TP: 8, CP: 1, DP: 2, PP: 2})
	p1, err1 := e.placement(cl, nil, g1, CommPP)
	p2, err2 := e.placement(cl, nil, g2, CommPP)
	if err1 != nil || err2 != nil || p1 != p2 {
		t.Errorf("pipeline pairs placed twice (%v, %v)", err1, err2)
	}
}

func TestCanonicalExtents(t *testing.T) {
	for _, c := range []struct{ in, want []extent }{
		{[]extent{{2, 2}, {8, 4}}, []extent{{16, 2}, {}}},
		{[]extent{{8, 4}, {2, 2}}, []extent{{16, 2}, {}}},
		{[]extent{{2, 1}, {4, 4}}, []extent{{2, 1}, {4, 4}}}, // a gap: not contiguous
		{[]extent{{2, 1}, {2, 2}, {4, 4}}, []extent{{16, 1}, {}, {}}},
		{[]extent{{2, 1}, {2, 2}, {4, 8}}, []extent{{4, 1}, {4, 8}, {}}},
		{nil, nil},
	} {
		got := append([]extent(nil), c.in...)
		canonicalExtents(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("canonicalExtents(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// Groups inside a node that repeat from node to node are placed with the first
// node's groups only, and price exactly as with every group listed; the placement
// still counts every group that runs at once.
func TestPlacementByDomainImages(t *testing.T) {
	images := 0
	for _, system := range []string{"dgx-h100", "aws-p4d", "gb200-nvl72", "oci-mi300x"} {
		cl, err := catalog.Cluster(system, 64)
		if err != nil {
			t.Fatal(err)
		}
		per := cl.Spec.GPUsPerNode
		for _, l := range []Layout{
			{TP: per, CP: 1, DP: 32, PP: 2},
			{TP: 2, CP: 2, DP: 16 * per / 4, PP: 2},
			{TP: 1, CP: per, DP: 8, PP: 4},
			{TP: 2, CP: 1, DP: 32 * per / 2, PP: 1, EP: 4},
		} {
			g, err := newGrid(&l)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []Comm{CommTP, CommCP, CommEP, CommZeRO3, commExpertData} {
				e := New()
				got, err := e.placement(cl, nil, g, c)
				if err != nil {
					t.Fatal(err)
				}
				sib := g.siblings(0, groupDims(c), DimPP)
				want, err := collective.Place(cl, sib[0], sib[1:])
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s/%s/%v", system, g, c)
				if got.Concurrent != len(sib) {
					t.Errorf("%s: %d groups at once, want %d", name, got.Concurrent, len(sib))
				}
				if len(got.Siblings) < len(sib) {
					images++
				}
				if got.N() < 2 {
					continue
				}
				for _, op := range []collective.Op{collective.AllReduce, collective.AllGather, collective.ReduceScatter, collective.AllToAll} {
					for _, bytes := range []float64{1 << 12, 1 << 24, 1 << 30} {
						a, errA := e.coll.Estimate(got, op, bytes, collective.Options{})
						b, errB := e.coll.Estimate(want, op, bytes, collective.Options{})
						if (errA == nil) != (errB == nil) || a != b {
							t.Errorf("%s %v %g: %+v (%v), want %+v (%v)", name, op, bytes, a, errA, b, errB)
						}
					}
				}
			}
		}
	}
	if images < 20 {
		t.Errorf("%d placements listed only their first domain's groups", images)
	}
}

// The executed-span memo returns what executing the table returns — for every
// zero-bubble schedule, one or per-rank block lengths, asked again and with other
// lengths — and a generation that fills up is replaced.
func TestPipelineSpanMemo(t *testing.T) {
	e := New()
	for _, s := range []Schedule{ZeroBubble, ZeroBubbleV, DualPipe, Interleaved} {
		for _, m := range []int{8, 12, 40} {
			p, v := 4, 1
			if s == Interleaved {
				v = 2
				m = 10 // not a multiple of p: executed, not in closed form
			}
			for i, times := range [][]BlockTimes{
				{{F: 1, B: 2, W: 0.5}},
				{{F: 1, B: 2, W: 0.5}, {F: 1.25, B: 2, W: 0.5}, {F: 1, B: 2.5, W: 0.75}, {F: 0.75, B: 1.5, W: 0.25}},
				{{F: 1, B: 2, W: 0.5 + 1e-12}}, // differs from the first in the last bit only
			} {
				want, wantSim, err := ExecutePipeline(s, p, v, m, times, nil)
				if err != nil {
					t.Fatal(err)
				}
				for range 2 { // computed, then from the memo
					got, sim, err := e.PipelineSpan(s, p, v, m, times, nil)
					if err != nil || got != want || sim != wantSim {
						t.Fatalf("%s m=%d times #%d: %v, %d, %v; executed %v, %d", s, m, i, got, sim, err, want, wantSim)
					}
				}
			}
		}
	}
	first := e.spanMemo()
	for i := range maxSpans + 1 {
		if _, _, err := e.PipelineSpan(ZeroBubble, 4, 1, 8, []BlockTimes{{F: 1 + float64(i), B: 2, W: 0.5}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if now := e.spanMemo(); now == first || now.n.Load() > maxSpans {
		t.Errorf("the span memo was not replaced when full (%d spans in the generation)", now.n.Load())
	}
}
