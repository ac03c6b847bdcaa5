package wire_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The ranking score is the planner's: the cost of a budget is steps × step time ×
// GPUs × price.
func TestScore(t *testing.T) {
	e := &pb.StepEstimate{StepTimeS: 2, Gpus: 8, Training: &pb.Training{GlobalBatch: 4, SeqLen: 1000},
		Throughput: &pb.Throughput{TokensPerSPerGpu: 250}}
	req := &pb.RankConfigsRequest{PricePerGpuHour: 3.6, TokenBudget: 4e6}
	for obj, want := range map[planner.Objective]float64{planner.FastestStep: 2, planner.Throughput: -250, planner.Cost: 1000 * 2 * 8 * 3.6 / 3600} {
		if got := wire.Score(obj, req, e); got != want {
			t.Errorf("%s: score %v, want %v", obj, got, want)
		}
	}
}

func TestRankObjective(t *testing.T) {
	cfg := []*pb.EstimateStepRequest{{}}
	if _, err := wire.RankObjective(&pb.RankConfigsRequest{Configs: cfg, Objective: pb.Objective_OBJECTIVE_COST}, 10); err == nil {
		t.Fatal("cost without a price: want an error")
	}
	var le *wire.LimitError
	if _, err := wire.RankObjective(&pb.RankConfigsRequest{Configs: append(cfg, cfg...)}, 1); !errors.As(err, &le) || le.Field != "configs" {
		t.Fatalf("over the limit: %v", err)
	}
	if obj, err := wire.RankObjective(&pb.RankConfigsRequest{Configs: cfg}, 1); err != nil || obj != planner.FastestStep {
		t.Fatalf("got %v, %v", obj, err)
	}
}

// A measured range over node counts (min_nodes, max_nodes) survives the round
// trip through a ClusterDefinition, as CalibrateCluster returns it.
func TestAlgoRangeNodeRangeRoundTrip(t *testing.T) {
	spec, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	spec.Algorithms = []topology.AlgoRange{
		{Op: "allreduce", MinNodes: 3, GPUsPerNode: 8, MinBytes: 1 << 30, Algo: "nvlstree"},
		{Op: "allreduce", MinNodes: 2, MaxNodes: 4, MinBytes: 1 << 20, MaxBytes: 8 << 20, Algo: "ring"},
	}
	back, err := wire.DefinitionToSpec("cluster.definition", wire.SpecToDefinition(spec))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Algorithms, spec.Algorithms) {
		t.Errorf("round trip: %+v, want %+v", back.Algorithms, spec.Algorithms)
	}
}

// A cluster's host — its CPU kind with its memory and links — crosses the wire both
// ways (a cluster file sent to a daemon keeps its Grace host); a definition may
// give the CPU alone, over a base system; an unknown CPU is refused, naming the
// field.
func TestHostRoundTrip(t *testing.T) {
	spec, err := catalog.System("gb200-nvl72")
	if err != nil {
		t.Fatal(err)
	}
	back, err := wire.DefinitionToSpec("cluster.definition", wire.SpecToDefinition(spec))
	if err != nil {
		t.Fatal(err)
	}
	if back.Host != spec.Host || back.Host.CPU != topology.Grace {
		t.Errorf("round trip: host %+v, want %+v", back.Host, spec.Host)
	}
	onH100 := &pb.ClusterDefinition{Base: "dgx-h100", Host: &pb.Host{Cpu: "grace"}}
	if s, err := wire.DefinitionToSpec("cluster.definition", onH100); err != nil || s.Host.CPU != topology.Grace || s.Host.MemoryGB != 2048 {
		t.Errorf("dgx-h100 with a Grace host: %+v, %v; want the base's memory and a Grace CPU", s.Host, err)
	}
	onH100.Host.Cpu = "arm"
	s, err := wire.DefinitionToSpec("cluster.definition", onH100)
	if err == nil {
		_, err = wire.NewClusters(1).Get(s)
	}
	if err == nil || !strings.Contains(err.Error(), "host.cpu") {
		t.Errorf("cpu \"arm\": got %v, want an error naming host.cpu", err)
	}
}

