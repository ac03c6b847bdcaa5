package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A JSON file the command line reads with Go's decoder (--free-map, --model-file)
// is read whole and each key once: a key given twice kept the last value (a free
// map listing node 0 twice placed the job on the second list's GPUs alone; a
// model file naming llama3-8b then llama3-70b was estimated as the 70b), two keys
// naming one node ("00" and "0") overwrote each other, a second JSON value after
// the first was dropped, and an empty free map was read as no map at all (every
// GPU free).
func TestJSONFilesReadWholeAndOnce(t *testing.T) {
	dir := t.TempDir()
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "256", "--seq", "8192", "--top", "1"}
	model := []string{"plan", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "256", "--seq", "8192", "--top", "1"}
	for _, tc := range []struct {
		name, flag, body, want string
		args                   []string
	}{
		{"free map: a node twice", "--free-map", `{"0": [0, 1, 2, 3], "0": [4, 5, 6, 7]}`, `"0" is given twice`, plan},
		{"free map: one node by two keys", "--free-map", `{"00": [0, 1, 2, 3], "0": [4, 5, 6, 7]}`, `--free-map: node 0 is given twice ("0" and "00")`, plan},
		{"free map: a second value", "--free-map", `{"0": [0, 1, 2, 3, 4, 5, 6, 7]} {"1": [0]}`, `--free-map`, plan},
		{"free map: empty", "--free-map", `{}`, `lists no node`, plan},
		{"model file: a name twice", "--model-file", `{"name": "a", "name": "b", "layers": 2}`, `--model-file`, model},
		{"model file: a key twice", "--model-file", `{"name": "x", "layers": 32, "layers": 16, "hidden": 4096, "heads": 32, "ffn": 11008, "vocab": 32000}`, `"layers" is given twice`, model},
		{"model file: a second value", "--model-file", `"llama3-8b" "llama3-70b"`, `--model-file`, model},
	} {
		f := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
		if err := os.WriteFile(f, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(append(append([]string(nil), tc.args...), tc.flag, f)...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, want 1 and %q: %.200s%.300s", tc.name, code, tc.want, out, errOut)
		}
	}
	// The same files with each key once are read.
	for _, tc := range []struct{ flag, body string }{
		{"--free-map", `{"0": [0, 1, 2, 3, 4, 5, 6, 7]}`},
		{"--free-map", ` {"1": [0, 1, 2, 3, 4, 5, 6, 7], "0": [0]}` + "\n"},
		{"--model-file", `"llama3-8b"`},
	} {
		f := filepath.Join(dir, "ok.json")
		if err := os.WriteFile(f, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		args := plan
		if tc.flag == "--model-file" {
			args = model
		}
		if code, _, errOut := run(append(append([]string(nil), args...), tc.flag, f)...); code != 0 {
			t.Errorf("%s %s: exit %d: %s", tc.flag, tc.body, code, errOut)
		}
	}
}

// --model-file takes the API's model object, as the README says: a catalog name
// ({"name": "llama3-8b"}), an architecture ({"architecture": {…}}) or a parameter
// count ({"params": 8e9}), besides the architecture's own fields and a bare name.
// {"name": "llama3-8b"} was read as an architecture named llama3-8b and refused
// for its layers, hidden size, heads… of 0; the two others for an unknown field.
func TestModelFileTakesTheAPIModel(t *testing.T) {
	dir := t.TempDir()
	est := []string{"estimate", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "8", "--mbs", "1", "--gbs", "64", "--seq", "4096", "--json"}
	step := func(args ...string) (float64, string) {
		t.Helper()
		code, out, errOut := run(append(append([]string(nil), est...), args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		e := decodeEstimate(t, out)
		return e.GetStepTimeS(), strings.Join(e.GetAssumptions(), "\n")
	}
	file := func(body string) string {
		f := filepath.Join(dir, "model.json")
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	byName, named := step("--model", "llama3-8b")
	byParams, derived := step("--params", "8e9")
	for _, tc := range []struct {
		body        string
		want        float64
		assumptions string // the derived shape of a parameter count among them
	}{
		{`{"name": "llama3-8b"}`, byName, named},
		{`{"architecture": {"name": "llama3-8b", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "gated_mlp": true, "vocab": 128256}}`, byName, named},
		{`{"architecture": {"name": "llama3-8b", "layers": 32, "hidden": 4096, "heads": 32, "kvHeads": 8, "ffn": 14336, "gatedMlp": true, "vocab": 128256}}`, byName, named},
		{`{"params": 8e9}`, byParams, derived},
	} {
		got, assumptions := step("--model-file", file(tc.body))
		if got != tc.want || assumptions != tc.assumptions {
			t.Errorf("--model-file %s: %v s, want %v s; assumptions\n%s\nwant\n%s", tc.body, got, tc.want, assumptions, tc.assumptions)
		}
	}
	if byParams == byName || derived == named {
		t.Fatalf("--params 8e9 answers as --model llama3-8b: the test cannot tell them apart")
	}
	for _, tc := range []struct{ body, want string }{
		{`{"name": "nope"}`, `model.name: unknown model "nope"`},
		{`{"name": "llama3-8b", "params": 8e9}`, `model: give one of name, architecture or params`},
		{`{"architecture": {"layers": 0, "hidden": 4096}}`, `model.architecture.layers`},
		{`{"params": -1}`, `model.params`},
		{`{"architecture": {"layer": 32}}`, `layer`},
	} {
		code, _, errOut := run(append(append([]string(nil), est...), "--model-file", file(tc.body))...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("--model-file %s: exit %d, want 1 and %q: %.300s", tc.body, code, tc.want, errOut)
		}
	}
}

// An empty --in file (or one of blank lines only) is refused as empty, naming the
// file and what it should hold, by every command that reads a request from it;
// it gave the JSON decoder's "unexpected token" or "no configs".
func TestEmptyInFile(t *testing.T) {
	dir := t.TempDir()
	empty, blank := filepath.Join(dir, "empty.json"), filepath.Join(dir, "blank.json")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blank, []byte("\uFEFF \n\n\t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{empty, blank} {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"estimate", "--in", path}, "--in " + path + ": empty file (want an EstimateStepRequest as JSON)"},
			{[]string{"rank", "--in", path}, "--in " + path + ": empty file (want one EstimateStepRequest as JSON per line)"},
			{[]string{"load", "--server", "127.0.0.1:1", "--in", path}, "--in " + path + ": empty file (want an EstimatePlanRequest as JSON)"},
		} {
			code, _, errs := run(c.args...)
			if code != 1 || !strings.Contains(errs, c.want) {
				t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
			}
		}
	}
	// A file of comments alone is not empty, and says so as before.
	comments := filepath.Join(dir, "comments.jsonl")
	if err := os.WriteFile(comments, []byte("# none yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run("rank", "--in", comments); code != 1 || !strings.Contains(errs, "no configs") {
		t.Errorf("rank of comments only: exit %d, %q", code, errs)
	}
}

// A --model-file holding the API's model object that is not a valid one names
// the field at fault by its path, as the REST gateway names it in a request's
// model: it said protojson's "the API's model object: proto: (line 1:59): unknown
// field \"fnn\"" and "invalid value for string field name: 5".
func TestModelFileDecodeErrorsNameTheField(t *testing.T) {
	f := filepath.Join(t.TempDir(), "model.json")
	for _, c := range []struct{ body, want string }{
		{`{"architecture": {"layers": 4, "hidden": 512, "heads": 8, "fnn": 2048}}`, `model.architecture.fnn: unknown field "fnn": stepcost.v1.Architecture has name, layers,`},
		{`{"name": 5}`, `model.name: must be a string (got 5)`},
		{`{"architecture": {"layers": "four"}}`, `model.architecture.layers: must be an integer between -2147483648 and 2147483647 (got "four")`},
		{`{"name": "llama3-8b", "params": 8e9}`, `model: give one of name, architecture or params`},
	} {
		if err := os.WriteFile(f, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run("plan", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64", "--seq", "4096", "--model-file", f)
		if code != exitFailure || !strings.Contains(errOut, "--model-file "+f+": "+c.want) || strings.Contains(errOut, "proto:") {
			t.Errorf("%s: exit %d, %.400s; want %q", c.body, code, errOut, c.want)
		}
	}
}
