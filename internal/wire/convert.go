package wire

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// ---- models ----

// ResolveModel turns a ModelSpec into an architecture; derived explains a shape
// derived from a parameter count.
func ResolveModel(field string, m *pb.ModelSpec) (a model.Arch, derived string, err error) {
	switch s := m.GetSource().(type) {
	case *pb.ModelSpec_Name:
		a, err = model.Lookup(s.Name)
		if err != nil {
			return a, "", NotFound(field+".name", err)
		}
		return a, "", nil
	case *pb.ModelSpec_Architecture:
		a = ArchFromProto(s.Architecture).Normalise()
		if err := a.ValidateAt(field + ".architecture."); err != nil {
			return a, "", err
		}
		return a, "", nil
	case *pb.ModelSpec_Params:
		a, derived, err = model.FromParams(s.Params)
		var ie *invalid.Error
		switch {
		case errors.As(err, &ie): // its field is "params"
			return a, "", invalid.Field(field+".params", "%s", ie.Rule)
		case err != nil:
			return a, "", invalid.Field(field+".params", "%v", err)
		}
		return a, derived, nil
	}
	return a, "", invalid.Field(field, "is required: give name, architecture or params")
}

func ArchFromProto(p *pb.Architecture) model.Arch {
	a := model.Arch{
		Name: p.GetName(), Layers: int(p.GetLayers()), Hidden: int(p.GetHidden()), Heads: int(p.GetHeads()),
		KVHeads: int(p.GetKvHeads()), FFN: int(p.GetFfn()), GatedMLP: p.GetGatedMlp(), GLUClamp: p.GetGluClamp(), Vocab: int(p.GetVocab()),
		TiedEmbeddings: p.GetTiedEmbeddings(), HeadSize: int(p.GetHeadDim()),
		SlidingWindow: int(p.GetSlidingWindow()), GlobalEvery: int(p.GetGlobalEvery()), MTPLayers: int(p.GetMtpLayers()),
	}
	if m := p.GetMla(); m != nil {
		a.MLA = &model.MLA{QLoRARank: int(m.GetQLoraRank()), KVLoRARank: int(m.GetKvLoraRank()), QKNopeDim: int(m.GetQkNopeHeadDim()),
			QKRopeDim: int(m.GetQkRopeHeadDim()), VDim: int(m.GetVHeadDim())}
	}
	if a.Name == "" {
		a.Name = "custom"
	}
	if m := p.GetMoe(); m != nil {
		a.MoE = &model.MoE{Experts: int(m.GetExperts()), TopK: int(m.GetTopK()), ExpertFFN: int(m.GetExpertFfn()), Frequency: int(m.GetFrequency()),
			SharedExperts: int(m.GetSharedExperts()), FirstDense: int(m.GetFirstDense()), Groups: int(m.GetGroups()), TopKGroups: int(m.GetTopkGroups()),
			Bias: m.GetBias()}
	}
	return a
}

func ArchToProto(a model.Arch) *pb.Architecture {
	p := &pb.Architecture{
		Name: a.Name, Layers: int32(a.Layers), Hidden: int32(a.Hidden), Heads: int32(a.Heads), KvHeads: int32(a.KVHeads),
		Ffn: int32(a.FFN), GatedMlp: a.GatedMLP, GluClamp: a.GLUClamp, Vocab: int32(a.Vocab), TiedEmbeddings: a.TiedEmbeddings, HeadDim: int32(a.HeadSize),
		SlidingWindow: int32(a.SlidingWindow), GlobalEvery: int32(a.GlobalEvery), MtpLayers: int32(a.MTPLayers),
	}
	if m := a.MLA; m != nil {
		p.Mla = &pb.MLA{QLoraRank: int32(m.QLoRARank), KvLoraRank: int32(m.KVLoRARank), QkNopeHeadDim: int32(m.QKNopeDim),
			QkRopeHeadDim: int32(m.QKRopeDim), VHeadDim: int32(m.VDim)}
	}
	if a.MoE != nil {
		p.Moe = &pb.MoE{Experts: int32(a.MoE.Experts), TopK: int32(a.MoE.TopK), ExpertFfn: int32(a.MoE.ExpertFFN), Frequency: int32(a.MoE.Frequency),
			SharedExperts: int32(a.MoE.SharedExperts), FirstDense: int32(a.MoE.FirstDense), Groups: int32(a.MoE.Groups), TopkGroups: int32(a.MoE.TopKGroups),
			Bias: a.MoE.Bias}
	}
	return p
}

// ---- clusters ----

// ClusterSpec turns a ClusterSpec into a topology spec (not yet sized or built).
func ClusterSpec(field string, c *pb.ClusterSpec) (topology.Spec, error) {
	switch s := c.GetSource().(type) {
	case *pb.ClusterSpec_Name:
		spec, err := catalog.System(s.Name)
		if err != nil {
			return spec, NotFound(field+".name", err)
		}
		return spec, nil
	case *pb.ClusterSpec_Definition:
		return DefinitionToSpec(field+".definition", s.Definition)
	}
	return topology.Spec{}, invalid.Field(field, "is required: give name or definition")
}

