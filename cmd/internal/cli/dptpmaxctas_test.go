package cli

import (
	"slices"
	"strings"
	"testing"
)

// --dp-nccl-max-ctas and --tp-nccl-max-ctas reach the estimator from estimate, in
// process and through a daemon: Llama 3.1 8B at TP 2 × CP 4 × DP 72 on 8 GB200
// NVL72 racks, with NeMo's MLPerf Training v5.1 thread blocks (cp 1, dp_cp and tp 8:
// conf/nccl/custom_communicator_cta.yaml) — the 288-rank gradient reduce-scatter
// then crosses the network through 8 of each rack's 36 GPUs' NICs, and the exposed
// data-parallel time and the step grow. A count outside [0, 256], or one the
// request's int32 cannot carry, is refused naming the flag; plan takes both, and the
// help and the completion list them.
func TestDPTPMaxCTAsFlags(t *testing.T) {
	args := []string{"estimate", "--model", "llama3-8b", "--cluster", "gb200-nvl72", "--gpus", "576", "--tp", "2", "--cp", "4",
		"--zero", "1", "--mbs", "1", "--gbs", "72", "--seq", "8192", "--precision", "fp8", "--fp8-recipe", "current",
		"--framework", "nemo", "--cuda-graphs", "--sp", "--overlap-tp", "--cp-nccl-max-ctas", "1", "--json"}
	estimate := func(extra ...string) (step, dp float64, dpCTAs, tpCTAs int32) {
		t.Helper()
		code, out, errOut := run(append(slices.Clone(args), extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errOut)
		}
		e := decodeEstimate(t, out)
		return e.GetStepTimeS(), e.GetBreakdown().GetExposedCommS().GetDp(), e.GetTraining().GetDpNcclMaxCtas(), e.GetTraining().GetTpNcclMaxCtas()
	}
	s0, dp0, d0, t0 := estimate()
	s8, dp8, d8, t8 := estimate("--dp-nccl-max-ctas", "8", "--tp-nccl-max-ctas", "8")
	t.Logf("exposed DP %.2f → %.2f ms, step %.2f → %.2f ms", 1e3*dp0, 1e3*dp8, 1e3*s0, 1e3*s8)
	if d0 != 0 || t0 != 0 || d8 != 8 || t8 != 8 {
		t.Errorf("dp/tp_nccl_max_ctas in the answers: %d/%d without the flags, %d/%d with 8", d0, t0, d8, t8)
	}
	if !(s8 > s0 && dp8 > dp0) {
		t.Errorf("8 thread blocks: step %v s, exposed dp %v s; NCCL's default: %v s, %v s: want longer", s8, dp8, s0, dp0)
	}
	if rs, _, rd, rt := estimate("--dp-nccl-max-ctas", "8", "--tp-nccl-max-ctas", "8", "--server", daemon(t)); rs != s8 || rd != 8 || rt != 8 {
		t.Errorf("--server: %v s, dp/tp_nccl_max_ctas %d/%d; in process %v s", rs, rd, rt, s8)
	}
	for _, flag := range []string{"--dp-nccl-max-ctas", "--tp-nccl-max-ctas"} {
		for _, bad := range []string{"-1", "257", "4294967297"} {
			code, _, errOut := run(append(slices.Clone(args), flag, bad)...)
			if code == 0 || !strings.Contains(errOut, flag) {
				t.Errorf("estimate %s %s: exit %d, %q: want refused naming the flag", flag, bad, code, errOut)
			}
		}
		plan := []string{"plan", "--model", "llama3-8b", "--cluster", "gb200-nvl72", "--gpus", "64", "--tp", "2", "--cp", "4",
			"--gbs", "8", "--seq", "8192", "--top", "1", "--json", flag}
		if code, _, errOut := run(append(slices.Clone(plan), "8")...); code != 0 {
			t.Errorf("plan %s 8: exit %d: %s", flag, code, errOut)
		}
		if code, _, errOut := run(append(slices.Clone(plan), "4294967297")...); code == 0 || !strings.Contains(errOut, flag) {
			t.Errorf("plan %s 4294967297: exit %d, %q: want refused naming the flag", flag, code, errOut)
		}
		for _, cmd := range []string{"estimate", "plan"} {
			if flags, _ := complete(t, cmd, flag[:6]); !slices.Contains(flags, flag) {
				t.Errorf("%s's flags lack %s: %v", cmd, flag, flags)
			}
			if _, help, _ := run(cmd, "-h"); !strings.Contains(help, flag) {
				t.Errorf("%s -h lacks %s", cmd, flag)
			}
		}
	}
}
