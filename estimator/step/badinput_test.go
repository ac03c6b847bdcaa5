package step_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

// ZeRO-3 on a model whose per-layer weight gathers take far longer than the layer's
// compute: the gathers are exposed, and the first gather and last reduce-scatter of
// the step must not be taken out of the hidden time a second time (it went
// negative). Exposed plus hidden is still the time of every call.
func TestZeRO3SlowGathersHideNothingNegative(t *testing.T) {
	r := step.Request{
		Model:    model.Arch{Name: "wide", Layers: 1, Hidden: 16384, Heads: 128, FFN: 65536, Vocab: 1000},
		Cluster:  cluster(t, "dgx-h100", 8),
		Training: step.Training{SeqLen: 1, GlobalBatch: 64},
		Layout:   step.Layout{DP: 64, MicroBatch: 1, ZeRO: 3},
	}
	for _, layers := range []int{1, 2, 8} {
		r.Model.Layers = layers
		res, err := step.New().Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		hidden, exposed := res.Breakdown.Hidden[step.CommZeRO3], res.Breakdown.Exposed[step.CommZeRO3]
		if hidden < 0 || exposed <= 0 {
			t.Errorf("%d layers: ZeRO-3 hidden %v s, exposed %v s", layers, hidden, exposed)
		}
		calls := 0.0
		for _, c := range res.Comms {
			if c.Kind == step.CommZeRO3 {
				calls += c.TimeUs * 1e-6 * c.PerStep
			}
		}
		if math.Abs(hidden+exposed-calls) > 1e-9*calls {
			t.Errorf("%d layers: hidden %v + exposed %v ≠ calls %v", layers, hidden, exposed, calls)
		}
	}
}

// Training.Validate is the estimator's own check of a training setup, with its
// defaults; the planner applies it to a whole search.
func TestTrainingValidate(t *testing.T) {
	ok := step.Training{SeqLen: 4096, GlobalTokens: 4096 * 64}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid training rejected: %v", err)
	}
	// The default framework, megatron-core, keeps Adam's mixed-precision states but
	// accumulates and reduces the gradients in fp32 under bf16 (Megatron-LM's
	// arguments.py: accumulate_allreduce_grads_in_fp32): 4 B a parameter.
	want := step.AdamMixed()
	want.GradBytes = 4
	if n := ok.Normalise(); n.GlobalBatch != 64 || n.Precision != step.BF16 || n.Optimizer != want {
		t.Errorf("defaults: %+v", n)
	}
	for field, edit := range map[string]func(*step.Training){
		"training.seq_len":                func(t *step.Training) { t.SeqLen = 0 },
		"training.global_tokens":          func(t *step.Training) { t.GlobalTokens++ },
		"training.global_batch":           func(t *step.Training) { t.GlobalTokens, t.GlobalBatch = 0, step.MaxBatch+1 },
		"training.precision":              func(t *step.Training) { t.Precision = "int4" },
		"training.optimizer.weight_bytes": func(t *step.Training) { t.Optimizer = step.Optimizer{Name: "named only"} },
		"training.optimizer.grad_bytes":   func(t *step.Training) { t.Optimizer = step.Optimizer{WeightBytes: 2, GradBytes: math.NaN()} },
		"training.optimizer.state_bytes": func(t *step.Training) {
			t.Optimizer = step.Optimizer{WeightBytes: 2, GradBytes: 2, StateBytes: math.Inf(1)}
		},
	} {
		tr := ok
		edit(&tr)
		err := tr.Validate()
		if err == nil || !strings.Contains(err.Error(), field+": ") {
			t.Errorf("%s: got %v", field, err)
		}
	}
}