// DefinitionToSpec applies a definition over its base (or an empty spec): every
// non-zero field overrides.
func DefinitionToSpec(field string, d *pb.ClusterDefinition) (topology.Spec, error) {
	var s topology.Spec
	if d.GetBase() != "" {
		b, err := catalog.System(d.GetBase())
		if err != nil {
			return s, NotFound(field+".base", err)
		}
		s = b
	}
	if d.GetName() != "" {
		s.Name = d.GetName()
	}
	if s.Name == "" {
		s.Name = "custom"
	}
	if d.GetDescription() != "" {
		s.Description = d.GetDescription()
	}
	switch {
	case d.GetGpuName() != "" && d.GetGpu() != nil:
		return s, invalid.Field(field+".gpu_name", "give gpu or gpu_name, not both")
	case d.GetGpuName() != "":
		g, err := catalog.GPU(d.GetGpuName())
		if err != nil {
			return s, NotFound(field+".gpu_name", err)
		}
		s.GPU = g
	case d.GetGpu() != nil:
		if err := checkPeakKeys(field+".gpu.peak_tflops", d.GetGpu().GetPeakTflops()); err != nil {
			return s, err
		}
		s.GPU = GPUFromProto(d.GetGpu())
	}
	if v := d.GetGpusPerNode(); v != 0 {
		s.GPUsPerNode = int(v)
	}
	if in := d.GetIntra(); in != nil {
		if in.GetKind() != "" {
			s.Intra.Kind = topology.IntraKind(in.GetKind())
		}
		setF(&s.Intra.GPUBandwidthGBps, in.GetGpuBandwidthGbps())
		s.Intra.NVLS = s.Intra.NVLS || in.GetNvls()
		if v := in.GetDomainNodes(); v != 0 {
			s.Intra.DomainNodes = int(v)
		}
		setF(&s.Intra.Efficiency, in.GetEfficiency())
		setF(&s.Intra.LatencyUs, in.GetLatencyUs())
	}
	if n := d.GetNics(); n != nil {
		if v := n.GetPerNode(); v != 0 {
			s.NICs.PerNode = int(v)
		}
		setF(&s.NICs.Gbps, n.GetGbps())
		if n.GetKind() != "" {
			s.NICs.Kind = topology.NetKind(n.GetKind())
		}
		if len(n.GetGpuNic()) > 0 {
			s.NICs.GPUNIC = ToInts(n.GetGpuNic())
		}
		setF(&s.NICs.Efficiency, n.GetEfficiency())
		setF(&s.NICs.LatencyUs, n.GetLatencyUs())
		s.NICs.SimpleProtocolOnly = s.NICs.SimpleProtocolOnly || n.GetSimpleProtocolOnly()
	}
	if n := d.GetNetwork(); n != nil {
		s.Network.RailOptimized = s.Network.RailOptimized || n.GetRailOptimized()
		if v := n.GetNodesPerLeaf(); v != 0 {
			s.Network.NodesPerLeaf = int(v)
		}
		setF(&s.Network.Oversubscription, n.GetOversubscription())
		setF(&s.Network.SpineLatencyUs, n.GetSpineLatencyUs())
	}
	if rs := d.GetAlgorithms(); len(rs) > 0 {
		s.Algorithms = make([]topology.AlgoRange, len(rs))
		for i, r := range rs {
			s.Algorithms[i] = topology.AlgoRange{Op: r.GetOp(), Nodes: int(r.GetNodes()), GPUsPerNode: int(r.GetGpusPerNode()),
				MinNodes: int(r.GetMinNodes()), MaxNodes: int(r.GetMaxNodes()),
				MinBytes: r.GetMinBytes(), MaxBytes: r.GetMaxBytes(), Algo: r.GetAlgo()}
		}
		if err := collective.CheckRanges(s.Algorithms); err != nil {
			var c invalid.Collector
			for _, v := range FieldErrors(err) {
				c.Add(field+"."+v.Field, "%s", v.Rule)
			}
			return s, c.Err()
		}
	}
	if v := d.GetNccl(); v != "" {
		s.NCCL = v
	}
	if h := d.GetHost(); h != nil {
		setF(&s.Host.MemoryGB, h.GetMemoryGb())
		setF(&s.Host.MemoryBandwidthGBps, h.GetMemoryBandwidthGbps())
		setF(&s.Host.LinkGBps, h.GetLinkGbps())
		if v := h.GetGpusPerLink(); v != 0 {
			s.Host.GPUsPerLink = int(v)
		}
		if v := h.GetCpu(); v != "" {
			s.Host.CPU = topology.CPUKind(v)
		}
	}
	return s, nil
}

// BaseKeeps warns of what a definition over a catalog base cannot turn off:
// intra.nvls, nics.simple_protocol_only and network.rail_optimized are proto3
// bools without presence, so a false is the same as a field left out and the
// base's true stays (DefinitionToSpec). One warning for each the definition
// leaves false in a message it gives while its base has it on; nil otherwise (an
// unknown base is DefinitionToSpec's error). field is the cluster's ("cluster").
func BaseKeeps(field string, c *pb.ClusterSpec) []string {
	d := c.GetDefinition()
	if d.GetBase() == "" {
		return nil
	}
	b, err := catalog.System(d.GetBase())
	if err != nil {
		return nil
	}
	var out []string
	keep := func(given bool, path string, on, sent bool, what string) {
		if given && on && !sent {
			out = append(out, fmt.Sprintf("%s.definition.%s: on, as in base %s (%s): a definition over a base cannot turn it off, "+
				"since false is the same as not sent; to turn it off give the definition in full, without base", field, path, d.GetBase(), what))
		}
	}
	keep(d.GetIntra() != nil, "intra.nvls", b.Intra.NVLS, d.GetIntra().GetNvls(), "the switch reduces and multicasts")
	keep(d.GetNics() != nil, "nics.simple_protocol_only", b.NICs.SimpleProtocolOnly, d.GetNics().GetSimpleProtocolOnly(), "only NCCL's Simple protocol between nodes")
	keep(d.GetNetwork() != nil, "network.rail_optimized", b.Network.RailOptimized, d.GetNetwork().GetRailOptimized(), "rail-optimised")
	return out
}

