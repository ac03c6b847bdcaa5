package cli

import (
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// --degraded-node names a node's degraded parts: with a node to spare the plans
// avoid it and say so; with none they use it; a malformed or repeated entry is
// refused naming the flag and the entry.
func TestDegradedNodeFlag(t *testing.T) {
	base := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "24", "--gbs", "48", "--seq", "4096", "--top", "3"}
	code, out, errs := run(append(base, "--nodes", "4", "--degraded-node", "1:nic=0.25,gpu=0.8", "--json")...)
	var plan pb.EstimatePlanResponse
	if err := protojson.Unmarshal([]byte(out), &plan); code != 0 || err != nil || len(plan.GetPlans()) == 0 {
		t.Fatalf("plan beside degraded node 1: exit %d, %v: %.300s %s", code, err, out, errs)
	}
	for _, p := range plan.GetPlans() {
		if a := p.GetPlacement().GetDegradedNodesAvoided(); len(a) != 1 || a[0] != 1 {
			t.Errorf("plan %d: degraded nodes avoided %v, want [1]", p.GetRank(), a)
		}
	}
	code, out, errs = run(append(base, "--nodes", "3", "--degraded-node", "1:link=0.5", "--wide")...)
	if code != 0 || !strings.Contains(out, "uses degraded n1") {
		t.Errorf("plan on degraded node 1: exit %d %s %s", code, out, errs)
	}
	for arg, want := range map[string]string{
		"5:nic=0.5":       `--degraded-node "5:nic=0.5": "5" is not a node of the 4-node cluster`,
		"1":               "give NODE:PART=SPEED",
		"1:disk=0.5":      `"disk" is not a part`,
		"1:nic=half":      `nic: "half" is not a number`,
		"1:nic=0.5,nic=1": "nic is given twice",
		"1:nic=2":         "--degraded-node: must be 0 (none) or from 0.001 to 1",
	} {
		if code, _, errs := run(append(base, "--nodes", "4", "--degraded-node", arg)...); code == 0 || !strings.Contains(errs, want) {
			t.Errorf("--degraded-node %s: exit %d %s; want %q", arg, code, errs, want)
		}
	}
	if code, _, errs := run(append(base, "--nodes", "4", "--degraded-node", "1:nic=0.5", "--degraded-node", "1:gpu=0.5")...); code == 0 ||
		!strings.Contains(errs, `--degraded-node "1:gpu=0.5": node 1 is also given by --degraded-node "1:nic=0.5"`) {
		t.Errorf("node 1 twice: exit %d %s", code, errs)
	}
}

// A node given twice in --exclude-nodes, or both excluded and degraded, is
// refused naming the flags the user typed, not the API's exclude_nodes[i] — in
// process and against the daemon alike.
func TestExcludedNodeTwiceNamesTheFlag(t *testing.T) {
	addr := daemon(t)
	base := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "32", "--seq", "4096", "--nodes", "4"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--exclude-nodes", "1,1"}, "--exclude-nodes: node 1 is listed twice"},
		{[]string{"--exclude-nodes", "1", "--degraded-node", "1:nic=0.5"}, `--degraded-node "1:nic=0.5": node 1 is also excluded by --exclude-nodes`},
	} {
		for _, extra := range [][]string{nil, {"--server", addr}} {
			args := append(append(append([]string{}, base...), c.args...), extra...)
			code, _, errs := run(args...)
			if code == 0 || !strings.Contains(errs, c.want) || strings.Contains(errs, "exclude_nodes") {
				t.Errorf("%v %v: exit %d, stderr %q, want %q", c.args, extra, code, errs, c.want)
			}
		}
	}
}
