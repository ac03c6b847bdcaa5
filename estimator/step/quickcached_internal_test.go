package step

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/topology"
)

// quickCachedLayouts are layouts of 64 GPUs across the fields the layers' times and
// their cache keys depend on: TP with and without SP and its overlap, CP ring and
// all-to-all, EP and expert TP, micro-batch, every recomputation, activation
// offload, fp8 weights, and the schedules and ZeRO stages that change the estimate
// around the layers.
func quickCachedLayouts(moe bool) []Layout {
	var out []Layout
	i := 0
	for _, tp := range []int{1, 2, 8} {
		for _, cp := range []int{1, 2} {
			for _, pp := range []int{1, 2, 4} {
				dp := 64 / (tp * cp * pp)
				for _, mbs := range []int{1, 2} {
					for _, rc := range []Recompute{RecomputeNone, RecomputeSelective, RecomputeFull, RecomputeOps} {
						for _, sched := range []Schedule{OneFOneB, Interleaved, ZeroBubble, DualPipe} {
							i++
							l := Layout{TP: tp, CP: cp, PP: pp, DP: dp, MicroBatch: mbs, Recompute: rc, SP: tp > 1 && i%3 != 0,
								Schedule: sched, ZeRO: i % 4, OverlapTP: tp > 1 && i%2 == 0, CPAllToAll: cp > 1 && i%5 == 0,
								OffloadActivations: i%7 == 0, FP8Params: i%11 == 0}
							if sched == Interleaved {
								l.VirtualStages = 2
							}
							if rc == RecomputeSelective && i%2 == 0 {
								l.RecomputeModules = []string{"mlp", "moe"}
							}
							if moe {
								l.EP = []int{1, 2, 4, 8}[i%4]
								if i%3 == 0 {
									l.ETP = 1
								}
							}
							out = append(out, l)
						}
					}
				}
			}
		}
	}
	return out
}

// TestQuickCachedIsQuick prices layouts with the layers' times a cache took while
// bounding them (as a search's enumeration leaves its caches) and without: every
// result, or error, is the same, for dense and MoE models in bf16 and fp8. A cache
// whose times were changed is used when it is of the request's estimator, model,
// training and cluster (the test would see wrong times), and not when it is of
// another cluster, training or model.
func TestQuickCachedIsQuick(t *testing.T) {
	mustCl := func(nodes int) *topology.Cluster {
		cl, err := catalog.Cluster("dgx-h100", nodes)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl, other := mustCl(8), mustCl(8)
	e := New()
	small, err := model.Lookup("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	priced, same := 0, 0
	for _, name := range []string{"llama3-70b", "mixtral-8x7b"} {
		a, err := model.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range []Precision{BF16, FP8} {
			tr := Training{SeqLen: 4096, GlobalBatch: 256, Precision: prec}
			var c BoundsCache
			c.ResetFor(e, a, tr, cl)
			layouts := quickCachedLayouts(a.MoE != nil)
			for _, l := range layouts {
				e.LowerBoundsCached(Request{Model: a, Training: tr, Cluster: cl, Layout: l}, &c)
			}
			for _, l := range layouts {
				r := Request{Model: a, Training: tr, Cluster: cl, Layout: l}
				want, errW := e.Quick(r)
				got, errG := e.QuickCached(r, &c)
				if fmt.Sprint(errG) != fmt.Sprint(errW) || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s %s %+v: cached %+v (%v), want %+v (%v)", name, prec, l, got.StepTime, errG, want.StepTime, errW)
				}
				if errW == nil {
					priced++
				}
			}
			// Times changed in the cache: used for this cluster, not for another.
			for k, lt := range c.layers {
				lt.fwd *= 2
				c.layers[k] = lt
			}
			differ := 0
			for _, l := range layouts {
				r := Request{Model: a, Training: tr, Cluster: cl, Layout: l}
				want, errW := e.Quick(r)
				if errW != nil {
					continue
				}
				if got, _ := e.QuickCached(r, &c); got.StepTime != want.StepTime {
					differ++
				}
				for _, o := range []Request{{Model: a, Training: tr, Cluster: other, Layout: l}, {Model: a, Training: Training{SeqLen: 4096, GlobalBatch: 512, Precision: prec}, Cluster: cl, Layout: l},
					{Model: small, Training: tr, Cluster: cl, Layout: l}} {
					want, errW := e.Quick(o)
					got, errG := e.QuickCached(o, &c)
					if fmt.Sprint(errG) != fmt.Sprint(errW) || !reflect.DeepEqual(got, want) {
						t.Fatalf("%s %s %+v: a cache of another search was used", name, prec, l)
					}
					same++
				}
			}
			if differ == 0 {
				t.Errorf("%s %s: the changed times were never used", name, prec)
			}
		}
	}
	if priced < 500 || same < 1500 {
		t.Fatalf("only %d layouts priced, %d checked against other searches' caches", priced, same)
	}
	t.Logf("%d layouts priced alike, %d against other searches' caches", priced, same)
}
