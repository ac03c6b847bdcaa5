package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// Pins of the TP switches that no layout the other pins allow can satisfy are
// refused naming the switch and the pin it contradicts. Sequence parallelism and
// TP overlap run with tp > 1 only, and TP overlap with sequence parallelism only
// (the enumeration's rules): sp [true] with tp [1] was answered "no feasible plan:
// the constraints leave no layout to search: constraints.tp [1], …", and
// overlap_tp [true] with sp [false] "…: constraints.schedules [1f1b interleaved]
// (megatron-core's)", a constraint the caller did not give and that was not at
// fault. So is a micro-batch size pinned above max_micro_batch, which bounds the
// sizes searched only when micro_batch is empty: micro_batch [16] with
// max_micro_batch 4 searched micro-batches of 16 without a word.
func TestPinsNoLayoutSatisfiesAreRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*planner.Constraints)
		want []string // in the error, the field first
	}{
		"sp on, tp 1": {func(c *planner.Constraints) { c.SP, c.TP = []bool{true}, []int{1} },
			[]string{"constraints.sp:", "constraints.tp", "[1]"}},
		"overlap_tp on, tp 1": {func(c *planner.Constraints) { c.OverlapTP, c.TP = []bool{true}, []int{1} },
			[]string{"constraints.overlap_tp:", "constraints.tp", "[1]"}},
		"overlap_tp on, sp off": {func(c *planner.Constraints) { c.OverlapTP, c.SP = []bool{true}, []bool{false} },
			[]string{"constraints.overlap_tp:", "constraints.sp"}},
		"micro_batch above max_micro_batch": {func(c *planner.Constraints) { c.MicroBatch, c.MaxMicroBatch = []int{1, 16}, 4 },
			[]string{"constraints.max_micro_batch:", "constraints.micro_batch[1]", "16"}},
	} {
		t.Run(name, func(t *testing.T) {
			req := llama8bRequest(t)
			tc.edit(&req.Constraints)
			_, err := planner.Search(context.Background(), step.New(), req)
			if !invalid.Is(err) {
				t.Fatalf("got %v, want a field error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// What some layout satisfies is searched, as before.
	for name, edit := range map[string]func(*planner.Constraints){
		"sp on or off, tp 1":           func(c *planner.Constraints) { c.SP, c.TP = []bool{true, false}, []int{1} },
		"sp on, tp 1 or 2":             func(c *planner.Constraints) { c.SP, c.TP = []bool{true}, []int{1, 2} },
		"overlap_tp on or off, sp off": func(c *planner.Constraints) { c.OverlapTP, c.SP = []bool{true, false}, []bool{false} },
		"overlap_tp on, sp on or off":  func(c *planner.Constraints) { c.OverlapTP, c.SP = []bool{true}, []bool{false, true} },
		"micro_batch within max":       func(c *planner.Constraints) { c.MicroBatch, c.MaxMicroBatch = []int{1, 2}, 4 },
	} {
		req := llama8bRequest(t)
		edit(&req.Constraints)
		res, err := planner.Search(context.Background(), step.New(), req)
		if err != nil || len(res.Top) == 0 {
			t.Errorf("%s: %d plans, %v (%s)", name, len(res.Top), err, res.NoPlan)
		}
	}
}

// The expert-parallel all-to-all overlap runs where the framework runs it: ep > 1,
// no pipeline or the interleaved schedule, no full recomputation
// (overlapEP, step's validateOverlapEP). Asked for alone against pins that leave it
// no layout, it filtered nothing and the plans came back without it: mixtral-8x7b
// on 64 GPUs with overlap_ep [true], pp [2] and schedules [1f1b] answered three
// plans of pp 2, 1F1B and overlap_ep false; with recompute [full] three of full
// recomputation without it. As with ep [1], the request is refused naming
// overlap_ep and the pins.
func TestEPOverlapPinnedWhereNoLayoutRunsIt(t *testing.T) {
	moe := func(t *testing.T) planner.Request {
		r := llama8bRequest(t)
		r.Model, r.Cluster, r.GPUs = mustModel(t, "mixtral-8x7b"), mustCluster(t, "dgx-h100", 8), 64
		r.Training.SeqLen, r.Training.GlobalBatch = 4096, 512
		r.Constraints.OverlapEP = []bool{true}
		return r
	}
	for name, tc := range map[string]struct {
		edit func(*planner.Constraints)
		want []string
	}{
		"pipeline without interleaving": {func(c *planner.Constraints) { c.PP, c.Schedules = []int{2, 4}, []step.Schedule{step.OneFOneB} },
			[]string{"constraints.overlap_ep:", "constraints.pp", "[2 4]", "constraints.schedules"}},
		"full recomputation": {func(c *planner.Constraints) { c.Recompute = []step.Recompute{step.RecomputeFull} },
			[]string{"constraints.overlap_ep:", "constraints.recompute"}},
	} {
		t.Run(name, func(t *testing.T) {
			req := moe(t)
			tc.edit(&req.Constraints)
			_, err := planner.Search(context.Background(), step.New(), req)
			if !invalid.Is(err) {
				t.Fatalf("got %v, want a field error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// Pins that leave the overlap some layout are searched, and it runs there.
	for name, edit := range map[string]func(*planner.Constraints){
		"pp 1 or 2, 1f1b":   func(c *planner.Constraints) { c.PP, c.Schedules = []int{1, 2}, []step.Schedule{step.OneFOneB} },
		"pp 2, interleaved": func(c *planner.Constraints) { c.PP = []int{2} },
		"full or none":      func(c *planner.Constraints) { c.Recompute = []step.Recompute{step.RecomputeFull, step.RecomputeNone} },
		"on or off, pp 2, 1f1b": func(c *planner.Constraints) {
			c.OverlapEP, c.PP, c.Schedules = []bool{true, false}, []int{2}, []step.Schedule{step.OneFOneB}
		},
	} {
		req := moe(t)
		edit(&req.Constraints)
		res, err := planner.Search(context.Background(), step.New(), req)
		if err != nil || len(res.Top) == 0 {
			t.Errorf("%s: %d plans, %v (%s)", name, len(res.Top), err, res.NoPlan)
		}
	}
}
