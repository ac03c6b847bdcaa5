package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Qwen3-235B-A22B's published layout, EP 32 over DP 16 (MoE parallel folding),
// and DeepSeek-V3's as it ran, with its recompute modules, are expressed by flags
// and estimated; the table names what was set.
func TestEstimatePublishedMoELayouts(t *testing.T) {
	code, out, errOut := run("estimate", "--model", "qwen3-235b-a22b", "--cluster", "dgx-h100", "--gpus", "256", "--tp", "2", "--pp", "8",
		"--ep", "32", "--etp", "1", "--sp", "--mbs", "1", "--gbs", "1024", "--seq", "4096", "--zero", "1", "--no-dropout",
		"--moe-permute-fusion", "--json")
	if code != 0 {
		t.Fatalf("qwen3 ep 32: exit %d: %s", code, errOut)
	}
	e := decodeEstimate(t, out)
	if l, tr := e.GetLayout(), e.GetTraining(); l.GetEp() != 32 || l.GetDp() != 16 || l.GetEtp() != 1 || !tr.GetNoDropout() || !tr.GetMoePermuteFusion() {
		t.Errorf("qwen3: layout %v, training %v", l, tr)
	}

	split := "3" + strings.Repeat(",4", 13) + ",3,3"
	code, out, errOut = run("estimate", "--model", "deepseek-v3", "--cluster", "hgx-h800", "--gpus", "2048", "--pp", "16", "--ep", "64",
		"--zero", "1", "--mbs", "1", "--gbs", "15360", "--seq", "4096", "--precision", "fp8", "--framework", "hai-llm", "--no-dropout",
		"--recompute", "selective", "--recompute-modules", "layernorm,mla_up_proj,moe_act", "--schedule", "dualpipe", "--layer-split", split)
	if code != 0 {
		t.Fatalf("deepseek-v3: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"ep 64", "recompute selective (layernorm, mla_up_proj, moe_act)", "dualpipe", "deepep dispatcher"} {
		if !strings.Contains(out, want) {
			t.Errorf("deepseek-v3: output lacks %q:\n%s", want, out)
		}
	}
	// Its memory with 16-bit AdamW moments is another matter; the recompute
	// modules are what the flags must carry: without them it needs more.
	_, with, _ := run("estimate", "--model", "deepseek-v3", "--cluster", "hgx-h800", "--gpus", "2048", "--pp", "16", "--ep", "64",
		"--zero", "1", "--mbs", "1", "--gbs", "15360", "--seq", "4096", "--precision", "fp8", "--framework", "hai-llm", "--no-dropout",
		"--recompute", "selective", "--recompute-modules", "layernorm,mla_up_proj,moe_act", "--schedule", "dualpipe", "--layer-split", split, "--json")
	_, without, _ := run("estimate", "--model", "deepseek-v3", "--cluster", "hgx-h800", "--gpus", "2048", "--pp", "16", "--ep", "64",
		"--zero", "1", "--mbs", "1", "--gbs", "15360", "--seq", "4096", "--precision", "fp8", "--framework", "hai-llm", "--no-dropout",
		"--recompute", "selective", "--schedule", "dualpipe", "--layer-split", split, "--json")
	if a, b := decodeEstimate(t, with).GetMemory().GetActivationsGb(), decodeEstimate(t, without).GetMemory().GetActivationsGb(); !(a < b) {
		t.Errorf("activations %v GB with the recompute modules, %v GB with the attention core only", a, b)
	}
}

// The architecture flags carry group-limited routing and multi-token prediction,
// and the model file takes them by their API names.
func TestModelFlagsMoERouting(t *testing.T) {
	args := []string{"estimate", "--layers", "8", "--hidden", "2048", "--heads", "16", "--ffn", "8192", "--gated", "--experts", "64", "--top-k", "6",
		"--expert-ffn", "1024", "--moe-groups", "8", "--moe-topk-groups", "2", "--mtp-layers", "1",
		"--cluster", "dgx-h100", "--gpus", "16", "--ep", "16", "--mbs", "1", "--gbs", "64", "--seq", "4096", "--json"}
	code, out, errOut := run(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"mtp_layers":1`) || !strings.Contains(out, `"topk_groups":2`) {
		t.Errorf("the answer's model lacks mtp_layers 1 or topk_groups 2:\n%.600s", out)
	}
	file := filepath.Join(t.TempDir(), "model.json")
	if err := os.WriteFile(file, []byte(`{"name": "m", "layers": 8, "hidden": 2048, "heads": 16, "kv_heads": 16, "ffn": 8192, "gated_mlp": true, "vocab": 51200,
		"mtp_layers": 1, "moe": {"experts": 64, "top_k": 6, "expert_ffn": 1024, "groups": 8, "topk_groups": 2}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, fromFile, errOut := run("estimate", "--model-file", file, "--cluster", "dgx-h100", "--gpus", "16", "--ep", "16", "--mbs", "1", "--gbs", "64", "--seq", "4096", "--json")
	if code != 0 {
		t.Fatalf("--model-file: exit %d: %s", code, errOut)
	}
	if a, b := decodeEstimate(t, out).GetStepTimeS(), decodeEstimate(t, fromFile).GetStepTimeS(); a != b {
		t.Errorf("flags %v s, model file %v s", a, b)
	}
}

// Bad values are refused by the flag that gave them.
func TestMoEFlagErrors(t *testing.T) {
	base := []string{"estimate", "--model", "qwen3-235b-a22b", "--cluster", "dgx-h100", "--gpus", "256", "--tp", "2", "--pp", "8",
		"--ep", "32", "--etp", "1", "--sp", "--mbs", "1", "--gbs", "1024", "--seq", "4096"}
	arch := []string{"estimate", "--layers", "8", "--hidden", "2048", "--heads", "16", "--experts", "64", "--top-k", "6",
		"--cluster", "dgx-h100", "--gpus", "8", "--mbs", "1", "--gbs", "64", "--seq", "4096"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(base[:len(base):len(base)], "--recompute", "selective", "--recompute-modules", "moe_act,attn"), `"--recompute-modules" flag: want a comma-separated list of core_attn`},
		{append(base[:len(base):len(base)], "--recompute", "selective", "--recompute-modules", "moe_act,moe_act"), "--recompute-modules: \"moe_act\" is listed twice"},
		{append(base[:len(base):len(base)], "--recompute-modules", "moe_act"), "--recompute-modules: names the modules of selective recomputation"},
		{append(base[:len(base):len(base)], "--moe-dispatcher", "nccl"), `"--moe-dispatcher" flag: want one of alltoall, deepep`},
		{append(base[:len(base):len(base)], "--moe-pad-to-capacity"), "--moe-pad-to-capacity:"},
		{append(base[:len(base):len(base)], "--fp8-activations"), "--fp8-activations: applies to precision fp8"},
		{append(base[:len(base):len(base)], "--overlap-shared-expert"), "--overlap-shared-expert:"},
		{slices.Replace(slices.Clone(base), slices.Index(base, "--etp")+1, slices.Index(base, "--etp")+2, "2"), "--ep: etp × ep = 2 × 32 must divide"},
		{append(arch[:len(arch):len(arch)], "--moe-groups", "7", "--moe-topk-groups", "2"), "--moe-groups: must divide the 64 experts"},
		{append(arch[:len(arch):len(arch)], "--moe-groups", "8", "--moe-topk-groups", "9"), "--moe-topk-groups:"},
		{append(arch[:len(arch):len(arch)], "--mtp-layers", "9"), "--mtp-layers:"},
		{append(arch[:len(arch):len(arch)], "--glu-clamp"), "--glu-clamp: clamps a gated MLP's inputs: needs"},
		{[]string{"estimate", "--layers", "8", "--hidden", "2048", "--heads", "16", "--expert-bias",
			"--cluster", "dgx-h100", "--gpus", "8", "--mbs", "1", "--gbs", "64", "--seq", "4096"}, "--experts:"},
	} {
		code, _, errOut := run(c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, errOut, c.want)
		}
	}
	// plan takes the training flags too, and names them.
	code, _, errOut := run("plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64", "--seq", "4096", "--moe-dispatcher", "flex")
	if code != exitUsage || !strings.Contains(errOut, `"--moe-dispatcher" flag: want one of alltoall, deepep`) {
		t.Errorf("plan --moe-dispatcher flex: exit %d, %q", code, errOut)
	}
}

// The README's MoE examples run as written (continuation lines joined).
func TestREADMEMoEExamples(t *testing.T) {
	data, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	cur := ""
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if cur == "" && !strings.HasPrefix(l, "go run ./cmd/stepcost estimate --model qwen3-235b-a22b") &&
			!strings.HasPrefix(l, "go run ./cmd/stepcost estimate --model deepseek-v3") {
			continue
		}
		cur += " " + strings.TrimSuffix(l, "\\")
		if !strings.HasSuffix(l, "\\") {
			cmds, cur = append(cmds, cur), ""
		}
	}
	if len(cmds) != 2 {
		t.Fatalf("README has %d MoE estimate examples, want Qwen3-235B-A22B's and DeepSeek-V3's", len(cmds))
	}
	for _, c := range cmds {
		args := strings.Fields(c)[3:] // after "go run ./cmd/stepcost"
		code, out, errOut := run(append(args, "--json")...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", c, code, errOut)
			continue
		}
		if e := decodeEstimate(t, out); !e.GetMemory().GetFits() || e.GetLayout().GetEp() <= e.GetLayout().GetDp() && e.GetLayout().GetEp() != 64 {
			t.Errorf("%s: memory %v, layout %v", c, e.GetMemory(), e.GetLayout())
		}
	}
}

