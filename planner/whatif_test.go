package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// After a node fails the job runs on the others: no plan uses the excluded node,
// the largest job shrinks to what is left, and the caller's free map is untouched.
func TestExcludeNodes(t *testing.T) {
	req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 4), MaxGPUs: 32,
		Training: step.Training{SeqLen: 8192, GlobalBatch: 256}, TopK: 5}
	all, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.ExcludeNodes = []int{2}
	left, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Top) == 0 || len(all.Top) == 0 {
		t.Fatal("no plan")
	}
	maxGPUs := 0
	for _, p := range left.Top {
		maxGPUs = max(maxGPUs, p.GPUs)
		for _, u := range p.Placement.Nodes {
			if u.Node == 2 {
				t.Errorf("plan %d (%d GPUs) uses the excluded node 2", p.Rank, p.GPUs)
			}
		}
	}
	if maxGPUs > 24 {
		t.Errorf("a plan uses %d GPUs of the 24 left", maxGPUs)
	}
	t.Logf("4 nodes: best %d GPUs %.3f s; node 2 gone: best %d GPUs %.3f s (%s)", all.Top[0].GPUs, all.Top[0].Estimate.StepTime,
		left.Top[0].GPUs, left.Top[0].Estimate.StepTime, left.Top[0].Layout.RankOrder)
	if !(left.Top[0].Estimate.StepTime > all.Top[0].Estimate.StepTime) {
		t.Errorf("3 nodes step %.3f s not longer than 4 nodes' %.3f s", left.Top[0].Estimate.StepTime, all.Top[0].Estimate.StepTime)
	}
	req.ExcludeNodes = []int{0, 1, 2, 3}
	if _, err := planner.Search(context.Background(), step.New(), req); err == nil || !strings.Contains(err.Error(), "exclude_nodes") {
		t.Errorf("every node excluded: %v", err)
	}
	req.ExcludeNodes = []int{7}
	if _, err := planner.Search(context.Background(), step.New(), req); err == nil || !strings.Contains(err.Error(), "exclude_nodes[0]") {
		t.Errorf("node 7 of 4: %v", err)
	}
}

// With one node's NICs at a quarter of their bandwidth every plan is slower, and
// re-planning for it finds a layout at least as good under the degradation as the
// healthy cluster's best layout would be.
func TestDegradedNICPlan(t *testing.T) {
	req := planner.Request{Model: mustModel(t, "llama3-70b"), Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 64,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 256}, TopK: 3}
	e := step.New()
	healthy, err := planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	req.DegradedNICSpeed = 0.25
	degraded, err := planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	hb, db := healthy.Top[0], degraded.Top[0]
	old, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: hb.Layout, DegradedNICSpeed: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("healthy best %+v: %.3f s; with the degraded NIC it takes %.3f s; re-planned best %+v: %.3f s",
		hb.Layout, hb.Estimate.StepTime, old.StepTime, db.Layout, db.Estimate.StepTime)
	if !(db.Estimate.StepTime > hb.Estimate.StepTime) {
		t.Errorf("degraded best %.3f s not slower than healthy best %.3f s", db.Estimate.StepTime, hb.Estimate.StepTime)
	}
	if db.Estimate.StepTime > old.StepTime*(1+1e-9) {
		t.Errorf("re-planned best %.3f s slower than the healthy best layout under the same degradation, %.3f s", db.Estimate.StepTime, old.StepTime)
	}
	req.DegradedNICSpeed = 1.5
	if _, err := planner.Search(context.Background(), e, req); err == nil || !strings.Contains(err.Error(), "degraded_nic_speed") {
		t.Errorf("speed 1.5: %v", err)
	}
}

