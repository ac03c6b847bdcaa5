package cli

import (
	"slices"
	"strings"
	"testing"
)

// --cuda-device-max-connections reaches the estimator from estimate, in process and
// through a daemon: the Megatron-Core MoE team's Qwen3-235B-A22B layout on 256 H100
// (TP 2 × PP 8 × VP 4 × EP 32 over DeepEP) with the EP overlap, whose configuration
// sets one queue — the forward's dispatch then runs beside no compute, and the
// exposed all-to-all time and the step grow against 32 queues; the assumptions say
// so. A count outside CUDA's 1 to 32, or one the request's int32 cannot carry, is
// refused naming the flag; plan takes it, and the help and the completion list it.
func TestDeviceMaxConnectionsFlag(t *testing.T) {
	args := []string{"estimate", "--model", "qwen3-235b-a22b", "--cluster", "dgx-h100", "--gpus", "256", "--tp", "2", "--pp", "8",
		"--vpp", "4", "--ep", "32", "--etp", "1", "--zero", "1", "--mbs", "1", "--gbs", "2048", "--seq", "4096", "--sp",
		"--moe-dispatcher", "deepep", "--overlap-ep", "--no-dropout", "--json"}
	estimate := func(extra ...string) (step, ep float64, queues int32, notes []string) {
		t.Helper()
		code, out, errOut := run(append(slices.Clone(args), extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errOut)
		}
		e := decodeEstimate(t, out)
		return e.GetStepTimeS(), e.GetBreakdown().GetExposedCommS().GetEp(), e.GetTraining().GetCudaDeviceMaxConnections(), e.GetAssumptions()
	}
	s32, ep32, q32, _ := estimate("--cuda-device-max-connections", "32")
	s1, ep1, q1, notes := estimate("--cuda-device-max-connections", "1")
	t.Logf("exposed EP %.2f → %.2f s, step %.2f → %.2f s", ep32, ep1, s32, s1)
	if q32 != 32 || q1 != 1 {
		t.Errorf("cuda_device_max_connections in the answers: %d and %d, want 32 and 1", q32, q1)
	}
	if !(s1 > s32 && ep1 > ep32) {
		t.Errorf("one queue: step %v s, exposed ep %v s; 32 queues: %v s, %v s: want longer", s1, ep1, s32, ep32)
	}
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.HasPrefix(n, "hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): 1, the request's")
	}) {
		t.Errorf("assumptions do not state the queues: %q", notes)
	}
	if rs, _, rq, _ := estimate("--cuda-device-max-connections", "1", "--server", daemon(t)); rs != s1 || rq != 1 {
		t.Errorf("--server: %v s, cuda_device_max_connections %d; in process %v s", rs, rq, s1)
	}
	const flag = "--cuda-device-max-connections"
	for _, bad := range []string{"-1", "33", "4294967297"} {
		code, _, errOut := run(append(slices.Clone(args), flag, bad)...)
		if code == 0 || !strings.Contains(errOut, flag) {
			t.Errorf("estimate %s %s: exit %d, %q: want refused naming the flag", flag, bad, code, errOut)
		}
	}
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "16", "--seq", "4096", "--top", "1", "--json", flag}
	if code, _, errOut := run(append(slices.Clone(plan), "1")...); code != 0 {
		t.Errorf("plan %s 1: exit %d: %s", flag, code, errOut)
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
