package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// calibrate --server sends the files to the daemon's CalibrateCluster and prints
// the response it gets, as the command prints the response it builds in
// process: --json, the table and the written cluster file are the same bytes
// both ways (the response has no timing field), for measurement rows, nccl-tests
// outputs with a layout (algorithms NCCL ran, mismatches), outputs of a stated
// and of an unstated NCCL release, training logs, and a base given as a file.
// Before, calibrate had no --server: an operator with a daemon used curl.
func TestCalibrateServerAnswersAsInProcess(t *testing.T) {
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata")
	dir := t.TempDir()
	glob := func(p string) []string {
		t.Helper()
		fs, err := filepath.Glob(filepath.Join(td, p))
		if err != nil || len(fs) == 0 {
			t.Fatalf("%s: %d files, %v", p, len(fs), err)
		}
		return fs
	}
	ndr := filepath.Join(dir, "ndr.yaml")
	if err := os.WriteFile(ndr, []byte("ncclt290-auto.txt: {op: allreduce}\nncclt290-ring.txt: {op: allreduce, algo: ring}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "base.yaml")
	if err := os.WriteFile(base, []byte("base: dgx-h100\nname: my-h100\nnccl: 2.28.9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := daemon(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"rows", append([]string{"--cluster", "dgx-h100"}, glob("rows/h100-ib-8n/*.jsonl")...)},
		{"outputs with a layout", append([]string{"--cluster", "dgx-h100", "--layout", ndr}, glob("h100-ib-ndr/*.txt")...)},
		{"releases", append([]string{"--cluster", "hgx-b200", "--nodes", "2", "--gpus-per-node", "8"}, glob("b200-ib/*.txt")...)},
		{"training logs", append([]string{"--cluster", "dgx-h100", "--layout", filepath.Join(td, "trainlogs", "layout.yaml")}, glob("trainlogs/*.log")...)},
		{"base file", append([]string{"--cluster-file", base, "--name", "rack 2"}, glob("rows/h100-ib-nebius/*.jsonl")...)},
	} {
		var js, table, file [2]string
		for i, remote := range []string{"", addr} {
			args := append([]string{"calibrate"}, c.args...)
			if remote != "" {
				args = append(args, "--server", remote)
			}
			out := filepath.Join(dir, "c.yaml")
			code, o, stderr := run(append(args, "--json")...)
			if code != 0 {
				t.Fatalf("%s %v --json: exit %d: %s", c.name, args, code, stderr)
			}
			js[i] = o
			if code, table[i], stderr = run(append(args, "--out", out)...); code != 0 {
				t.Fatalf("%s %v: exit %d: %s", c.name, args, code, stderr)
			}
			table[i] = strings.ReplaceAll(table[i], out, "OUT")
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			file[i] = string(b)
		}
		if js[0] != js[1] {
			t.Errorf("%s: --json in process and with --server differ:\n%s\n%s", c.name, js[0], js[1])
		}
		if table[0] != table[1] {
			t.Errorf("%s: the table in process and with --server differ:\n%s\n%s", c.name, table[0], table[1])
		}
		if file[0] != file[1] {
			t.Errorf("%s: the --out file in process and with --server differ:\n%s\n%s", c.name, file[0], file[1])
		}
		// The JSON holds the report the table is drawn from: each file as read,
		// and every measurement priced before, held out and after.
		var got struct {
			Base                       string
			Files                      []struct{ File string }
			Before, OutOfSample, After []struct {
				File                    string
				MeasuredUs, PredictedUs float64
			}
		}
		if err := json.Unmarshal([]byte(strings.NewReplacer("out_of_sample", "OutOfSample", "measured_us", "MeasuredUs", "predicted_us", "PredictedUs").Replace(js[0])), &got); err != nil {
			t.Fatal(err)
		}
		files := 0
		for _, a := range c.args {
			if !strings.HasPrefix(a, "--") && (strings.HasSuffix(a, ".txt") || strings.HasSuffix(a, ".jsonl") || strings.HasSuffix(a, ".log")) {
				files++
			}
		}
		if got.Base == "" || len(got.Files) != files || len(got.Before) == 0 || len(got.Before) != len(got.OutOfSample) || len(got.Before) != len(got.After) ||
			got.Before[0].MeasuredUs <= 0 || got.Before[0].PredictedUs <= 0 {
			t.Errorf("%s: the JSON's report is not whole: base %q, %d of %d files, %d/%d/%d measurements", c.name, got.Base, len(got.Files), files, len(got.Before), len(got.OutOfSample), len(got.After))
		}
	}
}

// A refused input is named the same way in process and with --server: the file
// and line of a garbled row, the file of an output that does not name its test
// or that is no measurement at all, and a training log's layout field. The
// daemon's field (inputs[0].content) is the readers' own words on the file.
func TestCalibrateServerRefusesAsInProcess(t *testing.T) {
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata")
	dir := t.TempDir()
	logs := filepath.Join(td, "trainlogs")
	ly, err := os.ReadFile(filepath.Join(logs, "layout.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	badLayout := filepath.Join(dir, "layout.yaml")
	if err := os.WriteFile(badLayout, bytes.ReplaceAll(ly, []byte("tp: 1"), []byte("tp: 3")), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := daemon(t)
	for _, c := range []struct {
		args []string
		want string // what both say
	}{
		{[]string{"--cluster", "dgx-h100", "--nodes", "1", "--gpus-per-node", "8", filepath.Join(td, "bad", "garbled.txt")}, filepath.Join(td, "bad", "garbled.txt") + ":21: algbw 42.05 GB/s is not size / time"},
		{[]string{"--cluster", "dgx-h100", "--nodes", "1", "--gpus-per-node", "8", filepath.Join(td, "bad", "foreign.txt")}, filepath.Join(td, "bad", "foreign.txt") + ": neither nccl-tests output"},
		{[]string{"--cluster", "dgx-h100", filepath.Join(td, "h100-ib-ndr", "ncclt290-auto.txt")}, "ncclt290-auto.txt: the output does not name its test"},
		{[]string{"--cluster", "dgx-h100", "--layout", badLayout, filepath.Join(logs, "torchao-pretraining-bf16.log")}, "torchao-pretraining-bf16.log"},
	} {
		var errs [2]string
		for i, remote := range []string{"", addr} {
			args := append([]string{"calibrate", "--json"}, c.args...)
			if remote != "" {
				args = append(args, "--server", remote)
			}
			code, out, stderr := run(args...)
			if code != 1 || out != "" {
				t.Errorf("%v: exit %d, stdout %q", args, code, out)
			}
			errs[i] = stderr
		}
		if errs[0] != errs[1] || !strings.Contains(errs[0], c.want) {
			t.Errorf("%v: in process %q, with --server %q; want both the same, saying %q", c.args, errs[0], errs[1], c.want)
		}
	}
}
