package calibrate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/topology"
	"sigs.k8s.io/yaml"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden/*.json from this tree's calibrations")

// goldenCase is one calibration whose whole report is kept in testdata/golden:
// the base system, the input files (relative to testdata) and what each does
// not state itself, as docs/calibrate.md's commands give it.
type goldenCase struct {
	name   string
	base   string
	files  []string
	layout calibrate.Layouts
}

func allreduce() calibrate.FileLayout { return calibrate.FileLayout{Op: "allreduce"} }

var goldenCases = []goldenCase{
	// The five OCI A100 RoCE sweeps (docs/calibrate.md's a100-roce command).
	{"oci-a100", "oci-bm-gpu-a100", []string{
		"a100-roce/oci-00b698c-slurmop.txt", "a100-roce/oci-14340fb-readme.txt", "a100-roce/oci-2d359a9-readme.txt",
		"a100-roce/oci-3e5d61b-a100doc.txt", "a100-roce/oci-d091927-slurmop.txt",
	}, calibrate.Layouts{
		"oci-00b698c-slurmop.txt": allreduce(), "oci-14340fb-readme.txt": allreduce(), "oci-2d359a9-readme.txt": allreduce(),
		"oci-3e5d61b-a100doc.txt": allreduce(), "oci-d091927-slurmop.txt": allreduce(),
	}},
	// AWS p4d EFA, two nccl-tests outputs (the p4d-efa command).
	{"p4d-efa", "aws-p4d", []string{
		"p4d-efa/awsefaeks-7809f1f-nccl2.8.3.txt", "p4d-efa/awsefaeks-867b482-nccl2.9.9.txt",
	}, calibrate.Layouts{
		"awsefaeks-7809f1f-nccl2.8.3.txt": allreduce(), "awsefaeks-867b482-nccl2.9.9.txt": allreduce(),
	}},
	// HGX H100 NDR, one sweep run with NCCL's choice and one forced to ring.
	{"h100-ndr", "dgx-h100", []string{
		"h100-ib-ndr/ncclt290-auto.txt", "h100-ib-ndr/ncclt290-ring.txt",
	}, calibrate.Layouts{
		"ncclt290-auto.txt": allreduce(), "ncclt290-ring.txt": {Op: "allreduce", Algo: "ring"},
	}},
	// Lambda's B200 sweep as measurement rows.
	{"b200-lambda-rows", "hgx-b200", []string{"rows/b200-ib-lambda/dstack-lambda-2n-allreduce.jsonl"}, nil},
	// Training logs: torchao's three pretraining runs (testdata/trainlogs/layout.yaml).
	{"torchao-logs", "dgx-h100", []string{
		"trainlogs/torchao-pretraining-bf16.log", "trainlogs/torchao-pretraining-fp8-rowwise.log",
		"trainlogs/torchao-pretraining-fp8-tensorwise.log",
	}, nil},
}

// TestCalibrationUnchanged calibrates each golden case and compares the whole
// report — the fitted constants and the calibrated cluster (Spec), every priced
// row before, held out and after, the findings — with the one main produced
// before calibration's work was reorganised for speed (testdata/golden, written
// with -update-golden from that tree). It holds no model value as a truth: it
// proves a change meant to move nothing moved nothing, to the last bit (JSON
// writes each float64 in its shortest exact form).
func TestCalibrationUnchanged(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			got := goldenReport(t, c)
			path := filepath.Join("testdata", "golden", c.name+".json")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
				for i := 0; i < len(gl) && i < len(wl); i++ {
					if !bytes.Equal(gl[i], wl[i]) {
						t.Fatalf("%s: report differs from %s at line %d:\n got %s\nwant %s", c.name, path, i+1, gl[i], wl[i])
					}
				}
				t.Fatalf("%s: report has %d lines, %s %d", c.name, len(gl), path, len(wl))
			}
		})
	}
}

// Within the least heap its inputs need (calibrate.Heap), a calibration's
// placer caches 8 MiB of placements and builds them one by one when they are
// large: its cache starts over again and again (the five OCI sweeps build about
// 7 300 placements) and its parallel fits wait for one another, yet every
// report is the same to the bit as the golden one.
func TestCalibrationUnchangedWithinLeastHeap(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			got := goldenReportWithin(t, c, true)
			want, err := os.ReadFile(filepath.Join("testdata", "golden", c.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: the report within the least heap differs from the golden one", c.name)
			}
		})
	}
}

// goldenReport reads a case's files and returns its calibration report as
// indented JSON.
func goldenReport(t testing.TB, c goldenCase) []byte {
	return goldenReportWithin(t, c, false)
}

// goldenReportWithin is goldenReport, within the least heap the inputs need
// when least (calibrate.Heap), else Calibrate's default.
func goldenReportWithin(t testing.TB, c goldenCase, least bool) []byte {
	t.Helper()
	spec, in := goldenInputs(t, c)
	var heap int64
	if least {
		heap = calibrate.Heap(spec, in).Bytes
	}
	rep, err := calibrate.CalibrateWithin(context.Background(), c.base, spec, in, heap)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(struct {
		Report *calibrate.Report
		Notes  []string
	}{rep, in.Notes()}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func goldenInputs(t testing.TB, c goldenCase) (topology.Spec, calibrate.Inputs) {
	t.Helper()
	spec, err := catalog.System(c.base)
	if err != nil {
		t.Fatal(err)
	}
	layout := c.layout
	if layout == nil && filepath.Dir(c.files[0]) == "trainlogs" {
		data, err := os.ReadFile(filepath.Join("testdata", "trainlogs", "layout.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		if layout, err = calibrate.DecodeLayouts(j); err != nil {
			t.Fatal(err)
		}
	}
	var in calibrate.Inputs
	for _, f := range c.files {
		if !filepath.IsAbs(f) {
			f = filepath.Join("testdata", f)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Read(filepath.Base(f), data, layout.For(f, calibrate.FileLayout{})); err != nil {
			t.Fatal(err)
		}
	}
	return spec, in
}
