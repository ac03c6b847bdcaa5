package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Activation offload on DGX H100 (PCIe Gen5 x16, 63 GB/s at 80 %, two GPUs per
// switch uplink: 25.2 GB/s per GPU): the GPU keeps two layers' activations and the
// host the rest of what 1F1B keeps in flight; every layer's forward takes at least
// its copy to the host, and the backward at least the copy back.
func TestActivationOffload(t *testing.T) {
	req := step.Request{
		Model: arch(t, "llama3-70b"), Cluster: cluster(t, "dgx-h100", 4),
		Training: step.Training{SeqLen: 8192, GlobalBatch: 32},
		Layout:   step.Layout{TP: 8, PP: 4, DP: 1, MicroBatch: 1, SP: true, Recompute: step.RecomputeSelective},
	}
	e := step.New()
	off, err := e.Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Layout.OffloadActivations = true
	on, err := e.Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	per := on.Memory.ActivationBytesPerLayer
	link := 63e9 * 0.8 / 2
	copyS := per / link
	layers := float64(on.StageLayers)
	m := float64(on.MicroBatches)
	t.Logf("activations %.1f → %.1f GB on the GPU, %.1f GB on the host; %.0f MB a layer, %.1f ms a copy; step %.3f → %.3f s (forward %.3f → %.3f s, backward %.3f → %.3f s)",
		off.Memory.Activations, on.Memory.Activations, on.Memory.Host, per/1e6, copyS*1e3, off.StepTime, on.StepTime,
		off.Breakdown.Forward, on.Breakdown.Forward, off.Breakdown.Backward, on.Breakdown.Backward)
	if math.Abs(on.Memory.Activations-2*per/1e9) > 1e-9 {
		t.Errorf("activations on the GPU %.3f GB, want two layers' %.3f GB", on.Memory.Activations, 2*per/1e9)
	}
	if want := (off.Memory.Activations - 2*per/1e9); math.Abs(on.Memory.Host-want) > 1e-6*want {
		t.Errorf("host %.3f GB, want the rest of the stage's in-flight activations, %.3f GB", on.Memory.Host, want)
	}
	if !on.Memory.Fits || on.Memory.Host > on.Memory.HostCapacity {
		t.Errorf("fits %v, host %.1f of %.1f GB", on.Memory.Fits, on.Memory.Host, on.Memory.HostCapacity)
	}
	// The forward and backward passes of the step's micro-batches through the
	// slowest stage each take at least the copies.
	if on.Breakdown.Forward < m*layers*copyS*(1-1e-9) || on.Breakdown.Backward < m*layers*copyS*(1-1e-9) {
		t.Errorf("forward %.3f s, backward %.3f s: under the %.3f s of copies", on.Breakdown.Forward, on.Breakdown.Backward, m*layers*copyS)
	}
	if !(on.StepTime > off.StepTime) || math.Abs(on.Breakdown.Sum()-on.StepTime) > 1e-9*on.StepTime {
		t.Errorf("step %.4f s offloaded, %.4f s not; the breakdown sums to %.4f s", on.StepTime, off.StepTime, on.Breakdown.Sum())
	}
	noted := false
	for _, a := range on.Assumptions {
		noted = noted || strings.Contains(a, "activation offload")
	}
	if !noted {
		t.Errorf("assumptions do not mention the offload: %q", on.Assumptions)
	}
	// With full recomputation only each layer's input is saved: its copy hides
	// under the layer's compute.
	req.Layout.Recompute = step.RecomputeFull
	full, err := e.Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Layout.OffloadActivations = false
	fullOff, err := e.Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	if full.StepTime != fullOff.StepTime {
		t.Errorf("full recomputation: %.4f s offloaded, %.4f s not (the input's copy should hide)", full.StepTime, fullOff.StepTime)
	}

	// Refused where Megatron-Core does not run it, and without a host description.
	bad := req
	bad.Layout.OffloadActivations, bad.Layout.Schedule = true, step.DualPipe
	if _, err := e.Estimate(bad); err == nil || !strings.Contains(err.Error(), "layout.offload_activations") {
		t.Errorf("DualPipe with activation offload: %v", err)
	}
	// Refused under a framework without it (framework.Profile.ActivationOffload):
	// Megatron-Core 0.12, NeMo 25.04, DeepSpeed, torchtitan and HAI-LLM were
	// priced offloading the activations as Megatron-Core of 2026 does.
	for _, fw := range []string{"megatron-core-0.12", "nemo-25.04", "deepspeed", "torchtitan-2025-11", "hai-llm", "megatron-lm-2021"} {
		old := req
		old.Training.Framework, old.Layout.OffloadActivations = fw, true
		if _, err := e.Estimate(old); err == nil || !strings.Contains(err.Error(), "layout.offload_activations: "+fw+" does not offload") {
			t.Errorf("%s with activation offload: %v", fw, err)
		}
	}
	for _, fw := range []string{"megatron-core", "nemo", "fsdp"} { // fsdp: the profile that states no limit
		now := req
		now.Training.Framework, now.Layout.OffloadActivations = fw, true
		if _, err := e.Estimate(now); err != nil {
			t.Errorf("%s with activation offload: %v", fw, err)
		}
	}
	spec := req.Cluster.Spec
	spec.Host = topology.Host{}
	cl, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	noHost := req
	noHost.Cluster, noHost.Layout.OffloadActivations = cl, true
	if _, err := e.Estimate(noHost); err == nil || !strings.Contains(err.Error(), "cluster.host") {
		t.Errorf("activation offload without a host description: %v", err)
	}
}

// fp8 weights as a layout field are the training's: the same estimate either way,
// reported in both, and refused by field without fp8 matmuls.
func TestFP8ParamsLayoutField(t *testing.T) {
	req := step.Request{
		Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 32, Precision: step.FP8},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1, ZeRO: 1},
	}
	e := step.New()
	plain, err := e.Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	byTraining, byLayout := req, req
	byTraining.Training.FP8Params = true
	byLayout.Layout.FP8Params = true
	a, err := e.Estimate(byTraining)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Estimate(byLayout)
	if err != nil {
		t.Fatal(err)
	}
	if a.StepTime != b.StepTime || a.Memory.Total != b.Memory.Total || !a.Layout.FP8Params || !b.Layout.FP8Params {
		t.Errorf("fp8 weights by training %.4f s %.2f GB (%v), by layout %.4f s %.2f GB (%v)", a.StepTime, a.Memory.Total, a.Layout.FP8Params, b.StepTime, b.Memory.Total, b.Layout.FP8Params)
	}
	// Never slower, never more memory: the optimizer writes the fp8 weights, so the
	// cast each forward is only the transpose, and a parameter holds 1 B, not 2.
	if a.StepTime > plain.StepTime || a.Memory.Total >= plain.Memory.Total {
		t.Errorf("fp8 weights %.4f s %.2f GB, 16-bit %.4f s %.2f GB", a.StepTime, a.Memory.Total, plain.StepTime, plain.Memory.Total)
	}
	bf := byLayout
	bf.Training.Precision = step.BF16
	if _, err := e.Estimate(bf); err == nil || !strings.Contains(err.Error(), "layout.fp8_params") {
		t.Errorf("fp8 weights under bf16: %v", err)
	}
}

// A loaded cluster is made once per cluster and shares: a scheduler asking again
// about the same busy leaves reuses its placements.
func TestLoadedClusterReused(t *testing.T) {
	spec := cluster(t, "dgx-h100", 64).Spec
	spec.Network.Oversubscription = 4
	cl, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	e := step.New()
	leaf := cl.LeafOf(0, 0)
	a, err := e.LoadedCluster(cl, map[int]float64{leaf: 0.25}, "busy")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := e.LoadedCluster(cl, map[int]float64{leaf: 0.25}, "busy")
	c, _ := e.LoadedCluster(cl, map[int]float64{leaf: 0.5}, "busy")
	if a != b || a == c || a.Base() != cl || a.Loaded != "busy" {
		t.Errorf("same shares: %p and %p; other shares: %p; base %p of %p", a, b, c, a.Base(), cl)
	}
	if _, err := e.LoadedCluster(cl, map[int]float64{leaf: 2}, ""); err == nil {
		t.Error("a share of 2 accepted")
	}
}
