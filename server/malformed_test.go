package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Request bodies the malformed cases start from: the README's.
const (
	okStep = `{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 512},
		"layout": {"tp": 8, "pp": 2, "dp": 4, "micro_batch": 1, "zero": 1, "sp": true, "recompute": "RECOMPUTE_SELECTIVE"}}`
	okPlan = `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 256}, "gpus": 32, "top_k": 3}`
	okColl = `{"cluster": {"name": "dgx-h100"}, "nodes": 4, "collective": "COLLECTIVE_ALL_REDUCE", "size_bytes": 1073741824}`
)

// raw is JSON text to put into a body as it is (a value that is not JSON-typed the
// way Go would marshal it: a string for a number, malformed text).
type raw string

// del removes a field.
var del = struct{}{}

// with returns body with each dotted path set to its value (del removes it). Paths
// through arrays are not supported; set the whole array.
func with(body string, pathValues ...any) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		panic(err)
	}
	for i := 0; i < len(pathValues); i += 2 {
		parts := strings.Split(pathValues[i].(string), ".")
		obj := m
		for _, p := range parts[:len(parts)-1] {
			next, ok := obj[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				obj[p] = next
			}
			obj = next
		}
		last := parts[len(parts)-1]
		switch v := pathValues[i+1].(type) {
		case struct{}:
			delete(obj, last)
		case raw:
			obj[last] = json.RawMessage(v)
		default:
			obj[last] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// rpcs are the methods a malformed case can call, over gRPC and REST.
var rpcs = map[string]struct {
	path   string
	newReq func() proto.Message
	call   func(context.Context, pb.StepcostServiceClient, proto.Message) (proto.Message, error)
}{
	"EstimateStep": {"/v1/steps:estimate", func() proto.Message { return &pb.EstimateStepRequest{} },
		func(ctx context.Context, c pb.StepcostServiceClient, m proto.Message) (proto.Message, error) {
			return c.EstimateStep(ctx, m.(*pb.EstimateStepRequest))
		}},
	"EstimatePlan": {"/v1/plans:estimate", func() proto.Message { return &pb.EstimatePlanRequest{} },
		func(ctx context.Context, c pb.StepcostServiceClient, m proto.Message) (proto.Message, error) {
			return c.EstimatePlan(ctx, m.(*pb.EstimatePlanRequest))
		}},
	"RankConfigs": {"/v1/configs:rank", func() proto.Message { return &pb.RankConfigsRequest{} },
		func(ctx context.Context, c pb.StepcostServiceClient, m proto.Message) (proto.Message, error) {
			return c.RankConfigs(ctx, m.(*pb.RankConfigsRequest))
		}},
	"SimulateCollective": {"/v1/collectives:simulate", func() proto.Message { return &pb.SimulateCollectiveRequest{} },
		func(ctx context.Context, c pb.StepcostServiceClient, m proto.Message) (proto.Message, error) {
			return c.SimulateCollective(ctx, m.(*pb.SimulateCollectiveRequest))
		}},
}

type malformed struct {
	name, method, body string
	code               codes.Code
	// field is the violation expected; rule a phrase of its description (the
	// message's, for an error without a field).
	field, rule string
	// rest: JSON that only the REST gateway gets to see (a gRPC client cannot encode
	// it: unknown fields, wrong types, enum names that do not exist, two values of a
	// oneof, a JSON syntax error).
	rest bool
}

// malformedLimits are the daemon's limits for the cases.
// No malformed plan gets as far as the search but one, which must go over
// MaxCandidates quickly (under the race detector too).
var malformedLimits = Limits{MaxGPUs: 4096, MaxRankConfigs: 4, MaxCandidates: 100}

const malformedMaxBytes = 64 << 10

func malformedCases() []malformed {
	def := func(fields string) string { // a cluster defined over dgx-h100
		return `{"definition": {"base": "dgx-h100", ` + fields + `}}`
	}
	items := func(n int) raw {
		var b []string
		for range n {
			b = append(b, okStep)
		}
		return raw("[" + strings.Join(b, ",") + "]")
	}
	// Over a service limit: InvalidArgument (HTTP 400), the caller must change the
	// request; only an oversize body keeps ResourceExhausted (HTTP 413).
	ia, nf, re := codes.InvalidArgument, codes.NotFound, codes.ResourceExhausted
	const step, plan, rank, coll = "EstimateStep", "EstimatePlan", "RankConfigs", "SimulateCollective"
	return []malformed{
		// What is required.
		{"no model", step, with(okStep, "model", del), ia, "model", "is required", false},
		{"no cluster", step, with(okStep, "cluster", del), ia, "cluster", "is required", false},
		{"no training", step, with(okStep, "training", del), ia, "training", "is required", false},
		{"no layout", step, with(okStep, "layout", del), ia, "layout", "is required", false},
		{"empty model", step, with(okStep, "model", raw(`{}`)), ia, "model", "give name, architecture or params", false},
		{"empty body", step, `{}`, ia, "model", "is required", false},
		{"plan without a size", plan, with(okPlan, "gpus", del), ia, "max_gpus", "give gpus, or max_gpus", false},
		{"collective without a cluster", coll, with(okColl, "cluster", del), ia, "cluster", "is required", false},
		{"collective without an operation", coll, with(okColl, "collective", del), ia, "collective", "must be one of COLLECTIVE_ALL_REDUCE", false},

		// Catalog names.
		{"unknown model", step, with(okStep, "model.name", "gpt-9"), nf, "model.name", "unknown model", false},
		{"unknown cluster", step, with(okStep, "cluster.name", "dgx-z"), nf, "cluster.name", "unknown", false},
		{"unknown base", step, with(okStep, "cluster", raw(`{"definition": {"base": "dgx-z"}}`)), nf, "cluster.definition.base", "unknown", false},
		{"unknown GPU", step, with(okStep, "cluster", raw(def(`"gpu_name": "h900"`))), nf, "cluster.definition.gpu_name", "unknown", false},
		{"unknown cluster in a plan", plan, with(okPlan, "cluster.name", "tpu-v5"), nf, "cluster.name", "unknown", false},

		// Training.
		{"seq_len 0", step, with(okStep, "training.seq_len", 0), ia, "training.seq_len", "must be between 1 and 16777216", false},
		{"seq_len negative", step, with(okStep, "training.seq_len", -8192), ia, "training.seq_len", "must be between 1 and", false},
		{"seq_len huge", step, with(okStep, "training.seq_len", 1<<30), ia, "training.seq_len", "must be between 1 and 16777216", false},
		{"seq_len over int32", step, with(okStep, "training.seq_len", raw(`4294967296`)), ia, "training.seq_len", "must be an integer between", true},
		{"seq_len a string", step, with(okStep, "training.seq_len", "long"), ia, "training.seq_len", "must be an integer", true},
		{"seq_len a fraction", step, with(okStep, "training.seq_len", 8192.5), ia, "training.seq_len", "must be an integer", true},
		{"global_batch 0", step, with(okStep, "training.global_batch", 0), ia, "training.global_batch", "must be between 1 and", false},
		{"global_batch negative", step, with(okStep, "training.global_batch", -512), ia, "training.global_batch", "must be between 1 and", false},
		{"global_batch huge", step, with(okStep, "training.global_batch", "9223372036854775807"), ia, "training.global_batch", "must be between 1 and", false},
		{"global_tokens negative", step, with(okStep, "training.global_batch", del, "training.global_tokens", -8192), ia, "training.global_tokens", "must be between 0 and", false},
		{"global_tokens not whole sequences", step, with(okStep, "training.global_batch", del, "training.global_tokens", 8193), ia, "training.global_tokens", "whole number of sequences", false},
		{"micro_batch not dividing the batch", step, with(okStep, "layout.micro_batch", 3), ia, "training.global_batch", "multiple of dp × micro_batch", false},
		{"precision out of range", step, with(okStep, "training.precision", 7), ia, "training.precision", "must be one of PRECISION_BF16, PRECISION_FP16, PRECISION_FP8", false},
		{"precision unknown name", step, with(okStep, "training.precision", "PRECISION_FP4"), ia, "training.precision", "must be one of PRECISION_BF16", true},
		{"fp8 on A100", step, with(okStep, "cluster.name", "dgx-a100", "training.precision", "PRECISION_FP8"), ia, "training.precision", "PRECISION_FP8 needs a GPU with an fp8 rate", false},
		{"optimizer NaN", step, with(okStep, "training.optimizer", raw(`{"weight_bytes": "NaN", "grad_bytes": 2}`)), ia, "training.optimizer.weight_bytes", "from 0.125 (one bit) to 64 bytes", false},
		{"optimizer without bytes", step, with(okStep, "training.optimizer", raw(`{"name": "lion"}`)), ia, "training.optimizer.weight_bytes", "from 0.125 (one bit) to 64 bytes", false},
		{"training an array", step, with(okStep, "training", raw(`[8192, 512]`)), ia, "training", "must be an object", true},

		// Layout.
		{"tp negative", step, with(okStep, "layout.tp", -8), ia, "layout.tp", "must be between 1 and 65536", false},
		{"tp not dividing heads", step, with(okStep, "layout.tp", 3), ia, "layout.tp", "must divide the 64 attention heads", false},
		{"pp negative", step, with(okStep, "layout.pp", -2), ia, "layout.pp", "must be between 1 and", false},
		{"slow GPU faster than itself", step, with(okStep, "slow_gpu_speed", 1.5), ia, "slow_gpu_speed", "from 0.01 to 1", false},
		{"slow GPU speed negative", plan, with(okPlan, "slow_gpu_speed", -0.5), ia, "slow_gpu_speed", "from 0.01 to 1", false},
		{"more pipeline chunks than layers", step, with(okStep, "layout.virtual_stages", 41, "layout.schedule", "SCHEDULE_INTERLEAVED"), ia, "layout.pp", "must be at most the 80 layers", false},
		{"dp 0", step, with(okStep, "layout.dp", 0), ia, "layout.dp", "must be between 1 and", false},
		{"dp huge", step, with(okStep, "layout.dp", 1<<20), ia, "layout", "--max-gpus", false},
		{"dp at int32's limit", step, with(okStep, "layout.dp", 2147483647, "layout.cp", 2147483647), ia, "layout", "--max-gpus", false},
		{"cp not dividing seq_len", step, with(okStep, "layout.cp", 3), ia, "layout.cp", "must divide the sequence length", false},
		{"ep without experts", step, with(okStep, "layout.ep", 2), ia, "layout.ep", "needs an MoE model", false},
		{"micro_batch 0", step, with(okStep, "layout.micro_batch", 0), ia, "layout.micro_batch", "must be between 1 and", false},
		{"zero 4", step, with(okStep, "layout.zero", 4), ia, "layout.zero", "must be 0, 1, 2 or 3", false},
		{"recompute out of range", step, with(okStep, "layout.recompute", 9), ia, "layout.recompute", "must be one of RECOMPUTE_NONE", false},
		{"recompute unknown name", step, with(okStep, "layout.recompute", "RECOMPUTE_SOMETIMES"), ia, "layout.recompute", "must be one of RECOMPUTE_NONE", true},
		{"schedule negative", step, with(okStep, "layout.schedule", -1), ia, "layout.schedule", "must be one of SCHEDULE_GPIPE", false},
		{"layer_split element a string", step, with(okStep, "layout.layer_split", raw(`[40, "forty"]`)), ia, "layout.layer_split[1]", "must be an integer", true},

		// Models by architecture or parameter count.
		{"architecture with 0 layers", step, with(okStep, "model", raw(`{"architecture": {"layers": 0, "hidden": 4096, "heads": 32, "ffn": 16384, "vocab": 32000}}`)), ia, "model.architecture.layers", "between 1 and 10000", false},
		{"architecture with 0 heads", step, with(okStep, "model", raw(`{"architecture": {"layers": 32, "hidden": 4096, "heads": 0, "ffn": 16384, "vocab": 32000}}`)), ia, "model.architecture.heads", "between 1 and", false},
		{"hidden not divisible by heads", step, with(okStep, "model", raw(`{"architecture": {"layers": 32, "hidden": 4000, "heads": 48, "ffn": 16384, "vocab": 32000}}`)), ia, "model.architecture.heads", "must divide hidden (4000)", false},
		{"kv_heads not dividing heads", step, with(okStep, "model", raw(`{"architecture": {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 5, "ffn": 16384, "vocab": 32000}}`)), ia, "model.architecture.kv_heads", "must divide heads", false},
		{"MoE top_k over experts", step, with(okStep, "model", raw(`{"architecture": {"layers": 32, "hidden": 4096, "heads": 32, "ffn": 16384, "vocab": 32000, "moe": {"experts": 8, "top_k": 9}}}`)), ia, "model.architecture.moe.top_k", "between 1 and 8", false},
		{"params 0", step, with(okStep, "model", raw(`{"params": 0}`)), ia, "model.params", "from 1e+07 up to 1e+14", false},
		{"params negative", step, with(okStep, "model", raw(`{"params": -7e9}`)), ia, "model.params", "from 1e+07 up to 1e+14", false},
		{"params absurd", step, with(okStep, "model", raw(`{"params": 1e20}`)), ia, "model.params", "from 1e+07 up to 1e+14", false},
		{"params Infinity", step, with(okStep, "model", raw(`{"params": "Infinity"}`)), ia, "model.params", "finite number", false},
		{"params NaN", step, with(okStep, "model", raw(`{"params": "NaN"}`)), ia, "model.params", "finite number", false},
		{"params a word", step, with(okStep, "model", raw(`{"params": "seven billion"}`)), ia, "model.params", "must be a number", true},
		{"name and params", step, with(okStep, "model", raw(`{"name": "llama3-8b", "params": 8e9}`)), ia, "model.params", "only one of name, architecture, params", true},

		// Cluster definitions.
		{"gpus_per_node 0 without a base", step, with(okStep, "cluster", raw(`{"definition": {"name": "x", "gpu_name": "H100-SXM"}}`)), ia, "cluster.definition.gpus_per_node", "between 1 and 72", false},
		{"gpus_per_node negative", step, with(okStep, "cluster", raw(def(`"gpus_per_node": -8`))), ia, "cluster.definition.gpus_per_node", "between 1 and 72", false},
		{"gpus_per_node huge", step, with(okStep, "cluster", raw(def(`"gpus_per_node": 1000000`))), ia, "cluster.definition.gpus_per_node", "between 1 and 72", false},
		{"negative NIC bandwidth", step, with(okStep, "cluster", raw(def(`"nics": {"gbps": -400}`))), ia, "cluster.definition.nics.gbps", "positive finite number", false},
		{"negative NVLink bandwidth", step, with(okStep, "cluster", raw(def(`"intra": {"gpu_bandwidth_gbps": -900}`))), ia, "cluster.definition.intra.gpu_bandwidth_gbps", "positive finite number", false},
		{"NVLink bandwidth denormal", step, with(okStep, "cluster", raw(def(`"intra": {"gpu_bandwidth_gbps": 9e-308}`))), ia, "cluster.definition.intra.gpu_bandwidth_gbps", "from 0.001 to 1e+06", false},
		{"NIC latency huge", step, with(okStep, "cluster", raw(def(`"nics": {"latency_us": 1e300}`))), ia, "cluster.definition.nics.latency_us", "from 0 to 1e+06", false},
		{"efficiency NaN", step, with(okStep, "cluster", raw(def(`"intra": {"efficiency": "NaN"}`))), ia, "cluster.definition.intra.efficiency", "must be in (0, 1]", false},
		{"GPU memory Infinity", step, with(okStep, "cluster", raw(def(`"gpu": {"name": "x", "arch": "hopper", "peak_tflops": {"bf16": 990}, "memory_gb": "Infinity", "memory_bandwidth_gbps": 3350, "nvlink_gbps": 450}`))), ia, "cluster.definition.gpu.memory_gb", "positive finite number", false},
		{"GPU without a 16-bit rate", step, with(okStep, "cluster", raw(def(`"gpu": {"name": "x", "arch": "hopper", "peak_tflops": {"fp32": 67}, "memory_gb": 80, "memory_bandwidth_gbps": 3350, "nvlink_gbps": 450}`))), ia, "cluster.definition.gpu.peak_tflops", "bf16 or fp16", false},
		{"NIC kind unknown", step, with(okStep, "cluster", raw(def(`"nics": {"kind": "smoke"}`))), ia, "cluster.definition.nics.kind", "must be infiniband, roce or efa", false},
		{"host cpu unknown", step, with(okStep, "cluster", raw(def(`"host": {"cpu": "arm"}`))), ia, "cluster.definition.host.cpu", `must be "x86" or "grace" (got "arm")`, false},
		{"host cpu capitalised", step, with(okStep, "cluster", raw(def(`"host": {"cpu": "Grace"}`))), ia, "cluster.definition.host.cpu", `(got "Grace")`, false},
		{"host cpu in a collective", coll, with(okColl, "cluster", raw(def(`"host": {"cpu": "aarch64"}`))), ia, "cluster.definition.host.cpu", `must be "x86" or "grace"`, false},
		{"host cpu with half a host", step, with(okStep, "cluster", raw(`{"definition": {"name": "x", "gpu_name": "H100-SXM", "gpus_per_node": 8, "host": {"cpu": "grace", "link_gbps": 450}}}`)), ia, "cluster.definition.host.memory_gb", "positive", false},
		{"host cpu a number", step, with(okStep, "cluster", raw(def(`"host": {"cpu": 86}`))), ia, "cluster.definition.host.cpu", "must be a string", true},
		{"nccl release malformed", step, with(okStep, "cluster", raw(def(`"nccl": "v2.28.9-1"`))), ia, "cluster.definition.nccl", "major.minor", false},
		{"nccl release in a collective", coll, with(okColl, "cluster", raw(def(`"nccl": "2"`))), ia, "cluster.definition.nccl", `(got "2")`, false},
		{"nccl release a number", step, with(okStep, "cluster", raw(def(`"nccl": 2.28`))), ia, "cluster.definition.nccl", "must be a string", true},
		{"gpu and gpu_name", step, with(okStep, "cluster", raw(def(`"gpu_name": "H200", "gpu": {"name": "x"}`))), ia, "cluster.definition.gpu_name", "not both", false},
		{"nodes negative", step, with(okStep, "cluster.nodes", -1), ia, "cluster.nodes", "between 0 and 65536", false},
		{"nodes over the limit", step, with(okStep, "cluster.nodes", 1000), ia, "cluster.nodes", "--max-gpus", false},
		{"unknown cluster field", step, with(okStep, "cluster.definition", raw(`{"base": "dgx-h100", "speed": "fast"}`)), ia, "cluster.definition.speed", `unknown field "speed": stepcost.v1.ClusterDefinition has name, base`, true},

		// Plans.
		{"gpus negative", plan, with(okPlan, "gpus", -32), ia, "gpus", "must be between 1 and", false},
		{"gpus over the limit", plan, with(okPlan, "gpus", 100000), ia, "gpus", "limit of 4096", false},
		{"max_gpus over the limit", plan, with(okPlan, "gpus", del, "max_gpus", 100000), ia, "max_gpus", "limit of 4096", false},
		{"min_gpus over max_gpus", plan, with(okPlan, "gpus", del, "min_gpus", 64, "max_gpus", 32), ia, "min_gpus", "between 0 and max_gpus", false},
		{"seq_len 0 in a plan", plan, with(okPlan, "training.seq_len", 0), ia, "training.seq_len", "must be between 1 and", false},
		{"global_tokens only, not whole", plan, with(okPlan, "training.global_batch", del, "training.global_tokens", 100), ia, "training.global_tokens", "whole number of sequences", false},
		{"fp8 on A100 in a plan", plan, with(okPlan, "cluster.name", "dgx-a100", "training.precision", "PRECISION_FP8"), ia, "training.precision", "fp8", false},
		{"free node negative", plan, with(okPlan, "cluster.free_gpus", raw(`[{"node": -1, "gpus": [0]}]`)), ia, "cluster.free_gpus[0].node", "between 0 and", false},
		{"free node listed twice", plan, with(okPlan, "cluster.free_gpus", raw(`[{"node": 2, "gpus": [0]}, {"node": 2, "gpus": [1]}]`)), ia, "cluster.free_gpus[1].node", "listed twice", false},
		{"free GPU out of range", plan, with(okPlan, "cluster.free_gpus", raw(`[{"node": 0, "gpus": [0, 8]}]`)), ia, "cluster.free_gpus[0].gpus[1]", "0 to 7", false},
		{"free GPU listed twice", plan, with(okPlan, "cluster.free_gpus", raw(`[{"node": 0, "gpus": [3, 3]}]`)), ia, "cluster.free_gpus[0].gpus[1]", "listed twice", false},
		{"constraint tp 0", plan, with(okPlan, "constraints", raw(`{"tp": [2, 0]}`)), ia, "constraints.tp[1]", "must be between 1 and 65536", false},
		{"constraint pp huge", plan, with(okPlan, "constraints", raw(`{"pp": [100000]}`)), ia, "constraints.pp[0]", "must be between 1 and 65536", false},
		{"constraint zero 5", plan, with(okPlan, "constraints", raw(`{"zero": [1, 5]}`)), ia, "constraints.zero[1]", "0–3", false},
		{"constraint recompute unspecified", plan, with(okPlan, "constraints", raw(`{"recompute": [0]}`)), ia, "constraints.recompute[0]", "must be RECOMPUTE_NONE", false},
		{"constraint schedule out of range", plan, with(okPlan, "constraints", raw(`{"schedules": [9]}`)), ia, "constraints.schedules[0]", "must be SCHEDULE_GPIPE", false},
		{"constraint even_split with uneven_pp", plan, with(okPlan, "constraints", raw(`{"even_split": true, "uneven_pp": true}`)), ia, "constraints.even_split", "uneven_pp asks for uneven ones", false},
		{"constraint even_split a word", plan, with(okPlan, "constraints", raw(`{"even_split": "yes"}`)), ia, "constraints.even_split", "must be true or false", true},
		{"constraint experts_whole element a word", plan, with(okPlan, "constraints", raw(`{"experts_whole": [true, "whole"]}`)), ia, "constraints.experts_whole[1]", "must be true or false", true},
		{"constraint experts_whole not a list", plan, with(okPlan, "constraints", raw(`{"experts_whole": true}`)), ia, "constraints.experts_whole", "must be an array", true},
		{"constraint experts_whole without sp", plan, with(okPlan, "model.name", "mixtral-8x7b", "constraints", raw(`{"experts_whole": [true], "sp": [false]}`)), ia, "constraints.experts_whole", "need sequence parallelism", false},
		{"constraint max_micro_batch negative", plan, with(okPlan, "constraints", raw(`{"max_micro_batch": -1}`)), ia, "constraints.max_micro_batch", "must be between", false},
		{"min_headroom_gb NaN", plan, with(okPlan, "constraints", raw(`{"min_headroom_gb": "NaN"}`)), ia, "constraints.min_headroom_gb", "less than the GPU's", false},
		{"min_headroom_gb over the memory", plan, with(okPlan, "constraints", raw(`{"min_headroom_gb": 1000}`)), ia, "constraints.min_headroom_gb", "less than the GPU's", false},
		{"cost objective without a price", plan, with(okPlan, "objective", "OBJECTIVE_COST"), ia, "objective", "needs price_per_gpu_hour > 0", false},
		{"price negative", plan, with(okPlan, "price_per_gpu_hour", -2), ia, "price_per_gpu_hour", "must be 0 (none) or from 1e-06 to 1e+06", false},
		{"token_budget Infinity", plan, with(okPlan, "token_budget", "Infinity"), ia, "token_budget", "must be between 0 and", false},
		{"objective out of range", plan, with(okPlan, "objective", 9), ia, "objective", "must be one of OBJECTIVE_STEP_TIME", false},
		{"top_k negative", plan, with(okPlan, "top_k", -3), ia, "top_k", "must be between 1 and 1000", false},
		{"search too wide", plan, okPlan, ia, "gpus", "--max-candidates", false},
		{"unknown plan field", plan, with(okPlan, "speed", "fast"), ia, "speed", `unknown field "speed": stepcost.v1.EstimatePlanRequest has model, cluster`, true},
		{"constraints a list", plan, with(okPlan, "constraints", raw(`[1, 2]`)), ia, "constraints", "must be an object", true},
		{"trailing data", plan, okPlan + ` {"gpus": 64}`, ia, "", "malformed JSON", true},
		{"not JSON", plan, `gpus=32`, ia, "", "malformed JSON", true},

		// Batches.
		{"no configs", rank, `{"configs": []}`, ia, "configs", "at least one config", false},
		{"configs over the limit", rank, with(`{}`, "configs", items(5)), ia, "configs", "--max-rank-configs", false},
		{"rank cost with a NaN price", rank, with(`{}`, "configs", items(1), "objective", "OBJECTIVE_COST", "price_per_gpu_hour", "NaN", "token_budget", 1e12), ia, "price_per_gpu_hour", "must be 0 (none) or from 1e-06 to 1e+06", false},
		{"rank objective out of range", rank, with(`{}`, "configs", items(1), "objective", 12), ia, "objective", "must be one of", false},
		{"config with an unknown field", rank, with(`{}`, "configs", raw(`[{"layout": {"tq": 8}}]`)), ia, "configs[0].layout.tq", `unknown field "tq": stepcost.v1.Layout has tp, pp`, true},

		// Collectives.
		{"size negative", coll, with(okColl, "size_bytes", -1), ia, "size_bytes", "between 1 and 2^50", false},
		{"size 0", coll, with(okColl, "size_bytes", 0), ia, "size_bytes", "between 1 and 2^50", false},
		{"size over 1 PiB", coll, with(okColl, "size_bytes", int64(1)<<51), ia, "size_bytes", "between 1 and 2^50", false},
		{"size a fraction", coll, with(okColl, "size_bytes", 1.5), ia, "size_bytes", "64-bit integer", true},
		{"nodes negative in a collective", coll, with(okColl, "nodes", -4), ia, "nodes", "at least 1", false},
		{"nodes over the limit in a collective", coll, with(okColl, "nodes", 10000), ia, "nodes", "must be between 1 and 512 nodes of 8 GPUs, the service's limit of 4096 GPUs (flag --max-gpus; got 10000)", false},
		{"gpus_per_node not dividing", coll, with(okColl, "gpus_per_node", 3), ia, "gpus_per_node", "must divide the 8 GPUs", false},
		{"gpus_per_node negative", coll, with(okColl, "gpus_per_node", -2), ia, "gpus_per_node", "must divide the 8 GPUs", false},
		{"a group of one GPU", coll, with(okColl, "nodes", 1, "gpus_per_node", 1), ia, "gpus_per_node", "at least 2 GPUs", false},
		{"collective out of range", coll, with(okColl, "collective", 42), ia, "collective", "must be one of COLLECTIVE_ALL_REDUCE", false},
		{"collective unknown name", coll, with(okColl, "collective", "COLLECTIVE_GOSSIP"), ia, "collective", "must be one of COLLECTIVE_ALL_REDUCE", true},
		{"algorithm out of range", coll, with(okColl, "algorithm", 99), ia, "algorithm", "must be one of ALGORITHM_RING", false},
		{"tree for an all-gather", coll, with(okColl, "collective", "COLLECTIVE_ALL_GATHER", "algorithm", "ALGORITHM_TREE"), ia, "algorithm", "trees are used for all-reduce only", false},
		{"NVLS across nodes", coll, with(okColl, "algorithm", "ALGORITHM_NVLS"), ia, "algorithm", "NVLS works inside one NVLink domain", false},
		{"protocol out of range", coll, with(okColl, "protocol", 4), ia, "protocol", "must be one of PROTOCOL_SIMPLE", false},
		{"launch out of range", coll, with(okColl, "launch", -1), ia, "launch", "must be one of LAUNCH_PER_PROCESS", false},
		{"concurrent a string", coll, with(okColl, "concurrent", "yes"), ia, "concurrent", "must be true or false", true},

		// Size: over --max-request-bytes. gRPC refuses it in the transport (no field);
		// REST answers 413.
		{"oversize request", step, with(okStep, "model.name", strings.Repeat("x", malformedMaxBytes)), re, "", "", false},
	}
}

// restError is the gateway's JSON error body.
type restError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Details []struct {
		Type            string `json:"@type"`
		FieldViolations []struct {
			Field       string `json:"field"`
			Description string `json:"description"`
		} `json:"field_violations"`
	} `json:"details"`
}

// TestMalformedRequests sends every malformed request to the real daemon over gRPC
// and REST: each is refused with the right code and HTTP status, naming the field
// (as a google.rpc.BadRequest violation, the JSON "details" over REST) and the rule.
func TestMalformedRequests(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.Limits = malformedLimits; c.MaxRequestBytes = malformedMaxBytes })
	defer d.stop()
	conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewStepcostServiceClient(conn)
	cases := malformedCases()
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		rpc, ok := rpcs[tc.method]
		if !ok {
			t.Fatalf("%s: no method %s", tc.name, tc.method)
		}
		req := rpc.newReq()
		if err := protojson.Unmarshal([]byte(tc.body), req); (err == nil) == tc.rest {
			t.Fatalf("%s: a gRPC client can encode the body: %v, but the case says REST only: %v", tc.name, err == nil, tc.rest)
		}
		t.Run(tc.name+"/grpc", func(t *testing.T) {
			if tc.rest {
				return // nothing a gRPC client can send
			}
			_, err := rpc.call(context.Background(), client, req)
			r := grpcRefusal(err)
			checkRefusal(t, tc, r.code, r.msg, r.violations)
		})
		t.Run(tc.name+"/rest", func(t *testing.T) {
			want := runtime.HTTPStatusFromCode(tc.code)
			if tc.name == "oversize request" {
				want = http.StatusRequestEntityTooLarge
			}
			r := postRefusal(t, d, rpc.path, tc.body, want)
			checkRefusal(t, tc, r.code, r.msg, r.violations)
			if testing.Verbose() {
				t.Logf("HTTP %d %s", r.http, r.body)
			}
		})
	}
}

