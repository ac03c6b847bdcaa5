package wire

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// ClusterFields re-roots the field errors of a cluster spec, named relative to the
// spec after prefix ("" for topology.Spec's own errors, "cluster." for the
// estimator's), at the request's path: the spec's nodes is cluster.nodes and every
// other field belongs to the definition (cluster.definition.nics.kind). An error
// without field errors is returned as it is.
func ClusterFields(c *pb.ClusterSpec, prefix string, err error) error {
	vs := FieldErrors(err)
	if len(vs) == 0 {
		return err
	}
	var out invalid.Collector
	for _, v := range vs {
		f := v.Field
		if rel, ok := strings.CutPrefix(f, prefix); ok {
			switch {
			case rel == "nodes":
				f = "cluster.nodes"
			case c.GetDefinition() != nil:
				f = "cluster.definition." + rel
			default:
				f = "cluster." + rel
			}
		}
		out.Join(v.Under(f))
	}
	return out.Err()
}

// EnumRule states the values an enum field takes, and the one it got.
func EnumRule(e protoreflect.Enum) string {
	vs := e.Descriptor().Values()
	names := make([]string, 0, vs.Len())
	for i := range vs.Len() {
		if vs.Get(i).Number() != 0 {
			names = append(names, string(vs.Get(i).Name()))
		}
	}
	return fmt.Sprintf("must be one of %s (got %d)", strings.Join(names, ", "), e.Number())
}

// LayoutGPUs is a layout's tp×pp×dp×cp (an unset size counts as 1), refused over
// the service's limit before it can overflow. A negative size counts as 1 here, for
// the estimator to name.
func LayoutGPUs(l step.Layout, limit int) (int, error) {
	n := 1
	for _, v := range []int{l.TP, l.PP, l.DP, l.CP} {
		if v > limit || n*max(1, v) > limit {
			// The degrees as read (an unset one is 1) and their product, in
			// floating point: four int32 degrees overflow an int64.
			tp, pp, dp, cp := max(1, l.TP), max(1, l.PP), max(1, l.DP), max(1, l.CP)
			return 0, &LimitError{"layout", fmt.Sprintf("tp×pp×dp×cp must be at most the service's limit of %d GPUs (flag --max-gpus; got tp %d, pp %d, dp %d, cp %d: %.6g GPUs)",
				limit, tp, pp, dp, cp, float64(tp)*float64(pp)*float64(dp)*float64(cp))}
		}
		n *= max(1, v)
	}
	return n, nil
}

// CheckGPUsPerNode refuses a definition's node size (topology's rule,
// Spec.CheckGPUsPerNode) before the cluster is sized by it, naming the request's
// field.
func CheckGPUsPerNode(spec topology.Spec) error {
	if e := spec.CheckGPUsPerNode(); e != nil {
		return e.Under("cluster.definition." + e.Field)
	}
	return nil
}

// CheckFree refuses free GPUs that are not GPUs of a node, or are listed twice
// (planner.CheckNodeGPUs), naming the entry by its place in the request.
func CheckFree(field string, v []*pb.NodeFreeGPUs, gpusPerNode int) error {
	for i, n := range v {
		if j, why := planner.CheckNodeGPUs(ToInts(n.GetGpus()), gpusPerNode); j >= 0 {
			return invalid.Field(fmt.Sprintf("%s[%d].gpus[%d]", field, i, j), "%s", why)
		}
	}
	return nil
}

// CheckFreeHolds refuses a free map (field, already checked by FreeMap and
// CheckFree) that leaves busy one of the GPUs a call puts its ranks on: call
// (EstimateStep, SimulateCollective) places them on gpus (global indices, node by
// node) and does not move them, so a busy one would make the answer that of GPUs
// the scheduler cannot give. No map: every GPU is free.
func CheckFreeHolds(field string, v []*pb.NodeFreeGPUs, gpusPerNode int, gpus []int, call, instead string) error {
	if len(v) == 0 {
		return nil
	}
	free := make(map[int]map[int]bool, len(v))
	for _, n := range v {
		m := make(map[int]bool, len(n.GetGpus()))
		for _, g := range n.GetGpus() {
			m[int(g)] = true
		}
		free[int(n.GetNode())] = m
	}
	for _, g := range gpus {
		node, local := g/gpusPerNode, g%gpusPerNode
		if !free[node][local] {
			return invalid.Field(field, "%s puts its ranks on the first GPUs in order and a free map cannot move them, but GPU %d of node %d is not free; %s",
				call, local, node, instead)
		}
	}
	return nil
}