// Every catalog system crosses the wire whole, as the CLI sends a cluster file to a
// daemon (--server): a field SpecToDefinition or DefinitionToSpec leaves out would
// reach the daemon as zero, or as a default, without a word.
func TestSpecRoundTripEverySystem(t *testing.T) {
	for i, spec := range catalog.Systems() {
		spec.Nodes = 4
		if i%2 == 0 {
			spec.NCCL = "2.29.2" // the NCCL release travels too
		}
		back, err := wire.DefinitionToSpec("cluster.definition", wire.SpecToDefinition(spec))
		if err != nil {
			t.Errorf("%s: %v", spec.Name, err)
			continue
		}
		back.Nodes = spec.Nodes // the node count travels in ClusterSpec.nodes
		spec.Source = ""        // and a catalog system's source in SystemEntry.source
		if !reflect.DeepEqual(back, spec) {
			t.Errorf("%s: round trip changed the spec:\n got %+v\nwant %+v", spec.Name, back, spec)
		}
	}
}

// The step model's MoE, activation-storage, recompute, CUDA-graph and fp8-recipe
// inputs cross the wire both ways unchanged.
func TestMoEFieldsRoundTrip(t *testing.T) {
	l := &pb.Layout{Tp: 2, Pp: 8, Dp: 16, Ep: 32, Etp: 1, Sp: true, Recompute: pb.Recompute_RECOMPUTE_SELECTIVE,
		RecomputeModules: []string{"layernorm", "mla_up_proj", "moe_act"}, OverlapSharedExpert: true}
	dl, err := wire.LayoutFromProto(l)
	if err != nil {
		t.Fatal(err)
	}
	if dl.EP != 32 || dl.ETP != 1 || !dl.OverlapSharedExpert || len(dl.RecomputeModules) != 3 || dl.RecomputeModules[1] != "mla_up_proj" {
		t.Errorf("layout to the domain: %+v", dl)
	}
	if back := wire.LayoutToProto(dl); !proto.Equal(back, l) {
		t.Errorf("layout back: %v, sent %v", back, l)
	}
	tr := &pb.Training{SeqLen: 4096, GlobalBatch: 64, Precision: pb.Precision_PRECISION_FP8, Framework: "hai-llm", Fp8Activations: true,
		NoDropout: true, MoeCapacityFactor: 1.25, MoePadToCapacity: true, MoeDispatcher: "deepep", MoePermuteFusion: true,
		CudaGraphs: true, Fp8Recipe: "rowwise", DpBucketParams: 40_000_000, FlashAttention_2: true, ParamGather: "overlapped", Optimizer: &pb.Optimizer{}}
	dt, err := wire.TrainingFromProto(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !dt.FP8Activations || !dt.NoDropout || !dt.MoEPadToCapacity || dt.MoEDispatcher != step.DispatchDeepEP || !dt.MoEPermuteFusion ||
		!dt.CUDAGraphs || dt.FP8Recipe != step.FP8Rowwise || dt.DPBucketParams != 40e6 || !dt.FlashAttention2 ||
		dt.ParamGather != step.ParamGatherOverlapped {
		t.Errorf("training to the domain: %+v", dt)
	}
	if back := wire.TrainingToProto(dt); !proto.Equal(back, tr) {
		t.Errorf("training back: %v, sent %v", back, tr)
	}
	a := &pb.Architecture{Name: "x", Layers: 4, Hidden: 64, Heads: 4, Ffn: 128, Vocab: 100, MtpLayers: 1, GatedMlp: true, GluClamp: true,
		Moe: &pb.MoE{Experts: 16, TopK: 4, Groups: 4, TopkGroups: 2, Bias: true}}
	da := wire.ArchFromProto(a)
	if da.MTPLayers != 1 || !da.GLUClamp || da.MoE.Groups != 4 || da.MoE.TopKGroups != 2 || !da.MoE.Bias {
		t.Errorf("architecture to the domain: %+v, MoE %+v", da, da.MoE)
	}
	if back := wire.ArchToProto(da); !proto.Equal(back, a) {
		t.Errorf("architecture back: %v, sent %v", back, a)
	}
	// Names are taken in any case, as the other named values are.
	dl, err = wire.LayoutFromProto(&pb.Layout{RecomputeModules: []string{" MoE_Act"}})
	if err != nil || dl.RecomputeModules[0] != "moe_act" {
		t.Errorf("%q, %v", dl.RecomputeModules, err)
	}
	dt, err = wire.TrainingFromProto(&pb.Training{MoeDispatcher: "DeepEP", Fp8Recipe: "MXFP8"})
	if err != nil || dt.MoEDispatcher != step.DispatchDeepEP || dt.FP8Recipe != step.FP8MXFP8 {
		t.Errorf("%q, %q, %v", dt.MoEDispatcher, dt.FP8Recipe, err)
	}
	// Unset, the kernels launch eagerly, and the answer says so by leaving it unset.
	if dt.CUDAGraphs || wire.TrainingToProto(dt).GetCudaGraphs() {
		t.Error("cuda_graphs unset came back set")
	}
}

// A recompute module listed twice, or more modules than there are, is refused by
// its place in the list.
func TestRecomputeModulesErrors(t *testing.T) {
	for _, c := range []struct {
		modules []string
		field   string
	}{
		{[]string{"moe_act", "layernorm", "moe_act"}, "layout.recompute_modules[2]"},
		{[]string{"core_attn", "CORE_ATTN"}, "layout.recompute_modules[1]"},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h"}, "layout.recompute_modules"},
	} {
		_, err := wire.LayoutFromProto(&pb.Layout{RecomputeModules: c.modules})
		if fe := wire.FieldErrors(err); len(fe) != 1 || fe[0].Field != c.field {
			t.Errorf("%q: %v, want a violation of %s", c.modules, err, c.field)
		}
	}
}

// The request's batch bounds are the step package's: TrainingFromProto refuses,
// in the same words, exactly what step.CheckBatchBounds refuses, at the edges of
// int64 and of the bounds.
func TestBatchBoundsAreTheSteps(t *testing.T) {
	for _, b := range []int64{-1, 0, 1, step.MaxBatch, step.MaxBatch + 1, math.MaxInt64, math.MinInt64} {
		for _, n := range []int64{0, -8192, step.MaxGlobalTokens, step.MaxGlobalTokens + 1, math.MaxInt64} {
			_, err := wire.TrainingFromProto(&pb.Training{SeqLen: 4096, GlobalBatch: b, GlobalTokens: n})
			rule := step.CheckBatchBounds(b, n)
			if (err == nil) != (rule == nil) || err != nil && err.Error() != rule.Error() {
				t.Errorf("global_batch %d, global_tokens %d: %v, the step package's rule %v", b, n, err, rule)
			}
		}
	}
}

// A collective's group is refused by the collective package's rule, in its words,
// naming the request's field; and a definition's gpus_per_node by topology's,
// under cluster.definition.
func TestCollectiveGroupRuleIsTheEstimators(t *testing.T) {
	pool := wire.NewClusters(4)
	coll := collective.NewModel(collective.Default())
	for _, c := range []struct{ nodes, perNode int32 }{{-4, 0}, {math.MinInt32, 0}, {1, 3}, {2, -2}, {1, 16}, {2, math.MaxInt32}} {
		req := &pb.SimulateCollectiveRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Nodes: c.nodes, GpusPerNode: c.perNode,
			Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 30}
		_, err := wire.ResolveCollective(pool, coll, req, 1<<12)
		per := int(c.perNode)
		if per == 0 {
			per = 8
		}
		rule := collective.CheckNodeGroup(int(c.nodes), per, 8)
		if rule == nil || err == nil || err.Error() != rule.Error() {
			t.Errorf("nodes %d, gpus_per_node %d: %v, the collective package's rule %v", c.nodes, c.perNode, err, rule)
		}
	}
	// The schedule's rows: the collective package's rule, under max_step_rows.
	for _, rows := range []int32{-1, 0, 1, collective.MaxReplayRows, collective.MaxReplayRows + 1, math.MaxInt32} {
		req := &pb.SimulateCollectiveRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Nodes: 2,
			Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 30, Steps: true, MaxStepRows: rows}
		_, err := wire.ResolveCollective(pool, coll, req, 1<<12)
		why := collective.CheckReplayRows(int(rows))
		if (err == nil) != (why == "") || err != nil && err.Error() != "max_step_rows: "+why {
			t.Errorf("max_step_rows %d: %v, the collective package's rule %q", rows, err, why)
		}
	}
	for _, g := range []int{0, -1, topology.MaxGPUsPerNode + 1} {
		spec := topology.Spec{GPUsPerNode: g}
		err := wire.CheckGPUsPerNode(spec)
		rule := spec.CheckGPUsPerNode()
		if rule == nil || err == nil || err.Error() != "cluster.definition."+rule.Error() {
			t.Errorf("gpus_per_node %d: %v, topology's rule %v", g, err, rule)
		}
	}
	if err := wire.CheckGPUsPerNode(topology.Spec{GPUsPerNode: topology.MaxGPUsPerNode}); err != nil {
		t.Errorf("gpus_per_node at the bound: %v", err)
	}
}