// Every field of the request's training and layout, and of an architecture, has
// the flag that sets it named in the error maps, so an error about it names the
// flag — a field added to the API without its flag fails here.
func TestEveryRequestFieldHasAFlag(t *testing.T) {
	// Set otherwise: the optimizer's bytes by --grad-dtype or an --in file; plan
	// takes the batch in sequences only.
	skip := map[string]bool{"training.optimizer": true, "plan training.global_tokens": true}
	check := func(cmd string, flags map[string]string, prefix string, md protoreflect.MessageDescriptor) {
		for i := range md.Fields().Len() {
			f := prefix + string(md.Fields().Get(i).Name())
			if _, ok := flags[f]; !ok && !skip[f] && !skip[cmd+" "+f] {
				t.Errorf("%s: no flag for %s", cmd, f)
			}
		}
	}
	check("estimate", estimateFlags, "layout.", (&pb.Layout{}).ProtoReflect().Descriptor())
	check("estimate", estimateFlags, "training.", (&pb.Training{}).ProtoReflect().Descriptor())
	check("plan", planFlags, "training.", (&pb.Training{}).ProtoReflect().Descriptor())
	check("plan", planFlags, "constraints.", (&pb.Constraints{}).ProtoReflect().Descriptor())
	// An architecture's flags: the booleans cannot be wrong, the name is free and
	// the sub-messages are checked field by field.
	skip = map[string]bool{"name": true, "gated_mlp": true, "tied_embeddings": true, "moe": true, "mla": true}
	check("architecture", archFlags, "", (&pb.Architecture{}).ProtoReflect().Descriptor())
	check("architecture", archFlags, "moe.", (&pb.MoE{}).ProtoReflect().Descriptor())
	check("architecture", archFlags, "mla.", (&pb.MLA{}).ProtoReflect().Descriptor())
}

