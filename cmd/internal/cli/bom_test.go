package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
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

// An unknown catalog name is said once, after the flag or field that named it:
// "--model: model: unknown model" and the API's "model.name: model: …",
// "cluster.name: catalog: …" repeated the package's name.
func TestUnknownNamesSaidOnce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--model", "llama9", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "8", "--seq", "8"}, `stepcost plan: --model: unknown model "llama9"; known: `},
		{[]string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h900", "--gpus", "8", "--gbs", "8", "--seq", "8"}, `stepcost plan: --cluster: unknown system "dgx-h900"; known: `},
	} {
		if code, _, errOut := run(tc.args...); code != exitFailure || !strings.HasPrefix(errOut, tc.want) {
			t.Errorf("%q: exit %d, %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
	local := newLocal()
	_, err := local.EstimateStep(context.Background(), &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama9"}}})
	if err == nil || !strings.Contains(err.Error(), `model.name: unknown model "llama9"`) {
		t.Errorf("the API's error: %v", err)
	}
}

// estimate --in - reads the request from standard input, as rank --in - does, and
// answers as it answers the same request from a file.
func TestEstimateRequestFromStandardInput(t *testing.T) {
	step := `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 256}, "layout": {"tp": 2, "pp": 1, "dp": 8, "micro_batch": 1, "zero": 1}}`
	p := filepath.Join(t.TempDir(), "step.json")
	if err := os.WriteFile(p, []byte(step), 0o600); err != nil {
		t.Fatal(err)
	}
	code, fromFile, errOut := run("estimate", "--in", p, "--json")
	if code != 0 {
		t.Fatalf("estimate --in file: exit %d: %s", code, errOut)
	}
	in, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	saved := os.Stdin
	os.Stdin = in
	defer func() { os.Stdin = saved }()
	code, fromStdin, errOut := run("estimate", "--in", "-", "--json")
	if code != 0 {
		t.Fatalf("estimate --in -: exit %d: %s", code, errOut)
	}
	if fromStdin != fromFile {
		t.Errorf("estimate --in - answers otherwise than from the file:\n%s\nagainst\n%s", fromStdin, fromFile)
	}
}
