package cli

import (
	"strings"
	"testing"
)

// A pin refused because another pin leaves it no layout names that other pin by
// its flag, as the pin at fault is named ("--sp: … but --tp lists no tp above
// 1"), where it named the request's path (constraints.tp), which the command
// line never gave; a list's entry is its list's flag (--mbs, not --mbs[0]). In
// process and through a daemon.
func TestRefusedPinNamesTheOtherPinsFlag(t *testing.T) {
	addr := daemon(t)
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--nodes", "4", "--gpus", "16", "--gbs", "64", "--seq", "4096"}
	moe := []string{"plan", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--nodes", "8", "--gpus", "64", "--gbs", "64", "--seq", "4096"}
	for _, where := range [][]string{nil, {"--server", addr}} {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{append(plan, "--tp", "1", "--sp", "on"), "--sp: asks for sequence parallelism, which needs tp > 1, but --tp lists no tp above 1 (got [1])"},
			{append(plan, "--tp", "1", "--overlap-tp", "on"), "--overlap-tp: asks for TP communication overlap, which needs tp > 1, but --tp lists no tp above 1 (got [1])"},
			{append(plan, "--sp", "off", "--overlap-tp", "on"), "but --sp lists only off"},
			{append(plan, "--mbs", "16", "--max-mbs", "4"), "--max-mbs: is 4, but --mbs asks for 16"},
			{append(moe, "--overlap-ep", "on", "--pp", "2", "--schedule", "1f1b"), "but --pp lists no pp 1 (got [2]) and --schedule asks for 1f1b"},
		} {
			args := append(append([]string(nil), tc.args...), where...)
			code, _, errOut := run(args...)
			if code != exitFailure || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "constraints.") {
				t.Errorf("%q: exit %d, %q; want %q", args, code, errOut, tc.want)
			}
		}
	}
}
