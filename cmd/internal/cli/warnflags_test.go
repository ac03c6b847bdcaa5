package cli

import (
	"strings"
	"testing"
)

// A warning under a table names what it speaks of as the command line does: the
// flags (--gpus-per-node, --exclude-nodes, --degraded-node) and their values (ll,
// nvls), not the request's fields and enum names beside a flag ("(give
// gpus_per_node below 8)", "without --free-map, exclude_nodes or degraded_nodes",
// "PROTOCOL_LL is not what the chosen ALGORITHM_NVLS runs (PROTOCOL_SIMPLE)"),
// in process and through a daemon.
func TestWarningsNameFlagsAndValues(t *testing.T) {
	addr := daemon(t)
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"collective", "--cluster", "dgx-h100", "--nodes", "4", "--op", "allreduce", "--size", "1GiB", "--concurrent"},
			[]string{"warning: --concurrent: no effect:", "(give --gpus-per-node below 8)"}, []string{"gpus_per_node"}},
		{[]string{"collective", "--cluster", "dgx-h100", "--op", "allreduce", "--size", "1MiB", "--algo", "nvls", "--protocol", "ll"},
			[]string{"warning: --protocol: ll is not what the chosen nvls runs (simple)"}, []string{"PROTOCOL_", "ALGORITHM_"}},
		{[]string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "32", "--gbs", "256", "--seq", "8192", "--top", "1", "--placement-tolerance", "0.1"},
			[]string{"warning: --placement-tolerance: no effect: without --free-map, --exclude-nodes or --degraded-node"}, []string{"exclude_nodes", "degraded_nodes"}},
	} {
		for _, where := range [][]string{nil, {"--server", addr}} {
			args := append(append([]string(nil), c.args...), where...)
			code, out, errOut := run(args...)
			flat := strings.Join(strings.Fields(out), " ")
			for _, w := range c.want {
				if code != exitOK || !strings.Contains(flat, w) {
					t.Errorf("%v: exit %d %s: no %q in\n%s", args, code, errOut, w, out)
				}
			}
			for _, n := range c.not {
				if strings.Contains(flat, n) {
					t.Errorf("%v: %q in\n%s", args, n, out)
				}
			}
		}
	}
}
