package collective

import (
	"fmt"
	"slices"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

// measuredChoice is the algorithm the cluster file says the cluster's NCCL runs
// for op at this size on a group of this shape (topology.AlgoRange, written by a
// calibration from measured runs), when it names one this placement can run.
// Estimate's automatic choice honours it before its own cheapest: NCCL's tuner
// and the model disagree over whole size ranges on some clusters (2-node A100
// RoCE all-reduces ≥ 64 MiB that NCCL 2.14–2.29 runs as a ring where the model's
// cheapest is the double tree), and a calibrated cluster should price what its
// NCCL actually runs.
func (m *Model) measuredChoice(p *Placement, op Op, bytes float64) (Algorithm, bool) {
	for _, r := range p.Cluster.Spec.Algorithms {
		if !r.Covers(p.Domains, p.PerDomain, bytes) {
			continue
		}
		if o, err := ParseOp(r.Op); err != nil || o != op {
			continue
		}
		a, err := ParseAlgorithm(r.Algo)
		if err != nil || a == Auto || m.why(p, op, a) != "" {
			return Auto, false // the file's choice cannot run here: the model's own
		}
		return a, true
	}
	return Auto, false
}

// RunsOp says whether algorithm a carries out op on some group (the cluster-file
// reader checks a measured range's names with it).
func RunsOp(a Algorithm, op Op) bool {
	switch {
	case a == NVLSTree:
		return op == AllReduce // priced in closed form only, no schedule in algoOps
	case a == Auto || a >= numAlgos:
		return false
	}
	return slices.Contains(algoOps[a], op)
}

// CheckRanges checks the names of measured algorithm ranges (their numbers are
// checked by topology.Spec.Validate): a collective the model prices and an
// algorithm that runs it, each error naming algorithms[i].op or .algo.
func CheckRanges(rs []topology.AlgoRange) error {
	c := invalid.Collector{}
	for i, r := range rs {
		op, err := ParseOp(r.Op)
		if err != nil {
			c.Add(fmt.Sprintf("algorithms[%d].op", i), "%v", err)
			continue
		}
		a, err := ParseAlgorithm(r.Algo)
		switch {
		case err != nil:
			c.Add(fmt.Sprintf("algorithms[%d].algo", i), "%v", err)
		case a == Auto:
			c.Add(fmt.Sprintf("algorithms[%d].algo", i), "must name an algorithm, not auto")
		case !RunsOp(a, op):
			c.Add(fmt.Sprintf("algorithms[%d].algo", i), "%s cannot run %s", a, op)
		}
	}
	return c.Err()
}
