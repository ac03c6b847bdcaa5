package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A known REST path with the wrong method is 405 Method Not Allowed with an Allow
// header (not 501, which would say the server lacks the feature); an unknown path
// is 404.
func TestRESTWrongMethod(t *testing.T) {
	d := startDaemon(t, nil)
	defer d.stop()
	for _, tc := range []struct {
		method, path string
		want         int
		allow        string
	}{
		{http.MethodGet, "/v1/steps:estimate", http.StatusMethodNotAllowed, "POST"},
		{http.MethodGet, "/v1/plans:estimate", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPut, "/v1/configs:rank", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/v1/catalog", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/v1/nothing:here", http.StatusNotFound, ""},
		// /healthz takes GET too (it was "method POST not allowed on /healthz: use
		// POST", Allow: POST), and a GET route HEAD (RFC 9110 section 9.3.2).
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodOptions, "/v1/catalog", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodHead, "/v1/steps:estimate", http.StatusMethodNotAllowed, "POST"},
		{http.MethodHead, "/healthz", http.StatusOK, ""},
		{http.MethodHead, "/v1/catalog", http.StatusOK, ""},
		{http.MethodHead, "/openapi.json", http.StatusOK, ""},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+d.httpAddr+tc.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d (Allow %q), want %d (Allow %q): %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), tc.want, tc.allow, body)
		}
		if tc.method == http.MethodHead && len(body) > 0 {
			t.Errorf("%s %s: an answer with a body: %.100s", tc.method, tc.path, body)
		}
		if tc.want == http.StatusOK && tc.method == http.MethodHead && resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: Content-Type %q, want GET's", tc.method, tc.path, resp.Header.Get("Content-Type"))
		}
		if tc.want == http.StatusMethodNotAllowed && tc.method != http.MethodHead && !strings.Contains(string(body), "use "+strings.Split(tc.allow, ",")[0]) {
			t.Errorf("%s %s: body %s does not say which method to use", tc.method, tc.path, body)
		}
	}
}
