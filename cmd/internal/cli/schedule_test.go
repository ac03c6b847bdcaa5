package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

func TestCollectiveStepsTable(t *testing.T) {
	code, out, errOut := run("collective", "--cluster", "dgx-h100", "--nodes", "3", "--op", "allreduce", "--size", "100MB", "--algo", "ring", "--steps")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"schedule of ring/", "46 steps", "rank r is GPU r mod 8 of node ⌊r/8⌋",
		"verified: every rank ends with the element-wise sum of all 24 ranks' inputs",
		"time: schedule", "closed form", "agree within",
		"0–22", "reduce-scatter", "23–45", "all-gather", "add via nvlink:", "copy via nvlink", "e.g. 0→1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCollectiveStepsJSON(t *testing.T) {
	code, out, errOut := run("collective", "--cluster", "dgx-h100", "--nodes", "4", "--gpus-per-node", "1", "--op", "reducescatter",
		"--size", "64MiB", "--algo", "pat", "--steps", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep pb.SimulateCollectiveResponse
	if err := protojson.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not the API's JSON: %v\n%s", err, out)
	}
	s := scheduleFromProto(rep.GetSchedule())
	if s == nil {
		t.Fatalf("no schedule: %s", out)
	}
	if s.Algorithm != "pat" || s.Steps != 2 || len(s.Rows) != 2 || !s.Verification.Verified ||
		!strings.Contains(s.Verification.Result, "block r of the element-wise sum of all 4 ranks") ||
		s.AnalyticalTimeUs != rep.GetChosen().GetTimeUs() || s.DifferencePct < -1 || s.DifferencePct > 1 {
		t.Fatalf("schedule %+v", s)
	}
	for _, r := range s.Rows {
		if len(r.Flows) != 1 || r.Flows[0].Kind != "add" || r.Flows[0].Route != "nic→nic" || r.Flows[0].Pairs != 4 || len(r.Flows[0].Examples) != 4 {
			t.Errorf("row %+v", r)
		}
	}
	// Without --steps there is no schedule in the JSON.
	if _, out, _ := run("collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allgather", "--size", "1MiB", "--json"); strings.Contains(out, `"schedule"`) {
		t.Errorf("schedule without --steps:\n%s", out)
	}
}

func TestCollectiveStepsRowsAndErrors(t *testing.T) {
	code, out, errOut := run("collective", "--cluster", "dgx-h100", "--nodes", "3", "--op", "alltoall", "--size", "1MiB", "--algo", "pairwise",
		"--steps", "--step-rows", "3")
	if code != 0 || !strings.Contains(out, "20 more row(s) not shown (--step-rows") || !strings.Contains(out, "exchange, send to rank +3") ||
		strings.Contains(out, "send to rank +4") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"rows without steps", []string{"--step-rows", "5"}, "--step-rows: applies only with --steps"},
		{"too many rows", []string{"--steps", "--step-rows", "5000"}, "--step-rows"},
		{"too large", []string{"--steps", "--nodes", "64"}, "--steps: schedule too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"collective", "--cluster", "dgx-h100", "--op", "allreduce", "--size", "1GiB", "--algo", "ring"}, tc.args...)
			code, out, errOut := run(args...)
			if code != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q, want %q\n%s", code, errOut, tc.want, out)
			}
		})
	}
}

// The daemon returns the same schedule; the CLI prints it the same way.
func TestCollectiveStepsRemote(t *testing.T) {
	addr := daemon(t)
	args := []string{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allreduce", "--size", "64MiB", "--algo", "dbtree", "--steps"}
	code, local, errOut := run(args...)
	if code != 0 {
		t.Fatalf("in process: exit %d: %s", code, errOut)
	}
	code, remote, errOut := run(append(args, "--server", addr)...)
	if code != 0 {
		t.Fatalf("remote: exit %d: %s", code, errOut)
	}
	// The schedule part (from "schedule of" on) is identical.
	cut := func(s string) string { return s[strings.Index(s, "schedule of"):] }
	if !strings.Contains(local, "schedule of dbtree/") || cut(local) != cut(remote) {
		t.Errorf("in process:\n%s\nremote:\n%s", local, remote)
	}
	code, out, errOut := run(append(args, "--server", addr, "--json")...)
	var v struct {
		Schedule struct {
			Verification struct{ Verified bool }
			Rows         []json.RawMessage
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || !v.Schedule.Verification.Verified || len(v.Schedule.Rows) == 0 {
		t.Errorf("remote JSON: exit %d %s\n%s", code, errOut, out)
	}
}
