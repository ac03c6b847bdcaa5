package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/planner"
)

// Placement counts the other jobs on busy leaves. A 64-GPU MoE job (Qwen3-30B-A3B
// with EP 64: expert-parallel all-to-alls over every rank) on two 32-node leaf
// groups behind a 4:1 spine, every GPU the free map does not list held by other
// jobs. With the busy nodes' NICs sending across the spine, the job keeps an eighth
// of each loaded leaf's uplinks (max(U − B·b, U·J/(J+B)) with U = 64 NICs' worth, B
// = 224 busy and J = 32 job NICs): 8 whole nodes split over the two leaves, which
// tie with 8 nodes of one leaf on an idle spine (half of each leaf's all-to-all
// crosses 64 NICs' worth of uplinks), take about twice as long, and the planner
// takes the compact placement over packing half-free nodes of both leaves.
func TestBusyLeavesLoadTheSpine(t *testing.T) {
	spec, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes, spec.Network.Oversubscription = 64, 4
	cl, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	free := planner.FreeMap{}
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 32, 33, 34, 35, 36, 37, 38, 39} {
		free[n] = []int{0, 1, 2, 3}
	}
	for n := 40; n < 48; n++ {
		free[n] = []int{0, 1, 2, 3, 4, 5, 6, 7}
	}
	req := planner.Request{Model: mustModel(t, "qwen3-30b-a3b"), Cluster: cl, GPUs: 64, TopK: 3, Free: free,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 512}, Constraints: planner.Constraints{EP: []int{64}}}
	e := step.New()
	res, err := planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	best := res.Top[0]
	t.Logf("best: %+v on %d leaves, %d whole nodes left free, %.3f s", best.Estimate.Layout, best.Placement.Leaves, best.Placement.FreeWholeNodes, best.Estimate.StepTime)
	if best.Placement.Leaves != 1 || best.Placement.Nodes[0].Node != 40 {
		t.Errorf("best plan on %d leaves: %+v", best.Placement.Leaves, best.Placement.Nodes)
	}
	// The best layout packed over both leaves: with the other jobs' traffic it is
	// well over the tolerance slower than compact, and slower than the same
	// placement on an idle spine (its estimate says why).
	l := best.Estimate.Layout
	pin := req
	pin.PlacementTolerance = new(1.0) // keep whole nodes free at any cost: the packing placement
	pin.Constraints = planner.Constraints{TP: []int{l.TP}, PP: []int{l.PP}, CP: []int{l.CP}, EP: []int{l.EP}, ZeRO: []int{l.ZeRO},
		MicroBatch: []int{l.MicroBatch}, Recompute: []step.Recompute{l.Recompute}, SP: []bool{l.SP}, Schedules: []step.Schedule{l.Schedule}}
	packed, err := planner.Search(context.Background(), e, pin)
	if err != nil || len(packed.Top) == 0 {
		t.Fatalf("packed: %v", err)
	}
	p := packed.Top[0]
	if p.Placement.Leaves != 2 || !(p.Estimate.StepTime > best.Estimate.StepTime*(1+planner.DefaultPlacementTolerance)) {
		t.Errorf("the best layout packed: %d leaves, %.3f s against %.3f s compact", p.Placement.Leaves, p.Estimate.StepTime, best.Estimate.StepTime)
	}
	idle, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: cl, Layout: p.Estimate.Layout, Ranks: mustRanks(t, cl, p.Placement)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("packed over two loaded leaves %.3f s, on an idle spine %.3f s, compact %.3f s", p.Estimate.StepTime, idle.StepTime, best.Estimate.StepTime)
	if !(p.Estimate.StepTime > 1.5*idle.StepTime) {
		t.Errorf("packed: %.3f s loaded, %.3f s idle", p.Estimate.StepTime, idle.StepTime)
	}

	// Two free maps of 8 whole nodes: 4 on each of two loaded leaves, or 8 on one.
	// On an idle spine the split job loses nothing (its 32 NICs a leaf send half
	// their all-to-all across 64 NICs' worth of uplinks) and the two tie; with the
	// other jobs' traffic the split one is far slower.
	step1 := func(nodes []int) planner.Plan {
		r := req
		r.Free = planner.FreeMap{}
		for _, n := range nodes {
			r.Free[n] = []int{0, 1, 2, 3, 4, 5, 6, 7}
		}
		r.Constraints = pin.Constraints
		res, err := planner.Search(context.Background(), e, r)
		if err != nil || len(res.Top) == 0 {
			t.Fatalf("free nodes %v: %v %s", nodes, err, res.NoPlan)
		}
		return res.Top[0]
	}
	split, one := step1([]int{0, 1, 2, 3, 32, 33, 34, 35}), step1([]int{0, 1, 2, 3, 4, 5, 6, 7})
	splitIdle, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: cl, Layout: split.Estimate.Layout, Ranks: mustRanks(t, cl, split.Placement)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("8 whole nodes over two loaded leaves %.3f s (idle spine %.3f s), on one leaf %.3f s", split.Estimate.StepTime, splitIdle.StepTime, one.Estimate.StepTime)
	if split.Placement.Leaves != 2 || one.Placement.Leaves != 1 || splitIdle.StepTime > one.Estimate.StepTime*(1+planner.DefaultPlacementTolerance) ||
		!(split.Estimate.StepTime > 1.5*one.Estimate.StepTime) {
		t.Errorf("split %d leaves %.3f s (idle %.3f s), one leaf %d: %.3f s", split.Placement.Leaves, split.Estimate.StepTime, splitIdle.StepTime, one.Placement.Leaves, one.Estimate.StepTime)
	}
	said := false
	for _, a := range p.Estimate.Assumptions {
		said = said || strings.Contains(a, "busy NICs")
	}
	if !said {
		t.Errorf("the packed plan's assumptions do not name the other jobs' traffic: %q", p.Estimate.Assumptions)
	}
}

func mustRanks(t *testing.T, cl *topology.Cluster, pl planner.Placement) *step.RankMap {
	t.Helper()
	m, err := step.NewRankMap(cl, pl.Ranks)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
