package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config refused for a field rank's flags set (the token budget below its
// step) names the flag, --tokens, in the table, the CSV and the JSON's message,
// in process and on a server, as plan does; the JSON's violations keep the API's
// field.
func TestRankItemErrorsNameTheFlag(t *testing.T) {
	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte(`{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 16}, "layout": {"tp": 2, "pp": 1, "dp": 4, "micro_batch": 1}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := daemon(t)
	for _, where := range [][]string{nil, {"--server", addr}} {
		for _, format := range []string{"table", "csv", "json"} {
			args := append([]string{"rank", "--in", f, "--objective", "cost", "--price", "2", "--tokens", "1", "--format", format, "--wide"}, where...)
			code, out, errOut := run(args...)
			if code != exitFailure {
				t.Fatalf("%q: exit %d: %s", args, code, errOut)
			}
			if !strings.Contains(out, "--tokens: must be at least one step's 65536 tokens") || strings.Contains(out, "token_budget: must") {
				t.Errorf("%q: the row does not name --tokens:\n%s", args, out)
			}
			if format == "json" && !strings.Contains(strings.ReplaceAll(out, " ", ""), `"field":"token_budget"`) {
				t.Errorf("%q: the violation's field is not the API's:\n%s", args, out)
			}
		}
	}
}
