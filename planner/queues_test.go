package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// The hardware queues are the job's environment, not a layout: the search keeps the
// request's for every plan, and each plan's assumptions state them. Qwen3-235B-A22B
// on 256 H100 searched among EP-overlap layouts (TP 2, PP 8, EP 32 with the overlap
// and DeepEP): on one queue every plan is priced with the forward's dispatch exposed,
// so the best plan is slower than on 32 queues and what estimate says of its layout
// on one queue.
func TestSearchKeepsTheQueues(t *testing.T) {
	e := step.New()
	search := func(q int) planner.Plan {
		req := planner.Request{Model: mustModel(t, "qwen3-235b-a22b"), Cluster: mustCluster(t, "dgx-h100", 32), GPUs: 256, TopK: 3,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 2048, MoEDispatcher: step.DispatchDeepEP, NoDropout: true, DeviceMaxConnections: q},
			Constraints: planner.Constraints{TP: []int{2}, PP: []int{8}, EP: []int{32}, CP: []int{1}, OverlapEP: []bool{true},
				Schedules: []step.Schedule{step.Interleaved}, VirtualStages: []int{4}}}
		res, err := planner.Search(context.Background(), e, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Top) == 0 {
			t.Fatalf("%d queues: no plan (%s)", q, res.NoPlan)
		}
		for _, p := range res.Top {
			if p.Estimate.Training.DeviceMaxConnections != q {
				t.Errorf("%d queues: plan %+v ran on %d", q, p.Estimate.Layout, p.Estimate.Training.DeviceMaxConnections)
			}
			stated := false
			for _, a := range p.Estimate.Assumptions {
				stated = stated || strings.HasPrefix(a, "hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): ")
			}
			if !stated {
				t.Errorf("%d queues: plan %+v does not state its queues: %q", q, p.Estimate.Layout, p.Estimate.Assumptions)
			}
			r, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: p.Estimate.Layout})
			if err != nil || r.StepTime != p.Estimate.StepTime {
				t.Errorf("%d queues: plan %+v %.4g s, estimate %.4g s (%v)", q, p.Estimate.Layout, p.Estimate.StepTime, r.StepTime, err)
			}
		}
		return res.Top[0]
	}
	one, many := search(1), search(32)
	t.Logf("best plan on one queue %.3f s (%+v), on 32 %.3f s", one.Estimate.StepTime, one.Estimate.Layout, many.Estimate.StepTime)
	if !(one.Estimate.StepTime > many.Estimate.StepTime) {
		t.Errorf("best plan %.4g s on one queue, %.4g s on 32: want slower on one", one.Estimate.StepTime, many.Estimate.StepTime)
	}
}
