package service

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The nodes a scheduler lists (exclude_nodes, degraded_nodes) are sets: the same
// nodes in another order are the same question, so they get the same answer —
// the plans' notes name the degraded nodes in node order — and the same cache key.
func TestNodeListsInAnyOrderAreOneQuestion(t *testing.T) {
	req := func(exclude []int32, degraded ...*pb.DegradedNode) *pb.EstimatePlanRequest {
		r := plannerRequest()
		r.Cluster.Nodes, r.Gpus, r.Training.GlobalBatch = 5, 16, 32
		r.ExcludeNodes, r.DegradedNodes = exclude, degraded
		return r
	}
	gpu := &pb.DegradedNode{Node: 0, GpuSpeed: 0.5}
	nic := &pb.DegradedNode{Node: 1, NicSpeed: 0.5}
	a := req([]int32{2, 4, 3}, gpu, nic)
	b := req([]int32{4, 3, 2}, nic, gpu)
	s := New(Options{})
	ka, err := keyOf(s, "EstimatePlan", a)
	if err != nil {
		t.Fatal(err)
	}
	if kb, _ := keyOf(s, "EstimatePlan", b); kb != ka {
		t.Error("the same nodes in another order have another cache key")
	}
	answer := func(r *pb.EstimatePlanRequest) *pb.EstimatePlanResponse {
		resp, err := s.EstimatePlan(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Stats.ElapsedMs = 0
		return resp
	}
	ra, rb := answer(a), answer(b)
	if len(ra.GetPlans()) == 0 || len(ra.GetPlans()[0].GetPlacement().GetDegradedNodesUsed()) != 2 {
		t.Fatalf("the test means both degraded nodes to be used: %v", ra.GetPlans())
	}
	if !proto.Equal(ra, rb) {
		for i := range ra.GetPlans() {
			if x, y := ra.Plans[i].GetEstimate().GetAssumptions(), rb.Plans[i].GetEstimate().GetAssumptions(); !proto.Equal(ra.Plans[i], rb.Plans[i]) {
				t.Errorf("plan %d differs with the nodes' order:\n%q\n%q", i+1, x[len(x)-1], y[len(y)-1])
			}
		}
		t.Error("the same nodes in another order get another answer")
	}
}

// gpus is the job size; min_gpus and max_gpus a range of sizes "instead of gpus".
// Given with gpus, the range was ignored without a word (max_gpus only sized the
// cluster): the request is refused, naming the field.
func TestPlanRefusesGPUsWithARange(t *testing.T) {
	s := New(Options{})
	for field, set := range map[string]func(*pb.EstimatePlanRequest){
		"max_gpus": func(r *pb.EstimatePlanRequest) { r.MaxGpus = 64 },
		"min_gpus": func(r *pb.EstimatePlanRequest) { r.MinGpus = 8 },
	} {
		r := plannerRequest()
		set(r)
		_, err := s.EstimatePlan(context.Background(), r)
		if codeOf(err) != InvalidArgument || !strings.Contains(err.Error(), field) {
			t.Errorf("gpus %d with %s: got %v, want INVALID_ARGUMENT naming %s", r.Gpus, field, err, field)
		}
	}
}

// A definition over a catalog base cannot turn the base's nvls, rail_optimized or
// simple_protocol_only off: proto3 bools have no presence, so false is the same
// as not sent and the base's true stays. The answer says so, naming the field,
// whenever the definition gives the message holding it without setting it.
func TestBaseBoolsThatCannotBeTurnedOffAreNamed(t *testing.T) {
	c, err := cache.New(cache.Config{MaxCost: 64 << 20}, func(m proto.Message) int64 { return int64(proto.Size(m)) + 64 })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// With a cache: a cluster by name and the same spec as a definition over it
	// share the answer's key, not its warnings.
	s := New(Options{Cache: c})
	def := func(d *pb.ClusterDefinition) *pb.ClusterSpec {
		return &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: d}}
	}
	stepReq := func(c *pb.ClusterSpec) *pb.EstimateStepRequest {
		return &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}}, Cluster: c,
			Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1}}
	}
	warned := func(ws []string, field string) bool {
		for _, w := range ws {
			if strings.Contains(w, field) {
				return true
			}
		}
		return false
	}
	byName := func() []string {
		resp, err := s.EstimateStep(context.Background(), stepReq(&pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetEstimate().GetWarnings()
	}
	before := byName()
	for _, tc := range []struct {
		name   string
		d      *pb.ClusterDefinition
		fields []string // warned of
	}{
		{"nvls and rails of dgx-h100", &pb.ClusterDefinition{Base: "dgx-h100", Intra: &pb.IntraNode{}, Network: &pb.Network{Oversubscription: 2}},
			[]string{"cluster.definition.intra.nvls", "cluster.definition.network.rail_optimized"}},
		{"the simple protocol of aws-p4d", &pb.ClusterDefinition{Base: "aws-p4d", Nics: &pb.NICs{Efficiency: 0.8}},
			[]string{"cluster.definition.nics.simple_protocol_only"}},
		{"not given: nothing to say", &pb.ClusterDefinition{Base: "dgx-h100", Nics: &pb.NICs{Efficiency: 0.8}}, nil},
		{"set on: nothing to say", &pb.ClusterDefinition{Base: "dgx-h100", Intra: &pb.IntraNode{Nvls: true}}, nil},
		{"off in the base: nothing to say", &pb.ClusterDefinition{Base: "dgx-a100", Intra: &pb.IntraNode{}}, nil},
	} {
		resp, err := s.EstimateStep(context.Background(), stepReq(def(tc.d)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ws := resp.GetEstimate().GetWarnings()
		for _, f := range []string{"intra.nvls", "nics.simple_protocol_only", "network.rail_optimized"} {
			want := slices.Contains(tc.fields, "cluster.definition."+f)
			if got := warned(ws, "cluster.definition."+f); got != want {
				t.Errorf("%s: warned of %s %v, want %v: %q", tc.name, f, got, want, ws)
			}
		}
		plan := plannerRequest()
		plan.Cluster = def(tc.d)
		pr, err := s.EstimatePlan(context.Background(), plan)
		if err != nil || len(pr.GetPlans()) == 0 {
			t.Fatalf("%s: plan: %v", tc.name, err)
		}
		for _, f := range tc.fields {
			for _, p := range pr.GetPlans() {
				if !warned(p.GetEstimate().GetWarnings(), f) {
					t.Errorf("%s: a plan does not warn of %s: %q", tc.name, f, p.GetEstimate().GetWarnings())
				}
			}
		}
	}
	// A collective too: NVLS kept on changes its algorithms most of all.
	coll, err := s.SimulateCollective(context.Background(), &pb.SimulateCollectiveRequest{
		Cluster: def(&pb.ClusterDefinition{Base: "dgx-h100", Intra: &pb.IntraNode{}}), Nodes: 1, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if !warned(coll.GetWarnings(), "cluster.definition.intra.nvls") {
		t.Errorf("SimulateCollective: not warned of intra.nvls: %q", coll.GetWarnings())
	}
	if after := byName(); !slices.Equal(after, before) {
		t.Errorf("dgx-h100 by name warns %q after the definitions over it, %q before", after, before)
	}
}

// A training field that cannot change the answer — a MoE setting for a dense
// model, a ZeRO-3 setting for a layout without ZeRO-3, the NCCL thread blocks of
// a parallelism the layout does not use — was accepted and echoed back as if it
// had counted. The answer warns, naming the field; a field that counts does not.
func TestFieldsWithoutEffectAreNamed(t *testing.T) {
	s := New(Options{})
	layout := func() *pb.Layout { return &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1, Zero: 1} }
	for _, tc := range []struct {
		field string // warned of; "" none
		tr    func(*pb.Training)
		l     func(*pb.Layout)
	}{
		{"training.moe_imbalance", func(tr *pb.Training) { tr.MoeImbalance = 1.5 }, nil},
		{"training.moe_capacity_factor", func(tr *pb.Training) { tr.MoeCapacityFactor = 1.25 }, nil},
		{"training.moe_dispatcher", func(tr *pb.Training) { tr.MoeDispatcher = "deepep" }, nil},
		{"training.moe_permute_fusion", func(tr *pb.Training) { tr.MoePermuteFusion = true }, nil},
		{"training.moe_router_fp32", func(tr *pb.Training) { tr.MoeRouterFp32 = true }, nil},
		{"training.moe_grouped_gemm", func(tr *pb.Training) { tr.MoeGroupedGemm = true }, nil},
		{"training.zero3_on_demand_gathers", func(tr *pb.Training) { tr.Zero3OnDemandGathers = true }, nil},
		{"training.zero3_backward_prefetch", func(tr *pb.Training) { tr.Zero3BackwardPrefetch = pb.BackwardPrefetch_BACKWARD_PREFETCH_POST }, nil},
		{"training.cp_nccl_max_ctas", func(tr *pb.Training) { tr.CpNcclMaxCtas = 4 }, nil},
		{"training.tp_nccl_max_ctas", func(tr *pb.Training) { tr.TpNcclMaxCtas = 4 }, func(l *pb.Layout) { l.Tp, l.Dp = 1, 16 }},
		{"", func(tr *pb.Training) { tr.Zero3BackwardPrefetch = pb.BackwardPrefetch_BACKWARD_PREFETCH_POST }, func(l *pb.Layout) { l.Zero = 3 }},
		{"", func(tr *pb.Training) { tr.TpNcclMaxCtas = 4 }, nil},
		{"", func(tr *pb.Training) { tr.DpBucketParams = 1e8 }, nil},
		{"training.cuda_device_max_connections", func(tr *pb.Training) { tr.CudaDeviceMaxConnections = 1 }, nil},
	} {
		r := &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
			Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: layout()}
		tc.tr(r.Training)
		if tc.l != nil {
			tc.l(r.Layout)
		}
		resp, err := s.EstimateStep(context.Background(), r)
		if err != nil {
			t.Fatalf("%s: %v", tc.field, err)
		}
		ws := resp.GetEstimate().GetWarnings()
		if tc.field == "" {
			if len(ws) > 0 {
				t.Errorf("%v: warns %q", r.Training, ws)
			}
			continue
		}
		if !slices.ContainsFunc(ws, func(w string) bool { return strings.HasPrefix(w, tc.field+": ") }) {
			t.Errorf("%s: not warned of: %q", tc.field, ws)
		}
	}
	// A search: the MoE settings of a dense model (its layouts vary, the model not).
	plan := plannerRequest()
	plan.Training.MoeImbalance = 1.5
	resp, err := s.EstimatePlan(context.Background(), plan)
	if err != nil || len(resp.GetPlans()) == 0 {
		t.Fatalf("plan: %v", err)
	}
	for _, p := range resp.GetPlans() {
		if !slices.ContainsFunc(p.GetEstimate().GetWarnings(), func(w string) bool { return strings.HasPrefix(w, "training.moe_imbalance: ") }) {
			t.Errorf("plan %d: not warned of training.moe_imbalance: %q", p.GetRank(), p.GetEstimate().GetWarnings())
		}
	}
}

// cluster.nodes is the cluster's size as the caller knows it: a job (or a free
// map) larger than it was run on a cluster grown to fit, without a word, where
// the command line's --nodes refuses it. Refused, naming the field.
func TestClusterNodesAreNotGrown(t *testing.T) {
	s := New(Options{})
	plan := plannerRequest() // 32 GPUs
	plan.Cluster.Nodes = 2
	if _, err := s.EstimatePlan(context.Background(), plan); codeOf(err) != InvalidArgument || !strings.Contains(err.Error(), "cluster.nodes") {
		t.Errorf("32 GPUs on 2 nodes of 8: got %v", err)
	}
	free := plannerRequest()
	free.Cluster.Nodes, free.Gpus = 4, 8
	free.Cluster.FreeGpus = []*pb.NodeFreeGPUs{{Node: 6, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}}}
	if _, err := s.EstimatePlan(context.Background(), free); codeOf(err) != InvalidArgument || !strings.Contains(err.Error(), "cluster.free_gpus") {
		t.Errorf("free GPUs on node 6 of 4: got %v", err)
	}
	step := &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 1},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1}}
	if _, err := s.EstimateStep(context.Background(), step); codeOf(err) != InvalidArgument || !strings.Contains(err.Error(), "cluster.nodes") {
		t.Errorf("16 GPUs on 1 node of 8: got %v", err)
	}
	coll := &pb.SimulateCollectiveRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 2},
		Nodes: 4, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 20}
	if _, err := s.SimulateCollective(context.Background(), coll); codeOf(err) != InvalidArgument || !strings.Contains(err.Error(), "cluster.nodes") {
		t.Errorf("4 nodes of a 2-node cluster: got %v", err)
	}
	// Unset, the cluster is sized for the job, as documented.
	plan.Cluster.Nodes = 0
	if _, err := s.EstimatePlan(context.Background(), plan); err != nil {
		t.Errorf("nodes unset: %v", err)
	}
}

