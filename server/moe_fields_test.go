package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// qwen3EP32 is Qwen3-235B-A22B with TP 2, PP 8 and EP 32 on 256 H100s (DP 16):
// Megatron-Core folds the expert groups over the TP × DP ranks of a stage, so EP
// exceeds DP, each expert whole on its rank (expert TP 1).
func qwen3EP32() *pb.EstimateStepRequest {
	return &pb.EstimateStepRequest{
		Model:    &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "qwen3-235b-a22b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 1024, NoDropout: true},
		Layout:   &pb.Layout{Tp: 2, Pp: 8, Dp: 16, Ep: 32, Etp: 1, Sp: true, MicroBatch: 1, Zero: 1},
	}
}

// deepSeekV3AsRun is DeepSeek-V3's pre-training layout as its report describes it
// (arXiv:2412.19437 §3.2–3.3, §4.2): 2048 H800s, PP 16 with DualPipe, EP 64 over
// 8 nodes, ZeRO-1, no TP, sequences of 4096, a batch of 15360, fp8 with
// fp8-cached activations, recomputation of the norms, MLA's up-projections and
// the SwiGLU output, BF16 AdamW moments with fp32 master weights and gradients,
// the embedding and output layer each on a stage of 3 layers.
func deepSeekV3AsRun() *pb.EstimateStepRequest {
	split := []int32{3}
	for range 13 {
		split = append(split, 4)
	}
	split = append(split, 3, 3)
	return &pb.EstimateStepRequest{
		Model:   &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "deepseek-v3"}},
		Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "hgx-h800"}},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 15360, Precision: pb.Precision_PRECISION_FP8, Framework: "hai-llm", NoDropout: true,
			Optimizer: &pb.Optimizer{Name: "adamw-bf16-moments", WeightBytes: 2, GradBytes: 4, StateBytes: 8}},
		Layout: &pb.Layout{Pp: 16, Dp: 128, Ep: 64, Zero: 1, MicroBatch: 1, Recompute: pb.Recompute_RECOMPUTE_SELECTIVE,
			RecomputeModules: []string{"layernorm", "mla_up_proj", "moe_act"}, Schedule: pb.Schedule_SCHEDULE_DUALPIPE, LayerSplit: split},
	}
}

// The published MoE layouts are accepted over gRPC and REST alike, with the same
// answer, and their MoE inputs come back in the estimate.
func TestPublishedMoELayouts(t *testing.T) {
	d, c := startServing(t)
	for name, req := range map[string]*pb.EstimateStepRequest{"qwen3-235b-a22b ep 32 > dp 16": qwen3EP32(), "deepseek-v3 as run": deepSeekV3AsRun()} {
		t.Run(name, func(t *testing.T) {
			g, err := c.EstimateStep(context.Background(), req)
			if err != nil {
				t.Fatalf("gRPC: %v", err)
			}
			body, err := protojson.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			resp, raw := post(t, "http://"+d.httpAddr+"/v1/steps:estimate", string(body))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("REST: %d %s", resp.StatusCode, raw)
			}
			var r pb.EstimateStepResponse
			if err := protojson.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			ge, re := g.GetEstimate(), r.GetEstimate()
			if ge.GetStepTimeS() != re.GetStepTimeS() || ge.GetMemory().GetTotalGb() != re.GetMemory().GetTotalGb() {
				t.Errorf("gRPC %v s, %v GB; REST %v s, %v GB", ge.GetStepTimeS(), ge.GetMemory().GetTotalGb(), re.GetStepTimeS(), re.GetMemory().GetTotalGb())
			}
			l := re.GetLayout()
			if l.GetEp() != req.GetLayout().GetEp() || l.GetEtp() != req.GetLayout().GetEtp() ||
				strings.Join(l.GetRecomputeModules(), ",") != strings.Join(req.GetLayout().GetRecomputeModules(), ",") || !re.GetTraining().GetNoDropout() {
				t.Errorf("layout came back as %v, training %v", l, re.GetTraining())
			}
			if !re.GetMemory().GetFits() {
				t.Errorf("the published layout ran, but needs %.1f GB of %.1f", re.GetMemory().GetTotalGb(), re.GetMemory().GetCapacityGb())
			}
			t.Logf("%.2f s, MFU %.1f%%, %.1f of %.1f GB", re.GetStepTimeS(), 100*re.GetThroughput().GetMfu(), re.GetMemory().GetTotalGb(), re.GetMemory().GetCapacityGb())
		})
	}
	// DeepSeek-V3's framework fills the dispatcher, the permutation and the fp8
	// activations; the answer says so.
	g, err := c.EstimateStep(context.Background(), deepSeekV3AsRun())
	if err != nil {
		t.Fatal(err)
	}
	if tr := g.GetEstimate().GetTraining(); tr.GetMoeDispatcher() != "deepep" || !tr.GetMoePermuteFusion() || !tr.GetFp8Activations() {
		t.Errorf("hai-llm's settings: dispatcher %q, permute fusion %v, fp8 activations %v", tr.GetMoeDispatcher(), tr.GetMoePermuteFusion(), tr.GetFp8Activations())
	}
}

