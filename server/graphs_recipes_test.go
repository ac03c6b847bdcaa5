package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// qwen3SmallBatch is Qwen3-30B-A3B (48 MoE layers of 128 small experts) at 1K
// tokens per micro-batch on 8 B200 with EP 8: the dropless dispatcher's host sync
// and the eager operators around it pace its MoE blocks (docs/step-model.md,
// TestMoEHostSync).
func qwen3SmallBatch() *pb.EstimateStepRequest {
	return &pb.EstimateStepRequest{
		Model:    &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "qwen3-30b-a3b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "hgx-b200"}},
		Training: &pb.Training{SeqLen: 1024, GlobalBatch: 64},
		Layout:   &pb.Layout{Tp: 1, Pp: 1, Dp: 8, Ep: 8, Zero: 1, MicroBatch: 1},
	}
}

// training.cuda_graphs reaches the estimator and moves the estimate as the model
// says: one graph launch (4 µs) replaces the host's issue of a layer — under
// Megatron-Core's Transformer Engine layers (the default framework) its 4 modules
// (QKV with its norm, attention, output projection, the pre-MLP norm) of 36.2 µs
// on the B200's x86 host and its 4 eager operators (two residual adds, two rotary
// kernels) of 7 µs — and the graph holds the MoE router's 10 eager operators of
// 7 µs before the dropless sync (docs/step-model.md), so a host-bound MoE
// layout's forward gets shorter by no more than 4 × 36.2 + 4 × 7 − 4 + 10 × 7 =
// 239 µs per layer and micro-batch, and no layout gets slower. The answer echoes
// the field, over gRPC and REST alike.
func TestCUDAGraphsChangeTheEstimate(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	estimate := func(t *testing.T, r *pb.EstimateStepRequest, graphs bool) *pb.StepEstimate {
		t.Helper()
		r.Training.CudaGraphs = graphs
		resp, err := c.EstimateStep(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetEstimate().GetTraining().GetCudaGraphs(); got != graphs {
			t.Errorf("cuda_graphs %v came back as %v", graphs, got)
		}
		return resp.GetEstimate()
	}
	t.Run("host-bound MoE", func(t *testing.T) {
		eager, graphs := estimate(t, qwen3SmallBatch(), false), estimate(t, qwen3SmallBatch(), true)
		const layers, microBatches = 48, 64 / 8
		const maxSavedPerLayer = 4*99.66e-6*13.48/37.08 + 4*7e-6 - 4e-6 + 10*7e-6 // Transformer Engine issue #2053's module on an x86 host
		saved := eager.GetBreakdown().GetForwardS() - graphs.GetBreakdown().GetForwardS()
		t.Logf("forward %.2f → %.2f ms (%.1f µs per layer and micro-batch), step %.2f → %.2f ms",
			1e3*eager.GetBreakdown().GetForwardS(), 1e3*graphs.GetBreakdown().GetForwardS(), 1e6*saved/(layers*microBatches),
			1e3*eager.GetStepTimeS(), 1e3*graphs.GetStepTimeS())
		if !(saved > 0 && saved <= layers*microBatches*maxSavedPerLayer*(1+1e-9)) {
			t.Errorf("forward shortened by %.3f ms, want more than 0 and at most %.3f ms", 1e3*saved, 1e3*layers*microBatches*maxSavedPerLayer)
		}
		if !(graphs.GetStepTimeS() < eager.GetStepTimeS()) {
			t.Errorf("step %v s with CUDA graphs, %v s without: want shorter", graphs.GetStepTimeS(), eager.GetStepTimeS())
		}
	})
	t.Run("compute-bound MoE", func(t *testing.T) {
		// Qwen3-235B-A22B at 4K tokens per micro-batch: fewer launches never
		// make a step slower.
		eager, graphs := estimate(t, qwen3EP32(), false), estimate(t, qwen3EP32(), true)
		if graphs.GetStepTimeS() > eager.GetStepTimeS() {
			t.Errorf("step %v s with CUDA graphs, %v s without: want not slower", graphs.GetStepTimeS(), eager.GetStepTimeS())
		}
	})

	d := startDaemon(t, nil)
	defer func() {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
	}()
	req := qwen3SmallBatch()
	req.Training.CudaGraphs = true
	resp, raw := post(t, "http://"+d.httpAddr+"/v1/steps:estimate", `{"model": {"name": "qwen3-30b-a3b"}, "cluster": {"name": "hgx-b200"},
		"training": {"seq_len": 1024, "global_batch": 64, "cuda_graphs": true}, "layout": {"tp": 1, "pp": 1, "dp": 8, "ep": 8, "zero": 1, "micro_batch": 1}}`)
	var r pb.EstimateStepResponse
	if resp.StatusCode != http.StatusOK || protojson.Unmarshal(raw, &r) != nil {
		t.Fatalf("REST: %d %s", resp.StatusCode, raw)
	}
	g, err := c.EstimateStep(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !r.GetEstimate().GetTraining().GetCudaGraphs() || r.GetEstimate().GetStepTimeS() != g.GetEstimate().GetStepTimeS() {
		t.Errorf("REST: cuda_graphs %v, %v s; gRPC %v s", r.GetEstimate().GetTraining().GetCudaGraphs(), r.GetEstimate().GetStepTimeS(), g.GetEstimate().GetStepTimeS())
	}
}

// fp8Llama8B is Llama 3 8B in fp8 on one node of cluster, with recipe.
func fp8Llama8B(cluster, recipe string) *pb.EstimateStepRequest {
	return &pb.EstimateStepRequest{
		Model:    &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: cluster}},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64, Precision: pb.Precision_PRECISION_FP8, Fp8Recipe: recipe},
		Layout:   &pb.Layout{Tp: 1, Pp: 1, Dp: 8, Zero: 1, MicroBatch: 1},
	}
}

