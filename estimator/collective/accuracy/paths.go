package accuracy

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/stepcost/stepcost/estimator/topology"
)

// Residuals by path: the rows of a size class grouped by the fabric their group
// crosses, the operation, and the algorithm and protocol the model priced them
// with. A group whose rows share one sign of error at one size range across
// several sources is a candidate for missing physics; a group whose sources
// disagree in sign is not (docs/calibration.md, "Residuals by fabric, operation
// and algorithm").

// Fabric names what a result's group crosses: "one node" inside a scale-up
// domain (a node, or a multi-node NVLink domain), otherwise the kind of its NICs
// ("infiniband", "roce", "efa").
func Fabric(r Result) string {
	if !MultiNode(r) {
		return "one node"
	}
	if r.Spec.NICs.Kind == "" {
		return string(topology.InfiniBand)
	}
	return string(r.Spec.NICs.Kind)
}

// PathOf is a result's fabric, operation, and the algorithm and protocol it was
// priced with ("efa allreduce dbtree/simple").
func PathOf(r Result) string {
	return fmt.Sprintf("%s %s %s/%s", Fabric(r), r.Op, r.Predicted.Algo, r.Predicted.Protocol)
}

// ByPath summarises the scored results keep accepts, grouped by PathOf, the
// largest group first (ties by name).
func ByPath(rs []Result, keep func(Result) bool) []Summary {
	var names []string
	for _, r := range rs {
		if r.Scored && r.Err == nil && keep(r) && !slices.Contains(names, PathOf(r)) {
			names = append(names, PathOf(r))
		}
	}
	out := make([]Summary, 0, len(names))
	for _, k := range names {
		out = append(out, Summarise(k, rs, func(r Result) bool { return keep(r) && PathOf(r) == k }))
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if c := cmp.Compare(b.N, a.N); c != 0 {
			return c
		}
		return cmp.Compare(a.Label, b.Label)
	})
	return out
}
