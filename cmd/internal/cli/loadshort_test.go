package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --duration over before any request is sent is said so, naming the flag: load
// said "no successful request (0 errors; the first: <nil>)".
func TestLoadDurationTooShortNamesTheFlag(t *testing.T) {
	addr := daemon(t)
	f := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(f, []byte(`{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 8}, "gpus": 8, "top_k": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("load", "--server", addr, "--in", f, "--duration", "1ns")
	if code != exitFailure || out != "" || !strings.Contains(errOut, "--duration 1ns: over before a request was sent") || strings.Contains(errOut, "<nil>") {
		t.Errorf("--duration 1ns: exit %d, %q %q", code, out, errOut)
	}
}
