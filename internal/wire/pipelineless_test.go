package wire_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
)

// Plans of pp 1 answer a request that pinned schedules without 1F1B (or
// interleaving depths above 1): a job without a pipeline runs no schedule, and
// the answer says so on every plan, the schedules as the API names them, rather
// than answering pp 1 plans to --schedule interleaved --vpp 7 without a word.
func TestPlansWithoutAPipelineSaySoUnderPinnedSchedules(t *testing.T) {
	plan := func(pp int) planner.Plan {
		return planner.Plan{GPUs: 8, Layout: step.Layout{TP: 8 / pp, PP: pp, DP: 1}}
	}
	for _, tc := range []struct {
		name string
		cs   planner.Constraints
		pps  []int
		want string // "": no such warning
	}{
		{"interleaved, pp 1", planner.Constraints{Schedules: []step.Schedule{step.Interleaved}, VirtualStages: []int{7}}, []int{1, 2},
			"constraints.schedules: [SCHEDULE_INTERLEAVED] pinned: plans with pp 1 run no pipeline schedule"},
		{"zb-v and dualpipe, pp 1", planner.Constraints{Schedules: []step.Schedule{step.ZeroBubbleV, step.DualPipe}}, []int{1},
			"constraints.schedules: [SCHEDULE_ZB_V SCHEDULE_DUALPIPE] pinned: plans with pp 1 run no pipeline schedule"},
		{"virtual stages alone, pp 1", planner.Constraints{VirtualStages: []int{7}}, []int{1},
			"constraints.virtual_stages: [7] pinned: plans with pp 1 run no interleaving"},
		{"1f1b among them", planner.Constraints{Schedules: []step.Schedule{step.OneFOneB, step.Interleaved}}, []int{1}, ""},
		{"depth 1 among them", planner.Constraints{VirtualStages: []int{1, 2}}, []int{1}, ""},
		{"no pp 1 plan", planner.Constraints{Schedules: []step.Schedule{step.Interleaved}}, []int{2, 4}, ""},
		{"nothing pinned", planner.Constraints{}, []int{1}, ""},
	} {
		var res planner.Result
		for _, pp := range tc.pps {
			res.Top = append(res.Top, plan(pp))
		}
		resp, err := wire.PlanResponse(context.Background(), planner.Request{Constraints: tc.cs}, res, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range resp.GetPlans() {
			ws := strings.Join(p.GetEstimate().GetWarnings(), "\n")
			switch {
			case tc.want == "" && strings.Contains(ws, "pinned"):
				t.Errorf("%s: plan %d warns %q", tc.name, i, ws)
			case tc.want != "" && !strings.Contains(ws, tc.want):
				t.Errorf("%s: plan %d warns %q; want %q", tc.name, i, ws, tc.want)
			}
		}
	}
}
