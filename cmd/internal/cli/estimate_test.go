package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/stepcost/stepcost/estimator/step/accuracy"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The recomputation policies reach the estimate and are printed back.
func TestEstimateRecomputePolicies(t *testing.T) {
	code, out, errOut := run("estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--dp", "64", "--zero", "3",
		"--mbs", "1", "--gbs", "512", "--seq", "8192", "--recompute", "full", "--zero3-backward-prefetch", "post", "--json")
	if code != 0 || decodeEstimate(t, out).GetTraining().GetZero3BackwardPrefetch() != pb.BackwardPrefetch_BACKWARD_PREFETCH_POST {
		t.Errorf("--zero3-backward-prefetch post: exit %d, %s\n%s", code, errOut, out)
	}
	for _, args := range [][]string{{"--recompute", "ops"}, {"--recompute", "full", "--recompute-layers", "20"}} {
		code, out, errOut := run(append([]string{"estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--tp", "8",
			"--dp", "8", "--mbs", "1", "--gbs", "512", "--seq", "8192", "--sp", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		res := decodeEstimate(t, out)
		l, err := wire.LayoutFromProto(res.GetLayout())
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if len(args) > 2 {
			want = 20
		}
		if string(l.Recompute) != args[1] || l.RecomputeLayers != want || !(res.GetBreakdown().GetRecomputeS() > 0) {
			t.Errorf("%v: estimated %s over %d layers, %v s recomputing", args, l.Recompute, l.RecomputeLayers, res.GetBreakdown().GetRecomputeS())
		}
	}
}

func TestEstimateTable(t *testing.T) {
	code, out, errOut := run("estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "2", "--dp", "4",
		"--mbs", "1", "--gbs", "512", "--seq", "8192", "--recompute", "selective", "--zero", "1", "--sp")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"step time", "MFU", "forward", "backward", "exposed tp comm", "pipeline bubble", "memory per GPU", "fits", "communication", "assumptions:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestEstimateJSONAndArchitecture(t *testing.T) {
	code, out, errOut := run("estimate", "--layers", "96", "--hidden", "12288", "--heads", "96", "--cluster", "dgx-a100", "--gpus", "384",
		"--tp", "8", "--pp", "12", "--mbs", "1", "--gbs", "1536", "--seq", "2048", "--recompute", "full", "--vpp", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	v := decodeEstimate(t, out)
	if v.GetGpus() != 384 || v.GetLayout().GetDp() != 4 || !(v.GetStepTimeS() > 0) || v.GetBreakdown().GetTotalS() != v.GetStepTimeS() {
		t.Errorf("unexpected %v", v)
	}
}

// decodeEstimate is the estimate of estimate --json, which prints the API's
// EstimateStepResponse as the REST gateway does.
func decodeEstimate(t *testing.T, out string) *pb.StepEstimate {
	t.Helper()
	var resp pb.EstimateStepResponse
	if err := protojson.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("not the API's JSON: %v\n%.300s", err, out)
	}
	return resp.GetEstimate()
}

func TestEstimateFromFileAndParams(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "req.json")
	// The API's EstimateStepRequest, as POST /v1/estimate:step takes it.
	body := `{"model": {"name": "llama2-7b"}, "cluster": {"name": "dgx-h100"},
	  "training": {"seq_len": 4096, "global_batch": 64},
	  "layout": {"dp": 8, "micro_batch": 2, "zero": 3, "recompute": "RECOMPUTE_FULL"}}`
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run("estimate", "--in", f); code != 0 || !strings.Contains(out, "ZeRO-3") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	// A flag overrides the file.
	if code, out, errOut := run("estimate", "--in", f, "--mbs", "4"); code != 0 || !strings.Contains(out, "micro-batch 4") {
		t.Fatalf("override: exit %d: %s%s", code, out, errOut)
	}
	if code, out, errOut := run("estimate", "--params", "13e9", "--cluster", "dgx-h100", "--gpus", "16", "--mbs", "1", "--gbs", "64", "--seq", "2048", "--zero", "3"); code != 0 || !strings.Contains(out, "derived") {
		t.Fatalf("--params: exit %d: %s%s", code, out, errOut)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"model": {"name": "llama2-7b"}, "gpu": 8}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run("estimate", "--in", bad); code != 1 || !strings.Contains(errOut, `unknown field "gpu"`) {
		t.Errorf("unknown field: exit %d, %s", code, errOut)
	}
}

func TestEstimateErrors(t *testing.T) {
	base := []string{"--model", "gpt3-175b", "--cluster", "dgx-h100", "--seq", "2048", "--gbs", "1536"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no model", []string{"--cluster", "dgx-h100", "--gpus", "8", "--seq", "2048", "--gbs", "8"}, "--model"},
		{"two models", append([]string{"--params", "7e9"}, base...), "one way"},
		{"unknown model", []string{"--model", "gpt5", "--cluster", "dgx-h100", "--gpus", "8", "--seq", "2048", "--gbs", "8"}, "--model"},
		{"no size", base, "--gpus or --dp"},
		// A job size of 0 given is refused as plan refuses it: --gpus 0 --dp 8
		// was read as --gpus left out (64 GPUs), and --gpus 0 alone said to give
		// the job's size.
		{"gpus 0 given", append([]string{"--gpus", "0", "--tp", "8", "--dp", "8"}, base...), "--gpus: must be at least 1 (got 0)"},
		{"gpus 0 alone", append([]string{"--gpus", "0"}, base...), "--gpus: must be at least 1 (got 0)"},
		{"gpus not multiple", append([]string{"--gpus", "100", "--tp", "8"}, base...), "multiple"},
		{"gpus mismatch", append([]string{"--gpus", "64", "--tp", "8", "--dp", "4"}, base...), "tp×pp×dp×cp"},
		{"tp not dividing heads", append([]string{"--gpus", "56", "--tp", "7"}, base...), "--tp"},
		{"batch not divisible", append([]string{"--gpus", "64", "--tp", "8", "--mbs", "7"}, base...), "--gbs"},
		{"bad recompute", append([]string{"--gpus", "64", "--tp", "8", "--recompute", "some"}, base...), "--recompute"},
		{"recompute layers without full", append([]string{"--gpus", "64", "--tp", "8", "--recompute", "ops", "--recompute-layers", "4"}, base...), "--recompute-layers"},
		{"too many recompute layers", append([]string{"--gpus", "64", "--tp", "8", "--recompute", "full", "--recompute-layers", "97"}, base...), "--recompute-layers"},
		{"bad backward prefetch", append([]string{"--gpus", "64", "--tp", "8", "--zero3-backward-prefetch", "early"}, base...), "--zero3-backward-prefetch"},
		{"bad precision", append([]string{"--gpus", "64", "--tp", "8", "--precision", "int3"}, base...), "--precision"},
		{"bad zero", append([]string{"--gpus", "64", "--tp", "8", "--zero", "5"}, base...), "--zero"},
		{"ep without moe", append([]string{"--gpus", "64", "--tp", "8", "--ep", "2"}, base...), "--ep"},
		{"bad arch", []string{"--layers", "2", "--hidden", "100", "--heads", "3", "--cluster", "dgx-h100", "--gpus", "8", "--seq", "128", "--gbs", "8"}, "hidden"},
		{"missing seq", []string{"--model", "gpt3-175b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "8"}, "--seq"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(append([]string{"estimate"}, tc.args...)...)
			if code == 0 {
				t.Fatalf("accepted: %s", out)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q does not mention %q", errOut, tc.want)
			}
		})
	}
}

// runs lists every published run, the MoE, fp8 and Blackwell ones of
// published_runs_moe.jsonl too, each with its kind, and a table per kind.
// TestRunsCommand scores every published run. The left-out figures refit the
// constants once per source (about a minute on two cores, ten under the race
// detector), so they run under STEPCOST_SLOW=1, as the accuracy suites do; the
// default run takes --in-sample and checks that no left-out figure is printed
// as if it had been computed.
func TestRunsCommand(t *testing.T) {
	args := []string{"runs", "--in-sample"}
	slow := os.Getenv("STEPCOST_SLOW") == "1"
	if slow {
		args = args[:1]
	}
	code, out, errOut := run(args...)
	if code != 0 || !strings.Contains(out, "narayanan21_t1_1.7b") || !strings.Contains(out, "Kendall") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	if slow != strings.Contains(out, "left out (refitted") {
		t.Errorf("%v: the by-source heading does not say whether the left-out figures were computed", args)
	}
	if !slow {
		code, js, errOut := run("runs", "--in-sample", "--json")
		if code != 0 || strings.Contains(js, `"left_out"`) {
			t.Errorf("runs --in-sample --json: exit %d, a left_out figure that was not computed: %s", code, errOut)
		}
	}
	for _, want := range []string{"dgxc_h100_deepseekv3_512gpu_bf16", "moe", "blackwell", "by kind", "original"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs does not list %q", want)
		}
	}
}

// Each run's kind, and the per-kind table: a run of several kinds counts in each.
func TestRunKinds(t *testing.T) {
	runs := []accuracy.Result{
		{Case: accuracy.Case{Run: accuracy.Run{ID: "a"}}},
		{Case: accuracy.Case{Run: accuracy.Run{ID: "b", Publication: "dgxc", Kind: []string{"moe", "fp8"}}}},
		{Case: accuracy.Case{Run: accuracy.Run{ID: "c", Publication: "dgxc"}}},
	}
	for i, want := range []string{"original", "moe,fp8", "dense"} {
		if got := runKind(runs[i].Run); got != want {
			t.Errorf("%s: kind %q, want %q", runs[i].Run.ID, got, want)
		}
	}
	got := map[string]int{}
	for _, k := range byKind(runs) {
		got[k.Kind] = k.InSample.N
	}
	want := map[string]int{"all": 3, "original": 1, "new": 2, "moe": 1, "fp8": 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("kind %s: %d runs, want %d (%v)", k, got[k], n, got)
		}
	}
	if _, ok := got["blackwell"]; ok {
		t.Errorf("a kind with no run is listed: %v", got)
	}
}