func setF(dst *float64, v float64) {
	if v != 0 {
		*dst = v
	}
}

func ToInts(v []int32) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

func ToInt32s(v []int) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// checkPeakKeys refuses two keys of a GPU's peak_tflops that name one type in
// different case ("BF16", "bf16"): GPUFromProto reads keys in lower case, and
// which of the two it kept would be the map's iteration order's choice.
func checkPeakKeys(field string, peaks map[string]float64) error {
	if a, b, dup := hardware.SameTypeKeys(slices.Collect(maps.Keys(peaks))); dup {
		return invalid.Field(field, "%q and %q name one type: give it once", a, b)
	}
	return nil
}

func GPUFromProto(g *pb.GPU) hardware.GPU {
	out := hardware.GPU{Name: g.GetName(), Arch: hardware.Arch(g.GetArch()), MemoryGB: g.GetMemoryGb(),
		MemoryBandwidthGBps: g.GetMemoryBandwidthGbps(), NVLinkGBps: g.GetNvlinkGbps(), SMs: int(g.GetSms()), Source: g.GetSource()}
	if len(g.GetPeakTflops()) > 0 {
		out.PeakTFLOPS = map[hardware.DType]float64{}
		for k, v := range g.GetPeakTflops() {
			out.PeakTFLOPS[hardware.DType(strings.ToLower(k))] = v
		}
	}
	return out
}

func GPUToProto(g hardware.GPU) *pb.GPU {
	p := &pb.GPU{Name: g.Name, Arch: string(g.Arch), MemoryGb: g.MemoryGB, MemoryBandwidthGbps: g.MemoryBandwidthGBps,
		NvlinkGbps: g.NVLinkGBps, Sms: int32(g.SMs), Source: g.Source, PeakTflops: map[string]float64{}}
	for k, v := range g.PeakTFLOPS {
		p.PeakTflops[string(k)] = v
	}
	return p
}

func SpecToDefinition(s topology.Spec) *pb.ClusterDefinition {
	return &pb.ClusterDefinition{
		Name: s.Name, Description: s.Description, Gpu: GPUToProto(s.GPU), GpusPerNode: int32(s.GPUsPerNode),
		Intra: &pb.IntraNode{Kind: string(s.Intra.Kind), GpuBandwidthGbps: s.Intra.GPUBandwidthGBps, Nvls: s.Intra.NVLS,
			DomainNodes: int32(s.Intra.DomainNodes), Efficiency: s.Intra.Efficiency, LatencyUs: s.Intra.LatencyUs},
		Nics: &pb.NICs{PerNode: int32(s.NICs.PerNode), Gbps: s.NICs.Gbps, Kind: string(s.NICs.Kind), GpuNic: ToInt32s(s.NICs.GPUNIC),
			Efficiency: s.NICs.Efficiency, LatencyUs: s.NICs.LatencyUs, SimpleProtocolOnly: s.NICs.SimpleProtocolOnly},
		Network: &pb.Network{RailOptimized: s.Network.RailOptimized, NodesPerLeaf: int32(s.Network.NodesPerLeaf),
			Oversubscription: s.Network.Oversubscription, SpineLatencyUs: s.Network.SpineLatencyUs},
		Host:       hostToProto(s.Host),
		Algorithms: algoRangesToProto(s.Algorithms),
		Nccl:       s.NCCL,
	}
}

// hostToProto converts a node's host; nil when the spec gives none.
func hostToProto(h topology.Host) *pb.Host {
	if h == (topology.Host{}) {
		return nil
	}
	return &pb.Host{MemoryGb: h.MemoryGB, MemoryBandwidthGbps: h.MemoryBandwidthGBps, LinkGbps: h.LinkGBps,
		GpusPerLink: int32(h.GPUsPerLink), Cpu: string(h.CPU)}
}

func algoRangesToProto(rs []topology.AlgoRange) []*pb.AlgoRange {
	if len(rs) == 0 {
		return nil
	}
	out := make([]*pb.AlgoRange, len(rs))
	for i, r := range rs {
		out[i] = &pb.AlgoRange{Op: r.Op, Nodes: int32(r.Nodes), GpusPerNode: int32(r.GPUsPerNode), MinNodes: int32(r.MinNodes), MaxNodes: int32(r.MaxNodes),
			MinBytes: r.MinBytes, MaxBytes: r.MaxBytes, Algo: r.Algo}
	}
	return out
}

// FreeMap converts the free-GPU list; it also returns the highest node named.
func FreeMap(field string, v []*pb.NodeFreeGPUs) (planner.FreeMap, int, error) {
	if len(v) == 0 {
		return nil, -1, nil
	}
	out := planner.FreeMap{}
	top := -1
	for i, n := range v {
		node := int(n.GetNode())
		if node < 0 || node >= topology.MaxNodes {
			return nil, 0, invalid.Field(fmt.Sprintf("%s[%d].node", field, i), "must be between 0 and %d (got %d)", topology.MaxNodes-1, node)
		}
		if _, dup := out[node]; dup {
			return nil, 0, invalid.Field(fmt.Sprintf("%s[%d].node", field, i), "node %d is listed twice", node)
		}
		// In order, so that the placement (and the cache key) do not depend on how
		// the scheduler listed them; repeats are kept for the planner to report.
		gpus := ToInts(n.GetGpus())
		slices.Sort(gpus)
		out[node] = gpus
		top = max(top, node)
	}
	return out, top, nil
}

// ---- training and layout ----