// The shells complete the dispatcher, the recompute modules and the frameworks,
// hai-llm among them, for estimate and plan.
func TestMoECompletion(t *testing.T) {
	for _, cmd := range []string{"estimate", "plan"} {
		if got, _ := complete(t, cmd, "--moe-dispatcher", ""); !slices.Equal(got, []string{"alltoall", "deepep"}) {
			t.Errorf("%s --moe-dispatcher completes %v", cmd, got)
		}
		fws, _ := complete(t, cmd, "--framework", "")
		if !slices.Contains(fws, "hai-llm") || !slices.Contains(fws, "megatron-core") {
			t.Errorf("%s --framework completes %v: no hai-llm or megatron-core", cmd, fws)
		}
		if flags, _ := complete(t, cmd, "--"); !slices.Contains(flags, "--moe-dispatcher") || !slices.Contains(flags, "--no-dropout") {
			t.Errorf("%s's flags lack --moe-dispatcher or --no-dropout", cmd)
		}
	}
	if got, _ := complete(t, "estimate", "--recompute-modules", ""); !slices.Equal(got, []string{"core_attn", "layernorm", "mla_up_proj", "moe_act", "mlp", "shared_experts", "moe"}) {
		t.Errorf("--recompute-modules completes %v", got)
	}
	if got, _ := complete(t, "estimate", "--recompute-modules", "core_attn,m"); !slices.Equal(got, []string{"core_attn,mla_up_proj", "core_attn,moe_act", "core_attn,mlp", "core_attn,moe"}) {
		t.Errorf("--recompute-modules core_attn,m completes %v", got)
	}
}

// --moe-router-fp32 reaches the estimate: under nemo-25.04, whose router runs its
// fp32 option as a GEMM of fp32 copies, the step is slower with it, and the answer
// says it was set; under torchtitan it changes nothing.
func TestMoERouterFP32Flag(t *testing.T) {
	base := []string{"estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8", "--ep", "8",
		"--mbs", "1", "--gbs", "64", "--seq", "4096", "--json"}
	checkMoEFlag(t, base, "--moe-router-fp32", "training.moe_router_fp32", "the fp32 router", (*pb.Training).GetMoeRouterFp32)
}

