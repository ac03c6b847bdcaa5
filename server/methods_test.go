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
		{http.MethodPost, "/v1/catalog", http.StatusMethodNotAllowed, "GET"},
		{http.MethodGet, "/v1/nothing:here", http.StatusNotFound, ""},
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
		if tc.want == http.StatusMethodNotAllowed && !strings.Contains(string(body), "use "+tc.allow) {
			t.Errorf("%s %s: body %s does not say which method to use", tc.method, tc.path, body)
		}
	}
}
