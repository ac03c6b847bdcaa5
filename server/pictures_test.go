package server

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

const (
	pictureStepBody = `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64},
		"layout": {"tp": 2, "pp": 4, "dp": 2, "micro_batch": 1, "zero": 1, "schedule": "SCHEDULE_ZERO_BUBBLE"}}`
	picturePlanBody = `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64}, "gpus": 16, "top_k": 5}`
)

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func decodesAsXML(t *testing.T, doc []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
	}
}

// The pictures endpoints answer SVG with the security headers, and bad input with
// the gateway's JSON errors naming the field.
func TestPicturesEndpoints(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.MaxRequestBytes = 4096 })
	defer d.stop()
	base := "http://" + d.httpAddr
	for _, c := range []struct{ path, body string }{{"/v1/pictures:schedule", pictureStepBody}, {"/v1/pictures:pareto", picturePlanBody}} {
		resp, body := post(t, base+c.path, c.body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Fatalf("%s: %d %v\n%s", c.path, resp.StatusCode, resp.Header, body)
		}
		decodesAsXML(t, body)
	}
	for _, c := range []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"unknown field", "/v1/pictures:schedule", `{"modle": {}}`, 400, "modle"},
		{"bad layout", "/v1/pictures:schedule", strings.Replace(pictureStepBody, `"tp": 2`, `"tp": -2`, 1), 400, "layout.tp"},
		{"unknown model", "/v1/pictures:pareto", strings.Replace(picturePlanBody, "llama3-8b", "nope", 1), 404, "model"},
		{"empty body", "/v1/pictures:pareto", ``, 400, "request body"},
		{"too large", "/v1/pictures:pareto", `{"model": {"name": "` + strings.Repeat("x", 5000) + `"}}`, http.StatusRequestEntityTooLarge, "--max-request-bytes"},
	} {
		resp, body := post(t, base+c.path, c.body)
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.want) || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s, want %d naming %q", c.name, resp.StatusCode, body, c.code, c.want)
		}
	}
	resp, err := http.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") || !bytes.Contains(page, []byte(`src="app.js"`)) {
		t.Errorf("/ui/: %d %v", resp.StatusCode, resp.Header)
	}
}

// With bearer tokens on, the pictures need one, as the API does.
func TestPicturesNeedToken(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.Auth.Tokens = []string{"secret-token-0123456789"} })
	defer d.stop()
	resp, _ := post(t, "http://"+d.httpAddr+"/v1/pictures:schedule", pictureStepBody)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", resp.StatusCode)
	}
}

// TestPageInBrowser loads the page in headless Chromium: its script reads the
// catalog, submits the default job (?auto=1), fills the ranked-plan table and puts
// the schedule and Pareto pictures in as inline SVG. It is skipped only when
// Chromium is not installed and STEPCOST_REQUIRE_BROWSER is unset; CI sets it.
func TestPageInBrowser(t *testing.T) {
	browser := os.Getenv("STEPCOST_CHROMIUM")
	if browser == "" {
		browser = "/usr/bin/chromium"
	}
	if _, err := os.Stat(browser); err != nil {
		if os.Getenv("STEPCOST_REQUIRE_BROWSER") != "" {
			t.Fatalf("STEPCOST_REQUIRE_BROWSER is set and there is no browser at %s: %v", browser, err)
		}
		t.Skipf("no browser at %s (set STEPCOST_REQUIRE_BROWSER=1 to make this a failure)", browser)
	}
	d := startDaemon(t, nil)
	defer d.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=30000", "--dump-dom", "http://"+d.httpAddr+"/ui/?auto=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
	}
	page := string(dom)
	rows := len(regexp.MustCompile(`<tr class="plan[^"]*"`).FindAllString(page, -1))
	svgs := strings.Count(page, "<svg")
	status := regexp.MustCompile(`<p id="status"[^>]*>([^<]*)</p>`).FindStringSubmatch(page)
	t.Logf("%d plan rows, %d inline <svg> elements; status %q", rows, svgs, status)
	if rows < 1 || rows > 5 {
		t.Errorf("%d ranked-plan rows, want 1–5 (top_k 5)", rows)
	}
	// The schedule picture (two figures stacked) and the Pareto front: at least the
	// two root <svg> elements.
	if svgs < 2 || !strings.Contains(page, `class="block"`) || !strings.Contains(page, `class="front"`) {
		t.Errorf("the pictures are not in the page (%d <svg>):\n%.3000s", svgs, page)
	}
	if strings.Contains(page, `class="error"`) {
		t.Errorf("the page shows an error: %q", status)
	}
}
