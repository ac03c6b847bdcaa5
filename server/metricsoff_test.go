package server

import (
	"net/http"
	"strings"
	"testing"
)

// GET /metrics on a daemon started without --metrics is a 404 that says how to
// turn them on: it was the gateway's bare {"code":5,"message":"Not Found"}, which
// a scraper's operator could take for a wrong path.
func TestMetricsOffSaysHowToTurnThemOn(t *testing.T) {
	d := startDaemon(t, nil)
	defer d.stop()
	code, _, body := restDo(t, d, http.MethodGet, "/metrics", "", "", nil)
	if code != http.StatusNotFound || !strings.Contains(string(body), "metrics are off: start stepcostd with --metrics") {
		t.Errorf("GET /metrics without --metrics: HTTP %d %s", code, body)
	}
	on := startDaemon(t, func(c *Config) { c.Telemetry.Metrics = true })
	defer on.stop()
	if code, _, body := restDo(t, on, http.MethodGet, "/metrics", "", "", nil); code != http.StatusOK || strings.Contains(string(body), "metrics are off") {
		t.Errorf("GET /metrics with --metrics: HTTP %d %.200s", code, body)
	}
}
