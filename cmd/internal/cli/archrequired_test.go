package cli

import (
	"strings"
	"testing"
)

// Architecture flags without --layers, --hidden or --heads name those missing as
// required, not as given 0 ("--layers: must be an integer between 1 and 10000
// (got 0)" for a flag not given), and say which were given.
func TestArchitectureFlagsNameTheMissingOnes(t *testing.T) {
	rest := []string{"--cluster", "dgx-h100", "--gpus", "8", "--tp", "8", "--mbs", "1", "--gbs", "8", "--seq", "4096"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kv-heads", "4"}, "architecture flags: --layers, --hidden and --heads: required to describe a model flag by flag (given: --kv-heads); or name one with --model"},
		{[]string{"--layers", "4", "--hidden", "512"}, "architecture flags: --heads: required to describe a model flag by flag (given: --layers, --hidden)"},
	} {
		args := append(append([]string{"estimate"}, tc.args...), rest...)
		code, _, errOut := run(args...)
		if code != exitFailure || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "(got 0)") {
			t.Errorf("%q: exit %d, %q; want %q", args, code, errOut, tc.want)
		}
	}
	// Given as 0, they are refused as given.
	args := append([]string{"estimate", "--layers", "0", "--hidden", "512", "--heads", "8"}, rest...)
	if code, _, errOut := run(args...); code != exitFailure || !strings.Contains(errOut, "--layers: must be an integer between 1 and 10000 (got 0)") {
		t.Errorf("%q: exit %d, %q", args, code, errOut)
	}
}

// An architecture flag's refusal names the other fields its rule speaks of by
// their flags too: "--global-every: … needs sliding_window" and "--heads: must
// divide hidden (64) into whole heads, or give head_dim" named the request's
// fields where the flags are --sliding-window and --head-dim.
func TestArchitectureRuleNamesFlags(t *testing.T) {
	base := []string{"estimate", "--cluster", "dgx-h100", "--gpus", "8", "--mbs", "1", "--gbs", "8", "--seq", "2048", "--layers", "4", "--hidden", "512"}
	for _, c := range []struct {
		args      []string
		want, not string
	}{
		{[]string{"--heads", "8", "--global-every", "2"}, "--global-every: makes every n-th layer global among windowed ones: needs --sliding-window", "sliding_window"},
		{[]string{"--heads", "3"}, "or give --head-dim", "head_dim"},
	} {
		code, _, errOut := run(append(append([]string(nil), base...), c.args...)...)
		if code != exitFailure || !strings.Contains(errOut, c.want) || strings.Contains(errOut, c.not) {
			t.Errorf("%v: exit %d, %s; want %q", c.args, code, errOut, c.want)
		}
	}
}
