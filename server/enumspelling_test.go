package server

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// enumRefusal is a request refused over a value of an enum-valued field: the
// field, the phrases its description must hold (the values as the API names
// them) and the command line's spellings it must not (zb-h1 for SCHEDULE_ZB_H1).
type enumRefusal struct {
	name, method, body string
	field              string
	want               []string
	notCLI             []string
}

func enumRefusals() []enumRefusal {
	moe := `{"model": {"name": "mixtral-8x7b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 256},
		"layout": {"tp": 2, "pp": 2, "dp": 16, "ep": 8, "micro_batch": 1, "overlap_ep": true, "schedule": "SCHEDULE_1F1B"}}`
	okRank := `{"configs": [` + okStep + `]}`
	const step, plan, rank, coll = "EstimateStep", "EstimatePlan", "RankConfigs", "SimulateCollective"
	return []enumRefusal{
		// layout.schedule
		{"schedule needing two pipeline ranks", step, with(okStep, "layout.pp", 1, "layout.dp", 8, "layout.schedule", "SCHEDULE_DUALPIPE"),
			"layout.schedule", []string{"SCHEDULE_DUALPIPE needs pp ≥ 2"}, []string{"dualpipe needs"}},
		{"schedule sent as its number", step, with(okStep, "layout.pp", 1, "layout.dp", 8, "layout.schedule", 6),
			"layout.schedule", []string{"SCHEDULE_ZB_V needs pp ≥ 2"}, []string{"zb-v"}},
		{"schedule the framework does not run", step, with(okStep, "layout.schedule", "SCHEDULE_ZERO_BUBBLE"),
			"layout.schedule", []string{"megatron-core runs SCHEDULE_1F1B or SCHEDULE_INTERLEAVED (got SCHEDULE_ZERO_BUBBLE)"}, []string{"zb-h1", "1f1b", " interleaved"}},
		{"virtual stages on a one-chunk schedule", step, with(okStep, "layout.virtual_stages", 2, "layout.schedule", "SCHEDULE_1F1B"),
			"layout.virtual_stages", []string{"SCHEDULE_1F1B runs one chunk per pipeline rank (got 2); interleaving needs schedule SCHEDULE_INTERLEAVED"}, []string{"1f1b", "schedule interleaved"}},
		{"activation offload on a zero-bubble pipeline", step, with(okStep, "training.framework", "hai-llm", "layout.zero", 0, "layout.sp", false,
			"layout.schedule", "SCHEDULE_ZERO_BUBBLE", "layout.offload_activations", true),
			"layout.offload_activations", []string{"with SCHEDULE_1F1B or SCHEDULE_INTERLEAVED pipelines (schedule SCHEDULE_ZERO_BUBBLE)"}, []string{"zb-h1", "1F1B or interleaved"}},
		{"EP overlap on 1F1B", step, moe,
			"layout.overlap_ep", []string{"runs on the SCHEDULE_INTERLEAVED schedule only", "got SCHEDULE_1F1B)"}, []string{"interleaved schedule", "got 1f1b"}},
		// layout.recompute
		{"recompute layers without full recomputation", step, with(okStep, "layout.recompute_layers", 2),
			"layout.recompute_layers", []string{`needs recompute RECOMPUTE_FULL (got "RECOMPUTE_SELECTIVE")`}, []string{"recompute full", `"selective"`}},
		{"recompute modules without selective recomputation", step, with(okStep, "layout.recompute", "RECOMPUTE_FULL", "layout.recompute_modules", raw(`["core_attn"]`)),
			"layout.recompute_modules", []string{`needs recompute RECOMPUTE_SELECTIVE (got "RECOMPUTE_FULL")`}, []string{"recompute selective", `"full"`}},
		{"recompute the framework does not run", step, with(okStep, "training.framework", "megatron-lm-2021", "layout.zero", 0, "layout.sp", false),
			"layout.recompute", []string{"megatron-lm-2021 recomputes RECOMPUTE_NONE or RECOMPUTE_FULL (got RECOMPUTE_SELECTIVE)"}, []string{"none or full", "got selective"}},
		// training.precision
		{"fp8 on a GPU without an fp8 rate", step, with(okStep, "cluster.name", "dgx-a100", "training.precision", "PRECISION_FP8"),
			"training.precision", []string{"PRECISION_FP8 needs a GPU with an fp8 rate", "(use PRECISION_BF16 or PRECISION_FP16)"}, []string{"use bf16", "fp8 needs"}},
		{"fp8 recipe without fp8", step, with(okStep, "training.fp8_recipe", "delayed"),
			"training.fp8_recipe", []string{"applies to precision PRECISION_FP8 only (precision is PRECISION_BF16)"}, []string{"precision fp8", "is bf16"}},
		// objective
		{"cost without a price", plan, with(okPlan, "objective", "OBJECTIVE_COST"),
			"objective", []string{"OBJECTIVE_COST needs price_per_gpu_hour > 0"}, []string{"cost needs"}},
		{"cost without a price in a batch", rank, with(okRank, "objective", "OBJECTIVE_COST"),
			"objective", []string{"OBJECTIVE_COST needs price_per_gpu_hour > 0"}, []string{"cost needs"}},
		// constraints.schedules, constraints.recompute
		{"constraint schedule the framework does not run", plan, with(okPlan, "constraints", raw(`{"schedules": ["SCHEDULE_1F1B", "SCHEDULE_DUALPIPE"]}`)),
			"constraints.schedules[1]", []string{"asks for SCHEDULE_DUALPIPE, but megatron-core runs SCHEDULE_1F1B or SCHEDULE_INTERLEAVED"}, []string{"for dualpipe", "1f1b"}},
		{"constraint schedule without a pipeline", plan, with(okPlan, "constraints", raw(`{"schedules": ["SCHEDULE_INTERLEAVED"], "pp": [1]}`)),
			"constraints.schedules", []string{"asks for SCHEDULE_INTERLEAVED, but constraints.pp lists no pp above 1"}, []string{"for interleaved"}},
		{"constraint recompute the framework does not run", plan, with(okPlan, "training.framework", "megatron-lm-2021", "constraints", raw(`{"recompute": ["RECOMPUTE_SELECTIVE"]}`)),
			"constraints.recompute[0]", []string{"asks for RECOMPUTE_SELECTIVE, but megatron-lm-2021 runs RECOMPUTE_NONE or RECOMPUTE_FULL"}, []string{"for selective", "none or full"}},
		// SimulateCollective's collective and algorithm
		{"algorithm that cannot run the operation", coll, with(okColl, "algorithm", "ALGORITHM_PAIRWISE"),
			"algorithm", []string{"(ALGORITHM_PAIRWISE COLLECTIVE_ALL_REDUCE: pairwise exchange is an all-to-all algorithm)"}, []string{"pairwise allreduce"}},
		{"algorithm advising others", coll, with(okColl, "collective", "COLLECTIVE_ALL_TO_ALL", "algorithm", "ALGORITHM_RING"),
			"algorithm", []string{"(ALGORITHM_RING COLLECTIVE_ALL_TO_ALL: ring does not do all-to-all (use ALGORITHM_PAIRWISE or ALGORITHM_DIRECT))"}, []string{"ring alltoall", "use pairwise"}},
		{"steps of an algorithm without a schedule", coll, with(okColl, "steps", true, "algorithm", "ALGORITHM_NVLS_TREE"),
			"steps", []string{"no explicit schedule: ALGORITHM_NVLS_TREE is priced by its closed form only"}, []string{"nvlstree"}},
	}
}

