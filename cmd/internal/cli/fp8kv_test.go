package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// --fp8-kv-16bit reaches the estimate: under torchtitan in fp8 the key and value
// projections priced as 16-bit linears change the step time and the assumption
// says so, and the answer's training echoes the field; under bf16 it is refused
// naming the flag, with exit 1.
func TestFP8KVProjectionsFlag(t *testing.T) {
	base := []string{"estimate", "--model", "llama3-8b", "--cluster", "hgx-b200", "--gpus", "8", "--framework", "torchtitan",
		"--gbs", "8", "--seq", "8192", "--json"}
	step := func(extra ...string) (float64, string) {
		code, out, errOut := run(append(append([]string{}, base...), extra...)...)
		if code != exitOK {
			t.Fatalf("%q: exit %d, %s", extra, code, errOut)
		}
		var a struct {
			Estimate struct {
				StepTimeS   float64  `json:"step_time_s"`
				Assumptions []string `json:"assumptions"`
				Training    struct {
					KV bool `json:"fp8_kv_projections_16bit"`
				} `json:"training"`
			} `json:"estimate"`
		}
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatal(err)
		}
		if on := len(extra) > 2; a.Estimate.Training.KV != on {
			t.Errorf("%q: training echoes fp8_kv_projections_16bit %v", extra, a.Estimate.Training.KV)
		}
		return a.Estimate.StepTimeS, strings.Join(a.Estimate.Assumptions, "\n")
	}
	all, _ := step("--precision", "fp8")
	kv, notes := step("--precision", "fp8", "--fp8-kv-16bit")
	if kv == all {
		t.Errorf("--fp8-kv-16bit left the step at %.6f s", all)
	}
	if !strings.Contains(notes, "key and value projections") {
		t.Errorf("assumptions do not say the key and value projections run in 16 bits:\n%s", notes)
	}
	code, _, errOut := run(append(append([]string{}, base...), "--precision", "bf16", "--fp8-kv-16bit")...)
	if code != exitFailure || !strings.Contains(errOut, "--fp8-kv-16bit") {
		t.Errorf("--fp8-kv-16bit under bf16: exit %d, %q; want exit %d naming --fp8-kv-16bit", code, errOut, exitFailure)
	}
}
