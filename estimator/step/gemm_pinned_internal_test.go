package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/hardware"
)

// measuredEfficiency is the efficiency e at which gemmTime prices the GEMMs with
// no mean log error, Σ log(priced(e) / measured) = 0, found by bisection: a higher e
// never prices a GEMM slower, so the sum falls as e rises.
func measuredEfficiency(t *testing.T, rows []measuredGEMM, set func(k *Constants, e float64)) float64 {
	t.Helper()
	meanLog := func(e float64) float64 {
		k := DefaultConstants()
		set(&k, e)
		var sum float64
		for _, g := range rows {
			sum += math.Log1p(gemmPricedError(t, &k, g))
		}
		return sum / float64(len(rows))
	}
	lo, hi := 0.05, 1.5
	if !(meanLog(lo) > 0 && meanLog(hi) < 0) {
		t.Fatalf("no efficiency in [%g, %g] prices the %d GEMMs without bias", lo, hi, len(rows))
	}
	for hi-lo > 1e-6 {
		if mid := (lo + hi) / 2; meanLog(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// sm100Shapes returns the GEMMs of XLA's sm_100 table in dtype whose M, N and K are
// all at least minDim.
func sm100Shapes(t *testing.T, dtype string, minDim float64) []measuredGEMM {
	t.Helper()
	var out []measuredGEMM
	for _, g := range loadMeasuredGEMMs(t) {
		if g.Source == "xla-sm100" && g.DType == dtype && g.M >= minDim && g.N >= minDim && g.K >= minDim {
			out = append(out, g)
		}
	}
	return out
}

// Blackwell's fp8 GEMM efficiency is the one XLA's cuBLASLt table of sm_100 e4m3
// GEMMs gives through the model's own GEMM timing over the training rows' regime
// (M, N, K ≥ 2 048), to the two decimals it is kept to: a change to gemmTime or to
// the measurements that moves it fails here.
func TestBlackwellFP8GEMMEfficiencyFromMeasuredShapes(t *testing.T) {
	rows := sm100Shapes(t, "fp8", 2048)
	if len(rows) != 8 {
		t.Fatalf("%d sm_100 fp8 GEMMs with M, N, K ≥ 2048, want XLA's 8", len(rows))
	}
	e := measuredEfficiency(t, rows, func(k *Constants, e float64) { k.FP8GEMMEfficiency[hardware.Blackwell] = e })
	t.Logf("sm_100 fp8, %d GEMMs: %.4f of the fp8 peak", len(rows), e)
	if math.Abs(e-blackwellFP8GEMMEfficiency) > 0.005 {
		t.Errorf("measured GEMMs give %.4f, blackwellFP8GEMMEfficiency is %v", e, blackwellFP8GEMMEfficiency)
	}
	if k := DefaultConstants(); k.FP8GEMMEfficiency[hardware.Blackwell] != blackwellFP8GEMMEfficiency {
		t.Errorf("DefaultConstants' Blackwell fp8 efficiency %v, want blackwellFP8GEMMEfficiency %v",
			k.FP8GEMMEfficiency[hardware.Blackwell], blackwellFP8GEMMEfficiency)
	}
}
