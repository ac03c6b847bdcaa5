package server

import (
	"context"
	"runtime"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The cache charges a response what it holds on the heap (measured as the heap that
// responses computed and kept take), within a margin: --cache-bytes is then a bound
// on memory, where the encoded size would undercount several times.
func TestCacheCostIsTheHeap(t *testing.T) {
	svc := NewService(DefaultLimits(), nil)
	ctx := context.Background()
	wide := plannerRequest()
	wide.Gpus, wide.MaxGpus, wide.TopK = 0, 32, 50
	coll := &pb.SimulateCollectiveRequest{Cluster: stepRequest().Cluster, Nodes: 2, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 28}
	for _, tc := range []struct {
		name string
		n    int // responses kept: enough for the small ones to stand out of the noise
		call func() (proto.Message, error)
	}{
		{"plan", 8, func() (proto.Message, error) { return svc.EstimatePlan(ctx, plannerRequest()) }},
		{"wide plan", 8, func() (proto.Message, error) { return svc.EstimatePlan(ctx, wide) }},
		{"step", 100, func() (proto.Message, error) { return svc.EstimateStep(ctx, stepRequest()) }},
		{"collective", 100, func() (proto.Message, error) { return svc.SimulateCollective(ctx, coll) }},
	} {
		name, n, call := tc.name, tc.n, tc.call
		if _, err := call(); err != nil { // warms the estimator's caches
			t.Fatal(err)
		}
		// Five rounds: what earlier tests leave behind (servers winding down, pools
		// emptied over two collections) is freed now and then during a round, which
		// reads the responses' heap low; on a loaded machine in two rounds of three.
		// Undercharging (unsafe) is judged on the median, overcharging (safe, only
		// wasteful) on the largest round.
		var keep []proto.Message
		var rounds []float64
		for range 5 {
			keep = make([]proto.Message, n)
			before := settledHeap()
			for i := range keep {
				m, err := call()
				if err != nil {
					t.Fatal(err)
				}
				keep[i] = m
			}
			rounds = append(rounds, (float64(settledHeap())-float64(before))/float64(n))
			runtime.KeepAlive(keep)
		}
		slices.Sort(rounds)
		heap, most := rounds[len(rounds)/2], rounds[len(rounds)-1]
		cost := float64(cacheCost(keep[0]) - cacheEntryOverhead)
		t.Logf("%s: encoded %d B, heap %.0f B (rounds %.0f), charged %.0f B", name, proto.Size(keep[0]), heap, rounds, cost)
		if cost < 0.8*heap || cost > 2*most { // over is safe, under is not
			t.Errorf("%s: charged %.0f B for %.0f B of heap (largest round %.0f B)", name, cost, heap, most)
		}
	}
}

// settledHeap is the live heap after two collections (the second frees what
// sync.Pools kept through the first).
func settledHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
