package planner

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
)

// Every schedule, walked over pipeline depths, micro-batch counts and layer
// counts: the search lists a schedule exactly when the estimate accepts it, and
// the estimate refuses the others naming a layout field. The micro-batches matter
// only through their class (schedClass), as the search's cache of lists assumes.
func TestSearchListsOnlyWhatFrameworksRun(t *testing.T) {
	a, err := model.Lookup("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := catalog.Cluster("dgx-h100", 8)
	if err != nil {
		t.Fatal(err)
	}
	e := step.New()
	cs := &Constraints{}
	refused := map[step.Schedule]int{}
	// Each schedule is estimated under the first profile that runs it (the
	// default, megatron-core, runs 1F1B and interleaved only).
	runsIt := map[step.Schedule]string{}
	for _, p := range framework.All() {
		for _, s := range p.Runs.Schedules {
			if _, ok := runsIt[step.Schedule(s)]; !ok {
				runsIt[step.Schedule(s)] = p.Name
			}
		}
	}
	for _, r := range step.ScheduleRules() {
		if runsIt[r.Schedule] == "" {
			t.Fatalf("%s: no profile runs it", r.Schedule)
		}
	}
	for _, layers := range []int{32, 30, 61} {
		a.Layers = layers
		for _, pp := range []int{1, 2, 3, 4, 6, 8} {
			for m := 1; m <= 40; m++ {
				listed := map[sched]bool{}
				for _, sc := range schedules(pp, m, layers, cs) {
					listed[sc] = true
				}
				var split []int
				if layers%pp != 0 {
					split = step.EvenSplit(layers, pp)
				}
				for _, r := range step.ScheduleRules() {
					for v := 1; v <= 4; v++ {
						if r.Schedule == step.ZeroBubbleV && v == 1 {
							continue // the estimate reads it as the V's two chunks
						}
						l := step.Layout{TP: 1, PP: pp, DP: 1, MicroBatch: 1, Schedule: r.Schedule, VirtualStages: v, LayerSplit: split}
						if v > 1 || r.Schedule == step.ZeroBubbleV {
							l.LayerSplit = nil
							if layers%(pp*v) != 0 {
								if s := step.PipelineSplit(layers, pp*v); s != nil {
									l.LayerSplit = s
								} else if r.Schedule != step.ZeroBubbleV {
									continue // no split the search would use
								}
							}
						}
						_, err := e.Memory(step.Request{Model: a, Cluster: cl, Layout: l,
							Training: step.Training{SeqLen: 4096, GlobalBatch: m, Framework: runsIt[r.Schedule]}})
						want := listed[sched{r.Schedule, v}]
						if pp == 1 && r.Schedule != step.OneFOneB {
							want = false // one stage: the search lists 1F1B only
							if err == nil {
								continue
							}
						}
						name := fmt.Sprintf("%d layers, pp %d, v %d, %d micro-batches, %s", layers, pp, v, m, r.Schedule)
						if want && err != nil {
							t.Errorf("%s: listed but refused: %v", name, err)
						}
						if !want && err == nil && v <= layers/pp {
							t.Errorf("%s: accepted but not listed", name)
						}
						if err != nil {
							var fe *invalid.Error
							if !errors.As(err, &fe) || fe.Field == "" {
								t.Errorf("%s: refused without a field: %v", name, err)
							}
							refused[r.Schedule]++
						}
						if r.Allows(pp, v, m, layers, len(l.LayerSplit) > 0) != r.Allows(pp, v, m+2*pp*40, layers, len(l.LayerSplit) > 0) &&
							schedClass(pp, m) == schedClass(pp, m+2*pp*40) {
							t.Errorf("%s: the rule depends on more than the micro-batches' class", name)
						}
					}
				}
			}
		}
	}
	for _, r := range step.ScheduleRules() {
		if refused[r.Schedule] == 0 {
			t.Errorf("%s: no layout refused, the walk does not test its rules", r.Schedule)
		}
	}
}

// The plans returned for four reference jobs all pass their schedule's framework
// rules (with the micro-batches each plan runs). DeepSeek-V3 is planned under
// HAI-LLM, which runs DualPipe and ZB-H1 (megatron-core, the others' default, runs
// 1F1B and interleaved).
func TestPlansPassFrameworkRules(t *testing.T) {
	for _, tc := range []struct {
		model, system  string
		gpus, gbs, seq int
		precision      step.Precision
		framework      string
	}{
		{"deepseek-v3", "hgx-h800", 2048, 15360, 4096, step.FP8, "hai-llm"},
		{"qwen3-235b-a22b", "dgx-h100", 256, 1024, 4096, step.BF16, ""},
		{"gpt3-175b", "dgx-h100", 1024, 1536, 2048, step.BF16, ""},
		{"llama3-405b", "dgx-h100", 16384, 2048, 8192, step.BF16, ""},
	} {
		a, err := model.Lookup(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := catalog.Cluster(tc.system, tc.gpus/8)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Search(t.Context(), step.New(), Request{Model: a, Cluster: cl, GPUs: tc.gpus, TopK: 20,
			Training: step.Training{SeqLen: tc.seq, GlobalBatch: tc.gbs, Precision: tc.precision, Framework: tc.framework}})
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if len(res.Top) == 0 {
			t.Fatalf("%s: no plan", tc.model)
		}
		dualPipe := false
		for _, p := range append(res.Top, res.Pareto...) {
			l := p.Estimate.Layout
			dualPipe = dualPipe || l.Schedule == step.DualPipe && l.PP > 1
			r, ok := step.RuleOf(l.Schedule)
			m := tc.gbs / (l.DP * l.MicroBatch)
			if !ok || l.PP > 1 && !r.Allows(l.PP, l.VirtualStages, m, a.Layers, len(l.LayerSplit) > 0) {
				t.Errorf("%s: plan %+v with %d micro-batches breaks %s's rules", tc.model, l, m, l.Schedule)
			}
			if tc.framework == "" && l.PP > 1 && l.Schedule != step.OneFOneB && l.Schedule != step.Interleaved {
				t.Errorf("%s: plan %+v under megatron-core runs %s", tc.model, l, l.Schedule)
			}
		}
		if tc.framework == "hai-llm" && !dualPipe {
			t.Errorf("%s: no DualPipe plan under hai-llm: DualPipe's rules are not walked", tc.model)
		}
	}
}
