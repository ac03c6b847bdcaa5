package calibrate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
)

// BenchmarkCalibrate times a whole calibration — the fit, each file left out, the
// held-out checks of every moved constant, measured range and tail — on the
// inputs docs/calibrate.md ("The API") quotes its cost for: the five OCI A100
// RoCE sweeps, and copies of one full sweep up to the service's limit of files
// per request (internal/wire MaxCalibrationInputs), OCI's 8 B–8 GiB all-reduce
// and Lambda's B200 one. The copies are the worst case a caller can send: each
// file is left out in turn and every fold prices every other file's rows. The
// 16-copy runs take seconds each; they run with STEPCOST_SLOW=1 or without -short.
func BenchmarkCalibrate(b *testing.B) {
	oci := goldenCases[0]
	b.Run("oci-a100/files=5", func(b *testing.B) { benchCalibrate(b, oci) })
	for _, c := range []struct {
		name, base, file string
		layout           calibrate.FileLayout
	}{
		{"oci-a100-full", "oci-bm-gpu-a100", "a100-roce/oci-14340fb-readme.txt", calibrate.FileLayout{Op: "allreduce"}},
		{"b200-lambda", "hgx-b200", "b200-ib/dstack-lambda-allreduce.txt", calibrate.FileLayout{Nodes: 2, RunLayout: calibrate.RunLayout{GPUsPerNode: 8}}},
	} {
		for _, n := range []int{4, 16} {
			b.Run(fmt.Sprintf("%s/files=%d", c.name, n), func(b *testing.B) {
				if n > 4 && testing.Short() && os.Getenv("STEPCOST_SLOW") == "" {
					b.Skip("16 full sweeps take seconds per calibration: STEPCOST_SLOW=1 or without -short")
				}
				gc := goldenCase{name: c.name, base: c.base, layout: calibrate.Layouts{}}
				data, err := os.ReadFile(filepath.Join("testdata", c.file))
				if err != nil {
					b.Fatal(err)
				}
				dir := b.TempDir()
				for i := range n {
					name := fmt.Sprintf("copy%02d-%s", i, filepath.Base(c.file))
					// A comment line makes each copy another file's content (Read
					// refuses a copy given twice).
					cp := fmt.Appendf(slices.Clip(data), "# copy %d\n", i)
					if err := os.WriteFile(filepath.Join(dir, name), cp, 0o644); err != nil {
						b.Fatal(err)
					}
					gc.files = append(gc.files, filepath.Join(dir, name))
					gc.layout[name] = c.layout
				}
				benchCalibrate(b, gc)
			})
		}
	}
}

func benchCalibrate(b *testing.B, c goldenCase) {
	spec, in := goldenInputs(b, c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := calibrate.Calibrate(c.base, spec, in); err != nil {
			b.Fatal(err)
		}
	}
}
