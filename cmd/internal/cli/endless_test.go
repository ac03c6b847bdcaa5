package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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

// A cluster file that does not build for the job (no NIC on a 2-node job) is
// named as the file, not as the catalog system it is based on: "cluster
// dgx-h100: nics.per_node: …" was said of a file that set nics.per_node 0.
func TestClusterFileBuildErrorNamesTheFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(f, []byte("base: dgx-h100\nnics: {per_node: 0}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "--cluster-file " + f + ": nics.per_node"
	for _, args := range [][]string{
		{"collective", "--cluster-file", f, "--nodes", "2", "--op", "allreduce", "--size", "1GiB"},
		{"estimate", "--cluster-file", f, "--model", "llama3-8b", "--gpus", "16", "--tp", "8", "--mbs", "1", "--gbs", "64", "--seq", "4096"},
		{"plan", "--cluster-file", f, "--model", "llama3-8b", "--gpus", "16", "--gbs", "64", "--seq", "4096"},
	} {
		code, _, errOut := run(args...)
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, want 1 and %q: %.300s", args[0], code, want, errOut)
		}
	}
}

// A configs file none of whose configs is ranked says so: "1 of 1 configs
// failed (line 1); the others are ranked above" spoke of others that were not.
func TestRankEveryConfigFailed(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(f, []byte("{not json\n{\"model\": {\"name\": \"llama3-8b\"}, \"gpu\": 8}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run("rank", "--in", f)
	if code != 1 || !strings.Contains(errOut, "2 of 2 configs failed (line 1, 2): none is ranked") || strings.Contains(errOut, "the others") {
		t.Errorf("exit %d: %.300s", code, errOut)
	}
}

// A configs file that is one JSON value over several lines — a request
// pretty-printed, or an array of them — is refused as such, saying rank reads one
// request per line; it failed line by line ("line 1: not an EstimateStepRequest:
// unexpected token") with no word of the format.
func TestRankPrettyPrintedFile(t *testing.T) {
	step := `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "layout": {"tp": 8, "pp": 1, "dp": 1, "micro_batch": 1}, "training": {"seq_len": 4096, "global_batch": 8}}`
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, []byte(step), "", "  "); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name, text, want string
	}{
		{"object.json", "\uFEFF" + pretty.String() + "\n", "one JSON object over 18 lines, not JSON Lines: rank reads one EstimateStepRequest per line; write it on one line (e.g. jq -c .)"},
		{"array.json", "[\n" + pretty.String() + ",\n" + step + "\n]\n", "a JSON array, not JSON Lines: rank reads one EstimateStepRequest per line; write its elements one per line (e.g. jq -c '.[]')"},
		{"line.json", "[" + step + ", " + step + "]\n", "a JSON array, not JSON Lines"},
	} {
		f := filepath.Join(dir, c.name)
		if err := os.WriteFile(f, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run("rank", "--in", f)
		if code != 1 || !strings.Contains(errOut, "--in "+f+": "+c.want) || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %.400q, want %q", c.name, code, out, errOut, c.want)
		}
	}
	// One request on one line is ranked as before.
	f := filepath.Join(dir, "one.jsonl")
	if err := os.WriteFile(f, []byte(step+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run("rank", "--in", f); code != 0 {
		t.Errorf("one line: exit %d: %s", code, errOut)
	}
}

// fullWriter fails every write, as a full disk does (/dev/full).
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// Output that cannot be written is a failure (exit 1, said on standard error),
// whatever the format: estimate's and plan's tables to a full disk exited 0
// with nothing written (their JSON was already refused so).
func TestOutputWriteErrorFails(t *testing.T) {
	for _, args := range [][]string{
		{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "8", "--mbs", "1", "--gbs", "64", "--seq", "4096"},
		{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "4096", "--top", "1"},
		{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allreduce", "--size", "1GiB"},
		{"catalog"},
		{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "8", "--mbs", "1", "--gbs", "64", "--seq", "4096", "--json"},
	} {
		var stderr bytes.Buffer
		code := Run(context.Background(), args, fullWriter{}, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
	}
}
