package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Megatron-Core's DistributedDataParallel zeroes its whole gradient buffers at the
// start of every step (distributed_data_parallel.py zero_grad_buffer →
// param_and_grad_buffer.py reset: grad_data.zero_()): one write of every gradient
// the rank holds, at HBM speed. Megatron-LM of 2021 kept its gradients in .grad
// unless --use-contiguous-buffers-in-ddp was given (training.py train_step,
// 42c1cf4), so its profile writes nothing.
func TestGradBufferZeroing(t *testing.T) {
	e := step.New()
	cl := cluster(t, "dgx-h100", 1)
	at := func(framework string, tp int) step.Result {
		t.Helper()
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cl,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: framework, Optimizer: step.AdamMixed()},
			Layout:   step.Layout{TP: tp, PP: 1, DP: 8 / tp, MicroBatch: 1},
		}
		r, err := e.Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	hbm := cl.GPU().MemoryBandwidthGBps * 1e9 * step.DefaultConstants().HBMEfficiency
	for _, tp := range []int{1, 2} {
		core, old := at("megatron-core", tp), at("megatron-lm-2021", tp)
		// The rank's gradients as the memory model counts them (whole under ZeRO-0).
		want := core.Memory.Gradients * 1e9 / hbm
		got := core.Breakdown.Optimizer - old.Breakdown.Optimizer
		if math.Abs(got-want) > 1e-3*want {
			t.Errorf("TP %d: megatron-core's optimizer term %.3f ms above megatron-lm-2021's, want %.3f ms (%.2f GB of gradients written once)",
				tp, 1e3*got, 1e3*want, core.Memory.Gradients)
		}
	}
}

// Megatron-Core casts the updated master weights into the fp8 primary weights
// every step through Transformer Engine (quantize_master_weights), looping over
// every fp8 weight tensor of the model chunk on the host: 7 eager operators each
// under delayed scaling, 3 under current scaling. The loop runs after the
// grad-norm's synchronisation, beside the update the GPU runs; beyond it the GPU
// waits. Qwen3-30B-A3B (128 experts) in fp8 with fp8 weights on 64 H100: a layer
// holds the fused QKV, the output projection and two weights per local expert
// (TEGroupedLinear keeps one per GEMM), 34 at EP 8 (16 local experts), 10 at EP 32.
// Megatron-FSDP (ZeRO-2 and ZeRO-3 of the Megatron-Core frameworks) steps with the
// same distributed optimizer and casts every fp8 parameter through the same
// Transformer Engine loop (param_and_grad_buffer.py
// copy_main_weights_to_model_weights), so the loop is priced at every ZeRO stage.
func TestFP8MasterCastHost(t *testing.T) {
	e := step.New()
	k := step.DefaultConstants()
	var notes []string
	zero := 1
	opt := func(recipe step.FP8Recipe, ep int, fp8Params bool) float64 {
		t.Helper()
		req := step.Request{
			Model: arch(t, "qwen3-30b-a3b"), Cluster: cluster(t, "dgx-h100", 8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: "megatron-core", Optimizer: step.AdamMixed(),
				Precision: step.FP8, FP8Recipe: recipe, FP8Params: fp8Params},
			Layout: step.Layout{TP: 1, PP: 1, DP: 64, EP: ep, MicroBatch: 1, ZeRO: zero},
		}
		r, err := e.Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		notes = r.Assumptions
		return r.Breakdown.Optimizer
	}
	opt(step.FP8Delayed, 8, true)
	if !strings.Contains(strings.Join(notes, "\n"), "host loop of 7 operators") {
		t.Errorf("the answer's assumptions do not name the cast loop: %q", notes)
	}
	layers := float64(arch(t, "qwen3-30b-a3b").Layers)
	for zero = 1; zero <= 3; zero++ {
		for _, c := range []struct {
			ep      int
			tensors float64 // fp8 weight tensors per layer
		}{{8, 34}, {32, 10}} {
			// Both loops outlast the update here, so the recipes differ by 4
			// operators per tensor whatever the update's time.
			got := opt(step.FP8Delayed, c.ep, true) - opt(step.FP8Current, c.ep, true)
			want := layers * c.tensors * (7 - 3) * k.EagerOpHostUs * 1e-6
			if math.Abs(got-want) > 1e-9 {
				t.Errorf("ZeRO %d, EP %d: delayed scaling's cast loop %.3f ms above current scaling's, want %.3f ms (%.0f tensors × 4 operators × %.0f µs)",
					zero, c.ep, 1e3*got, 1e3*want, layers*c.tensors, k.EagerOpHostUs)
			}
			// Without fp8 weights there is no loop; with them the step waits for
			// the loop less the update it runs beside.
			host := layers * c.tensors * 7 * k.EagerOpHostUs * 1e-6
			without, with := opt(step.FP8Delayed, c.ep, false), opt(step.FP8Delayed, c.ep, true)
			if !(with-without > 0) || with-without > host+1e-12 {
				t.Errorf("ZeRO %d, EP %d: fp8 weights add %.3f ms to the optimizer term, want above 0 and at most the loop's %.3f ms", zero, c.ep, 1e3*(with-without), 1e3*host)
			}
		}
	}
}
