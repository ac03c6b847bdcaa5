package service

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stepcost/stepcost/cache"
	"github.com/stepcost/stepcost/internal/buildinfo"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// keyOf is the cache key of a request of s, or an error when it does not resolve.
func keyOf(s *Service, method string, req proto.Message) (string, error) {
	var w work
	var err error
	switch r := req.(type) {
	case *pb.EstimateStepRequest:
		w, err = s.estimateStep(r)
	case *pb.EstimatePlanRequest:
		w, err = s.estimatePlan(r)
	case *pb.SimulateCollectiveRequest:
		w, err = s.simulateCollective(r)
	}
	if err != nil {
		return "", err
	}
	rest, resolved, err := w.key.parts()
	if err != nil {
		return "", err
	}
	return cache.Key([]byte(method), []byte(buildinfo.EstimatorVersion), rest, resolved), nil
}

// A request field the cache key leaves out would answer a different question from
// the cache. Every field of every cached request — found by reflection over the
// request's messages, so a field added to the API is covered the day it is added
// — is changed in turn, to each of a few values, starting from several requests
// that spell every message out; some change must resolve and change the key.
// (A change may resolve to the same key: precision BF16 where it is the default
// is the same question.)
func TestCacheKeyCoversEveryField(t *testing.T) {
	s := New(Options{})
	covered := map[string]bool{}   // method.path → some change changed the key
	exercised := map[string]bool{} // method.path → some change resolved
	var all []string
	for _, b := range keyBases(t) {
		base, err := keyOf(s, b.method, b.req)
		if err != nil {
			t.Fatalf("%s %s: the base request does not resolve: %v", b.method, b.name, err)
		}
		for _, m := range mutations(b.req.ProtoReflect().Descriptor(), nil) {
			id := b.method + "." + m.path
			if !slices.Contains(all, id) {
				all = append(all, id)
			}
			for _, changed := range m.apply(b.req) {
				k, err := keyOf(s, b.method, changed)
				if err != nil {
					continue
				}
				exercised[id] = true
				if k != base {
					covered[id] = true
					break
				}
			}
		}
	}
	sort.Strings(all)
	var notCovered, notExercised []string
	for _, id := range all {
		switch {
		case covered[id]:
		case exercised[id]:
			notCovered = append(notCovered, id)
		default:
			notExercised = append(notExercised, id)
		}
	}
	for _, id := range notCovered {
		if why, ok := keyIgnores[id]; ok {
			t.Logf("%s: not in the key: %s", id, why)
			continue
		}
		t.Errorf("%s: changed, the request resolves and its cache key stays the same", id)
	}
	for _, id := range notExercised {
		if _, ok := keyIgnores[id]; ok {
			continue
		}
		t.Errorf("%s: no change tried resolves (add a base request or a value that exercises it)", id)
	}
	t.Logf("%d fields, %d change the key", len(all), len(covered))
}

// keyIgnores are the request fields that do not change the answer, and why.
var keyIgnores = map[string]string{}

type keyBase struct {
	method, name string
	req          proto.Message
}

