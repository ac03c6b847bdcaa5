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

// llama8BRacks is Llama 3.1 8B at TP 2 × CP 4 × DP 72 on 8 GB200 NVL72 racks
// (144 trays, 576 GPUs) with TP overlap: NeMo's MLPerf Training v5.1 layout and
// thread blocks (cp 1, and dp / tp the counts given; 0: NCCL's default).
func llama8BRacks(dp, tp int32) *pb.EstimateStepRequest {
	return &pb.EstimateStepRequest{
		Model:   &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "gb200-nvl72"}, Nodes: 144},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 72, Precision: pb.Precision_PRECISION_FP8, Fp8Recipe: "current",
			Framework: "nemo", CudaGraphs: true, CpNcclMaxCtas: 1, DpNcclMaxCtas: dp, TpNcclMaxCtas: tp},
		Layout: &pb.Layout{Tp: 2, Pp: 1, Dp: 72, Cp: 4, Zero: 1, MicroBatch: 1, Sp: true, OverlapTp: true},
	}
}

// training.dp_nccl_max_ctas and training.tp_nccl_max_ctas reach the estimator over
// gRPC and REST: 8 thread blocks for the data-parallel groups (NeMo's MLPerf
// conf/nccl/custom_communicator_cta.yaml, dp_cp: 8) put the 288-rank gradient
// reduce-scatter on 8 of each rack's 36 NICs, so the exposed data-parallel time and
// the step grow; the answer echoes both fields. A count outside [0, 256] is refused
// naming its field, for one layout and before a plan search (InvalidArgument over
// gRPC, 400 over REST, where a count over int32 is refused by the decoder).
func TestDPTPMaxCTAsOverTheAPI(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	est := func(dp, tp int32) *pb.StepEstimate {
		t.Helper()
		resp, err := c.EstimateStep(ctx, llama8BRacks(dp, tp))
		if err != nil {
			t.Fatalf("dp/tp_nccl_max_ctas %d/%d: %v", dp, tp, err)
		}
		if tr := resp.GetEstimate().GetTraining(); tr.GetDpNcclMaxCtas() != dp || tr.GetTpNcclMaxCtas() != tp {
			t.Errorf("dp/tp_nccl_max_ctas %d/%d came back as %d/%d", dp, tp, tr.GetDpNcclMaxCtas(), tr.GetTpNcclMaxCtas())
		}
		return resp.GetEstimate()
	}
	def, eight := est(0, 0), est(8, 8)
	dp := func(e *pb.StepEstimate) float64 { return e.GetBreakdown().GetExposedCommS().GetDp() }
	t.Logf("exposed DP %.2f → %.2f ms, step %.2f → %.2f ms", 1e3*dp(def), 1e3*dp(eight), 1e3*def.GetStepTimeS(), 1e3*eight.GetStepTimeS())
	docStates(t, "docs/service.md", fmt.Sprintf("exposed DP %.2f → %.2f ms, step %.2f → %.2f ms", 1e3*dp(def), 1e3*dp(eight), 1e3*def.GetStepTimeS(), 1e3*eight.GetStepTimeS()))
	if !(dp(eight) > dp(def) && eight.GetStepTimeS() > def.GetStepTimeS()) {
		t.Errorf("exposed DP %v → %v s, step %v → %v s: want both longer on 8 thread blocks", dp(def), dp(eight), def.GetStepTimeS(), eight.GetStepTimeS())
	}

	for _, field := range []string{"training.dp_nccl_max_ctas", "training.tp_nccl_max_ctas"} {
		for _, bad := range []int32{-1, 257} {
			r := llama8BRacks(0, 0)
			if field == "training.dp_nccl_max_ctas" {
				r.Training.DpNcclMaxCtas = bad
			} else {
				r.Training.TpNcclMaxCtas = bad
			}
			_, err := c.EstimateStep(ctx, r)
			violationOf(t, err, codes.InvalidArgument, field)
			_, err = c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: r.Model, Cluster: r.Cluster, Training: r.Training, Gpus: 64, TopK: 1})
			violationOf(t, err, codes.InvalidArgument, field)
		}
	}

	d, _ := startServing(t)
	const stepBody = `{"model": {"name": "llama3-8b"}, "cluster": {"name": "gb200-nvl72", "nodes": 144},
		"training": {"seq_len": 8192, "global_batch": 72, "precision": "PRECISION_FP8", "fp8_recipe": "current", "framework": "nemo",
		"cuda_graphs": true, "cp_nccl_max_ctas": 1%s},
		"layout": {"tp": 2, "pp": 1, "dp": 72, "cp": 4, "zero": 1, "micro_batch": 1, "sp": true, "overlap_tp": true}}`
	resp, raw := post(t, "http://"+d.httpAddr+"/v1/steps:estimate", fmt.Sprintf(stepBody, `, "dp_nccl_max_ctas": 8, "tp_nccl_max_ctas": 8`))
	var r pb.EstimateStepResponse
	if resp.StatusCode != http.StatusOK || protojson.Unmarshal(raw, &r) != nil {
		t.Fatalf("REST: %d %s", resp.StatusCode, raw)
	}
	if tr := r.GetEstimate().GetTraining(); tr.GetDpNcclMaxCtas() != 8 || tr.GetTpNcclMaxCtas() != 8 || r.GetEstimate().GetStepTimeS() != eight.GetStepTimeS() {
		t.Errorf("REST: dp/tp_nccl_max_ctas %d/%d, %v s; gRPC 8/8, %v s", tr.GetDpNcclMaxCtas(), tr.GetTpNcclMaxCtas(), r.GetEstimate().GetStepTimeS(), eight.GetStepTimeS())
	}
	for _, name := range []string{"dp_nccl_max_ctas", "tp_nccl_max_ctas"} {
		for _, body := range []struct{ path, body string }{
			{"/v1/steps:estimate", fmt.Sprintf(stepBody, fmt.Sprintf(`, %q: 257`, name))},
			{"/v1/steps:estimate", fmt.Sprintf(stepBody, fmt.Sprintf(`, %q: -1`, name))},
			{"/v1/steps:estimate", fmt.Sprintf(stepBody, fmt.Sprintf(`, %q: 4294967297`, name))}, // over int32: refused by the decoder
			{"/v1/plans:estimate", fmt.Sprintf(`{"model": {"name": "llama3-8b"}, "cluster": {"name": "gb200-nvl72"},
				"training": {"seq_len": 8192, "global_batch": 8, %q: 257}, "gpus": 64}`, name)},
		} {
			resp, raw := post(t, "http://"+d.httpAddr+body.path, body.body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"training.`+name+`"`) {
				t.Errorf("REST %s %s: %d %s", body.path, name, resp.StatusCode, raw)
			}
		}
	}
}
