package cli

import (
	"strings"
	"testing"
)

// --nodes too small for the job names the size flag given: --gpus is the job's
// size, --max-gpus only the top of the sizes searched ("up to").
func TestNodesTooSmallNamesTheSizeFlag(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		want, wantNot string
	}{
		{[]string{"--gpus", "64"}, "--nodes: 4 nodes of 8 GPUs cannot hold the job's 64 GPUs (--gpus 64)", "up to"},
		{[]string{"--max-gpus", "64"}, "--nodes: 4 nodes of 8 GPUs cannot hold jobs of up to 64 GPUs (--max-gpus 64)", "job's"},
		{[]string{"--min-gpus", "40", "--max-gpus", "64"}, "cannot hold jobs of up to 64 GPUs (--max-gpus 64)", "job's"},
	} {
		args := append([]string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gbs", "512", "--seq", "4096", "--nodes", "4"}, tc.args...)
		code, _, errOut := run(args...)
		if code == 0 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, tc.wantNot) {
			t.Errorf("%q: exit %d, stderr %q; want %q", args, code, errOut, tc.want)
		}
	}
}