func TestArchitectureFlags(t *testing.T) {
	base := []string{"estimate", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "1", "--dp", "8", "--gbs", "8", "--seq", "16384",
		"--layers", "32", "--hidden", "4096", "--heads", "32", "--kv-heads", "8", "--ffn", "14336", "--gated", "--vocab", "32000", "--json"}
	stepOf := func(args ...string) float64 {
		code, out, errs := run(append(append([]string{}, base...), args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		r := decodeEstimate(t, out)
		if r.GetStepTimeS() <= 0 {
			t.Fatalf("%v: no step time in %.200s", args, out)
		}
		return r.GetStepTimeS()
	}
	full, windowed := stepOf(), stepOf("--sliding-window", "4096")
	if !(windowed < full) {
		t.Errorf("a 4096-token window at 16K tokens: %.3f s, full attention %.3f s", windowed, full)
	}
	if half := stepOf("--sliding-window", "4096", "--global-every", "2"); !(half > windowed && half < full) {
		t.Errorf("every other layer global: %.3f s, all windowed %.3f s, none %.3f s", half, windowed, full)
	}
	if mla := stepOf("--q-lora-rank", "1536", "--kv-lora-rank", "512", "--qk-nope-dim", "128", "--qk-rope-dim", "64", "--v-head-dim", "128"); mla == full {
		t.Error("the MLA flags changed nothing")
	}
	bad := append([]string{}, base...)
	bad[slices.Index(bad, "--kv-heads")+1] = "7"
	code, _, errs := run(append(bad, "--global-every", "2")...)
	if code == 0 || !strings.Contains(errs, "--kv-heads: must divide") || !strings.Contains(errs, "--global-every:") {
		t.Errorf("bad architecture flags: exit %d, %q", code, errs)
	}
}

// The workload and what-if flags reach the estimate and the planner: offload, ZB-V,
// expert tensor parallelism, a degraded NIC and link, a failed node; a bad value is
// reported by its field.
func TestWorkloadFlags(t *testing.T) {
	code, out, errs := run("estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "1", "--dp", "8",
		"--zero", "3", "--gbs", "16", "--seq", "4096", "--recompute", "full", "--offload", "params")
	if code != 0 || !strings.Contains(out, "params offloaded to the host") || !strings.Contains(out, "host memory per GPU (offload)") {
		t.Errorf("offload: exit %d %s %s", code, out, errs)
	}
	code, out, errs = run("estimate", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "2", "--dp", "8",
		"--ep", "8", "--sp", "--etp", "1", "--gbs", "64", "--seq", "4096", "--degraded-nic", "0.5", "--degraded-link", "0.5")
	if code != 0 || !strings.Contains(out, "etp 1") || !strings.Contains(out, "NICs at 50%") || !strings.Contains(out, "scale-up link at 50%") {
		t.Errorf("etp and degraded links: exit %d %s %s", code, out, errs)
	}
	code, out, errs = run("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--max-gpus", "32", "--gbs", "48", "--seq", "4096",
		"--exclude-nodes", "1", "--schedule", "zb-v,1f1b", "--framework", "torchtitan", "--top", "3", "--json")
	var plan pb.EstimatePlanResponse
	if err := protojson.Unmarshal([]byte(out), &plan); code != 0 || err != nil || len(plan.GetPlans()) == 0 {
		t.Fatalf("plan without node 1: exit %d, %v: %.300s %s", code, err, out, errs)
	}
	for _, p := range plan.GetPlans() {
		for _, u := range p.GetPlacement().GetNodes() {
			if u.GetNode() == 1 {
				t.Errorf("a plan uses the excluded node 1")
			}
		}
	}
	code, _, errs = run("plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "16", "--seq", "4096", "--offload", "params", "--top", "1")
	if code != 0 {
		t.Errorf("plan with parameter offload: exit %d %s", code, errs)
	}
	code, _, errs = run("estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "1", "--dp", "8", "--gbs", "8", "--seq", "4096", "--offload", "optimizer")
	if code == 0 || !strings.Contains(errs, "offload") {
		t.Errorf("optimizer offload at ZeRO 0: exit %d %s", code, errs)
	}
}

// The --in file's cluster is the API's, its size and free map included: a
// cluster of 2 nodes too small for the layout's 32 GPUs, and a free map that does
// not hold the layout's GPUs, are refused as POST /v1/steps:estimate refuses them
// (both were answered: the command line grew the cluster to the job and left the
// free map out); a free map holding the first GPUs changes nothing of the answer.
func TestEstimateFileClusterAsTheAPIReadsIt(t *testing.T) {
	dir := t.TempDir()
	files := 0
	write := func(cluster string) string {
		files++
		f := filepath.Join(dir, fmt.Sprintf("req%d.json", files))
		body := `{"model": {"name": "llama3-8b"}, "cluster": ` + cluster + `,
		  "training": {"seq_len": 8192, "global_batch": 256},
		  "layout": {"tp": 8, "pp": 1, "dp": 4, "micro_batch": 1, "zero": 1, "sp": true}}`
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct{ cluster, want string }{
		{`{"name": "dgx-h100", "nodes": 2}`, "cluster.nodes: 2 nodes of 8 GPUs cannot hold the 32 GPUs"},
		{`{"name": "dgx-h100", "free_gpus": [{"node": 0, "gpus": [0, 1, 2, 3]}]}`, "cluster.free_gpus"},
		{`{"definition": {"base": "dgx-h100"}, "nodes": 3}`, "cluster.nodes: 3 nodes of 8 GPUs cannot hold the 32 GPUs"},
	} {
		code, out, errOut := run("estimate", "--in", write(tc.cluster), "--json")
		if code != 1 || out != "" || !strings.Contains(errOut, "--in: "+tc.want) {
			t.Errorf("%s: exit %d, want 1 naming --in: %s: %.200s%.300s", tc.cluster, code, tc.want, out, errOut)
		}
	}
	stepOf := func(f string) *pb.StepEstimate {
		t.Helper()
		code, out, errOut := run("estimate", "--in", f, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return decodeEstimate(t, out)
	}
	all8 := func(node int) string { return fmt.Sprintf(`{"node": %d, "gpus": [0, 1, 2, 3, 4, 5, 6, 7]}`, node) }
	want := stepOf(write(`{"name": "dgx-h100"}`))
	for _, cluster := range []string{
		`{"name": "dgx-h100", "nodes": 4}`,
		`{"name": "dgx-h100", "nodes": 6, "free_gpus": [` + all8(0) + `, ` + all8(1) + `, ` + all8(2) + `, ` + all8(3) + `, {"node": 5, "gpus": [1]}]}`,
	} {
		if got := stepOf(write(cluster)); got.GetStepTimeS() != want.GetStepTimeS() {
			t.Errorf("%s: %.6f s, want %.6f s", cluster, got.GetStepTimeS(), want.GetStepTimeS())
		}
	}
}
