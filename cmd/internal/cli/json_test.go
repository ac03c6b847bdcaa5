package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every command that prints JSON (--json, or rank's --format json) prints one
// JSON value on standard output and nothing else there, whether it succeeds or
// fails: a script pipes it into a parser. It succeeds with exit 0 and an empty
// standard error; it fails with a non-zero exit and says why on standard error
// (a plan search that finds nothing still prints its answer, exit 1). The table
// names a case for every command that has such a flag, in process and, where the
// command takes --server, against a daemon.
func TestEveryJSONOutputParses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rows, err := os.ReadFile("../../../estimator/calibrate/testdata/rows/h100-ib-nebius/dstack-nebius-2n-allreduce.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rowsFile := write("rows.jsonl", string(rows))
	configsFile := write("configs.jsonl", configs) // one of its three lines is refused
	goodConfigs := write("good.jsonl", strings.Join(slices.DeleteFunc(strings.Split(configs, "\n"), func(l string) bool {
		return strings.Contains(l, `"tp": 3`) || strings.HasPrefix(l, "#")
	}), "\n"))
	server := daemon(t)
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gbs", "256", "--seq", "8192", "--top", "2", "--json"}
	estimate := []string{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--tp", "1", "--pp", "1", "--dp", "8", "--mbs", "1", "--gbs", "64", "--seq", "8192", "--json"}
	with := func(base []string, more ...string) []string { return append(slices.Clone(base), more...) }
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"plan", with(plan, "--gpus", "32"), exitOK},
		{"plan on a server", with(plan, "--gpus", "32", "--server", server), exitOK},
		{"plan with a picture", with(plan, "--gpus", "32", "--svg", filepath.Join(dir, "p.svg")), exitOK},
		{"plan without a feasible plan", with(plan, "--gpus", "8", "--model", "llama3-405b"), exitFailure},
		{"plan of an unknown model", with(plan, "--gpus", "8", "--model", "llama9"), exitFailure},
		{"plan on a server that does not answer", with(plan, "--gpus", "32", "--server", "127.0.0.1:1"), exitFailure},
		{"plan, bad flag value", with(plan, "--gpus", "thirty"), exitUsage},
		{"estimate", estimate, exitOK},
		{"estimate on a server", with(estimate, "--server", server), exitOK},
		{"estimate refused", with(estimate, "--mbs", "3"), exitFailure},
		{"collective", []string{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allreduce", "--size", "256MiB", "--json"}, exitOK},
		{"collective with its steps", []string{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allgather", "--size", "1MiB", "--steps", "--json"}, exitOK},
		{"collective on a server", []string{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allreduce", "--size", "256MiB", "--json", "--server", server}, exitOK},
		{"collective refused", []string{"collective", "--cluster", "dgx-h100", "--nodes", "2", "--op", "allreduce", "--size", "0", "--json"}, exitFailure},
		{"rank", []string{"rank", "--in", goodConfigs, "--format", "json"}, exitOK},
		{"rank on a server", []string{"rank", "--in", goodConfigs, "--format", "json", "--server", server}, exitOK},
		{"rank with a config refused", []string{"rank", "--in", configsFile, "--format", "json"}, exitFailure},
		{"rank on a server with a config refused", []string{"rank", "--in", configsFile, "--format", "json", "--server", server}, exitFailure},
		{"rank of a missing file", []string{"rank", "--in", filepath.Join(dir, "none.jsonl"), "--format", "json"}, exitFailure},
		{"catalog", []string{"catalog", "--json"}, exitOK},
		// Without --in-sample, runs refits leaving each source out: a minute or more.
		{"runs", []string{"runs", "--in-sample", "--json"}, exitOK},
		{"runs, filled", []string{"runs", "--in-sample", "--json", "--filled"}, exitOK},
		{"accuracy", []string{"accuracy", "--json"}, exitOK},
		{"accuracy with its rows", []string{"accuracy", "--rows", "--json"}, exitOK},
		{"accuracy, refitted", []string{"accuracy", "--fit", "--json"}, exitOK},
		{"accuracy, refitted and cross-validated", []string{"accuracy", "--fit", "--cross-validate", "--json"}, exitFailure},
		{"accuracy, refitted with its rows", []string{"accuracy", "--fit", "--rows", "--json"}, exitFailure},
		{"calibrate", []string{"calibrate", "--cluster", "dgx-h100", "--out", filepath.Join(dir, "c.yaml"), "--json", rowsFile}, exitOK},
		{"calibrate without inputs", []string{"calibrate", "--cluster", "dgx-h100", "--json"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errOut)
			}
			if code == exitOK && errOut != "" {
				t.Errorf("exit 0 with a standard error: %s", errOut)
			}
			if code != exitOK && strings.TrimSpace(errOut) == "" {
				t.Errorf("exit %d without a word on standard error", code)
			}
			if out == "" && code != exitOK {
				return // failed before it had an answer to print
			}
			dec := json.NewDecoder(strings.NewReader(out))
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("standard output is not JSON: %v\n%.400s", err, out)
			}
			if dec.More() {
				t.Errorf("more than one JSON value on standard output:\n%.400s", out)
			}
		})
	}
	// Every command with JSON output has a case above.
	for _, c := range commands() {
		if c.define == nil {
			continue
		}
		fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
		c.define(fs)
		if fs.Lookup("json") == nil && fs.Lookup("format") == nil {
			continue
		}
		t.Run("covers "+c.name, func(t *testing.T) {
			if !slices.ContainsFunc([]string{"plan", "estimate", "collective", "rank", "catalog", "runs", "accuracy", "calibrate"}, func(s string) bool { return s == c.name }) {
				t.Errorf("%s prints JSON and has no case in this table", c.name)
			}
		})
	}
}
