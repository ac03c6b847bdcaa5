package service

import "github.com/stepcost/stepcost/planner"

// Which calls take a slot of the gate, and which of them a large one (the daemon's
// admission control, server/admission, keeps the slots).
//
// An uncached EstimatePlan search is the one expensive thing the service does: from
// a few milliseconds to tens of seconds of every core, and up to ~130 MB of live
// heap for the largest search the limits allow. So a search takes a slot (inside the
// cache's compute: only a miss takes one), large searches (largeSearch) a large one;
// RankConfigs calls of more than RankBatchGated configs take a large slot (each
// config can cost as much as a small search), and so does a calibration, in as
// many slots as the live heap it needs weighs (calibrate.go). Nothing
// else waits: cached answers, EstimateStep, SimulateCollective, ListCatalog and
// small RankConfigs calls are answered whatever the searches are doing.

// largeSearchGPUs is the size (planner.SearchGPUs) from which a search counts as
// large: a range search up to ~720 GPUs on 8-GPU nodes, or a single job of 32 768
// GPUs, takes a few tenths of a second; a range up to 4 000 GPUs takes seconds.
const largeSearchGPUs = 32768

// largeSearch tells the searches that may run for seconds: wide ranges, huge jobs,
// and the constraints that widen the space beyond the default one.
func largeSearch(pr planner.Request) bool {
	c := pr.Constraints
	return planner.SearchGPUs(pr) > largeSearchGPUs || c.UnevenPP || c.TPAcrossNodes || c.MaxMicroBatch > 16
}

// RankBatchGated is the size above which a RankConfigs call takes a search slot. An
// uncached config costs 0.1 ms (a node) to 30 ms (65 536 GPUs, placing its groups),
// so a call of up to 16 stays under half a second, like a small search.
const RankBatchGated = 16

// gatedBatch is whether a RankConfigs call of n configs takes a search slot.
func gatedBatch(n int) bool { return n > RankBatchGated }
