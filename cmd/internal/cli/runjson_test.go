package cli

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// estimateWith is the estimate of the command line args then extra (an estimate
// … --json), which must succeed; a failure names extra, what the test varies.
func estimateWith(t *testing.T, args []string, extra ...string) *pb.StepEstimate {
	t.Helper()
	code, out, errOut := run(slices.Concat(args, extra)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", extra, code, errOut)
	}
	return decodeEstimate(t, out)
}

// bestPlan is the estimate of the best plan of the command line args then extra
// (a plan … --json), which must succeed with at least one plan.
func bestPlan(t *testing.T, args []string, extra ...string) *pb.StepEstimate {
	t.Helper()
	code, out, errOut := run(slices.Concat(args, extra)...)
	var resp pb.EstimatePlanResponse
	if err := protojson.Unmarshal([]byte(out), &resp); code != 0 || err != nil || len(resp.GetPlans()) == 0 {
		t.Fatalf("%v: exit %d, %v: %.300s %s", slices.Concat(args, extra), code, err, out, errOut)
	}
	return resp.GetPlans()[0].GetEstimate()
}
