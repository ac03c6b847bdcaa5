package step_test

import (
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// qwen3Overlap is the Megatron-Core MoE team's Qwen3-235B-A22B run on 256 H100 (TP 2 ×
// PP 8 × VP 4 × EP 32 over DeepEP, 128 micro-batches), with or without the EP
// all-to-all overlap, on the given hardware queues.
func qwen3Overlap(t *testing.T, overlap bool, queues int) step.Request {
	return step.Request{Model: arch(t, "qwen3-235b-a22b"), Cluster: cluster(t, "dgx-h100", 32),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 2048, Precision: step.BF16, Framework: "megatron-core",
			MoEDispatcher: step.DispatchDeepEP, NoDropout: true, DeviceMaxConnections: queues},
		Layout: step.Layout{TP: 2, PP: 8, DP: 16, EP: 32, ETP: 1, SP: true, ZeRO: 1, MicroBatch: 1,
			Recompute: step.RecomputeSelective, Schedule: step.Interleaved, VirtualStages: 4, OverlapEP: overlap}}
}

// One hardware queue starts the kernels in launch order: under Megatron-Core's EP
// overlap the forward's dispatch, launched after the expert backward, runs beside
// no compute, so more of the all-to-alls stays exposed than on 32 queues; without
// the overlap the queues change nothing.
func TestDeviceMaxConnectionsEPOverlap(t *testing.T) {
	e := step.New()
	est := func(overlap bool, q int) step.Result {
		r, err := e.Estimate(qwen3Overlap(t, overlap, q))
		if err != nil {
			t.Fatalf("overlap %v, %d queues: %v", overlap, q, err)
		}
		return r
	}
	one, many := est(true, 1), est(true, 32)
	ep := step.CommEP
	if !(one.Breakdown.Exposed[ep] > many.Breakdown.Exposed[ep] && one.StepTime > many.StepTime) {
		t.Errorf("EP overlap: one queue %.3f s (EP exposed %.3f s), 32 queues %.3f s (%.3f s): want one queue slower, more exposed",
			one.StepTime, one.Breakdown.Exposed[ep], many.StepTime, many.Breakdown.Exposed[ep])
	}
	if one.Breakdown.Hidden[ep] >= many.Breakdown.Hidden[ep] {
		t.Errorf("EP overlap hides %.3f s on one queue, %.3f s on 32: one queue never hides more", one.Breakdown.Hidden[ep], many.Breakdown.Hidden[ep])
	}
	t.Logf("EP overlap: one queue %.3f s (EP exposed %.3f s), 32 queues %.3f s (%.3f s)", one.StepTime, one.Breakdown.Exposed[ep], many.StepTime, many.Breakdown.Exposed[ep])
	if !hasNote(one, "hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): 1, the request's; on one queue") {
		t.Errorf("assumptions do not state one queue and what it does: %q", one.Assumptions)
	}
	off1, off32 := est(false, 1), est(false, 32)
	if off1.StepTime != off32.StepTime || off1.Breakdown != off32.Breakdown {
		t.Errorf("without the EP overlap: %.6f s on one queue, %.6f s on 32: want the same", off1.StepTime, off32.StepTime)
	}
}

// Left unstated, the queues are what the framework's launch sets for the layout.
func TestDeviceMaxConnectionsDefault(t *testing.T) {
	e := step.New()
	for _, tc := range []struct {
		name      string
		framework string
		system    string
		overlap   bool
		want      string
	}{
		// Megatron-LM's validate_args asserts 1 under TP > 1 before Blackwell, and
		// only warns with the EP overlap (which wants more): CUDA's default.
		{"megatron-core, H100, TP 2", "megatron-core", "dgx-h100", false, "hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): 1, Megatron-LM's validate_args"},
		{"megatron-core, H100, TP 2, EP overlap", "megatron-core", "dgx-h100", true, "hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): 8, CUDA's default"},
		// NeMo 25.04's PerfEnvPlugin: 1 on Hopper under TP > 1 whatever the overlap.
		{"nemo-25.04, H100, TP 2", "nemo-25.04", "dgx-h100", false, "hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): 1, NeMo's PerfEnvPlugin"},
		{"nemo-25.04, B200, TP 2", "nemo-25.04", "hgx-b200", false, "hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): 32, NeMo's PerfEnvPlugin"},
		// Megatron-Bridge's: 32 with DeepEP when the overlap frees it from 1.
		{"nemo, H100, TP 2, EP overlap", "nemo", "dgx-h100", true, "hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): 32, Megatron-Bridge's PerfEnvPlugin sets it with DeepEP"},
		{"torchtitan, H100", "torchtitan", "dgx-h100", false, "hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): 8, CUDA's default"},
	} {
		req := qwen3Overlap(t, tc.overlap, 0)
		req.Cluster = cluster(t, tc.system, 32)
		req.Training.Framework = tc.framework
		if tc.framework == "torchtitan" {
			req.Layout = step.Layout{TP: 2, PP: 1, DP: 128, EP: 32, ETP: 1, SP: true, ZeRO: 3, MicroBatch: 1, Recompute: step.RecomputeFull}
			req.Training.MoEDispatcher = ""
		}
		r, err := e.Estimate(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !hasNote(r, tc.want) {
			t.Errorf("%s: no assumption %q in %q", tc.name, tc.want, r.Assumptions)
		}
	}
}

// The queues are CUDA's 1 to 32, or 0 for the framework's; anything else is
// refused naming the field.
func TestDeviceMaxConnectionsRefused(t *testing.T) {
	for _, q := range []int{-1, 33, 1 << 20} {
		_, err := step.New().Estimate(qwen3Overlap(t, true, q))
		if err == nil || !strings.Contains(err.Error(), "training.cuda_device_max_connections") {
			t.Errorf("%d queues: %v, want a refusal naming training.cuda_device_max_connections", q, err)
		}
	}
}

func hasNote(r step.Result, prefix string) bool {
	for _, a := range r.Assumptions {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}
