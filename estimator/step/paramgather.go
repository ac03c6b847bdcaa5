package step

import (
	"math"
	"sort"
)

// maxTimelineBuckets bounds the buckets paramGatherTimeline replays one by one
// (Megatron-Core's default buckets of max(40e6, 1e6 × DP) parameters give a few
// thousand at most for a trillion-parameter stage).
const maxTimelineBuckets = 1 << 16

// paramBuffer is one buffer of parameters the distributed optimizer all-gathers
// after its update (the dense one, or the experts' over their own group): its
// buckets' gather time g each, n buckets per model chunk.
type paramBuffer struct {
	g float64
	n int
}

// paramGatherTimeline is the time the first forward of a step waits for the
// parameters' all-gathers when they run bucket by bucket under it (Megatron-Core's
// overlap_param_gather, see ParamGatherOverlapped): per model chunk (v of them,
// forward fwd seconds in all for one micro-batch, the chunks run in order) each
// buffer's first bucket is issued at the start of the step; the forward pre-hook
// of the first module of a bucket waits for it and issues the chunk's next bucket
// of that buffer. A buffer's gathers run one after another on its communicator, in
// the order issued. A bucket holds an equal share of its chunk's layers, so the
// forward of the layers one bucket holds is fwd / v / n. Returns the seconds the
// compute waits and the gather seconds that ran under it.
func paramGatherTimeline(bufs []paramBuffer, v int, fwd float64) (exposed, hidden float64) {
	buckets := 0
	for _, b := range bufs {
		buckets += b.n * v
	}
	if buckets > maxTimelineBuckets {
		// Too many buckets to replay (a bucket of a few parameters): each chain
		// on its own, its first bucket waited for and each later one as far as
		// it outlasts its bucket's forward, g + (n − 1)·max(0, g − f) per chunk.
		var total float64
		for _, b := range bufs {
			f := fwd / float64(v) / float64(b.n)
			exposed += float64(v) * (b.g + float64(b.n-1)*max(0, b.g-f))
			total += b.g * float64(b.n*v)
		}
		return exposed, max(0, total-exposed)
	}
	type req struct {
		issue float64
		chunk int
		k     int
	}
	type stream struct {
		free  float64
		queue []req
		done  map[[2]int]float64
	}
	ss := make([]stream, len(bufs))
	var total float64
	for b := range bufs {
		ss[b].done = map[[2]int]float64{}
		for j := 0; j < v; j++ {
			ss[b].queue = append(ss[b].queue, req{0, j, 0})
		}
		total += bufs[b].g * float64(bufs[b].n*v)
	}
	// wait runs buffer b's stream until bucket k of chunk j is gathered.
	wait := func(b, j, k int) float64 {
		s := &ss[b]
		for {
			if t, ok := s.done[[2]int{j, k}]; ok {
				return t
			}
			r := s.queue[0]
			s.queue = s.queue[1:]
			s.free = max(s.free, r.issue) + bufs[b].g
			s.done[[2]int{r.chunk, r.k}] = s.free
		}
	}
	var c float64 // the compute's clock
	chunkFwd := fwd / float64(v)
	for j := 0; j < v; j++ {
		// The bucket boundaries of every buffer within the chunk, as fractions
		// of its layers: compute stops at each for the buckets that start there.
		var cuts []float64
		for _, bf := range bufs {
			for k := 0; k < bf.n; k++ {
				cuts = append(cuts, float64(k)/float64(bf.n))
			}
		}
		sort.Float64s(cuts)
		cuts = append(cuts, 1)
		for i := 0; i+1 < len(cuts); i++ {
			x := cuts[i]
			if cuts[i+1] == x {
				continue
			}
			for b, bf := range bufs {
				k := int(math.Floor(x*float64(bf.n) + 1e-9))
				if float64(k)/float64(bf.n) < x-1e-9 {
					continue // inside a bucket: already waited for
				}
				if t := wait(b, j, k); t > c {
					exposed += t - c
					c = t
				}
				if k+1 < bf.n {
					ss[b].queue = append(ss[b].queue, req{c, j, k + 1})
				}
			}
			c += chunkFwd * (cuts[i+1] - x)
		}
	}
	return exposed, max(0, total-exposed)
}