// collectiveApplies refuses, naming the field, a collective that cannot run on the
// group: a group of one GPU (nodes or gpus_per_node), a forced algorithm that does
// not apply (algorithm), or an operation no algorithm NCCL would choose can run on a
// group this size (nodes).
func collectiveApplies(coll *collective.Model, req *pb.SimulateCollectiveRequest, p *collective.Placement, op collective.Op, algo collective.Algorithm) error {
	if p.N() < 2 {
		// The estimator prices a group of one at zero, which is right inside a step
		// but is no answer to "how long does this collective take".
		field := "nodes"
		if req.GetGpusPerNode() != 0 {
			field = "gpus_per_node"
		}
		return invalid.Field(field, "the group must have at least 2 GPUs to run a collective (got nodes %d × gpus_per_node %d)", max(1, req.GetNodes()), p.N()/max(1, p.Domains))
	}
	if algo != collective.Auto {
		if err := coll.Supports(p, op, algo); err != nil {
			why := strings.TrimPrefix(err.Error(), collective.ErrUnsupported.Error()+": ")
			// The reason is the estimator's "<algorithm> <op>: why (use a or b)"; its
			// values are kept as values for the API to name them its way (APIRule).
			why = strings.TrimPrefix(why, fmt.Sprintf("%s %s: ", algo, op))
			if rest, use, ok := algorithmsAdvised(why); ok {
				return invalid.Field("algorithm", "must be able to run the collective on this group of %d GPUs (%s %s: %s (use %s))", p.N(), algo, op, rest, use)
			}
			return invalid.Field("algorithm", "must be able to run the collective on this group of %d GPUs (%s %s: %s)", p.N(), algo, op, why)
		}
		return nil
	}
	if coll.AutoRuns(p, op) {
		return nil
	}
	return invalid.Field("nodes", "no algorithm can run %s on a group of %d GPUs over %d nodes; force one with algorithm, or use a smaller group", op, p.N(), p.Domains)
}

// algorithmsAdvised splits the estimator's reason an algorithm cannot run, "why
// (use a or b)", into why and the algorithms it advises.
func algorithmsAdvised(why string) (string, framework.Choices, bool) {
	rest, advice, ok := strings.Cut(why, " (use ")
	advice, closed := strings.CutSuffix(advice, ")")
	if !ok || !closed {
		return why, nil, false
	}
	var use framework.Choices
	for _, name := range strings.Split(advice, " or ") {
		for _, n := range strings.Split(name, ", ") {
			a, err := collective.ParseAlgorithm(n)
			if err != nil || a == collective.Auto || a.String() != n {
				return why, nil, false
			}
			use = append(use, a)
		}
	}
	return rest, use, true
}

// CheckWhatIfs refuses a what-if outside its bounds (step.CheckWhatIfs), naming
// its field, before the request's cluster is resolved.
func CheckWhatIfs(slowGPU, degradedNIC, degradedLink float64) error {
	return step.CheckWhatIfs(slowGPU, degradedNIC, degradedLink, nil)
}

// CheckDegradedNodes checks each degraded node's speeds before the cluster is
// known, naming the entry's field (degraded_nodes[i].nic_speed); the node's index
// and repeats are the planner's to check against the cluster.
func CheckDegradedNodes(ds []*pb.DegradedNode) error {
	var c invalid.Collector
	for i, d := range ds {
		c.Join(step.CheckDegradedParts(fmt.Sprintf("degraded_nodes[%d]", i), d.GetGpuSpeed(), d.GetNicSpeed(), d.GetLinkSpeed(), nil))
	}
	return c.Err()
}

// MaxTextBytes bounds every string of a request (names, kinds, descriptions, map
// keys): the longest catalog name is a few dozen bytes, and a string the service
// keeps (a cluster's name and description key its pool of built clusters) or
// echoes (a model's name is in the answer) must not be megabytes.
const MaxTextBytes = 1024

// CheckText refuses a request with a string or map key longer than MaxTextBytes,
// naming the field; the value is not echoed.
func CheckText(m proto.Message) error {
	var c invalid.Collector
	checkText(m.ProtoReflect(), "", &c)
	return c.Err()
}

func checkText(m protoreflect.Message, path string, c *invalid.Collector) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := string(fd.Name())
		if path != "" {
			p = path + "." + p
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				textValue(fd, l.Get(i), fmt.Sprintf("%s[%d]", p, i), c)
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if s := k.String(); len(s) > MaxTextBytes {
					c.Add(p, "a key is %d bytes long; keys are at most %d", len(s), MaxTextBytes)
					return true
				}
				textValue(fd.MapValue(), mv, p+"."+k.String(), c)
				return true
			})
		default:
			textValue(fd, v, p, c)
		}
		return true
	})
}

func textValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string, c *invalid.Collector) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if n := len(v.String()); n > MaxTextBytes {
			c.Add(path, "must be at most %d bytes (got %d)", MaxTextBytes, n)
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		checkText(v.Message(), path, c)
	}
}
