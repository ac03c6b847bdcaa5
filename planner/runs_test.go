package planner_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/step/accuracy"
	"github.com/stepcost/stepcost/planner"
)

// Every framework profile × pipeline schedule: the planner under the framework
// refuses a schedule the profile does not run (naming constraints.schedules and the
// framework) and estimate refuses a layout with it (naming layout.schedule); for a
// schedule it runs, every plan the planner returns is one estimate prices, at the
// same step time. The free search (no schedule given) is walked too.
func TestFrameworkRunsPlannerAgreesWithEstimate(t *testing.T) {
	e := step.New()
	base := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 4), GPUs: 32, TopK: 10,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 256}}
	// A pipelined layout of each schedule, as the search under fsdp (whose profile
	// states no limit) finds it.
	refs := map[step.Schedule]step.Layout{}
	schedules := []step.Schedule{step.GPipe, step.OneFOneB, step.Interleaved, step.ZeroBubble, step.ZeroBubbleV, step.DualPipe}
	for _, s := range schedules {
		req := base
		req.TopK = 1
		req.Training.Framework = "fsdp"
		req.Constraints = planner.Constraints{PP: []int{4}, Schedules: []step.Schedule{s}}
		res, err := planner.Search(context.Background(), e, req)
		if err != nil || len(res.Top) == 0 {
			t.Fatalf("%s under fsdp: %v %s", s, err, res.NoPlan)
		}
		refs[s] = res.Top[0].Estimate.Layout
	}
	for _, fw := range framework.All() {
		runs := fw.Runs
		for _, s := range append([]step.Schedule{""}, schedules...) {
			req := base
			req.Training.Framework = fw.Name
			if s != "" {
				req.Constraints.Schedules = []step.Schedule{s}
				if !runs.NoPipeline {
					req.Constraints.PP = []int{4}
				}
			}
			res, err := planner.Search(context.Background(), e, req)
			runsIt := s == "" || len(runs.Schedules) == 0 || slices.Contains(runs.Schedules, string(s))
			if !runsIt {
				if err == nil || !strings.Contains(err.Error(), "constraints.schedules") || !strings.Contains(err.Error(), fw.Name) {
					t.Errorf("%s, %s: plan gave %v, want an error naming constraints.schedules and the framework", fw.Name, s, err)
				}
				l := refs[s]
				_, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: l})
				var inv *invalid.Error
				if !errors.As(err, &inv) || !strings.Contains(err.Error(), "layout.schedule:") || !strings.Contains(err.Error(), fw.Name) {
					t.Errorf("%s, %s: estimate gave %v, want an error naming layout.schedule and the framework", fw.Name, s, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s, %s: %v", fw.Name, s, err)
				continue
			}
			if len(res.Top) == 0 {
				t.Errorf("%s, %s: no plan (%s)", fw.Name, s, res.NoPlan)
			}
			for _, p := range append(res.Top, res.Pareto...) {
				l := p.Estimate.Layout
				r, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: l})
				if err != nil {
					t.Errorf("%s, %s: estimate refuses the plan %s: %v", fw.Name, s, describe(l), err)
				} else if r.StepTime != p.Estimate.StepTime {
					t.Errorf("%s, %s: plan %s at %.6f s, estimate %.6f s", fw.Name, s, describe(l), p.Estimate.StepTime, r.StepTime)
				}
			}
		}
	}
}

