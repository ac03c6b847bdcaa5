package server

import (
	"context"
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Each what-if is its own answer: asked after the same request without it, it is
// not served from the cache, and it reaches the estimate and the planner.
func TestWhatIfsOverTheWire(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	base, err := c.EstimateStep(ctx, stepRequest())
	if err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string]func(*pb.EstimateStepRequest){
		"slow_gpu_speed":      func(r *pb.EstimateStepRequest) { r.SlowGpuSpeed = 0.8 },
		"degraded_nic_speed":  func(r *pb.EstimateStepRequest) { r.DegradedNicSpeed = 0.25 },
		"degraded_link_speed": func(r *pb.EstimateStepRequest) { r.DegradedLinkSpeed = 0.25 },
	} {
		req := stepRequest()
		set(req)
		r, err := c.EstimateStep(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.GetCached() || !(r.GetEstimate().GetStepTimeS() > base.GetEstimate().GetStepTimeS()) {
			t.Errorf("%s: step %v s (cached %v), healthy %v s", name, r.GetEstimate().GetStepTimeS(), r.GetCached(), base.GetEstimate().GetStepTimeS())
		}
		if !strings.Contains(strings.Join(r.GetEstimate().GetAssumptions(), "\n"), "what-if") {
			t.Errorf("%s: the assumptions do not state the what-if", name)
		}
	}
	bad := stepRequest()
	bad.DegradedNicSpeed = 3
	if _, err := c.EstimateStep(ctx, bad); err == nil || !strings.Contains(err.Error(), "degraded_nic_speed") {
		t.Errorf("degraded_nic_speed 3: %v", err)
	}

	plan, err := c.EstimatePlan(ctx, plannerRequest())
	if err != nil {
		t.Fatal(err)
	}
	req := plannerRequest()
	req.ExcludeNodes = []int32{1}
	req.Gpus = 24
	gone, err := c.EstimatePlan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gone.GetPlans() {
		for _, u := range p.GetPlacement().GetNodes() {
			if u.GetNode() == 1 {
				t.Errorf("plan %d uses the excluded node 1", p.GetRank())
			}
		}
	}
	if !(gone.GetPlans()[0].GetEstimate().GetStepTimeS() > plan.GetPlans()[0].GetEstimate().GetStepTimeS()) {
		t.Errorf("24 GPUs after node 1 failed: %v s, 32 GPUs %v s", gone.GetPlans()[0].GetEstimate().GetStepTimeS(), plan.GetPlans()[0].GetEstimate().GetStepTimeS())
	}
	req = plannerRequest()
	req.ExcludeNodes = []int32{9}
	if _, err := c.EstimatePlan(ctx, req); err == nil || !strings.Contains(err.Error(), "exclude_nodes[0]") {
		t.Errorf("exclude node 9 of 4: %v", err)
	}
}

// A degraded node the scheduler names is avoided when the other nodes host the job,
// is its own answer (not the cache's of the request without it), and each entry is
// checked by its field.
func TestDegradedNodesOverTheWire(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	req := plannerRequest()
	req.Cluster.Nodes = 5
	if _, err := c.EstimatePlan(ctx, req); err != nil {
		t.Fatal(err)
	}
	req.DegradedNodes = []*pb.DegradedNode{{Node: 1, NicSpeed: 0.25}}
	avoided, err := c.EstimatePlan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if avoided.GetCached() || len(avoided.GetPlans()) == 0 {
		t.Fatalf("degraded node 1 of 5: cached %v, %d plans", avoided.GetCached(), len(avoided.GetPlans()))
	}
	for _, p := range avoided.GetPlans() {
		pl := p.GetPlacement()
		if len(pl.GetDegradedNodesUsed()) != 0 || len(pl.GetDegradedNodesAvoided()) != 1 || pl.GetDegradedNodesAvoided()[0] != 1 {
			t.Errorf("plan %d: degraded nodes used %v, avoided %v; want node 1 avoided", p.GetRank(), pl.GetDegradedNodesUsed(), pl.GetDegradedNodesAvoided())
		}
		for _, u := range pl.GetNodes() {
			if u.GetNode() == 1 {
				t.Errorf("plan %d uses the degraded node 1", p.GetRank())
			}
		}
	}
	req.Cluster.Nodes = 4
	used, err := c.EstimatePlan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if u := used.GetPlans()[0].GetPlacement().GetDegradedNodesUsed(); len(u) != 1 || u[0] != 1 {
		t.Errorf("degraded node 1 of 4: used %v, want [1]", u)
	}
	for _, tc := range []struct {
		nodes []*pb.DegradedNode
		field string
	}{
		{[]*pb.DegradedNode{{Node: 4, NicSpeed: 0.5}}, "degraded_nodes[0].node"},
		{[]*pb.DegradedNode{{Node: 1, NicSpeed: 0.5}, {Node: 1, GpuSpeed: 0.5}}, "degraded_nodes[1].node"},
		{[]*pb.DegradedNode{{Node: 1, GpuSpeed: 0.5}, {Node: 2, LinkSpeed: 7}}, "degraded_nodes[1].link_speed"},
		{[]*pb.DegradedNode{{Node: 1}}, "degraded_nodes[0]"},
	} {
		req.DegradedNodes = tc.nodes
		if _, err := c.EstimatePlan(ctx, req); err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "InvalidArgument") {
			t.Errorf("%v: %v; want InvalidArgument naming %s", tc.nodes, err, tc.field)
		}
	}
}