// A constraint's schedule or recompute out of range is refused with the list of
// the values taken, drawn from the same table as the conversion: every value the
// message lists converts, and every value that converts is listed.
func TestConstraintEnumsListWhatIsTaken(t *testing.T) {
	_, err := wire.ConstraintsFromProto(&pb.Constraints{Schedules: []pb.Schedule{9}})
	listed(t, err, "constraints.schedules[0]", pb.Schedule(0).Descriptor().Values(), func(v int32) error {
		_, err := wire.ConstraintsFromProto(&pb.Constraints{Schedules: []pb.Schedule{pb.Schedule(v)}})
		return err
	})
	_, err = wire.ConstraintsFromProto(&pb.Constraints{Recompute: []pb.Recompute{0}})
	listed(t, err, "constraints.recompute[0]", pb.Recompute(0).Descriptor().Values(), func(v int32) error {
		_, err := wire.ConstraintsFromProto(&pb.Constraints{Recompute: []pb.Recompute{pb.Recompute(v)}})
		return err
	})
}

func listed(t *testing.T, refusal error, field string, vs protoreflect.EnumValueDescriptors, convert func(int32) error) {
	t.Helper()
	fe := wire.FieldErrors(refusal)
	if len(fe) != 1 || fe[0].Field != field {
		t.Fatalf("%s: %v", field, refusal)
	}
	list, _, _ := strings.Cut(fe[0].Rule, " (got ") // the values taken, not the value refused
	list += " "
	for i := range vs.Len() {
		name, n := string(vs.Get(i).Name()), int32(vs.Get(i).Number())
		_, suffix, _ := strings.Cut(name, "_")
		inMessage := strings.Contains(list, name) || strings.Contains(list, " _"+suffix+",") || strings.Contains(list, " _"+suffix+" ")
		if converts := convert(n) == nil && n != 0; inMessage != converts {
			t.Errorf("%s: %s listed %v, converts %v (%q)", field, name, inMessage, converts, fe[0].Rule)
		}
	}
}