// A refusal over an enum-valued field names its values as the API does, over gRPC
// and REST: the caller sent SCHEDULE_DUALPIPE (or its number), and was told
// "layout.schedule: dualpipe needs pp ≥ 2", the command line's flag value, which
// no API request can carry.
func TestRefusalsSpellEnumsAsTheAPI(t *testing.T) {
	d, client := startServing(t)
	for _, tc := range enumRefusals() {
		rpc := rpcs[tc.method]
		req := rpc.newReq()
		if err := protojson.Unmarshal([]byte(tc.body), req); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		check := func(t *testing.T, r refusal) {
			t.Helper()
			if r.code != codes.InvalidArgument {
				t.Fatalf("code %v, want InvalidArgument: %s", r.code, r.msg)
			}
			var desc string
			for _, v := range r.violations {
				if v[0] == tc.field {
					desc = v[1]
				}
			}
			if desc == "" {
				t.Fatalf("no violation of %s in %v", tc.field, r.violations)
			}
			for _, w := range tc.want {
				if !strings.Contains(desc, w) || !strings.Contains(r.msg, tc.field+": ") || !strings.Contains(r.msg, w) {
					t.Errorf("%s: %q (message %q), want %q", tc.field, desc, r.msg, w)
				}
			}
			for _, n := range tc.notCLI {
				if strings.Contains(desc, n) || strings.Contains(r.msg, n) {
					t.Errorf("%s: %q (message %q) spells a value as the command line does (%q)", tc.field, desc, r.msg, n)
				}
			}
		}
		t.Run(tc.name+"/grpc", func(t *testing.T) {
			_, err := rpc.call(context.Background(), client, req)
			check(t, grpcRefusal(err))
		})
		t.Run(tc.name+"/rest", func(t *testing.T) {
			check(t, postRefusal(t, d, rpc.path, tc.body, http.StatusBadRequest))
		})
	}
}

