package jsonreq

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A body that is not a valid request is refused naming the field at fault by its
// path in the request, with the rule it broke; a valid one decodes.
func TestUnmarshalNamesTheField(t *testing.T) {
	for _, c := range []struct{ body, field, rule string }{
		{`{"training": {"seq_len": 4096}, "layout": {"tp": 8}}`, "", ""},
		{`{"training": {"seq_len": "x"}}`, "training.seq_len", `must be an integer between -2147483648 and 2147483647 (got "x")`},
		{`{"training": {"seqLen": 0256}}`, "training.seq_len", "must be an integer between -2147483648 and 2147483647 (got 0256): JSON writes a number without leading zeros (RFC 8259 section 6)"},
		{`{"layout": {"tp": 1, "tp": 2}}`, "layout.tp", "is given twice"},
		{`{"layout": {"recompute": "FULL"}}`, "layout.recompute", `must be one of RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL, RECOMPUTE_OPS (got "FULL")`},
		{`{"model": {"name": "a", "params": 7e9}}`, "model.params", "only one of name, architecture, params may be given"},
		{`{"layout": {"tp": 8e}}`, "", "malformed JSON at line 1, column 21: invalid character '}' in exponent of numeric literal"},
		{`{"slow_gpu_speed": 1e-400}`, "slow_gpu_speed", "must be 0 or a number of magnitude at least 5e-324, the smallest a double holds (got 1e-400, which would be read as 0)"},
		{"{\n\"layout\": {\"tp\": 8", "", "ends inside a value at line 2 (cut short?)"},
	} {
		var req pb.EstimateStepRequest
		err := Unmarshal(protojson.UnmarshalOptions{}, []byte(c.body), &req)
		if c.rule == "" {
			if err != nil {
				t.Errorf("%s: %v", c.body, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Field != c.field || e.Rule != c.rule {
			t.Errorf("%s: %#v; want field %q, rule %q", c.body, err, c.field, c.rule)
		}
	}
}
