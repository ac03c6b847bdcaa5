package topology

import (
	"fmt"
	"math"

	"github.com/stepcost/stepcost/estimator/invalid"
)

// AlgoRange says which algorithm the cluster's NCCL is measured to run for one
// collective in a range of message sizes, on groups of a given shape. NCCL picks
// its algorithm from its own cost model (tuning.cc), which the collective model
// reproduces only approximately: on some clusters and NCCL versions the two
// disagree over whole size ranges (a 2-node A100 RoCE all-reduce of 64 MiB and
// more that NCCL 2.14–2.29 runs as a ring, where the model's cheapest is the
// double tree). A calibrated cluster file carries what the measurements show, and
// the collective model's automatic choice honours it (collective.Model.Estimate).
//
// The names are the collective model's (op: allreduce, allgather, …; algo: ring,
// dbtree, nvls, nvlstree, pat, …); the cluster-file reader checks them.
type AlgoRange struct {
	Op string `json:"op"`
	// Nodes is the number of nodes (scale-up domains) the group spans, and
	// GPUsPerNode its ranks in each; 0 matches any.
	Nodes       int `json:"nodes,omitempty"`
	GPUsPerNode int `json:"gpus_per_node,omitempty"`
	// MinNodes and MaxNodes (both inclusive; MaxNodes 0 is no upper bound) give
	// a range of node counts instead of one (Nodes must then be 0): NCCL's cost
	// model prices every algorithm's bandwidth alike on any number of nodes
	// above two (tuning.cc: bwIntra for nNodes <= 2, bwInter beyond, the NVLS
	// tree's bwInter halved beyond two), so where the size-dependent parts of
	// its comparison no longer matter the choice it makes on 8 nodes it makes
	// on 3 or 64 as well.
	MinNodes int `json:"min_nodes,omitempty"`
	MaxNodes int `json:"max_nodes,omitempty"`
	// MinBytes (inclusive) and MaxBytes (exclusive) bound the message size in
	// nccl-tests' convention; MaxBytes 0 is no upper bound.
	MinBytes float64 `json:"min_bytes,omitempty"`
	MaxBytes float64 `json:"max_bytes,omitempty"`
	Algo     string  `json:"algo"`
}

// Covers says whether the range applies to a message of bytes on a group
// spanning nodes nodes with perNode ranks on each.
func (r AlgoRange) Covers(nodes, perNode int, bytes float64) bool {
	return (r.Nodes == 0 || r.Nodes == nodes) && nodes >= r.MinNodes && (r.MaxNodes == 0 || nodes <= r.MaxNodes) &&
		(r.GPUsPerNode == 0 || r.GPUsPerNode == perNode) &&
		bytes >= r.MinBytes && (r.MaxBytes == 0 || bytes < r.MaxBytes)
}

// maxAlgoRanges bounds the list: a calibration writes a handful per collective.
const maxAlgoRanges = 256

// maxRangeBytes is the largest size bound, 2^50 B (the collective model's own
// limit on a message).
const maxRangeBytes = 1 << 50

// validateAlgorithms checks the numeric fields of the ranges; the names are
// checked by the reader, which knows the collective model's.
func validateAlgorithms(c *invalid.Collector, s Spec) {
	if len(s.Algorithms) > maxAlgoRanges {
		c.Add("algorithms", "at most %d ranges (got %d)", maxAlgoRanges, len(s.Algorithms))
		return
	}
	for i, r := range s.Algorithms {
		f := func(name string) string { return fmt.Sprintf("algorithms[%d].%s", i, name) }
		if r.Op == "" {
			c.Add(f("op"), "must name a collective")
		}
		if r.Algo == "" {
			c.Add(f("algo"), "must name an algorithm")
		}
		if r.Nodes < 0 || r.Nodes > MaxNodes {
			c.Add(f("nodes"), "must be between 0 (any) and %d (got %d)", MaxNodes, r.Nodes)
		}
		if r.MinNodes < 0 || r.MinNodes > MaxNodes {
			c.Add(f("min_nodes"), "must be between 0 (no lower bound) and %d (got %d)", MaxNodes, r.MinNodes)
		} else if r.MaxNodes != 0 && (r.MaxNodes < max(1, r.MinNodes) || r.MaxNodes > MaxNodes) {
			c.Add(f("max_nodes"), "must be 0 (no upper bound) or between min_nodes (%d) and %d (got %d)", r.MinNodes, MaxNodes, r.MaxNodes)
		}
		if r.Nodes != 0 && (r.MinNodes != 0 || r.MaxNodes != 0) {
			c.Add(f("nodes"), "names one node count; min_nodes and max_nodes a range: give one or the other (got nodes %d, min_nodes %d, max_nodes %d)", r.Nodes, r.MinNodes, r.MaxNodes)
		}
		if r.GPUsPerNode < 0 || r.GPUsPerNode > s.GPUsPerNode*max(1, s.Intra.DomainNodes) {
			c.Add(f("gpus_per_node"), "must be between 0 (any) and the GPUs of a node or NVLink domain (got %d)", r.GPUsPerNode)
		}
		if !(r.MinBytes >= 0) || r.MinBytes > maxRangeBytes {
			c.Add(f("min_bytes"), "must be between 0 and 2^50 (got %v)", r.MinBytes)
		}
		if r.MaxBytes != 0 && (!(r.MaxBytes > r.MinBytes) || r.MaxBytes > maxRangeBytes || math.IsInf(r.MaxBytes, 0)) {
			c.Add(f("max_bytes"), "must be 0 (no upper bound) or above min_bytes and at most 2^50 (got %v)", r.MaxBytes)
		}
	}
}