// A RankConfigs request's objective and prices are refused by the planner's rule
// (planner.CheckObjective), in its words.
func TestRankObjectiveIsThePlanners(t *testing.T) {
	cfg := []*pb.EstimateStepRequest{{}}
	for _, c := range []struct {
		obj           pb.Objective
		price, budget float64
	}{
		{pb.Objective_OBJECTIVE_COST, 0, 1e12}, {pb.Objective_OBJECTIVE_COST, 2, 0}, {pb.Objective_OBJECTIVE_COST, math.NaN(), 1e12},
		{pb.Objective_OBJECTIVE_THROUGHPUT, -1, 0}, {pb.Objective_OBJECTIVE_STEP_TIME, 0, math.Inf(1)}, {pb.Objective_OBJECTIVE_COST, 2, 1e12},
	} {
		_, err := wire.RankObjective(&pb.RankConfigsRequest{Configs: cfg, Objective: c.obj, PricePerGpuHour: c.price, TokenBudget: c.budget}, 1)
		rule := planner.CheckObjective(wire.Objectives[c.obj], c.price, c.budget)
		if (err == nil) != (rule == nil) || err != nil && err.Error() != rule.Error() {
			t.Errorf("%s, %v, %v: %v, the planner's rule %v", c.obj, c.price, c.budget, err, rule)
		}
	}
}

