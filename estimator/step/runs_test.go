package step_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// A layout its framework cannot run (framework.Profile.Runs) is refused, naming the
// layout field and the framework, where megatron-core (fsdp for a schedule
// Megatron-Core does not run) prices it.
func TestFrameworkRunsRefused(t *testing.T) {
	e := step.New()
	for _, c := range []struct {
		framework string
		l         step.Layout
		field     string
	}{
		{"megatron-lm-2021", step.Layout{TP: 2, PP: 4, Schedule: step.ZeroBubble}, "layout.schedule"},
		{"megatron-lm-2021", step.Layout{TP: 8, ZeRO: 1}, "layout.zero"},
		{"megatron-lm-2021", step.Layout{TP: 4, SP: true}, "layout.sp"},
		{"megatron-lm-2021", step.Layout{TP: 4, CP: 2}, "layout.cp"},
		{"megatron-lm-2021", step.Layout{TP: 4, SP: false, OverlapTP: true}, "layout.overlap_tp"},
		{"megatron-lm-2021", step.Layout{TP: 4, Recompute: step.RecomputeSelective}, "layout.recompute"},
		{"deepspeed-2021", step.Layout{TP: 1, PP: 2, ZeRO: 2}, "layout.zero"},
		{"deepspeed-2021", step.Layout{TP: 1, PP: 4, VirtualStages: 2}, "layout.schedule"},
		{"deepspeed-2021", step.Layout{TP: 1, ZeRO: 3}, ""},
		{"deepspeed", step.Layout{TP: 1, PP: 2, ZeRO: 3}, "layout.zero"},
		{"deepspeed", step.Layout{TP: 1, PP: 2, ZeRO: 1}, ""},
		{"megatron-deepspeed", step.Layout{TP: 1, PP: 4, Schedule: step.ZeroBubble}, "layout.schedule"},
		{"nemo-25.04", step.Layout{TP: 1, ZeRO: 3}, "layout.zero"},
		{"nemo", step.Layout{TP: 1, PP: 4, Schedule: step.DualPipe}, "layout.schedule"},
		{"torchtitan", step.Layout{TP: 1, ZeRO: 1}, "layout.zero"},
		{"torchtitan", step.Layout{TP: 1, PP: 4, ZeRO: 1, Schedule: step.ZeroBubbleV}, ""},
		{"torchtitan", step.Layout{TP: 1, PP: 4, Schedule: step.ZeroBubbleV}, "layout.zero"}, // DDP only alone
		// torchtitan's checkpointing is none, full, op-level or every n-th block whole:
		// no attention-core recomputation.
		{"torchtitan", step.Layout{TP: 2, SP: true, ZeRO: 3, Recompute: step.RecomputeSelective}, "layout.recompute"},
		{"torchtitan-2024", step.Layout{TP: 2, SP: true, ZeRO: 3, Recompute: step.RecomputeSelective}, "layout.recompute"},
		{"torchtitan-2024-04", step.Layout{TP: 1, ZeRO: 3, Recompute: step.RecomputeSelective}, "layout.recompute"},
		{"torchtitan", step.Layout{TP: 2, SP: true, ZeRO: 3, Recompute: step.RecomputeOps}, ""},
		{"torchtitan", step.Layout{TP: 1, ZeRO: 3, Recompute: step.RecomputeFull, RecomputeLayers: 16}, ""},
		{"composer", step.Layout{TP: 1, PP: 2}, "layout.pp"},
		{"composer", step.Layout{TP: 1, CP: 2}, "layout.cp"},
		{"hai-llm", step.Layout{TP: 1, PP: 2, Schedule: step.GPipe}, "layout.schedule"},
		// Megatron-Core's schedules are 1F1B and interleaved (get_forward_backward_func):
		// the default profile refuses the zero-bubble schedules, DualPipe and GPipe.
		{"megatron-core", step.Layout{TP: 1, PP: 4, Schedule: step.DualPipe}, "layout.schedule"},
		{"megatron-core", step.Layout{TP: 1, PP: 4, Schedule: step.ZeroBubble}, "layout.schedule"},
		{"megatron-core", step.Layout{TP: 1, PP: 4, Schedule: step.ZeroBubbleV}, "layout.schedule"},
		{"megatron-core", step.Layout{TP: 1, PP: 2, Schedule: step.GPipe}, "layout.schedule"},
		{"megatron-core", step.Layout{TP: 1, PP: 4, Schedule: step.Interleaved, VirtualStages: 2}, ""},
		{"", step.Layout{TP: 2, PP: 4, Schedule: step.DualPipe}, "layout.schedule"},
	} {
		c.l.DP, c.l.MicroBatch = 8/(c.l.TP*max(1, c.l.PP)*max(1, c.l.CP)), 1
		if c.l.OverlapTP {
			c.l.SP = true // megatron-core overlaps TP with sequence parallelism
		}
		estimate := func(fw string) error {
			_, err := e.Estimate(step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
				Training: step.Training{SeqLen: 4096, GlobalBatch: 16 * c.l.DP, Framework: fw, Optimizer: step.AdamMixed()},
				Layout:   c.l})
			return err
		}
		// The reference that prices the layout: megatron-core, or for a schedule it
		// does not run fsdp, whose profile states no limit.
		ref := "megatron-core"
		if c.l.PP > 1 && c.l.Schedule != "" && c.l.Schedule != step.OneFOneB && c.l.Schedule != step.Interleaved {
			ref = "fsdp"
		}
		if err := estimate(ref); err != nil {
			t.Errorf("%+v under %s: %v", c.l, ref, err)
		}
		err := estimate(c.framework)
		name := c.framework
		if name == "" {
			name = "megatron-core" // the default profile names itself
		}
		var inv *invalid.Error
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v under %s: %v, want priced", c.l, c.framework, err)
		case c.field != "" && (!errors.As(err, &inv) || !strings.Contains(err.Error(), c.field+":") || !strings.Contains(err.Error(), name)):
			t.Errorf("%+v under %s: got %v, want an error naming %s and the framework", c.l, name, err, c.field)
		}
	}
}
