package cli

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// plan's table gives every part of a plan's step, so that they add up to its
// step time as estimate's breakdown does: compute, exposed communication and
// bubble left out the optimizer step and the comm/compute contention, 0.76 s of a
// 7.69 s step with the optimizer offloaded.
func TestPlanTablePartsAddUpToTheStep(t *testing.T) {
	args := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64", "--seq", "8192", "--top", "3", "--offload", "optimizer"}
	code, js, errOut := run(append(args, "--json")...)
	var resp pb.EstimatePlanResponse
	if err := protojson.Unmarshal([]byte(js), &resp); code != exitOK || err != nil || len(resp.GetPlans()) == 0 {
		t.Fatalf("exit %d, %v: %s", code, err, errOut)
	}
	code, out, errOut := run(append(args, "--wide")...)
	lines := strings.Split(out, "\n")
	head := ""
	for i, l := range lines {
		if strings.HasPrefix(l, "#  ") {
			head = l
			lines = lines[i+1:]
			break
		}
	}
	for _, h := range []string{"compute", "exposed comm", "bubble", "optimizer", "contention"} {
		if code != exitOK || !strings.Contains(head, h) {
			t.Fatalf("exit %d %s: no %q column in %q", code, errOut, h, head)
		}
	}
	for i, p := range resp.GetPlans() {
		b := p.GetEstimate().GetBreakdown()
		if b.GetOptimizerS() <= 0.1 {
			t.Fatalf("plan %d: optimizer step %v s: the test needs one the offload makes long", p.GetRank(), b.GetOptimizerS())
		}
		row := strings.Fields(lines[i])
		for _, want := range []string{fmtSeconds(b.GetOptimizerS()), fmtSeconds(b.GetContentionS())} {
			if !strings.Contains(" "+strings.Join(row, " ")+" ", " "+want+" ") {
				t.Errorf("plan %d: row %q lacks %q", p.GetRank(), lines[i], want)
			}
		}
	}
}
