package cli

import (
	"strings"
	"testing"
)

// A search that finds no plan says why on standard error naming the flags that
// set the constraints ("--tp [3], --schedule [1f1b interleaved]"), as the
// command's other errors do, in process and through a daemon; --json's
// no_plan_reason stays the API's ("constraints.tp [3]").
func TestNoPlanReasonNamesTheFlags(t *testing.T) {
	addr := daemon(t)
	for _, where := range [][]string{nil, {"--server", addr}} {
		for _, tc := range []struct {
			args       []string
			want, json string
		}{
			{[]string{"--gpus", "8", "--tp", "3"}, "the constraints leave no layout to search: --tp [3], --schedule [1f1b interleaved] (megatron-core's)", "constraints.tp [3]"},
			{[]string{"--gpus", "8", "--mbs", "3"}, "--mbs [3], --schedule [1f1b interleaved]", "constraints.micro_batch [3]"},
			{[]string{"--gpus", "1"}, "offload (--offload) would make room", "offload (constraints.offload) would make room"},
		} {
			args := append(append(append([]string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gbs", "8", "--seq", "4096"}, tc.args...), where...), "--json")
			code, out, errOut := run(args...)
			if code != exitFailure || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "constraints.") {
				t.Errorf("%q: exit %d, stderr %q; want %q", args, code, errOut, tc.want)
			}
			if !strings.Contains(out, tc.json) {
				t.Errorf("%q: no_plan_reason is not the API's %q:\n%s", args, tc.json, out)
			}
		}
	}
}
