package cli

import (
	"strings"
	"testing"
)

// collective's "not applicable" list names the algorithms a reason suggests as
// --algo takes them (pairwise), in process and through a daemon, while --json
// prints the API's answer, which names them as a request sends them
// (ALGORITHM_PAIRWISE).
func TestNotApplicableSpelledAsTheFlags(t *testing.T) {
	addr := daemon(t)
	args := []string{"collective", "--cluster", "dgx-h100", "--nodes", "4", "--gpus-per-node", "1", "--op", "alltoall", "--size", "1MiB"}
	for _, where := range [][]string{nil, {"--server", addr}} {
		code, out, errOut := run(append(append([]string(nil), args...), where...)...)
		if code != 0 || !strings.Contains(out, "ring does not do all-to-all (use pairwise or direct)") || strings.Contains(out, "ALGORITHM_") {
			t.Errorf("%v: exit %d %s\n%s", where, code, errOut, out)
		}
		code, out, errOut = run(append(append([]string(nil), args...), append(where, "--json")...)...)
		if code != 0 || !strings.Contains(out, "(use ALGORITHM_PAIRWISE or ALGORITHM_DIRECT)") {
			t.Errorf("%v --json: exit %d %s\n%s", where, code, errOut, out)
		}
	}
}

// A reason is printed whole, after the algorithm and the operation it names: the
// reason direct cannot run across nodes has a colon of its own ("needs a
// full-bandwidth switch: the group must sit in one NVLink domain") and was cut at
// it, printing only what followed.
func TestNotApplicableReasonPrintedWhole(t *testing.T) {
	code, out, errOut := run("collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allreduce", "--size", "1MiB")
	if code != 0 || !strings.Contains(out, "direct (one-shot) needs a full-bandwidth switch: the group must sit in one NVLink domain") {
		t.Errorf("exit %d %s\n%s", code, errOut, out)
	}
}

// An algorithm forced with --algo is said to be forced, not NCCL's own pick: the
// note under the table said "chosen: what NCCL picks by itself, here the cheapest
// of the algorithms it picks from" of a tree all-reduce NCCL never picks by itself,
// priced above the NVLS tree.
func TestForcedAlgorithmNotCalledNCCLsPick(t *testing.T) {
	code, out, errOut := run("collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allreduce", "--size", "256MiB", "--algo", "tree")
	if code != 0 || !strings.Contains(out, "* chosen: forced with --algo tree") || strings.Contains(out, "what NCCL picks by itself") {
		t.Errorf("exit %d %s\n%s", code, errOut, out)
	}
	code, out, errOut = run("collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allreduce", "--size", "256MiB")
	if code != 0 || !strings.Contains(out, "* chosen: what NCCL picks by itself") || strings.Contains(out, "forced with") {
		t.Errorf("auto: exit %d %s\n%s", code, errOut, out)
	}
}
