package step

import (
	"fmt"
	"math"
	"testing"
)

// Every schedule's table executes without deadlock for every pipeline depth and
// micro-batch count its rules allow; every rank runs each of its blocks once; and
// the steady state the estimate extrapolates is the execution's: executing all m
// micro-batches gives the same span as executing SimulatedMicroBatches of them and
// adding the busiest rank's work per micro-batch past them.
func TestPipelineSteadyState(t *testing.T) {
	e := New()
	for _, r := range ScheduleRules() {
		for _, p := range []int{2, 3, 4, 6, 8} {
			vs := []int{1}
			switch r.Schedule {
			case Interleaved:
				vs = []int{2, 3}
			case ZeroBubbleV:
				vs = []int{2}
			}
			for _, v := range vs {
				for m := 1; m <= 6*p+2; m++ {
					if !r.Allows(p, v, m, 2*p*v*6, false) {
						continue
					}
					for _, times := range [][]BlockTimes{{{F: 1, B: 2}}, {{F: 1, B: 1, W: 1}}, {{F: 1.3, B: 0.9, W: 0.7}}, {{F: 0.6, B: 0.5, W: 1.1}}} {
						if r.Schedule != ZeroBubble && r.Schedule != ZeroBubbleV && r.Schedule != DualPipe {
							times[0].B, times[0].W = times[0].B+times[0].W, 0
						}
						name := fmt.Sprintf("%s p %d v %d m %d %v", r.Schedule, p, v, m, times[0])
						g, err := compilePipe(r.Schedule, p, v, m)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if err := coversEveryBlock(g, r.Schedule, p, v, m); err != nil {
							t.Errorf("%s: %v", name, err)
						}
						full := g.execute(times, make([]float64, len(g.nodes)), nil)
						if c, ok := closedSpan(r.Schedule, p, v, m, times, nil); ok && math.Abs(c-full) > 1e-9*full {
							t.Errorf("%s: closed form %.6f, executed %.6f", name, c, full)
						}
						got, _, err := e.PipelineSpan(r.Schedule, p, v, m, times, nil)
						if err != nil {
							t.Fatal(err)
						}
						if math.Abs(got-full) > 1e-9*full {
							t.Errorf("%s: extrapolated span %.6f, executed %.6f", name, got, full)
						}
					}
				}
			}
		}
	}
}

// coversEveryBlock checks that the schedule runs a forward and a backward of every
// micro-batch through every chunk, each once and on the chunk's rank, and a weight
// gradient exactly for the backwards that leave it apart.
func coversEveryBlock(g *pipeDAG, s Schedule, p, v, m int) error {
	chunks, dirs, perDir := pipelineChunks(s, p, v), 1, m
	if s == DualPipe {
		dirs, perDir = 2, m/2
	}
	type key struct {
		dir, mb, chunk int
		pass           Pass
	}
	seen := map[key]int{}
	split := map[key]bool{}
	for _, n := range g.nodes {
		o := n.op
		k := key{int(o.Dir), int(o.MB), int(o.Chunk), o.Pass}
		seen[k]++
		if o.Pass == PassBackward && !o.Full {
			split[key{k.dir, k.mb, k.chunk, PassWeightGrad}] = true
		}
		if int(n.rank) != PipelineRank(s, p, k.chunk, k.dir) {
			return fmt.Errorf("%+v on rank %d", o, n.rank)
		}
	}
	for d := range dirs {
		for mb := range perDir {
			for c := range chunks {
				for _, pass := range []Pass{PassForward, PassBackward, PassWeightGrad} {
					k := key{d, mb, c, pass}
					want := 1
					if pass == PassWeightGrad && !split[k] {
						want = 0
					}
					if seen[k] != want {
						return fmt.Errorf("%+v runs %d times, want %d", k, seen[k], want)
					}
				}
			}
		}
	}
	if len(seen) != len(g.nodes) {
		return fmt.Errorf("%d blocks for %d distinct ones", len(g.nodes), len(seen))
	}
	return nil
}

// The path counts a search bounds with never exceed the executed span, for
// tables that keep every path count and for deep ones bounded by the critical
// paths of a few reference executions; and on the deep ones the bound is within
// 10 % of the span at the reference ratios' middle.
func TestPipelineWitnessesBound(t *testing.T) {
	for _, s := range []Schedule{ZeroBubble, ZeroBubbleV, DualPipe} {
		for _, p := range []int{4, 8, 16, 32} {
			m := SimulatedMicroBatches(s, p, 4*p)
			g, err := compilePipe(s, p, 1, m)
			if err != nil {
				t.Fatal(err)
			}
			w := witnesses(g)
			for _, d := range []BlockTimes{{F: 1, B: 1, W: 1}, {F: 1, B: 2, W: 0.1}, {F: 0.5, B: 1.7, W: 0.9}, {F: 2, B: 0.5, W: 0.2}, {F: 1, B: 1.4, W: 0.6}} {
				span := g.execute([]BlockTimes{d}, make([]float64, len(g.nodes)), nil)
				lb := 0.0
				for _, c := range w {
					lb = max(lb, float64(c[0])*d.F+float64(c[1])*d.B+float64(c[2])*d.W)
				}
				if lb > span*(1+1e-12) {
					t.Errorf("%s p %d %v: bound %.4f over the span %.4f", s, p, d, lb, span)
				}
				if d == (BlockTimes{F: 1, B: 1.4, W: 0.6}) && lb < 0.9*span {
					t.Errorf("%s p %d %v: bound %.4f, span %.4f", s, p, d, lb, span)
				}
			}
		}
	}
}
