package step_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// ZeRO-1's parameter all-gather: after the optimizer and waited for (Megatron-LM's
// default), or bucket by bucket under the next forward (Megatron-Core's
// overlap_param_gather, on in NeMo's recipes; no framework's default, see
// Training.ParamGather).
func TestParamGatherOverlap(t *testing.T) {
	e := step.New()
	at := func(framework string, pg step.ParamGather, bucket float64) step.Result {
		t.Helper()
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 4),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 32, Framework: framework, ParamGather: pg, DPBucketParams: bucket, Optimizer: step.AdamMixed()},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 32, MicroBatch: 1, ZeRO: 1},
		}
		r, err := e.Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	same := func(what string, a, b step.Result) {
		t.Helper()
		if math.Abs(a.StepTime-b.StepTime) > 1e-12*a.StepTime {
			t.Errorf("%s: step %.6f vs %.6f s", what, a.StepTime, b.StepTime)
		}
	}
	same("megatron-core's default: exposed", at("megatron-core", "", 0), at("megatron-core", step.ParamGatherExposed, 0))
	same("nemo's default: exposed", at("nemo", "", 0), at("nemo", step.ParamGatherExposed, 0))

	exp, ov := at("megatron-core", step.ParamGatherExposed, 0), at("megatron-core", step.ParamGatherOverlapped, 0)
	// 8.03 G parameters in 40 M-parameter buckets: about 200 gathers, of which
	// only the first waits when each is shorter than its 40 M parameters' forward
	// (1/200 of the micro-batch's forward; an all-gather of 80 MB over 32 H100s
	// on 400 Gb/s takes about 2 ms, the forward of 1/200 of Llama 3 8B on 4096
	// tokens about 1.5–2 ms).
	saved := exp.Breakdown.Exposed[step.CommDP] - ov.Breakdown.Exposed[step.CommDP]
	if !(saved > 0) {
		t.Errorf("overlapped: DP exposed %.4f s, not below exposed %.4f s", ov.Breakdown.Exposed[step.CommDP], exp.Breakdown.Exposed[step.CommDP])
	}
	if !(ov.Breakdown.Hidden[step.CommDP] > exp.Breakdown.Hidden[step.CommDP]) {
		t.Errorf("overlapped: hidden DP %.4f s, want above %.4f s", ov.Breakdown.Hidden[step.CommDP], exp.Breakdown.Hidden[step.CommDP])
	}
	// One bucket holding every parameter: the whole gather is the first bucket,
	// waited for, as without overlap (the reduce-scatter's hiding changes with the
	// bucket too, the same in both).
	wholeExp, wholeOv := at("megatron-core", step.ParamGatherExposed, 1e12), at("megatron-core", step.ParamGatherOverlapped, 1e12)
	if d := wholeExp.Breakdown.Exposed[step.CommDP] - wholeOv.Breakdown.Exposed[step.CommDP]; math.Abs(d) > 1e-9 {
		t.Errorf("one bucket: overlapped exposes %.6f s less than exposed, want the same", d)
	}
	t.Logf("DP exposed %.1f ms after the optimizer, %.1f ms overlapped (40 M buckets), %.1f ms overlapped in one bucket",
		1e3*exp.Breakdown.Exposed[step.CommDP], 1e3*ov.Breakdown.Exposed[step.CommDP], 1e3*wholeOv.Breakdown.Exposed[step.CommDP])

	req := step.Request{
		Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 8, ParamGather: "sometimes"},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1, ZeRO: 1},
	}
	_, err := e.Estimate(req)
	var inv *invalid.Error
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "training.param_gather") {
		t.Errorf("unknown param_gather: got %v, want an error naming training.param_gather", err)
	}
}

// TestMXFP8ParamGatherIn16Bits: Megatron-Core's distributed optimizer all-gathers
// MXFP8 weights in 16 bits (a bf16 view of the gradient buffer, quantised by the
// copy after the gather: param_and_grad_buffer.py _ParamAndGradBuffer,
// shared_buffer), where a per-tensor recipe's fp8 weights are gathered in 1 B.
// One bucket holding every parameter, so the whole gather is exposed.
func TestMXFP8ParamGatherIn16Bits(t *testing.T) {
	e := step.New()
	dp := func(rec step.FP8Recipe, fp8Params bool) float64 {
		t.Helper()
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, "hgx-b200", 4),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 32, Precision: step.FP8, FP8Recipe: rec, FP8Params: fp8Params,
				DPBucketParams: 1e12, Optimizer: step.AdamMixed()},
			Layout: step.Layout{TP: 1, PP: 1, DP: 32, MicroBatch: 1, ZeRO: 1},
		}
		r, err := e.Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Breakdown.Exposed[step.CommDP]
	}
	mx16, mx8 := dp(step.FP8MXFP8, false), dp(step.FP8MXFP8, true)
	if math.Abs(mx8-mx16) > 1e-9 {
		t.Errorf("mxfp8: data-parallel exposed %.4f s with fp8 weights, %.4f s without: want the same 16-bit gather", mx8, mx16)
	}
	cur16, cur8 := dp(step.FP8Current, false), dp(step.FP8Current, true)
	// Llama 3 8B's matmul weights are 6.98 of its 8.03 G parameters: in 1 B they
	// take 0.43 of the 16-bit gather off (about a fifth of the DP exposed, which
	// also holds the reduce-scatter's unhidden part).
	if !(cur8 < cur16-0.1*cur16) {
		t.Errorf("current scaling: data-parallel exposed %.4f s with fp8 weights, want well below %.4f s without", cur8, cur16)
	}
	t.Logf("DP exposed: mxfp8 %.1f / %.1f ms, current scaling %.1f / %.1f ms (16-bit / fp8 weights)", 1e3*mx16, 1e3*mx8, 1e3*cur16, 1e3*cur8)
}

// TestMXFP8WeightsCastOncePerStep: MXFP8 weights (FP8Params) are quantised along both
// axes from the gathered 16 bits once a step (param_and_grad_buffer.py
// _post_param_sync), so with one micro-batch a step the forward pays the same whole
// cast as 16-bit weights cast in every forward, and with four it pays it once where
// 16-bit weights pay it four times.
func TestMXFP8WeightsCastOncePerStep(t *testing.T) {
	e := step.New()
	fwd := func(fp8Params bool, ga int) float64 {
		t.Helper()
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, "hgx-b200", 1),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 8 * ga, Precision: step.FP8, FP8Recipe: step.FP8MXFP8, FP8Params: fp8Params,
				Optimizer: step.AdamMixed()},
			Layout: step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1, ZeRO: 1},
		}
		r, err := e.Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Breakdown.Forward
	}
	one16, one8 := fwd(false, 1), fwd(true, 1)
	if math.Abs(one8-one16) > 1e-9 {
		t.Errorf("one micro-batch: forward %.4f s with MXFP8 weights, %.4f s with 16-bit ones: want the same whole cast", one8, one16)
	}
	four16, four8 := fwd(false, 4), fwd(true, 4)
	// Three casts fewer: 3 × 6.98 G matmul weights × at least 6 B at 8 TB/s is
	// above 15 ms.
	if !(four16-four8 > 0.015) {
		t.Errorf("four micro-batches: forward %.4f s with MXFP8 weights, %.4f s with 16-bit ones: want three whole casts fewer", four8, four16)
	}
	t.Logf("forward: one micro-batch %.1f / %.1f ms, four %.1f / %.1f ms (16-bit / MXFP8 weights)", 1e3*one16, 1e3*one8, 1e3*four16, 1e3*four8)
}
