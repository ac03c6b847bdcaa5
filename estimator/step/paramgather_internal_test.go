package step

import (
	"math"
	"testing"
)

// The overlapped parameter all-gather's timeline, worked by hand: the first
// bucket's gather is waited for, each later one is issued by the pre-hook of the
// bucket before it and runs under that bucket's forward.
func TestOverlappedParamGatherTimeline(t *testing.T) {
	for _, c := range []struct {
		name            string
		bufs            []paramBuffer
		v               int
		fwd             float64
		exposed, hidden float64
	}{
		// 4 buckets of 1 s under 2 s of forward each: only the first waits.
		{"gathers shorter than the forward", []paramBuffer{{1, 4}}, 1, 8, 1, 3},
		// 3 s gathers, 2 s of forward per bucket: the first, then 1 s per later
		// bucket (g + (n−1)(g − f) = 3 + 3).
		{"gathers longer than the forward", []paramBuffer{{3, 4}}, 1, 8, 6, 6},
		// Two chunks: both first buckets start at once; chunk 0's second (issued
		// at 1 s, after chunk 1's first on the same communicator) is done at 3 s
		// when chunk 0 reaches it; chunk 1's second, issued at 5 s, is done at 6 s,
		// under its first bucket's 2 s of forward.
		{"two model chunks", []paramBuffer{{1, 2}}, 2, 8, 1, 3},
		// Dense and expert buffers gather on their own communicators at once:
		// the first layers wait for the longer (3 s), the dense second bucket is
		// done long before the forward reaches it.
		{"dense and expert buffers", []paramBuffer{{1, 2}, {3, 1}}, 1, 4, 3, 2},
	} {
		e, h := paramGatherTimeline(c.bufs, c.v, c.fwd)
		if math.Abs(e-c.exposed) > 1e-12 || math.Abs(h-c.hidden) > 1e-12 {
			t.Errorf("%s: exposed %.3f s, hidden %.3f s; want %.3f and %.3f", c.name, e, h, c.exposed, c.hidden)
		}
	}
}

// Past maxTimelineBuckets the chains are priced in closed form, which for one
// buffer and one chunk is the replayed timeline's.
func TestParamGatherTimelineClosedForm(t *testing.T) {
	n := maxTimelineBuckets + 1
	fwd := 2 * float64(n)
	for _, g := range []float64{1, 3} {
		e, _ := paramGatherTimeline([]paramBuffer{{g, n}}, 1, fwd)
		want := g + float64(n-1)*math.Max(0, g-2)
		if math.Abs(e-want) > 1e-9*want {
			t.Errorf("%d buckets of %.0f s: exposed %.1f s, want %.1f", n, g, e, want)
		}
	}
}