// checkMoEFlag checks that flag, a MoE training setting, reaches the estimate of
// base: under nemo-25.04 the step is slower with it and the answer's field (by
// get) says it was set, and not set without it; under torchtitan it changes
// nothing. It returns the nemo-25.04 step time with the flag.
func checkMoEFlag(t *testing.T, base []string, flag, field, what string, get func(*pb.Training) bool) float64 {
	t.Helper()
	step := func(fw string, extra ...string) (float64, bool) {
		t.Helper()
		code, out, errOut := run(append(append(slices.Clone(base), "--framework", fw), extra...)...)
		if code != 0 {
			t.Fatalf("%s %v: exit %d: %s", fw, extra, code, errOut)
		}
		e := decodeEstimate(t, out)
		return e.GetStepTimeS(), get(e.GetTraining())
	}
	off, setOff := step("nemo-25.04")
	on, setOn := step("nemo-25.04", flag)
	if setOff || !setOn {
		t.Errorf("%s in the answer: %v without the flag, %v with it", field, setOff, setOn)
	}
	if !(on > off) {
		t.Errorf("nemo-25.04: step %v s with %s, %v s without; want slower", on, what, off)
	}
	ttOff, _ := step("torchtitan")
	if ttOn, _ := step("torchtitan", flag); ttOn != ttOff {
		t.Errorf("torchtitan: step %v s without, %v s with %s; want equal", ttOff, ttOn, what)
	}
	return on
}

// --moe-grouped-gemm reaches the estimate and the plan, and a rank config line's
// training.moe_grouped_gemm the same: under nemo-25.04 in fp8, whose Megatron-Core
// 0.12 TEGroupedMLP copies the experts' tokens through Transformer Engine's fp8
// padding, the step is slower with it, and the answer says it was set; under
// torchtitan it changes nothing. A rank config line stating it is priced as the
// flag; the plan's best layout is priced with it. The help lists it.
func TestMoEGroupedGEMMFlag(t *testing.T) {
	base := []string{"estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8", "--ep", "8",
		"--mbs", "1", "--gbs", "64", "--seq", "4096", "--precision", "fp8", "--moe-permute-fusion", "--json"}
	on := checkMoEFlag(t, base, "--moe-grouped-gemm", "training.moe_grouped_gemm", "grouped experts", (*pb.Training).GetMoeGroupedGemm)

	cfg := `{"model": {"name": "qwen3-30b-a3b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64,
		"precision": "PRECISION_FP8", "framework": "nemo-25.04", "moe_permute_fusion": true, "moe_grouped_gemm": true},
		"layout": {"tp": 1, "pp": 1, "dp": 8, "ep": 8, "micro_batch": 1}}`
	f := t.TempDir() + "/configs.jsonl"
	if err := os.WriteFile(f, []byte(strings.ReplaceAll(cfg, "\n\t\t", " ")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("rank", "--in", f, "--format", "json")
	var ranked pb.RankConfigsResponse
	if err := protojson.Unmarshal([]byte(out), &ranked); code != 0 || err != nil || len(ranked.GetResults()) != 1 {
		t.Fatalf("rank: exit %d, %v: %.300s %s", code, err, out, errOut)
	}
	if e := ranked.GetResults()[0].GetEstimate(); e.GetStepTimeS() != on || !e.GetTraining().GetMoeGroupedGemm() {
		t.Errorf("rank's config line with moe_grouped_gemm: %v s (set %v); estimate --moe-grouped-gemm %v s", e.GetStepTimeS(),
			e.GetTraining().GetMoeGroupedGemm(), on)
	}

	plan := []string{"plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8", "--ep", "8", "--tp", "1", "--pp", "1",
		"--mbs", "1", "--gbs", "64", "--seq", "4096", "--precision", "fp8", "--framework", "nemo-25.04", "--moe-permute-fusion", "--top", "1", "--json"}
	best := func(extra ...string) *pb.StepEstimate {
		t.Helper()
		code, out, errOut := run(append(slices.Clone(plan), extra...)...)
		var resp pb.EstimatePlanResponse
		if err := protojson.Unmarshal([]byte(out), &resp); code != 0 || err != nil || len(resp.GetPlans()) == 0 {
			t.Fatalf("plan %v: exit %d, %v: %.300s %s", extra, code, err, out, errOut)
		}
		return resp.GetPlans()[0].GetEstimate()
	}
	pOff, pOn := best(), best("--moe-grouped-gemm")
	if !pOn.GetTraining().GetMoeGroupedGemm() || pOff.GetTraining().GetMoeGroupedGemm() {
		t.Errorf("plan: moe_grouped_gemm %v with the flag, %v without", pOn.GetTraining().GetMoeGroupedGemm(), pOff.GetTraining().GetMoeGroupedGemm())
	}
	if pOn.GetStepTimeS() == pOff.GetStepTimeS() {
		t.Errorf("plan: best %v s with grouped experts and without: the flag did not reach the search", pOn.GetStepTimeS())
	}
	for _, cmd := range []string{"estimate", "plan"} {
		if _, help, _ := run(cmd, "-h"); !strings.Contains(help, "--moe-grouped-gemm") {
			t.Errorf("%s -h lacks --moe-grouped-gemm", cmd)
		}
	}
}
