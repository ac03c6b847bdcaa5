package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// An evaluation step's forward pass quantizes its fp8 operands along the rows only
// (Transformer Engine asks for column-wise data only when the backward needs it):
// BackwardOnlyCasts is what a training forward casts beyond that. For Llama 3 8B
// under MXFP8 on a B200 with Megatron-Core (no measured cast rates: each axis is a
// read of 2 B and a write of 1 B at the elementwise rate), per layer and token the
// matmul inputs are the QKV input, the attention output, the MLP input and the
// gated activation, 4096 + 4096 + 4096 + 14 336 elements, and the weights, cast in
// every forward under MXFP8, 2·4096² + 2·4096·1024 + 3·4096·14 336 elements: their
// column-wise axis, 3 B each over the 32 layers of one 8192-token micro-batch. In
// 16 bits there is nothing, nor under torchao's rowwise recipe, whose forward casts
// along the rows alone.
func TestBackwardOnlyCasts(t *testing.T) {
	req := func(p step.Precision, rec step.FP8Recipe, fw string) step.Request {
		zero := 1
		if fw == "torchtitan" {
			zero = 3 // FSDP2
		}
		return step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "hgx-b200", 1),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 8, Precision: p, FP8Recipe: rec, Framework: fw},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, ZeRO: zero, MicroBatch: 1, Recompute: step.RecomputeNone}}
	}
	e := step.New()
	got, err := e.BackwardOnlyCasts(req(step.FP8, step.FP8MXFP8, "megatron-core"))
	if err != nil {
		t.Fatal(err)
	}
	const h, kv, ffn, tokens, layers = 4096.0, 1024.0, 14336.0, 8192.0, 32.0
	elements := tokens*(3*h+ffn) + 2*h*h + 2*h*kv + 3*h*ffn
	hbm := cluster(t, "hgx-b200", 1).GPU().MemoryBandwidthGBps * 1e9 * step.DefaultConstants().HBMEfficiency
	if want := layers * 3 * elements / hbm; math.Abs(got-want) > 1e-9*want {
		t.Errorf("MXFP8: backward-only casts %.6f ms, want %.6f ms", got*1e3, want*1e3)
	}
	for _, c := range []struct {
		p   step.Precision
		rec step.FP8Recipe
		fw  string
	}{{step.BF16, "", "megatron-core"}, {step.FP8, step.FP8Rowwise, "torchtitan"}} {
		got, err := e.BackwardOnlyCasts(req(c.p, c.rec, c.fw))
		if err != nil || got != 0 {
			t.Errorf("%s %s %s: backward-only casts %g s (%v), want 0", c.p, c.rec, c.fw, got, err)
		}
	}
	bad := req(step.FP8, step.FP8MXFP8, "megatron-core")
	bad.Training.SeqLen = -1
	if _, err := e.BackwardOnlyCasts(bad); err == nil {
		t.Error("a negative sequence length accepted")
	}
}