// Every field of the API's Constraints reaches the planner and comes back: each is
// set to a value other than its zero, converted to planner.Constraints and back,
// and the result equals what was sent — a field added to the proto and left out
// of either conversion fails here.
func TestConstraintsRoundTrip(t *testing.T) {
	in := &pb.Constraints{}
	m := in.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		var v protoreflect.Value
		switch fd.Kind() {
		case protoreflect.BoolKind:
			v = protoreflect.ValueOfBool(true)
		case protoreflect.Int32Kind:
			v = protoreflect.ValueOfInt32(int32(2 + i))
		case protoreflect.DoubleKind:
			v = protoreflect.ValueOfFloat64(4.5)
		case protoreflect.StringKind:
			v = protoreflect.ValueOfString(string(step.OffloadOptimizer))
		case protoreflect.EnumKind:
			v = protoreflect.ValueOfEnum(1)
		default:
			t.Fatalf("%s: kind %v has no test value", fd.Name(), fd.Kind())
		}
		if fd.IsList() {
			l := m.Mutable(fd).List()
			l.Append(v)
			if fd.Kind() == protoreflect.BoolKind {
				l.Append(protoreflect.ValueOfBool(false))
			}
			continue
		}
		m.Set(fd, v)
	}
	c, err := wire.ConstraintsFromProto(in)
	if err != nil {
		t.Fatal(err)
	}
	if out := wire.ConstraintsToProto(c); !proto.Equal(in, out) {
		t.Errorf("sent %v\nback %v", in, out)
	}
	if !c.EvenSplit || len(c.ExpertsWhole) != 2 {
		t.Errorf("even_split %v, experts_whole %v", c.EvenSplit, c.ExpertsWhole)
	}
}

// training.cp_nccl_max_ctas crosses the wire both ways unchanged: a count of thread
// blocks to the domain's Training.CPMaxCTAs and back, unset as 0 (NCCL's default)
// and back unset. The wire passes a count out of range through as it is, for the
// estimator to refuse naming the field.
func TestCPMaxCTAsRoundTrip(t *testing.T) {
	for _, n := range []int32{0, 1, 8, collective.MaxChannels} {
		tr := &pb.Training{SeqLen: 8192, GlobalBatch: 8, Precision: pb.Precision_PRECISION_BF16, CpNcclMaxCtas: n, Optimizer: &pb.Optimizer{}}
		dt, err := wire.TrainingFromProto(tr)
		if err != nil {
			t.Fatal(err)
		}
		if dt.CPMaxCTAs != int(n) {
			t.Errorf("cp_nccl_max_ctas %d reached the domain as %d", n, dt.CPMaxCTAs)
		}
		if err := dt.Validate(); err != nil {
			t.Errorf("cp_nccl_max_ctas %d: %v", n, err)
		}
		if back := wire.TrainingToProto(dt); !proto.Equal(back, tr) {
			t.Errorf("training back: %v, sent %v", back, tr)
		}
	}
	for _, n := range []int32{-1, collective.MaxChannels + 1, math.MaxInt32} {
		dt, err := wire.TrainingFromProto(&pb.Training{SeqLen: 8192, GlobalBatch: 8, CpNcclMaxCtas: n})
		if err != nil || dt.CPMaxCTAs != int(n) {
			t.Fatalf("cp_nccl_max_ctas %d: %d, %v", n, dt.CPMaxCTAs, err)
		}
		fes := wire.FieldErrors(dt.Validate())
		if len(fes) != 1 || fes[0].Field != "training.cp_nccl_max_ctas" {
			t.Errorf("cp_nccl_max_ctas %d: field errors %v, want one naming training.cp_nccl_max_ctas", n, fes)
		}
	}
}

