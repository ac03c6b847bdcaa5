package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// calibrate --server --timeout sends the timeout as the call's deadline, which
// the daemon stops at, and says so as in process: it was ignored, the call
// running to the daemon's default deadline (30 s) whatever --timeout said.
func TestCalibrateServerTimeoutIsTheDeadline(t *testing.T) {
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata")
	oci, err := filepath.Glob(filepath.Join(td, "a100-roce", "oci-*.txt"))
	if err != nil || len(oci) != 5 {
		t.Fatalf("%d OCI files: %v", len(oci), err)
	}
	dir := t.TempDir()
	var ly strings.Builder
	for _, f := range oci {
		ly.WriteString(filepath.Base(f) + ": {op: allreduce}\n")
	}
	layout := filepath.Join(dir, "layout.yaml")
	if err := os.WriteFile(layout, []byte(ly.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := daemon(t)
	args := append([]string{"calibrate", "--cluster", "oci-bm-gpu-a100", "--layout", layout, "--server", addr}, oci...)
	// The five sweeps take about a second of CPU: a microsecond stops them.
	if code, out, errOut := run(append(args, "--timeout", "1us")...); code != 1 || !strings.Contains(errOut, "--timeout: the daemon stopped after") {
		t.Errorf("--server --timeout 1us: exit %d, %.300s%.300s", code, out, errOut)
	}
	if code, _, errOut := run(append(args, "--timeout", "5m")...); code != 0 {
		t.Errorf("--server --timeout 5m: exit %d, %.300s", code, errOut)
	}
}