// keyBases are requests that spell every message of the API out: models by
// architecture (dense, MoE, MLA, sliding window), clusters by full definition.
func keyBases(t *testing.T) []keyBase {
	arch := func(name string) *pb.ModelSpec {
		a, _, err := wire.ResolveModel("model", &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		return &pb.ModelSpec{Source: &pb.ModelSpec_Architecture{Architecture: wire.ArchToProto(a)}}
	}
	cluster := func(name string, nodes int32, free bool) *pb.ClusterSpec {
		spec, err := wire.ClusterSpec("cluster", &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		d := wire.SpecToDefinition(spec)
		for i := int32(0); name == "mi355x" && len(d.Nics.GpuNic) < int(d.GpusPerNode); i++ { // spelled out: GPU i on NIC i
			d.Nics.GpuNic = append(d.Nics.GpuNic, i%d.Nics.PerNode)
		}
		d.Host = &pb.Host{MemoryGb: 2048, MemoryBandwidthGbps: 400, LinkGbps: 64, GpusPerLink: 1}
		// The algorithms a calibrated cluster says NCCL runs: one range for a node
		// count, one over a range of node counts.
		d.Algorithms = []*pb.AlgoRange{
			{Op: "allreduce", Nodes: 2, GpusPerNode: 8, MinBytes: 1 << 20, MaxBytes: 8 << 20, Algo: "ring"},
			{Op: "allgather", MinNodes: 3, MaxNodes: 8, GpusPerNode: 8, MinBytes: 1 << 30, MaxBytes: 4 << 30, Algo: "ring"},
		}
		c := &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: d}, Nodes: nodes}
		if free {
			c.FreeGpus = []*pb.NodeFreeGPUs{{Node: 0, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}}, {Node: 1, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}}}
		}
		return c
	}
	training := func() *pb.Training {
		return &pb.Training{SeqLen: 4096, GlobalBatch: 256, Precision: pb.Precision_PRECISION_BF16,
			Optimizer: &pb.Optimizer{Name: "adam", WeightBytes: 2, GradBytes: 2, StateBytes: 12},
			Framework: "megatron", MoeImbalance: 1.1, MoeCapacityFactor: 1.25}
	}
	layout := func() *pb.Layout {
		return &pb.Layout{Tp: 2, Pp: 2, Dp: 4, Cp: 1, MicroBatch: 1, Zero: 1, Recompute: pb.Recompute_RECOMPUTE_SELECTIVE,
			Sp: true, Schedule: pb.Schedule_SCHEDULE_1F1B, RankOrder: "tp-cp-ep-dp-pp"}
	}
	step := func(model *pb.ModelSpec, l *pb.Layout) *pb.EstimateStepRequest {
		return &pb.EstimateStepRequest{Model: model, Cluster: cluster("dgx-h100", 4, false), Training: training(), Layout: l,
			SlowGpuSpeed: 0.9, DegradedNicSpeed: 0.9, DegradedLinkSpeed: 0.9}
	}
	moe := layout()
	moe.Ep, moe.Etp = 2, 1
	plan := func(model *pb.ModelSpec) *pb.EstimatePlanRequest {
		return &pb.EstimatePlanRequest{Model: model, Cluster: cluster("dgx-h100", 4, true), Training: training(),
			MinGpus: 8, MaxGpus: 16, Objective: pb.Objective_OBJECTIVE_COST, PricePerGpuHour: 2, TokenBudget: 1e12, TopK: 5,
			SlowGpuSpeed: 0.9, DegradedNicSpeed: 0.9, DegradedLinkSpeed: 0.9, ExcludeNodes: []int32{3}, PlacementTolerance: new(0.1),
			Constraints: &pb.Constraints{Tp: []int32{1, 2}, Pp: []int32{1, 2}, Cp: []int32{1}, Ep: []int32{1}, Zero: []int32{0, 1},
				MicroBatch: []int32{1, 2}, VirtualStages: []int32{1}, Recompute: []pb.Recompute{pb.Recompute_RECOMPUTE_SELECTIVE},
				Sp: []bool{true}, Schedules: []pb.Schedule{pb.Schedule_SCHEDULE_1F1B}, MinHeadroomGb: 1, MaxMicroBatch: 4}}
	}
	named := func(c *pb.ClusterSpec) *pb.ClusterSpec { // the GPU by catalog name
		d := c.GetDefinition()
		d.Gpu, d.GpuName = nil, "H100-SXM"
		return c
	}
	mesh := step(arch("llama3-8b"), layout())
	mesh.Cluster = cluster("mi355x", 4, false)
	byGPUName := step(arch("llama3-8b"), layout())
	byGPUName.Cluster = named(byGPUName.Cluster)
	planByGPUName := plan(arch("llama3-8b"))
	planByGPUName.Cluster = named(planByGPUName.Cluster)
	oneSize := plan(arch("llama3-8b")) // gpus instead of min_gpus and max_gpus
	oneSize.Gpus, oneSize.MinGpus, oneSize.MaxGpus = 16, 0, 0
	planMesh := plan(arch("llama3-8b"))
	planMesh.Cluster = cluster("mi355x", 4, true)
	params := func() *pb.ModelSpec { return &pb.ModelSpec{Source: &pb.ModelSpec_Params{Params: 8_000_000_000}} }
	coll := &pb.SimulateCollectiveRequest{Cluster: cluster("dgx-h100", 4, false), Nodes: 2, GpusPerNode: 8, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE,
		SizeBytes: 1 << 30, Algorithm: pb.Algorithm_ALGORITHM_RING, Protocol: pb.Protocol_PROTOCOL_SIMPLE, Launch: pb.Launch_LAUNCH_GRAPH,
		Steps: true, MaxStepRows: 100}
	// The same requests with the range over node counts first (the mutations
	// change a list's first element).
	overNodes := func(c *pb.ClusterSpec) *pb.ClusterSpec {
		a := c.GetDefinition().Algorithms
		a[0], a[1] = a[1], a[0]
		return c
	}
	stepOverNodes := step(arch("llama3-8b"), layout())
	overNodes(stepOverNodes.Cluster)
	planOverNodes := plan(arch("llama3-8b"))
	overNodes(planOverNodes.Cluster)
	collOverNodes := proto.Clone(coll).(*pb.SimulateCollectiveRequest)
	overNodes(collOverNodes.Cluster)
	// A free map holding the GPUs a step or a collective runs on (the first two
	// nodes) and, listed first (the mutations change a list's first element), one
	// more node.
	withFree := func(c *pb.ClusterSpec) *pb.ClusterSpec {
		all := []int32{0, 1, 2, 3, 4, 5, 6, 7}
		c.FreeGpus = []*pb.NodeFreeGPUs{{Node: 3, Gpus: all}, {Node: 0, Gpus: all}, {Node: 1, Gpus: all}}
		return c
	}
	stepFree := step(arch("llama3-8b"), layout())
	withFree(stepFree.Cluster)
	collFree := proto.Clone(coll).(*pb.SimulateCollectiveRequest)
	withFree(collFree.Cluster)
	return []keyBase{
		{"EstimateStep", "dense", step(arch("llama3-8b"), layout())},
		{"EstimateStep", "free GPUs", stepFree},
		{"SimulateCollective", "free GPUs", collFree},
		{"EstimateStep", "algorithms over node counts", stepOverNodes},
		{"EstimatePlan", "algorithms over node counts", planOverNodes},
		{"SimulateCollective", "algorithms over node counts", collOverNodes},
		{"EstimateStep", "moe", step(arch("mixtral-8x7b"), moe)},
		{"EstimateStep", "mla", step(arch("deepseek-v3"), moe)},
		{"EstimateStep", "sliding window", step(arch("gemma2-9b"), layout())},
		{"EstimateStep", "by name", &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
			Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Training: training(), Layout: layout()}},
		{"EstimatePlan", "dense", plan(arch("llama3-8b"))},
		{"EstimatePlan", "one job size", oneSize},
		{"EstimatePlan", "moe", plan(arch("mixtral-8x7b"))},
		{"EstimateStep", "mesh", mesh},
		{"EstimateStep", "GPU by name", byGPUName},
		{"EstimateStep", "by parameters", step(params(), layout())},
		{"EstimatePlan", "mla", plan(arch("deepseek-v3"))},
		{"EstimatePlan", "sliding window", plan(arch("gemma2-9b"))},
		{"EstimatePlan", "mesh", planMesh},
		{"EstimatePlan", "GPU by name", planByGPUName},
		{"EstimatePlan", "by parameters", plan(params())},
		{"SimulateCollective", "all-reduce", coll},
		{"SimulateCollective", "mesh", &pb.SimulateCollectiveRequest{Cluster: cluster("mi355x", 4, false), Nodes: 2,
			Collective: pb.Collective_COLLECTIVE_ALL_GATHER, SizeBytes: 1 << 20}},
		{"SimulateCollective", "GPU by name", &pb.SimulateCollectiveRequest{Cluster: named(cluster("dgx-h100", 4, false)), Nodes: 2,
			Collective: pb.Collective_COLLECTIVE_ALL_GATHER, SizeBytes: 1 << 20}},
	}
}

