package server

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

const (
	pictureStepBody = `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64, "framework": "hai-llm"},
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
		{"empty body", "/v1/pictures:pareto", ``, 400, `"field":"model"`}, // an empty request, as the gateway has it
		{"too large", "/v1/pictures:pareto", `{"model": {"name": "` + strings.Repeat("x", 5000) + `"}}`, http.StatusRequestEntityTooLarge, "--max-request-bytes"},
		// No plan: the search's reason, said once ("no feasible plan to draw: no
		// feasible plan: …" said it twice).
		{"no plan", "/v1/pictures:pareto", strings.Replace(picturePlanBody, `"gpus": 16`, `"gpus": 16, "exclude_nodes": [1]`, 1), 400,
			`"message":"no feasible plan to draw: the job needs 16 GPUs; 8 are free on 1 of the cluster's 2 nodes (node 1 excluded)`},
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
// catalog, ranks the job in the form (the defaults, or the fields given in the
// address) without being asked, fills the ranked-plan table and puts the schedule
// and Pareto pictures in as inline SVG. It is skipped only when Chromium is not
// installed and STEPCOST_REQUIRE_BROWSER is unset; CI sets it.
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
	load := func(t *testing.T, query string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
			"--user-data-dir="+t.TempDir(), "--virtual-time-budget=30000", "--dump-dom", "http://"+d.httpAddr+"/ui/"+query)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		dom, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
		}
		return string(dom)
	}
	status := func(page string) string {
		m := regexp.MustCompile(`<p id="status"[^>]*>([^<]*)</p>`).FindStringSubmatch(page)
		if m == nil {
			return ""
		}
		return m[1]
	}
	planRows := regexp.MustCompile(`<tr class="plan[^"]*"`)

	t.Run("defaults, ranked on load", func(t *testing.T) {
		page := load(t, "")
		rows := len(planRows.FindAllString(page, -1))
		svgs := strings.Count(page, "<svg")
		t.Logf("%d plan rows, %d inline <svg> elements; status %q", rows, svgs, status(page))
		if rows < 1 || rows > 5 {
			t.Errorf("%d ranked-plan rows, want 1–5 (top_k 5)", rows)
		}
		// The schedule picture (two figures stacked) and the Pareto front: at least the
		// two root <svg> elements.
		if svgs < 2 || !strings.Contains(page, `class="block"`) || !strings.Contains(page, `class="front"`) {
			t.Errorf("the pictures are not in the page (%d <svg>):\n%.3000s", svgs, page)
		}
		if strings.Contains(page, `class="error"`) {
			t.Errorf("the page shows an error: %q", status(page))
		}
	})
	t.Run("objective, precision and a what-if from the address", func(t *testing.T) {
		page := load(t, "?model=llama3-8b&cluster=dgx-h100&gpus=16&seq=4096&gbs=64&precision=fp8&top=3&objective=cost&price=2.5&tokens=1e11&slow_gpu=0.8")
		rows := len(planRows.FindAllString(page, -1))
		if rows < 1 || rows > 3 || strings.Contains(page, `class="error"`) {
			t.Fatalf("%d rows, status %q", rows, status(page))
		}
		for _, want := range []string{"<th>duration</th>", "<th>cost</th>", "<td>$"} {
			if !strings.Contains(page, want) {
				t.Errorf("the page lacks %q", want)
			}
		}
		// The same job through the API: the page's first plan is its first plan,
		// at the cost it states, so the precision, objective, price, budget and
		// what-if the address gave reached the request.
		body := `{"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64, "precision": "PRECISION_FP8"},
			"gpus": 16, "top_k": 3, "objective": "OBJECTIVE_COST", "price_per_gpu_hour": 2.5, "token_budget": 1e11, "slow_gpu_speed": 0.8}`
		resp, answer := post(t, "http://"+d.httpAddr+"/v1/plans:estimate", body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("API: %d %s", resp.StatusCode, answer)
		}
		var v struct {
			Plans []struct {
				CostUSD float64 `json:"cost_usd"`
			} `json:"plans"`
		}
		if err := json.Unmarshal(answer, &v); err != nil || len(v.Plans) == 0 {
			t.Fatalf("API answer %v: %s", err, answer)
		}
		want := "<td>$" + commaThousands(int64(math.Round(v.Plans[0].CostUSD))) + "</td>"
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show the first plan's cost %s", want)
		}
	})
	// No plan: the page says why, as the answer does (it showed only the pruning
	// counts).
	t.Run("no plan, with the reason", func(t *testing.T) {
		page := load(t, "?model=llama3-405b&cluster=dgx-h100&gpus=8&seq=4096&gbs=64")
		if s := status(page); !strings.Contains(s, "no feasible plan: ") || !strings.Contains(s, "do not fit in the GPUs&#39; memory") && !strings.Contains(s, "do not fit in the GPUs' memory") {
			t.Errorf("status %q, want the answer's no_plan_reason", s)
		}
	})
}

// commaThousands prints n as the page's en-US locale does (12,345).
func commaThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The pictures are RPCs of their own (PictureService): over gRPC they answer the
// same SVG as over REST, and REST calls of them run under the gRPC server's
// default deadline (504 when it passes) like every other call.
func TestPicturesAreRPCs(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.DefaultDeadline = 5 * time.Millisecond })
	defer d.stop()
	conn := grpcConn(t, d)
	req := &pb.EstimateStepRequest{}
	if err := protojson.Unmarshal([]byte(pictureStepBody), req); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := pb.NewPictureServiceClient(conn).DrawSchedule(ctx, &pb.DrawScheduleRequest{Estimate: req})
	if err != nil || body.GetContentType() != "image/svg+xml" {
		t.Fatalf("DrawSchedule: %v, %v", body.GetContentType(), err)
	}
	decodesAsXML(t, body.GetData())
	req.Layout.Tp = -2
	_, err = pb.NewPictureServiceClient(conn).DrawSchedule(ctx, &pb.DrawScheduleRequest{Estimate: req})
	violationOf(t, err, codes.InvalidArgument, "layout.tp")

	// A search of every size up to 512 GPUs takes far longer than 5 ms.
	wide := strings.Replace(picturePlanBody, `"gpus": 16`, `"max_gpus": 512`, 1)
	resp, b := post(t, "http://"+d.httpAddr+"/v1/pictures:pareto", wide)
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("a picture past the default deadline: %d %s, want 504", resp.StatusCode, b)
	}
}

// A picture of an uncached search takes a search slot, as the search does: with
// every slot taken and no queue, it is refused UNAVAILABLE.
func TestPicturesAreAdmitted(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxConcurrentSearches, lim.MaxQueuedSearches = 1, 0
	svc := NewService(lim, nil)
	release, err := svc.admit.Acquire(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	_, err = svc.DrawPareto(context.Background(), &pb.DrawParetoRequest{Plan: plannerRequest()})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("with every slot taken: %v, want UNAVAILABLE", err)
	}
}
