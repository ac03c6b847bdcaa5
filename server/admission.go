package server

import (
	"fmt"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
)

// Admission control (package admission; the policy is here).
//
// An uncached EstimatePlan search is the one expensive thing the service does: from a
// few milliseconds to tens of seconds of every core, and up to ~130 MB of live heap
// for the largest search the limits allow (see Limits). Running more searches at once
// finishes none of them sooner, each already spreading over all the cores, but
// multiplies the memory; running only one lets a single large search hold up every
// other for as long as it runs. So searches take a slot first: at most
// --max-concurrent-searches run (default 2), large ones (see largeSearch) in at most
// half of the slots, so that a flood of them never holds up a scheduler's ordinary
// searches; up to --max-queued-searches more wait in arrival order (each at most
// until its deadline), and the rest are refused at once with UNAVAILABLE.
// RankConfigs calls of more than rankBatchGated configs take a large slot: each
// config can cost as much as a small search.
//
// Nothing else waits: cached answers (the slot is taken inside the cache's compute,
// so only a miss takes one), EstimateStep, SimulateCollective, ListCatalog, small
// RankConfigs calls and health are answered whatever the searches are doing.

// defaultConcurrentSearches is two: with one, a large search holds up all the others
// (in the load test, 17 of ~1 950 ordinary searches got through in 20 s); with four
// on the manifests' 2 CPUs, small requests waited for the CPU (p99 2.8 s against
// 0.12 s with two); and each may hold ~130 MB, two of them and the 256 MiB cache
// leaving room in the manifests' 1 GiB.
const defaultConcurrentSearches = 2

// largeSearchGPUs is the size (searchGPUs) from which a search counts as large: a
// range search up to ~720 GPUs on 8-GPU nodes, or a single job of 32 768 GPUs, takes
// a few tenths of a second; a range up to 4 000 GPUs takes seconds.
const largeSearchGPUs = 32768

// largeSearch tells the searches that may run for seconds: wide ranges, huge jobs,
// and the constraints that widen the space beyond the default one.
func largeSearch(pr planner.Request) bool {
	c := pr.Constraints
	return searchGPUs(pr) > largeSearchGPUs || c.UnevenPP || c.TPAcrossNodes || c.MaxMicroBatch > 16
}

// rankBatchGated is the size above which a RankConfigs call takes a search slot. An
// uncached config costs 0.1 ms (a node) to 30 ms (65 536 GPUs, placing its groups),
// so a call of up to 16 stays under half a second, like a small search.
const rankBatchGated = 16

// gatedBatch is whether a RankConfigs call of n configs takes a search slot.
func gatedBatch(n int) bool { return n > rankBatchGated }

// searchGPUs is the number of GPUs a search places, summed over the job sizes it
// tries (the planner's gpuCounts): a fixed-size search counts its size, a range up to
// max_gpus on 8-GPU nodes 8 + 16 + … + max_gpus. The planner places every size for
// every TP degree and keeps those placements while it searches, so this sum, not the
// number of layouts, is what makes a wide range search big: about 150 bytes each
// (a range up to 4 096 GPUs ≈ 1 M ≈ 160 MB, up to 8 192 ≈ 4.2 M ≈ 0.5 GB).
func searchGPUs(pr planner.Request) int {
	if pr.GPUs > 0 {
		return pr.GPUs
	}
	g := 1
	if pr.Cluster != nil {
		g = max(1, pr.Cluster.Spec.GPUsPerNode)
	}
	sum := 0
	for n := max(1, pr.MinGPUs); n <= pr.MaxGPUs; n++ {
		if n%g == 0 || (n < g && g%n == 0) {
			sum += n
		}
	}
	return sum
}

// checkSearchSize refuses a search over --max-search-gpus before it runs.
func (s *Service) checkSearchSize(pr planner.Request) error {
	if s.limits.MaxSearchGPUs <= 0 {
		return nil
	}
	if n := searchGPUs(pr); n > s.limits.MaxSearchGPUs {
		return wire.Limit("max_gpus", fmt.Sprintf("the search would place %d GPUs summed over its job sizes, over the limit of %d (flag --max-search-gpus); narrow min_gpus/max_gpus", n, s.limits.MaxSearchGPUs))
	}
	return nil
}

// validateAdmission checks the admission flags.
func (l Limits) validateAdmission(v *invalid.Collector) {
	if l.MaxConcurrentSearches < 0 {
		v.Add("--max-concurrent-searches", "must be ≥ 0 (got %d)", l.MaxConcurrentSearches)
	}
	if l.MaxQueuedSearches < 0 {
		v.Add("--max-queued-searches", "must be ≥ 0 (got %d)", l.MaxQueuedSearches)
	}
	if l.MaxSearchGPUs < 0 {
		v.Add("--max-search-gpus", "must be ≥ 0 (got %d)", l.MaxSearchGPUs)
	}
}
