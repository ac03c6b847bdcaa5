package cli

import (
	"strings"
	"testing"
	"time"
)

// A file the command line reads that never ends (/dev/zero, a device, a pipe fed
// without end) is read up to a bound and refused naming the flag, not read until
// memory runs out: estimate --in /dev/zero grew without bound (46 s, then killed),
// and rank --in /dev/zero spun on one endless line, ignoring SIGTERM.
func TestEndlessFilesAreBounded(t *testing.T) {
	const dev = "/dev/zero"
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "256", "--seq", "8192", "--top", "1"}
	model := []string{"plan", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "256", "--seq", "8192", "--top", "1"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"estimate --in", []string{"estimate", "--in", dev}, "--in: " + dev + ": larger than"},
		{"rank --in", []string{"rank", "--in", dev}, "--in " + dev + ": larger than"},
		{"--model-file", append(model, "--model-file", dev), "--model-file: " + dev + ": larger than"},
		{"--free-map", append(plan, "--free-map", dev), dev + ": larger than"},
		{"load --in", []string{"load", "--server", "127.0.0.1:1", "--in", dev}, dev + ": larger than"},
		{"--tls-ca", []string{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allreduce", "--size", "1GiB", "--server", "127.0.0.1:1", "--tls-ca", dev}, "--tls-ca: " + dev + ": larger than"},
		{"--token-file", []string{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allreduce", "--size", "1GiB", "--server", "127.0.0.1:1", "--token-file", dev}, "--token-file: " + dev + ": larger than"},
	} {
		start := time.Now()
		code, _, errOut := run(tc.args...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, want 1 and %q: %.300s", tc.name, code, tc.want, errOut)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: %v to refuse", tc.name, d)
		}
	}
}
