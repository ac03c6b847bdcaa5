package planner_test

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/picture"
	"github.com/stepcost/stepcost/planner"
)

// roundTrip checks a search's answer the way a scheduler launching it would: the
// plans ranked by their score, the best first (by the step time it prints under
// the step-time objective); each plan's layout the one its estimate priced, its
// layer split one stage a chunk summing to the layers; estimate, given the plan's
// layout, accepts it and returns it unchanged at the same step time (within 0.1
// %), and given it without its layer split (as a layout is written by hand from
// the plan's table) chooses the same split; and the drawn pipeline takes what the
// estimate's pipeline takes (within 1 %).
func roundTrip(t *testing.T, e *step.Estimator, name string, req planner.Request, res planner.Result) {
	t.Helper()
	for i, p := range res.Top {
		if i > 0 && p.Score < res.Top[i-1].Score {
			t.Errorf("%s: plan %d scores %g, below plan %d's %g", name, i+1, p.Score, i, res.Top[i-1].Score)
		}
		if (req.Objective == "" || req.Objective == planner.FastestStep) && p.Score != p.Estimate.StepTime {
			t.Errorf("%s: plan %d ranked by %g, its step time is %g", name, i+1, p.Score, p.Estimate.StepTime)
		}
	}
	for i, p := range append(slices.Clone(res.Top), res.Pareto...) {
		l := p.Layout
		what := fmt.Sprintf("%s: plan %d (%s, split %v)", name, i+1, describe(l), l.LayerSplit)
		if i >= len(res.Top) {
			what = fmt.Sprintf("%s: front plan %d (%s, split %v)", name, i+1-len(res.Top), describe(l), l.LayerSplit)
		}
		if !reflect.DeepEqual(l, p.Estimate.Layout) {
			t.Errorf("%s: layout %+v, its estimate's %+v", what, l, p.Estimate.Layout)
		}
		if len(l.LayerSplit) > 0 {
			sum := 0
			for _, n := range l.LayerSplit {
				sum += n
			}
			if sum != req.Model.Layers || len(l.LayerSplit) != l.PP*l.VirtualStages {
				t.Errorf("%s: the split holds %d layers in %d chunks; the model has %d, the layout %d × %d chunks", what, sum, len(l.LayerSplit), req.Model.Layers, l.PP, l.VirtualStages)
			}
		}
		r, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: l})
		if err != nil {
			t.Errorf("%s: estimate refuses it: %v", what, err)
			continue
		}
		if !reflect.DeepEqual(r.Layout, l) {
			t.Errorf("%s: estimate returned the layout %+v", what, r.Layout)
		}
		if d := r.StepTime/p.Estimate.StepTime - 1; math.Abs(d) > 1e-3 {
			t.Errorf("%s: planned at %.6f s, estimated at %.6f s (%+.3f %%)", what, p.Estimate.StepTime, r.StepTime, 100*d)
		}
		if len(l.LayerSplit) > 0 {
			bare := l
			bare.LayerSplit, bare.AccountForEmbedding, bare.AccountForLoss = nil, false, false
			r, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: bare})
			switch {
			case err != nil:
				t.Errorf("%s: estimate refuses it without its split: %v", what, err)
			case !slices.Equal(r.Layout.LayerSplit, l.LayerSplit):
				t.Errorf("%s: estimate without the split chose %v", what, r.Layout.LayerSplit)
			case math.Abs(r.StepTime/p.Estimate.StepTime-1) > 1e-3:
				t.Errorf("%s: planned at %.6f s, estimated without the split at %.6f s", what, p.Estimate.StepTime, r.StepTime)
			}
		}
		if l.PP > 1 && req.SlowGPUSpeed == 0 {
			tl, err := picture.Simulate(p.Estimate)
			if err != nil {
				t.Errorf("%s: %v", what, err)
			} else if d := tl.Makespan/p.Estimate.Pipeline - 1; math.Abs(d) > 0.01 {
				t.Errorf("%s: drawn pipeline %.6f s, estimate's %.6f s (%+.2f %%)", what, tl.Makespan, p.Estimate.Pipeline, 100*d)
			}
		}
	}
}

