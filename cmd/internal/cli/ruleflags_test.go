package cli

import (
	"strings"
	"testing"
)

// A refusal's rule that names another field the command's flags set names that
// flag ("(--gbs 8 × --seq 4096)", "and --max-gpus 8"), as the field at fault is
// named by its flag, in process and through a daemon.
func TestRuleNamesOtherFieldsByTheirFlags(t *testing.T) {
	addr := daemon(t)
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gbs", "8", "--seq", "4096"}
	for _, where := range [][]string{nil, {"--server", addr}} {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{append(plan, "--gpus", "8", "--objective", "cost", "--price", "2", "--tokens", "1"), "--tokens: must be at least one step's 32768 tokens (--gbs 8 × --seq 4096)"},
			{append(plan, "--min-gpus", "16", "--max-gpus", "8"), "--min-gpus: must be between 0 and --max-gpus 8 (got 16)"},
			{[]string{"estimate", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "1", "--ep", "8", "--mbs", "1", "--gbs", "8", "--seq", "4096", "--moe-pad-to-capacity"},
				"--moe-pad-to-capacity: pads to the capacity of --moe-capacity, which is 0"},
		} {
			args := append(append([]string(nil), tc.args...), where...)
			code, _, errOut := run(args...)
			if code != exitFailure || !strings.Contains(errOut, tc.want) {
				t.Errorf("%q: exit %d, %q; want %q", args, code, errOut, tc.want)
			}
		}
	}
}
