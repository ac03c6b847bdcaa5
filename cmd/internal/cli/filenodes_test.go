package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --cluster-file that describes more than one node is the cluster's size, as
// cluster.nodes is over the API: a job larger than it is refused naming the file,
// its nodes and the flag that sized the job, where plan and estimate priced it on
// a cluster grown past the file's nodes without a word ("nodes 0–63" of a 16-node
// pod). --nodes still sizes the cluster; a file of one node is sized to the job.
func TestClusterFileNodesAreItsSize(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pod := write("pod.yaml", "base: dgx-h100\nname: my-h100-pod\nnodes: 16\n")
	node := write("node.yaml", "base: dgx-h100\nname: one-node\nnodes: 1\n")
	plan := []string{"plan", "--model", "llama3-8b", "--gbs", "1024", "--seq", "4096", "--top", "1"}
	with := func(more ...string) []string { return append(append([]string(nil), plan...), more...) }
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{with("--cluster-file", pod, "--gpus", "256"), exitFailure, "its 16 nodes of 8 GPUs cannot hold the job's 256 GPUs (--gpus 256)"},
		{with("--cluster-file", pod, "--max-gpus", "256"), exitFailure, "cannot hold jobs of up to 256 GPUs (--max-gpus 256)"},
		{[]string{"estimate", "--model", "llama3-8b", "--cluster-file", pod, "--tp", "1", "--pp", "1", "--dp", "256", "--mbs", "1", "--gbs", "1024", "--seq", "4096"}, exitFailure, "cannot hold the job's 256 GPUs (tp×pp×dp×cp = 256)"},
		{with("--cluster-file", pod, "--gpus", "128"), exitOK, ""},
		{with("--cluster-file", pod, "--gpus", "256", "--nodes", "32"), exitOK, ""},
		{with("--cluster-file", node, "--gpus", "256"), exitOK, ""},
	} {
		code, out, errOut := run(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %.300s%.300s; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
}
