package step_test

import (
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Zero-bubble ZB-H1 defers the weight-gradient half of the backward into the
// bubbles and removes most of the 1F1B bubble; DualPipe halves the stages the
// bubble spans, hides the expert-parallel all-to-alls under compute, and holds two
// copies of the parameters. The MoE runs take 32 micro-batches (DualPipe runs at
// least 2 × PP): the all-to-alls of the PP − 2 warm-up and cool-down chunks have no
// partner to hide under.
func TestZeroBubbleAndDualPipe(t *testing.T) {
	run := func(name string, sched step.Schedule, ep int) step.Result {
		gbs := 64
		if ep > 1 {
			gbs = 256
		}
		// Under fsdp, whose profile states no limit: megatron-core runs neither.
		req := step.Request{Model: arch(t, name), Cluster: cluster(t, "dgx-h100", 8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: gbs, Framework: "fsdp"},
			Layout:   step.Layout{TP: 1, PP: 8, DP: 8, EP: ep, MicroBatch: 1, ZeRO: 1, Recompute: step.RecomputeNone, Schedule: sched}}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatalf("%s %s: %v", name, sched, err)
		}
		return r
	}
	f1, zb := run("llama3-8b", step.OneFOneB, 1), run("llama3-8b", step.ZeroBubble, 1)
	t.Logf("llama3-8b pp 8, 8 micro-batches: bubble 1F1B %.3f s, ZB-H1 %.3f s", f1.Breakdown.Bubble, zb.Breakdown.Bubble)
	if !(zb.Breakdown.Bubble < 0.5*f1.Breakdown.Bubble) || zb.StepTime >= f1.StepTime {
		t.Errorf("ZB-H1 bubble %.3f s vs 1F1B %.3f s; step %.3f vs %.3f s", zb.Breakdown.Bubble, f1.Breakdown.Bubble, zb.StepTime, f1.StepTime)
	}
	m1, dpipe := run("mixtral-8x7b", step.OneFOneB, 8), run("mixtral-8x7b", step.DualPipe, 8)
	if m1.Breakdown.Exposed[step.CommEP] <= 0 || dpipe.Breakdown.Exposed[step.CommEP] >= 0.5*m1.Breakdown.Exposed[step.CommEP] {
		t.Errorf("exposed all-to-all: 1F1B %.3f s, DualPipe %.3f s", m1.Breakdown.Exposed[step.CommEP], dpipe.Breakdown.Exposed[step.CommEP])
	}
	if w := dpipe.Memory.Weights / m1.Memory.Weights; w < 1.99 || w > 2.01 {
		t.Errorf("DualPipe weights %.2f× 1F1B's, want 2×", w)
	}
	if dpipe.Breakdown.Bubble >= m1.Breakdown.Bubble {
		t.Errorf("DualPipe bubble %.3f s not below 1F1B's %.3f s", dpipe.Breakdown.Bubble, m1.Breakdown.Bubble)
	}
	req := step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 6),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 48},
		Layout:   step.Layout{TP: 8, PP: 3, DP: 2, MicroBatch: 1, Schedule: step.DualPipe, LayerSplit: []int{11, 11, 10}}}
	if _, err := step.New().Estimate(req); err == nil {
		t.Error("DualPipe on pp 3 accepted")
	}
}

// ZB-V: two chunks per rank in a V, the weight-gradient passes in the bubbles. Its
// bubble is below ZB-H1's (which is below 1F1B's), its activations are 1F1B's, and
// the pipeline sends twice as often.
func TestZeroBubbleV(t *testing.T) {
	run := func(sched step.Schedule, layers int) (step.Result, error) {
		a := arch(t, "llama3-8b")
		a.Layers = layers
		return step.New().Estimate(step.Request{Model: a, Cluster: cluster(t, "dgx-h100", 8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: "fsdp"}, // megatron-core runs no zero-bubble schedule
			Layout:   step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1, ZeRO: 1, Recompute: step.RecomputeNone, Schedule: sched}})
	}
	must := func(r step.Result, err error) step.Result {
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	f1, h1, v := must(run(step.OneFOneB, 32)), must(run(step.ZeroBubble, 32)), must(run(step.ZeroBubbleV, 32))
	t.Logf("bubble 1F1B %.3f s, ZB-H1 %.3f s, ZB-V %.3f s; exposed p2p %.3f, %.3f s; activations %.2f, %.2f GB",
		f1.Breakdown.Bubble, h1.Breakdown.Bubble, v.Breakdown.Bubble, f1.Breakdown.Exposed[step.CommPP], v.Breakdown.Exposed[step.CommPP],
		f1.Memory.Activations, v.Memory.Activations)
	if !(v.Breakdown.Bubble < h1.Breakdown.Bubble && h1.Breakdown.Bubble < f1.Breakdown.Bubble) {
		t.Errorf("bubbles 1F1B %.3f, ZB-H1 %.3f, ZB-V %.3f s: want decreasing", f1.Breakdown.Bubble, h1.Breakdown.Bubble, v.Breakdown.Bubble)
	}
	if v.Layout.VirtualStages != 2 || v.Memory.Activations != f1.Memory.Activations {
		t.Errorf("ZB-V: %d chunks, activations %.3f GB (1F1B %.3f)", v.Layout.VirtualStages, v.Memory.Activations, f1.Memory.Activations)
	}
	// Sends per rank and step: 2·v·m, v = 2 chunks against 1.
	if got, want := v.Breakdown.Exposed[step.CommPP]/f1.Breakdown.Exposed[step.CommPP], 2.0; got < want*0.999 || got > want*1.001 {
		t.Errorf("pipeline sends ×%.3f of 1F1B's, want ×%.3f", got, want)
	}
	// Refused by the schedule's even split alone: 16 chunks are fewer than 36
	// layers, and no layer_split would do (ZB-V refuses every uneven one). It was
	// also refused naming layout.pp, "pp × virtual stages (16) must be at most the
	// 36 layers … or give layout.layer_split".
	_, err := run(step.ZeroBubbleV, 36)
	if err == nil {
		t.Fatal("ZB-V with 36 layers on 2 × 8 chunks accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, "layout.schedule: zb-v splits the 36 layers evenly") || strings.Contains(msg, "must be at most") {
		t.Errorf("ZB-V with 36 layers on 2 × 8 chunks: %v", err)
	}
}

// Interleaving without a pipeline is refused by the schedule's rule alone: pp 1
// × 3 chunks is not more than the 32 layers, yet it was also refused naming
// layout.pp, "pp × virtual stages (3) must be at most the 32 layers … or give
// layout.layer_split" (no split is balanced without a pipeline).
func TestInterleavingWithoutPipelineNamesTheSchedule(t *testing.T) {
	_, err := step.New().Estimate(step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 64},
		Layout:   step.Layout{TP: 8, PP: 1, DP: 1, MicroBatch: 1, Schedule: step.Interleaved, VirtualStages: 3}})
	if err == nil {
		t.Fatal("interleaved on pp 1 accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, "layout.schedule: interleaved needs pp ≥ 2") || strings.Contains(msg, "must be at most") {
		t.Errorf("interleaved on pp 1: %v", err)
	}
}
