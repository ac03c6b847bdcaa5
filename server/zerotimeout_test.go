package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A REST call whose Grpc-Timeout header is 0 (0S, 00m, 0H) asked for a deadline
// that has passed: it is DEADLINE_EXCEEDED (504) as one of a nanosecond is. The
// gateway read 0 as no timeout, and the call ran under the daemon's default
// deadline of 30 s, a question the caller did not ask.
func TestZeroGrpcTimeoutHeaderIsDeadlineExceeded(t *testing.T) {
	d, _ := startServing(t)
	client := http.Client{Timeout: 30 * time.Second}
	for _, v := range []string{"0S", "00m", "0H", "0n", "1n"} {
		req, err := http.NewRequest(http.MethodPost, "http://"+d.httpAddr+"/v1/plans:estimate", strings.NewReader(okPlan))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Grpc-Timeout", v)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(b), `"code":4`) {
			t.Errorf("Grpc-Timeout %s: HTTP %d %.200s, want 504 DEADLINE_EXCEEDED", v, resp.StatusCode, b)
		}
	}
}