// mutation changes one field (path) of a request: apply returns copies of the
// request with the field set to each of a few values.
type mutation struct {
	path  string
	apply func(proto.Message) []proto.Message
}

// mutations lists a mutation of every scalar, enum, list and map field under md,
// reached through the fields of via (set on the way, the first element of a list).
func mutations(md protoreflect.MessageDescriptor, via []protoreflect.FieldDescriptor) []mutation {
	var out []mutation
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		chain := append(slices.Clip(via), fd)
		if fd.Message() != nil && !fd.IsMap() {
			if len(via) > 8 || slices.ContainsFunc(via, func(f protoreflect.FieldDescriptor) bool { return f.Message() == fd.Message() }) {
				continue // a message inside itself
			}
			out = append(out, mutations(fd.Message(), chain)...)
			continue
		}
		out = append(out, mutation{path: pathOf(chain), apply: func(req proto.Message) []proto.Message {
			var res []proto.Message
			for i := 0; ; i++ {
				c := proto.Clone(req)
				m := reach(c.ProtoReflect(), via)
				if !setCandidate(m, fd, i) {
					return res
				}
				res = append(res, c)
			}
		}})
	}
	return out
}

func pathOf(chain []protoreflect.FieldDescriptor) string {
	names := make([]string, len(chain))
	for i, fd := range chain {
		names[i] = string(fd.Name())
	}
	return strings.Join(names, ".")
}

