package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Megatron-Core's recompute modules (TransformerConfig.recompute_modules) trade
// activation memory for forward work run again; bad lists name the field.
func TestRecomputeModules(t *testing.T) {
	req := deepSeekV3AsRun(t)
	run := func(mods ...string) step.Result {
		r := req
		r.Layout.RecomputeModules = mods
		res, err := step.New().Estimate(r)
		if err != nil {
			t.Fatalf("%v: %v", mods, err)
		}
		return res
	}
	attn, norm, all := run(), run("layernorm"), run("layernorm", "mla_up_proj", "moe_act")
	if !(all.Memory.ActivationBytesPerLayer < norm.Memory.ActivationBytesPerLayer && norm.Memory.ActivationBytesPerLayer < attn.Memory.ActivationBytesPerLayer) {
		t.Errorf("activations per layer: core_attn %.0f MB, layernorm %.0f MB, three modules %.0f MB", attn.Memory.ActivationBytesPerLayer/1e6, norm.Memory.ActivationBytesPerLayer/1e6, all.Memory.ActivationBytesPerLayer/1e6)
	}
	// What is recomputed costs time: the up-projection GEMMs more than the norms.
	if !(all.Breakdown.Recompute > norm.Breakdown.Recompute && norm.Breakdown.Recompute > 0) {
		t.Errorf("recompute: layernorm %.3f s, three modules %.3f s", norm.Breakdown.Recompute, all.Breakdown.Recompute)
	}
	for _, c := range []struct {
		name  string
		edit  func(*step.Request)
		field string
	}{
		{"unknown module", func(r *step.Request) { r.Layout.RecomputeModules = []string{"layernorm", "attention"} }, "layout.recompute_modules[1]"},
		{"modules without selective", func(r *step.Request) { r.Layout.Recompute = step.RecomputeFull }, "layout.recompute_modules"},
		{"mla_up_proj without MLA", func(r *step.Request) {
			r.Model = arch(t, "mixtral-8x7b")
			r.Model.MTPLayers = 0
			r.Layout = step.Layout{TP: 1, PP: 1, DP: 8, EP: 8, MicroBatch: 1, Recompute: step.RecomputeSelective, RecomputeModules: []string{"mla_up_proj"}}
			r.Cluster = cluster(t, "dgx-h100", 1)
			r.Training.GlobalBatch = 64
		}, "layout.recompute_modules[0]"},
		{"fp8 activations in bf16", func(r *step.Request) {
			r.Training.Precision, r.Training.Framework = step.BF16, "megatron-core"
			r.Training.FP8Activations = true
		}, "training.fp8_activations"},
	} {
		r := req
		c.edit(&r)
		if _, err := step.New().Estimate(r); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.field)
		}
	}
}

// DeepSeek-V3's multi-token-prediction module: a transformer layer (MoE), the
// 2h → h projection and its norms — 11.7 B, 13.6 B with its own copies of the
// embedding and output layer as the released checkpoint stores them, against the
// report's 14 B (§4.2: "671B … and 14B of the MTP module"). On the last stage it
// adds one more layer and one more output pass, so DualPipe's outermost pair paces
// the pipeline. Its weights sit on rank 0 (stages 0 and 15: 3 + 3 layers, the first
// three dense), which holds less than a middle pair's 8 MoE layers even with the
// module, so the busiest rank's weights do not grow with it.
func TestMultiTokenPrediction(t *testing.T) {
	a := arch(t, "deepseek-v3")
	p := a.Params()
	if got := (a.MTPParamsPerModule() + p.Embedding + p.Output) / 1e9; math.Abs(got/14-1) > 0.05 {
		t.Errorf("MTP module with its embedding and head %.1f B, published 14 B", got)
	}
	with := deepSeekV3AsRun(t)
	without := with
	without.Model.MTPLayers = 0
	rw, err := step.New().Estimate(with)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := step.New().Estimate(without)
	if err != nil {
		t.Fatal(err)
	}
	if !(rw.StepTime > ro.StepTime && rw.Memory.Weights >= ro.Memory.Weights) {
		t.Errorf("with MTP %.2f s, %.1f GB of weights; without %.2f s, %.1f GB", rw.StepTime, rw.Memory.Weights, ro.StepTime, ro.Memory.Weights)
	}
	if rw.Throughput.MFU >= ro.Throughput.MFU {
		t.Errorf("MFU %.3f with MTP, %.3f without: model FLOPs leave the module out", rw.Throughput.MFU, ro.Throughput.MFU)
	}
	t.Logf("DeepSeek-V3 step %.2f s with the MTP module, %.2f s without; weights %.1f / %.1f GB on the busiest rank", rw.StepTime, ro.StepTime, rw.Memory.Weights, ro.Memory.Weights)
	bad := a
	bad.MTPLayers = 99
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "mtp_layers") {
		t.Errorf("mtp_layers 99: %v", err)
	}
}

// A deduplicating dispatcher (hai-llm: DeepEP's normal kernels) sends each token
// across the network once per node it reaches, in fp8 under fp8 training:
// DeepSeek-V3's 8 experts on at most 4 of the 8 nodes of EP 64 reach 3.60 nodes,
// so the dispatch carries 3.60/8 of the copies at 1.03 B per element and the
// combine 3.60/8 in 16 bits, against 8 copies in 16 bits each way.
func TestDedupDispatch(t *testing.T) {
	ds := deepSeekV3AsRun(t)
	mc := ds
	mc.Training.Framework = "megatron-core"
	mc.Layout.Schedule = step.OneFOneB // Megatron-Core runs no DualPipe; the all-to-alls' bytes are the same
	r1, err := step.New().Estimate(ds)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := step.New().Estimate(mc)
	if err != nil {
		t.Fatal(err)
	}
	dis, _ := commOf(r1, "ep", "alltoall", "dispatch")
	com, _ := commOf(r1, "ep", "alltoall", "combine")
	full, _ := commOf(r2, "ep", "alltoall", "")
	reach := 4 * (1 - math.Pow(0.75, 8))
	if r := com.Bytes / full.Bytes; math.Abs(r-reach/8) > 1e-9 {
		t.Errorf("combine bytes ×%.4f, want %.4f", r, reach/8)
	}
	if r := dis.Bytes / full.Bytes; math.Abs(r-reach/8*(1+4.0/128)/2) > 1e-9 {
		t.Errorf("dispatch bytes ×%.4f, want %.4f", r, reach/8*(1+4.0/128)/2)
	}
	if !(dis.TimeUs < com.TimeUs && com.TimeUs < full.TimeUs) {
		t.Errorf("all-to-all times: dispatch %.0f µs, combine %.0f µs, per-expert copies %.0f µs", dis.TimeUs, com.TimeUs, full.TimeUs)
	}
	// Megatron-Core with DeepEP (--moe-enable-deepep): the same per-node copies,
	// dispatched in 16 bits.
	deepep := mc
	deepep.Training.MoEDispatcher = step.DispatchDeepEP
	r3, err := step.New().Estimate(deepep)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := commOf(r3, "ep", "alltoall", ""); math.Abs(c.Bytes/full.Bytes-reach/8) > 1e-9 {
		t.Errorf("megatron-core with deepep: all-to-all bytes ×%.4f, want %.4f", c.Bytes/full.Bytes, reach/8)
	}
	bad := mc
	bad.Training.MoEDispatcher = "allgather"
	if _, err := step.New().Estimate(bad); err == nil || !strings.Contains(err.Error(), "training.moe_dispatcher") {
		t.Errorf("dispatcher allgather: %v", err)
	}
}
