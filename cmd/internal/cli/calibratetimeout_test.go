package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// In process, a calibration stops at --timeout (or when the command's context is
// cancelled, as Ctrl-C does) with an error saying so, and writes no cluster file;
// before, it ran to the end whatever the deadline or an interrupt. A sweep
// stated on thousands of nodes is said on standard error to need more than the
// default heap before the calibration starts.
func TestCalibrateInProcessStops(t *testing.T) {
	dir := t.TempDir()
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata")
	oci, err := filepath.Glob(filepath.Join(td, "a100-roce", "oci-*.txt"))
	if err != nil || len(oci) != 5 {
		t.Fatalf("%d OCI files: %v", len(oci), err)
	}
	var ly strings.Builder
	for _, f := range oci {
		ly.WriteString(filepath.Base(f) + ": {op: allreduce}\n")
	}
	layout, out := filepath.Join(dir, "layout.yaml"), filepath.Join(dir, "out.yaml")
	if err := os.WriteFile(layout, []byte(ly.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"calibrate", "--cluster", "oci-bm-gpu-a100", "--layout", layout, "--out", out}, oci...)
	// The five sweeps take about a second of CPU: a microsecond stops them.
	code, _, errOut := run(append(args, "--timeout", "1us")...)
	if code != 1 || !strings.Contains(errOut, "--timeout: stopped after") {
		t.Errorf("--timeout 1us: exit %d, %q", code, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e bytes.Buffer
	if code := Run(ctx, args, &o, &e); code != 1 || !strings.Contains(e.String(), "interrupted after") {
		t.Errorf("cancelled: exit %d, %q", code, e.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a stopped calibration wrote %s: %v", out, err)
	}
	if code, _, errOut := run(append(args, "--timeout", "-1s")...); code == 0 || !strings.Contains(errOut, "--timeout: must be at least 0") {
		t.Errorf("--timeout -1s: exit %d, %q", code, errOut)
	}

	// Lambda's two-node B200 sweep stated as run on 16 384 nodes (its bus
	// bandwidths those of its sizes and times on that many ranks, as
	// server/calload_test.go's largeSweeps states them).
	data, err := os.ReadFile(filepath.Join(td, "b200-ib", "dstack-lambda-allreduce.txt"))
	if err != nil {
		t.Fatal(err)
	}
	const ranks = 8 * 16384.0
	var b strings.Builder
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 13 {
			size, err1 := strconv.ParseFloat(f[0], 64)
			t1, err2 := strconv.ParseFloat(f[5], 64)
			t2, err3 := strconv.ParseFloat(f[9], 64)
			if err1 == nil && err2 == nil && err3 == nil {
				a1, a2, bus := size/t1/1e3, size/t2/1e3, 2*(ranks-1)/ranks
				line = fmt.Sprintf("%12s %13s %9s %7s %7s %8.2f %7.2f %7.2f %7s %8.2f %7.2f %7.2f %7s\n",
					f[0], f[1], f[2], f[3], f[4], t1, a1, a1*bus, f[8], t2, a2, a2*bus, f[12])
			}
		}
		b.WriteString(line)
	}
	big := filepath.Join(dir, "n16384.txt")
	if err := os.WriteFile(big, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run("calibrate", "--cluster", "hgx-b200", "--nodes", "16384", "--gpus-per-node", "8", "--timeout", "1us", big)
	if code != 1 || !strings.Contains(errOut, "these inputs need about") || !strings.Contains(errOut, "16384 node(s)") || !strings.Contains(errOut, "--timeout: stopped after") {
		t.Errorf("16 384 nodes, --timeout 1us: exit %d, %q", code, errOut)
	}
}
