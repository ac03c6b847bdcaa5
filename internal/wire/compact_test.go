package wire

import (
	"bytes"
	"testing"
)

// Compact takes out every blank between tokens and none inside strings, and
// leaves what is not JSON as it was.
func TestCompact(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1, "b":[1, 2], "c":"x, y: z"}`: `{"a":1,"b":[1,2],"c":"x, y: z"}`,
		`{"a": {"b": "c"}, "d": null}`:       `{"a":{"b":"c"},"d":null}`,
		`{"a":1,"b":2}`:                      `{"a":1,"b":2}`,
		`not json, "at all"`:                 `not json, "at all"`,
	} {
		if got := Compact([]byte(in)); !bytes.Equal(got, []byte(want)) {
			t.Errorf("Compact(%s) = %s; want %s", in, got, want)
		}
	}
}
