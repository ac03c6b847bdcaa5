package step_test

import (
	"errors"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
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

// BackwardOnlyCasts takes the same requests as Estimate and refuses the same bad
// ones, naming the field, without a panic: the zero request, zero sizes and layout
// degrees, a GPU of a generation without calibrated efficiencies, a GPU without a
// 16-bit rate, fp8 on a GPU without an fp8 rate and a precision that does not exist.
func TestBackwardOnlyCastsRefusesBadRequests(t *testing.T) {
	good := func() step.Request {
		return step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "hgx-b200", 1),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 8, Precision: step.FP8, FP8Recipe: step.FP8MXFP8},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone}}
	}
	withGPU := func(system string, edit func(*hardware.GPU)) *topology.Cluster {
		s, err := catalog.System(system)
		if err != nil {
			t.Fatal(err)
		}
		s.Nodes = 1
		edit(&s.GPU)
		c, err := s.Build()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	e := step.New()
	for _, tc := range []struct {
		name, field string
		edit        func(*step.Request)
	}{
		{"zero request", "cluster", func(r *step.Request) { *r = step.Request{} }},
		{"no model", "model.", func(r *step.Request) { r.Model = model.Arch{} }},
		{"no cluster", "cluster", func(r *step.Request) { r.Cluster = nil }},
		{"zero sequence", "training.seq_len", func(r *step.Request) { r.Training.SeqLen = 0 }},
		{"zero batch", "training.global_batch", func(r *step.Request) { r.Training.GlobalBatch = 0 }},
		{"negative batch", "training.global_batch", func(r *step.Request) { r.Training.GlobalBatch = -1 }},
		{"negative tp", "layout.tp", func(r *step.Request) { r.Layout.TP = -1 }},
		{"zero dp", "layout.dp", func(r *step.Request) { r.Layout.DP = 0 }},
		{"negative dp", "layout.dp", func(r *step.Request) { r.Layout.DP = -1 }},
		{"zero micro-batch", "layout.micro_batch", func(r *step.Request) { r.Layout.MicroBatch = 0 }},
		{"negative micro-batch", "layout.micro_batch", func(r *step.Request) { r.Layout.MicroBatch = -1 }},
		{"unknown precision", "training.precision", func(r *step.Request) { r.Training.Precision = "int4" }},
		{"unknown fp8 recipe", "training.fp8_recipe", func(r *step.Request) { r.Training.FP8Recipe = "fp4" }},
		{"fp8 on an A100", "training.precision", func(r *step.Request) {
			r.Cluster = cluster(t, "dgx-a100", 1)
			r.Training.FP8Recipe = ""
		}},
		// the cluster refuses a generation it does not know (topology's own test);
		// the estimator's is one it holds no efficiency for, below
		{"no 16-bit rate", "cluster.gpu.peak_tflops", func(r *step.Request) {
			r.Cluster = withGPU("hgx-b200", func(g *hardware.GPU) { g.PeakTFLOPS = map[hardware.DType]float64{hardware.FP32: 80} })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.edit(&r)
			var got float64
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic: %v", p)
					}
				}()
				got, err = e.BackwardOnlyCasts(r)
			}()
			if err == nil || !strings.Contains(err.Error(), tc.field) || got != 0 {
				t.Errorf("got %g, %v; want an error naming %s", got, err, tc.field)
			}
		})
	}
	// An estimator without calibrated efficiencies for the GPU's generation.
	k := step.DefaultConstants()
	k.GEMMEfficiency = maps.Clone(k.GEMMEfficiency)
	delete(k.GEMMEfficiency, hardware.Blackwell)
	r := good()
	r.Training.Precision, r.Training.FP8Recipe = step.BF16, ""
	got, err := step.NewWith(k, collective.Default()).BackwardOnlyCasts(r)
	var fe *invalid.Error
	if !errors.Is(err, step.ErrUnsupported) || !errors.As(err, &fe) || fe.Field != "cluster.gpu.arch" || got != 0 {
		t.Errorf("uncalibrated generation: got %g, %v; want ErrUnsupported naming cluster.gpu.arch", got, err)
	}
}
