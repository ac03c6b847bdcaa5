package cli

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --server at an address that answers HTTP but not gRPC — the daemon's REST port,
// which the README gives beside the gRPC one — says so and names the gRPC port to
// give: over plain text the answer was "frame too large … looked like an HTTP/1.1
// header" with "(if the server uses TLS, add --tls or --tls-ca)", which changes
// nothing, and over TLS a bare "unexpected HTTP status code received from server:
// 404".
func TestServerThatAnswersHTTPNotGRPC(t *testing.T) {
	web := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	plain := httptest.NewServer(web)
	defer plain.Close()
	tls := httptest.NewUnstartedServer(web)
	tls.EnableHTTP2 = true
	tls.StartTLS()
	defer tls.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tls.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	collective := []string{"collective", "--cluster", "dgx-h100", "--op", "allreduce", "--size", "1MiB"}
	for _, where := range [][]string{
		{"--server", strings.TrimPrefix(plain.URL, "http://")},
		{"--server", strings.TrimPrefix(tls.URL, "https://"), "--tls-ca", ca},
	} {
		code, _, errOut := run(append(append([]string(nil), collective...), where...)...)
		if code != exitFailure || !strings.Contains(errOut, "the address answers HTTP, not gRPC: --server takes the daemon's gRPC address") || strings.Contains(errOut, "add --tls") {
			t.Errorf("%v: exit %d, %s", where, code, errOut)
		}
	}
}
