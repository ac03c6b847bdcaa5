package cli

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// --cp-nccl-max-ctas reaches the estimator from estimate and plan, in process and
// through a daemon: Llama 3.1 8B at TP 2 × CP 4 on one GB200 rack, the layout of
// NeMo's MLPerf Training v5.1 implementation, whose CP group it gives one NCCL
// thread block (conf/nccl/custom_communicator_cta.yaml) — the ring's K/V passes
// then move on one channel, and the step is slower. A count outside [0, 256], or
// one the request's int32 cannot carry, is refused naming the flag; the help and
// the completion list it.
func TestCPMaxCTAsFlag(t *testing.T) {
	args := []string{"estimate", "--model", "llama3-8b", "--cluster", "gb200-nvl72", "--gpus", "64", "--tp", "2", "--cp", "4",
		"--zero", "1", "--mbs", "1", "--gbs", "8", "--seq", "8192", "--precision", "fp8", "--fp8-recipe", "current",
		"--framework", "nemo", "--cuda-graphs", "--sp", "--json"}
	estimate := func(extra ...string) *pb.StepEstimate {
		t.Helper()
		code, out, errOut := run(append(slices.Clone(args), extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errOut)
		}
		return decodeEstimate(t, out)
	}
	def, one := estimate(), estimate("--cp-nccl-max-ctas", "1")
	if def.GetTraining().GetCpNcclMaxCtas() != 0 || one.GetTraining().GetCpNcclMaxCtas() != 1 {
		t.Errorf("cp_nccl_max_ctas in the answers: %d without the flag, %d with 1", def.GetTraining().GetCpNcclMaxCtas(), one.GetTraining().GetCpNcclMaxCtas())
	}
	if !(one.GetStepTimeS() > def.GetStepTimeS()) || !(one.GetBreakdown().GetExposedCommS().GetCp() > def.GetBreakdown().GetExposedCommS().GetCp()) {
		t.Errorf("one thread block: step %v s, exposed cp %v s; NCCL's default: %v s, %v s: want longer", one.GetStepTimeS(),
			one.GetBreakdown().GetExposedCommS().GetCp(), def.GetStepTimeS(), def.GetBreakdown().GetExposedCommS().GetCp())
	}
	if remote := estimate("--cp-nccl-max-ctas", "1", "--server", daemon(t)); remote.GetStepTimeS() != one.GetStepTimeS() ||
		remote.GetTraining().GetCpNcclMaxCtas() != 1 {
		t.Errorf("--server: %v s, cp_nccl_max_ctas %d; in process %v s", remote.GetStepTimeS(), remote.GetTraining().GetCpNcclMaxCtas(), one.GetStepTimeS())
	}
	for _, bad := range []string{"-1", "257", "4294967297"} {
		code, _, errOut := run(append(slices.Clone(args), "--cp-nccl-max-ctas", bad)...)
		if code == 0 || !strings.Contains(errOut, "--cp-nccl-max-ctas") {
			t.Errorf("estimate --cp-nccl-max-ctas %s: exit %d, %q: want refused naming the flag", bad, code, errOut)
		}
	}

	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "gb200-nvl72", "--gpus", "64", "--tp", "2", "--cp", "4",
		"--gbs", "8", "--seq", "8192", "--top", "1", "--json", "--cp-nccl-max-ctas"}
	best := func(n string) *pb.StepEstimate {
		t.Helper()
		code, out, errOut := run(append(slices.Clone(plan), n)...)
		var resp pb.EstimatePlanResponse
		if err := protojson.Unmarshal([]byte(out), &resp); code != 0 || err != nil || len(resp.GetPlans()) == 0 {
			t.Fatalf("plan --cp-nccl-max-ctas %s: exit %d, %v: %.300s %s", n, code, err, out, errOut)
		}
		return resp.GetPlans()[0].GetEstimate()
	}
	pd, p1 := best("0"), best("1")
	if got := p1.GetTraining().GetCpNcclMaxCtas(); got != 1 || p1.GetLayout().GetCp() != 4 {
		t.Errorf("plan --cp-nccl-max-ctas 1: the best plan has cp_nccl_max_ctas %d, cp %d", got, p1.GetLayout().GetCp())
	}
	if !(p1.GetStepTimeS() > pd.GetStepTimeS()) {
		t.Errorf("plan on CP 4: best %v s with one thread block, %v s with NCCL's default: want slower", p1.GetStepTimeS(), pd.GetStepTimeS())
	}
	for _, bad := range []string{"-5", "4294967297"} {
		if code, _, errOut := run(append(slices.Clone(plan), bad)...); code == 0 || !strings.Contains(errOut, "--cp-nccl-max-ctas") {
			t.Errorf("plan --cp-nccl-max-ctas %s: exit %d, %q: want refused naming the flag", bad, code, errOut)
		}
	}

	for _, cmd := range []string{"estimate", "plan"} {
		if flags, _ := complete(t, cmd, "--cp-n"); !slices.Contains(flags, "--cp-nccl-max-ctas") {
			t.Errorf("%s's flags lack --cp-nccl-max-ctas: %v", cmd, flags)
		}
		if _, help, _ := run(cmd, "-h"); !strings.Contains(help, "--cp-nccl-max-ctas") {
			t.Errorf("%s -h lacks --cp-nccl-max-ctas", cmd)
		}
	}
}
