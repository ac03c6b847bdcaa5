package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// series scrapes /metrics and returns, for each metric name (a histogram's
// _bucket, _sum and _count apart), its distinct label sets, and every label
// value seen.
func series(t *testing.T, addr string) (map[string]map[string]bool, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// name{labels} value, or name value.
		key := line[:strings.LastIndexByte(line, ' ')]
		name, labels, _ := strings.Cut(key, "{")
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		out[name][labels] = true
	}
	return out, string(body)
}

// A thousand requests with distinct unknown model names (over gRPC and REST, four
// methods), distinct unknown gRPC methods and distinct unknown REST paths add no
// series to /metrics: every metric's label set is the same after them as after
// the first few of each kind, and no label carries a name from a request. A label
// per request value would grow the scrape, and the Prometheus server's memory,
// without bound.
func TestMetricsCardinalityBounded(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.Telemetry.Metrics = true })
	defer d.stop()
	conn := grpcConn(t, d)
	c := pb.NewStepcostServiceClient(conn)
	pc := pb.NewPictureServiceClient(conn)
	ctx := context.Background()
	const marker = "no-such-model-"
	model := func(i int) *pb.ModelSpec {
		return &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: fmt.Sprintf("%s%d", marker, i)}}
	}
	cluster := &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}
	training := &pb.Training{SeqLen: 4096, GlobalBatch: 64}
	rest := func(i int, path, body string) {
		resp, err := http.Post("http://"+d.httpAddr+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("request %d %s: HTTP %d, want 404", i, path, resp.StatusCode)
		}
	}
	// call makes request i, of one of six kinds.
	call := func(i int) {
		var err error
		switch i % 6 {
		case 0:
			_, err = c.EstimateStep(ctx, &pb.EstimateStepRequest{Model: model(i), Cluster: cluster, Training: training,
				Layout: &pb.Layout{Tp: 8, Pp: 1, Dp: 1, MicroBatch: 1}})
		case 1:
			_, err = c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: model(i), Cluster: cluster, Training: training, Gpus: 16})
		case 2:
			_, err = pc.DrawPareto(ctx, &pb.DrawParetoRequest{Plan: &pb.EstimatePlanRequest{Model: model(i), Cluster: cluster, Training: training, Gpus: 16}})
		case 3:
			rest(i, "/v1/plans:estimate", fmt.Sprintf(`{"model": {"name": "%s%d"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64}, "gpus": 16}`, marker, i))
			return
		case 4:
			rest(i, "/v1/steps:estimate", fmt.Sprintf(`{"model": {"name": "%s%d"}, "cluster": {"name": "dgx-h100"}, "training": {"seq_len": 4096, "global_batch": 64}, "layout": {"tp": 8}}`, marker, i))
			return
		case 5:
			// An unknown method and an unknown path, named after the request.
			err = conn.Invoke(ctx, fmt.Sprintf("/stepcost.v1.StepcostService/%s%d", "NoSuchMethod", i), &pb.ListCatalogRequest{}, &pb.ListCatalogResponse{})
			if status.Code(err) != codes.Unimplemented {
				t.Fatalf("request %d: %v, want UNIMPLEMENTED", i, err)
			}
			resp, herr := http.Get(fmt.Sprintf("http://%s/v1/%s%d", d.httpAddr, marker, i))
			if herr != nil {
				t.Fatal(herr)
			}
			resp.Body.Close()
			return
		}
		if status.Code(err) != codes.NotFound {
			t.Fatalf("request %d: %v, want NOT_FOUND", i, err)
		}
	}
	const first, all = 24, 1000
	for i := range first {
		call(i)
	}
	before, _ := series(t, d.httpAddr)
	for i := first; i < all; i++ {
		call(i)
	}
	after, text := series(t, d.httpAddr)
	if len(before) == 0 || before["stepcost_rpc_duration_seconds_count"] == nil {
		t.Fatalf("no stepcost_rpc_duration series after %d calls: %v", first, before)
	}
	for name, sets := range after {
		if len(sets) != len(before[name]) {
			var grown []string
			for s := range sets {
				if !before[name][s] {
					grown = append(grown, s)
				}
			}
			if len(grown) > 3 {
				grown = grown[:3]
			}
			t.Errorf("%s: %d series after %d requests, %d after %d: new %q", name, len(sets), all, len(before[name]), first, grown)
		}
	}
	for _, bad := range []string{marker, "NoSuchMethod"} {
		if strings.Contains(text, bad) {
			t.Errorf("a label carries a name from a request (%q)", bad)
		}
	}
	t.Logf("%d metrics, %d series after %d requests", len(after), func() (n int) {
		for _, s := range after {
			n += len(s)
		}
		return
	}(), all)
}