// training.dp_nccl_max_ctas and training.tp_nccl_max_ctas cross the wire both ways
// unchanged, as cp_nccl_max_ctas does: to the domain's Training.DPMaxCTAs and
// TPMaxCTAs and back, unset as 0 and back unset; a count out of range passes
// through for the estimator to refuse naming its field.
func TestDPTPMaxCTAsRoundTrip(t *testing.T) {
	for _, n := range []int32{0, 1, 8, collective.MaxChannels} {
		tr := &pb.Training{SeqLen: 8192, GlobalBatch: 8, Precision: pb.Precision_PRECISION_BF16, DpNcclMaxCtas: n, TpNcclMaxCtas: collective.MaxChannels - n,
			Optimizer: &pb.Optimizer{}}
		dt, err := wire.TrainingFromProto(tr)
		if err != nil {
			t.Fatal(err)
		}
		if dt.DPMaxCTAs != int(n) || dt.TPMaxCTAs != int(collective.MaxChannels-n) {
			t.Errorf("dp_nccl_max_ctas %d, tp_nccl_max_ctas %d reached the domain as %d, %d", n, collective.MaxChannels-n, dt.DPMaxCTAs, dt.TPMaxCTAs)
		}
		if err := dt.Validate(); err != nil {
			t.Errorf("dp_nccl_max_ctas %d: %v", n, err)
		}
		if back := wire.TrainingToProto(dt); !proto.Equal(back, tr) {
			t.Errorf("training back: %v, sent %v", back, tr)
		}
	}
	for _, n := range []int32{-1, collective.MaxChannels + 1, math.MaxInt32} {
		for field, tr := range map[string]*pb.Training{
			"training.dp_nccl_max_ctas": {SeqLen: 8192, GlobalBatch: 8, DpNcclMaxCtas: n},
			"training.tp_nccl_max_ctas": {SeqLen: 8192, GlobalBatch: 8, TpNcclMaxCtas: n},
		} {
			dt, err := wire.TrainingFromProto(tr)
			if err != nil {
				t.Fatalf("%s %d: %v", field, n, err)
			}
			fes := wire.FieldErrors(dt.Validate())
			if len(fes) != 1 || fes[0].Field != field {
				t.Errorf("%s %d: field errors %v, want one naming it", field, n, fes)
			}
		}
	}
}

// A catalog cluster without nodes is sized to the job, so a bad job size is
// refused by its own bound, never by the one node a size below 1 would size the
// cluster to ("the cluster's 8 GPUs" tells a scheduler asking for -8 of a
// 512-GPU job that the system has 8).
func TestPlanSizeBeforeSizing(t *testing.T) {
	pool := wire.NewClusters(4)
	base := func() *pb.EstimatePlanRequest {
		return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}}
	}
	for _, tc := range []struct {
		name  string
		set   func(*pb.EstimatePlanRequest)
		field string
		rule  string
	}{
		{"negative gpus", func(r *pb.EstimatePlanRequest) { r.Gpus = -8 }, "gpus", "must be between 1 and the service's limit of 131072 (got -8)"},
		{"negative max_gpus", func(r *pb.EstimatePlanRequest) { r.MaxGpus = -16 }, "max_gpus", "give gpus, or max_gpus between 1 and the service's limit of 131072 (got -16)"},
		{"no size", func(r *pb.EstimatePlanRequest) {}, "max_gpus", "give gpus, or max_gpus between 1 and the service's limit of 131072 (got 0)"},
		{"negative min_gpus", func(r *pb.EstimatePlanRequest) { r.MaxGpus, r.MinGpus = 64, -1 }, "min_gpus", "must be between 0 and max_gpus 64 (got -1)"},
	} {
		r := base()
		tc.set(r)
		_, err := wire.ResolvePlan(pool, r, 131072, 1<<20)
		fes := wire.FieldErrors(err)
		if len(fes) != 1 || fes[0].Field != tc.field || fes[0].Rule != tc.rule || strings.Contains(err.Error(), "cluster's") {
			t.Errorf("%s: got %v, want %s: %s", tc.name, err, tc.field, tc.rule)
		}
	}
}

