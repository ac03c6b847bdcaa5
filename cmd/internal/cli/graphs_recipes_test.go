package cli

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// --cuda-graphs reaches the estimator from estimate and plan: Qwen3-30B-A3B at 1K
// tokens per micro-batch on 8 B200 with EP 8 is paced by its MoE blocks' host
// operators, which one graph launch per layer shortens.
func TestCUDAGraphsFlag(t *testing.T) {
	args := []string{"estimate", "--model", "qwen3-30b-a3b", "--cluster", "hgx-b200", "--gpus", "8", "--ep", "8", "--zero", "1",
		"--mbs", "1", "--gbs", "64", "--seq", "1024", "--json"}
	code, out, errOut := run(args...)
	if code != 0 {
		t.Fatalf("eager: exit %d: %s", code, errOut)
	}
	eager := decodeEstimate(t, out)
	code, out, errOut = run(append(args, "--cuda-graphs")...)
	if code != 0 {
		t.Fatalf("--cuda-graphs: exit %d: %s", code, errOut)
	}
	graphs := decodeEstimate(t, out)
	if eager.GetTraining().GetCudaGraphs() || !graphs.GetTraining().GetCudaGraphs() {
		t.Errorf("cuda_graphs in the answers: %v without the flag, %v with", eager.GetTraining().GetCudaGraphs(), graphs.GetTraining().GetCudaGraphs())
	}
	if !(graphs.GetStepTimeS() < eager.GetStepTimeS()) {
		t.Errorf("step %v s with --cuda-graphs, %v s without: want shorter", graphs.GetStepTimeS(), eager.GetStepTimeS())
	}

	code, out, errOut = run("plan", "--model", "qwen3-30b-a3b", "--cluster", "hgx-b200", "--gpus", "8", "--gbs", "64", "--seq", "1024",
		"--cuda-graphs", "--top", "1", "--json")
	var plan pb.EstimatePlanResponse
	if err := protojson.Unmarshal([]byte(out), &plan); code != 0 || err != nil || len(plan.GetPlans()) == 0 {
		t.Fatalf("plan --cuda-graphs: exit %d, %v: %.300s %s", code, err, out, errOut)
	}
	if !plan.GetPlans()[0].GetEstimate().GetTraining().GetCudaGraphs() {
		t.Error("plan --cuda-graphs: the best plan's training lacks cuda_graphs")
	}
}

// --fp8-recipe takes rowwise and mxfp8; mxfp8 on H100 is refused by the flag, by
// estimate and by plan alike, and the help and the shell completion list the four
// recipes.
func TestFP8RecipeFlag(t *testing.T) {
	llama := func(cmd, cluster, recipe string) []string {
		a := []string{cmd, "--model", "llama3-8b", "--cluster", cluster, "--gpus", "8", "--gbs", "64", "--seq", "4096",
			"--precision", "fp8", "--fp8-recipe", recipe}
		if cmd == "estimate" {
			return append(a, "--mbs", "1", "--zero", "1")
		}
		return append(a, "--top", "1")
	}
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{llama("estimate", "dgx-h100", "rowwise"), true},
		{llama("estimate", "hgx-b200", "mxfp8"), true},
		{llama("estimate", "dgx-h100", "MXFP8"), false},
		{llama("plan", "dgx-h100", "mxfp8"), false},
	} {
		code, _, errOut := run(c.args...)
		switch {
		case c.ok && code != 0:
			t.Errorf("%v: exit %d: %s", c.args, code, errOut)
		case !c.ok && (code == 0 || !strings.Contains(errOut, "--fp8-recipe: mxfp8 needs Blackwell")):
			t.Errorf("%v: exit %d, %q; want refused by --fp8-recipe", c.args, code, errOut)
		}
	}

	for _, cmd := range []string{"estimate", "plan"} {
		if got, _ := complete(t, cmd, "--fp8-recipe", ""); !slices.Equal(got, []string{"delayed", "current", "rowwise", "mxfp8", "blockwise"}) {
			t.Errorf("%s --fp8-recipe completes %v", cmd, got)
		}
		if flags, _ := complete(t, cmd, "--"); !slices.Contains(flags, "--cuda-graphs") {
			t.Errorf("%s's flags lack --cuda-graphs", cmd)
		}
		_, help, _ := run(cmd, "-h")
		_, recipe, _ := strings.Cut(help, "--fp8-recipe")
		recipe, _, _ = strings.Cut(recipe, "\n      --")
		for _, name := range []string{"delayed", "current", "rowwise", "mxfp8", "blockwise"} {
			if !strings.Contains(recipe, name) {
				t.Errorf("%s -h: --fp8-recipe's help lacks %s: %q", cmd, name, recipe)
			}
		}
		if !strings.Contains(help, "-cuda-graphs") {
			t.Errorf("%s -h lacks --cuda-graphs", cmd)
		}
	}
}
