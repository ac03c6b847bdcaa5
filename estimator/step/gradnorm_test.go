package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Megatron-Core's optimizers clip by the global gradient norm: one fp32 summed
// over the optimizer's gradient-statistics group — every rank under the
// distributed optimizer, the TP × PP ranks of a replica without it — and read back
// by the host (clip_grads.py get_grad_norm_fp32, .item(); optimizer/__init__.py at
// 25.09-alpha.rc1 and core_v0.13.1). The call is priced as the collective model
// prices a 4-byte all-reduce on those groups, placed here from the rank numbering
// (TP fastest, PP slowest), and it is exposed: with DP 1 nothing else is data
// parallel, so it is the whole DP term. Frameworks outside Megatron-Core's
// optimizers (megatron-lm-2021) do not pay it.
func TestGradNormAllReduce(t *testing.T) {
	e := step.New()
	m := collective.NewModel(collective.Default())
	price := func(cl *topology.Cluster, groups [][]int) float64 {
		t.Helper()
		p, err := collective.PlaceGroups(cl, groups[:1])
		if err != nil {
			t.Fatal(err)
		}
		est, err := m.Estimate(p, collective.AllReduce, 4, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return est.TimeUs * 1e-6
	}
	run := func(framework string, cl *topology.Cluster, l step.Layout) step.Result {
		t.Helper()
		r, err := e.Estimate(step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cl,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: framework, Optimizer: step.AdamMixed()},
			Layout:   l,
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	normCall := func(r step.Result) *step.CommCall {
		for i, c := range r.Comms {
			if strings.Contains(c.When, "gradient norm") {
				return &r.Comms[i]
			}
		}
		return nil
	}
	seq := func(from, n int) []int {
		g := make([]int, n)
		for i := range g {
			g[i] = from + i
		}
		return g
	}

	// Distributed optimizer on 4 nodes (32 GPUs): TP 8 × PP 4 × DP 1, one group of all 32.
	cl4 := cluster(t, "dgx-h100", 4)
	r := run("megatron-core", cl4, step.Layout{TP: 8, PP: 4, DP: 1, MicroBatch: 1, SP: true, ZeRO: 1})
	want := price(cl4, [][]int{seq(0, 32)})
	c := normCall(r)
	if c == nil {
		t.Fatal("ZeRO-1: no gradient-norm all-reduce listed")
	}
	if c.Group != 32 || c.Bytes != 4 || c.PerStep != 1 || c.Op != collective.AllReduce.String() {
		t.Errorf("ZeRO-1: %+v, want one 4-byte all-reduce over all 32 GPUs a step", *c)
	}
	if got := r.Breakdown.Exposed[step.CommDP]; math.Abs(got-want) > 1e-9 {
		t.Errorf("ZeRO-1, DP 1: DP exposed %.1f µs, want the norm's all-reduce over 32 GPUs, %.1f µs", 1e6*got, 1e6*want)
	}
	// 16 nodes: the same group spans more of the network and costs more.
	r16 := run("megatron-core", cluster(t, "dgx-h100", 16), step.Layout{TP: 8, PP: 16, DP: 1, MicroBatch: 1, SP: true, ZeRO: 1})
	if got := r16.Breakdown.Exposed[step.CommDP]; !(got > want) {
		t.Errorf("the norm over 128 GPUs %.1f µs, not above its %.1f µs over 32", 1e6*got, 1e6*want)
	}

	// Without the distributed optimizer, the model-parallel groups: TP 4 × PP 2 of
	// each of 4 replicas on 4 nodes, ranks r = tp + 4·dp + 16·pp.
	r0 := run("megatron-core", cl4, step.Layout{TP: 4, PP: 2, DP: 4, MicroBatch: 1, SP: true})
	var groups [][]int
	for dp := range 4 {
		var g []int
		for pp := range 2 {
			g = append(g, seq(4*dp+16*pp, 4)...)
		}
		groups = append(groups, g)
	}
	want0 := price(cl4, groups)
	c = normCall(r0)
	if c == nil {
		t.Fatal("ZeRO-0: no gradient-norm all-reduce listed")
	}
	if c.Group != 8 || c.Concurrent != 4 || math.Abs(c.TimeUs*1e-6-want0) > 1e-9 {
		t.Errorf("ZeRO-0: %+v, want the 4 TP×PP groups of 8 at once, %.1f µs", *c, 1e6*want0)
	}
	// One GPU of model parallelism: no group, no call.
	if c := normCall(run("megatron-core", cl4, step.Layout{TP: 1, PP: 1, DP: 32, MicroBatch: 1})); c != nil {
		t.Errorf("ZeRO-0 at TP 1, PP 1: %+v listed, want none", *c)
	}
	// Megatron-LM of 2021 is not priced with Megatron-Core's optimizers.
	if c := normCall(run("megatron-lm-2021", cl4, step.Layout{TP: 8, PP: 4, DP: 1, MicroBatch: 1})); c != nil {
		t.Errorf("megatron-lm-2021: %+v listed, want none", *c)
	}
}

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
	amaxCalls := func(r step.Result) []step.CommCall {
		var out []step.CommCall
		for _, c := range r.Comms {
			if strings.Contains(c.When, "amax reduction") {
				out = append(out, c)
			}
		}
		return out
	}
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
		want, err := m.Estimate(p, collective.AllReduce, per*gemms*4, collective.Options{})
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
