package strictjson

import (
	"runtime"
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
		{`{"a": 1`, "ends inside a JSON value at line 1"},
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

// A value nested deeper than encoding/json's own limit (10000, which its
// Decoder.Token does not apply) is refused, and checking one costs memory in
// proportion to the input: each level's key path was built whole and kept, so a
// 700 KB model file of 100 000 nested objects took 24 GB.
func TestCheckDeepNesting(t *testing.T) {
	const depth = 12000
	deep := []byte(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := Check(deep)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 10000") {
		t.Errorf("%d nested objects: %v", depth, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("%d nested objects: %d MB allocated", depth, n>>20)
	}
	ok := []byte(strings.Repeat(`[{"a":`, 4000) + "1" + strings.Repeat("}]", 4000))
	if err := Check(ok); err != nil {
		t.Errorf("8000 levels: %v", err)
	}
	twice := []byte(strings.Repeat(`{"a":`, 3000) + `{"b": 1, "b": 2}` + strings.Repeat("}", 3000))
	if err := Check(twice); err == nil || !strings.HasPrefix(err.Error(), strings.Repeat(`"a".`, 3000)+`"b" is given twice`) {
		t.Errorf("a key twice 3000 levels down: %.100v", err)
	}
}

// JSON cut short is said to end inside a value, at the line where it ends, and
// malformed JSON names the line of the fault: a truncated model file
// (`{"name": "llama3-8b",` and a key) was refused as "no JSON value", and others
// as a bare "EOF", neither saying where.
func TestCheckTruncatedAndMalformedNameTheLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"{\"name\": \"llama3-8b\",\n \"x\": ", "ends inside a JSON value at line 2"},
		{"[", "ends inside a JSON value at line 1"},
		{"{\n", "ends inside a JSON value at line 2"},
		{`{"a"`, "ends inside a JSON value at line 1"},
		{"{\"a\": 1,\n\n", "ends inside a JSON value at line 3"},
		{"{\"a\": {\"b\": 1}, \"c\": {\"d\": [1, {\"e\":", "ends inside a JSON value at line 1"},
		{`"abc`, "ends inside a JSON value at line 1"},
		{"{\"a\": 1,\n \"b\": }", "invalid character '}' looking for beginning of value at line 2"},
		{" \n\t", "no JSON value"},
	} {
		if err := Check([]byte(tc.in)); err == nil || err.Error() != tc.want {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}
