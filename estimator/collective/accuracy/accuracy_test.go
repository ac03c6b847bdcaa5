package accuracy_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/collective/accuracy"
)

// The accuracy targets: median |time error| per size class, over every scored row of
// the published measurements.
func TestAccuracyTargets(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != accuracy.MeasuredRows+accuracy.AddedRows {
		t.Fatalf("embedded data has %d rows, want the %d published ones", len(rows), accuracy.MeasuredRows+accuracy.AddedRows)
	}
	res := accuracy.Evaluate(collective.NewModel(collective.Default()), accuracy.Cases(rows))
	targets := map[string]float64{"1–64 MiB": 0.15, "≥ 64 MiB": 0.08, "all sizes": 0.25}
	for _, b := range accuracy.Buckets() {
		s := accuracy.Summarise(b.Label, res, b.Keep)
		t.Logf("%-10s rows %3d  median |err| %5.1f%%  mean %5.1f%%  max %6.1f%%", s.Label, s.N, 100*s.MedianAbs, 100*s.MeanAbs, 100*s.MaxAbs)
		if s.N < 50 {
			t.Errorf("%s: only %d scored rows; the test would not mean much", s.Label, s.N)
		}
		if want, ok := targets[s.Label]; ok && !(s.MedianAbs <= want) {
			t.Errorf("%s: median |error| %.1f%% > %.0f%%", s.Label, 100*s.MedianAbs, 100*want)
		}
	}
	// Every row with a size and node count is priced, none fails.
	for _, r := range res {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Row.ID, r.Err)
		}
		if r.Spec.Name != "" && r.Err == nil && (math.IsNaN(r.Predicted.TimeUs) || r.Predicted.TimeUs <= 0) {
			t.Errorf("%s: predicted time %v", r.Row.ID, r.Predicted.TimeUs)
		}
	}
}

// The single-node bus-bandwidth plateaus of 8×A100 and 8×H100: the largest message of
// every such sweep, within 5 %.
func TestPlateaus(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	res := accuracy.Evaluate(collective.NewModel(collective.Default()), accuracy.Cases(rows))
	largest := map[string]accuracy.Result{}
	for _, r := range res {
		if r.Err != nil || r.Spec.Name == "" || r.Ranks != 8 || r.Spec.Nodes != 1 || r.Op != collective.AllReduce {
			continue
		}
		if r.Spec.GPU.Name != "A100-80GB" && r.Spec.GPU.Name != "A100-40GB" && r.Spec.GPU.Name != "H100-SXM" {
			continue
		}
		if cur, ok := largest[r.Row.SourceID]; !ok || r.Bytes > cur.Bytes {
			largest[r.Row.SourceID] = r
		}
	}
	if len(largest) < 4 {
		t.Fatalf("found %d 8-GPU A100/H100 sweeps, want at least 4", len(largest))
	}
	for src, r := range largest {
		if r.Bytes < 1<<30 {
			continue // not a plateau
		}
		measured := r.Bytes / r.MeasuredUs / 1e3 * collective.AllReduce.BusFactor(8)
		rel := r.Predicted.BusBWGBps/measured - 1
		t.Logf("%-40s %s %6.0f MiB: busbw measured %.1f, predicted %.1f GB/s (%+.1f%%)", src, r.Spec.GPU.Name, r.Bytes/(1<<20), measured, r.Predicted.BusBWGBps, 100*rel)
		if math.Abs(rel) > 0.05 {
			t.Errorf("%s: plateau busbw off by %+.1f%%", src, 100*rel)
		}
	}
}

// NCCL picks NVLS for all-reduce on 8×H100 from about 2 MiB, ring/LL below (the
// TUNING log in the data shows the switch between 1 and 2 MiB on 8×H200). The model
// switches at 2–4 MiB; between 8 and 32 MiB ring/LL128 and NVLS are within a few
// percent of each other and either may win, from 32 MiB on NVLS must; at every size
// from 2 MiB NVLS must beat ring/simple, and below 2 MiB it must not be chosen.
func TestNVLSSwitchPoint(t *testing.T) {
	cl, err := catalog.Cluster("dgx-h100", 1)
	if err != nil {
		t.Fatal(err)
	}
	group, _, err := collective.NodeGroups(cl, 1, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := collective.Place(cl, group, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := collective.NewModel(collective.Default())
	first := 0.0
	for size := float64(8); size <= 16<<30; size *= 2 {
		e, err := m.Estimate(p, collective.AllReduce, size, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		nv, _ := m.Estimate(p, collective.AllReduce, size, collective.Options{Algo: collective.NVLS})
		simple, _ := m.Estimate(p, collective.AllReduce, size, collective.Options{Algo: collective.Ring, ForceProtocol: true, Protocol: collective.Simple})
		if e.Algo == collective.NVLS && first == 0 {
			first = size
		}
		switch {
		case size < 2<<20 && e.Algo == collective.NVLS:
			t.Errorf("%.0f B: NVLS chosen below 2 MiB", size)
		case size >= 32<<20 && e.Algo != collective.NVLS:
			t.Errorf("%.0f B: %s/%s chosen (%.1f µs), NVLS %.1f µs", size, e.Algo, e.Protocol, e.TimeUs, nv.TimeUs)
		case size >= 2<<20 && nv.TimeUs >= simple.TimeUs:
			t.Errorf("%.0f B: NVLS %.1f µs not faster than ring/simple %.1f µs", size, nv.TimeUs, simple.TimeUs)
		}
	}
	if first < 2<<20 || first > 4<<20 {
		t.Errorf("NVLS first chosen at %.0f B, want 2–4 MiB", first)
	}
}