// placement_tolerance chooses between placements on a partly free cluster;
// without a free map, excluded or degraded nodes each job size has one placement
// and it changes nothing: the plans say so, naming it.
func TestPlacementToleranceWithoutAFreeMapIsNamed(t *testing.T) {
	s := New(Options{})
	warned := func(r *pb.EstimatePlanRequest) bool {
		resp, err := s.EstimatePlan(context.Background(), r)
		if err != nil || len(resp.GetPlans()) == 0 {
			t.Fatalf("%v", err)
		}
		return slices.ContainsFunc(resp.GetPlans()[0].GetEstimate().GetWarnings(), func(w string) bool { return strings.HasPrefix(w, "placement_tolerance: ") })
	}
	r := plannerRequest()
	r.PlacementTolerance = new(0.5)
	if !warned(r) {
		t.Error("placement_tolerance without a free map: no warning")
	}
	r.Cluster.Nodes = 6
	r.Cluster.FreeGpus = []*pb.NodeFreeGPUs{{Node: 0, Gpus: []int32{0, 1, 2, 3}}, {Node: 1, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}},
		{Node: 2, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}}, {Node: 3, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}}, {Node: 5, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}}}
	if warned(r) {
		t.Error("placement_tolerance with a free map: warned")
	}
	r.Cluster.FreeGpus, r.ExcludeNodes = nil, []int32{5}
	if warned(r) {
		t.Error("placement_tolerance with an excluded node: warned")
	}
}