// A precision or GPU the estimator is not calibrated for is refused naming the field
// to change, and the error is still ErrUnsupported.
func TestSupportsNamesTheField(t *testing.T) {
	a100, _ := catalog.GPU("A100-80GB")
	h100, _ := catalog.GPU("H100-SXM")
	fp32only := h100
	fp32only.PeakTFLOPS = map[hardware.DType]float64{hardware.FP32: 60}
	e := step.New()
	for _, tc := range []struct {
		gpu   hardware.GPU
		p     step.Precision
		field string
	}{
		{a100, step.FP8, "training.precision"},
		{fp32only, step.BF16, "cluster.gpu.peak_tflops"},
	} {
		err := e.Supports(tc.gpu, tc.p)
		var fe *invalid.Error
		if !errors.Is(err, step.ErrUnsupported) || !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s in %s: got %v, want ErrUnsupported naming %s", tc.gpu.Name, tc.p, err, tc.field)
		}
	}
	if err := e.Supports(h100, step.FP8); err != nil {
		t.Errorf("H100 fp8: %v", err)
	}
	r := step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-a100", 1),
		Training: step.Training{SeqLen: 2048, GlobalBatch: 8, Precision: step.FP8}, Layout: step.Layout{DP: 8, MicroBatch: 1}}
	if _, err := e.Estimate(r); !errors.Is(err, step.ErrUnsupported) || !strings.Contains(err.Error(), "training.precision: ") {
		t.Errorf("estimate fp8 on A100: %v", err)
	}
}

// A cluster at the edges its spec allows — every rate at hardware.MinRate or
// MaxRate, efficiencies at their minimum, latencies at their maximum — still gives
// a finite, positive estimate for a large model. A bandwidth of 9e-308 GB/s (which
// a spec used to accept) made every collective infinitely slow.
func TestClusterAtTheBoundsGivesFiniteEstimates(t *testing.T) {
	for _, rate := range []float64{hardware.MinRate, hardware.MaxRate} {
		s, err := catalog.System("dgx-h100")
		if err != nil {
			t.Fatal(err)
		}
		s.Nodes = 4
		s.GPU.PeakTFLOPS = map[hardware.DType]float64{hardware.BF16: rate, hardware.FP8: rate}
		s.GPU.MemoryGB, s.GPU.MemoryBandwidthGBps, s.GPU.NVLinkGBps = rate, rate, rate
		s.Intra.GPUBandwidthGBps, s.Intra.Efficiency, s.Intra.LatencyUs = rate, topology.MinEfficiency, topology.MaxLatencyUs
		s.NICs.Gbps, s.NICs.Efficiency, s.NICs.LatencyUs = rate, topology.MinEfficiency, topology.MaxLatencyUs
		s.Network.SpineLatencyUs = topology.MaxLatencyUs
		c, err := s.Build()
		if err != nil {
			t.Fatalf("rate %g: %v", rate, err)
		}
		r := step.Request{Model: arch(t, "llama3-405b"), Cluster: c, Training: step.Training{SeqLen: 1 << 16, GlobalBatch: 1 << 12},
			Layout: step.Layout{TP: 8, PP: 2, DP: 2, MicroBatch: 64, ZeRO: 3}}
		res, err := step.New().Estimate(r)
		if err != nil {
			t.Fatalf("rate %g: %v", rate, err)
		}
		for name, v := range map[string]float64{"step time": res.StepTime, "tokens/s": res.Throughput.TokensPerSec, "MFU": res.Throughput.MFU,
			"memory": res.Memory.Total} {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("rate %g: %s %v", rate, name, v)
			}
		}
		s.Intra.GPUBandwidthGBps = 9e-308
		if _, err := s.Build(); err == nil || !strings.Contains(err.Error(), "intra.gpu_bandwidth_gbps") {
			t.Errorf("a denormal bandwidth: %v", err)
		}
	}
}

// A parameter's weight and its gradient are each stored, in at least one bit: a
// weight_bytes or grad_bytes below 1/8 byte (1e-300 priced the weights at nothing
// and the memory answer with them) is refused naming the field; one bit is taken.
func TestOptimizerBytesBelowOneBitRefused(t *testing.T) {
	ok := step.Training{SeqLen: 4096, GlobalTokens: 4096 * 64}
	for _, tc := range []struct {
		o     step.Optimizer
		field string
	}{
		{step.Optimizer{WeightBytes: 1e-300, GradBytes: 2, StateBytes: 12}, "training.optimizer.weight_bytes"},
		{step.Optimizer{WeightBytes: 2, GradBytes: 0.1, StateBytes: 12}, "training.optimizer.grad_bytes"},
		{step.Optimizer{WeightBytes: 0.125, GradBytes: 0.125, StateBytes: 1e-300}, ""},
	} {
		tr := ok
		tr.Optimizer = tc.o
		err := tr.Validate()
		if tc.field == "" && err != nil || tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field+": ")) {
			t.Errorf("%+v: got %v, want a violation of %q", tc.o, err, tc.field)
		}
	}
}
