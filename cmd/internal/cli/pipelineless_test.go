package cli

import (
	"strings"
	"testing"
)

// --schedule interleaved --vpp 7 without --pp answers plans of pp 1 (a job
// without a pipeline runs no schedule) and says so in the flags' words, in
// process and through a daemon; --json keeps the API's.
func TestPipelinelessPlansWarnFlag(t *testing.T) {
	addr := daemon(t)
	for _, where := range [][]string{nil, {"--server", addr}} {
		args := append([]string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64", "--seq", "4096", "--schedule", "interleaved", "--vpp", "7", "--top", "3"}, where...)
		code, out, errOut := run(args...)
		want := "warning: --schedule: [interleaved] pinned: plans with pp 1 run no pipeline schedule (a job without pipeline parallelism has none; --pp above 1 searches only pipelines)"
		if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("%q: exit %d, stderr %q; want %q in:\n%s", args, code, errOut, want, out)
		}
		code, out, _ = run(append(args, "--json")...)
		if code != 0 || !strings.Contains(out, `constraints.schedules: [SCHEDULE_INTERLEAVED] pinned: plans with pp 1 run no pipeline schedule`) {
			t.Errorf("%q --json: exit %d, no API warning in:\n%s", args, code, out)
		}
	}
}
