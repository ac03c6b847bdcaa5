package cli

import (
	"strings"
	"testing"
)

// A flag given twice with two values is refused, naming the flag and both values,
// as the service refuses a field given twice: the parser kept the last and dropped
// the first without a word (--tp 4 --tp 8 searched TP 8 only). Given twice with
// one value, as a list flag's values in one, or a repeatable flag repeated, it is
// taken.
func TestFlagGivenTwice(t *testing.T) {
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "16", "--seq", "4096", "--top", "1"}
	est := []string{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "8", "--mbs", "1", "--gbs", "8", "--seq", "4096"}
	coll := []string{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--size", "64MiB"}
	for _, tc := range []struct {
		args []string
		want string // "" when taken
	}{
		{append(est, "--seq", "2048"), `--seq: given twice, as "4096" and "2048"; give it once`},
		{append(est, "--seq=2048"), `--seq: given twice, as "4096" and "2048"`},
		{append(est, "-seq", "2048"), `--seq: given twice, as "4096" and "2048"`},
		{append(est, "--json", "--json=false"), `--json: given twice, as "true" and "false"`},
		{append(est, "--framework", "nemo", "--framework", "fsdp"), `--framework: given twice, as "nemo" and "fsdp"`},
		{append(plan, "--tp", "4", "--tp", "8"), `--tp: given twice, as "4" and "8"; give it once (a list in one value, comma-separated: --tp 4,8)`},
		{append(plan, "--schedule", "1f1b", "--schedule", "interleaved"), `--schedule: given twice, as "1f1b" and "interleaved"; give it once (a list in one value, comma-separated`},
		{append(plan, "--nodes", "8", "--exclude-nodes", "3", "--exclude-nodes", "7"), `--exclude-nodes: given twice, as "3" and "7"; give it once (a list in one value, comma-separated: --exclude-nodes 3,7)`},
		{append(coll, "--size", "1GiB"), `--size: given twice, as "64MiB" and "1GiB"`},
		{append(coll, "--wide", "--wide=false"), `--wide: given twice, as "true" and "false"`},
		{[]string{"rank", "--in", "a.jsonl", "--in", "b.jsonl"}, `--in: given twice, as "a.jsonl" and "b.jsonl"`},
		// Taken: one value twice, a repeatable flag, what follows "--".
		{append(est, "--seq", "4096"), ""},
		{append(est, "--json", "--json=true"), ""},
		{append(plan, "--nodes", "4", "--degraded-node", "2:nic=0.5", "--degraded-node", "3:gpu=0.5"), ""},
	} {
		code, out, errOut := run(tc.args...)
		if tc.want == "" {
			if code != exitOK {
				t.Errorf("%q: exit %d: %s", tc.args, code, errOut)
			}
			continue
		}
		if code != exitFailure || out != "" || !strings.HasPrefix(errOut, "stepcost "+tc.args[0]+": "+tc.want) {
			t.Errorf("%q: exit %d, stdout %d bytes, %q; want exit 1 and %q", tc.args, code, len(out), errOut, tc.want)
		}
	}
	// --help still shows the help.
	if code, out, _ := run(append(est, "--seq", "1", "--help")...); code != exitOK || !strings.Contains(out, "Usage:") {
		t.Errorf("--help with a flag twice: exit %d", code)
	}
	// A value out of range is said first (exit 2), as a wrong command line.
	if code, _, errOut := run(append(est, "--seq", "4294971392")...); code != exitUsage || !strings.Contains(errOut, `for "--seq" flag: out of range`) {
		t.Errorf("--seq out of range and twice: exit %d %q", code, errOut)
	}
	// A wrong command line is said first.
	if code, _, errOut := run(append(est, "--seq", "1", "--no-such")...); code != exitUsage || !strings.Contains(errOut, "unknown flag --no-such") {
		t.Errorf("unknown flag with a flag twice: exit %d %q", code, errOut)
	}
}
