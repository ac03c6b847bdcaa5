package cli

import (
	"strings"
	"testing"
)

// The interleaved schedule --vpp implies, refused, is named by --vpp, the flag
// given, not --schedule, which was not; a --schedule given is named by itself.
func TestVPPImpliedScheduleNamesVPP(t *testing.T) {
	est := []string{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "8", "--mbs", "1", "--gbs", "8", "--seq", "4096"}
	code, _, errOut := run(append(est, "--vpp", "2")...)
	if code != exitFailure || !strings.Contains(errOut, "stepcost estimate: --vpp: interleaved needs pp ≥ 2 (got pp 1)") {
		t.Errorf("--vpp 2 on pp 1: exit %d, %q", code, errOut)
	}
	code, _, errOut = run(append(est, "--vpp", "2", "--schedule", "interleaved")...)
	if code != exitFailure || !strings.Contains(errOut, "stepcost estimate: --schedule: interleaved needs pp ≥ 2") {
		t.Errorf("--schedule interleaved on pp 1: exit %d, %q", code, errOut)
	}
}
