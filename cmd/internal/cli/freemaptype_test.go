package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --free-map value of the wrong type is refused naming the file, the line and
// the node, in the flag's words, not Go's ("cannot unmarshal number 1.5 into Go
// value of type int").
func TestFreeMapWrongTypeNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "8", "--seq", "4096", "--top", "1", "--nodes", "4"}
	for _, tc := range []struct{ file, want string }{
		{"{\"0\": [0, 1, 2, 3, 4, 5, 6, 7],\n \"1\": [1.5]}", `line 2: node "1": 1.5 is not a GPU index`},
		{"{\"0\": \"all\"}", `line 1: node "0": a string is not a list of GPU indices`},
		{"{\n\"0\": [0, 1],\n\"2\": [true]}", `line 3: node "2": a boolean is not a GPU index`},
		{"[0, 1]", `line 1: want {"node": [local GPUs], …}, not an array`},
	} {
		f := filepath.Join(dir, "free.json")
		if err := os.WriteFile(f, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run(append(plan, "--free-map", f)...)
		if code != exitFailure || !strings.Contains(errOut, "--free-map "+f+": "+tc.want) || strings.Contains(errOut, "Go value") {
			t.Errorf("%q: exit %d, %q; want %q", tc.file, code, errOut, tc.want)
		}
	}
}
