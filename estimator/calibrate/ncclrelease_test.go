package calibrate_test

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/catalog"
)

// A calibration of collective measurements says which NCCL release's rules
// priced them: the base cluster's stated release, or, when it states none, NCCL
// 2.28's (docs/cluster-file.md, nccl), as stepcost collective does; a
// calibration of training logs alone prices no collective measurement and says
// nothing of it.
func TestCalibrateStatesTheNCCLRelease(t *testing.T) {
	var in calibrate.Inputs
	if err := in.Read("ring.txt", read(t, "testdata/h100-ib-ndr/ncclt290-ring.txt"), calibrate.FileLayout{Op: "allreduce", Algo: "ring"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ nccl, want string }{
		{"", "ring.txt states no NCCL release: priced by the base's, NCCL 2.27's rules: the cluster states no release (nccl)"},
		{"2.29", "ring.txt states no NCCL release: priced by the base's, NCCL 2.29, the cluster's release (nccl)"},
	} {
		spec, err := catalog.System("dgx-h100")
		if err != nil {
			t.Fatal(err)
		}
		spec.NCCL = tc.nccl
		rep, err := calibrate.Calibrate("dgx-h100", spec, in)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Join(rep.Notes, "\n"); !strings.Contains(n, tc.want) {
			t.Errorf("nccl %q: notes %q; want %q", tc.nccl, rep.Notes, tc.want)
		}
	}
}

// Each nccl-tests output is priced by the NCCL release it ran, as stepcost
// accuracy prices each row by the release it states: the header's
// "nccl-library=22602" (nccl-tests 2.17's, ncclGetVersion's code) or NCCL's own
// "NCCL version 2.29.3+cuda13.1" line. Lambda's two B200 nodes ran 2.26.2, whose
// Blackwell NVLS channels differ from 2.28's (before 2.27); the same output
// stating 2.29.3 is priced by 2.29's rules on a base that states no release
// (2.28's then). The base's own release prices only an output that states none.
func TestCalibratePricesEachInputByItsRelease(t *testing.T) {
	data := read(t, "testdata/b200-ib/dstack-lambda-allreduce.txt")
	fl := calibrate.FileLayout{Nodes: 2, RunLayout: calibrate.RunLayout{GPUsPerNode: 8}}
	before := func(t *testing.T, data []byte, nccl string) (float64, []string) {
		t.Helper()
		var in calibrate.Inputs
		if err := in.Read("lambda.txt", data, fl); err != nil {
			t.Fatal(err)
		}
		spec, err := catalog.System("hgx-b200")
		if err != nil {
			t.Fatal(err)
		}
		spec.NCCL = nccl
		rep, err := calibrate.Calibrate("hgx-b200", spec, in)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, m := range rep.Before {
			sum += m.PredictedUs
		}
		return sum, rep.Notes
	}
	v229 := bytes.Replace(data, []byte("nccl-library=22602"), []byte("nccl-library=22903"), 1)
	none := bytes.Replace(data, []byte("nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602"), []byte("nccl-tests version 2.17.6"), 1)
	ref226, _ := before(t, none, "2.26.2")
	ref229, _ := before(t, none, "2.29")
	if ref226 == ref229 {
		t.Fatalf("2.26.2 and 2.29 price the output alike (%.3f µs): the test shows nothing", ref226)
	}
	for _, tc := range []struct {
		name string
		data []byte
		base string
		want float64
		note string
	}{
		{"2.26.2 on a 2.28 base", data, "2.28", ref226, "lambda.txt ran NCCL 2.26.2 (its output says so): priced by its rules; the fitted cluster file is written for the base's NCCL 2.28, the cluster's release (nccl)"},
		{"2.29.3 on a base stating none", v229, "", ref229, "lambda.txt ran NCCL 2.29.3 (its output says so): priced by its rules; the fitted cluster file is written for the base's NCCL 2.27's rules: the cluster states no release (nccl)"},
		{"2.29.3 on a 2.29 base", v229, "2.29", ref229, "lambda.txt ran NCCL 2.29.3 (its output says so): priced by its rules"},
		{"none on a 2.26.2 base", none, "2.26.2", ref226, "lambda.txt states no NCCL release: priced by the base's, NCCL 2.26.2, the cluster's release (nccl)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notes := before(t, tc.data, tc.base)
			if math.Abs(got-tc.want) > 1e-9*tc.want {
				t.Errorf("priced %.3f µs in all; want %.3f, the release's own", got, tc.want)
			}
			if !slices.Contains(notes, tc.note) {
				t.Errorf("notes %q; want %q", notes, tc.note)
			}
		})
	}
}

