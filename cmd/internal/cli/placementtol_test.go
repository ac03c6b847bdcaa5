package cli

import (
	"slices"
	"strings"
	"testing"
)

// --placement-tolerance 0 is a tolerance the command line sends, not "unset": it
// reaches the request in process and through a daemon, so without a free map (one
// placement per job size) the plans say it has no effect, as they do for 0.5; a
// command line without the flag gets no such warning.
func TestPlacementToleranceZeroIsSent(t *testing.T) {
	addr := daemon(t)
	args := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "16", "--seq", "4096", "--top", "1", "--json"}
	warned := func(extra ...string) bool {
		t.Helper()
		code, out, errOut := run(append(slices.Clone(args), extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errOut)
		}
		return strings.Contains(out, "placement_tolerance: no effect")
	}
	for _, where := range [][]string{nil, {"--server", addr}} {
		if warned(where...) {
			t.Errorf("%v without --placement-tolerance: warned", where)
		}
		for _, tol := range []string{"0", "0.5"} {
			if !warned(append([]string{"--placement-tolerance", tol}, where...)...) {
				t.Errorf("%v --placement-tolerance %s: not sent (no warning)", where, tol)
			}
		}
	}
}
