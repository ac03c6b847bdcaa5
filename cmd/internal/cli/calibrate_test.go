package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/stepcost/stepcost/cmd/internal/clusterfile"
	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/internal/wire"
)

// calibrate writes a cluster file that collective loads, and refuses a file it does
// not understand with its name and line.
func TestCalibrateWritesLoadableClusterFile(t *testing.T) {
	dir := t.TempDir()
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata")
	layout := filepath.Join(dir, "layout.yaml")
	if err := os.WriteFile(layout, []byte("dstack-gcp-a4-allreduce.txt: {nodes: 2, gpus_per_node: 8, op: allreduce}\nctk-a4high-allgather.txt: {nodes: 2, gpus_per_node: 8, op: allgather}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "a4.yaml")
	if err := os.WriteFile(base, []byte("base: hgx-b200\nname: gcp-a4\nnics: {kind: roce}\nnetwork: {rail_optimized: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "calibrated.yaml")
	svg := filepath.Join(dir, "busbw.svg")
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"calibrate", "--cluster-file", base, "--layout", layout, "--out", out, "--svg", svg,
		filepath.Join(td, "b200-roce", "dstack-gcp-a4-allreduce.txt"), filepath.Join(td, "b200-roce", "ctk-a4high-allgather.txt")}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	// The fitted NIC latency prices a group of held-out rows worse (all-gather
	// 1–64 MiB, mean |error| 5.9 → 11.5 %) and is declined and named. So is the NIC
	// efficiency now: with NCCL's 32 NVLS channels across nodes (nvls.cc
	// ncclNvlsInit from v2.27; 24 before) the catalog prices the all-reduce file's
	// ≥ 64 MiB NVLS-tree rows at 1.1 % median, and the 0.922 the fit wants prices
	// them held out worse (mean 1.9 → 2.8 %). With 24 channels it priced both files
	// better held out (all-reduce ≥ 64 MiB 3.3 → 1.7 %, all-gather ≥ 64 MiB 2.4 → 2.2 %)
	// and was written. A declined constant keeps the base's value in the written file.
	for _, want := range []string{"declined: NIC efficiency", "declined: NIC latency", "allgather ≥ 64 MiB", "all inputs", "wrote " + out,
		"not determined: compute scale (gpu.peak_tflops) kept at the base's 1: the inputs have no training log"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	// The note after the report names the commands that load the file: each takes
	// --cluster-file (the daemon has no such flag: the command line sends the file
	// to it as the request's cluster definition).
	_, note, ok := strings.Cut(stdout.String(), "wrote "+out+": use it with --cluster-file (")
	names, _, _ := strings.Cut(note, ")")
	if !ok || names == "" {
		t.Errorf("no note of the commands that load %s:\n%s", out, stdout.String())
	}
	for _, name := range strings.Split(names, ", ") {
		name, _, _ = strings.Cut(name, ";")
		cmd, _, err := newRoot(io.Discard, io.Discard).Find([]string{name})
		if err != nil || cmd.Name() != name || cmd.Flags().Lookup("cluster-file") == nil {
			t.Errorf("the note names %q, which is not a command that takes --cluster-file (%v)", name, err)
		}
	}
	spec, err := clusterfile.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name != "gcp-a4-calibrated" || spec.NICs.Efficiency != 0.95 || spec.NICs.Kind != "roce" {
		t.Errorf("calibrated spec: %s %+v (want the NIC efficiency declined, at the catalog's 0.95)", spec.Name, spec.NICs)
	}
	if doc, err := os.ReadFile(svg); err != nil || !bytes.Contains(doc, []byte("<svg")) {
		t.Errorf("svg: %v", err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := Run(context.Background(), []string{"collective", "--cluster-file", out, "--nodes", "2", "--op", "allreduce", "--size", "1GiB"}, &stdout, &stderr); code != 0 {
		t.Fatalf("collective on the calibrated file: exit %d: %s", code, stderr.String())
	}

	// OCI A100 RoCE: NCCL 2.14–2.29 runs 2-node all-reduces of 1 GiB and more as
	// a ring where NCCL's own tuning model, with the catalog's constants, picks
	// the double tree (24–30 % fast there). The report names those rows and the
	// range it writes, and collective on the written file runs the ring at 1 GiB
	// where the catalog's cluster runs the double tree.
	oci, err := filepath.Glob(filepath.Join(td, "a100-roce", "oci-*.txt"))
	if err != nil || len(oci) != 5 {
		t.Fatalf("%d OCI files: %v", len(oci), err)
	}
	var ly strings.Builder
	for _, f := range oci {
		ly.WriteString(filepath.Base(f) + ": {op: allreduce}\n")
	}
	if err := os.WriteFile(layout, []byte(ly.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := Run(context.Background(), append([]string{"calibrate", "--cluster", "oci-bm-gpu-a100", "--layout", layout, "--out", out}, oci...), &stdout, &stderr); code != 0 {
		t.Fatalf("OCI: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"nics.latency_us", "rows NCCL ran with another algorithm", "measured as ring/simple", "algorithms NCCL runs here", "allreduce on 2 node(s) × 8 GPUs"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("OCI report lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, c := range []struct{ flag, file, want string }{{"--cluster", "oci-bm-gpu-a100", "chosen:  dbtree/"}, {"--cluster-file", out, "chosen:  ring/"}} {
		stdout.Reset()
		stderr.Reset()
		if code := Run(context.Background(), []string{"collective", c.flag, c.file, "--nodes", "2", "--op", "allreduce", "--size", "1GiB"}, &stdout, &stderr); code != 0 {
			t.Fatalf("collective %s %s: exit %d: %s", c.flag, c.file, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), c.want) {
			t.Errorf("collective %s %s: 1 GiB on 2 × 8 not %q:\n%s", c.flag, c.file, c.want, stdout.String())
		}
	}

	stdout.Reset()
	stderr.Reset()
	bad := filepath.Join(td, "bad", "truncated.txt")
	code = Run(context.Background(), []string{"calibrate", "--cluster", "dgx-h100", "--nodes", "2", "--gpus-per-node", "8", bad}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), bad+":31: cut short") {
		t.Errorf("truncated input: exit %d, %q", code, stderr.String())
	}
}

// calibrate reads measurement rows (JSON lines) with nothing more to say about
// them: the run is in the rows.
func TestCalibrateMeasurementRows(t *testing.T) {
	dir := t.TempDir()
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "rows", "h100-ib-8n")
	files, err := filepath.Glob(filepath.Join(td, "*.jsonl"))
	if err != nil || len(files) != 3 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	out := filepath.Join(dir, "calibrated.yaml")
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), append([]string{"calibrate", "--cluster", "dgx-h100", "--out", out}, files...), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"ncclt309-gjaion-8n.jsonl", "ncclt309-gjaion-2n-ring.jsonl", "all inputs", "wrote " + out} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	if _, err := clusterfile.Load(out); err != nil {
		t.Fatal(err)
	}
}

// Flags may follow the files (a shell glob first, then --out), and "--" ends the
// flags so that a file whose name starts with a dash is still a file.
func TestCalibrateFlagsAfterFiles(t *testing.T) {
	dir := t.TempDir()
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "rows", "h100-ib-8n")
	files, err := filepath.Glob(filepath.Join(td, "*.jsonl"))
	if err != nil || len(files) != 3 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	out := filepath.Join(dir, "calibrated.yaml")
	args := append(append([]string{"calibrate", "--cluster", "dgx-h100"}, files[:2]...), "--out", out, files[2])
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "on 3 file(s)") {
		t.Errorf("not every file was read:\n%s", stdout.String())
	}
	if _, err := clusterfile.Load(out); err != nil {
		t.Fatalf("--out after the files was not honoured: %v", err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := Run(context.Background(), []string{"calibrate", "--cluster", "dgx-h100", "--", "-no-such-file"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "-no-such-file") {
		t.Errorf("a file after --: exit %d, %q", code, stderr.String())
	}
}

// A value given that nothing reads is said, not dropped: a --layout entry for a
// file not among the inputs, and --nodes when no input is nccl-tests output.
func TestCalibrateNamesUnusedValues(t *testing.T) {
	dir := t.TempDir()
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "trainlogs")
	ly, err := os.ReadFile(filepath.Join(td, "layout.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	layout := filepath.Join(dir, "layout.yaml")
	if err := os.WriteFile(layout, append(ly, "torchao-pretraining-bf16.txt: {model: llama3-8b, gpus: 8, micro_batch: 1, global_batch: 8, seq_len: 8192}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"calibrate", "--cluster", "dgx-h100", "--nodes", "1", "--layout", layout,
		filepath.Join(td, "torchao-pretraining-bf16.log"), filepath.Join(td, "torchao-pretraining-fp8-rowwise.log")}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"unused, not among the input files (entries are keyed by the file's base name): torchao-pretraining-bf16.txt, torchao-pretraining-fp8-tensorwise.log", "--nodes 1: unused"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q: %q", want, stderr.String())
		}
	}
}

// The written cluster file, loaded back with --cluster-file, prices every input
// as the calibrated cluster the report scored: the fitted constants, the compute
// scale and the algorithm ranges all survive the file.
func TestCalibratedFileRoundTrips(t *testing.T) {
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata")
	oci, err := filepath.Glob(filepath.Join(td, "a100-roce", "oci-*.txt"))
	if err != nil || len(oci) != 5 {
		t.Fatalf("%d OCI files: %v", len(oci), err)
	}
	logs, err := filepath.Glob(filepath.Join(td, "trainlogs", "*.log"))
	if err != nil || len(logs) != 3 {
		t.Fatalf("%d logs: %v", len(logs), err)
	}
	ly, err := os.ReadFile(filepath.Join(td, "trainlogs", "layout.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSONStrict(ly)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := calibrate.DecodeLayouts(j)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		base  string
		files []string
		ls    calibrate.Layouts
	}{
		{"oci-bm-gpu-a100", oci, calibrate.Layouts{}},
		{"dgx-h100", logs, runs},
	} {
		spec, err := catalog.System(c.base)
		if err != nil {
			t.Fatal(err)
		}
		var in calibrate.Inputs
		for _, f := range c.files {
			fl := c.ls.For(f, calibrate.FileLayout{Op: "allreduce"})
			if err := in.Read(f, read(t, f), fl); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := calibrate.Calibrate(c.base, spec, in)
		if err != nil {
			t.Fatal(err)
		}
		rep.Spec.Name = c.base + "-calibrated"
		// The file is written from the proto response, as the command writes it.
		resp := wire.CalibrationResponse(rep, in)
		written, err := wire.DefinitionToSpec("cluster", resp.GetCluster())
		if err != nil {
			t.Fatal(err)
		}
		written.Nodes = spec.Nodes
		doc, err := clusterfile.Format(written, fileComments(resp))
		if err != nil {
			t.Fatal(err)
		}
		back, err := clusterfile.Parse(doc, "calibrated.yaml")
		if err != nil {
			t.Fatalf("%s: the written file does not load: %v\n%s", c.base, err, doc)
		}
		m1, a1, err := calibrate.Score(rep.Spec, in)
		if err != nil {
			t.Fatal(err)
		}
		m2, a2, err := calibrate.Score(back, in)
		if err != nil {
			t.Fatal(err)
		}
		if m1 != m2 || a1 != a2 {
			t.Errorf("%s: the calibrated cluster prices the inputs at median %.6g / mean %.6g |error|, the file loaded back at %.6g / %.6g", c.base, m1, a1, m2, a2)
		}
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// One file given twice under two paths (x.jsonl and ./x.jsonl, a symbolic link)
// is refused as one path given twice is: its rows were fitted twice and each
// copy was scored with the other in the fit ("on 2 file(s)").
func TestCalibrateSameFileTwice(t *testing.T) {
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "rows", "h100-ib-8n")
	files, err := filepath.Glob(filepath.Join(td, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	link := filepath.Join(t.TempDir(), "other-name.jsonl")
	abs, err := filepath.Abs(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, link); err != nil {
		t.Fatal(err)
	}
	dotted := td + string(filepath.Separator) + "." + string(filepath.Separator) + filepath.Base(files[0])
	for _, second := range []string{dotted, link} {
		code, out, errOut := run("calibrate", "--cluster", "dgx-h100", files[0], second)
		if code != 1 || !strings.Contains(errOut, second+": the same file as "+files[0]) {
			t.Errorf("%s: exit %d: %.200s%.300s", second, code, out, errOut)
		}
	}
	// One path given twice is said so; it was called "a copy under another name".
	code, _, errOut := run("calibrate", "--cluster", "dgx-h100", files[0], files[0])
	if want := "stepcost calibrate: " + files[0] + ": given twice\n"; code != 1 || errOut != want {
		t.Errorf("one path twice: exit %d, %q; want %q", code, errOut, want)
	}
}

// A --layout of many entries for files not among the inputs names the first 20
// and counts the rest: 100 000 were listed whole (1.3 MB of standard error).
func TestCalibrateUnusedLayoutEntriesBounded(t *testing.T) {
	dir := t.TempDir()
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "rows", "h100-ib-8n")
	files, err := filepath.Glob(filepath.Join(td, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	var ly strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&ly, "f%04d.txt: {op: allreduce}\n", i)
	}
	layout := filepath.Join(dir, "layout.yaml")
	if err := os.WriteFile(layout, []byte(ly.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run("calibrate", "--cluster", "dgx-h100", "--layout", layout, files[0])
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "unused, not among the input files (entries are keyed by the file's base name): f0000.txt, f0001.txt,"
	if !strings.Contains(errOut, want) || !strings.Contains(errOut, "f0019.txt and 980 more") || strings.Contains(errOut, "f0020.txt") {
		t.Errorf("stderr (%d B): %.600s", len(errOut), errOut)
	}
}

// --svg - and --json both write to standard output: refused, as plan and
// estimate refuse them, before any fit (calibrate wrote the SVG and dropped the
// JSON, exit 0).
func TestCalibrateSVGToStdoutAndJSON(t *testing.T) {
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "rows", "h100-ib-8n")
	files, err := filepath.Glob(filepath.Join(td, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	code, out, errOut := run("calibrate", "--cluster", "dgx-h100", "--svg", "-", "--json", files[0])
	if code != 1 || out != "" || !strings.Contains(errOut, "--svg - and --json: both write to standard output; give --svg a file") {
		t.Errorf("exit %d: %.100q %s", code, out, errOut)
	}
}

// A --layout entry is keyed by a file's base name: one that two inputs share
// (run1/ar.txt and run2/ar.txt) cannot say which it is for, and was applied to
// both, the second file read with the first's nodes. It is refused naming both.
func TestCalibrateLayoutEntryOfTwoFiles(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "h100-ib", "dstack-nebius-allreduce.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files []string
	for i, d := range []string{"run1", "run2"} {
		f := filepath.Join(dir, d, "ar.txt")
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		// Two runs, not one file copied (which is refused as such): the
		// second's closing average differs.
		body := bytes.Replace(src, []byte("Avg bus bandwidth    : 125.499"), []byte(fmt.Sprintf("Avg bus bandwidth    : 125.49%d", 9-i)), 1)
		if err := os.WriteFile(f, body, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	layout := filepath.Join(dir, "layout.yaml")
	if err := os.WriteFile(layout, []byte("ar.txt: {nodes: 2, gpus_per_node: 8}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("calibrate", "--cluster", "dgx-h100", "--layout", layout, files[0], files[1])
	want := `entry "ar.txt" is for ` + files[0] + " and " + files[1]
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, want 1 and %q: %.200s%.300s", code, want, out, errOut)
	}
	// Without a layout entry of that name the two files are read, each its own.
	code, out, errOut = run("calibrate", "--cluster", "dgx-h100", "--nodes", "2", "--gpus-per-node", "8", files[0], files[1])
	if code != 0 {
		t.Errorf("without the entry: exit %d: %.200s%.300s", code, out, errOut)
	}
}

// A copy of an input under another name (cp ar.txt ar-copy.txt) is refused
// naming both: its rows were fitted twice, each copy scored with the other in
// the fit.
func TestCalibrateCopyOfAnInput(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "h100-ib", "dstack-nebius-allreduce.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "ar.txt"), filepath.Join(dir, "ar-copy.txt")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, src, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run("calibrate", "--cluster", "dgx-h100", "--nodes", "2", "--gpus-per-node", "8", a, b)
	if want := b + ": the same content as " + a; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, want 1 and %q: %.200s%.300s", code, want, out, errOut)
	}
}

// --nodes and --gpus-per-node state what an nccl-tests output without device
// lines does not: a value below 1 given is refused naming the flag (a negative
// one was read as not given, or as the flags missing: "the nodes and GPUs per
// node must be given").
func TestCalibrateNodeFlagsBelowOne(t *testing.T) {
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata")
	withDevices := filepath.Join(td, "h100-ib-ndr", "ncclt290-auto.txt")
	noDevices := filepath.Join(td, "h100-ib", "dstack-nebius-allreduce.txt")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "-1", withDevices}, "--nodes: must be at least 1 (got -1)"},
		{[]string{"--gpus-per-node", "-8", withDevices}, "--gpus-per-node: must be at least 1 (got -8)"},
		{[]string{"--nodes", "-2", "--gpus-per-node", "8", noDevices}, "--nodes: must be at least 1 (got -2)"},
		{[]string{"--nodes", "2", "--gpus-per-node", "0", noDevices}, "--gpus-per-node: must be at least 1 (got 0)"},
	} {
		code, _, stderr := run(append([]string{"calibrate", "--cluster", "dgx-h100"}, c.args...)...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 1 and %q", c.args, code, stderr, c.want)
		}
	}
}

// --gpus-per-node is not applied to a training log, whose GPUs per node are its
// layout's or the cluster's: --gpus-per-node 4 placed the torchao run of 8 GPUs
// on two nodes of 4 without a word (|error| 12.9 → 11.3 %). Given with training
// logs alone it is named as unused, as --nodes is.
func TestCalibrateGPUsPerNodeIsNotTheLogs(t *testing.T) {
	logs := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "trainlogs")
	ly, err := os.ReadFile(filepath.Join(logs, "layout.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	layout := filepath.Join(t.TempDir(), "layout.yaml")
	if err := os.WriteFile(layout, bytes.ReplaceAll(ly, []byte("gpus_per_node: 8, "), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	bf16 := filepath.Join(logs, "torchao-pretraining-bf16.log")
	code, plain, stderr := run("calibrate", "--cluster", "dgx-h100", "--layout", layout, "--json", bf16)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, flagged, stderr := run("calibrate", "--cluster", "dgx-h100", "--layout", layout, "--gpus-per-node", "4", "--json", bf16)
	if code != 0 {
		t.Fatalf("--gpus-per-node 4: exit %d: %s", code, stderr)
	}
	if plain != flagged {
		t.Errorf("--gpus-per-node 4 changed the training log's report:\n%s\nagainst\n%s", flagged, plain)
	}
	if want := "--gpus-per-node 4: unused"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q: %q", want, stderr)
	}
}

// calibrate --json says what the table says of the inputs: each file as read
// (its collective and ranks, or its framework and step time) and every note of
// what was set aside or dropped (warm-up steps, a missing closing summary, a
// stall). The JSON was the report alone: the notes were in the table only.
func TestCalibrateJSONKeepsTheInputsAndNotes(t *testing.T) {
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata")
	dir := t.TempDir()
	// An output cut before its closing summary: read, with a note.
	full, err := os.ReadFile(filepath.Join(td, "h100-ib-ndr", "ncclt290-auto.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.txt")
	if err := os.WriteFile(cut, full[:bytes.Index(full, []byte("# Out of bounds"))-len(" 0: ")], 0o644); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(td, "trainlogs")
	layout := filepath.Join(dir, "layout.yaml")
	ly, err := os.ReadFile(filepath.Join(logs, "layout.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layout, append(ly, "cut.txt: {op: allreduce}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"calibrate", "--cluster", "dgx-h100", "--layout", layout, cut, filepath.Join(logs, "torchao-pretraining-bf16.log")}
	code, table, stderr := run(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, js, stderr := run(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	var got struct {
		Notes  []string `json:"notes"`
		Inputs []struct {
			File        string  `json:"file"`
			Kind        string  `json:"kind"`
			Op          string  `json:"op"`
			Framework   string  `json:"framework"`
			Nodes       int     `json:"nodes"`
			GPUsPerNode int     `json:"gpus_per_node"`
			GPUs        int     `json:"gpus"`
			StepSeconds float64 `json:"step_seconds"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatal(err)
	}
	// Every note of the table, in the JSON (the table wraps them).
	flat := strings.Join(strings.Fields(table), " ")
	notes := 0
	for _, n := range strings.Split(flat, " note: ")[1:] {
		notes++
		n, _, _ = strings.Cut(n, " Constants ")
		if !slices.ContainsFunc(got.Notes, func(s string) bool { return strings.HasPrefix(n, s) || strings.HasPrefix(s, n) }) {
			t.Errorf("the table's note %q is not in the JSON's %q", n, got.Notes)
		}
	}
	if notes < 2 || len(got.Notes) != notes {
		t.Errorf("%d notes in the table, %d in the JSON: %q", notes, len(got.Notes), got.Notes)
	}
	if len(got.Inputs) != 2 || got.Inputs[0].File != cut || got.Inputs[0].Op != "allreduce" || got.Inputs[0].Nodes != 2 || got.Inputs[0].GPUsPerNode != 8 ||
		got.Inputs[1].Framework != "torchtitan" || got.Inputs[1].GPUs != 8 || !strings.Contains(table, fmt.Sprintf("step %.4g s", got.Inputs[1].StepSeconds)) {
		t.Errorf("the JSON's inputs %+v are not the table's:\n%s", got.Inputs, table)
	}
}

// --name is the written cluster's name, printed by every command that loads the
// file: a name with a control character (a newline split the collective's
// title line in two) or only blanks is refused naming the flag.
func TestCalibrateNameIsPrintable(t *testing.T) {
	file := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "rows", "h100-ib-8n")
	files, err := filepath.Glob(filepath.Join(file, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	for _, name := range []string{"x\ny", "tab\there", "   ", " padded"} {
		code, _, stderr := run("calibrate", "--cluster", "dgx-h100", "--name", name, "--out", filepath.Join(t.TempDir(), "c.yaml"), files[0])
		if code != 1 || !strings.HasPrefix(stderr, "stepcost calibrate: --name: ") {
			t.Errorf("--name %q: exit %d, %q", name, code, stderr)
		}
	}
	if code, _, stderr := run("calibrate", "--cluster", "dgx-h100", "--name", "my h100: rack 2", files[0]); code != 0 {
		t.Errorf("a name with blanks and a colon: exit %d, %s", code, stderr)
	}
}

// --layout's help names every key an nccl-tests output's entry takes (the
// layout's algo, NCCL_ALGO as the run set it, was left out).
func TestCalibrateLayoutHelpNamesTheKeys(t *testing.T) {
	_, help, _ := run("calibrate", "--help")
	help = strings.Join(strings.Fields(help), " ")
	_, text, ok := strings.Cut(help, "--layout string ")
	text, _, _ = strings.Cut(text, " for nccl-tests")
	if !ok {
		t.Fatalf("no --layout in the help:\n%s", help)
	}
	lt := reflect.TypeOf(calibrate.Layout{})
	for i := range lt.NumField() {
		key, _, _ := strings.Cut(lt.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(text, key) {
			t.Errorf("--layout's help for nccl-tests outputs (%q) does not name %s", text, key)
		}
	}
}

// --svg with no collective measurement among the inputs is refused before
// anything is written: the command failed ('--svg: no nccl-tests file to draw',
// exit 1) after writing the --out cluster file and printing no report.
func TestCalibrateSVGWithoutSweepsWritesNothing(t *testing.T) {
	logs := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "trainlogs")
	dir := t.TempDir()
	out := filepath.Join(dir, "c.yaml")
	code, stdout, stderr := run("calibrate", "--cluster", "dgx-h100", "--layout", filepath.Join(logs, "layout.yaml"), "--out", out, "--svg", filepath.Join(dir, "b.svg"),
		filepath.Join(logs, "torchao-pretraining-bf16.log"))
	if code != 1 || !strings.Contains(stderr, "--svg: no nccl-tests output or measurement rows among the inputs: the picture draws their bus bandwidth") || stdout != "" {
		t.Errorf("exit %d, %q, stdout %q", code, stderr, stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("--out %s written by a command that failed", out)
	}
}

// A --svg file that cannot be written fails the command before the cluster file
// is written: it failed after writing --out (exit 1, a calibrated cluster
// file on disk from a command that said it failed).
func TestCalibrateUnwritableSVGWritesNoClusterFile(t *testing.T) {
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "rows", "h100-ib-8n")
	files, err := filepath.Glob(filepath.Join(td, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "c.yaml")
	svg := filepath.Join(dir, "no-such-dir", "b.svg")
	code, _, stderr := run("calibrate", "--cluster", "dgx-h100", "--out", out, "--svg", svg, files[0])
	if code != 1 || !strings.Contains(stderr, "--svg "+svg+": ") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("--out %s written by a command that failed", out)
	}
}

// A training log of another GPU than the base cluster's stops the command naming
// the file, the line and both GPUs: the tutorial's H100 run (tflops ÷ mfu = 989,
// torchtitan's H100 peak) on dgx-a100 was priced 114.9 % off, and the compute
// fit declined. A log that states no MFU is read with a note saying the check
// could not be made.
func TestCalibrateTrainingLogOfAnotherGPU(t *testing.T) {
	logs := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "trainlogs")
	layout := filepath.Join(logs, "layout.yaml")
	bf16 := filepath.Join(logs, "torchao-pretraining-bf16.log")
	code, _, stderr := run("calibrate", "--cluster", "dgx-a100", "--layout", layout, bf16)
	if want := bf16 + ":2: tflops ÷ mfu = 367.39 ÷ 37.15 % = 988.9 TFLOP/s, the bf16 peak torchtitan divides by on an H100 SXM or H200"; code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "not on the base cluster dgx-a100's A100-80GB (312 TFLOP/s)") {
		t.Errorf("exit %d, stderr %q; want it to hold %q", code, stderr, want)
	}
	b, err := os.ReadFile(bf16)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	na := filepath.Join(dir, "torchao-pretraining-bf16.log")
	if err := os.WriteFile(na, regexp.MustCompile(`mfu: [0-9.]+%`).ReplaceAll(b, []byte("mfu: N/A")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run("calibrate", "--cluster", "dgx-h100", "--layout", layout, na)
	if flat := strings.Join(strings.Fields(out), " "); code != 0 || !strings.Contains(flat, "note: "+na+": the GPU the run ran on could not be checked against the base cluster's: its mfu is not a number") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, stderr, out)
	}
}

// calibrate --json says, one note per file, the NCCL release that priced it:
// the release the output states (Lambda's B200 pair, nccl-library=22602), or
// the base's when it states none; the table says the same.
func TestCalibrateJSONNamesEachFilesNCCLRelease(t *testing.T) {
	td := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata")
	dir := t.TempDir()
	full, err := os.ReadFile(filepath.Join(td, "b200-ib", "dstack-lambda-allreduce.txt"))
	if err != nil {
		t.Fatal(err)
	}
	stated, none := filepath.Join(dir, "lambda.txt"), filepath.Join(dir, "none.txt")
	if err := os.WriteFile(stated, full, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(none, bytes.Replace(full, []byte("nccl-headers=22602 nccl-library=22602"), nil, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"calibrate", "--cluster", "hgx-b200", "--nodes", "2", "--gpus-per-node", "8", stated, none}
	code, js, stderr := run(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct{ Notes []string }
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatal(err)
	}
	_, table, _ := run(args...)
	flat := strings.Join(strings.Fields(table), " ")
	for _, want := range []string{
		stated + " ran NCCL 2.26.2 (its output says so): priced by its rules; the fitted cluster file is written for the base's NCCL 2.27's rules: the cluster states no release (nccl)",
		none + " states no NCCL release: priced by the base's, NCCL 2.27's rules: the cluster states no release (nccl)",
	} {
		if !slices.Contains(got.Notes, want) {
			t.Errorf("--json notes %q; want %q", got.Notes, want)
		}
		if !strings.Contains(flat, want) {
			t.Errorf("the table does not say %q:\n%s", want, table)
		}
	}
}
