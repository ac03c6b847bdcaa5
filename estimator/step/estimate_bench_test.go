package step_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// BenchmarkEstimate times one full step estimate of gpt3-175b on 1024 H100 with a 3D
// layout (TP 8 × PP 8 × DP 16, interleaved, SP, ZeRO-1), the estimator's placement
// cache warm — the steady state of a planner evaluating layouts on one cluster.
func BenchmarkEstimate(b *testing.B) {
	e := step.New()
	req := gpt3Request(b)
	if _, err := e.Estimate(req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var sink float64
	for b.Loop() {
		res, err := e.Estimate(req)
		if err != nil {
			b.Fatal(err)
		}
		sink += res.StepTime
	}
	if !(sink > 0) {
		b.Fatal("no time")
	}
}
