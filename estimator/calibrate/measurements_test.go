package calibrate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/collective"
)

// The measurement rows of a run read as one sweep: the run from the rows' fields,
// NCCL_ALGO from the algorithm field, each point's time as published.
func TestMeasurementRowsRead(t *testing.T) {
	var in calibrate.Inputs
	name := "ncclt309-gjaion-2n-ring.jsonl"
	if err := in.Read(name, read(t, "testdata/rows/h100-ib-8n/"+name), calibrate.FileLayout{}); err != nil {
		t.Fatal(err)
	}
	if len(in.Sweeps) != 1 {
		t.Fatalf("%d sweeps, want 1", len(in.Sweeps))
	}
	s := in.Sweeps[0]
	if s.Op != collective.AllReduce || s.Nodes != 2 || s.GPUsPerNode != 8 || s.Ranks != 16 || s.Algo != collective.Ring || len(s.Points) != 14 {
		t.Errorf("got %s on %d × %d (%d ranks), algo %s, %d rows; want allreduce on 2 × 8, ring (\"Ring (NCCL_ALGO=Ring)\"), 14 rows", s.Op, s.Nodes, s.GPUsPerNode, s.Ranks, s.Algo, len(s.Points))
	}
	// The 1 MiB row, line 1 of the file: 156.9 µs out-of-place as the issue prints it.
	if p := s.Points[0]; p.Bytes != 1<<20 || p.TimeUs != 156.9 || p.Line != 1 {
		t.Errorf("first point %+v, want 1 MiB at 156.9 µs on line 1", p)
	}

	// A row that gives busbw only: the time is size ÷ (busbw ÷ bus factor), here
	// the 2-node ring's 8 GiB row, 392.9 GB/s busbw (41015 µs as published).
	lines := strings.Split(strings.TrimSpace(string(read(t, "testdata/rows/h100-ib-8n/"+name))), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "time_us")
	delete(m, "algbw_GBps")
	row, _ := json.Marshal(m)
	in = calibrate.Inputs{}
	if err := in.Read("busbw-only.jsonl", row, calibrate.FileLayout{}); err != nil {
		t.Fatal(err)
	}
	want := float64(8<<30) / (m["busbw_GBps"].(float64) / (2 * 15.0 / 16)) / 1e3
	if got := in.Sweeps[0].Points[0].TimeUs; math.Abs(got-want) > 1e-9*want || math.Abs(got-41015)/41015 > 0.001 {
		t.Errorf("busbw-only row: time %.6g µs, want %.6g (41015 published)", got, want)
	}
}