// training.moe_grouped_gemm crosses the wire both ways unchanged: to the domain's
// Training.MoEGroupedGEMM and back, unset as false and back unset. On a model
// without experts it is answered with a warning naming it, as the other MoE
// settings are (NoEffect), and on an MoE model without one.
func TestMoEGroupedGEMMRoundTrip(t *testing.T) {
	for _, on := range []bool{false, true} {
		tr := &pb.Training{SeqLen: 4096, GlobalBatch: 64, Precision: pb.Precision_PRECISION_FP8, Framework: "nemo-25.04", MoeGroupedGemm: on, Optimizer: &pb.Optimizer{}}
		dt, err := wire.TrainingFromProto(tr)
		if err != nil {
			t.Fatal(err)
		}
		if dt.MoEGroupedGEMM != on {
			t.Errorf("moe_grouped_gemm %v reached the domain as %v", on, dt.MoEGroupedGEMM)
		}
		if back := wire.TrainingToProto(dt); !proto.Equal(back, tr) {
			t.Errorf("training back: %v, sent %v", back, tr)
		}
	}
	dt, err := wire.TrainingFromProto(&pb.Training{SeqLen: 4096, GlobalBatch: 64, MoeGroupedGemm: true})
	if err != nil {
		t.Fatal(err)
	}
	dense, err := model.Lookup("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	moe, err := model.Lookup("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	if w := wire.NoEffect(dense, dt, nil); len(w) != 1 || !strings.HasPrefix(w[0], "training.moe_grouped_gemm: no effect") {
		t.Errorf("a dense model with moe_grouped_gemm: warnings %q, want one naming training.moe_grouped_gemm", w)
	}
	if w := wire.NoEffect(moe, dt, nil); len(w) != 0 {
		t.Errorf("an MoE model with moe_grouped_gemm: warnings %q, want none", w)
	}
}

// training.cuda_device_max_connections crosses the wire both ways unchanged: to
// the domain's Training.DeviceMaxConnections and back, unset as 0 and back unset;
// a count outside CUDA's 1 to 32 passes through for the estimator to refuse
// naming the field.
func TestDeviceMaxConnectionsRoundTrip(t *testing.T) {
	for _, n := range []int32{0, 1, 8, 32} {
		tr := &pb.Training{SeqLen: 8192, GlobalBatch: 8, Precision: pb.Precision_PRECISION_BF16, CudaDeviceMaxConnections: n,
			Optimizer: &pb.Optimizer{}}
		dt, err := wire.TrainingFromProto(tr)
		if err != nil {
			t.Fatal(err)
		}
		if dt.DeviceMaxConnections != int(n) {
			t.Errorf("cuda_device_max_connections %d reached the domain as %d", n, dt.DeviceMaxConnections)
		}
		if err := dt.Validate(); err != nil {
			t.Errorf("cuda_device_max_connections %d: %v", n, err)
		}
		if back := wire.TrainingToProto(dt); !proto.Equal(back, tr) {
			t.Errorf("training back: %v, sent %v", back, tr)
		}
	}
	for _, n := range []int32{-1, 33, math.MaxInt32} {
		dt, err := wire.TrainingFromProto(&pb.Training{SeqLen: 8192, GlobalBatch: 8, CudaDeviceMaxConnections: n})
		if err != nil {
			t.Fatalf("%d: %v", n, err)
		}
		fes := wire.FieldErrors(dt.Validate())
		if len(fes) != 1 || fes[0].Field != "training.cuda_device_max_connections" {
			t.Errorf("cuda_device_max_connections %d: field errors %v, want one naming training.cuda_device_max_connections", n, fes)
		}
	}
}

// placement_tolerance 0 is a tolerance of zero (keep whichever placement scores
// better), not the default 0.02: a request that sends 0 and one that sends nothing
// resolve to different requests, and one that sends 0.02 to the default's.
func TestPlacementToleranceZeroIsKept(t *testing.T) {
	pool := wire.NewClusters(4)
	resolve := func(tol string) any {
		t.Helper()
		body := `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100", "nodes": 2, "free_gpus": [{"node": 0, "gpus": [0, 1, 2, 3]}, {"node": 1, "gpus": [0, 1, 2, 3, 4, 5, 6, 7]}]},
			"training": {"seq_len": 4096, "global_batch": 64}, "gpus": 8` + tol + `}`
		var r pb.EstimatePlanRequest
		if err := protojson.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		p, err := wire.ResolvePlan(pool, &r, 131072, 1<<20)
		if err != nil {
			t.Fatalf("placement_tolerance%s: %v", tol, err)
		}
		return p.Key()
	}
	unset, zero, dflt := resolve(""), resolve(`, "placement_tolerance": 0`), resolve(`, "placement_tolerance": 0.02`)
	if reflect.DeepEqual(unset, zero) {
		t.Error("placement_tolerance 0 resolves as the default 0.02")
	}
	if !reflect.DeepEqual(unset, dflt) {
		t.Error("placement_tolerance 0.02 resolves unlike the default it is")
	}
}

// A constraint's schedule or recompute refused is named as the API names it when
// it has a name: SCHEDULE_UNSPECIFIED (sent by name or as 0) was refused "(got
// 0)", where docs/service.md says an enum's value is named as the API names it,
// whether the caller sent the name or the number. A number without a name stays a
// number.
func TestConstraintEnumRefusedByName(t *testing.T) {
	for _, c := range []struct {
		req  *pb.Constraints
		want string
	}{
		{&pb.Constraints{Schedules: []pb.Schedule{pb.Schedule_SCHEDULE_1F1B, 0}}, "constraints.schedules[1]: must be SCHEDULE_GPIPE, _1F1B, _INTERLEAVED, _ZERO_BUBBLE, _DUALPIPE or _ZB_V (got SCHEDULE_UNSPECIFIED)"},
		{&pb.Constraints{Recompute: []pb.Recompute{0}}, "(got RECOMPUTE_UNSPECIFIED)"},
		{&pb.Constraints{Schedules: []pb.Schedule{99}}, "(got 99)"},
		{&pb.Constraints{Recompute: []pb.Recompute{-3}}, "(got -3)"},
	} {
		_, err := wire.ConstraintsFromProto(c.req)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.req, err, c.want)
		}
	}
}

