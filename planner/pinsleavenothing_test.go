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
