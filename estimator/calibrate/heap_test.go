//go:build !race

package calibrate

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
)

// TestPlacementHeap measures, on every catalog system, what placing one sweep
// and estimating every size from 8 B to 8 GiB (×4) by NCCL's choice and by each
// algorithm holds: the most live heap while it runs (sampled each millisecond,
// the collector run at 5 % growth so that the live heap it marks follows the
// working set) and what the placement keeps afterwards with its estimates
// (after two collections). The working set is what placeWork charges a
// placement against a calibration's budget, what it keeps what the placer's
// cache charges (retained, estimateRetained): neither may be under what is
// measured, nor so far over it that admission refuses what would fit. 512 nodes
// by default (seconds for all systems; STEPCOST_PLACE_NODES sets another
// count: the figures per GPU are the same from 16 to 131 072 GPUs).
// Not under the race detector, whose sync.Pool drops what is put back.
func TestPlacementHeap(t *testing.T) {
	nodes := 512
	if v := os.Getenv("STEPCOST_PLACE_NODES"); v != "" {
		var err error
		if nodes, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	for _, spec := range catalog.Systems() {
		gpus := nodes * spec.GPUsPerNode
		var works, kepts []int64
		var ests int
		for range 3 {
			work, kept, n := placementHeap(t, spec, nodes)
			works, kepts, ests = append(works, work), append(kepts, kept), n
		}
		slices.Sort(works)
		slices.Sort(kepts)
		work, kept := works[1], kepts[1]
		chargedWork := placeWork(spec, nodes)
		chargedKept := retained(spec, nodes) + int64(ests)*estimateRetained
		t.Logf("%-18s %5d GPUs: working set %6d KiB (%5.0f B/GPU; runs %v KiB), charged %6d KiB; kept %4d KiB with %d estimates, charged %4d KiB",
			spec.Name, gpus, work>>10, float64(work)/float64(gpus), kib(works), chargedWork>>10, kept>>10, ests, chargedKept>>10)
		if work > chargedWork || 4*work < chargedWork {
			t.Errorf("%s: a placement of %d GPUs works in %d KiB, charged %d KiB", spec.Name, gpus, work>>10, chargedWork>>10)
		}
		if kept > chargedKept {
			t.Errorf("%s: a placement of %d GPUs keeps %d KiB, charged %d KiB", spec.Name, gpus, kept>>10, chargedKept>>10)
		}
	}
}

func kib(bs []int64) []int64 {
	out := make([]int64, len(bs))
	for i, b := range bs {
		out[i] = b >> 10
	}
	return out
}

// placementHeap places a sweep of nodes on spec and estimates its sizes: the
// most live heap while it runs, what is kept after and the estimates made.
func placementHeap(t *testing.T, spec topology.Spec, nodes int) (work, kept int64, estimates int) {
	t.Helper()
	s := Sweep{File: "probe", Op: collective.AllReduce, Nodes: nodes, GPUsPerNode: spec.GPUsPerNode, Ranks: nodes * spec.GPUsPerNode}
	before := settledHeap()
	var peak atomic.Uint64
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				if l := liveHeap(); l > peak.Load() {
					peak.Store(l)
				}
			}
		}
	}()
	sp := Apply(spec, Start(spec))
	sp.Nodes = nodes
	pl, err := place(spec, sp, s)
	if err != nil {
		close(done)
		t.Fatalf("%s: %v", spec.Name, err)
	}
	e := &placement{pl: pl, est: map[estKey]estimate{}, pc: &placer{}}
	m := collective.NewModel(collective.Default())
	for b := 8.0; b <= 8<<30; b *= 4 {
		_, _ = e.estimate(m, s.Op, b, collective.Options{})
		for _, a := range collective.Algorithms() {
			_, _ = e.estimate(m, s.Op, b, collective.Options{Algo: a})
		}
	}
	close(done)
	<-sampled
	after := settledHeap()
	runtime.KeepAlive(e)
	return int64(peak.Load()) - int64(before), int64(after) - int64(before), len(e.est)
}

// The placer's cache starts over when what its placements keep passes its
// bound in bytes: placements of thousands of nodes, each a cluster of their
// own, are not kept by the hundred (before, it kept up to 32 768 placements
// whatever their size).
func TestPlacementCacheBoundedByBytes(t *testing.T) {
	spec, err := catalog.System("hgx-b200")
	if err != nil {
		t.Fatal(err)
	}
	pc := newPlacer(spec)
	pc.limit = 4 * retained(spec, 1024)
	k := Start(spec)
	most := 0
	for i := range 12 {
		s := Sweep{File: fmt.Sprintf("n%d", i), Op: collective.AllReduce, Nodes: 1024 + i, GPUsPerNode: 8, Ranks: 8 * (1024 + i)}
		e, err := placeSweep(pc, pc.clusterKey(spec, k), spec, k, s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.estimate(collective.NewModel(collective.Default()), s.Op, 1<<30, collective.Options{}); err != nil {
			t.Fatal(err)
		}
		if h := pc.held.Load(); h > pc.limit {
			t.Errorf("after %d placements the cache holds %d B, over its %d B", i+1, h, pc.limit)
		}
		most = max(most, len(pc.m))
	}
	if most > 4 {
		t.Errorf("the cache kept %d placements of about 1 024 nodes, its bound %d B holding 4", most, pc.limit)
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

// liveHeap is the heap marked live by the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