// reach is the message at the end of via in m, created on the way (a list's
// first element; a oneof's alternative chosen).
func reach(m protoreflect.Message, via []protoreflect.FieldDescriptor) protoreflect.Message {
	for _, fd := range via {
		if fd.IsList() {
			l := m.Mutable(fd).List()
			if l.Len() == 0 {
				l.Append(l.NewElement())
			}
			m = l.Get(0).Message()
			continue
		}
		m = m.Mutable(fd).Message()
	}
	return m
}

// setCandidate sets fd of m to its i-th candidate value; false when there are no
// more.
func setCandidate(m protoreflect.Message, fd protoreflect.FieldDescriptor, i int) bool {
	switch {
	case fd.IsMap():
		mp := m.Mutable(fd).Map()
		var keys []protoreflect.MapKey
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool { keys = append(keys, k); return true })
		if i < len(keys) {
			v := mp.Get(keys[i])
			mp.Set(keys[i], protoreflect.ValueOfFloat64(v.Float()*0.8))
			return true
		}
		extra := []string{"fp8", "fp16", "bf16", "tf32", "fp32"}
		if i -= len(keys); i >= len(extra) {
			return false
		}
		mp.Set(protoreflect.ValueOfString(extra[i]).MapKey(), protoreflect.ValueOfFloat64(500))
		return true
	case fd.IsList():
		l := m.Mutable(fd).List()
		vs := candidates(fd, protoreflect.Value{})
		if i < l.Len() { // drop one element
			rest := make([]protoreflect.Value, 0, l.Len())
			for j := range l.Len() {
				if j != i {
					rest = append(rest, l.Get(j))
				}
			}
			l.Truncate(0)
			for _, v := range rest {
				l.Append(v)
			}
			return true
		}
		if i -= l.Len(); i < len(vs) {
			l.Append(vs[i]) // add one
			return true
		}
		if i -= len(vs); l.Len() == 0 || i >= len(vs) || fd.Message() != nil {
			return false
		}
		l.Set(0, vs[i]) // change the first
		return true
	}
	vs := candidates(fd, m.Get(fd))
	if i >= len(vs) {
		return false
	}
	m.Set(fd, vs[i])
	return true
}

// candidates are the values tried for a field now at cur (other than cur).
func candidates(fd protoreflect.FieldDescriptor, cur protoreflect.Value) []protoreflect.Value {
	var out []protoreflect.Value
	switch fd.Kind() {
	case protoreflect.BoolKind:
		out = append(out, protoreflect.ValueOfBool(!cur.IsValid() || !cur.Bool()))
	case protoreflect.Int32Kind, protoreflect.Int64Kind:
		var c int64
		if cur.IsValid() {
			c = cur.Int()
		}
		if fd.Kind() == protoreflect.Int32Kind {
			c = int64(int32(c))
		}
		for _, v := range []int64{c + 1, 2 * c, c - 1, c / 2, 1, 2, 4, 8, 3, 16, 0, 6, 12, 32, 64, 7_000_000_000, 70_000_000_000} {
			if v != c && v >= 0 {
				if fd.Kind() == protoreflect.Int32Kind {
					if v > 1<<31-1 {
						continue
					}
					out = append(out, protoreflect.ValueOfInt32(int32(v)))
				} else {
					out = append(out, protoreflect.ValueOfInt64(v))
				}
			}
		}
	case protoreflect.DoubleKind:
		var c float64
		if cur.IsValid() {
			c = cur.Float()
		}
		for _, v := range []float64{c * 1.1, c * 0.9, c + 1, 0.5, 0.8, 1, 2, 100, 0} {
			if v != c {
				out = append(out, protoreflect.ValueOfFloat64(v))
			}
		}
	case protoreflect.EnumKind:
		vs := fd.Enum().Values()
		for i := range vs.Len() {
			if n := vs.Get(i).Number(); !cur.IsValid() || n != cur.Enum() {
				out = append(out, protoreflect.ValueOfEnum(n))
			}
		}
	case protoreflect.StringKind:
		var c string
		if cur.IsValid() {
			c = cur.String()
		}
		for _, v := range []string{c + "-x", "llama3-70b", "dgx-a100", "H100-SXM", "H200", "A100-80GB", "nvswitch", "ampere", "blackwell", "mesh", "pcie",
			"roce", "efa", "deepspeed", "torchtitan", "nemo", "current", "mxfp8", "sgd", "adamw", "tp-dp-pp", "tp-cp-ep-pp-dp", "optimizer", "params",
			"allgather", "reducescatter", "tree", "nvlstree", "grace", "x86", "2.29.2", "2.28.9", ""} {
			if v != c {
				out = append(out, protoreflect.ValueOfString(v))
			}
		}
	default:
		panic(fmt.Sprintf("%s: kind %v has no candidates", fd.FullName(), fd.Kind()))
	}
	return out
}