// A constraint asking for what the framework does not run is refused, naming it.
func TestFrameworkRunsConstraintErrors(t *testing.T) {
	e := step.New()
	for _, c := range []struct {
		framework string
		cs        planner.Constraints
		field     string
	}{
		{"megatron-lm-2021", planner.Constraints{ZeRO: []int{0, 1}}, "constraints.zero[1]"},
		{"megatron-lm-2021", planner.Constraints{SP: []bool{true}}, "constraints.sp"},
		{"megatron-lm-2021", planner.Constraints{CP: []int{2}}, "constraints.cp"},
		{"megatron-lm-2021", planner.Constraints{OverlapTP: []bool{false, true}}, "constraints.overlap_tp"},
		{"megatron-lm-2021", planner.Constraints{Recompute: []step.Recompute{step.RecomputeSelective}}, "constraints.recompute[0]"},
		{"deepspeed-2021", planner.Constraints{Schedules: []step.Schedule{step.Interleaved}}, "constraints.schedules[0]"},
		{"nemo-25.04", planner.Constraints{OverlapEP: []bool{true}}, "constraints.overlap_ep"},
		{"nemo-25.04", planner.Constraints{ZeRO: []int{3}}, "constraints.zero[0]"},
		// torchtitan runs ZeRO 1 only under a pipeline, and of 2024 never ZeRO 2.
		{"torchtitan-2024", planner.Constraints{ZeRO: []int{2}}, "constraints.zero[0]"},
		// torchtitan checkpoints whole blocks or op by op, never the attention core alone.
		{"torchtitan", planner.Constraints{Recompute: []step.Recompute{step.RecomputeOps, step.RecomputeSelective}}, "constraints.recompute[1]"},
		{"torchtitan-2024-04", planner.Constraints{Recompute: []step.Recompute{step.RecomputeSelective}}, "constraints.recompute[0]"},
		{"composer", planner.Constraints{PP: []int{2}}, "constraints.pp"},
		{"hai-llm", planner.Constraints{Schedules: []step.Schedule{step.GPipe}}, "constraints.schedules[0]"},
		// Megatron-Core's fine-grained activation offloading is of 2026.
		{"megatron-core-0.12", planner.Constraints{OffloadActivations: []bool{true}}, "constraints.offload_activations"},
		{"composer", planner.Constraints{OffloadActivations: []bool{false, true}}, "constraints.offload_activations"},
	} {
		req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 2), GPUs: 16, TopK: 1,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: c.framework}, Constraints: c.cs}
		_, err := planner.Search(context.Background(), e, req)
		if err == nil || !strings.Contains(err.Error(), c.field+":") || !strings.Contains(err.Error(), c.framework) {
			t.Errorf("%s with %+v: got %v, want an error naming %s and the framework", c.framework, c.cs, err, c.field)
		}
	}
}

// torchtitan's activation checkpointing (none, full, op-level or every n-th block)
// is what the search takes under its profiles when the constraints leave it open:
// op-level checkpointing is among the plans, Megatron's attention-core
// recomputation never.
func TestFrameworkRunsTorchtitanRecompute(t *testing.T) {
	e := step.New()
	for _, fw := range []string{"torchtitan", "torchtitan-2024"} {
		req := planner.Request{Model: mustModel(t, "llama3-70b"), Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 64, TopK: 500,
			Training: step.Training{SeqLen: 8192, GlobalBatch: 64, Framework: fw}}
		res, err := planner.Search(context.Background(), e, req)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[step.Recompute]int{}
		for _, p := range res.Top {
			seen[p.Estimate.Layout.Recompute]++
		}
		if seen[step.RecomputeSelective] > 0 || seen[step.RecomputeOps] == 0 {
			t.Errorf("%s: the %d plans recompute %v; want op-level among them and no attention-core recomputation", fw, len(res.Top), seen)
		}
	}
}

// DeepSpeed's pipeline engine runs ZeRO 0–1 only: under deepspeed-2021 the search
// shards further only without a pipeline, and estimate refuses ZeRO-2 with one.
func TestFrameworkRunsZeROWithPipeline(t *testing.T) {
	e := step.New()
	req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 4), GPUs: 32, TopK: 200,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 256, Framework: "deepspeed-2021"}}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	var piped, sharded int
	for _, p := range res.Top {
		l := p.Estimate.Layout
		if l.PP > 1 {
			piped++
			if l.ZeRO > 1 {
				t.Errorf("deepspeed-2021: plan %s", describe(l))
			}
		} else if l.ZeRO > 1 {
			sharded++
		}
	}
	if piped == 0 || sharded == 0 {
		t.Errorf("deepspeed-2021: %d pipelined plans, %d with ZeRO 2–3 and no pipeline; want both searched", piped, sharded)
	}
	l := step.Layout{TP: 1, PP: 2, DP: 16, MicroBatch: 1, ZeRO: 2}
	_, err = e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: l})
	if err == nil || !strings.Contains(err.Error(), "layout.zero:") || !strings.Contains(err.Error(), "deepspeed-2021") {
		t.Errorf("ZeRO-2 with pp 2 under deepspeed-2021: got %v, want an error naming layout.zero", err)
	}
}

// A published run is never refused by its own framework's profile: every run of the
// accuracy data set (priced under the profile its framework maps to) is priced.
func TestFrameworkRunsAcceptPublishedRuns(t *testing.T) {
	cases, err := accuracy.AllCases()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range accuracy.Evaluate(step.New(), cases) {
		if r.Case.Err != nil {
			continue
		}
		n++
		if r.Err != nil {
			t.Errorf("%s (%s, profile %s): %v", r.Run.ID, r.Run.Framework, r.Request.Training.Framework, r.Err)
		}
	}
	if n < 200 {
		t.Errorf("%d published runs priced, want the data set's (over 200)", n)
	}
}

