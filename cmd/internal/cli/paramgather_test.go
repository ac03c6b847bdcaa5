package cli

import (
	"strings"
	"testing"
)

// --param-gather reaches the estimator from estimate and plan: Llama 3 8B on four
// H100 nodes with ZeRO-1 gathers its 16 GB of updated weights after the optimizer
// (megatron-core's default) or, overlapped, in 40 M-parameter buckets under the
// next forward, where only the first bucket's gather is waited for. The nemo
// profile overlaps by default.
func TestParamGatherFlag(t *testing.T) {
	args := []string{"estimate", "--model", "llama3-8b", "--cluster", "hgx-h100", "--gpus", "32", "--zero", "1",
		"--mbs", "1", "--gbs", "32", "--seq", "4096", "--json"}
	def, exp, ov := estimateWith(t, args), estimateWith(t, args, "--param-gather", "exposed"), estimateWith(t, args, "--param-gather", "overlapped")
	if got := ov.GetTraining().GetParamGather(); got != "overlapped" || def.GetTraining().GetParamGather() != "" {
		t.Errorf("param_gather in the answers: %q overlapped, %q by default", got, def.GetTraining().GetParamGather())
	}
	if def.GetStepTimeS() != exp.GetStepTimeS() {
		t.Errorf("megatron-core's default %v s, exposed %v s: want equal", def.GetStepTimeS(), exp.GetStepTimeS())
	}
	if !(ov.GetBreakdown().GetExposedCommS().GetDp() < exp.GetBreakdown().GetExposedCommS().GetDp()) {
		t.Errorf("overlapped: exposed dp %v s, not below exposed's %v s", ov.GetBreakdown().GetExposedCommS().GetDp(), exp.GetBreakdown().GetExposedCommS().GetDp())
	}
	nemo := estimateWith(t, args, "--framework", "nemo")
	if got := nemo.GetTraining().GetParamGather(); got != "" {
		t.Errorf("nemo's default: param_gather %q, want empty (no profile overlaps it by default)", got)
	}
	if code, _, errOut := run(append(args, "--param-gather", "sometimes")...); code == 0 || !strings.Contains(errOut, "--param-gather") {
		t.Errorf("estimate --param-gather sometimes: exit %d, %q: want refused naming the flag", code, errOut)
	}

	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "hgx-h100", "--gpus", "16", "--gbs", "16", "--seq", "4096",
		"--top", "1", "--json", "--param-gather", "overlapped"}
	if got := bestPlan(t, plan).GetTraining().GetParamGather(); got != "overlapped" {
		t.Errorf("plan --param-gather overlapped: the best plan's training has %q", got)
	}
}
