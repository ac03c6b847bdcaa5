package service

import (
	"context"
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A what-if at 1, a part at its full speed, is valid (0 is none, 1 the healthy
// speed) but cannot change the answer: it is named in a warning, as the other
// fields that cannot are; it was answered as if not given, without a word. A part
// below 1 is no such field.
func TestWhatIfAtFullSpeedWarns(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	step := func(slow, nic, link float64) *pb.EstimateStepRequest {
		return &pb.EstimateStepRequest{
			Model:        &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
			Cluster:      &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 2},
			Training:     &pb.Training{SeqLen: 4096, GlobalBatch: 64},
			Layout:       &pb.Layout{Tp: 2, Pp: 1, Dp: 8, MicroBatch: 1, Zero: 1},
			SlowGpuSpeed: slow, DegradedNicSpeed: nic, DegradedLinkSpeed: link,
		}
	}
	for _, c := range []struct {
		slow, nic, link float64
		want            []string
	}{
		{1, 0, 0, []string{"slow_gpu_speed: no effect"}},
		{0, 1, 1, []string{"degraded_nic_speed: no effect", "degraded_link_speed: no effect"}},
		{0.5, 0, 0, nil},
	} {
		resp, err := s.EstimateStep(ctx, step(c.slow, c.nic, c.link))
		if err != nil {
			t.Fatal(err)
		}
		ws := resp.GetEstimate().GetWarnings()
		if len(ws) != len(c.want) {
			t.Errorf("what-ifs %v %v %v: warnings %q, want %q", c.slow, c.nic, c.link, ws, c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(ws[i], w) {
				t.Errorf("what-ifs %v %v %v: warning %q, want %q", c.slow, c.nic, c.link, ws[i], w)
			}
		}
	}
	plan, err := s.EstimatePlan(ctx, &pb.EstimatePlanRequest{
		Model:    &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Gpus: 16, TopK: 1, SlowGpuSpeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ws := plan.GetPlans()[0].GetEstimate().GetWarnings(); len(ws) != 1 || !strings.HasPrefix(ws[0], "slow_gpu_speed: no effect") {
		t.Errorf("a search with slow_gpu_speed 1: warnings %q", ws)
	}
}
