package step

import "testing"

// BenchmarkPipelineTablesCold bounds-compiles, with a fresh estimator, the
// zero-bubble schedules a cold GPT-3 175B search on 1024 H100 compiles (schedule,
// depth, chunks and simulated micro-batch counts; the few it compiles only to
// price a plan are too large a table to bound with and are refused here).
func BenchmarkPipelineTablesCold(b *testing.B) {
	tables := []struct {
		s    Schedule
		p, v int
		ms   []int
	}{
		{DualPipe, 2, 1, []int{4, 6}},
		{DualPipe, 4, 1, []int{8}},
		{DualPipe, 8, 1, []int{16}},
		{DualPipe, 16, 1, []int{32}},
		{DualPipe, 32, 1, []int{64}},
		{ZeroBubble, 2, 1, []int{1, 2, 3, 4}},
		{ZeroBubble, 4, 1, []int{1, 2, 3, 4, 6, 8}},
		{ZeroBubble, 8, 1, []int{1, 2, 3, 4, 6, 8, 12, 16}},
		{ZeroBubble, 16, 1, []int{2, 3, 4, 6, 8, 12, 16, 24, 32}},
		{ZeroBubble, 32, 1, []int{3, 4, 6, 8, 12, 16, 24, 32, 48, 64}},
		{ZeroBubble, 64, 1, []int{6, 8, 12, 16, 24}},
		{ZeroBubbleV, 2, 2, []int{1, 2, 3, 4}},
		{ZeroBubbleV, 4, 2, []int{1, 2, 3, 4, 6, 8}},
		{ZeroBubbleV, 8, 2, []int{1, 2, 3, 4, 6, 8, 12, 16}},
		{ZeroBubbleV, 16, 2, []int{2, 3, 4, 6, 8, 12, 16, 24, 32}},
	}
	b.ReportAllocs()
	for b.Loop() {
		e := New()
		for _, t := range tables {
			for _, m := range t.ms {
				_, _ = e.PipelineTable(t.s, t.p, t.v, m)
			}
		}
	}
}
