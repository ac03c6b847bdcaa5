package calibrate

import (
	"context"
	"fmt"

	"golang.org/x/sync/semaphore"

	"github.com/stepcost/stepcost/estimator/topology"
)

// What a calibration holds on the heap, estimated from its inputs before it runs
// (Heap) and kept within a budget while it runs (CalibrateWithin).
//
// Placing a sweep and making the first estimates on the placement computes the
// contention of every flow of its channels over the cluster's links
// (collective's coefficients: treePipes, peekStage, treeLevels and windows
// allocate nearly all of it), a working set that grows with the GPUs of the
// sweep's nodes and is garbage once the coefficients are made; what the
// placement keeps is small (placeRetainedPerGPU). Measured by TestPlacementHeap
// (the live heap sampled each millisecond with the collector run at 5 % growth,
// while one sweep is placed and every size from 8 B to 8 GiB estimated by
// NCCL's choice and by each algorithm), per GPU of the sweep's nodes: on 1 024
// nodes 1 269–1 434 B on the 18 catalog systems of one-node NVSwitch domains,
// 2 699–2 735 B on the two of AMD's xGMI mesh, 12 655–13 009 B on the two of
// 18-node NVLink domains (GB200 and GB300 NVL72); on 256 nodes, where a sample
// misses more, 757–1 901 B, 2 671–3 178 B and 11 822–14 639 B over three runs;
// on hgx-b200 1 230–1 375 B from 16 to 131 072 GPUs (171 MiB for 16 384 nodes).
// The constants are the largest of each class rounded up. The fixed part
// bounds what a calibration of small placements holds within the least heap
// (calibrationFixedHeap + minPlacementCache, 24 MiB): the five OCI A100 sweeps
// peaked at +4 MiB of live heap, 16 copies of OCI's full sweep at +8 MiB
// (+17 and +27 MiB within 130 MiB, whose cache is larger).
const (
	placeWorkPerGPUSwitch = 2 << 10   // one-node NVSwitch domains
	placeWorkPerGPUMesh   = 3584      // xGMI / full-mesh nodes
	placeWorkPerGPUDomain = 16 << 10  // scale-up domains of several nodes
	calibrationFixedHeap  = 16 << 20  // the rows, the fits' prices and their bookkeeping
	minPlacementCache     = 8 << 20   // the least the placer caches
	maxPlacementCache     = 128 << 20 // the most, however large the budget
)

// What a cached placement holds once its coefficients are made, charged to the
// placer's cache (placer.charge): the built cluster, the ranks and the
// coefficients, and each estimate kept on it. Measured by TestPlacementHeap
// (after two collections, the placement and its estimates kept alive): 3–19 KiB
// for a placement of two nodes, 12–13 B per GPU from 1 024 nodes on, about 90 B
// per estimate kept (11–12 KiB for 135 estimates).
const (
	placeRetainedBase   = 24 << 10
	placeRetainedPerGPU = 16
	estimateRetained    = 128
)

// DefaultHeap is the budget of a calibration run without one
// (CalibrateContext): one search slot of the daemon (server/memory.go
// searchHeap, 130 MiB), or what the inputs need if more.
const DefaultHeap = 130 << 20

// placeWork is the working set of placing a sweep of nodes×(spec's GPUs per
// node) and making its first estimates (the measured constants above).
func placeWork(spec topology.Spec, nodes int) int64 {
	per := int64(placeWorkPerGPUSwitch)
	switch {
	case spec.Intra.DomainNodes > 1:
		per = placeWorkPerGPUDomain
	case spec.Intra.Kind == topology.Mesh:
		per = placeWorkPerGPUMesh
	}
	return per * int64(nodes) * int64(max(spec.GPUsPerNode, 1))
}

// HeapNeed is the least live heap a calibration needs: its fixed part, the
// working set of its largest placement and the least placement cache.
type HeapNeed struct {
	Bytes int64
	// Largest is the sweep whose placement needs the most (its File, Nodes and
	// GPUsPerNode), Work that working set; Largest.File is empty when the inputs
	// have no sweep.
	Largest Sweep
	Work    int64
}

func (h HeapNeed) String() string {
	if h.Largest.File == "" {
		return fmt.Sprintf("%d MiB", mib(h.Bytes))
	}
	return fmt.Sprintf("%d MiB: placing %s's %d node(s) of the cluster takes %d MiB while their contention is computed",
		mib(h.Bytes), h.Largest.File, h.Largest.Nodes, mib(h.Work))
}

func mib(b int64) int64 { return (b + 1<<20 - 1) >> 20 }

// Heap estimates the least live heap a calibration of in on spec needs.
func Heap(spec topology.Spec, in Inputs) HeapNeed {
	var h HeapNeed
	for _, s := range in.Sweeps {
		if w := placeWork(spec, s.Nodes); w > h.Work {
			h.Largest, h.Work = s, w
		}
	}
	h.Bytes = calibrationFixedHeap + h.Work + minPlacementCache
	return h
}

// budget splits a calibration's heap budget (at least need.Bytes) past its
// fixed part: the cache of the placements made (cache), half of it within
// [minPlacementCache, maxPlacementCache] and leaving room for the largest
// placement's working set, and the placements being built and estimated at
// once (work, the rest: at least that working set).
func budget(heap int64, need HeapNeed) (work, cache int64) {
	rest := max(heap, need.Bytes) - calibrationFixedHeap
	cache = min(max(rest/2, minPlacementCache), maxPlacementCache, rest-need.Work)
	return rest - cache, cache
}

// CalibrateWithin is CalibrateContext within a heap budget of heap bytes (raised
// to Heap's need; 0: DefaultHeap): the placements built and estimated at once
// weigh their working sets (placeWork) against part of it, waiting for one
// another beyond it, and the placer's cache keeps what it made within the rest
// (placer.limit). Only the order in which the parallel fits run changes, not a
// price (TestCalibrationUnchanged).
func CalibrateWithin(ctx context.Context, base string, spec topology.Spec, in Inputs, heap int64) (*Report, error) {
	if heap <= 0 {
		heap = DefaultHeap
	}
	return calibrate(ctx, base, spec, in, max(heap, Heap(spec, in).Bytes))
}

// workLimit bounds what the placements being built and estimated at once hold.
type workLimit struct {
	sem  *semaphore.Weighted
	size int64
}

// hold takes w bytes of working set (at most the whole limit) from the
// placer's budget, waiting until its context is done; the returned function
// gives them back.
func (pc *placer) hold(w int64) (func(), error) {
	if pc.work.sem == nil {
		return func() {}, pc.err()
	}
	w = min(w, pc.work.size)
	ctx := pc.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if err := pc.work.sem.Acquire(ctx, w); err != nil {
		return nil, err
	}
	return func() { pc.work.sem.Release(w) }, nil
}