// The release is read from NCCL's "NCCL version" line, an MPI prefix and all,
// and from nccl-tests' nccl-library code, whose form changed at 2.9
// (nccl.h NCCL_VERSION: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z after);
// two releases in one file are refused.
func TestParseNCCLRelease(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"testdata/a100-roce/oci-00b698c-slurmop.txt", "2.29.3"},
		{"testdata/a100-roce/oci-3e5d61b-a100doc.txt", "2.14.3"},
		{"testdata/p4d-efa/awsefaeks-7809f1f-nccl2.8.3.txt", "2.8.3"},
		{"testdata/b200-ib/dstack-lambda-allreduce.txt", "2.26.2"},
		{"testdata/h100-ib-ndr/ncclt290-ring.txt", ""},
	} {
		s, err := calibrate.ParseNCCLTests(tc.file, read(t, tc.file), calibrate.Layout{Nodes: 2, GPUsPerNode: 8, Op: "allreduce"})
		if err != nil {
			t.Fatal(err)
		}
		if s.NCCL != tc.want {
			t.Errorf("%s: release %q; want %q", tc.file, s.NCCL, tc.want)
		}
	}
	// Measurement rows state it in library_version, as stepcost accuracy reads
	// it; an RCCL row's release is not NCCL's.
	for _, tc := range []struct{ lib, want string }{{``, "2.26.2"}, {`"library": "NCCL", `, "2.26.2"}, {`"library": "RCCL", `, ""}} {
		row := `{` + tc.lib + `"collective": "allreduce", "n_nodes": 2, "gpus_per_node": 8, "size_bytes": 1073741824, "time_us": 5236.2, "library_version": "2.26.2 (NCCL version 2.26.2+cuda12.8 printed)"}`
		s, err := calibrate.ParseMeasurementRows("rows.jsonl", []byte(row+"\n"), calibrate.Layout{})
		if err != nil {
			t.Fatal(err)
		}
		if s.NCCL != tc.want {
			t.Errorf("%s: release %q; want %q", row, s.NCCL, tc.want)
		}
	}
	// NCCL's own spelling of its release, with the CUDA it was built for, is that
	// release (it was refused naming library_version), and a library named in
	// lower case is NCCL still (its release was ignored).
	for _, tc := range []struct{ lib, version, want string }{{``, "2.28.7+cuda13.0", "2.28.7"}, {`"library": "nccl", `, "2.26.2", "2.26.2"}, {`"library": "NCCL", `, "2.29.3+cuda12.9 (printed)", "2.29.3"}} {
		row := `{` + tc.lib + `"collective": "allreduce", "n_nodes": 2, "gpus_per_node": 8, "size_bytes": 1073741824, "time_us": 5236.2, "library_version": "` + tc.version + `"}`
		s, err := calibrate.ParseMeasurementRows("rows.jsonl", []byte(row+"\n"), calibrate.Layout{})
		if err != nil || s.NCCL != tc.want {
			t.Errorf("%s: release %q, %v; want %q", row, s.NCCL, err, tc.want)
		}
	}
	// A blank before the release is refused, as in every release field, and the
	// refusal quotes what the row gave (it quoted "" before).
	row := `{"collective": "allreduce", "n_nodes": 2, "gpus_per_node": 8, "size_bytes": 1073741824, "time_us": 5236.2, "library_version": " 2.28"}`
	if _, err := calibrate.ParseMeasurementRows("rows.jsonl", []byte(row+"\n"), calibrate.Layout{}); err == nil || !strings.Contains(err.Error(), `" 2.28"`) {
		t.Errorf(`library_version " 2.28": %v; want a refusal quoting " 2.28"`, err)
	}
	old := bytes.Replace(read(t, "testdata/b200-ib/dstack-lambda-allreduce.txt"), []byte("nccl-library=22602"), []byte("nccl-library=2803"), 1)
	if s, err := calibrate.ParseNCCLTests("old.txt", old, calibrate.Layout{Nodes: 2, GPUsPerNode: 8}); err != nil || s.NCCL != "2.8.3" {
		t.Errorf("nccl-library=2803: %q, %v; want 2.8.3", s.NCCL, err)
	}
	two := append(read(t, "testdata/b200-ib/dstack-lambda-allreduce.txt"), "NCCL version 2.29.3+cuda13.1\n"...)
	if _, err := calibrate.ParseNCCLTests("two.txt", two, calibrate.Layout{Nodes: 2, GPUsPerNode: 8}); err == nil || !strings.Contains(err.Error(), "two.txt") || !strings.Contains(err.Error(), "2.26.2") {
		t.Errorf("two releases: %v; want an error naming the file and both releases", err)
	}
}
