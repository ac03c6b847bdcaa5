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
