package calibrate_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
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
	// catalogOff says the catalog misprices the system in a way the cluster file
	// can fix — its constants, or the algorithms NCCL runs there (algorithms) — so
	// calibration must price held-out files strictly better.
	catalogOff bool
	// splitSizes: the system has one run of one collective, so the halves are its
	// sizes taken alternately (the 1st, 3rd, … against the 2nd, 4th, …).
	splitSizes bool
	// noBound: no constant fitted on either half may stop at a bound of physics.
	noBound bool
	// scatter, when set, lets a calibrated half price the other half worse than the
	// catalog as long as its median stays within this: the catalog already prices
	// that half within the scatter of the rows the collective model was fitted on,
	// and the halves disagree at the sizes the fit can move.
	scatter float64
}

func systems() []system {
	allreduce2x8 := calibrate.FileLayout{Nodes: 2, Op: "allreduce", RunLayout: calibrate.RunLayout{GPUsPerNode: 8}}
	return []system{
		// OCI A100 RoCE: NCCL 2.14–2.29 runs 2-node all-reduces of 128 MiB and more as
		// a ring where NCCL's table as the model reproduces it picks the double tree
		// (24 % fast there). The unversioned 14340fb sweep runs 1–8 GiB as the tree
		// (comparable, below).
		{dir: "a100-roce", base: "oci-bm-gpu-a100", catalogOff: true, layout: calibrate.Layouts{
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
		// AWS p4d.24xlarge (8 × A100-SXM4-40GB, 4 × 100 Gb/s EFA), 2 nodes, NCCL 2.8.3
		// and 2.9.9 with the aws-ofi-nccl plugin of 2021–2022: EFA's latency and
		// bandwidth of that plugin generation are far from the catalog's.
		{dir: "p4d-efa", base: "aws-p4d", catalogOff: true, layout: calibrate.Layouts{
			"awsefaeks-7809f1f-nccl2.8.3.txt": {Op: "allreduce"},
			"awsefaeks-867b482-nccl2.9.9.txt": {Op: "allreduce"},
		}},
		// An HGX H100 pair on NDR InfiniBand whose network delivers a quarter of its
		// line rate (nccl-tests#290): one run as NCCL chose, one with NCCL_ALGO=RING.
		{dir: "h100-ib-ndr", base: "dgx-h100", catalogOff: true, layout: calibrate.Layouts{
			"ncclt290-auto.txt": {Op: "allreduce"},
			"ncclt290-ring.txt": {Op: "allreduce", Algo: "ring"},
		}},
		// Measurement rows (JSON lines), transcribed from published tables with
		// their provenance in every row (testdata/README.md).
		//
		// An 8-node H100 cluster on 400 Gb/s InfiniBand (nccl-tests#309): 8 and 4
		// nodes as NCCL chose, 2 nodes with NCCL_ALGO=Ring. What the catalog misses
		// there is NCCL's choice at 4 and 8 nodes: the 1–8 GiB rows run 9–15 % slower
		// than the ring NCCL's table as reproduced picks there (8 nodes, 1 GiB: its
		// double tree, +25 %), and read as the NVLS tree (8 nodes −15, −8, −9, −9 %,
		// summed |ln error| 0.43 against the ring's 0.53 and NCCL's choice's 0.64; 4
		// nodes −5 to −7 % against the ring's −10 to −15 %). The mismatched rows
		// below 1 GiB show it (8 nodes, 512 MiB: +42 % as the table's double tree,
		// +2 % as the ring, −5 % as the NVLS tree; 4 nodes, 4 MiB: −12 % as the NVLS
		// tree). From 1 GiB on three nodes or more NCCL's comparison does not depend
		// on the node count (choices.go), so the choice fitted on 8 nodes carries to
		// 4 and the reverse.
		{dir: "rows/h100-ib-8n", base: "dgx-h100", catalogOff: true},
		// AWS p4d EFA, two more runs: 8–128 B (dstack#3865) and 1 MiB–2 GiB
		// (SkyPilot's HyperPod table, busbw only); the sizes do not overlap.
		{dir: "rows/p4d-efa", base: "aws-p4d"},
		// AWS p5 EFA (aws-k8s-tester#585): one run of one collective, 16–128 B, split
		// by size; the catalog's EFA latency is 17 % fast.
		{dir: "rows/p5-efa", base: "aws-p5", catalogOff: true, splitSizes: true},
		// Dell XE9680 pair on NDR InfiniBand (nccl-tests#309): one run, split by size.
		// NCCL runs the NVLS tree from 128 MiB up. It had been 1–8 % slower than the
		// catalog priced it, and the halves fitted the scale-up efficiency to
		// 0.77–0.78; with the tree's pipeline fill and drain at NCCL's per-channel
		// ceiling (collective model.go nvlsTreeFillBytes) the catalog prices the
		// halves at 2.5 and 2.4 % median, and fitted on either half no constant
		// prices the other better: calibration declines them (not off).
		{dir: "rows/h100-ib-xe9680", base: "dgx-h100", splitSizes: true, noBound: true},
		// Nebius H100 on InfiniBand (dstack's cluster docs): one run, split by size;
		// the same NVLS tree from 128 MiB up, the same scale-up efficiency. With NCCL's
		// per-channel NVLS tree ceiling (8 × 57.7 GB/s × 16/30 = 246 GB/s, tuning.cc
		// perChMaxNVLSTreeBws; the sweep's 1–8 GiB rows at 238–249) the catalog prices
		// the even sizes at 1.3 % median (5.7 % before it), while its odd 1–64 MiB rows
		// are 11.1 % off and its even ones 0.6 %: fitted on the odd half, the scale-up
		// efficiency (0.73) prices the even half at 4.1 % (4.1 % before the ceiling as
		// well), under the 5.6 % the collective model reaches in sample over all sizes.
		// With the tree's pipeline fill and drain at that ceiling (collective model.go
		// nvlsTreeFillBytes) the catalog prices the halves at 1.2 and 4.3 % median
		// and calibration declines to move any constant on either half (not off).
		{dir: "rows/h100-ib-nebius", base: "dgx-h100", splitSizes: true, noBound: true, scatter: 0.056},
		// AWS p6-b200 EFA (dstack#3961): one run, 8–256 B, split by size. The
		// catalog is not off: its EFA latency is fitted on the 2-node EFA rows,
		// these among them (docs/calibration.md), and prices the halves at 1.6 and
		// 3.5 % median (only 8 B beyond 4 %, +11.7 %), under the 5.6 % the
		// collective model reaches in sample on messages under 1 MiB — the scatter
		// of the rows it was fitted on. Fitted on either half, the EFA latency does
		// not price that half's other sizes better, and calibration declines it.
		{dir: "rows/p6-b200-efa", base: "aws-p6-b200", splitSizes: true},
		// Lambda B200 on InfiniBand (dstack's cluster docs): one run, 1 MiB–2 GiB,
		// split by size. The catalog is not off in a way the cluster file can fix:
		// with NCCL's own choice (the NVLS tree from 8 MiB) it prices the rows of
		// 64 MiB and more at 3.2 and 3.4 % median in either half, under the 4.0 %
		// the collective model reaches in sample there; what it misses, 1–16 MiB
		// (−25 to +13 %), is latency and protocol, which no row under 1 MiB
		// determines and no other algorithm prices within the mismatch rule. The NIC
		// efficiency fitted on the odd sizes stops at its 0.98 bound and is declined.
		{dir: "rows/b200-ib-lambda", base: "hgx-b200", splitSizes: true},
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
	if err == nil {
		var rows []string
		rows, err = filepath.Glob(filepath.Join("testdata", s.dir, "*.jsonl"))
		files = append(files, rows...)
	}
	if err != nil || len(files) < 2 && !s.splitSizes || len(files) < 1 {
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
// measured system, the cluster calibrated on half of its files (as the command
// writes it) prices the other half no worse than the uncalibrated catalog does,
// both ways round, and better — over all rows or in one size band — where the
// system's entry says the catalog is off.
func TestHalfCalibratedBeatsCatalog(t *testing.T) {
	for _, sys := range systems() {
		t.Run(sys.dir, func(t *testing.T) {
			spec, _, in := sys.load(t)
			shows, err := rowChoices(sys.base, spec, in)
			if err != nil {
				t.Fatal(err)
			}
			a, b := halves(sys, in)
			for _, split := range [][2]calibrate.Inputs{{a, b}, {b, a}} {
				train, test := split[0], split[1]
				all := test
				test = comparable(t, train, test, shows)
				rep, err := calibrate.Calibrate(sys.base, spec, train)
				if err != nil {
					t.Fatal(err)
				}
				if rows(test) < rows(all) {
					b, _ := mustScore(t, spec, all)
					a, _ := mustScore(t, rep.Spec, all)
					t.Logf("  all %d held-out rows, those set aside included: median |err| %.1f%% → %.1f%%", rows(all), 100*b, 100*a)
				}
				beforeMed, beforeMean := mustScore(t, spec, test)
				afterMed, afterMean := mustScore(t, rep.Spec, test)
				t.Logf("train %v → test %v: median |err| %.1f%% → %.1f%%, mean %.1f%% → %.1f%%; fitted %+v, at a bound %v",
					names(train), names(test), 100*beforeMed, 100*afterMed, 100*beforeMean, 100*afterMean, rep.Fitted, rep.AtBound)
				if sys.noBound && len(rep.AtBound) > 0 {
					t.Errorf("calibrated on %v: %v at a bound", names(train), rep.AtBound)
				}
				// The median, as the collective model's own accuracy targets are stated
				// (docs/calibration.md): the mean is carried by the few small messages
				// whose algorithm NCCL and the model choose differently.
				if afterMed > beforeMed+0.001 && !(afterMed <= sys.scatter) {
					t.Errorf("calibrated on %v, %v is priced worse than by the catalog: median |err| %.1f%% → %.1f%%", names(train), names(test), 100*beforeMed, 100*afterMed)
				}
				// Better where the catalog is off: over all rows, or in one size band
				// (the collective model's targets are stated per band) of at least
				// minBandHeldOut rows. The band counts because a held-out half can hold
				// sizes the training half cannot reach — OCI's held-out sweep from 8 B
				// beside training files of 1 GiB and more, where no constant that sets a
				// small message is determined — and those rows keep the median of all
				// rows where it was whatever the calibration does to the sizes it does
				// reach.
				better := afterMed < beforeMed-0.001
				for _, band := range []string{calibrate.BandSmall, calibrate.BandMedium, calibrate.BandLarge} {
					tb := inBand(test, band)
					if rows(tb) < minBandHeldOut {
						continue
					}
					bMed, _ := mustScore(t, spec, tb)
					aMed, _ := mustScore(t, rep.Spec, tb)
					t.Logf("  %s: %d rows, median |err| %.1f%% → %.1f%%", band, rows(tb), 100*bMed, 100*aMed)
					if aMed < bMed-0.001 {
						better = true
					}
				}
				if sys.catalogOff && !better {
					t.Errorf("calibrated on %v, %v is priced no better than by the catalog, over all rows or in any size band: median |err| %.1f%% → %.1f%% over all rows", names(train), names(test), 100*beforeMed, 100*afterMed)
				}
			}
		})
	}
}

// TestHeldOutNoBandWorse: leaving each file out in turn, no group of rows
// (collective × size band) with at least five rows is priced worse by the
// constants fitted on the other files than by the catalog — the guard's promise,
// checked on every measured system.
func TestHeldOutNoBandWorse(t *testing.T) {
	for _, sys := range systems() {
		t.Run(sys.dir, func(t *testing.T) {
			spec, _, in := sys.load(t)
			rep, err := calibrate.Calibrate(sys.base, spec, in)
			if err != nil {
				t.Fatal(err)
			}
			type acc struct {
				b, a float64
				n    int
			}
			groups := map[string]*acc{}
			for i, m := range rep.Before {
				o := rep.OutOfSample[i]
				if o.File != m.File || o.Line != m.Line {
					t.Fatalf("row %d: before %s:%d, out of sample %s:%d", i, m.File, m.Line, o.File, o.Line)
				}
				g := m.Op + " " + calibrate.Band(m.Bytes)
				if groups[g] == nil {
					groups[g] = &acc{}
				}
				groups[g].b += math.Abs(math.Log(m.PredictedUs / m.MeasuredUs))
				groups[g].a += math.Abs(math.Log(o.PredictedUs / o.MeasuredUs))
				groups[g].n++
			}
			for g, s := range groups {
				if s.n < 5 {
					continue
				}
				b, a := s.b/float64(s.n), s.a/float64(s.n)
				t.Logf("%s: %d rows, mean |ln err| %.3f → %.3f", g, s.n, b, a)
				if a > b+0.005 {
					t.Errorf("%s: %d rows held out priced worse than by the catalog: mean |ln err| %.3f → %.3f", g, s.n, b, a)
				}
			}
			for _, d := range rep.Declined {
				t.Logf("declined: %s", d)
			}
		})
	}
}

// rowChoices is, for every row NCCL ran with another algorithm than the model
// picks (calibrate.Mismatch: each row judged by itself with the base's
// constants, so no file's verdict depends on the others), the algorithm it
// shows; a row not in it shows the model's own choice.
func rowChoices(base string, spec topology.Spec, in calibrate.Inputs) (map[string]string, error) {
	rep, err := calibrate.Calibrate(base, spec, in)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range rep.Mismatches {
		algo, _, _ := strings.Cut(m.Measured, "/")
		out[fmt.Sprintf("%s:%d", m.File, m.Line)] = algo
	}
	return out, nil
}

// comparable returns the held-out rows a calibration on train can be held to:
// it sets aside a held-out row whose size the training half measured on the same
// collective and group shape, where every training row of that size shows
// another algorithm than the held-out row does (rowChoices), all of them runs in
// which NCCL chose (a run that forced NCCL_ALGO is never set aside and never
// sets one aside). There the runs
// disagree on what NCCL runs, and whatever the training half writes for that
// size, it writes what its own runs measured: OCI's unversioned 14340fb sweep
// runs 1, 2 and 4 GiB on 2 × 8 A100 as the double tree (the catalog 10.1, 10.9,
// 5.3 % off), where the three NCCL 2.25–2.29 files run all three as the ring
// (the ring 0–1 % off, the tree −23 to −24 %), and it reaches 238 GB/s busbw at
// 8 GiB where they stay at 186–191 (testdata/README.md). Sizes the training half
// did not measure stay judged (14340fb's 8 GiB, which the ring range those files
// write prices 25.6 % off where the catalog's tree is 4.7 %).
func comparable(t *testing.T, train, test calibrate.Inputs, shows map[string]string) calibrate.Inputs {
	t.Helper()
	type key struct {
		op           string
		nodes, perNd int
		bytes        float64
	}
	trained := map[key][]string{}
	for _, s := range train.Sweeps {
		for _, p := range s.Points {
			if s.Algo != collective.Auto || s.ForceProtocol {
				continue // a forced run says nothing of NCCL's choice
			}
			k := key{s.Op.String(), s.Nodes, s.GPUsPerNode, p.Bytes}
			trained[k] = append(trained[k], shows[fmt.Sprintf("%s:%d", s.File, p.Line)])
		}
	}
	var out calibrate.Inputs
	out.Runs = test.Runs
	for _, s := range test.Sweeps {
		kept := s
		kept.Points = nil
		for _, p := range s.Points {
			algo := shows[fmt.Sprintf("%s:%d", s.File, p.Line)]
			others := trained[key{s.Op.String(), s.Nodes, s.GPUsPerNode, p.Bytes}]
			if s.Algo == collective.Auto && !s.ForceProtocol && len(others) > 0 && !slices.Contains(others, algo) {
				t.Logf("  set aside %s:%d (%s): NCCL ran it as %q, every training row of its size as %q", s.File, p.Line, calibrate.FormatBytes(p.Bytes), orModel(algo), orModel(others[0]))
				continue
			}
			kept.Points = append(kept.Points, p)
		}
		if len(kept.Points) > 0 {
			out.Sweeps = append(out.Sweeps, kept)
		}
	}
	return out
}

func orModel(algo string) string {
	if algo == "" {
		return "the model's choice"
	}
	return algo
}

// minBandHeldOut is the fewest held-out rows of a size band whose median the
// acceptance test judges: three, so that one row does not make the median.
const minBandHeldOut = 3

// inBand returns the inputs' sweeps with only their points of one size band.
func inBand(in calibrate.Inputs, band string) calibrate.Inputs {
	var out calibrate.Inputs
	for _, s := range in.Sweeps {
		b := s
		b.Points = nil
		for _, p := range s.Points {
			if calibrate.Band(p.Bytes) == band {
				b.Points = append(b.Points, p)
			}
		}
		if len(b.Points) > 0 {
			out.Sweeps = append(out.Sweeps, b)
		}
	}
	return out
}

// rows counts the inputs' sweep points.
func rows(in calibrate.Inputs) int {
	n := 0
	for _, s := range in.Sweeps {
		n += len(s.Points)
	}
	return n
}

// halves splits a system's inputs in two: its files alternately, or, for a
// system of one run of one collective (splitSizes), that run's sizes alternately.
func halves(sys system, in calibrate.Inputs) (a, b calibrate.Inputs) {
	if sys.splitSizes {
		for _, s := range in.Sweeps {
			sa, sb := s, s
			sa.Points, sb.Points = nil, nil
			sa.File, sb.File = s.File+" (odd sizes)", s.File+" (even sizes)"
			for i, p := range s.Points {
				if i%2 == 0 {
					sa.Points = append(sa.Points, p)
				} else {
					sb.Points = append(sb.Points, p)
				}
			}
			a.Sweeps, b.Sweeps = append(a.Sweeps, sa), append(b.Sweeps, sb)
		}
		return a, b
	}
	for i, s := range in.Sweeps {
		if i%2 == 0 {
			a.Sweeps = append(a.Sweeps, s)
		} else {
			b.Sweeps = append(b.Sweeps, s)
		}
	}
	return a, b
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

// A calibration stops with the context's error when the context is done.
func TestCalibrateContextCancelled(t *testing.T) {
	sys := systems()[0]
	spec, _, in := sys.load(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := calibrate.CalibrateContext(ctx, sys.base, spec, in); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// On OCI A100 RoCE the calibrated cluster carries what NCCL runs there: the
// 2-node all-reduces of 64 MiB and more that the measured rows show as a ring
// (the model's own cheapest is the double tree), and the model priced on the
// written cluster picks the ring at 1 GiB.
func TestMeasuredChoicesOCI(t *testing.T) {
	sys := systems()[0]
	spec, _, in := sys.load(t)
	rep, err := calibrate.Calibrate(sys.base, spec, in)
	if err != nil {
		t.Fatal(err)
	}
	covered := false
	for _, r := range rep.Choices {
		t.Logf("%s", calibrate.FormatRange(r))
		if r.Op == "allreduce" && r.Algo == "ring" && r.Covers(2, 8, 1<<30) {
			covered = true
		}
	}
	if !covered {
		t.Fatalf("no ring range covers a 1 GiB all-reduce on 2 × 8: %+v", rep.Choices)
	}
	if len(rep.Spec.Algorithms) != len(rep.Choices) {
		t.Errorf("the calibrated cluster carries %d ranges, the report %d", len(rep.Spec.Algorithms), len(rep.Choices))
	}
	// The in-sample error of the 1 GiB rows of the NCCL 2.14–2.29 files: within
	// 10 % on the calibrated cluster, where the catalog is 24–30 % fast.
	for i, m := range rep.After {
		if m.Bytes == 1<<30 && m.File != "oci-14340fb-readme.txt" {
			if e := math.Abs(m.RelErr()); e > 0.10 {
				t.Errorf("%s:%d 1 GiB: %+.1f %% on the calibrated cluster (catalog %+.1f %%)", m.File, m.Line, 100*m.RelErr(), 100*rep.Before[i].RelErr())
			}
		}
	}
}

// On the 8-node H100 IB cluster the choice the rows of one node count show from
// 1 GiB up is carried to the other: calibrated on the 8-node run alone, the
// cluster's 1–8 GiB all-reduces on 4 × 8 are the NVLS tree, and calibrated on
// the 4-node run alone, those on 8 × 8; neither touches 2 nodes, where NCCL's
// cost model prices bandwidth differently.
func TestMeasuredChoiceCarriesAcrossNodes(t *testing.T) {
	var sys system
	for _, s := range systems() {
		if s.dir == "rows/h100-ib-8n" {
			sys = s
		}
	}
	spec, _, in := sys.load(t)
	for _, c := range []struct {
		train string
		other int
	}{{"ncclt309-gjaion-8n.jsonl", 4}, {"ncclt309-gjaion-4n.jsonl", 8}} {
		var one calibrate.Inputs
		for _, s := range in.Sweeps {
			if s.File == c.train {
				one.Sweeps = append(one.Sweeps, s)
			}
		}
		if len(one.Sweeps) != 1 {
			t.Fatalf("%s: %d sweeps", c.train, len(one.Sweeps))
		}
		rep, err := calibrate.Calibrate(sys.base, spec, one)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Choices {
			t.Logf("%s: %s", c.train, calibrate.FormatRange(r))
		}
		for _, bytes := range []float64{1 << 30, 8 << 30} {
			if a := covering(rep.Spec.Algorithms, c.other, 8, bytes); a != "nvlstree" {
				t.Errorf("calibrated on %s: %s all-reduce on %d × 8 is %q, want nvlstree", c.train, calibrate.FormatBytes(bytes), c.other, a)
			}
			if a := covering(rep.Spec.Algorithms, 2, 8, bytes); a != "" {
				t.Errorf("calibrated on %s: %s all-reduce on 2 × 8 is %q, want the model's own", c.train, calibrate.FormatBytes(bytes), a)
			}
		}
	}
}

// covering is the algorithm of the first all-reduce range that covers the call,
// "" if none does.
func covering(rs []topology.AlgoRange, nodes, perNode int, bytes float64) string {
	for _, r := range rs {
		if r.Op == "allreduce" && r.Covers(nodes, perNode, bytes) {
			return r.Algo
		}
	}
	return ""
}

// On the healthy 2 × 8 InfiniBand pairs, calibrated on their whole run, no
// constant stops at a bound: the NVLS tree rows of 128 MiB and up, set by the
// in-switch reduction, move the scale-up efficiency if anything, not the NICs'
// (docs/calibrate.md, "An efficiency is fitted from the rows it sets").
func TestHealthyPairsNoBound(t *testing.T) {
	for _, sys := range systems() {
		switch sys.dir {
		case "rows/h100-ib-xe9680", "rows/h100-ib-nebius", "rows/b200-ib-lambda":
		default:
			continue
		}
		t.Run(sys.dir, func(t *testing.T) {
			spec, _, in := sys.load(t)
			rep, err := calibrate.Calibrate(sys.base, spec, in)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("fitted %+v", rep.Fitted)
			if len(rep.AtBound) > 0 {
				t.Errorf("at a bound: %v", rep.AtBound)
			}
		})
	}
}

// sysNamed returns the measured system of testdata directory dir.
func sysNamed(t *testing.T, dir string) system {
	t.Helper()
	for _, s := range systems() {
		if s.dir == dir {
			return s
		}
	}
	t.Fatalf("no system %s", dir)
	return system{}
}

// A constant is kept only if, fitted on part of the inputs, it prices the rest
// better (validate): on p6-b200's odd sizes (8, 32, 128 B) the EFA latency
// follows the 8 B row, and fitted on 8 and 128 B it does not price 32 B better,
// nor the reverse, so it is declined and the file keeps the catalog's; on all six
// sizes each alternate half does price the other better, and it is kept.
func TestValidationDeclinesWhatTheRowsDoNotShow(t *testing.T) {
	sys := sysNamed(t, "rows/p6-b200-efa")
	spec, _, in := sys.load(t)
	odd, _ := halves(sys, in)
	base := calibrate.Start(spec).NICLatencyUs
	rep, err := calibrate.Calibrate(sys.base, spec, odd)
	if err != nil {
		t.Fatal(err)
	}
	declined := false
	for _, d := range rep.Declined {
		t.Logf("declined: %s", d)
		if d.Field == "nics.latency_us" && d.Folds > 0 && d.Wanted != base {
			declined = true
		}
	}
	if !declined || rep.Fitted.NICLatencyUs != base {
		t.Errorf("odd sizes: NIC latency %.3g µs (base %.3g), declined by the held-out check: %v", rep.Fitted.NICLatencyUs, base, declined)
	}
	rep, err = calibrate.Calibrate(sys.base, spec, in)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fitted.NICLatencyUs == base {
		t.Errorf("all sizes: NIC latency left at the base's %.3g µs: %v", base, rep.Declined)
	}
}

// An efficiency the fit drives onto its physical upper bound is declined, and the
// report then names no constant at a bound: Lambda's odd sizes want a NIC
// efficiency of 0.98 (a link's line rate less its headers), which would price the
// other sizes faster than measured.
func TestUpperBoundDeclined(t *testing.T) {
	sys := sysNamed(t, "rows/b200-ib-lambda")
	spec, _, in := sys.load(t)
	odd, _ := halves(sys, in)
	rep, err := calibrate.Calibrate(sys.base, spec, odd)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range rep.Declined {
		t.Logf("declined: %s", d)
		if d.Field == "nics.efficiency" && d.Max > 0 && d.Wanted >= d.Max/1.02 {
			found = true
		}
	}
	if !found {
		t.Errorf("no NIC efficiency declined at its upper bound: fitted %+v", rep.Fitted)
	}
	if len(rep.AtBound) > 0 {
		t.Errorf("at a bound: %v", rep.AtBound)
	}
	if base := calibrate.Start(spec).NICEfficiency; rep.Fitted.NICEfficiency != base {
		t.Errorf("NIC efficiency %.3g, want the base's %.3g", rep.Fitted.NICEfficiency, base)
	}
}

// A measured range is lowered by NCCL's own table: OCI's NCCL 2.14–2.29 files
// show the ring at 1 GiB and more on 2 × 8 A100, where the table as reproduced
// picks the double tree (Simple at 512 MiB, LL128 at 256 MiB, its size correction
// for Simple 0.9 there). The LL128 tree's bandwidth is 120/128 of the
// uncorrected Simple tree's, so against the ring it does no better at 256 MiB
// than the Simple tree at 1 GiB, and the range reaches 256 MiB; it stops above
// sizes where latency is a tenth of the time or more.
func TestRangeLoweredByNCCLTable(t *testing.T) {
	sys := sysNamed(t, "a100-roce")
	spec, _, in := sys.load(t)
	var train calibrate.Inputs
	for _, s := range in.Sweeps {
		switch s.File {
		case "oci-00b698c-slurmop.txt", "oci-2d359a9-readme.txt", "oci-d091927-slurmop.txt":
			train.Sweeps = append(train.Sweeps, s)
		}
	}
	rep, err := calibrate.Calibrate(sys.base, spec, train)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Choices {
		t.Logf("%s", calibrate.FormatRange(r))
	}
	for _, c := range []struct {
		bytes float64
		want  string
	}{{1 << 30, "ring"}, {512 << 20, "ring"}, {256 << 20, "ring"}, {1 << 20, ""}} {
		if a := covering(rep.Spec.Algorithms, 2, 8, c.bytes); a != c.want {
			t.Errorf("%s all-reduce on 2 × 8: %q, want %q", calibrate.FormatBytes(c.bytes), a, c.want)
		}
	}
}

// The held-out check judges a proposal only where a part of the inputs shows it,
// and declines nothing else: calibrated on p5's two odd sizes (16 and 64 B), the
// other sizes, 32 and 128 B, go from the catalog's 17.8 % to within 7 % with
// nothing declined. With the ring's step cost at a tree hop (NCCL's tree-to-ring
// hop latency ratio) the fitted link constants do it alone (0.6 %); before, the
// odd sizes read as the NVLS tree, a range of two rows neither size alone makes,
// which the check had nothing to judge by and wrote — declined for want of a part
// that shows it, the range would have left them at 13.4 %.
func TestValidationKeepsWhatNoPartCanShow(t *testing.T) {
	sys := sysNamed(t, "rows/p5-efa")
	spec, _, in := sys.load(t)
	odd, even := halves(sys, in)
	rep, err := calibrate.Calibrate(sys.base, spec, odd)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rep.Declined {
		t.Errorf("declined: %s", d)
	}
	after, _, err := calibrate.Score(rep.Spec, even)
	if err != nil {
		t.Fatal(err)
	}
	if after > 0.07 {
		t.Errorf("even sizes: median |err| %.1f%% on the calibrated cluster, want within 7 %%", 100*after)
	}
}

// mustScore is calibrate.Score of in on spec, failing the test on an error.
func mustScore(t *testing.T, spec topology.Spec, in calibrate.Inputs) (median, mean float64) {
	t.Helper()
	median, mean, err := calibrate.Score(spec, in)
	if err != nil {
		t.Fatal(err)
	}
	return median, mean
}
