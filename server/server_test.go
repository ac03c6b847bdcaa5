package server

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// After the stop signal the daemon reports NOT_SERVING (gRPC health and /healthz)
// but keeps answering for the drain delay, then closes its listeners and returns.
func TestDrainDelay(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DrainDelay = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type addrs struct{ g, h string }
	ready := make(chan addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, func(g, h net.Addr) { ready <- addrs{g.String(), h.String()} })
	}()
	a := <-ready
	conn, err := grpc.NewClient(a.g, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	svc := pb.NewStepcostServiceClient(conn)
	if r, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("before: %v %v", r, err)
	}

	stopped := time.Now()
	cancel()
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
	resp, err := http.Get("http://" + a.h + "/healthz")
	if err != nil {
		t.Errorf("/healthz while draining: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("/healthz while draining: %d, want 503", resp.StatusCode)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(stopped); d < cfg.DrainDelay {
		t.Errorf("returned %v after the stop, before the drain delay", d)
	}
	if _, err := net.DialTimeout("tcp", a.g, time.Second); err == nil {
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
		edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s: %v", field, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
