package step_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// Transformer Engine (v1.12 on) runs a sliding window under context parallelism
// only by all-to-alls (framework.Runs.NoSlidingWindowRingCP): under the
// Megatron-Core and NeMo profiles a sliding-window model with ring CP 2 is refused
// naming layout.cp_all_to_all and the framework; the same layout by all-to-alls is
// priced, as are ring CP without a sliding window and ring CP under torchtitan
// (PyTorch's context_parallel, no such rule stated).
func TestSlidingWindowRingCPRefused(t *testing.T) {
	e := step.New()
	estimate := func(fw string, window int, a2a bool) error {
		a := arch(t, "llama3-8b")
		a.SlidingWindow = window
		zero := 1
		if fw == "torchtitan" {
			zero = 3 // FSDP2: torchtitan has no optimizer-only sharding
		}
		_, err := e.Estimate(step.Request{Model: a, Cluster: cluster(t, "dgx-h100", 8),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 64, Framework: fw},
			Layout:   step.Layout{TP: 1, CP: 2, DP: 32, MicroBatch: 1, ZeRO: zero, CPAllToAll: a2a}})
		return err
	}
	for _, fw := range []string{"", "megatron-core", "nemo", "nemo-25.04"} {
		err := estimate(fw, 1024, false)
		var fe *invalid.Error
		if !errors.As(err, &fe) || fe.Field != "layout.cp_all_to_all" || !strings.Contains(err.Error(), "sliding") {
			t.Errorf("%q: ring CP 2 with a 1024-token window: got %v, want layout.cp_all_to_all refused", fw, err)
		}
		if err := estimate(fw, 1024, true); err != nil {
			t.Errorf("%q: CP 2 by all-to-alls with a window: %v", fw, err)
		}
		if err := estimate(fw, 0, false); err != nil {
			t.Errorf("%q: ring CP 2 without a window: %v", fw, err)
		}
	}
	if err := estimate("torchtitan", 1024, false); err != nil {
		t.Errorf("torchtitan: ring CP 2 with a window: %v", err)
	}
}