// refusal is an error answer: its code, message and google.rpc.BadRequest field
// violations ({field, description}), and over REST the HTTP status and body.
type refusal struct {
	code       codes.Code
	msg        string
	violations [][2]string
	http       int
	body       []byte
}

// grpcRefusal is the refusal a gRPC call's error carries.
func grpcRefusal(err error) refusal {
	st := status.Convert(err)
	r := refusal{code: st.Code(), msg: st.Message()}
	for _, det := range st.Details() {
		if br, ok := det.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				r.violations = append(r.violations, [2]string{v.GetField(), v.GetDescription()})
			}
		}
	}
	return r
}

// postRefusal posts body to the daemon's REST path and returns its error answer,
// failing the test when the HTTP status is not want (an error) or the body is
// not an error answer (fatal).
func postRefusal(t *testing.T, d daemon, path, body string, want int) refusal {
	t.Helper()
	client := http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post("http://"+d.httpAddr+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Errorf("HTTP %d, want %d: %.300s", resp.StatusCode, want, b)
	}
	var e restError
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %.300q: %v", b, err)
	}
	r := refusal{code: codes.Code(e.Code), msg: e.Message, http: resp.StatusCode, body: b}
	for _, det := range e.Details {
		if det.Type == "type.googleapis.com/google.rpc.BadRequest" {
			for _, v := range det.FieldViolations {
				r.violations = append(r.violations, [2]string{v.Field, v.Description})
			}
		}
	}
	return r
}

