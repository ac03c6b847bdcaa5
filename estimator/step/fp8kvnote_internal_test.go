package step

import (
	"strings"
	"testing"
)

// The assumptions an estimate states are cached by what they read: the key and
// value projections' precision (Training.FP8KVIn16Bits) is one of those, so one
// estimator asked the same layout without and then with the field states each
// answer's own precision, whichever it was asked first.
func TestAssumptionsFollowFP8KVIn16Bits(t *testing.T) {
	e := New()
	req := scoutRequest(t, "torchtitan-2025-11", 1)
	req.Training.Precision, req.Training.FP8Recipe = FP8, FP8MXFP8
	says := func(kv bool) bool {
		r := req
		r.Training.FP8KVIn16Bits = kv
		res, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(strings.Join(res.Assumptions, "\n"), "key and value projections")
	}
	if says(false) {
		t.Error("without the field the assumptions say the key and value projections run in 16 bits")
	}
	if !says(true) {
		t.Error("with the field, asked after the same request without it, the assumptions do not say the key and value projections run in 16 bits")
	}
	if says(false) {
		t.Error("without the field, asked after the same request with it, the assumptions say the key and value projections run in 16 bits")
	}
}
