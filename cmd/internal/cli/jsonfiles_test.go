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
