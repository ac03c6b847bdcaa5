package server

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"

	"github.com/stepcost/stepcost/estimator/invalid"
)

// The daemon's memory budget is what it may hold live: the cache (--cache-bytes,
// charged by what its answers hold on the heap), the searches running at once
// (up to searchHeap each, TestMaximalSearchMemory; a calibration takes as many
// slots of searchHeap as the heap it needs weighs and runs within them,
// admission.AcquireHeap and calibrate.Heap) and a baseline. Go's collector
// lets the heap grow to twice what was live at the last collection before it
// collects again (GOGC=100), and keeps what it freed for a while before giving it
// back; so after a flood that filled the cache the resident set stayed near twice
// the live heap until the runtime's periodic collection — 1 124 MiB for 508 MiB
// live, two minutes after (TestFloodMemory) — and peaked at 1 143 MiB. A soft memory limit at the budget
// (runtime/debug.SetMemoryLimit) makes the collector run sooner as the heap nears
// it and the scavenger give freed memory back to stay under it.
const (
	// searchHeap is the most live heap one search takes under the default limits
	// (TestMaximalSearchMemory: 131 MiB for the widest range).
	searchHeap = 130 << 20
	// baselineHeap is the daemon's live heap at start: the runtime, the servers,
	// the catalog, the warm-up's placements and the cache's admission counters
	// (23–29 MiB, TestFloodMemory).
	baselineHeap = 24 << 20
)

// memoryBudget is the soft memory limit a configuration gets unless
// --memory-limit sets one: the cache, the searches at once and the baseline
// (540 MiB under the defaults); 0 (none) when searches are not bounded.
func memoryBudget(cfg Config) int64 {
	if cfg.Limits.MaxConcurrentSearches == 0 {
		return 0
	}
	return cfg.CacheMaxBytes + int64(cfg.Limits.MaxConcurrentSearches)*searchHeap + baselineHeap
}

func validateMemoryLimit(v *invalid.Collector, limit int64) {
	if limit < -1 {
		v.Add("--memory-limit", "must be -1 (none), 0 (the memory budget) or a number of bytes (got %d)", limit)
	} else if limit > 0 && limit < 64<<20 {
		v.Add("--memory-limit", "must be at least 64 MiB, or the collector runs without end (got %d)", limit)
	}
}

// applyMemoryLimit sets the runtime's soft memory limit for the daemon: the lower
// of --memory-limit (or the budget) and GOMEMLIMIT, which a container sets under
// its hard limit. It returns a function that restores the limit before.
func applyMemoryLimit(cfg Config, log *slog.Logger) (restore func()) {
	before := debug.SetMemoryLimit(-1)
	limit := cfg.MemoryLimit
	if limit == 0 {
		limit = memoryBudget(cfg)
	}
	if limit <= 0 {
		limit = math.MaxInt64
	}
	limit = min(limit, before) // GOMEMLIMIT, when set, and lower
	debug.SetMemoryLimit(limit)
	if limit != math.MaxInt64 {
		log.Info("memory limit", "MiB", limit>>20, "GOMEMLIMIT", os.Getenv("GOMEMLIMIT"))
	}
	return func() { debug.SetMemoryLimit(before) }
}