// The fp8 recipes rowwise and mxfp8 are taken by name; mxfp8, whose block scales
// only Blackwell's tensor cores apply, is refused on H100 by training.fp8_recipe —
// for one layout and before a plan search, over gRPC and REST.
func TestFP8RecipesOverTheAPI(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	step := func(t *testing.T, r *pb.EstimateStepRequest) *pb.StepEstimate {
		t.Helper()
		resp, err := c.EstimateStep(ctx, r)
		if err != nil {
			t.Fatalf("%s on %s: %v", r.GetTraining().GetFp8Recipe(), r.GetCluster().GetName(), err)
		}
		if got := resp.GetEstimate().GetTraining().GetFp8Recipe(); got != r.GetTraining().GetFp8Recipe() {
			t.Errorf("fp8_recipe %q came back as %q", r.GetTraining().GetFp8Recipe(), got)
		}
		return resp.GetEstimate()
	}
	// Rowwise scaling casts every operand along each axis (the column-wise casts at
	// a third of the bandwidth) and rescales the backward GEMMs' outputs: more
	// memory traffic than tensorwise current scaling, on the same matmuls.
	current, rowwise := step(t, fp8Llama8B("dgx-h100", "current")), step(t, fp8Llama8B("dgx-h100", "rowwise"))
	if !(rowwise.GetStepTimeS() > current.GetStepTimeS()) {
		t.Errorf("H100: rowwise %v s, current %v s: want rowwise slower", rowwise.GetStepTimeS(), current.GetStepTimeS())
	}
	step(t, fp8Llama8B("hgx-b200", "mxfp8"))

	_, err := c.EstimateStep(ctx, fp8Llama8B("dgx-h100", "mxfp8"))
	violationOf(t, err, codes.InvalidArgument, "training.fp8_recipe")
	h100 := fp8Llama8B("dgx-h100", "mxfp8")
	_, err = c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: h100.Model, Cluster: h100.Cluster, Training: h100.Training, Gpus: 8})
	violationOf(t, err, codes.InvalidArgument, "training.fp8_recipe")

	d, rc := startServing(t)
	_, err = rc.EstimateStep(ctx, fp8Llama8B("dgx-h100", "mxfp8"))
	violationOf(t, err, codes.InvalidArgument, "training.fp8_recipe")
	for _, rc := range []struct{ path, body string }{
		{"/v1/steps:estimate", `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"},
			"training": {"seq_len": 4096, "global_batch": 64, "precision": "PRECISION_FP8", "fp8_recipe": "mxfp8"},
			"layout": {"tp": 1, "pp": 1, "dp": 8, "zero": 1, "micro_batch": 1}}`},
		{"/v1/plans:estimate", `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"},
			"training": {"seq_len": 4096, "global_batch": 64, "precision": "PRECISION_FP8", "fp8_recipe": "mxfp8"}, "gpus": 8}`},
	} {
		resp, raw := post(t, "http://"+d.httpAddr+rc.path, rc.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"training.fp8_recipe"`) || !strings.Contains(string(raw), "Blackwell") {
			t.Errorf("REST %s: %d %s", rc.path, resp.StatusCode, raw)
		}
	}
	resp, raw := post(t, "http://"+d.httpAddr+"/v1/steps:estimate", `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"},
		"training": {"seq_len": 4096, "global_batch": 64, "precision": "PRECISION_FP8", "fp8_recipe": "rowwise"},
		"layout": {"tp": 1, "pp": 1, "dp": 8, "zero": 1, "micro_batch": 1}}`)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("REST rowwise on H100: %d %s", resp.StatusCode, raw)
	}
}