// Every profile's version limits (framework.Runs: NoGradAccumulation, DDPAlone,
// ZeROWithPipeline beside ZeRO, ExpertTPIsTP) walked through the planner and
// estimate: no plan of the framework breaks one, and estimate refuses a layout
// that does, naming the layout field and the framework.
func TestFrameworkVersionLimits(t *testing.T) {
	e := step.New()
	dense := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 4), GPUs: 32, TopK: 200,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 256}}
	moe := planner.Request{Model: mustModel(t, "mixtral-8x7b"), Cluster: mustCluster(t, "dgx-h100", 4), GPUs: 32, TopK: 200,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 256}}
	refuses := func(fw string, req planner.Request, l step.Layout, field string) {
		t.Helper()
		_, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: l})
		var inv *invalid.Error
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), field+":") || !strings.Contains(err.Error(), fw) {
			t.Errorf("%s: estimate of %s gave %v, want an error naming %s and the framework", fw, describe(l), err, field)
		}
	}
	walked := map[string]bool{}
	for _, fw := range framework.All() {
		r := fw.Runs
		if !r.NoGradAccumulation && !r.DDPAlone && len(r.ZeROWithPipeline) == 0 && !r.ExpertTPIsTP {
			continue
		}
		req := dense
		if r.ExpertTPIsTP {
			req = moe
		}
		req.Training.Framework = fw.Name
		// The search with and without a pipeline (the free search may rank only
		// pipelined plans on top).
		var top []planner.Plan
		for _, pps := range [][]int{{1}, {2, 4}} {
			if r.NoPipeline && pps[0] > 1 {
				continue
			}
			req := req
			req.Constraints.PP = pps
			res, err := planner.Search(context.Background(), e, req)
			if err != nil || len(res.Top) == 0 {
				t.Errorf("%s, pp %v: %v %s", fw.Name, pps, err, res.NoPlan)
				continue
			}
			top = append(top, res.Top...)
		}
		var piped, flat int
		for _, p := range top {
			l := p.Estimate.Layout
			if l.PP > 1 {
				piped++
			} else {
				flat++
			}
			if r.NoGradAccumulation && l.PP == 1 && l.MicroBatch != req.Training.GlobalBatch/l.DP {
				t.Errorf("%s: plan %s accumulates %d micro-batches without a pipeline", fw.Name, describe(l), p.Estimate.MicroBatches)
			}
			if r.DDPAlone && l.ZeRO == 0 && l.DP > 1 && (l.TP > 1 || l.PP > 1 || l.CP > 1) {
				t.Errorf("%s: plan %s replicates beside other parallelism", fw.Name, describe(l))
			}
			if !r.ZeROAllowed(l.ZeRO, l.PP > 1) {
				t.Errorf("%s: plan %s runs a ZeRO stage the framework does not there", fw.Name, describe(l))
			}
			if r.ExpertTPIsTP && l.ETP != 0 && l.ETP != l.TP {
				t.Errorf("%s: plan %s holds the experts otherwise than TP", fw.Name, describe(l))
			}
		}
		if piped == 0 && !r.NoPipeline || flat == 0 {
			t.Errorf("%s: %d plans with a pipeline, %d without: want both searched", fw.Name, piped, flat)
		}
		if r.NoGradAccumulation {
			walked["NoGradAccumulation"] = true
			// Two micro-batches of the local batch (256 / 16 = 16) without a pipeline.
			refuses(fw.Name, req, step.Layout{TP: 2, PP: 1, DP: 16, MicroBatch: 8, ZeRO: 3, SP: fw.SequenceParallelWithTP}, "layout.micro_batch")
			// With one, the schedule splits the local batch: 1F1B over 4 micro-batches is run.
			if !r.NoPipeline {
				l := step.Layout{TP: 1, PP: 2, DP: 16, MicroBatch: 4, Schedule: step.OneFOneB, ZeRO: r.ZeROWithPipeline[len(r.ZeROWithPipeline)-1]}
				if _, err := e.Estimate(step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: l}); err != nil {
					t.Errorf("%s: %s refused: %v", fw.Name, describe(l), err)
				}
			}
		}
		if r.DDPAlone {
			walked["DDPAlone"] = true
			refuses(fw.Name, req, step.Layout{TP: 2, PP: 1, DP: 16, MicroBatch: 16, ZeRO: 0, SP: fw.SequenceParallelWithTP}, "layout.zero")
		}
		if len(r.ZeROWithPipeline) > 0 {
			walked["ZeROWithPipeline"] = true
			for z := 0; z <= 3; z++ {
				if !r.ZeROAllowed(z, true) && !r.NoPipeline {
					refuses(fw.Name, req, step.Layout{TP: 1, PP: 2, DP: 16, MicroBatch: 4, Schedule: step.OneFOneB, ZeRO: z}, "layout.zero")
				}
				if !r.ZeROAllowed(z, false) && !(r.DDPAlone && z == 0) {
					refuses(fw.Name, req, step.Layout{TP: 1, PP: 1, DP: 32, MicroBatch: 8, ZeRO: z}, "layout.zero")
				}
			}
		}
		if r.ExpertTPIsTP {
			walked["ExpertTPIsTP"] = true
			refuses(fw.Name, req, step.Layout{TP: 2, PP: 1, DP: 16, EP: 8, ETP: 1, SP: true, MicroBatch: 1, ZeRO: 1}, "layout.etp")
			bad := req
			bad.Constraints.ExpertsWhole = []bool{true}
			if _, err := planner.Search(context.Background(), e, bad); err == nil || !strings.Contains(err.Error(), "constraints.experts_whole") {
				t.Errorf("%s: whole experts asked for: %v, want an error naming constraints.experts_whole", fw.Name, err)
			}
		}
	}
	for _, k := range []string{"NoGradAccumulation", "DDPAlone", "ZeROWithPipeline", "ExpertTPIsTP"} {
		if !walked[k] {
			t.Errorf("no profile has %s: the walk tested nothing of it", k)
		}
	}
}