// Each MoE, activation-storage and recompute input reaches the estimator and
// moves the estimate the way its mechanism says.
func TestMoEFieldsChangeTheEstimate(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	estimate := func(t *testing.T, r *pb.EstimateStepRequest) *pb.StepEstimate {
		t.Helper()
		resp, err := c.EstimateStep(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetEstimate()
	}
	activations := func(e *pb.StepEstimate) float64 { return e.GetMemory().GetActivationsGb() }
	exposedEP := func(e *pb.StepEstimate) float64 { return e.GetBreakdown().GetExposedCommS().GetEp() }
	epBytes := func(e *pb.StepEstimate) float64 {
		for _, x := range e.GetCommunication() {
			if x.GetKind() == "ep" {
				return x.GetBytes()
			}
		}
		return 0
	}
	step := func(e *pb.StepEstimate) float64 { return e.GetStepTimeS() }
	// deepseek-v3 spelled out, to change its architecture.
	dsArch := func(edit func(*pb.Architecture)) func(*pb.EstimateStepRequest) {
		return func(r *pb.EstimateStepRequest) {
			a := proto.Clone(archOf(t, c, "deepseek-v3")).(*pb.Architecture)
			edit(a)
			r.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Architecture{Architecture: a}}
		}
	}
	// megatron: the layout under megatron-core in bf16; DeepSeek-V3's DualPipe
	// becomes 1F1B, which Megatron-Core runs (it runs no DualPipe).
	megatron := func(r *pb.EstimateStepRequest) {
		r.Training.Framework = "megatron-core"
		r.Training.Precision = pb.Precision_PRECISION_BF16
		if r.Layout.Schedule == pb.Schedule_SCHEDULE_DUALPIPE {
			r.Layout.Schedule = pb.Schedule_SCHEDULE_1F1B
		}
	}
	for _, tc := range []struct {
		name     string
		base     func() *pb.EstimateStepRequest
		before   func(*pb.EstimateStepRequest) // applied to both
		edit     func(*pb.EstimateStepRequest)
		measure  func(*pb.StepEstimate) float64
		increase bool
	}{
		{"no_dropout saves the masks", qwen3EP32, func(r *pb.EstimateStepRequest) { r.Training.NoDropout = false },
			func(r *pb.EstimateStepRequest) { r.Training.NoDropout = true }, activations, false},
		{"fp8_activations", qwen3EP32, func(r *pb.EstimateStepRequest) { r.Training.Precision = pb.Precision_PRECISION_FP8 },
			func(r *pb.EstimateStepRequest) { r.Training.Fp8Activations = true }, activations, false},
		{"recompute_modules", qwen3EP32, func(r *pb.EstimateStepRequest) { r.Layout.Recompute = pb.Recompute_RECOMPUTE_SELECTIVE },
			func(r *pb.EstimateStepRequest) { r.Layout.RecomputeModules = []string{"moe_act", "layernorm"} }, activations, false},
		{"recompute module moe dispatches again", qwen3EP32, func(r *pb.EstimateStepRequest) { r.Layout.Recompute = pb.Recompute_RECOMPUTE_SELECTIVE },
			func(r *pb.EstimateStepRequest) { r.Layout.RecomputeModules = []string{"moe"} }, exposedEP, true},
		{"moe_pad_to_capacity", qwen3EP32, func(r *pb.EstimateStepRequest) { r.Training.MoeCapacityFactor = 1.5 },
			func(r *pb.EstimateStepRequest) { r.Training.MoePadToCapacity = true }, step, true},
		{"moe_permute_fusion", qwen3EP32, nil,
			func(r *pb.EstimateStepRequest) { r.Training.MoePermuteFusion = true }, step, false},
		// Megatron-Core 0.12's TEGroupedMLP copies the experts' tokens through
		// Transformer Engine's fp8 padding and unpadding.
		{"moe_grouped_gemm under fp8 on nemo-25.04", qwen3EP32, func(r *pb.EstimateStepRequest) {
			r.Training.Precision, r.Training.Framework = pb.Precision_PRECISION_FP8, "nemo-25.04"
		}, func(r *pb.EstimateStepRequest) { r.Training.MoeGroupedGemm = true }, step, true},
		{"moe_dispatcher deepep sends a token once per node", deepSeekV3AsRun, megatron,
			func(r *pb.EstimateStepRequest) { r.Training.MoeDispatcher = "deepep" }, epBytes, false},
		{"moe.groups limits the nodes a token reaches", deepSeekV3AsRun, func(r *pb.EstimateStepRequest) {
			megatron(r)
			r.Training.MoeDispatcher = "deepep"
			dsArch(func(a *pb.Architecture) { a.Moe.Groups, a.Moe.TopkGroups = 0, 0 })(r)
		}, dsArch(func(a *pb.Architecture) { a.Moe.Groups, a.Moe.TopkGroups = 8, 4 }), epBytes, false},
		// Megatron-Core clamps gpt-oss's SwiGLU inputs outside its fused activation.
		{"glu_clamp", deepSeekV3AsRun, func(r *pb.EstimateStepRequest) {
			megatron(r)
			dsArch(func(a *pb.Architecture) { a.GluClamp = false })(r)
		}, dsArch(func(a *pb.Architecture) { a.GluClamp = true }), step, true},
		// Megatron-Core adds the experts' second bias outside the grouped GEMM.
		{"moe.bias", deepSeekV3AsRun, func(r *pb.EstimateStepRequest) {
			megatron(r)
			dsArch(func(a *pb.Architecture) { a.Moe.Bias = false })(r)
		}, dsArch(func(a *pb.Architecture) { a.Moe.Bias = true }), step, true},
		{"mtp_layers", deepSeekV3AsRun, dsArch(func(a *pb.Architecture) { a.MtpLayers = 0 }),
			dsArch(func(a *pb.Architecture) { a.MtpLayers = 1 }), step, true},
		{"overlap_shared_expert", deepSeekV3AsRun, func(r *pb.EstimateStepRequest) {
			megatron(r)
			r.Layout.Schedule = pb.Schedule_SCHEDULE_1F1B
			r.Layout.Recompute, r.Layout.RecomputeModules = pb.Recompute_RECOMPUTE_FULL, nil
		}, func(r *pb.EstimateStepRequest) { r.Layout.OverlapSharedExpert = true }, exposedEP, false},
		{"etp below tp gathers the dispatched tokens", func() *pb.EstimateStepRequest {
			r := qwen3EP32()
			r.Layout.Tp, r.Layout.Pp, r.Layout.Dp, r.Layout.Ep = 4, 4, 16, 16
			return r
		}, func(r *pb.EstimateStepRequest) { r.Layout.Etp = 1 }, func(r *pb.EstimateStepRequest) { r.Layout.Etp = 2 }, step, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.base(), tc.base()
			if tc.before != nil {
				tc.before(a)
				tc.before(b)
			}
			tc.edit(b)
			ea, eb := estimate(t, a), estimate(t, b)
			va, vb := tc.measure(ea), tc.measure(eb)
			if va == vb || (vb > va) != tc.increase {
				t.Errorf("%v without, %v with (want it to %s)", va, vb, map[bool]string{true: "grow", false: "shrink"}[tc.increase])
			}
		})
	}
}

