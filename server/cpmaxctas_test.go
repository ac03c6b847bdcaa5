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

// llama8BCP4 is Llama 3.1 8B at TP 2 × CP 4 × DP 8 on one GB200 NVL72 rack (64
// GPUs), 8K-token sequences in fp8 under NeMo with CUDA graphs: the layout of
// NeMo's MLPerf Training v5.1 Llama 3.1 8B implementation, whose context-parallel
// group NCCL runs on the maxCTAs the request gives (0: NCCL's default).
func llama8BCP4(maxCTAs int32) *pb.EstimateStepRequest {
	return &pb.EstimateStepRequest{
		Model:   &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "gb200-nvl72"}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 8, Precision: pb.Precision_PRECISION_FP8, Fp8Recipe: "current",
			Framework: "nemo", CudaGraphs: true, CpNcclMaxCtas: maxCTAs},
		Layout: &pb.Layout{Tp: 2, Pp: 1, Dp: 8, Cp: 4, Zero: 1, MicroBatch: 1, Sp: true},
	}
}

// training.cp_nccl_max_ctas reaches the estimator over gRPC and REST: one thread
// block for the CP group (NeMo's MLPerf conf/nccl/custom_communicator_cta.yaml)
// leaves the ring's K/V passes on one channel, so the exposed CP communication and
// the step grow on the CP layout, and a plan searched on CP 4 is slower; the answer
// echoes the field. A count outside [0, 256] is refused naming the field, for one
// layout and before a plan search (InvalidArgument over gRPC, 400 over REST).
func TestCPMaxCTAsOverTheAPI(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	step := func(t *testing.T, n int32) *pb.StepEstimate {
		t.Helper()
		resp, err := c.EstimateStep(ctx, llama8BCP4(n))
		if err != nil {
			t.Fatalf("cp_nccl_max_ctas %d: %v", n, err)
		}
		if got := resp.GetEstimate().GetTraining().GetCpNcclMaxCtas(); got != n {
			t.Errorf("cp_nccl_max_ctas %d came back as %d", n, got)
		}
		return resp.GetEstimate()
	}
	def, one := step(t, 0), step(t, 1)
	t.Logf("exposed CP %.2f → %.2f ms, step %.2f → %.2f ms", 1e3*def.GetBreakdown().GetExposedCommS().GetCp(),
		1e3*one.GetBreakdown().GetExposedCommS().GetCp(), 1e3*def.GetStepTimeS(), 1e3*one.GetStepTimeS())
	docStates(t, "docs/service.md", fmt.Sprintf("exposed CP %.2f → %.2f ms, step %.1f → %.1f ms", 1e3*def.GetBreakdown().GetExposedCommS().GetCp(),
		1e3*one.GetBreakdown().GetExposedCommS().GetCp(), 1e3*def.GetStepTimeS(), 1e3*one.GetStepTimeS()))
	if !(one.GetBreakdown().GetExposedCommS().GetCp() > def.GetBreakdown().GetExposedCommS().GetCp() && one.GetStepTimeS() > def.GetStepTimeS()) {
		t.Errorf("exposed CP %v → %v s, step %v → %v s: want both longer with one thread block",
			def.GetBreakdown().GetExposedCommS().GetCp(), one.GetBreakdown().GetExposedCommS().GetCp(), def.GetStepTimeS(), one.GetStepTimeS())
	}

	plan := func(n int32) (*pb.EstimatePlanResponse, error) {
		r := llama8BCP4(n)
		return c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: r.Model, Cluster: r.Cluster, Training: r.Training, Gpus: 64, TopK: 1,
			Constraints: &pb.Constraints{Tp: []int32{2}, Cp: []int32{4}}})
	}
	bestOf := func(n int32) *pb.StepEstimate {
		t.Helper()
		resp, err := plan(n)
		if err != nil || len(resp.GetPlans()) == 0 {
			t.Fatalf("plan, cp_nccl_max_ctas %d: %v, %d plans", n, err, len(resp.GetPlans()))
		}
		e := resp.GetPlans()[0].GetEstimate()
		if got := e.GetTraining().GetCpNcclMaxCtas(); got != n || e.GetLayout().GetCp() != 4 {
			t.Errorf("plan, cp_nccl_max_ctas %d: the best plan has cp_nccl_max_ctas %d and cp %d", n, got, e.GetLayout().GetCp())
		}
		return e
	}
	if pd, p1 := bestOf(0), bestOf(1); !(p1.GetStepTimeS() > pd.GetStepTimeS()) {
		t.Errorf("best plan on CP 4: %v s with one thread block, %v s with NCCL's default: want slower", p1.GetStepTimeS(), pd.GetStepTimeS())
	}

	for _, bad := range []int32{-1, 257} {
		_, err := c.EstimateStep(ctx, llama8BCP4(bad))
		violationOf(t, err, codes.InvalidArgument, "training.cp_nccl_max_ctas")
		_, err = plan(bad)
		violationOf(t, err, codes.InvalidArgument, "training.cp_nccl_max_ctas")
	}

	d, rc := startServing(t)
	_, err := rc.EstimateStep(ctx, llama8BCP4(257))
	violationOf(t, err, codes.InvalidArgument, "training.cp_nccl_max_ctas")

	const stepBody = `{"model": {"name": "llama3-8b"}, "cluster": {"name": "gb200-nvl72"},
		"training": {"seq_len": 8192, "global_batch": 8, "precision": "PRECISION_FP8", "fp8_recipe": "current", "framework": "nemo", "cuda_graphs": true%s},
		"layout": {"tp": 2, "pp": 1, "dp": 8, "cp": 4, "zero": 1, "micro_batch": 1, "sp": true}}`
	resp, raw := post(t, "http://"+d.httpAddr+"/v1/steps:estimate", fmt.Sprintf(stepBody, `, "cp_nccl_max_ctas": 1`))
	var r pb.EstimateStepResponse
	if resp.StatusCode != http.StatusOK || protojson.Unmarshal(raw, &r) != nil {
		t.Fatalf("REST: %d %s", resp.StatusCode, raw)
	}
	if r.GetEstimate().GetTraining().GetCpNcclMaxCtas() != 1 || r.GetEstimate().GetStepTimeS() != one.GetStepTimeS() {
		t.Errorf("REST: cp_nccl_max_ctas %d, %v s; gRPC 1, %v s", r.GetEstimate().GetTraining().GetCpNcclMaxCtas(), r.GetEstimate().GetStepTimeS(), one.GetStepTimeS())
	}
	for _, rc := range []struct{ path, body string }{
		{"/v1/steps:estimate", fmt.Sprintf(stepBody, `, "cp_nccl_max_ctas": 257`)},
		{"/v1/steps:estimate", fmt.Sprintf(stepBody, `, "cp_nccl_max_ctas": -1`)},
		{"/v1/steps:estimate", fmt.Sprintf(stepBody, `, "cp_nccl_max_ctas": 4294967297`)}, // over int32: refused by the decoder
		{"/v1/plans:estimate", `{"model": {"name": "llama3-8b"}, "cluster": {"name": "gb200-nvl72"},
			"training": {"seq_len": 8192, "global_batch": 8, "cp_nccl_max_ctas": 257}, "gpus": 64}`},
	} {
		resp, raw := post(t, "http://"+d.httpAddr+rc.path, rc.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"training.cp_nccl_max_ctas"`) {
			t.Errorf("REST %s: %d %s", rc.path, resp.StatusCode, raw)
		}
	}
}
