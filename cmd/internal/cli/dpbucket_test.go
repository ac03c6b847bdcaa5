package cli

import (
	"strings"
	"testing"
)

// --dp-bucket-params reaches the estimator from estimate and plan: Llama 3 8B on
// two H100 nodes, one micro-batch per step, reduces its 8e9 gradients under the
// one backward pass; the last bucket waits for its end, so a bucket of 1e9
// parameters leaves about an eighth of the reduction exposed where Megatron-Core's
// default max(40e6, 1e6 × 16) = 40e6 leaves about a two-hundredth. Stated equal to
// that default, the step is the default's.
func TestDPBucketParamsFlag(t *testing.T) {
	args := []string{"estimate", "--model", "llama3-8b", "--cluster", "hgx-h100", "--gpus", "16", "--zero", "1",
		"--mbs", "1", "--gbs", "16", "--seq", "4096", "--json"}
	def, big, stated := estimateWith(t, args), estimateWith(t, args, "--dp-bucket-params", "1e9"), estimateWith(t, args, "--dp-bucket-params", "40e6")
	if got := big.GetTraining().GetDpBucketParams(); got != 1e9 || def.GetTraining().GetDpBucketParams() != 0 {
		t.Errorf("dp_bucket_params in the answers: %d with 1e9, %d without", got, def.GetTraining().GetDpBucketParams())
	}
	if !(big.GetStepTimeS() > def.GetStepTimeS()) || !(big.GetBreakdown().GetExposedCommS().GetDp() > def.GetBreakdown().GetExposedCommS().GetDp()) {
		t.Errorf("1e9-parameter buckets: step %v s, exposed dp %v s; default: %v s, %v s: want longer", big.GetStepTimeS(),
			big.GetBreakdown().GetExposedCommS().GetDp(), def.GetStepTimeS(), def.GetBreakdown().GetExposedCommS().GetDp())
	}
	if stated.GetStepTimeS() != def.GetStepTimeS() {
		t.Errorf("40e6 stated: step %v s, the default's %v s: want equal", stated.GetStepTimeS(), def.GetStepTimeS())
	}
	for _, bad := range []string{"-1", "1e14", "1.5", "NaN"} {
		code, _, errOut := run(append(args, "--dp-bucket-params", bad)...)
		if code == 0 || !strings.Contains(errOut, "--dp-bucket-params") {
			t.Errorf("estimate --dp-bucket-params %s: exit %d, %q: want refused naming the flag", bad, code, errOut)
		}
	}

	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "hgx-h100", "--gpus", "16", "--gbs", "16", "--seq", "4096",
		"--top", "1", "--json", "--dp-bucket-params"}
	if got := bestPlan(t, plan, "1e9").GetTraining().GetDpBucketParams(); got != 1e9 {
		t.Errorf("plan --dp-bucket-params 1e9: the best plan's training has %d", got)
	}
	if code, _, errOut := run(append(plan, "-5")...); code == 0 || !strings.Contains(errOut, "--dp-bucket-params") {
		t.Errorf("plan --dp-bucket-params -5: exit %d, %q: want refused naming the flag", code, errOut)
	}
}