// archOf is a catalog model's architecture as the service lists it.
func archOf(t *testing.T, c pb.StepcostServiceClient, name string) *pb.Architecture {
	t.Helper()
	cat, err := c.ListCatalog(context.Background(), &pb.ListCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cat.GetModels() {
		if m.GetName() == name {
			return m
		}
	}
	t.Fatalf("no %s in the catalog", name)
	return nil
}

// Bad MoE, activation-storage and recompute inputs are refused by field, over
// gRPC and with the same field over REST.
func TestMoEFieldErrors(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	bad := func(base func() *pb.EstimateStepRequest, edit func(*pb.EstimateStepRequest)) *pb.EstimateStepRequest {
		r := base()
		edit(r)
		return r
	}
	arch := func(edit func(*pb.Architecture)) func(*pb.EstimateStepRequest) {
		return func(r *pb.EstimateStepRequest) {
			a := proto.Clone(archOf(t, c, "deepseek-v3")).(*pb.Architecture)
			edit(a)
			r.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Architecture{Architecture: a}}
		}
	}
	tests := []struct {
		name  string
		req   *pb.EstimateStepRequest
		field string
	}{
		{"unknown recompute module", bad(deepSeekV3AsRun, func(r *pb.EstimateStepRequest) { r.Layout.RecomputeModules[2] = "attention" }), "layout.recompute_modules[2]"},
		{"recompute module twice", bad(deepSeekV3AsRun, func(r *pb.EstimateStepRequest) {
			r.Layout.RecomputeModules = append(r.Layout.RecomputeModules, "LayerNorm")
		}), "layout.recompute_modules[3]"},
		{"too many recompute modules", bad(deepSeekV3AsRun, func(r *pb.EstimateStepRequest) {
			r.Layout.RecomputeModules = strings.Split("a,b,c,d,e,f,g,h", ",")
		}), "layout.recompute_modules"},
		{"recompute modules without selective", bad(deepSeekV3AsRun, func(r *pb.EstimateStepRequest) { r.Layout.Recompute = pb.Recompute_RECOMPUTE_FULL }), "layout.recompute_modules"},
		{"mla_up_proj without MLA", bad(qwen3EP32, func(r *pb.EstimateStepRequest) {
			r.Layout.Recompute, r.Layout.RecomputeModules = pb.Recompute_RECOMPUTE_SELECTIVE, []string{"moe_act", "mla_up_proj"}
		}), "layout.recompute_modules[1]"},
		{"unknown dispatcher", bad(qwen3EP32, func(r *pb.EstimateStepRequest) { r.Training.MoeDispatcher = "nccl" }), "training.moe_dispatcher"},
		{"padding without capacity", bad(qwen3EP32, func(r *pb.EstimateStepRequest) { r.Training.MoePadToCapacity = true }), "training.moe_pad_to_capacity"},
		{"fp8 activations in bf16", bad(qwen3EP32, func(r *pb.EstimateStepRequest) { r.Training.Fp8Activations = true }), "training.fp8_activations"},
		{"shared-expert overlap without shared experts", bad(qwen3EP32, func(r *pb.EstimateStepRequest) { r.Layout.OverlapSharedExpert = true }), "layout.overlap_shared_expert"},
		{"ep folding over more than the stage's ranks", bad(qwen3EP32, func(r *pb.EstimateStepRequest) { r.Layout.Etp = 2 }), "layout.ep"},
		{"etp above tp", bad(qwen3EP32, func(r *pb.EstimateStepRequest) { r.Layout.Etp = 4 }), "layout.etp"},
		{"groups not dividing the experts", bad(deepSeekV3AsRun, arch(func(a *pb.Architecture) { a.Moe.Groups = 7 })), "model.architecture.moe.groups"},
		{"more top groups than groups", bad(deepSeekV3AsRun, arch(func(a *pb.Architecture) { a.Moe.TopkGroups = 9 })), "model.architecture.moe.topk_groups"},
		{"mtp too deep", bad(deepSeekV3AsRun, arch(func(a *pb.Architecture) { a.MtpLayers = 9 })), "model.architecture.mtp_layers"},
		{"glu clamp without a gated mlp", bad(deepSeekV3AsRun, arch(func(a *pb.Architecture) { a.GatedMlp, a.GluClamp = false, true })), "model.architecture.glu_clamp"},
		{"unknown framework", bad(deepSeekV3AsRun, func(r *pb.EstimateStepRequest) { r.Training.Framework = "hai-llm-2" }), "training.framework"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.EstimateStep(ctx, tc.req)
			violationOf(t, err, codes.InvalidArgument, tc.field)
		})
	}
}