// A row that contradicts itself or its run is refused, naming the file, line and
// field; nothing is kept from the file.
func TestMeasurementRowsRefuse(t *testing.T) {
	base := read(t, "testdata/rows/p5-efa/awsk8s585-p5-2n-allreduce.jsonl")
	lines := strings.Split(strings.TrimSpace(string(base)), "\n")
	// edit rewrites one field of one line (0-based) of the p5 run.
	edit := func(line int, field string, v any, more ...any) string {
		out := append([]string(nil), lines...)
		var m map[string]any
		if err := json.Unmarshal([]byte(out[line]), &m); err != nil {
			t.Fatal(err)
		}
		more = append([]any{field, v}, more...)
		for i := 0; i+1 < len(more); i += 2 {
			if more[i+1] == nil {
				delete(m, more[i].(string))
			} else {
				m[more[i].(string)] = more[i+1]
			}
		}
		b, _ := json.Marshal(m)
		out[line] = string(b)
		return strings.Join(out, "\n")
	}
	for _, tt := range []struct {
		name, data string
		layout     calibrate.FileLayout
		want       string
	}{
		// busbw twice what size, time and the bus factor of 16 ranks give.
		{"busbw", edit(2, "busbw_GBps", 0.5), calibrate.FileLayout{}, "rows.jsonl:3: busbw_GBps: 0.5 GB/s is not algbw × the bus factor"},
		{"algbw", edit(0, "algbw_GBps", 0.4), calibrate.FileLayout{}, "rows.jsonl:1: algbw_GBps: 0.4 GB/s is not size_bytes / time_us"},
		{"n_gpus", edit(1, "n_gpus", 32), calibrate.FileLayout{}, "rows.jsonl:2: n_gpus: 32, but n_nodes × gpus_per_node is 2 × 8 = 16"},
		{"unknown", edit(0, "time_ms", 0.069), calibrate.FileLayout{}, "rows.jsonl:1: not a measurement row: time_ms: not a field"},
		{"type", edit(0, "size_bytes", "16 B"), calibrate.FileLayout{}, "rows.jsonl:1: not a measurement row: size_bytes: a JSON string"},
		{"no size", edit(3, "size_bytes", nil), calibrate.FileLayout{}, "rows.jsonl:4: size_bytes: missing"},
		{"no time", edit(0, "time_us", nil) + "\n", calibrate.FileLayout{}, ""}, // busbw remains: read
		{"nothing measured", edit(0, "busbw_GBps", nil, "time_us", nil, "algbw_GBps", nil), calibrate.FileLayout{}, "rows.jsonl:1: time_us: missing, and no algbw_GBps or busbw_GBps"},
		{"no nodes", edit(0, "n_nodes", nil), calibrate.FileLayout{}, "rows.jsonl:1: n_nodes: missing"},
		{"two runs", edit(2, "n_nodes", 4, "n_gpus", 32), calibrate.FileLayout{}, "rows.jsonl:3: n_nodes: differs from line 1's: one file is one run"},
		{"two collectives", edit(1, "collective", "allgather"), calibrate.FileLayout{}, "rows.jsonl:2: collective: differs from line 1's"},
		{"algorithm", edit(0, "algorithm", "the fastest"), calibrate.FileLayout{}, "rows.jsonl:1: algorithm: \"the fastest\""},
		{"collnet", edit(0, "algorithm", "CollNet"), calibrate.FileLayout{}, "rows.jsonl:1: algorithm: unknown algorithm"},
		{"negative", edit(0, "time_us", -69.29), calibrate.FileLayout{}, "rows.jsonl:1: time_us: -69.29: must be positive"},
		{"layout", string(base), calibrate.FileLayout{Nodes: 4, RunLayout: calibrate.RunLayout{GPUsPerNode: 8}}, "nodes 4 was given, but the rows' n_nodes and gpus_per_node are 2 × 8"},
		{"layout of nodes alone", string(base), calibrate.FileLayout{Nodes: 4}, ": nodes 4 was given, but the rows' n_nodes and gpus_per_node are 2 × 8"},
		{"cut", string(base[:len(base)*5/8]), calibrate.FileLayout{}, "rows.jsonl:3: not a measurement row: unexpected EOF"},
		// Two rows run together on one line: the second is not read as a row of its own.
		{"two rows on a line", lines[0] + " " + lines[1] + "\n" + strings.Join(lines[2:], "\n"), calibrate.FileLayout{}, "rows.jsonl:1: text after the row's JSON object: one row per line"},
		// A key given twice: Go's decoder kept the last (the forced ring dropped
		// for the null after it), also under another case ("Algorithm").
		{"a key twice", twice(lines, 1, `"algorithm": "Ring"`, `"algorithm": null`), calibrate.FileLayout{}, `rows.jsonl:2: not a measurement row: "algorithm" is given twice`},
		{"a key twice in two cases", twice(lines, 0, `"Algorithm": "Ring"`, `"algorithm": null`), calibrate.FileLayout{}, `rows.jsonl:1: not a measurement row: "algorithm" is given twice (as "Algorithm" and "algorithm")`},
	} {
		var in calibrate.Inputs
		err := in.Read("rows.jsonl", []byte(tt.data), tt.layout)
		switch {
		case tt.name == "no time":
			if err != nil {
				t.Errorf("%s: %v (busbw alone gives the time)", tt.name, err)
			}
			continue
		}
		var fe *calibrate.FileError
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error with %q", tt.name, err, tt.want)
		}
		if len(in.Sweeps) != 0 {
			t.Errorf("%s: kept a sweep from a file that was not understood", tt.name)
		}
	}
}

// twice is lines with line i's object opening with the fields first and second
// (one key in both, so that it is given twice).
func twice(lines []string, i int, first, second string) string {
	out := append([]string(nil), lines...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out[i]), &m); err != nil {
		panic(err)
	}
	delete(m, "algorithm")
	b, _ := json.Marshal(m)
	out[i] = "{" + first + ", " + second + ", " + string(b[1:])
	return strings.Join(out, "\n")
}

