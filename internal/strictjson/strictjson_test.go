package strictjson

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a": 1, "b": [1, {"c": 2}], "d": {"e": null}}`, ""},
		{` "x" `, ""},
		{`[{"a": 1}, {"a": 2}]`, ""}, // one key in two objects
		{`{"a": 1, "a": 2}`, `"a" is given twice`},
		{`{"a": {"b": 1, "c": {}, "b": 2}}`, `"a"."b" is given twice`},
		{`[{"a": 1, "A": 2}]`, `"a" is given twice (as "a" and "A")`},
		{`{"Layers": 1, "layers": 2}`, `"layers" is given twice (as "Layers" and "layers")`},
		{`{"a": 1} {"a": 2}`, "more than one JSON value (after byte 8)"},
		{`{"a": 1}` + "\n\t ", ""},
		{``, "no JSON value"},
		{`{"a": }`, "invalid character"},
		{`{"a": 1`, "EOF"},
	} {
		err := Check([]byte(tc.in))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}