func PrecisionFromProto(p pb.Precision) (step.Precision, error) {
	switch p {
	case pb.Precision_PRECISION_UNSPECIFIED, pb.Precision_PRECISION_BF16:
		return step.BF16, nil
	case pb.Precision_PRECISION_FP16:
		return step.FP16, nil
	case pb.Precision_PRECISION_FP8:
		return step.FP8, nil
	}
	return "", invalid.Field("training.precision", "%s", EnumRule(p))
}

var prefetches = map[pb.BackwardPrefetch]step.BackwardPrefetch{
	pb.BackwardPrefetch_BACKWARD_PREFETCH_PRE: step.PrefetchPre, pb.BackwardPrefetch_BACKWARD_PREFETCH_POST: step.PrefetchPost,
	pb.BackwardPrefetch_BACKWARD_PREFETCH_NONE: step.PrefetchNone,
}

// protoEnum is a generated enum: the unspecified value is 0.
type protoEnum interface {
	~int32
	protoreflect.Enum
}

// fromProto maps an enum value through m; unspecified gives the zero value (the
// domain default), a value m does not know a field error.
func fromProto[P protoEnum, V any](field string, p P, m map[P]V) (V, error) {
	v, ok := m[p]
	if !ok && p != 0 {
		return v, invalid.Field(field, "%s", EnumRule(p))
	}
	return v, nil
}

