package planner_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// A search the constraints leave nothing to search lists, with the lists that
// left it nothing, each switch the request pinned, with the value as the API's
// field takes it: constraints.cp_all_to_all [true], not left out (nor a value of
// the command line's flag). Every []bool constraint field is covered: a field
// added later is listed, or this fails.
func TestNoPlanListsEverySwitchPin(t *testing.T) {
	typ := reflect.TypeFor[planner.Constraints]()
	n := 0
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type != reflect.TypeFor[[]bool]() {
			continue
		}
		n++
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		for _, v := range []bool{true, false} {
			req := llama8bRequest(t)
			req.Model, req.Cluster, req.GPUs = mustModel(t, "mixtral-8x7b"), mustCluster(t, "dgx-h100", 8), 64
			req.Training.SeqLen, req.Training.GlobalBatch, req.Training.Precision = 4096, 512, step.FP8
			req.Constraints.TP = []int{3} // no layout: 3 divides no 64-GPU job
			reflect.ValueOf(&req.Constraints).Elem().Field(i).Set(reflect.ValueOf([]bool{v}))
			res, err := planner.Search(context.Background(), step.New(), req)
			if err != nil {
				t.Errorf("%s [%v]: %v", name, v, err)
				continue
			}
			want := "constraints." + name + " [" + map[bool]string{true: "true", false: "false"}[v] + "]"
			if len(res.Top) != 0 || !strings.Contains(res.NoPlan, "constraints.tp [3]") || !strings.Contains(res.NoPlan, want) {
				t.Errorf("%s [%v]: %d plans, reason %q; want it to list %q", name, v, len(res.Top), res.NoPlan, want)
			}
		}
	}
	if n < 7 {
		t.Fatalf("%d switch lists in Constraints, want at least 7", n)
	}
}
