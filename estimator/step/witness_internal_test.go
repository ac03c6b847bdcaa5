package step

import (
	"slices"
	"testing"
)

// critical executes g with block lengths d, one execution at a time, and returns
// the block counts of a longest path: the reference witnesses' single pass over
// the four ratios must agree with.
func (g *pipeDAG) critical(d BlockTimes, end []float64, from []int32) pathCount {
	last, span := int32(-1), -1.0
	for i := 0; i < len(g.nodes); i++ {
		n := &g.nodes[i]
		start, f := 0.0, int32(-1)
		if n.prev >= 0 {
			start, f = end[n.prev], n.prev
		}
		if n.dep >= 0 && end[n.dep] > start {
			start, f = end[n.dep], n.dep
		}
		j := i
		if n.op.Fused {
			j = i + 1
			if q := g.nodes[j].dep; q >= 0 && end[q] > start {
				start, f = end[q], q
			}
			end[j] = start + d.of(n.op) + d.of(g.nodes[j].op)
			end[i], from[i], from[j] = end[j], f, f
		} else {
			end[i], from[i] = start+d.of(n.op), f
		}
		if end[j] > span {
			span, last = end[j], int32(j)
		}
		i = j
	}
	var c pathCount
	for k := last; k >= 0; {
		n := &g.nodes[k]
		w := weightOf(n.op)
		switch { // a DualPipe pair counts both its blocks
		case n.op.Fused:
			w = add(w, weightOf(g.nodes[k+1].op))
		case k > 0 && g.nodes[k-1].op.Fused:
			w = add(w, weightOf(g.nodes[k-1].op))
		}
		c = add(c, w)
		k = from[k]
	}
	return c
}

// witnesses, executing the four ratios in one pass, gives the critical paths that
// four executions one ratio at a time give, in the same order, for every
// zero-bubble table a search bounds with up to 32 ranks — and the executions'
// spans agree with execute's.
func TestWitnessesOnePass(t *testing.T) {
	tables := 0
	for _, s := range []Schedule{ZeroBubble, ZeroBubbleV, DualPipe} {
		for p := 1; p <= 32; p++ {
			for m := 1; m <= SimulatedMicroBatches(s, p, 4*p+3); m++ {
				_, v := MicroBatchBlocks(Result{Layout: Layout{Schedule: s, VirtualStages: 1}})
				if 3*p*v*m > maxTableBlocks {
					continue
				}
				g, err := compilePipe(s, p, v, m)
				if err != nil {
					continue // DualPipe's odd depths and micro-batch counts
				}
				tables++
				end := make([]float64, len(g.nodes))
				from := make([]int32, len(g.nodes))
				var want []pathCount
				for _, d := range witnessRatios {
					c := g.critical(d, end, from)
					span := g.execute([]BlockTimes{d}, make([]float64, len(g.nodes)), nil)
					if got := float64(c[0])*d.F + float64(c[1])*d.B + float64(c[2])*d.W; got < span*(1-1e-12) || got > span*(1+1e-12) {
						t.Errorf("%s p %d m %d %v: critical path %.6f, span %.6f", s, p, m, d, got, span)
					}
					if !slices.Contains(want, c) {
						want = append(want, c)
					}
				}
				if got := witnesses(g); !slices.Equal(got, want) {
					t.Errorf("%s p %d m %d: witnesses %v, one ratio at a time %v", s, p, m, got, want)
				}
			}
		}
	}
	if tables < 500 {
		t.Errorf("only %d tables compared", tables)
	}
}