// The REST gateway names the same field as gRPC does, an index included.
func TestMoEFieldErrorsREST(t *testing.T) {
	d := startDaemon(t, nil)
	defer func() {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
	}()
	req := deepSeekV3AsRun()
	req.Layout.RecomputeModules[1] = "mla"
	body, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	resp, raw := post(t, "http://"+d.httpAddr+"/v1/steps:estimate", string(body))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"layout.recompute_modules[1]"`) {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	var st struct{ Message string }
	if err := json.Unmarshal(raw, &st); err != nil || !strings.Contains(st.Message, "core_attn") {
		t.Errorf("message %q (%v): should list the modules", st.Message, err)
	}
}

// docs/service.md's MoE request runs as written.
func TestServiceDocMoEExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/service.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "curl -s -X POST localhost:8080/v1/steps:estimate -d '{\"model\": {\"name\": \"qwen3-235b-a22b\"}"
	i := strings.Index(string(doc), start)
	if i < 0 {
		t.Fatal("docs/service.md lacks the Qwen3-235B-A22B example")
	}
	body, _, ok := strings.Cut(string(doc[i+len("curl -s -X POST localhost:8080/v1/steps:estimate -d '"):]), "'")
	if !ok {
		t.Fatal("the example's body does not end")
	}
	d := startDaemon(t, nil)
	defer func() {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
	}()
	resp, raw := post(t, "http://"+d.httpAddr+"/v1/steps:estimate", body)
	var r pb.EstimateStepResponse
	if resp.StatusCode != http.StatusOK || protojson.Unmarshal(raw, &r) != nil {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	if l := r.GetEstimate().GetLayout(); l.GetEp() != 32 || l.GetDp() != 16 || len(l.GetRecomputeModules()) != 2 || !r.GetEstimate().GetMemory().GetFits() {
		t.Errorf("layout %v, memory %v", l, r.GetEstimate().GetMemory())
	}
}