// training.fp8_kv_projections_16bit crosses the wire both ways unchanged; with
// another precision than fp8 the estimator refuses it naming the field; under fp8
// it is warned of as without effect where it cannot change the price — a
// framework whose profile prices one query-key-value linear (megatron-core) or a
// model whose attention is MLA — and not where it does (torchtitan, Llama 3).
func TestFP8KVProjections16BitCrossesAndWarns(t *testing.T) {
	for _, on := range []bool{false, true} {
		tr := &pb.Training{SeqLen: 8192, GlobalBatch: 8, Precision: pb.Precision_PRECISION_FP8, Framework: "torchtitan",
			Fp8KvProjections_16Bit: on, Optimizer: &pb.Optimizer{}}
		dt, err := wire.TrainingFromProto(tr)
		if err != nil {
			t.Fatal(err)
		}
		if dt.FP8KVIn16Bits != on {
			t.Errorf("fp8_kv_projections_16bit %v reached the domain as %v", on, dt.FP8KVIn16Bits)
		}
		if back := wire.TrainingToProto(dt); !proto.Equal(back, tr) {
			t.Errorf("training back: %v, sent %v", back, tr)
		}
	}
	bf16, err := wire.TrainingFromProto(&pb.Training{SeqLen: 8192, GlobalBatch: 8, Precision: pb.Precision_PRECISION_BF16, Fp8KvProjections_16Bit: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := bf16.Validate(); err == nil || !strings.Contains(err.Error(), "training.fp8_kv_projections_16bit") {
		t.Errorf("fp8_kv_projections_16bit under bf16: %v, want a refusal naming the field", err)
	}
	llama, err := model.Lookup("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	dsv3, err := model.Lookup("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arch      model.Arch
		framework string
		warned    bool
	}{
		{llama, "torchtitan", false},
		{llama, "torchtitan-2025-11", false},
		{llama, "megatron-core", true},
		{llama, "", true}, // the default profile fuses the projections
		{dsv3, "torchtitan", true},
	} {
		tr, err := wire.TrainingFromProto(&pb.Training{SeqLen: 8192, GlobalBatch: 8, Precision: pb.Precision_PRECISION_FP8,
			Framework: tc.framework, Fp8KvProjections_16Bit: true})
		if err != nil {
			t.Fatal(err)
		}
		w := wire.NoEffect(tc.arch, tr, nil)
		got := len(w) == 1 && strings.HasPrefix(w[0], "training.fp8_kv_projections_16bit: no effect")
		if got != tc.warned || !tc.warned && len(w) != 0 {
			t.Errorf("%s on %q: warnings %q, want warned %v", tc.arch.Name, tc.framework, w, tc.warned)
		}
	}
}
