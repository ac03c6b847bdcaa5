package planner

import (
	"cmp"
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
)

// The queue hands out every layout that fits, in the order of sorting them all by
// bound then ordinal, and the shapes' best bounds are bounds of their layouts.
func TestQueueOrderIsTheFullSort(t *testing.T) {
	for _, tc := range []struct {
		model string
		gpus  int
		obj   Objective
	}{{"llama3-8b", 64, FastestStep}, {"llama3-70b", 128, Throughput}, {"mixtral-8x7b", 32, Cost}} {
		a, err := model.Lookup(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := catalog.Cluster("dgx-h100", tc.gpus/8)
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Model: a.Normalise(), Cluster: cl, GPUs: tc.gpus, Objective: tc.obj, PricePerGPUHour: 2, TokenBudget: 1e12,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 256, Optimizer: step.AdamMixed(), Precision: step.BF16}}
		sp := newSpace(&req)
		st := Stats{Pruned: map[string]int{}}
		e := step.New()
		en, err := enumerate(context.Background(), e, &req, sp, &st, 3, new(buffers))
		if err != nil {
			t.Fatal(err)
		}
		shapes, kept := en.shapes, en.kept
		// The queue gets the shapes as enumerated: it adds their exposure itself.
		fresh := make([]*shape, len(shapes)) // copies: the loop below exposes the originals
		for i, s := range shapes {
			c := *s
			fresh[i] = &c
		}
		var all []candidate
		for i, s := range shapes {
			n := len(all)
			p := &en.parts[s.part]
			s.expose(e, &req, p, make([]step.ExposureMemo, len(p.alts))) // none kept: the queue keeps them
			s.layouts(&req, sp, p, nil, func(bound float64, ordinal int32, zero int8, sched uint16) {
				all = append(all, s.candidate(&req, p, bound, ordinal, zero, sched))
			})
			low := math.Inf(1)
			for _, c := range all[n:] {
				if c.bound < shapes[i].best {
					t.Fatalf("%s: layout bound %v below its shape's best %v", tc.model, c.bound, shapes[i].best)
				}
				low = min(low, c.bound)
			}
			// The best bound is its layouts' lowest, exactly.
			if best := s.bestBound(&req, p); best != low {
				t.Fatalf("%s: shape's best bound %v, its layouts' lowest %v", tc.model, best, low)
			}
		}
		if len(all) != kept || kept == 0 {
			t.Fatalf("%s: %d layouts expanded, %d counted", tc.model, len(all), kept)
		}
		slices.SortFunc(all, func(a, b candidate) int {
			if c := cmp.Compare(a.bound, b.bound); c != 0 {
				return c
			}
			return cmp.Compare(a.ordinal, b.ordinal)
		})
		q := newQueue(e, 2, &req, sp, &enumeration{parts: en.parts, shapes: fresh, kept: kept}, new(buffers))
		popped := 0
		for ; q.peek() != nil; popped++ {
			got := q.pop()
			if popped >= len(all) {
				t.Fatalf("%s: queue has more than %d layouts", tc.model, len(all))
			}
			if want := all[popped]; got.ordinal != want.ordinal || got.bound != want.bound {
				t.Fatalf("%s: layout %d out of order: ordinal %d bound %v, want %d %v", tc.model, popped, got.ordinal, got.bound, want.ordinal, want.bound)
			}
		}
		if popped != len(all) {
			t.Errorf("%s: queue gave %d of %d layouts", tc.model, popped, len(all))
		}
	}
}

// Every layout's headroom bound (candidate.maxHead, its shape's memory lower
// bound's for its ZeRO stage) is at least its memory's headroom: a layout that a
// plan in hand beats with it is set aside without its memory checked.
func TestHeadroomBoundsHold(t *testing.T) {
	checked := 0
	for _, tc := range []struct {
		model    string
		gpus     int
		seq, gbs int
	}{{"llama3-8b", 64, 4096, 256}, {"llama3-70b", 128, 4096, 256}, {"mixtral-8x7b", 32, 4096, 256}, {"gpt3-175b", 256, 2048, 512}} {
		a, err := model.Lookup(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := catalog.Cluster("dgx-h100", tc.gpus/8)
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Model: a.Normalise(), Cluster: cl, GPUs: tc.gpus,
			Training: step.Training{SeqLen: tc.seq, GlobalBatch: tc.gbs, Optimizer: step.AdamMixed(), Precision: step.BF16}}
		// As Search has it: the constraints narrowed to what the framework runs
		// (megatron-core's 1F1B and interleaved schedules).
		if err := req.normalise(); err != nil {
			t.Fatal(err)
		}
		sp := newSpace(&req)
		e := step.New()
		en, err := enumerate(context.Background(), e, &req, sp, &Stats{Pruned: map[string]int{}}, 2, new(buffers))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range en.shapes {
			p := &en.parts[s.part]
			s.layouts(&req, sp, p, nil, func(bound float64, ordinal int32, zero int8, sched uint16) {
				c := s.candidate(&req, p, bound, ordinal, zero, sched)
				r := step.Request{Model: req.Model, Training: req.Training, Cluster: p.alts[0].cluster, Ranks: p.alts[0].ranks, Layout: c.layoutWith(&req)}
				mem, err := e.Memory(r)
				if err != nil {
					t.Fatalf("%s %+v: %v", tc.model, r.Layout, err)
				}
				if mem.Headroom > c.maxHead+1e-9 {
					t.Fatalf("%s %+v: headroom %.6g GB, bound %.6g", tc.model, r.Layout, mem.Headroom, c.maxHead)
				}
				checked++
			})
		}
	}
	t.Logf("%d layouts checked", checked)
}
