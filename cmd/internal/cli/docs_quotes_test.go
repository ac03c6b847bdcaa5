package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server"
)

// docQuote is a text the README or a doc quotes a command line or a request
// answering: a refusal, a note, a line of a table. Either args (a command line,
// with dir the test's temporary directory holding the files setup wrote) or
// request (a path of the REST API and its JSON body) says what answers it.
type docQuote struct {
	file    string // README.md or docs/NAME.md
	quote   string // as the file writes it, "…" where it leaves words out
	args    func(t *testing.T, dir string) []string
	exit    int
	path    string // /v1/plans:estimate, /v1/steps:estimate or /v1/collectives:simulate
	request string
}

// oneLine is a text with its runs of white space, line breaks included, as one space:
// a quote wraps where its paragraph does.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// containsInOrder: every part of quote between its "…" is in text, in order.
func containsInOrder(text, quote string) bool {
	for _, part := range strings.Split(quote, "…") {
		part = strings.TrimSpace(part)
		i := strings.Index(text, part)
		if i < 0 {
			return false
		}
		text = text[i+len(part):]
	}
	return true
}

func fixed(args ...string) func(*testing.T, string) []string {
	return func(*testing.T, string) []string { return args }
}

// lambdaPair writes Lambda's two-node B200 all-reduce output as lambda.txt (its
// nccl-tests header states NCCL 2.26.2) and again as ar.txt without the line that
// states it, as docs/calibrate.md's report section names them.
func lambdaPair(t *testing.T, dir string) []string {
	full, err := os.ReadFile("../../../estimator/calibrate/testdata/b200-ib/dstack-lambda-allreduce.txt")
	if err != nil {
		t.Fatal(err)
	}
	stated, none := filepath.Join(dir, "lambda.txt"), filepath.Join(dir, "ar.txt")
	cut := bytes.Replace(full, []byte("nccl-headers=22602 nccl-library=22602"), nil, 1)
	if bytes.Equal(cut, full) {
		t.Fatal("dstack-lambda-allreduce.txt states no nccl-library")
	}
	for f, data := range map[string][]byte{stated: full, none: cut} {
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"calibrate", "--cluster", "hgx-b200", "--nodes", "2", "--gpus-per-node", "8", stated, none}
}

// badAlgorithms writes a cluster file whose measured ranges name an algorithm
// that cannot run the operation and one that does not exist.
func badAlgorithms(t *testing.T, dir string) []string {
	f := filepath.Join(dir, "algorithms.yaml")
	ranges := "base: dgx-h100\nalgorithms: [{algo: dbtree, op: allgather, min_bytes: 1, max_bytes: 2}, {algo: butterfly, op: allreduce, min_bytes: 1, max_bytes: 2}]\n"
	if err := os.WriteFile(f, []byte(ranges), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"collective", "--cluster-file", f, "--nodes", "2", "--op", "allreduce", "--size", "1MiB"}
}

