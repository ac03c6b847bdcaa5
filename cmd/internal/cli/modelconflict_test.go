package cli

import (
	"strings"
	"testing"
)

// Two ways of naming the model are refused naming the flags given, an
// architecture flag included: "--model and --kv-heads", not the list of every
// way (which named --layers/--hidden/--heads, none of them given).
func TestTwoWaysOfNamingTheModelNameTheFlags(t *testing.T) {
	rest := []string{"--cluster", "dgx-h100", "--gpus", "8", "--tp", "8", "--mbs", "1", "--gbs", "8", "--seq", "4096"}
	for _, tc := range []struct {
		model []string
		want  string
	}{
		{[]string{"--model", "llama3-8b", "--kv-heads", "4"}, "--model and --kv-heads: give one way of naming the model"},
		{[]string{"--model", "llama3-8b", "--vocab", "32000", "--gated"}, "--model and --vocab, --gated: give one way of naming the model"},
		{[]string{"--params", "8e9", "--model", "llama3-8b"}, "--model and --params: give one way of naming the model"},
		{[]string{"--model-file", "m.json", "--layers", "4", "--hidden", "512", "--heads", "8"}, "--model-file and --layers, --hidden, --heads: give one way of naming the model"},
	} {
		for _, cmd := range []string{"estimate", "plan"} {
			args := append(append([]string{cmd}, tc.model...), rest...)
			if cmd == "plan" {
				args = append(append([]string{cmd}, tc.model...), "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "8", "--seq", "4096")
			}
			code, out, errOut := run(args...)
			if code != exitFailure || out != "" || !strings.HasPrefix(errOut, "stepcost "+cmd+": "+tc.want) {
				t.Errorf("%q: exit %d, %q; want exit 1 and %q", args, code, errOut, tc.want)
			}
		}
	}
}
