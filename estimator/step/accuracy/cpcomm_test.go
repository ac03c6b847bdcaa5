package accuracy_test

import (
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step/accuracy"
)

// TestCPCommTypeAsConfigured: a row's cp_comm_type chooses how its context
// parallelism is priced. Lambda's 72-GB300 gpt-oss-20b run prints Megatron-Core's
// TransformerConfig with cp_comm_type='a2a' (its result_1.txt): the all-to-all
// (Ulysses) exchange, not the ring; a row without the field keeps the ring; a
// value Megatron-Core's two exchanges do not name, or a2a without context
// parallelism, is refused naming the field.
func TestCPCommTypeAsConfigured(t *testing.T) {
	runs, err := accuracy.MoERuns()
	if err != nil {
		t.Fatal(err)
	}
	byID := moeRunsByID(runs)
	for id, ulysses := range map[string]bool{
		"mlperf60_gb300_gptoss20b_72gpu_mxfp8_lambda": true,
		"mlperf60_gb200_gptoss20b_72gpu_mxfp8":        true,
		"mlperf60_gb300_gptoss20b_512gpu_mxfp8":       true,
		"mlperf51_gb200_llama31_8b_512gpu_fp8":        false, // no cp_comm_type: the ring
	} {
		r, ok := byID[id]
		if !ok {
			t.Fatalf("%s: no such row", id)
		}
		req, _, err := accuracy.MoECase(r)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if req.Layout.CP < 2 || req.Layout.CPAllToAll != ulysses {
			t.Errorf("%s: cp %d, all-to-all %v; want cp > 1, all-to-all %v", id, req.Layout.CP, req.Layout.CPAllToAll, ulysses)
		}
	}

	r := byID["mlperf60_gb300_gptoss20b_72gpu_mxfp8_lambda"]
	bad := "all_gather"
	r.CPCommType = &bad
	if err := r.Check(); err == nil || !strings.Contains(err.Error(), "cp_comm_type") {
		t.Errorf("cp_comm_type %q: Check says %v, want an error naming cp_comm_type", bad, err)
	}
	if _, _, err := accuracy.MoECase(r); err == nil || !strings.Contains(err.Error(), "cp_comm_type") {
		t.Errorf("cp_comm_type %q: MoECase says %v, want an error naming cp_comm_type", bad, err)
	}
	a2a := "a2a"
	r = byID["mlperf60_b200_gptoss20b_8gpu_mxfp8_lambda"]
	r.CPCommType = &a2a
	if err := r.Check(); err == nil || !strings.Contains(err.Error(), "cp_comm_type") {
		t.Errorf("cp_comm_type a2a with cp %d: Check says %v, want an error naming cp_comm_type", r.CP, err)
	}
}
