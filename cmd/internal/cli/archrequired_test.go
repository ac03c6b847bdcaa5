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