func checkRefusal(t *testing.T, tc malformed, code codes.Code, msg string, vs [][2]string) {
	t.Helper()
	if code != tc.code {
		t.Fatalf("code %v, want %v: %s", code, tc.code, msg)
	}
	if tc.field == "" {
		if !strings.Contains(msg, tc.rule) {
			t.Errorf("message %q does not say %q", msg, tc.rule)
		}
		return
	}
	for _, v := range vs {
		if v[0] == tc.field {
			if !strings.Contains(v[1], tc.rule) {
				t.Errorf("%s: %q does not state the rule %q", v[0], v[1], tc.rule)
			}
			if !strings.Contains(msg, tc.field) {
				t.Errorf("message %q does not name %s", msg, tc.field)
			}
			return
		}
	}
	t.Errorf("no violation of %s in %v (message %q)", tc.field, vs, msg)
}

// One bad config of a batch fails alone, with its own code and violation, over both
// transports.
func TestMalformedBatchItem(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.Limits = malformedLimits })
	defer d.stop()
	body := with(`{}`, "configs", raw(`[`+okStep+`,`+with(okStep, "layout.tp", 3)+`,`+with(okStep, "model.name", "gpt-9")+`]`))
	check := func(t *testing.T, r *pb.RankConfigsResponse) {
		res := r.GetResults()
		if len(res) != 3 || res[0].GetRank() != 1 || res[0].GetError() != nil {
			t.Fatalf("results %v", res)
		}
		for i, want := range []struct{ code, field string }{{"INVALID_ARGUMENT", "layout.tp"}, {"NOT_FOUND", "model.name"}} {
			e := res[i+1].GetError()
			if e.GetCode() != want.code || len(e.GetViolations()) == 0 || e.GetViolations()[0].GetField() != want.field || res[i+1].GetRank() != 0 {
				t.Errorf("item %d: %v, want %s on %s", i+1, e, want.code, want.field)
			}
		}
	}
	t.Run("grpc", func(t *testing.T) {
		conn := grpcConn(t, d)
		var req pb.RankConfigsRequest
		if err := protojson.Unmarshal([]byte(body), &req); err != nil {
			t.Fatal(err)
		}
		r, err := pb.NewStepcostServiceClient(conn).RankConfigs(context.Background(), &req)
		if err != nil {
			t.Fatal(err)
		}
		check(t, r)
	})
	t.Run("rest", func(t *testing.T) {
		resp, err := http.Post("http://"+d.httpAddr+"/v1/configs:rank", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r pb.RankConfigsResponse
		if err := protojson.Unmarshal(b, &r); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("HTTP %d %s: %v", resp.StatusCode, b, err)
		}
		check(t, &r)
	})
}
