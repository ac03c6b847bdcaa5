package calibrate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/topology"
)

// system is one measured cluster of testdata/ (provenance in testdata/README.md):
// the catalog system it is calibrated from, how its network differs from that
// template where the source says so, and what each file does not state itself.
type system struct {
	dir    string
	base   string
	adjust func(*topology.Spec)
	layout calibrate.Layouts
}

func systems() []system {
	allreduce2x8 := calibrate.FileLayout{Nodes: 2, Op: "allreduce", RunLayout: calibrate.RunLayout{GPUsPerNode: 8}}
	return []system{
		{dir: "a100-roce", base: "oci-bm-gpu-a100", layout: calibrate.Layouts{
			// The OCI outputs start at the nThread line; the command above each in the
			// source document runs all_reduce_perf.
			"oci-14340fb-readme.txt":  {Op: "allreduce"},
			"oci-2d359a9-readme.txt":  {Op: "allreduce"},
			"oci-3e5d61b-a100doc.txt": {Op: "allreduce"},
			"oci-00b698c-slurmop.txt": {Op: "allreduce"},
			"oci-d091927-slurmop.txt": {Op: "allreduce"},
		}},
		{dir: "b200-roce", base: "hgx-b200",
			// GCP A4 / A4 High: B200 with 8 × 400 Gb/s RoCE (CX-7) per node.
			adjust: func(s *topology.Spec) { s.NICs.Kind = topology.RoCE; s.Network.RailOptimized = false },
			layout: calibrate.Layouts{
				"dstack-gcp-a4-allreduce.txt": allreduce2x8,
				"ctk-a4high-allgather.txt":    {Nodes: 2, Op: "allgather", RunLayout: calibrate.RunLayout{GPUsPerNode: 8}},
			}},
	}
}

func (s system) load(t testing.TB) (topology.Spec, []string, calibrate.Inputs) {
	t.Helper()
	spec, err := catalog.System(s.base)
	if err != nil {
		t.Fatal(err)
	}
	if s.adjust != nil {
		s.adjust(&spec)
	}
	files, err := filepath.Glob(filepath.Join("testdata", s.dir, "*.txt"))
	if err != nil || len(files) < 2 {
		t.Fatalf("%s: %d files (%v)", s.dir, len(files), err)
	}
	var in calibrate.Inputs
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Read(filepath.Base(f), data, s.layout.For(f, calibrate.FileLayout{})); err != nil {
			t.Fatal(err)
		}
	}
	return spec, files, in
}

// TestHalfCalibratedBeatsCatalog is the acceptance test of calibration: on every
// measured system, constants fitted on half of its files price the other half
// better (median |error|) than the uncalibrated catalog does, both ways round.
func TestHalfCalibratedBeatsCatalog(t *testing.T) {
	for _, sys := range systems() {
		t.Run(sys.dir, func(t *testing.T) {
			spec, _, in := sys.load(t)
			var a, b calibrate.Inputs
			for i, s := range in.Sweeps {
				if i%2 == 0 {
					a.Sweeps = append(a.Sweeps, s)
				} else {
					b.Sweeps = append(b.Sweeps, s)
				}
			}
			for _, split := range [][2]calibrate.Inputs{{a, b}, {b, a}} {
				train, test := split[0], split[1]
				_, fitted, err := calibrate.Fit(spec, train)
				if err != nil {
					t.Fatal(err)
				}
				beforeMed, beforeMean, err := calibrate.Score(spec, test)
				if err != nil {
					t.Fatal(err)
				}
				afterMed, afterMean, err := calibrate.Score(fitted, test)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("train %v → test %v: median |err| %.1f%% → %.1f%%, mean %.1f%% → %.1f%%",
					names(train), names(test), 100*beforeMed, 100*afterMed, 100*beforeMean, 100*afterMean)
				// The median, as the collective model's own accuracy targets are stated
				// (docs/calibration.md): the mean is carried by the few small messages
				// whose algorithm NCCL and the model choose differently.
				if !(afterMed < beforeMed) {
					t.Errorf("calibrated on %v, %v is priced worse than by the catalog: median |err| %.1f%% → %.1f%%", names(train), names(test), 100*beforeMed, 100*afterMed)
				}
			}
		})
	}
}

func names(in calibrate.Inputs) []string {
	var out []string
	for _, s := range in.Sweeps {
		out = append(out, s.File)
	}
	for _, r := range in.Runs {
		out = append(out, r.File)
	}
	return out
}
