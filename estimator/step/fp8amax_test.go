package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Transformer Engine's delayed scaling reduces the amaxes of a model chunk's fp8
// tensors (MAX) over Megatron-Core's amax reduction group, the TP × CP × DP ranks
// of a stage (parallel_state.get_amax_reduction_group(with_context_parallel=True)),
// when the chunk's outer fp8_autocast exits and when its backward ends: one fp32
// per fp8 tensor, three per GEMM forward, two backward (Transformer Engine's
// num_gemms × 3 / × 2 fp8 metadata). Llama 3 8B at TP 2 × PP 2 × DP 8 on 4 nodes:
// 4 GEMMs a layer, 16 layers a stage, 192 and 128 amaxes, on the 2 stages' groups
// of 16 (ranks tp + 2·dp + 16·pp), once per micro-batch each, each stage's at its
// own time in the pipeline (priced as stage 0's group alone, as the model prices a
// stage's collectives); 8 micro-batches at GBS 64, micro-batch 1.
// Current scaling and bf16 reduce nothing here.
func TestFP8DelayedAmaxReduction(t *testing.T) {
	e := step.New()
	m := collective.NewModel(collective.Default())
	cl := cluster(t, "dgx-h100", 4)
	run := func(prec step.Precision, recipe step.FP8Recipe) step.Result {
		t.Helper()
		r, err := e.Estimate(step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cl,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: "megatron-core", Optimizer: step.AdamMixed(),
				Precision: prec, FP8Recipe: recipe},
			Layout: step.Layout{TP: 2, PP: 2, DP: 8, MicroBatch: 1, SP: true, ZeRO: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	amaxCalls := func(r step.Result) []step.CommCall { return commsWhen(r, "amax reduction") }
	var groups [][]int
	for pp := range 2 {
		var g []int
		for dp := range 8 {
			g = append(g, 2*dp+16*pp, 2*dp+1+16*pp)
		}
		groups = append(groups, g)
	}
	p, err := collective.PlaceGroups(cl, groups[:1])
	if err != nil {
		t.Fatal(err)
	}
	r := run(step.FP8, step.FP8Delayed)
	calls := amaxCalls(r)
	if len(calls) != 2 {
		t.Fatalf("delayed scaling: %d amax reductions listed, want forward and backward", len(calls))
	}
	gemms := 4.0 * float64(arch(t, "llama3-8b").Layers) / 2
	for i, per := range []float64{3, 2} {
		c := calls[i]
		want, err := m.Estimate(p, collective.AllReduce, per*gemms*4, collective.Options{Reduction: collective.MaxFloat32})
		if err != nil {
			t.Fatal(err)
		}
		if c.Group != 16 || c.Concurrent != 1 || c.Bytes != per*gemms*4 || c.PerStep != float64(r.MicroBatches) || math.Abs(c.TimeUs-want.TimeUs) > 1e-6 {
			t.Errorf("%+v, want %g bytes over stage 0's group of 16, %.1f µs, %d a step", c, per*gemms*4, want.TimeUs, r.MicroBatches)
		}
	}
	if r.MicroBatches != 8 {
		t.Errorf("%d micro-batches, want 8", r.MicroBatches)
	}
	// The DP term holds them: delayed minus current scaling is exactly the two
	// reductions per micro-batch (nothing else of the data-parallel pricing
	// depends on the recipe here: fp8 weights off).
	cur := run(step.FP8, step.FP8Current)
	if c := amaxCalls(cur); len(c) != 0 {
		t.Errorf("current scaling: %d amax reductions listed, want none", len(c))
	}
	got := r.Breakdown.Exposed[step.CommDP] - cur.Breakdown.Exposed[step.CommDP]
	want := float64(r.MicroBatches) * (calls[0].TimeUs + calls[1].TimeUs) * 1e-6
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("DP exposed %.1f µs above current scaling's, want %.1f µs", 1e6*got, 1e6*want)
	}
	if c := amaxCalls(run(step.BF16, "")); len(c) != 0 {
		t.Errorf("bf16: %d amax reductions listed, want none", len(c))
	}
}

// The amax all-reduces take the maximum of fp32 values, for which NCCL has no NVLS
// kernel (ncclNvlsSupported, src/include/device.h): on GB200 NVL72 racks with NVLS
// on they run as with NVLS off. Llama 3 8B at TP 2 × DP 32 on one rack segment of
// 16 trays (the amax group of delayed scaling its 64 GPUs, where a sum of the same
// bytes runs on NVLS), delayed scaling: every amax call is priced with the
// algorithm and time of the same rack with NVLS off, none on NVLS. (Current
// scaling's amax all-reduces run over a TP group, smaller than a rack segment,
// where the model prices no NVLS for any reduction.)
func TestAmaxReductionsRunWithoutNVLS(t *testing.T) {
	e := step.New()
	m := collective.NewModel(collective.Default())
	build := func(nvls bool) *topology.Cluster {
		spec := cluster(t, "gb200-nvl72", 16).Spec
		spec.Intra.DomainNodes, spec.Intra.NVLS = 16, nvls
		c, err := spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	on, off := build(true), build(false)
	all := make([]int, 64)
	for i := range all {
		all[i] = i
	}
	p, err := collective.Place(on, all, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := m.Estimate(p, collective.AllReduce, 96, collective.Options{}); err != nil || sum.Algo != collective.NVLS {
		t.Fatalf("a 96 B sum over the rack segment: %s (%v), want NVLS", sum.Algo, err)
	}
	for _, recipe := range []step.FP8Recipe{step.FP8Delayed} {
		run := func(cl *topology.Cluster) step.Result {
			t.Helper()
			r, err := e.Estimate(step.Request{
				Model: arch(t, "llama3-8b"), Cluster: cl,
				Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: "megatron-core", Optimizer: step.AdamMixed(),
					Precision: step.FP8, FP8Recipe: recipe},
				Layout: step.Layout{TP: 2, DP: 32, MicroBatch: 1, SP: true, ZeRO: 1},
			})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		rOn, rOff := run(on), run(off)
		amaxOn, amaxOff := commsWhen(rOn, "amax"), commsWhen(rOff, "amax")
		if len(amaxOn) == 0 || len(amaxOn) != len(amaxOff) {
			t.Fatalf("%s: %d amax calls with NVLS on, %d off", recipe, len(amaxOn), len(amaxOff))
		}
		for i, c := range amaxOn {
			o := amaxOff[i]
			if c.Algorithm == "nvls" || c.Algorithm == "nvlstree" || c.Algorithm != o.Algorithm || c.TimeUs != o.TimeUs {
				t.Errorf("%s: %s over %d ranks with NVLS on: %s %.1f µs, want NVLS off's %s %.1f µs", recipe, c.When, c.Group, c.Algorithm, c.TimeUs, o.Algorithm, o.TimeUs)
			}
		}
	}
}
