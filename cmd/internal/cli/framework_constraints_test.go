package cli

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// planJSON runs plan with --json and decodes its answer.
func planJSON(t *testing.T, args ...string) *pb.EstimatePlanResponse {
	t.Helper()
	code, out, errOut := run(append([]string{"plan", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("%q: exit %d: %s", args, code, errOut)
	}
	var res pb.EstimatePlanResponse
	if err := protojson.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return &res
}

// --even-split: Llama 3 8B's 32 layers on 3 stages have no plan with it (the
// answer names the constraint), and with the depth left open every plan keeps
// the same layers on every stage and model chunk; without it the 3 stages take an
// uneven split.
func TestEvenSplitFlag(t *testing.T) {
	job := []string{"--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "24", "--seq", "8192", "--gbs", "96", "--top", "10"}
	if res := planJSON(t, append(job, "--pp", "3")...); len(res.GetPlans()) == 0 || len(res.GetPlans()[0].GetLayout().GetLayerSplit()) != 3 {
		t.Errorf("--pp 3: want a plan with an uneven split of the 32 layers, got %v (%s)", res.GetPlans(), res.GetNoPlanReason())
	}
	code, _, errOut := run(append([]string{"plan"}, append(job, "--pp", "3", "--even-split")...)...)
	if code != exitFailure || !strings.Contains(errOut, "(--even-split: the pipeline depth must divide the layers)") {
		t.Errorf("--pp 3 --even-split: exit %d, %q; want no plan naming --even-split", code, errOut)
	}
	res := planJSON(t, append(job, "--even-split")...)
	if len(res.GetPlans()) == 0 {
		t.Fatalf("--even-split: no plan (%s)", res.GetNoPlanReason())
	}
	for _, p := range append(res.GetPlans(), res.GetPareto()...) {
		l := p.GetLayout()
		if v := max(1, l.GetVirtualStages()); 32%(l.GetPp()*v) != 0 || len(l.GetLayerSplit()) > 0 {
			t.Errorf("--even-split: plan pp %d v %d layer split %v", l.GetPp(), l.GetVirtualStages(), l.GetLayerSplit())
		}
	}
}

// --experts-whole: Mixtral 8x7B on 32 H100 with TP 2 or 4 holds the experts whole
// (etp 1) in its best plan when both are searched; off leaves no plan with etp 1,
// on no plan with TP and SP that splits them.
func TestExpertsWholeFlag(t *testing.T) {
	job := []string{"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "32", "--seq", "4096", "--gbs", "256", "--tp", "2,4", "--top", "5"}
	if res := planJSON(t, job...); len(res.GetPlans()) == 0 || res.GetPlans()[0].GetLayout().GetEtp() != 1 {
		t.Fatalf("both searched: the best plan does not hold the experts whole, so pinning shows nothing: %v (%s)", res.GetPlans(), res.GetNoPlanReason())
	}
	for _, c := range []struct {
		value string
		whole bool
	}{{"off", false}, {"on", true}, {"ON", true}} {
		res := planJSON(t, append(job, "--experts-whole", c.value)...)
		if len(res.GetPlans()) == 0 {
			t.Fatalf("--experts-whole %s: no plan (%s)", c.value, res.GetNoPlanReason())
		}
		for _, p := range append(res.GetPlans(), res.GetPareto()...) {
			l := p.GetLayout()
			if c.whole && l.GetTp() > 1 && l.GetSp() && l.GetEtp() != 1 || !c.whole && l.GetEtp() == 1 {
				t.Errorf("--experts-whole %s: plan tp %d sp %v ep %d etp %d", c.value, l.GetTp(), l.GetSp(), l.GetEp(), l.GetEtp())
			}
		}
	}
}

// Bad values name the flag.
func TestFrameworkConstraintFlagErrors(t *testing.T) {
	job := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--seq", "4096", "--gbs", "64"}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{append(job[:len(job):len(job)], "--experts-whole", "whole"), exitUsage, `invalid argument "whole" for "--experts-whole" flag: want a comma-separated list of on, off`},
		{append(job[:len(job):len(job)], "--even-split=maybe"), exitUsage, `"--even-split"`},
		{append(job[:len(job):len(job)], "--even-split", "--uneven-pp"), exitFailure, "--even-split: keeps to even pipeline splits, but --uneven-pp asks for uneven ones"},
		{[]string{"plan", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "8", "--seq", "4096", "--gbs", "64", "--experts-whole", "on", "--sp", "off"},
			exitFailure, "--experts-whole: lists only whole experts, which need sequence parallelism"},
	} {
		code, _, errOut := run(c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}