// documentedQuotes are the refusals, notes and lines the README and the docs quote,
// each with what prints it.
var documentedQuotes = []docQuote{
	{file: "README.md", exit: 2,
		quote: `stepcost plan: invalid argument "interleave" for "--schedule" flag: want a comma-separated list of gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe; did you mean "interleaved"? Run 'stepcost plan --help' for usage.`,
		args:  fixed("plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "256", "--gbs", "1024", "--seq", "8192", "--schedule", "interleave")},
	{file: "README.md", exit: 2,
		quote: `stepcost plan: unknown flag --gpu; did you mean "--gpus"?`,
		args:  fixed("plan", "--gpu", "256")},
	{file: "README.md", exit: 1,
		quote: `--tp: given twice, as "4" and "8"; give it once (a list in one value, comma-separated: --tp 4,8)`,
		args:  fixed("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "32", "--gbs", "256", "--seq", "8192", "--tp", "4", "--tp", "8")},
	{file: "README.md", exit: 1,
		quote: `--exclude-nodes 3,7`,
		args:  fixed("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "32", "--gbs", "256", "--seq", "8192", "--exclude-nodes", "3", "--exclude-nodes", "7")},
	{file: "docs/operating.md", exit: 1,
		quote: `--tls-ca: only with --server …`,
		args:  fixed("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "8192", "--tls-ca", "ca.pem")},
	{file: "docs/collective.md",
		quote: `NCCL 2.27's rules: the cluster states no release (nccl)`,
		args:  fixed("collective", "--cluster", "dgx-h100", "--nodes", "4", "--op", "allreduce", "--size", "1GiB")},
	{file: "docs/cluster-file.md",
		quote: `NCCL 2.29, the cluster's release (nccl)`,
		args: func(t *testing.T, dir string) []string {
			f := filepath.Join(dir, "nccl229.yaml")
			if err := os.WriteFile(f, []byte("base: dgx-h100\nnccl: \"2.29\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"collective", "--cluster-file", f, "--nodes", "4", "--op", "allreduce", "--size", "1GiB"}
		}},
	{file: "docs/cluster-file.md", exit: 1,
		quote: `Nodes: unknown field; did you mean "nodes"? (keys are case-sensitive)`,
		args: func(t *testing.T, dir string) []string {
			f := filepath.Join(dir, "case.yaml")
			if err := os.WriteFile(f, []byte("base: dgx-h100\nNodes: 16\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"collective", "--cluster-file", f, "--nodes", "2", "--op", "allreduce", "--size", "1MiB"}
		}},
	{file: "docs/cluster-file.md", exit: 1,
		quote: `gpu.memory: unknown field; gpu takes name, arch, peak_tflops, memory_gb, memory_bandwidth_gbps, nvlink_gbps, sms, source`,
		args: func(t *testing.T, dir string) []string {
			f := filepath.Join(dir, "gpu.yaml")
			if err := os.WriteFile(f, []byte("base: dgx-h100\ngpu: {memory: 80}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"collective", "--cluster-file", f, "--nodes", "2", "--op", "allreduce", "--size", "1MiB"}
		}},
	{file: "docs/cluster-file.md", exit: 1,
		quote: `nics.gbps: must be a positive finite number from 0.001 to 1e+06 (got -1)`,
		args: func(t *testing.T, dir string) []string {
			f := filepath.Join(dir, "nics.yaml")
			if err := os.WriteFile(f, []byte("base: dgx-h100\nnics: {gbps: -1}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"collective", "--cluster-file", f, "--nodes", "2", "--op", "allreduce", "--size", "1MiB"}
		}},
	{file: "docs/cluster-file.md", exit: 1,
		quote: `algorithms[0].algo: dbtree cannot run allgather`,
		args:  badAlgorithms},
	{file: "docs/cluster-file.md", exit: 1,
		quote: `algorithms[1].algo: unknown algorithm "butterfly"`,
		args:  badAlgorithms},
	{file: "docs/calibrate.md",
		quote: `lambda.txt ran NCCL 2.26.2 (its output says so): priced by its rules`,
		args:  lambdaPair},
	{file: "docs/calibrate.md",
		quote: `ar.txt states no NCCL release: priced by the base's, NCCL 2.27's rules: the cluster states no release (nccl)`,
		args:  lambdaPair},
	{file: "docs/calibrate.md",
		quote: `…; the fitted cluster file is written for the base's NCCL 2.28, the cluster's release (nccl)`,
		args: func(t *testing.T, dir string) []string {
			args := lambdaPair(t, dir)
			base := filepath.Join(dir, "b200-nccl228.yaml")
			if err := os.WriteFile(base, []byte("base: hgx-b200\nnccl: \"2.28\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return append([]string{"calibrate", "--cluster-file", base}, args[3:len(args)-1]...)
		}},
	{file: "docs/calibrate.md", exit: 1,
		quote: `bf16.log:2: tflops ÷ mfu = 367.39 ÷ 37.15 % = 988.9 TFLOP/s, the bf16 peak torchtitan divides by on an H100 SXM or H200 …, not on the base cluster dgx-a100's A100-80GB (312 TFLOP/s)`,
		args: func(t *testing.T, dir string) []string {
			td := "../../../estimator/calibrate/testdata/trainlogs/"
			log, err := os.ReadFile(td + "torchao-pretraining-bf16.log")
			if err != nil {
				t.Fatal(err)
			}
			layouts, err := os.ReadFile(td + "layout.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var layout string
			for _, l := range strings.Split(string(layouts), "\n") {
				if v, ok := strings.CutPrefix(l, "torchao-pretraining-bf16.log:"); ok {
					layout = "bf16.log:" + v + "\n"
				}
			}
			if layout == "" {
				t.Fatal("layout.yaml has no torchao-pretraining-bf16.log")
			}
			f, l := filepath.Join(dir, "bf16.log"), filepath.Join(dir, "bf16.yaml")
			if err := os.WriteFile(f, log, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(l, []byte(layout), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"calibrate", "--cluster", "dgx-a100", "--layout", l, f}
		}},
	{file: "docs/planner.md", exit: 1,
		quote: `--tp [3], --schedule [1f1b interleaved]`,
		args:  fixed("plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--gbs", "1024", "--seq", "8192", "--tp", "3")},
	{file: "docs/planner.md", exit: 1,
		quote: `--schedule: megatron-lm-2021 runs 1f1b or interleaved (got zb-h1)`,
		args:  fixed("estimate", "--model", "gpt3-175b", "--cluster", "dgx-a100", "--gpus", "384", "--tp", "8", "--pp", "8", "--mbs", "1", "--gbs", "1536", "--seq", "2048", "--framework", "megatron-lm-2021", "--schedule", "zb-h1")},
	{file: "docs/planner.md",
		quote: `the constraints leave no layout to search: constraints.tp [3], constraints.schedules [SCHEDULE_1F1B SCHEDULE_INTERLEAVED] (megatron-core's) on 64 GPUs (64 heads, 80 layers, global batch 1024)`,
		path:  "/v1/plans:estimate", request: `{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 1024}, "gpus": 64, "constraints": {"tp": [3]}}`},
	{file: "docs/planner.md",
		quote: `layout.schedule: megatron-lm-2021 runs SCHEDULE_1F1B or SCHEDULE_INTERLEAVED (got SCHEDULE_ZERO_BUBBLE)`,
		path:  "/v1/steps:estimate", request: `{"model": {"name": "gpt3-175b"}, "cluster": {"name": "dgx-a100"}, "training": {"seq_len": 2048, "global_batch": 1536, "framework": "megatron-lm-2021"}, "layout": {"tp": 8, "pp": 8, "dp": 6, "micro_batch": 1, "schedule": "SCHEDULE_ZERO_BUBBLE"}}`},
	{file: "docs/planner.md",
		quote: `constraints.zero[0]: asks for 1, but megatron-lm-2021 runs 0`,
		path:  "/v1/plans:estimate", request: `{"model": {"name": "gpt3-175b"}, "cluster": {"name": "dgx-a100"}, "training": {"seq_len": 2048, "global_batch": 1536, "framework": "megatron-lm-2021"}, "gpus": 384, "constraints": {"zero": [1]}}`},
	{file: "docs/service.md",
		quote: `constraints.sp: … but constraints.tp lists no tp above 1 (got [1])`,
		path:  "/v1/plans:estimate", request: `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 256}, "gpus": 32, "constraints": {"tp": [1], "sp": [true]}}`},
	{file: "docs/service.md",
		quote: `layout.schedule: SCHEDULE_DUALPIPE needs pp ≥ 2 (got pp 1)`,
		path:  "/v1/steps:estimate", request: `{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 512}, "layout": {"tp": 8, "pp": 1, "dp": 4, "micro_batch": 1, "schedule": "SCHEDULE_DUALPIPE"}}`},
	{file: "docs/service.md",
		quote: `layout.tp: must divide the 64 attention heads (got 3)`,
		path:  "/v1/steps:estimate", request: `{"model": {"name": "llama3-70b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 512}, "layout": {"tp": 3, "pp": 2, "dp": 4, "micro_batch": 1}}`},
	{file: "docs/service.md",
		quote: `layout.recompute_modules[1]: must be core_attn, layernorm, mla_up_proj, moe_act, mlp, shared_experts or moe (got "attn")`,
		path:  "/v1/steps:estimate", request: `{"model": {"name": "qwen3-235b-a22b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 1024, "no_dropout": true}, "layout": {"tp": 2, "pp": 8, "dp": 16, "ep": 32, "etp": 1, "sp": true, "zero": 1, "micro_batch": 1, "recompute": "RECOMPUTE_SELECTIVE", "recompute_modules": ["moe_act", "attn"]}}`},
	{file: "docs/service.md",
		quote: `training.fp8_recipe: mxfp8 needs Blackwell's block-scaled tensor cores (the cluster's GPU is H100-SXM, hopper)`,
		path:  "/v1/steps:estimate", request: `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 8, "precision": "PRECISION_FP8", "fp8_recipe": "mxfp8"}, "layout": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1}}`},
	{file: "docs/service.md",
		quote: `training.cp_nccl_max_ctas: must be a number of thread blocks in [1, 256], or 0 for NCCL's default (got 257)`,
		path:  "/v1/steps:estimate", request: `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 8, "cp_nccl_max_ctas": 257}, "layout": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1}}`},
	{file: "docs/service.md",
		quote: `training.dp_nccl_max_ctas: must be a number of thread blocks in [1, 256], or 0 for NCCL's default (got 257)`,
		path:  "/v1/steps:estimate", request: `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 8, "dp_nccl_max_ctas": 257}, "layout": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1}}`},
	{file: "docs/service.md",
		quote: `training.cuda_device_max_connections: must be a number of hardware queues in [1, 32] (CUDA_DEVICE_MAX_CONNECTIONS), or 0 for the framework's launch (got 33)`,
		path:  "/v1/steps:estimate", request: `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 8192, "global_batch": 8, "cuda_device_max_connections": 33}, "layout": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1}}`},
	{file: "docs/cluster-file.md",
		quote: `cluster.definition.nics.gbps: must be a positive finite number from 0.001 to 1e+06 (got -1)`,
		path:  "/v1/collectives:simulate", request: `{"cluster": {"definition": {"base": "dgx-h100", "nics": {"gbps": -1}}}, "nodes": 4, "collective": "COLLECTIVE_ALL_REDUCE", "size_bytes": 1024}`},
	{file: "docs/cluster-file.md",
		quote: `cluster.definition.gpu.memory_gb: must be a positive finite number from 0.001 to 1e+06 (got 0)`,
		path:  "/v1/collectives:simulate", request: `{"cluster": {"definition": {"base": "dgx-h100", "gpu": {"name": "x", "arch": "hopper", "peak_tflops": {"bf16": 989}, "memory_gb": 0, "memory_bandwidth_gbps": 3350, "nvlink_gbps": 900}}}, "nodes": 4, "collective": "COLLECTIVE_ALL_REDUCE", "size_bytes": 1024}`},
	{file: "docs/cluster-file.md",
		quote: `cluster.definition.gpus_per_node: must be between 1 and 72 (got 80)`,
		path:  "/v1/collectives:simulate", request: `{"cluster": {"definition": {"base": "dgx-h100", "gpus_per_node": 80}}, "nodes": 4, "collective": "COLLECTIVE_ALL_REDUCE", "size_bytes": 1024}`},
	{file: "docs/cluster-file.md",
		quote: `cluster.nodes: must be between 0 and 65536 (got 70000)`,
		path:  "/v1/collectives:simulate", request: `{"cluster": {"name": "dgx-h100", "nodes": 70000}, "nodes": 4, "collective": "COLLECTIVE_ALL_REDUCE", "size_bytes": 1024}`},
}

// The refusals, notes and lines the README and the docs quote are what the
// command line and the API print for them: each quote is in its file as written
// (line breaks aside), and the command or request answers it, in order where the
// quote leaves words out with "…". This week's refusals (a flag given twice, TLS
// flags without --server, pins no layout satisfies, a training log of another GPU,
// the NCCL release that priced a call) changed their words; a doc still quoting
// the old words fails here, as a command whose words changed without its doc.
func TestDocumentedQuotesAreWhatIsPrinted(t *testing.T) {
	// The daemon's service: its refusals name enum values as the API does.
	s := server.NewService(server.DefaultLimits(), nil)
	for _, q := range documentedQuotes {
		data, err := os.ReadFile(filepath.Join("../../..", q.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(oneLine(string(data)), oneLine(q.quote)) {
			t.Errorf("%s does not quote %q", q.file, q.quote)
			continue
		}
		var got string
		switch {
		case q.args != nil:
			args := q.args(t, t.TempDir())
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), args, &stdout, &stderr)
			if code != q.exit {
				t.Errorf("%s: %q exits %d, want %d: %s", q.file, args, code, q.exit, stderr.String())
			}
			got = stdout.String() + "\n" + stderr.String()
		default:
			var m proto.Message
			var ask func() (proto.Message, error)
			ctx := context.Background()
			switch q.path {
			case "/v1/plans:estimate":
				r := &pb.EstimatePlanRequest{}
				m, ask = r, func() (proto.Message, error) { return s.EstimatePlan(ctx, r) }
			case "/v1/steps:estimate":
				r := &pb.EstimateStepRequest{}
				m, ask = r, func() (proto.Message, error) { return s.EstimateStep(ctx, r) }
			case "/v1/collectives:simulate":
				r := &pb.SimulateCollectiveRequest{}
				m, ask = r, func() (proto.Message, error) { return s.SimulateCollective(ctx, r) }
			default:
				t.Fatalf("%s: a request to %s, which the test does not know", q.file, q.path)
			}
			if err := protojson.Unmarshal([]byte(q.request), m); err != nil {
				t.Fatalf("%s: %s", q.request, err)
			}
			resp, err := ask()
			if err != nil {
				got = err.Error()
			} else {
				got = protojson.Format(resp)
			}
		}
		if !containsInOrder(oneLine(got), oneLine(q.quote)) {
			t.Errorf("%s quotes %q; it prints:\n%s", q.file, q.quote, got)
		}
	}
}