// A RankConfigs item refused over an enum-valued field names the value as the API
// does, as the same request refused alone is.
func TestRankItemSpellsEnumsAsTheAPI(t *testing.T) {
	_, client := startServing(t)
	req := &pb.RankConfigsRequest{}
	body := `{"configs": [` + with(okStep, "layout.pp", 1, "layout.dp", 8, "layout.schedule", "SCHEDULE_DUALPIPE") + `]}`
	if err := protojson.Unmarshal([]byte(body), req); err != nil {
		t.Fatal(err)
	}
	resp, err := client.RankConfigs(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	e := resp.GetResults()[0].GetError()
	const want = "SCHEDULE_DUALPIPE needs pp ≥ 2"
	if !strings.Contains(e.GetMessage(), want) || len(e.GetViolations()) == 0 || !strings.Contains(e.GetViolations()[0].GetDescription(), want) ||
		strings.Contains(e.GetMessage(), "dualpipe needs") {
		t.Errorf("item error %v, want %q", e, want)
	}
}

// A picture's refusal names the values as the API does, as the estimate's.
func TestPictureRefusalSpellsEnumsAsTheAPI(t *testing.T) {
	d, _ := startServing(t)
	r := postRefusal(t, d, "/v1/pictures:schedule", with(okStep, "layout.pp", 1, "layout.dp", 8, "layout.schedule", "SCHEDULE_DUALPIPE"), http.StatusBadRequest)
	if !strings.Contains(r.msg, "layout.schedule: SCHEDULE_DUALPIPE needs pp ≥ 2") || strings.Contains(r.msg, "dualpipe needs") {
		t.Errorf("%s", r.body)
	}
}

// A search the constraints leave nothing to quotes the schedules and
// recomputations asked for as the API names them, in the answer's no_plan_reason
// and in DrawPareto's refusal to draw it: it said "constraints.schedules
// [interleaved], constraints.recompute [none]" to a caller that sent
// SCHEDULE_INTERLEAVED and RECOMPUTE_NONE.
func TestNoPlanReasonSpellsEnumsAsTheAPI(t *testing.T) {
	d, client := startServing(t)
	body := with(okPlan, "gpus", 16, "constraints", raw(`{"schedules": ["SCHEDULE_INTERLEAVED"], "pp": [2], "virtual_stages": [3], "recompute": ["RECOMPUTE_NONE"], "tp": [1]}`))
	req := &pb.EstimatePlanRequest{}
	if err := protojson.Unmarshal([]byte(body), req); err != nil {
		t.Fatal(err)
	}
	resp, err := client.EstimatePlan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	const want = "constraints.schedules [SCHEDULE_INTERLEAVED], constraints.recompute [RECOMPUTE_NONE]"
	if r := resp.GetNoPlanReason(); !strings.Contains(r, want) {
		t.Errorf("no_plan_reason %q, want %q", r, want)
	}
	r := postRefusal(t, d, "/v1/pictures:pareto", body, http.StatusBadRequest)
	if r.code != codes.FailedPrecondition || !strings.Contains(r.msg, want) {
		t.Errorf("DrawPareto: %s", r.body)
	}
}

// A calibration run names its schedule as a string, in the command line's
// spelling ("zb-h1"): its refusal names it as the caller wrote it, and names the
// run's field at fault (inputs[0].run.schedule), not the log's content, which
// it blamed when the step model refused the run's layout.
func TestCalibrationRunKeepsItsSpelling(t *testing.T) {
	c := client(t, DefaultLimits())
	b, err := os.ReadFile("../estimator/calibrate/testdata/trainlogs/torchao-pretraining-bf16.log")
	if err != nil {
		t.Fatal(err)
	}
	run := &pb.CalibrationRun{Model: "llama3-8b", Gpus: 8, Pp: 2, Dp: 4, MicroBatch: 1, GlobalBatch: 8, SeqLen: 8192, Schedule: "zb-h1", Framework: "megatron-core"}
	_, err = c.CalibrateCluster(context.Background(), &pb.CalibrateClusterRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Inputs: []*pb.CalibrationInput{{Name: "run.log", Content: string(b), Run: run}}})
	msg := status.Convert(err).Message()
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(msg, "zb-h1") || strings.Contains(msg, "SCHEDULE_") {
		t.Errorf("%v", err)
	}
	if testing.Verbose() {
		t.Log(msg)
	}
	violationOf(t, err, codes.InvalidArgument, "inputs[0].run.schedule")
}