// Plans on pipelines the layers do not divide, the schedules' micro-batch rules
// and job sizes that factor badly all round-trip (roundTrip): dense models of 61,
// 62, 95 and 126 layers on pp 3, 5, 7 and 16 with 1 to 4 chunks a stage; an MoE of
// 61 layers with 3 dense first layers and a prediction module (DeepSeek-V3's
// shape, Qwen3-30B-A3B's sizes); DualPipe, ZB-V, ZB-H1 and interleaved pinned with
// global batches giving odd micro-batch counts, fewer than 2 × pp and not a
// multiple of pp; 96 and 1536 GPUs.
func TestOddPipelinesRoundTrip(t *testing.T) {
	e := step.New()
	type job struct {
		name string
		req  planner.Request
	}
	var jobs []job
	with := func(name string, layers int) model.Arch {
		a := mustModel(t, name)
		a.Layers = layers
		a.Name = fmt.Sprintf("%s-%d-layers", name, layers)
		return a
	}
	moe := mustModel(t, "qwen3-30b-a3b")
	moe.Layers, moe.MoE.FirstDense, moe.MTPLayers, moe.Name = 61, 3, 1, "moe-61-first-dense-mtp"
	deep := planner.Constraints{VirtualStages: []int{1, 2, 3, 4}, UnevenPP: true}
	for _, pp := range []int{3, 5, 7, 16} {
		for _, layers := range []int{61, 62, 95, 126} {
			c := deep
			c.PP = []int{pp}
			jobs = append(jobs, job{fmt.Sprintf("%d layers on pp %d", layers, pp), planner.Request{Model: with("llama3-8b", layers),
				Cluster: mustCluster(t, "dgx-h100", pp), GPUs: 8 * pp, TopK: 5, Constraints: c,
				Training: step.Training{SeqLen: 4096, GlobalBatch: 240}}})
		}
		c := deep
		c.PP = []int{pp}
		jobs = append(jobs, job{fmt.Sprintf("MoE on pp %d", pp), planner.Request{Model: moe, Cluster: mustCluster(t, "dgx-h100", pp), GPUs: 8 * pp,
			TopK: 5, Constraints: c, Training: step.Training{SeqLen: 4096, GlobalBatch: 240}}})
	}
	for _, s := range []struct {
		schedule  step.Schedule
		framework string
		model     model.Arch
	}{{step.DualPipe, "hai-llm", moe}, {step.ZeroBubble, "hai-llm", moe}, {step.ZeroBubbleV, "torchtitan", mustModel(t, "llama3-8b")},
		{step.Interleaved, "", with("llama3-8b", 61)}} {
		for _, gbs := range []int{7, 8, 12, 16, 24} {
			jobs = append(jobs, job{fmt.Sprintf("%s with global batch %d", s.schedule, gbs), planner.Request{Model: s.model,
				Cluster: mustCluster(t, "dgx-h100", 4), GPUs: 32, TopK: 5,
				Constraints: planner.Constraints{Schedules: []step.Schedule{s.schedule}, PP: []int{4, 8}, MicroBatch: []int{1}, UnevenPP: true},
				Training:    step.Training{SeqLen: 4096, GlobalBatch: gbs, Framework: s.framework}}})
		}
	}
	for _, gpus := range []int{96, 1536} {
		jobs = append(jobs, job{fmt.Sprintf("%d GPUs", gpus), planner.Request{Model: mustModel(t, "llama3-70b"), Cluster: mustCluster(t, "dgx-h100", gpus/8),
			GPUs: gpus, TopK: 5, Training: step.Training{SeqLen: 4096, GlobalBatch: 1536}}})
	}
	planned := 0
	for _, j := range jobs {
		res, err := planner.Search(t.Context(), e, j.req)
		if err != nil {
			t.Errorf("%s: %v", j.name, err)
			continue
		}
		if len(res.Top) == 0 {
			if res.NoPlan == "" {
				t.Errorf("%s: no plan, and no reason", j.name)
			}
			continue
		}
		planned++
		roundTrip(t, e, j.name, j.req, res)
	}
	if planned < len(jobs)*3/4 {
		t.Errorf("%d of %d jobs planned: the round trip walks too few", planned, len(jobs))
	}
}

// The plans of the four reference jobs (TestPlansPassFrameworkRules: DeepSeek-V3
// on 2048 H800 in fp8 under HAI-LLM and under the default profile, Qwen3-235B-A22B
// on 256 H100, GPT-3 175B on 1024 H100, Llama 3 405B on 16 384 H100) round-trip
// (roundTrip): estimate, which checks every framework rule, takes each as it is.
func TestReferencePlansRoundTrip(t *testing.T) {
	e := step.New()
	for _, tc := range []struct {
		model, system  string
		gpus, gbs, seq int
		precision      step.Precision
		framework      string
	}{
		{"deepseek-v3", "hgx-h800", 2048, 15360, 4096, step.FP8, "hai-llm"},
		{"deepseek-v3", "hgx-h800", 2048, 15360, 4096, step.FP8, ""},
		{"qwen3-235b-a22b", "dgx-h100", 256, 1024, 4096, step.BF16, ""},
		{"gpt3-175b", "dgx-h100", 1024, 1536, 2048, step.BF16, ""},
		{"llama3-405b", "dgx-h100", 16384, 2048, 8192, step.BF16, ""},
	} {
		req := planner.Request{Model: mustModel(t, tc.model), Cluster: mustCluster(t, tc.system, tc.gpus/8), GPUs: tc.gpus, TopK: 20,
			Training: step.Training{SeqLen: tc.seq, GlobalBatch: tc.gbs, Precision: tc.precision, Framework: tc.framework}}
		res, err := planner.Search(t.Context(), e, req)
		if err != nil || len(res.Top) == 0 {
			t.Fatalf("%s: %v %s", tc.model, err, res.NoPlan)
		}
		roundTrip(t, e, tc.model+" "+tc.framework, req, res)
	}
}