// Every limit a profile states has its source: the repository, file and commit
// where the framework's code says it.
func TestFrameworkRunsSources(t *testing.T) {
	for _, fw := range framework.All() {
		if !fw.Runs.Limited() {
			continue
		}
		if len(fw.Runs.Sources) == 0 {
			t.Errorf("%s: limits without sources", fw.Name)
		}
		for _, s := range fw.Runs.Sources {
			if s.Limit == "" || s.Repo == "" || s.File == "" || s.Commit == "" || s.Note == "" {
				t.Errorf("%s: source %+v: want the limit, repository, file, commit and what the code does", fw.Name, s)
			}
		}
	}
}

// The profiles whose fp8 weights need a sharded optimizer (framework.Runs.
// FP8ParamsSharded: Megatron-LM's validate_args asserts --fp8-param-gather only
// with the distributed optimizer or FSDP, and Megatron-Core's other optimizer
// quantises nothing into them): a search with fp8 weights returns no ZeRO-0 plan,
// and estimate refuses ZeRO 0 with fp8 weights, naming layout.zero and the
// framework, where ZeRO 1 runs.
func TestFP8WeightsNeedShardedOptimizer(t *testing.T) {
	e := step.New()
	walked := 0
	for _, fw := range framework.All() {
		if !fw.Runs.FP8ParamsSharded {
			continue
		}
		walked++
		req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 4), GPUs: 32, TopK: 200,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 256, Precision: step.FP8, FP8Params: true, Framework: fw.Name}}
		req.Constraints.PP = []int{1}
		res, err := planner.Search(context.Background(), e, req)
		if err != nil || len(res.Top) == 0 {
			t.Errorf("%s: %v %s", fw.Name, err, res.NoPlan)
			continue
		}
		for _, p := range res.Top {
			if l := p.Estimate.Layout; l.ZeRO == 0 {
				t.Errorf("%s: plan %s keeps fp8 weights at ZeRO 0", fw.Name, describe(l))
			}
		}
		// Asked for ZeRO 0 alone, the search enumerates nothing: no layout is
		// estimated only to be refused.
		z0 := req
		z0.Constraints.ZeRO = []int{0}
		if res, err := planner.Search(context.Background(), e, z0); err != nil || len(res.Top) != 0 || strings.Contains(res.NoPlan, "refused") {
			t.Errorf("%s: fp8 weights at ZeRO 0 alone: %v, %d plans, %q; want none enumerated", fw.Name, err, len(res.Top), res.NoPlan)
		}
		l := step.Layout{TP: 1, PP: 1, DP: 32, MicroBatch: 1, ZeRO: 0}
		sr := step.Request{Model: req.Model, Training: req.Training, Cluster: req.Cluster, Layout: l}
		_, err = e.Estimate(sr)
		var inv *invalid.Error
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), "layout.zero:") || !strings.Contains(err.Error(), fw.Name) {
			t.Errorf("%s: fp8 weights at ZeRO 0 gave %v, want an error naming layout.zero and the framework", fw.Name, err)
		}
		sr.Layout.ZeRO = 1
		if _, err := e.Estimate(sr); err != nil {
			t.Errorf("%s: fp8 weights at ZeRO 1 refused: %v", fw.Name, err)
		}
	}
	if walked == 0 {
		t.Error("no profile keeps fp8 weights to a sharded optimizer")
	}
}