// enumValues lists the values of e's type that m maps, in the enum's order, the
// type's prefix written once: "SCHEDULE_GPIPE, _1F1B or _INTERLEAVED".
func enumValues[P protoEnum, V any](e P, m map[P]V) string {
	vs := e.Descriptor().Values()
	var names []string
	for i := range vs.Len() {
		if _, ok := m[P(vs.Get(i).Number())]; ok {
			names = append(names, string(vs.Get(i).Name()))
		}
	}
	if len(names) == 0 {
		return ""
	}
	prefix, _, _ := strings.Cut(names[0], "_")
	for i := 1; i < len(names); i++ {
		names[i] = strings.TrimPrefix(names[i], prefix)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// enumGot names the enum value e as the API names it (SCHEDULE_UNSPECIFIED), or
// by its number when its type has no name for it.
func enumGot(e protoreflect.Enum) string {
	if v := e.Descriptor().Values().ByNumber(e.Number()); v != nil {
		return string(v.Name())
	}
	return fmt.Sprint(e.Number())
}

// toProto is the enum value m maps to v, or unspecified.
func toProto[P protoEnum, V comparable](v V, m map[P]V) P {
	for k, x := range m {
		if x == v {
			return k
		}
	}
	return 0
}

func PrecisionToProto(p step.Precision) pb.Precision {
	switch p {
	case step.FP16:
		return pb.Precision_PRECISION_FP16
	case step.FP8:
		return pb.Precision_PRECISION_FP8
	}
	return pb.Precision_PRECISION_BF16
}

func TrainingFromProto(t *pb.Training) (step.Training, error) {
	if t == nil {
		return step.Training{}, invalid.Field("training", "is required (seq_len and global_batch)")
	}
	p, err := PrecisionFromProto(t.GetPrecision())
	if err != nil {
		return step.Training{}, err
	}
	bp, err := fromProto("training.zero3_backward_prefetch", t.GetZero3BackwardPrefetch(), prefetches)
	if err != nil {
		return step.Training{}, err
	}
	// Checked here, before they are narrowed to int.
	if err := step.CheckBatchBounds(t.GetGlobalBatch(), t.GetGlobalTokens()); err != nil {
		return step.Training{}, err
	}
	out := step.Training{SeqLen: int(t.GetSeqLen()), GlobalBatch: int(t.GetGlobalBatch()), GlobalTokens: int(t.GetGlobalTokens()),
		Precision: p, UnfusedAttention: t.GetUnfusedAttention(), OnDemandGathers: t.GetZero3OnDemandGathers(), BackwardPrefetch: bp,
		Framework: t.GetFramework(), FP8Recipe: step.FP8Recipe(strings.ToLower(t.GetFp8Recipe())), FP8Params: t.GetFp8Params(), DPReduceAfterBackward: t.GetDpReduceAfterBackward(),
		MoEImbalance: t.GetMoeImbalance(), MoECapacityFactor: t.GetMoeCapacityFactor(),
		FP8Activations: t.GetFp8Activations(), NoDropout: t.GetNoDropout(), MoEPadToCapacity: t.GetMoePadToCapacity(),
		MoEDispatcher: strings.ToLower(t.GetMoeDispatcher()), MoEPermuteFusion: t.GetMoePermuteFusion(), MoERouterFP32: t.GetMoeRouterFp32(), MoEGroupedGEMM: t.GetMoeGroupedGemm(), CUDAGraphs: t.GetCudaGraphs(),
		DPBucketParams: float64(t.GetDpBucketParams()), FlashAttention2: t.GetFlashAttention_2(),
		ParamGather: step.ParamGather(strings.ToLower(t.GetParamGather())), CPMaxCTAs: int(t.GetCpNcclMaxCtas()),
		DPMaxCTAs: int(t.GetDpNcclMaxCtas()), TPMaxCTAs: int(t.GetTpNcclMaxCtas()),
		DeviceMaxConnections: int(t.GetCudaDeviceMaxConnections()), FP8KVIn16Bits: t.GetFp8KvProjections_16Bit()}
	if o := t.GetOptimizer(); o != nil {
		out.Optimizer = step.Optimizer{Name: o.GetName(), WeightBytes: o.GetWeightBytes(), GradBytes: o.GetGradBytes(), StateBytes: o.GetStateBytes()}
	}
	return out, nil
}

func TrainingToProto(t step.Training) *pb.Training {
	return &pb.Training{SeqLen: int32(t.SeqLen), GlobalBatch: int64(t.GlobalBatch), GlobalTokens: int64(t.GlobalTokens),
		Precision: PrecisionToProto(t.Precision), UnfusedAttention: t.UnfusedAttention, Zero3OnDemandGathers: t.OnDemandGathers,
		Zero3BackwardPrefetch: toProto(t.BackwardPrefetch, prefetches), Framework: t.Framework, Fp8Recipe: string(t.FP8Recipe), Fp8Params: t.FP8Params, DpReduceAfterBackward: t.DPReduceAfterBackward,
		MoeImbalance: t.MoEImbalance, MoeCapacityFactor: t.MoECapacityFactor,
		Fp8Activations: t.FP8Activations, NoDropout: t.NoDropout, MoePadToCapacity: t.MoEPadToCapacity,
		MoeDispatcher: t.MoEDispatcher, MoePermuteFusion: t.MoEPermuteFusion, MoeRouterFp32: t.MoERouterFP32, MoeGroupedGemm: t.MoEGroupedGEMM, CudaGraphs: t.CUDAGraphs, DpBucketParams: int64(t.DPBucketParams), ParamGather: string(t.ParamGather),
		FlashAttention_2: t.FlashAttention2, CpNcclMaxCtas: int32(t.CPMaxCTAs),
		DpNcclMaxCtas: int32(t.DPMaxCTAs), TpNcclMaxCtas: int32(t.TPMaxCTAs),
		CudaDeviceMaxConnections: int32(t.DeviceMaxConnections), Fp8KvProjections_16Bit: t.FP8KVIn16Bits,
		Optimizer: &pb.Optimizer{Name: t.Optimizer.Name, WeightBytes: t.Optimizer.WeightBytes, GradBytes: t.Optimizer.GradBytes, StateBytes: t.Optimizer.StateBytes}}
}

var recomputes = map[pb.Recompute]step.Recompute{
	pb.Recompute_RECOMPUTE_NONE: step.RecomputeNone, pb.Recompute_RECOMPUTE_SELECTIVE: step.RecomputeSelective, pb.Recompute_RECOMPUTE_FULL: step.RecomputeFull,
	pb.Recompute_RECOMPUTE_OPS: step.RecomputeOps,
}

var schedules = map[pb.Schedule]step.Schedule{
	pb.Schedule_SCHEDULE_GPIPE: step.GPipe, pb.Schedule_SCHEDULE_1F1B: step.OneFOneB, pb.Schedule_SCHEDULE_INTERLEAVED: step.Interleaved,
	pb.Schedule_SCHEDULE_ZERO_BUBBLE: step.ZeroBubble, pb.Schedule_SCHEDULE_DUALPIPE: step.DualPipe,
	pb.Schedule_SCHEDULE_ZB_V: step.ZeroBubbleV,
}

func LayoutFromProto(l *pb.Layout) (step.Layout, error) {
	if l == nil {
		return step.Layout{}, invalid.Field("layout", "is required")
	}
	rc, err := fromProto("layout.recompute", l.GetRecompute(), recomputes)
	if err != nil {
		return step.Layout{}, err
	}
	sc, err := fromProto("layout.schedule", l.GetSchedule(), schedules)
	if err != nil {
		return step.Layout{}, err
	}
	modules, err := recomputeModulesFromProto(l.GetRecomputeModules())
	if err != nil {
		return step.Layout{}, err
	}
	return step.Layout{TP: int(l.GetTp()), PP: int(l.GetPp()), DP: int(l.GetDp()), CP: int(l.GetCp()), EP: int(l.GetEp()),
		ZeRO: int(l.GetZero()), MicroBatch: int(l.GetMicroBatch()), Recompute: rc, SP: l.GetSp(), Schedule: sc,
		VirtualStages: int(l.GetVirtualStages()), LayerSplit: toIntsOrNil(l.GetLayerSplit()), RankOrder: l.GetRankOrder(),
		OverlapTP: l.GetOverlapTp(), CPAllToAll: l.GetCpAllToAll(), RecomputeLayers: int(l.GetRecomputeLayers()),
		AccountForEmbedding: l.GetAccountForEmbedding(), AccountForLoss: l.GetAccountForLoss(), OverlapEP: l.GetOverlapEp(), Offload: step.Offload(l.GetOffload()), ETP: int(l.GetEtp()),
		RecomputeModules: modules, OverlapSharedExpert: l.GetOverlapSharedExpert(), FP8Params: l.GetFp8Params(), OffloadActivations: l.GetOffloadActivations()}, nil
}

// recomputeModulesFromProto lower-cases the recompute modules and refuses, by its
// index, one listed twice or a list longer than the modules there are; the
// estimator names the unknown ones.
func recomputeModulesFromProto(v []string) ([]string, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if n := len(step.RecomputeModuleNames()); len(v) > n {
		return nil, invalid.Field("layout.recompute_modules", "lists at most the %d modules there are, %s (got %d)", n, strings.Join(step.RecomputeModuleNames(), ", "), len(v))
	}
	out := make([]string, len(v))
	for i, m := range v {
		out[i] = strings.ToLower(strings.TrimSpace(m))
		if j := slices.Index(out[:i], out[i]); j >= 0 {
			return nil, invalid.Field(fmt.Sprintf("layout.recompute_modules[%d]", i), "%q is listed twice (also at [%d])", m, j)
		}
	}
	return out, nil
}

func toIntsOrNil(v []int32) []int {
	if len(v) == 0 {
		return nil
	}
	return ToInts(v)
}

func LayoutToProto(l step.Layout) *pb.Layout {
	p := &pb.Layout{Tp: int32(l.TP), Pp: int32(l.PP), Dp: int32(l.DP), Cp: int32(l.CP), Ep: int32(l.EP), Zero: int32(l.ZeRO),
		MicroBatch: int32(l.MicroBatch), Sp: l.SP, VirtualStages: int32(l.VirtualStages), LayerSplit: ToInt32s(l.LayerSplit),
		RankOrder: l.RankOrder, OverlapTp: l.OverlapTP, CpAllToAll: l.CPAllToAll, RecomputeLayers: int32(l.RecomputeLayers),
		AccountForEmbedding: l.AccountForEmbedding, AccountForLoss: l.AccountForLoss, OverlapEp: l.OverlapEP, Offload: string(l.Offload), Etp: int32(l.ETP),
		RecomputeModules: slices.Clone(l.RecomputeModules), OverlapSharedExpert: l.OverlapSharedExpert, Fp8Params: l.FP8Params, OffloadActivations: l.OffloadActivations}
	p.Recompute, p.Schedule = toProto(l.Recompute, recomputes), toProto(l.Schedule, schedules)
	return p
}

// ---- results ----

func StepToProto(r step.Result) *pb.StepEstimate {
	b := r.Breakdown
	bd := &pb.Breakdown{ForwardS: b.Forward, BackwardS: b.Backward, RecomputeS: b.Recompute, BubbleS: b.Bubble,
		OptimizerS: b.Optimizer, ContentionS: b.Contention, TotalS: b.Sum(),
		ExposedCommS: commTimesToProto(&b.Exposed), HiddenCommS: commTimesToProto(&b.Hidden)}
	m := r.Memory
	out := &pb.StepEstimate{
		StepTimeS: r.StepTime, Breakdown: bd,
		Memory: &pb.Memory{WeightsGb: m.Weights, GradientsGb: m.Gradients, OptimizerGb: m.Optimizer, GatheredWeightsGb: m.Gathered,
			Fp8WeightCopiesGb: m.FP8Weights, ActivationsGb: m.Activations, EmbeddingsLogitsGb: m.Logits, CommBuffersGb: m.Buffers, RuntimeReserveGb: m.Reserve,
			TotalGb: m.Total, CapacityGb: m.Capacity, HeadroomGb: m.Headroom, Fits: m.Fits, Stage: int32(m.Stage), InFlightMicroBatches: m.InFlight,
			HostGb: m.Host, HostCapacityGb: m.HostCapacity},
		Throughput: &pb.Throughput{TokensPerS: r.Throughput.TokensPerSec, TokensPerSPerGpu: r.Throughput.TokensPerSecPerGPU,
			Mfu: r.Throughput.MFU, Hfu: r.Throughput.HFU},
		Gpus: int32(r.GPUs), MicroBatches: int32(r.MicroBatches), StageLayers: int32(r.StageLayers),
		Warnings: slices.Clone(r.Warnings), Assumptions: slices.Clone(r.Assumptions),
		Layout: LayoutToProto(r.Layout), Training: TrainingToProto(r.Training),
	}
	for _, c := range r.Comms {
		out.Communication = append(out.Communication, &pb.CommCall{Kind: c.KindName, Collective: c.Op, GroupSize: int32(c.Group),
			GroupNodes: int32(c.Nodes), ConcurrentGroups: int32(c.Concurrent), Bytes: c.Bytes, Algorithm: c.Algorithm,
			Protocol: c.Protocol, TimeUs: c.TimeUs, CallsPerStep: c.PerStep, When: c.When})
	}
	return out
}

// commTimesToProto names each kind of communication. A message rather than a map:
// fixed fields are smaller and several times cheaper to (un)marshal, and a client
// sees every kind, zero or not.
func commTimesToProto(t *[step.NumComms]float64) *pb.CommTimes {
	return &pb.CommTimes{Tp: t[step.CommTP], Cp: t[step.CommCP], Ep: t[step.CommEP], Pp: t[step.CommPP],
		Dp: t[step.CommDP], Zero3: t[step.CommZeRO3], Embedding: t[step.CommEmbed]}
}

func PlanToProto(p planner.Plan) *pb.Plan {
	pl := &pb.Placement{WholeNodes: int32(p.Placement.WholeNodes), PartialNodes: int32(p.Placement.PartialNodes),
		FreeWholeNodesLeft: int32(p.Placement.FreeWholeNodes), Leaves: int32(p.Placement.Leaves)}
	for _, u := range p.Placement.Nodes {
		pl.Nodes = append(pl.Nodes, &pb.NodeUse{Node: int32(u.Node), Gpus: ToInt32s(u.GPUs)})
	}
	pl.DegradedNodesUsed, pl.DegradedNodesAvoided = ToInt32s(p.Placement.DegradedUsed), ToInt32s(p.Placement.DegradedAvoided)
	return &pb.Plan{Rank: int32(p.Rank), Gpus: int32(p.GPUs), Layout: LayoutToProto(p.Layout), Placement: pl,
		Estimate: StepToProto(p.Estimate), Score: p.Score, CostUsd: p.CostUSD, Dominated: p.Dominated}
}

// ---- collectives ----

var CollectiveOps = map[pb.Collective]collective.Op{
	pb.Collective_COLLECTIVE_ALL_REDUCE: collective.AllReduce, pb.Collective_COLLECTIVE_ALL_GATHER: collective.AllGather,
	pb.Collective_COLLECTIVE_REDUCE_SCATTER: collective.ReduceScatter, pb.Collective_COLLECTIVE_ALL_TO_ALL: collective.AllToAll,
	pb.Collective_COLLECTIVE_BROADCAST: collective.Broadcast, pb.Collective_COLLECTIVE_REDUCE: collective.Reduce,
	pb.Collective_COLLECTIVE_SEND_RECV: collective.SendRecv,
}

var Algorithms = map[pb.Algorithm]collective.Algorithm{
	pb.Algorithm_ALGORITHM_UNSPECIFIED: collective.Auto, pb.Algorithm_ALGORITHM_RING: collective.Ring,
	pb.Algorithm_ALGORITHM_TREE: collective.Tree, pb.Algorithm_ALGORITHM_DOUBLE_TREE: collective.DoubleTree,
	pb.Algorithm_ALGORITHM_HIERARCHICAL: collective.Hierarchical, pb.Algorithm_ALGORITHM_NVLS: collective.NVLS,
	pb.Algorithm_ALGORITHM_DIRECT: collective.Direct, pb.Algorithm_ALGORITHM_PAT: collective.PAT,
	pb.Algorithm_ALGORITHM_PAIRWISE: collective.Pairwise, pb.Algorithm_ALGORITHM_NVLS_TREE: collective.NVLSTree,
}

var Protocols = map[pb.Protocol]collective.Protocol{
	pb.Protocol_PROTOCOL_SIMPLE: collective.Simple, pb.Protocol_PROTOCOL_LL128: collective.LL128, pb.Protocol_PROTOCOL_LL: collective.LL,
}

var Launches = map[pb.Launch]collective.Launch{
	pb.Launch_LAUNCH_UNSPECIFIED: collective.PerProcess, pb.Launch_LAUNCH_PER_PROCESS: collective.PerProcess,
	pb.Launch_LAUNCH_SINGLE_PROCESS: collective.SingleProcess, pb.Launch_LAUNCH_EAGER: collective.Eager,
	pb.Launch_LAUNCH_GRAPH: collective.Graph,
}

func AlgorithmToProto(a collective.Algorithm) pb.Algorithm {
	for k, v := range Algorithms {
		if v == a && k != pb.Algorithm_ALGORITHM_UNSPECIFIED {
			return k
		}
	}
	return pb.Algorithm_ALGORITHM_UNSPECIFIED
}

func ProtocolToProto(p collective.Protocol) pb.Protocol {
	for k, v := range Protocols {
		if v == p {
			return k
		}
	}
	return pb.Protocol_PROTOCOL_UNSPECIFIED
}

func CollectiveEstimateToProto(e collective.Estimate) *pb.CollectiveEstimate {
	return &pb.CollectiveEstimate{Algorithm: AlgorithmToProto(e.Algo), Protocol: ProtocolToProto(e.Protocol), TimeUs: e.TimeUs,
		LatencyUs: e.LatencyUs, AlgbwGbps: e.AlgBWGBps, BusbwGbps: e.BusBWGBps, Steps: int32(e.Steps), Channels: int32(e.Channels),
		Chunks: int32(e.Chunks), AutoCandidate: collective.AutoChoice(e.Op, e.Algo)}
}

var transferKinds = map[collective.Kind]pb.TransferKind{
	collective.Copy: pb.TransferKind_TRANSFER_KIND_COPY, collective.Add: pb.TransferKind_TRANSFER_KIND_ADD,
	collective.SwitchReduce: pb.TransferKind_TRANSFER_KIND_SWITCH_REDUCE, collective.Multicast: pb.TransferKind_TRANSFER_KIND_MULTICAST,
}

// ReplayToProto converts a verified, priced schedule.
func ReplayToProto(r *collective.Replay) *pb.CollectiveSchedule {
	v := r.Verification
	out := &pb.CollectiveSchedule{Algorithm: AlgorithmToProto(r.Algo), Protocol: ProtocolToProto(r.Protocol),
		Channels: int32(r.Channels), Chunks: int32(r.Chunks), Steps: int32(r.Steps), Transfers: int64(r.Transfers),
		TimeUs: r.TimeUs, LatencyUs: r.LatencyUs, AnalyticalTimeUs: r.Analytical.TimeUs, DifferencePct: r.DifferencePct,
		Difference: r.Difference, OmittedRows: int32(r.OmittedRows),
		Verification: &pb.ScheduleVerification{Verified: v.Verified, Result: v.Result, Error: v.Error, Elements: v.Elems, Scaled: v.Scaled}}
	for _, row := range r.Rows {
		pr := &pb.ScheduleRow{FirstStep: int32(row.First), StepCount: int32(row.Count), Phase: row.Phase, TimeUs: row.TimeUs,
			LatencyUs: row.LatencyUs, MaxStepTimeUs: row.MaxStepUs, Bottleneck: row.Bottleneck,
			BottleneckBytes: row.BottleneckBytes, BottleneckGbps: row.BottleneckGBps}
		for _, f := range row.Flows {
			pf := &pb.ScheduleFlow{Kind: transferKinds[f.Kind], Route: f.Route, Pairs: int32(f.Pairs),
				MinBytes: f.MinBytes, MaxBytes: f.MaxBytes, Bytes: f.Bytes}
			for _, e := range f.Examples {
				pf.Examples = append(pf.Examples, &pb.RankPair{Src: e[0], Dst: e[1]})
			}
			pr.Flows = append(pr.Flows, pf)
		}
		out.Rows = append(out.Rows, pr)
	}
	return out
}

// ---- planner ----

var Objectives = map[pb.Objective]planner.Objective{
	pb.Objective_OBJECTIVE_UNSPECIFIED: planner.FastestStep, pb.Objective_OBJECTIVE_STEP_TIME: planner.FastestStep,
	pb.Objective_OBJECTIVE_THROUGHPUT: planner.Throughput, pb.Objective_OBJECTIVE_COST: planner.Cost,
}

// ConstraintsToProto is ConstraintsFromProto's inverse.
func ConstraintsToProto(c planner.Constraints) *pb.Constraints {
	out := &pb.Constraints{Tp: ToInt32s(c.TP), Pp: ToInt32s(c.PP), Cp: ToInt32s(c.CP), Ep: ToInt32s(c.EP), Zero: ToInt32s(c.ZeRO),
		MicroBatch: ToInt32s(c.MicroBatch), VirtualStages: ToInt32s(c.VirtualStages), Sp: slices.Clone(c.SP), OverlapTp: slices.Clone(c.OverlapTP), OverlapEp: slices.Clone(c.OverlapEP), CpAllToAll: slices.Clone(c.CPAllToAll),
		TpAcrossNodes: c.TPAcrossNodes, UnevenPp: c.UnevenPP, MinHeadroomGb: c.MinHeadroomGB, MaxMicroBatch: int32(c.MaxMicroBatch),
		Offload: string(c.Offload), Fp8Params: slices.Clone(c.FP8Params), OffloadActivations: slices.Clone(c.OffloadActivations),
		ExpertsWhole: slices.Clone(c.ExpertsWhole), EvenSplit: c.EvenSplit}
	for _, r := range c.Recompute {
		out.Recompute = append(out.Recompute, LayoutToProto(step.Layout{Recompute: r}).GetRecompute())
	}
	for _, s := range c.Schedules {
		out.Schedules = append(out.Schedules, LayoutToProto(step.Layout{Schedule: s}).GetSchedule())
	}
	return out
}

func ConstraintsFromProto(c *pb.Constraints) (planner.Constraints, error) {
	out := planner.Constraints{TP: ToInts(c.GetTp()), PP: ToInts(c.GetPp()), CP: ToInts(c.GetCp()), EP: ToInts(c.GetEp()),
		ZeRO: ToInts(c.GetZero()), MicroBatch: ToInts(c.GetMicroBatch()), VirtualStages: ToInts(c.GetVirtualStages()),
		SP: slices.Clone(c.GetSp()), OverlapTP: slices.Clone(c.GetOverlapTp()), OverlapEP: slices.Clone(c.GetOverlapEp()), CPAllToAll: slices.Clone(c.GetCpAllToAll()), TPAcrossNodes: c.GetTpAcrossNodes(), UnevenPP: c.GetUnevenPp(),
		MinHeadroomGB: c.GetMinHeadroomGb(), MaxMicroBatch: int(c.GetMaxMicroBatch()), Offload: step.Offload(c.GetOffload()),
		FP8Params: slices.Clone(c.GetFp8Params()), OffloadActivations: slices.Clone(c.GetOffloadActivations()),
		ExpertsWhole: slices.Clone(c.GetExpertsWhole()), EvenSplit: c.GetEvenSplit()}
	for i, r := range c.GetRecompute() {
		v, err := fromProto(fmt.Sprintf("constraints.recompute[%d]", i), r, recomputes)
		if err != nil || v == "" {
			return out, invalid.Field(fmt.Sprintf("constraints.recompute[%d]", i), "must be %s (got %s)", enumValues(r, recomputes), enumGot(r))
		}
		out.Recompute = append(out.Recompute, v)
	}
	for i, s := range c.GetSchedules() {
		v, err := fromProto(fmt.Sprintf("constraints.schedules[%d]", i), s, schedules)
		if err != nil || v == "" {
			return out, invalid.Field(fmt.Sprintf("constraints.schedules[%d]", i), "must be %s (got %s)", enumValues(s, schedules), enumGot(s))
		}
		out.Schedules = append(out.Schedules, v)
	}
	return out, nil
}

// ---- catalog ----

// Catalog is the embedded catalog: GPUs, systems and models.
func Catalog() *pb.ListCatalogResponse {
	out := &pb.ListCatalogResponse{}
	for _, g := range catalog.GPUs() {
		out.Gpus = append(out.Gpus, GPUToProto(g))
	}
	for _, sp := range catalog.Systems() {
		out.Systems = append(out.Systems, &pb.SystemEntry{Name: sp.Name, Description: sp.Description, Source: sp.Source, Definition: SpecToDefinition(sp)})
	}
	for _, a := range model.Catalog() {
		out.Models = append(out.Models, ArchToProto(a))
	}
	return out
}

// DegradedNodesFromProto converts a request's degraded nodes (checked by
// CheckDegradedNodes and the planner); nil for none.
func DegradedNodesFromProto(ds []*pb.DegradedNode) []planner.DegradedNode {
	if len(ds) == 0 {
		return nil
	}
	out := make([]planner.DegradedNode, len(ds))
	for i, d := range ds {
		out[i] = planner.DegradedNode{Node: int(d.GetNode()), GPUSpeed: d.GetGpuSpeed(), NICSpeed: d.GetNicSpeed(), LinkSpeed: d.GetLinkSpeed()}
	}
	return out
}

// DegradedNodesToProto converts degraded nodes to the request's form; nil for none.
func DegradedNodesToProto(ds []planner.DegradedNode) []*pb.DegradedNode {
	if len(ds) == 0 {
		return nil
	}
	out := make([]*pb.DegradedNode, len(ds))
	for i, d := range ds {
		out[i] = &pb.DegradedNode{Node: int32(d.Node), GpuSpeed: d.GPUSpeed, NicSpeed: d.NICSpeed, LinkSpeed: d.LinkSpeed}
	}
	return out
}