// The seeds are each file's first two rows with the fields the reader uses,
// and inputs over fuzzMaxInput are passed over: the whole 5 and 27 KB files
// (rows of about 1.2 KB each) kept the fuzzing engine minimising, at 0 execs/s
// (FuzzParseNCCLTests says why).
func FuzzParseMeasurementRows(f *testing.F) {
	for _, p := range []string{"testdata/rows/p5-efa/awsk8s585-p5-2n-allreduce.jsonl", "testdata/rows/h100-ib-8n/ncclt309-gjaion-2n-ring.jsonl"} {
		seed := rowsSeed(f, p)
		if _, err := calibrate.ParseMeasurementRows("seed", seed, calibrate.Layout{}); err != nil || len(seed) > fuzzMaxInput {
			f.Fatalf("%s: the seed (%d bytes) does not read: %v", p, len(seed), err)
		}
		f.Add(seed)
		// The rows stating a release newer than the newest modelled (read,
		// priced by the newest's rules, with a warning).
		newer := bytes.ReplaceAll(seed, []byte("{"), []byte(`{"library":"NCCL","library_version":"2.32.1 (NCCL version 2.32.1+cuda13.0 printed)",`))
		if s, err := calibrate.ParseMeasurementRows("seed", newer, calibrate.Layout{}); err != nil || s.NCCL != "2.32.1" || len(newer) > fuzzMaxInput {
			f.Fatalf("%s: the seed stating NCCL 2.32.1 (%d bytes) reads as %q: %v", p, len(newer), s.NCCL, err)
		}
		f.Add(newer)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMaxInput {
			return
		}
		s, err := checkReader(t, "fuzz", func() (calibrate.Sweep, error) {
			return calibrate.ParseMeasurementRows("fuzz", data, calibrate.Layout{})
		})
		// A row refused for one of its values names the field ("n_nodes: …"); the
		// others are rows that are not JSON objects of the schema.
		var fe *calibrate.FileError
		if errors.As(err, &fe) && fe.Line > 0 && !strings.HasPrefix(fe.Msg, "not a measurement row: ") && !strings.HasPrefix(fe.Msg, "text after the row's JSON object") {
			if field, _, ok := strings.Cut(fe.Msg, ": "); !ok || !rowFields[field] {
				t.Fatalf("a row refused without naming its field: %v", err)
			}
		}
		if err == nil {
			checkRelease(t, s)
			if s.Nodes < 1 || s.GPUsPerNode < 1 || len(s.Points) == 0 {
				t.Fatalf("accepted a run without nodes, GPUs or rows: %+v", s)
			}
			for _, p := range s.Points {
				if !(p.Bytes > 0 && p.TimeUs > 0) || math.IsInf(p.TimeUs, 0) {
					t.Fatalf("accepted a point without size or time: %+v", p)
				}
			}
		}
	})
}

// rowFields are the measurement rows' JSON keys.
var rowFields = func() map[string]bool {
	out := map[string]bool{}
	rt := reflect.TypeFor[calibrate.MeasurementRow]()
	for i := range rt.NumField() {
		if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}()

// rowsSeed is the first two measurement rows of the file at path with only the
// fields ParseMeasurementRows reads and a value other than null.
func rowsSeed(f *testing.F, path string) []byte {
	f.Helper()
	var out []byte
	for i, l := range strings.SplitN(string(read(f, path)), "\n", 3)[:2] {
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			f.Fatalf("%s:%d: %v", path, i+1, err)
		}
		kept := map[string]any{}
		for _, k := range []string{"collective", "n_nodes", "gpus_per_node", "n_gpus", "algorithm", "protocol", "size_bytes", "placement", "time_us", "algbw_GBps", "busbw_GBps", "inplace_time_us"} {
			if v := row[k]; v != nil {
				kept[k] = v
			}
		}
		b, err := json.Marshal(kept)
		if err != nil {
			f.Fatal(err)
		}
		out = append(append(out, b...), '\n')
	}
	return out
}

// NCCL_ALGO=Tree runs NCCL's double binary tree: rows that name "Tree" are
// priced with it, and a layout that says algo tree agrees with them.
func TestMeasurementRowsTreeIsTheDoubleTree(t *testing.T) {
	name := "ncclt309-gjaion-2n-ring.jsonl"
	data := strings.ReplaceAll(string(read(t, "testdata/rows/h100-ib-8n/"+name)), `"Ring (NCCL_ALGO=Ring)"`, `"Tree (NCCL_ALGO=Tree)"`)
	if !strings.Contains(data, "NCCL_ALGO=Tree") {
		t.Fatal("no row edited")
	}
	for _, algo := range []string{"", "tree"} {
		s, err := calibrate.ParseMeasurementRows(name, []byte(data), calibrate.Layout{Algo: algo})
		if err != nil || s.Algo != collective.DoubleTree {
			t.Errorf("layout algo %q: %v, algo %s; want the double tree", algo, err, s.Algo)
		}
	}
}
