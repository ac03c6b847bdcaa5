package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file saved with a UTF-8 byte-order mark (Windows editors, spreadsheet
// exports) reads as without: the mark is not content. Cluster files already
// did; the configs of rank, --free-map, --model-file, estimate --in and
// calibrate's measurement rows were
// refused for an invisible character ("invalid character 'ï'", "invalid value ").
func TestInputFilesWithAByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("\uFEFF"+body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	step := `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 256}, "layout": {"tp": 2, "pp": 1, "dp": 8, "micro_batch": 1, "zero": 1}}`
	rows, err := os.ReadFile("../../../estimator/calibrate/testdata/rows/h100-ib-nebius/dstack-nebius-2n-allreduce.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	plan := []string{"plan", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "256", "--seq", "8192", "--top", "1"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"rank --in", []string{"rank", "--in", write("c.jsonl", step+"\n")}},
		{"--free-map", append(plan, "--model", "llama3-8b", "--nodes", "4", "--free-map", write("free.json", `{"0": [0,1,2,3,4,5,6,7], "2": [0,1,2,3,4,5,6,7]}`))},
		{"--model-file", append(plan, "--model-file", write("model.json", `"llama3-8b"`))},
		{"estimate --in", []string{"estimate", "--in", write("step.json", step)}},
		{"calibrate's measurement rows", []string{"calibrate", "--cluster", "dgx-h100", "--out", filepath.Join(dir, "c.yaml"), write("rows.jsonl", string(rows))}},
	} {
		code, out, errOut := run(tc.args...)
		if code != 0 || strings.Contains(errOut, "invalid") {
			t.Errorf("%s: exit %d, %s\n%s", tc.name, code, errOut, out)
		}
	}
}
