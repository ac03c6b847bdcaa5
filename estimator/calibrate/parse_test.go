package calibrate_test

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
)

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The header of an output with device lines gives the nodes, GPUs per node and
// ranks; newer nccl-tests print only each host's first and last rank.
func TestParseHeader(t *testing.T) {
	s, err := calibrate.ParseNCCLTests("full", read(t, "testdata/a100-roce/oci-14340fb-readme.txt"), calibrate.Layout{Op: "allreduce"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes != 2 || s.GPUsPerNode != 8 || s.Ranks != 16 || !s.FromHeader || s.Device != "NVIDIA A100-SXM4-40GB" || s.Launch != collective.PerProcess {
		t.Errorf("got %d × %d, %d ranks, header %v, %q, %s", s.Nodes, s.GPUsPerNode, s.Ranks, s.FromHeader, s.Device, s.Launch)
	}
	if len(s.Points) != 31 || s.Points[0].Bytes != 8 || s.Points[30].Bytes != 8<<30 || s.Points[30].TimeUs != 67689 || s.Points[30].InPlaceUs != 67811 {
		t.Errorf("points: %d, first %+v, last %+v", len(s.Points), s.Points[0], s.Points[len(s.Points)-1])
	}
	s, err = calibrate.ParseNCCLTests("abridged", read(t, "testdata/a100-roce/oci-d091927-slurmop.txt"), calibrate.Layout{Op: "allreduce"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes != 2 || s.GPUsPerNode != 8 || s.Ranks != 16 {
		t.Errorf("abridged device lines: %d × %d, %d ranks", s.Nodes, s.GPUsPerNode, s.Ranks)
	}
	// The test is named by the tool's own "Collective test starting" line.
	s, err = calibrate.ParseNCCLTests("lambda", read(t, "testdata/b200-ib/dstack-lambda-allreduce.txt"), calibrate.Layout{Nodes: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	if s.Op != collective.AllReduce || s.Bench != "all_reduce_perf" || len(s.Points) != 29 {
		t.Errorf("lambda: %s %s, %d points", s.Op, s.Bench, len(s.Points))
	}
}

// MPI launchers prefix every line; -g N puts several GPUs in one process.
func TestParseMPIPrefixAndSingleProcess(t *testing.T) {
	out := `[1,0]<stdout>:# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
[1,0]<stdout>:#
[1,0]<stdout>:# Using devices
[1,0]<stdout>:#  Rank  0 Group  0 Pid   1000 on nodeA device  0 [0x18] NVIDIA H100 80GB HBM3
[1,0]<stdout>:#  Rank  1 Group  0 Pid   1000 on nodeA device  1 [0x2a] NVIDIA H100 80GB HBM3
[1,0]<stdout>:#  Rank  2 Group  0 Pid   2000 on nodeB device  0 [0x18] NVIDIA H100 80GB HBM3
[1,0]<stdout>:#  Rank  3 Group  0 Pid   2000 on nodeB device  1 [0x2a] NVIDIA H100 80GB HBM3
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:           8             2     float     sum      -1    40.00    0.00    0.00      0    40.00    0.00    0.00      0
[1,0]<stdout>:    16777216       4194304     float     sum      -1    400.0   41.94   62.91      0    400.0   41.94   62.91      0
[1,0]<stdout>:# Avg bus bandwidth    : 31.46
`
	s, err := calibrate.ParseNCCLTests("mpi.txt", []byte(out), calibrate.Layout{Op: "allreduce"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes != 2 || s.GPUsPerNode != 2 || s.Launch != collective.SingleProcess || len(s.Points) != 2 {
		t.Errorf("got %d × %d, %s, %d points", s.Nodes, s.GPUsPerNode, s.Launch, len(s.Points))
	}
}

// Bad input is refused with the file and the line; nothing of it is read.
func TestParseRefuses(t *testing.T) {
	for _, tt := range []struct {
		file   string
		layout calibrate.FileLayout
		want   string
	}{
		{"testdata/bad/truncated.txt", calibrate.FileLayout{Nodes: 2, Op: "allreduce", RunLayout: calibrate.RunLayout{GPUsPerNode: 8}}, "truncated.txt:31: cut short"},
		{"testdata/bad/garbled.txt", calibrate.FileLayout{Nodes: 2, Op: "allreduce", RunLayout: calibrate.RunLayout{GPUsPerNode: 8}}, "garbled.txt:21: algbw 42.05 GB/s is not size / time"},
		{"testdata/bad/foreign.txt", calibrate.FileLayout{}, "foreign.txt: neither nccl-tests output"},
		// The layout misstates the ranks: busbw/algbw gives it away.
		{"testdata/h100-ib/dstack-nebius-allreduce.txt", calibrate.FileLayout{Nodes: 4, RunLayout: calibrate.RunLayout{GPUsPerNode: 8}}, "bus factor of 1.938"},
		// No device lines and no layout.
		{"testdata/h100-ib/dstack-nebius-allreduce.txt", calibrate.FileLayout{}, "the nodes and GPUs per node must be given"},
		// The layout contradicts the header.
		{"testdata/a100-roce/oci-14340fb-readme.txt", calibrate.FileLayout{Nodes: 4, Op: "allreduce", RunLayout: calibrate.RunLayout{GPUsPerNode: 8}}, "nodes 4 was given, but the header's device lines show 2 node(s) × 8 GPUs"},
		// Only what was given is named (it said "4 node(s) × 0 GPUs").
		{"testdata/a100-roce/oci-14340fb-readme.txt", calibrate.FileLayout{Nodes: 4, Op: "allreduce"}, ": nodes 4 was given, but the header's device lines show 2 node(s) × 8 GPUs"},
		{"testdata/a100-roce/oci-14340fb-readme.txt", calibrate.FileLayout{Op: "allreduce", RunLayout: calibrate.RunLayout{GPUsPerNode: 4}}, ": gpus_per_node 4 was given, but the header's device lines show 2 node(s) × 8 GPUs"},
		// No test named and none given.
		{"testdata/a100-roce/oci-2d359a9-readme.txt", calibrate.FileLayout{}, "does not name its test"},
	} {
		var in calibrate.Inputs
		err := in.Read(tt.file[strings.LastIndex(tt.file, "/")+1:], read(t, tt.file), tt.layout)
		var fe *calibrate.FileError
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error with %q", tt.file, err, tt.want)
		}
		if len(in.Sweeps)+len(in.Runs) != 0 {
			t.Errorf("%s: kept an input from a file that was not understood", tt.file)
		}
	}
}

// The seeds are real outputs cut to their first rows (fuzzSeed): the fuzzing
// engine minimises every input that reaches new code, and its last pass tries
// removing each span of bytes, about n²/2 runs for n bytes, for up to a minute
// (-fuzzminimizetime) — 18 M runs of the parser for a whole 6 KB output, so the
// engine spent each minute minimising and fuzzed at 0 execs/s. Inputs over
// 1 KiB (an older cache's whole outputs, a mutation grown long) are passed
// over for the same reason: 512 K runs of about 30 µs at most to minimise one.
func FuzzParseNCCLTests(f *testing.F) {
	for _, p := range []string{"testdata/a100-roce/oci-14340fb-readme.txt", "testdata/bad/truncated.txt", "testdata/b200-ib/dstack-lambda-allreduce.txt"} {
		seed := fuzzSeed(f, p)
		if len(seed) > fuzzMaxInput {
			f.Fatalf("%s: the seed is %d bytes, over the %d the target reads", p, len(seed), fuzzMaxInput)
		}
		f.Add(seed)
		if strings.Contains(p, "oci-14340fb") {
			// A release newer than the newest modelled (read, priced by the
			// newest's rules, with a warning), as NCCL prints it.
			f.Add(append([]byte("NCCL version 2.32.1+cuda13.0\n"), seed...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMaxInput {
			return
		}
		s, err := checkReader(t, "fuzz", func() (calibrate.Sweep, error) {
			return calibrate.ParseNCCLTests("fuzz", data, calibrate.Layout{Nodes: 2, GPUsPerNode: 8, Op: "allreduce"})
		})
		if err == nil {
			checkRelease(t, s)
			for _, p := range s.Points {
				if !(p.Bytes > 0 && p.TimeUs > 0) {
					t.Fatalf("accepted a point without size or time: %+v", p)
				}
			}
		}
	})
}

// fuzzMaxInput is the largest input FuzzParseNCCLTests parses.
const fuzzMaxInput = 1 << 10

// fuzzSeed is the nccl-tests output at path cut to every kind of line it has:
// its header and closing lines, the device lines of each host's first and last
// rank (the abridged list newer nccl-tests print) and two data rows.
func fuzzSeed(f *testing.F, path string) []byte {
	f.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	host := func(i int) string {
		if i < 0 || i >= len(lines) || !strings.Contains(lines[i], "Rank") {
			return ""
		}
		_, h, _ := strings.Cut(lines[i], " on ")
		h, _, _ = strings.Cut(h, " device ")
		return h
	}
	var out []string
	rows := 0
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			continue
		case strings.Contains(t, " device ") && strings.Contains(t, "Rank"):
			if host(i-1) == host(i) && host(i+1) == host(i) {
				continue
			}
		case t[0] >= '0' && t[0] <= '9':
			if rows++; rows > 2 {
				continue
			}
		}
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// srun --label prefixes (" 0: ") are stripped like MPI's; the old table of
// nccl-tests 2.8–2.9 (no root column, a float error column, no Group in the device
// lines) under Open MPI's tags reads too; a layout's algo is NCCL_ALGO, "tree"
// being NCCL's double binary tree, and an unknown one is refused naming the file.
func TestParseSrunLabelOldTableAndAlgo(t *testing.T) {
	s, err := calibrate.ParseNCCLTests("ring.txt", read(t, "testdata/h100-ib-ndr/ncclt290-ring.txt"), calibrate.Layout{Op: "allreduce", Algo: "ring"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes != 2 || s.GPUsPerNode != 8 || len(s.Points) != 11 || s.Points[10].TimeUs != 179148 || s.Algo != collective.Ring {
		t.Errorf("srun-labelled: %d × %d, %d points, last %+v, algo %s", s.Nodes, s.GPUsPerNode, len(s.Points), s.Points[len(s.Points)-1], s.Algo)
	}
	s, err = calibrate.ParseNCCLTests("p4d.txt", read(t, "testdata/p4d-efa/awsefaeks-867b482-nccl2.9.9.txt"), calibrate.Layout{Op: "allreduce", Algo: "tree"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes != 2 || s.GPUsPerNode != 8 || len(s.Points) != 30 || s.Points[29].TimeUs != 183834 || s.Algo != collective.DoubleTree {
		t.Errorf("old table: %d × %d, %d points, last %+v, algo %s", s.Nodes, s.GPUsPerNode, len(s.Points), s.Points[len(s.Points)-1], s.Algo)
	}
	_, err = calibrate.ParseNCCLTests("p4d.txt", read(t, "testdata/p4d-efa/awsefaeks-867b482-nccl2.9.9.txt"), calibrate.Layout{Op: "allreduce", Algo: "collnet-fast"})
	if err == nil || !strings.Contains(err.Error(), "p4d.txt") || !strings.Contains(err.Error(), "algo") {
		t.Errorf("unknown algo: %v", err)
	}
}

// A whole row with a value that is not a non-negative number (a negative time, a
// NaN an interrupted run printed) is refused by that column, not as a row cut
// short: it has every column.
func TestParseNamesTheBadColumn(t *testing.T) {
	head := `# nThread 1 nGpus 1 minBytes 8 maxBytes 16777216 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#  Rank  0 Group  0 Pid   1000 on nodeA device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1001 on nodeA device  1 [0x2a] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
`
	for _, tc := range []struct{ row, want string }{
		{"    16777216       4194304     float     sum      -1   -400.0   41.94   41.94      0    400.0   41.94   41.94      0", `rows.txt:5: time "-400.0" is not a non-negative number`},
		{"    16777216       4194304     float     sum      -1    400.0   41.94   41.94      0      NaN   41.94   41.94      0", `rows.txt:5: in-place time "NaN" is not a non-negative number`},
		{"    16777216       4194304     float     sum           400.0   inf   41.94      0", `rows.txt:5: algbw "inf" is not a non-negative number`},
		{"    16777216       4194304     float     sum      -1    400.0   41.94", "rows.txt:5: cut short"},
	} {
		_, err := calibrate.ParseNCCLTests("rows.txt", []byte(head+tc.row+"\n"), calibrate.Layout{Op: "allreduce"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.row, err, tc.want)
		}
	}
}

// A header with no thread or no GPU per process ("nThread 1 nGpus 0", or a
// negative count) is not one nccl-tests printed; the launch read from it would be
// a guess, so the file is refused by the header's line.
func TestParseRefusesImpossibleHeader(t *testing.T) {
	src := string(read(t, "testdata/h100-ib-ndr/ncclt290-auto.txt"))
	for _, tc := range []struct{ from, to, want string }{
		{"nGpus 1", "nGpus 0", "ncclt.txt:1: nThread 1 nGpus 0: each must be at least 1"},
		{"nThread 1", "nThread -3", "ncclt.txt:1: nThread -3 nGpus 1: each must be at least 1"},
	} {
		_, err := calibrate.ParseNCCLTests("ncclt.txt", []byte(strings.Replace(src, tc.from, tc.to, 1)), calibrate.Layout{Op: "allreduce"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.to, err, tc.want)
		}
	}
}

// Reading a short output allocates about its size, not a fixed 64 KiB line
// buffer made and cleared per call, which was a third of the parse's time and
// with the fuzzing engine's minimisation (about n²/2 parses for n bytes) kept
// FuzzParseNCCLTests at 0 execs/s.
func TestParseShortOutputAllocatesLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops sync.Pool entries, so regexp's matchers are rebuilt: allocation counts are not the parser's")
	}
	data, err := os.ReadFile("testdata/b200-ib/dstack-lambda-allreduce.txt")
	if err != nil {
		t.Fatal(err)
	}
	layout := calibrate.Layout{Nodes: 2, GPUsPerNode: 8}
	if _, err := calibrate.ParseNCCLTests("ar.txt", data, layout); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	const runs = 50
	runtime.ReadMemStats(&before)
	for range runs {
		calibrate.ParseNCCLTests("ar.txt", data, layout)
	}
	runtime.ReadMemStats(&after)
	// The file is 3.9 KB: its points, lines and matches take about 40 KB; the
	// fixed buffer alone was 64 KiB.
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 48<<10 {
		t.Errorf("reading a %d-byte output allocates %d bytes", len(data), per)
	}
}

// A file saved with a byte-order mark reads as without: measurement rows behind
// one were taken for nccl-tests output and refused as "truncated".
func TestReadSkipsByteOrderMark(t *testing.T) {
	data, err := os.ReadFile("testdata/rows/h100-ib-nebius/dstack-nebius-2n-allreduce.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var plain, marked calibrate.Inputs
	if err := plain.Read("rows.jsonl", data, calibrate.FileLayout{}); err != nil {
		t.Fatal(err)
	}
	if err := marked.Read("rows.jsonl", append([]byte("\uFEFF"), data...), calibrate.FileLayout{}); err != nil || len(marked.Sweeps) != 1 || len(marked.Sweeps[0].Points) != len(plain.Sweeps[0].Points) {
		t.Errorf("with a byte-order mark: %v, %d sweeps", err, len(marked.Sweeps))
	}
}

// A file every row of which is set aside as a one-off stall (out-of-place and
// in-place times more than 3× apart) is refused, not read as a sweep without a
// point (FuzzParseMeasurementRows found it).
func TestEveryRowAStallRefused(t *testing.T) {
	nccl := `# nThread 1 nGpus 1 minBytes 8 maxBytes 16777216 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    16777216       4194304     float     sum      -1    400.0   41.94   78.64      0   1600.0   10.49   19.66      0
`
	_, err := calibrate.ParseNCCLTests("stall.txt", []byte(nccl), calibrate.Layout{Nodes: 2, GPUsPerNode: 8, Op: "allreduce"})
	if err == nil || !strings.Contains(err.Error(), "stall.txt") || !strings.Contains(err.Error(), "stall") {
		t.Errorf("nccl-tests: %v", err)
	}
	rows := `{"collective": "allreduce", "n_nodes": 2, "gpus_per_node": 8, "size_bytes": 16777216, "time_us": 400, "inplace_time_us": 1600}` + "\n"
	_, err = calibrate.ParseMeasurementRows("stall.jsonl", []byte(rows), calibrate.Layout{})
	if err == nil || !strings.Contains(err.Error(), "stall.jsonl") || !strings.Contains(err.Error(), "stall") {
		t.Errorf("measurement rows: %v", err)
	}
}

// A sweep that measured a size more than once (a row repeated, a rerun appended)
// is described by its rows and its distinct sizes: "12 sizes" was said of 11
// sizes, one of them measured twice.
func TestDescribeCountsDistinctSizes(t *testing.T) {
	src := strings.Split(string(read(t, "testdata/h100-ib-ndr/ncclt290-ring.txt")), "\n")
	for i, l := range src {
		if strings.Contains(l, " 8388608 ") {
			src = slices.Insert(src, i+1, l)
			break
		}
	}
	layout := calibrate.Layout{Op: "allreduce", Algo: "ring"}
	for _, tc := range []struct {
		data []byte
		want string
	}{
		{read(t, "testdata/h100-ib-ndr/ncclt290-ring.txt"), ", 11 sizes 8 MiB–8 GiB,"},
		{[]byte(strings.Join(src, "\n")), ", 12 rows at 11 sizes 8 MiB–8 GiB,"},
	} {
		s, err := calibrate.ParseNCCLTests("ring.txt", tc.data, layout)
		if err != nil {
			t.Fatal(err)
		}
		if d := s.Describe(); !strings.Contains(d, tc.want) {
			t.Errorf("%q, want %q in it", d, tc.want)
		}
	}
}

// A layout entry giving a field twice in two cases ("op" and "OP", which YAML
// and JSON keep apart) is refused naming it: Go's decoder matched both to op and
// kept the last.
func TestDecodeLayoutsKeyInTwoCases(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a.txt": {"op": "allreduce", "OP": "allgather"}}`, `"a.txt"."op" is given twice (as "op" and "OP")`},
		{`{"a.txt": {"op": "allreduce"}, "b.txt": {"op": "allgather", "nodes": 2}}`, ""},
	} {
		_, err := calibrate.DecodeLayouts([]byte(tc.in))
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// One measurement given twice under two names (a copy of the file) is refused
// naming both: its rows were fitted twice and each copy scored, left out, with
// the other still in the fit.
func TestReadRefusesSameContentTwice(t *testing.T) {
	data, err := os.ReadFile("testdata/rows/h100-ib-nebius/dstack-nebius-2n-allreduce.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var in calibrate.Inputs
	if err := in.Read("a.jsonl", data, calibrate.FileLayout{}); err != nil {
		t.Fatal(err)
	}
	err = in.Read("copy-of-a.jsonl", append([]byte("\uFEFF"), data...), calibrate.FileLayout{})
	if err == nil || !strings.Contains(err.Error(), "copy-of-a.jsonl: the same content as a.jsonl") {
		t.Errorf("a copy: %v", err)
	}
	if len(in.Sweeps) != 1 {
		t.Errorf("%d sweeps read", len(in.Sweeps))
	}
	// A copy with Windows line ends (or one saved as UTF-16) is the same
	// content: it was read and fitted as a second run.
	err = in.Read("crlf-copy-of-a.jsonl", bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n")), calibrate.FileLayout{})
	if err == nil || !strings.Contains(err.Error(), "crlf-copy-of-a.jsonl: the same content as a.jsonl") {
		t.Errorf("a copy with Windows line ends: %v", err)
	}
	if len(in.Sweeps) != 1 {
		t.Errorf("%d sweeps read", len(in.Sweeps))
	}
}

// A measurement of another GPU's cluster is refused, naming the file and both
// GPUs: the header's devices (or the rows' gpu) against the base cluster's. An
// H100 all-reduce sweep calibrated dgx-a100 (and mi355x) without a word: the
// A100 cluster's NIC efficiency fitted to H100 times.
func TestCalibrateRefusesAnotherGPU(t *testing.T) {
	h100 := func() calibrate.Inputs {
		var in calibrate.Inputs
		if err := in.Read("ncclt290-auto.txt", read(t, "testdata/h100-ib-ndr/ncclt290-auto.txt"), calibrate.FileLayout{Op: "allreduce"}); err != nil {
			t.Fatal(err)
		}
		return in
	}
	for _, c := range []struct {
		base, want string
	}{
		{"dgx-a100", "ncclt290-auto.txt: the GPUs measured are NVIDIA H100 80GB HBM3 (H100), the base cluster dgx-a100's A100-80GB (A100)"},
		{"mi355x", "the base cluster mi355x's MI355X (MI355X)"},
		{"dgx-h100", ""},
		{"aws-p5", ""},
	} {
		spec, err := catalog.System(c.base)
		if err != nil {
			t.Fatal(err)
		}
		_, err = calibrate.Calibrate(c.base, spec, h100())
		var fe *calibrate.FileError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.base, err)
		case c.want != "" && (!errors.As(err, &fe) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want a file error with %q", c.base, err, c.want)
		}
	}
	// Measurement rows say their GPU in the gpu field.
	var in calibrate.Inputs
	if err := in.Read("rows.jsonl", read(t, "testdata/rows/p4d-efa/"+firstFile(t, "testdata/rows/p4d-efa")), calibrate.FileLayout{}); err != nil {
		t.Fatal(err)
	}
	spec, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := calibrate.Calibrate("dgx-h100", spec, in); err == nil || !strings.Contains(err.Error(), "rows.jsonl: the GPUs measured are A100-SXM4-40GB (A100), the base cluster dgx-h100's H100-SXM (H100)") {
		t.Errorf("A100 rows on dgx-h100: %v", err)
	}
}

func firstFile(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil || len(es) == 0 {
		t.Fatalf("%s: %v", dir, err)
	}
	return es[0].Name()
}

// An output saved as UTF-16 (PowerShell 5's > and Out-File write UTF-16LE with
// a byte-order mark) is read as the same text; it was "neither nccl-tests
// output, nor measurement rows, nor a training log". Without the mark it is
// refused naming the encoding.
func TestReadUTF16(t *testing.T) {
	utf8 := read(t, "testdata/h100-ib-ndr/ncclt290-auto.txt")
	var want calibrate.Inputs
	if err := want.Read("auto.txt", utf8, calibrate.FileLayout{Op: "allreduce"}); err != nil {
		t.Fatal(err)
	}
	enc := func(bigEndian, mark bool) []byte {
		var out []byte
		if mark {
			out = []byte{0xFF, 0xFE}
			if bigEndian {
				out = []byte{0xFE, 0xFF}
			}
		}
		for _, u := range utf16.Encode([]rune(strings.ReplaceAll(string(utf8), "\n", "\r\n"))) {
			if bigEndian {
				out = append(out, byte(u>>8), byte(u))
			} else {
				out = append(out, byte(u), byte(u>>8))
			}
		}
		return out
	}
	for _, be := range []bool{false, true} {
		var in calibrate.Inputs
		if err := in.Read("auto16.txt", enc(be, true), calibrate.FileLayout{Op: "allreduce"}); err != nil {
			t.Errorf("UTF-16 (big-endian %v): %v", be, err)
			continue
		}
		if got, w := in.Sweeps[0].Points, want.Sweeps[0].Points; !slices.Equal(got, w) {
			t.Errorf("UTF-16 (big-endian %v): %d points, want %d as from UTF-8", be, len(got), len(w))
		}
	}
	var in calibrate.Inputs
	err := in.Read("bare16.txt", enc(false, false), calibrate.FileLayout{Op: "allreduce"})
	if err == nil || !strings.Contains(err.Error(), "bare16.txt: UTF-16 text without a byte-order mark") {
		t.Errorf("UTF-16 without a mark: %v", err)
	}
}
