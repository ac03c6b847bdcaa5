package service

import (
	"sync"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
)

// scratchGPUs is how many GPUs (planner.SearchGPUs summed over searches) the scratch
// estimator serves before it is replaced: its placements under rank maps take ~3–5 KB
// per GPU searched, so it holds at most ~30–40 MB of them.
const scratchGPUs = 8192

// scratchEstimator serves the searches whose free map moves ranks off the first
// GPUs. The estimator caches communication placements by rank map, and the planner
// makes new rank maps in every such search, which no later search reuses: in a
// cluster's shared estimator they would pile up for as long as the cluster is pooled
// (3 MB a search of 1 024 GPUs: a scheduler's admission loop would exhaust the
// memory in minutes). A fresh estimator per search would not pile up, but would
// place the groups of the first GPUs again every time (10 times slower at 1 024
// GPUs). So these searches share one estimator, replaced after scratchGPUs.
type scratchEstimator struct {
	mu     sync.Mutex
	est    *step.Estimator
	served int
	budget int // scratchGPUs; tests lower it
}

func (s *scratchEstimator) get(gpus int, fresh func() *step.Estimator) *step.Estimator {
	s.mu.Lock()
	defer s.mu.Unlock()
	budget := s.budget
	if budget == 0 {
		budget = scratchGPUs
	}
	if s.est == nil || s.served >= budget {
		s.est, s.served = fresh(), 0
	}
	s.served += gpus
	return s.est
}

// estimatorFor picks the estimator of a search: the cluster's own, unless a free map
// puts ranks elsewhere than on the first GPUs in order.
func (s *Service) estimatorFor(ce *wire.ClusterEntry, pr planner.Request) *step.Estimator {
	if firstGPUs(pr.Free, ce.Cluster.Spec.GPUsPerNode) {
		return ce.Est
	}
	return s.scratch.get(planner.SearchGPUs(pr), s.clusters.NewEstimator)
}

// firstGPUs tells a free map under which every placement takes the first GPUs in
// order (no map; or whole nodes 0, 1, …, k-1), so that the planner makes no rank map.
func firstGPUs(free planner.FreeMap, gpusPerNode int) bool {
	for node := range len(free) {
		if len(free[node]) != gpusPerNode {
			return false
		}
		for i, g := range free[node] {
			if g != i {
				return false
			}
		}
	}
	return true
}
