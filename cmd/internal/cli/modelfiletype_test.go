package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --model-file architecture field of the wrong type is refused at its line by
// its field, in the flag's words, not Go's ("cannot unmarshal number 1.5 into Go
// struct field Arch.layers of type int").
func TestModelFileWrongTypeNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	est := []string{"estimate", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "8", "--mbs", "1", "--gbs", "8", "--seq", "4096"}
	for _, tc := range []struct{ file, want string }{
		{`{"layers": 1.5, "hidden": 4096, "heads": 32}`, "line 1: layers: 1.5 is not an integer"},
		{"{\n\"layers\": 32,\n\"hidden\": true, \"heads\": 32}", "line 3: hidden: a boolean is not an integer"},
		{"{\"layers\": 32, \"hidden\": 4096, \"heads\": 32,\n\"moe\": {\"experts\": 1.5}}", "line 2: moe.experts: 1.5 is not an integer"},
		{`{"layers": 32, "hidden": 4096, "heads": 32, "gated_mlp": "yes"}`, "line 1: gated_mlp: a string is not true or false"},
		{`[1]`, "line 1: want a catalog name, the API's model object or an architecture's fields, not an array"},
	} {
		f := filepath.Join(dir, "model.json")
		if err := os.WriteFile(f, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run(append(est, "--model-file", f)...)
		if code != exitFailure || !strings.Contains(errOut, "--model-file "+f+": "+tc.want) || strings.Contains(errOut, "Go ") {
			t.Errorf("%q: exit %d, %q; want %q", tc.file, code, errOut, tc.want)
		}
	}
}