// 70B on one node fits no layout (16 bytes of state a parameter are 140 GB a
// GPU however they are split); with the parameters and optimizer offloaded to
// the host it does, every plan at ZeRO-3.
func TestOffloadPlan(t *testing.T) {
	req := planner.Request{Model: mustModel(t, "llama3-70b"), Cluster: mustCluster(t, "dgx-h100", 1), GPUs: 8,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 16}, TopK: 3}
	none, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range none.Top {
		if p.Estimate.Memory.Fits {
			t.Errorf("without offload plan %d fits: %+v", p.Rank, p.Layout)
		}
	}
	req.Constraints.Offload = step.OffloadParams
	off, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(off.Top) == 0 {
		t.Fatal("no plan with parameter offload")
	}
	if !off.Top[0].Estimate.Memory.Fits {
		t.Error("the best plan with parameter offload does not fit")
	}
	for _, p := range off.Top {
		if p.Layout.Offload != step.OffloadParams || p.Layout.ZeRO != 3 {
			t.Errorf("plan %d: fits %v, offload %q, zero %d", p.Rank, p.Estimate.Memory.Fits, p.Layout.Offload, p.Layout.ZeRO)
		}
	}
	b := off.Top[0]
	t.Logf("best with parameter offload: tp %d pp %d dp %d mbs %d %s, %.2f s, GPU %.1f GB, host %.0f of %.0f GB",
		b.Layout.TP, b.Layout.PP, b.Layout.DP, b.Layout.MicroBatch, b.Layout.Recompute, b.Estimate.StepTime, b.Estimate.Memory.Total, b.Estimate.Memory.Host, b.Estimate.Memory.HostCapacity)
	req.Cluster = mustCluster(t, "aws-p5", 1)
	if _, err := planner.Search(context.Background(), step.New(), req); err == nil || !strings.Contains(err.Error(), "cluster.host") {
		t.Errorf("offload on a cluster without a host description: %v", err)
	}
}

// Placement is searched: on a fragmented two-leaf cluster with an oversubscribed
// spine the planner weighs packing (partial nodes first, whole nodes kept free, the
// job across both leaves) against a compact placement (the one leaf that holds the
// job, whole nodes); it takes the compact one when that is more than the placement
// tolerance faster, and the packing one when asked to keep whole nodes at any cost.
func TestLeafAwarePlacement(t *testing.T) {
	spec, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes, spec.Network.Oversubscription = 64, 4
	cl, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: cl, GPUs: 32, TopK: 3,
		Training: step.Training{SeqLen: 8192, GlobalBatch: 64},
		Free:     planner.FreeMap{0: {0, 1, 2, 3}, 1: {0, 1, 2, 3}, 2: {4, 5, 6, 7}, 3: {4, 5, 6, 7}, 4: all, 32: all, 33: all, 34: all, 35: all}}
	res, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	best := res.Top[0]
	t.Logf("best: %s on %d leaves, %d whole nodes left free, %.3f s", best.Layout.Schedule, best.Placement.Leaves, best.Placement.FreeWholeNodes, best.Estimate.StepTime)
	if best.Placement.Leaves != 1 || best.Placement.Nodes[0].Node != 32 {
		t.Errorf("best plan spans %d leaves: %+v", best.Placement.Leaves, best.Placement.Nodes)
	}
	req.PlacementTolerance = new(1.0)
	keep, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	kb := keep.Top[0]
	t.Logf("keeping whole nodes: %d leaves, %d whole nodes left free, %.3f s", kb.Placement.Leaves, kb.Placement.FreeWholeNodes, kb.Estimate.StepTime)
	if kb.Placement.FreeWholeNodes <= best.Placement.FreeWholeNodes || kb.Placement.Leaves != 2 {
		t.Errorf("with tolerance 1 the best plan leaves %d whole nodes free on %d leaves", kb.Placement.FreeWholeNodes, kb.Placement.Leaves)
	}
	// The default took the compact placement for the best layout, so that layout
	// packed is more than 2 % slower.
	keep1 := req
	keep1.Constraints = planner.Constraints{TP: []int{best.Layout.TP}, PP: []int{best.Layout.PP}, CP: []int{best.Layout.CP},
		ZeRO: []int{best.Layout.ZeRO}, MicroBatch: []int{best.Layout.MicroBatch}, Recompute: []step.Recompute{best.Layout.Recompute},
		SP: []bool{best.Layout.SP}, Schedules: []step.Schedule{best.Layout.Schedule}}
	same, err := planner.Search(context.Background(), step.New(), keep1)
	if err != nil || len(same.Top) == 0 {
		t.Fatal(err)
	}
	t.Logf("the best layout packed: %d leaves, %.3f s", same.Top[0].Placement.Leaves, same.Top[0].Estimate.StepTime)
	if p := same.Top[0]; p.Placement.Leaves != 2 || !(p.Estimate.StepTime > best.Estimate.StepTime*1.02) {
		t.Errorf("the best layout packed: %d leaves, %.3f s against %.3f s compact", p.Placement.Leaves, p.Estimate.StepTime, best.Estimate.StepTime)
	}
	req.PlacementTolerance = new(-1.0)
	if _, err := planner.Search(context.Background(), step.New(), req); err == nil || !strings.Contains(err.Error(), "placement_tolerance") {
		t.Errorf("tolerance -1: %v", err)
	}
}
