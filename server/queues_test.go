package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// qwen3OverlapRequest is the Megatron-Core MoE team's Qwen3-235B-A22B layout on 256
// H100 (TP 2 × PP 8 × VP 4 × EP 32 over DeepEP) with the EP all-to-all overlap, on
// the given hardware queues (0: the framework's).
func qwen3OverlapRequest(queues int32) *pb.EstimateStepRequest {
	return &pb.EstimateStepRequest{
		Model:   &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "qwen3-235b-a22b"}},
		Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 32},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 2048, Precision: pb.Precision_PRECISION_BF16, MoeDispatcher: "deepep",
			NoDropout: true, CudaDeviceMaxConnections: queues},
		Layout: &pb.Layout{Tp: 2, Pp: 8, Dp: 16, Ep: 32, Etp: 1, Zero: 1, MicroBatch: 1, Sp: true, VirtualStages: 4, OverlapEp: true},
	}
}

// training.cuda_device_max_connections reaches the estimator over gRPC and REST:
// one queue starts the kernels in launch order, so the EP overlap's forward
// dispatch runs beside no compute and the exposed all-to-all time and the step
// grow against 32 queues; the answer echoes the field and states it in its
// assumptions. A count outside CUDA's 1 to 32 is refused naming the field, for one
// layout and before a plan search (InvalidArgument over gRPC, 400 over REST).
func TestDeviceMaxConnectionsOverTheAPI(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	est := func(q int32) *pb.StepEstimate {
		t.Helper()
		resp, err := c.EstimateStep(ctx, qwen3OverlapRequest(q))
		if err != nil {
			t.Fatalf("cuda_device_max_connections %d: %v", q, err)
		}
		if got := resp.GetEstimate().GetTraining().GetCudaDeviceMaxConnections(); got != q {
			t.Errorf("cuda_device_max_connections %d came back as %d", q, got)
		}
		return resp.GetEstimate()
	}
	one, many := est(1), est(32)
	ep := func(e *pb.StepEstimate) float64 { return e.GetBreakdown().GetExposedCommS().GetEp() }
	t.Logf("exposed EP %.2f → %.2f s, step %.2f → %.2f s", ep(many), ep(one), many.GetStepTimeS(), one.GetStepTimeS())
	docStates(t, "docs/service.md", fmt.Sprintf("one queue against 32: exposed EP %.2f → %.2f s, step %.2f → %.2f s", ep(many), ep(one), many.GetStepTimeS(), one.GetStepTimeS()))
	if !(ep(one) > ep(many) && one.GetStepTimeS() > many.GetStepTimeS()) {
		t.Errorf("exposed EP %v → %v s, step %v → %v s: want both longer on one queue", ep(many), ep(one), many.GetStepTimeS(), one.GetStepTimeS())
	}
	stated := false
	for _, a := range one.GetAssumptions() {
		stated = stated || strings.HasPrefix(a, "hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): 1, the request's")
	}
	if !stated {
		t.Errorf("assumptions do not state the queues: %q", one.GetAssumptions())
	}

	const field = "training.cuda_device_max_connections"
	for _, bad := range []int32{-1, 33} {
		r := qwen3OverlapRequest(bad)
		_, err := c.EstimateStep(ctx, r)
		violationOf(t, err, codes.InvalidArgument, field)
		_, err = c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: r.Model, Cluster: r.Cluster, Training: r.Training, Gpus: 256, TopK: 1})
		violationOf(t, err, codes.InvalidArgument, field)
	}

	d, _ := startServing(t)
	const stepBody = `{"model": {"name": "qwen3-235b-a22b"}, "cluster": {"name": "dgx-h100", "nodes": 32},
		"training": {"seq_len": 4096, "global_batch": 2048, "precision": "PRECISION_BF16", "moe_dispatcher": "deepep", "no_dropout": true%s},
		"layout": {"tp": 2, "pp": 8, "dp": 16, "ep": 32, "etp": 1, "zero": 1, "micro_batch": 1, "sp": true, "virtual_stages": 4, "overlap_ep": true}}`
	resp, raw := post(t, "http://"+d.httpAddr+"/v1/steps:estimate", fmt.Sprintf(stepBody, `, "cuda_device_max_connections": 1`))
	var r pb.EstimateStepResponse
	if resp.StatusCode != http.StatusOK || protojson.Unmarshal(raw, &r) != nil {
		t.Fatalf("REST: %d %s", resp.StatusCode, raw)
	}
	if got := r.GetEstimate(); got.GetTraining().GetCudaDeviceMaxConnections() != 1 || got.GetStepTimeS() != one.GetStepTimeS() {
		t.Errorf("REST: cuda_device_max_connections %d, %v s; gRPC 1, %v s", got.GetTraining().GetCudaDeviceMaxConnections(), got.GetStepTimeS(), one.GetStepTimeS())
	}
	for _, body := range []struct{ path, body string }{
		{"/v1/steps:estimate", fmt.Sprintf(stepBody, `, "cuda_device_max_connections": 33`)},
		{"/v1/steps:estimate", fmt.Sprintf(stepBody, `, "cuda_device_max_connections": -1`)},
		{"/v1/plans:estimate", `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"},
			"training": {"seq_len": 4096, "global_batch": 16, "cuda_device_max_connections": 33}, "gpus": 16}`},
	} {
		resp, raw := post(t, "http://"+d.httpAddr+body.path, body.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"`+field+`"`) {
			t.Errorf("REST %s: %d %s", body.path, resp.StatusCode, raw)
		}
	}
}
