package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// Every JSON answer of the gateway, and its error bodies, is compact: protojson
// adds a blank after a comma or colon or not by a hash of the binary, so without
// compacting the same answer came out as different bytes from one build of the
// daemon to the next.
func TestRESTAnswersAreCompactJSON(t *testing.T) {
	d := startDaemon(t, nil)
	t.Cleanup(func() {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range []struct {
		path string
		body string
		want int
	}{
		{"/v1/steps:estimate", okStep, http.StatusOK},
		{"/v1/collectives:simulate", okColl, http.StatusOK},
		{"/v1/steps:estimate", `{"model": {"name": "no-such-model"}}`, http.StatusNotFound},
		{"/v1/steps:estimate", `{"training": {"seq_len": "x"}}`, http.StatusBadRequest},
	} {
		code, b := restCall(t, d, tc.path, []byte(tc.body))
		if code != tc.want {
			t.Fatalf("%s %s: %d %s; want %d", tc.path, tc.body, code, b, tc.want)
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			t.Fatalf("%s: not JSON: %v: %s", tc.path, err, b)
		}
		if !bytes.Equal(c.Bytes(), b) {
			t.Errorf("%s %s: the answer is not compact JSON: %.200s", tc.path, tc.body, b)
		}
	}
}
