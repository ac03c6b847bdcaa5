package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// daemon runs Run on loopback ports with cfg; stop cancels it and returns Run's
// error. The test fails if the daemon does not come up.
type daemon struct {
	grpcAddr, httpAddr string
	stop               func() error
}

func startDaemon(tb testing.TB, edit func(*Config)) daemon {
	tb.Helper()
	cfg := DefaultConfig()
	cfg.WarmUp = nil // tests start at once
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	if edit != nil {
		edit(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan daemon, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, func(g, h net.Addr) { ready <- daemon{grpcAddr: g.String(), httpAddr: h.String()} })
	}()
	select {
	case d := <-ready:
		d.stop = func() error { cancel(); return <-done }
		return d
	case err := <-done:
		cancel()
		tb.Fatalf("daemon: %v", err)
	}
	return daemon{}
}

// startServing starts a daemon with the default configuration, stopped when the test
// ends (a failed stop fails the test), and returns it with a gRPC client on it.
func startServing(t *testing.T) (daemon, pb.StepcostServiceClient) {
	t.Helper()
	d := startDaemon(t, nil)
	t.Cleanup(func() {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
	})
	conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return d, pb.NewStepcostServiceClient(conn)
}

// After the stop signal the daemon reports NOT_SERVING (gRPC health and /healthz)
// but keeps answering for the drain delay, then closes its listeners and returns.
func TestDrainDelay(t *testing.T) {
	const drain = 2 * time.Second
	d := startDaemon(t, func(c *Config) { c.DrainDelay = drain })
	conn := grpcConn(t, d)
	health := healthpb.NewHealthClient(conn)
	svc := pb.NewStepcostServiceClient(conn)
	if r, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("before: %v %v", r, err)
	}

	stopped := time.Now()
	result := make(chan error, 1)
	go func() { result <- d.stop() }()
	// Wait for NOT_SERVING, then check that requests are still answered.
	for {
		r, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err == nil && r.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING {
			break
		}
		if time.Since(stopped) > time.Second {
			t.Fatalf("still %v %v a second after the stop", r, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := svc.ListCatalog(context.Background(), &pb.ListCatalogRequest{}); err != nil {
		t.Errorf("gRPC while draining: %v", err)
	}
	resp, err := http.Get("http://" + d.httpAddr + "/healthz")
	if err != nil {
		t.Errorf("/healthz while draining: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("/healthz while draining: %d, want 503", resp.StatusCode)
		}
	}
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(stopped); took < drain {
		t.Errorf("returned %v after the stop, before the drain delay", took)
	}
	if _, err := net.DialTimeout("tcp", d.grpcAddr, time.Second); err == nil {
		t.Error("gRPC port still open after Run returned")
	}
}

func TestConfigValidation(t *testing.T) {
	for field, edit := range map[string]func(*Config){
		"--drain-delay":      func(c *Config) { c.DrainDelay = -time.Second },
		"--shutdown-grace":   func(c *Config) { c.ShutdownGrace = 0 },
		"--default-deadline": func(c *Config) { c.DefaultDeadline = 0 },
		"--max-candidates":   func(c *Config) { c.Limits.MaxCandidates = -1 },
		"--otlp-endpoint":    func(c *Config) { c.Telemetry.Traces = "otlp" },
		"--traces":           func(c *Config) { c.Telemetry.Traces = "jaeger" },
	} {
		cfg := DefaultConfig()
		cfg.WarmUp = nil // tests start at once
		edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s: %v", field, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// A panic in a handler becomes Internal naming the method; the process survives.
func TestPanicRecovery(t *testing.T) {
	var logged strings.Builder
	h := recoverUnary(slog.New(slog.NewTextHandler(&logged, nil)))
	_, err := h(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/stepcost.v1.StepcostService/EstimateStep"},
		func(context.Context, any) (any, error) { panic("index out of range") })
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "EstimateStep") {
		t.Errorf("got %v", err)
	}
	if !strings.Contains(logged.String(), "index out of range") || !strings.Contains(logged.String(), "stack") {
		t.Errorf("log: %q", logged.String())
	}
}

// With --metrics, /metrics exports RPC latency, the planner's layout counts and the
// cache counters; without, there is no /metrics.
func TestMetricsEndpoint(t *testing.T) {
	for _, on := range []bool{true, false} {
		d := startDaemon(t, func(c *Config) { c.Telemetry.Metrics = on })
		conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		svc := pb.NewStepcostServiceClient(conn)
		for range 2 { // a miss, then a hit
			if _, err := svc.EstimatePlan(context.Background(), plannerRequest()); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.Get("http://" + d.httpAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !on {
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("metrics off: /metrics answered %d", resp.StatusCode)
			}
		} else {
			for _, want := range []string{
				`stepcost_rpc_duration_seconds_count{code="OK",method="/stepcost.v1.StepcostService/EstimatePlan"`,
				`stepcost_planner_layouts_total{`, `outcome="pruned_time_lower_bound"`,
				`stepcost_cache_hits_total{`, `stepcost_cache_misses_total{`,
			} {
				if !strings.Contains(string(body), want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
		}
		conn.Close()
		if err := d.stop(); err != nil {
			t.Fatal(err)
		}
	}
}