// peak_tflops keys are read in any case ("BF16" is bf16): two keys naming one
// type kept whichever the map's iteration met last, so one request got either
// answer from call to call. Refused, naming the field.
func TestPeakKeysNamingOneTypeAreRefused(t *testing.T) {
	s := New(Options{})
	gpu := &pb.GPU{Name: "x", Arch: "hopper", PeakTflops: map[string]float64{"BF16": 1000, "bf16": 2000},
		MemoryGb: 80, MemoryBandwidthGbps: 3000, NvlinkGbps: 450}
	r := &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: &pb.ClusterDefinition{Base: "dgx-h100", Gpu: gpu}}},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1}}
	for range 8 {
		_, err := s.EstimateStep(context.Background(), r)
		if codeOf(err) != InvalidArgument || !strings.Contains(err.Error(), "cluster.definition.gpu.peak_tflops") {
			t.Fatalf("BF16 and bf16: got %v", err)
		}
	}
}

// A parameter count out of range named its field twice ("model.params: params:
// must be …").
func TestParamsOutOfRangeNamedOnce(t *testing.T) {
	r := &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Params{Params: -1}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1}}
	_, err := New(Options{}).EstimateStep(context.Background(), r)
	if codeOf(err) != InvalidArgument || !strings.HasPrefix(err.Error(), "model.params: must be") {
		t.Errorf("params -1: got %v", err)
	}
}
