package service

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// qwen3FP8NeMo2504 is Qwen3-30B-A3B on 8 H100 at EP 8 in fp8 under nemo-25.04,
// whose Megatron-Core 0.12 TEGroupedMLP copies the experts' tokens through
// Transformer Engine's fp8 padding and unpadding when the experts are grouped.
func qwen3FP8NeMo2504(grouped bool) *pb.EstimateStepRequest {
	return &pb.EstimateStepRequest{
		Model:   &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "qwen3-30b-a3b"}},
		Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64, Precision: pb.Precision_PRECISION_FP8, Framework: "nemo-25.04",
			MoePermuteFusion: true, MoeGroupedGemm: grouped},
		Layout: &pb.Layout{Tp: 1, Pp: 1, Dp: 8, Ep: 8, MicroBatch: 1, Zero: 1},
	}
}

// training.moe_grouped_gemm reaches the estimator as Training.MoEGroupedGEMM: a
// request with it set is priced as the Go request with the field set (the same
// request without it, MoEGroupedGEMM set after resolving), slower than without it
// by the padding copies, and echoed in the answer; the REST spelling
// (moe_grouped_gemm) decodes to it; it is in the cache key.
func TestMoEGroupedGEMMOverTheAPI(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	off, err := s.EstimateStep(ctx, qwen3FP8NeMo2504(false))
	if err != nil {
		t.Fatal(err)
	}
	on, err := s.EstimateStep(ctx, qwen3FP8NeMo2504(true))
	if err != nil {
		t.Fatal(err)
	}
	if off.GetEstimate().GetTraining().GetMoeGroupedGemm() || !on.GetEstimate().GetTraining().GetMoeGroupedGemm() {
		t.Errorf("moe_grouped_gemm in the answers: %v without, %v with it", off.GetEstimate().GetTraining().GetMoeGroupedGemm(),
			on.GetEstimate().GetTraining().GetMoeGroupedGemm())
	}
	if !(on.GetEstimate().GetStepTimeS() > off.GetEstimate().GetStepTimeS()) {
		t.Errorf("step %v s with grouped experts, %v s without: want slower (Transformer Engine's fp8 padding copies)",
			on.GetEstimate().GetStepTimeS(), off.GetEstimate().GetStepTimeS())
	}

	st, err := wire.ResolveStep(wire.NewClusters(4), qwen3FP8NeMo2504(false), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	goReq := st.Request()
	goReq.Training.MoEGroupedGEMM = true
	res, err := wire.NewClusters(4).NewEstimator().Estimate(goReq)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := on.GetEstimate().GetStepTimeS(), res.StepTime; got != want {
		t.Errorf("over the API %v s, the Go request with MoEGroupedGEMM %v s", got, want)
	}

	var fromJSON pb.EstimateStepRequest
	body := `{"model": {"name": "qwen3-30b-a3b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64,
		"precision": "PRECISION_FP8", "framework": "nemo-25.04", "moe_permute_fusion": true, "moe_grouped_gemm": true},
		"layout": {"tp": 1, "pp": 1, "dp": 8, "ep": 8, "micro_batch": 1, "zero": 1}}`
	if err := protojson.Unmarshal([]byte(body), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if !fromJSON.GetTraining().GetMoeGroupedGemm() {
		t.Error("REST body: moe_grouped_gemm true decoded as false")
	}
	kOff, err := keyOf(s, "EstimateStep", qwen3FP8NeMo2504(false))
	if err != nil {
		t.Fatal(err)
	}
	kOn, err := keyOf(s, "EstimateStep", &fromJSON)
	if err != nil {
		t.Fatal(err)
	}
	if kOff == kOn {
		t.Error("moe_grouped_gemm true and unset share a cache key")
	}
	if k, _ := keyOf(s, "EstimateStep", qwen3FP8NeMo2504(true)); k != kOn {
		t.Error("moe_grouped_gemm over REST's JSON and gRPC's message: two cache keys")
	}
	for _, w := range on.GetEstimate().GetWarnings() {
		if strings.Contains(w, "moe_grouped_gemm") {
			t.Errorf("an MoE model warns of moe_grouped_gemm: %q", w)
		}
	}
}
