package server

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/stepcost/stepcost/internal/testpki"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// loggedAddr returns the address a daemon logged under key in its "serving" line.
func loggedAddr(t *testing.T, log *lockedBuffer, key string) string {
	t.Helper()
	m := regexp.MustCompile(`msg=serving .*\b` + key + `=(\S+)`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no %s address in the log:\n%s", key, log.String())
	}
	return m[1]
}

// --health-addr serves GET /healthz, and nothing else, in plain HTTP without a
// token while the other listeners require TLS, a client certificate and a token:
// probes work whatever the security settings. It answers as /healthz does on the
// HTTP port: 200 while serving, 503 while draining; then it closes.
func TestHealthAddr(t *testing.T) {
	p := testpki.New(t)
	var logged lockedBuffer
	const drain = 2 * time.Second
	d := startDaemon(t, func(c *Config) {
		c.TLS = TLSConfig{CertFile: p.ServerCert, KeyFile: p.ServerKey, ClientCAFile: p.CA}
		c.Auth = AuthConfig{Tokens: []string{tokenA}}
		c.HealthAddr = "127.0.0.1:0"
		c.DrainDelay = drain
		c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	})
	stopped := false
	defer func() {
		if !stopped {
			d.stop()
		}
	}()
	probes := "http://" + loggedAddr(t, &logged, "health")
	plain := &http.Client{Timeout: 5 * time.Second}
	t.Cleanup(plain.CloseIdleConnections)
	secure := httpsClient(t, p.ClientTLS(&p.Client))

	// same checks that /healthz answers want on both ports, with the same body.
	same := func(when string, want int) bool {
		t.Helper()
		code, body, _, err := get(t, plain, probes+"/healthz", "")
		if err != nil || code != want {
			t.Errorf("%s: GET /healthz on the probe port: %d %v %s, want %d", when, code, err, body, want)
			return false
		}
		mainCode, mainBody, _, err := get(t, secure, "https://"+d.httpAddr+"/healthz", "")
		if err != nil || mainCode != code || mainBody != body {
			t.Errorf("%s: /healthz on the HTTP port %d %v %s, on the probe port %d %s", when, mainCode, err, mainBody, code, body)
		}
		return true
	}
	same("serving", http.StatusOK)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/v1/catalog", http.StatusNotFound},
		{http.MethodGet, "/openapi.json", http.StatusNotFound},
		{http.MethodGet, "/metrics", http.StatusNotFound},
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodPost, "/v1/steps:estimate", http.StatusNotFound},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed},
		{http.MethodHead, "/healthz", http.StatusOK}, // it was 405 "Allow: POST"
	} {
		req, _ := http.NewRequest(tc.method, probes+tc.path, strings.NewReader("{}"))
		resp, err := plain.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", tc.method, tc.path, err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s on the probe port: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
	// The probe port speaks no TLS; the HTTP port only TLS.
	if c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", strings.TrimPrefix(probes, "http://"), p.ClientTLS(&p.Client)); err == nil {
		c.Close()
		t.Error("the probe port completed a TLS handshake")
	}
	if code, _, _, err := get(t, plain, "http://"+d.httpAddr+"/healthz", ""); err == nil && code == http.StatusOK {
		t.Error("plain-text /healthz answered on the HTTP port")
	}

	begun := time.Now()
	result := make(chan error, 1)
	stopped = true
	go func() { result <- d.stop() }()
	for {
		code, _, _, err := get(t, plain, probes+"/healthz", "")
		if err == nil && code == http.StatusServiceUnavailable {
			break
		}
		if time.Since(begun) > drain/2 {
			t.Fatalf("the probe port still answers %d %v %v after the stop", code, err, time.Since(begun))
		}
		time.Sleep(10 * time.Millisecond)
	}
	same("draining", http.StatusServiceUnavailable)
	plain.CloseIdleConnections()
	secure.CloseIdleConnections()
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(probes, "http://"), time.Second); err == nil {
		c.Close()
		t.Error("probe port still open after Run returned")
	}
}

// dialRecording is dial without TLS; it sends the local address of each
// connection it opens to local.
func dialRecording(t *testing.T, addr string, local chan<- string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err == nil {
				select {
				case local <- c.LocalAddr().String():
				default:
				}
			}
			return c, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// At debug level every API call (not health) is logged when it ends, with its method,
// code and peer; REST calls come from the in-process gateway. At info, none.
func TestRequestLog(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var logged lockedBuffer
		d := startDaemon(t, func(c *Config) {
			c.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: level}))
		})
		local := make(chan string, 1)
		conn := dialRecording(t, d.grpcAddr, local)
		svc := pb.NewStepcostServiceClient(conn)
		if _, err := svc.ListCatalog(context.Background(), &pb.ListCatalogRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.EstimateStep(context.Background(), &pb.EstimateStepRequest{}); err == nil {
			t.Fatal("an empty EstimateStep succeeded")
		}
		if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
		if code, body, _, err := get(t, http.DefaultClient, "http://"+d.httpAddr+"/v1/catalog", ""); err != nil || code != http.StatusOK {
			t.Fatalf("REST: %d %v %.200s", code, err, body)
		}
		conn.Close()
		if err := d.stop(); err != nil {
			t.Fatal(err)
		}
		log := logged.String()
		rpcs := regexp.MustCompile(`(?m)msg=rpc method=(\S+) code=(\S+) took=\S+ peer=(\S+)$`).FindAllStringSubmatch(log, -1)
		if level == slog.LevelInfo {
			if len(rpcs) > 0 || strings.Contains(log, "msg=rpc") {
				t.Errorf("RPCs logged at info level:\n%s", log)
			}
			continue
		}
		peer := <-local
		var got []string
		for _, m := range rpcs {
			if m[3] != peer {
				m[3] = "in-process"
			}
			got = append(got, strings.TrimPrefix(m[1], "/stepcost.v1.StepcostService/")+" "+m[2]+" "+m[3])
		}
		want := []string{"ListCatalog OK " + peer, "EstimateStep InvalidArgument " + peer, "ListCatalog OK in-process"}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("logged RPCs %q, want %q:\n%s", got, want, log)
		}
		if strings.Contains(log, "grpc.health.v1") {
			t.Errorf("health check logged:\n%s", log)
		}
	}
}

// Flags and variables of the probe port and the log level.
func TestHealthAndLogFlags(t *testing.T) {
	t.Setenv("STEPCOST_HEALTH_ADDR", ":8082")
	t.Setenv("STEPCOST_LOG_LEVEL", "debug")
	cfg, err := ParseFlags(nil, io.Discard)
	if err != nil || cfg.HealthAddr != ":8082" || cfg.LogLevel != slog.LevelDebug {
		t.Errorf("from the environment: %q %v %v", cfg.HealthAddr, cfg.LogLevel, err)
	}
	cfg, err = ParseFlags([]string{"--health-addr", "127.0.0.1:9000", "--log-level", "warn"}, io.Discard)
	if err != nil || cfg.HealthAddr != "127.0.0.1:9000" || cfg.LogLevel != slog.LevelWarn {
		t.Errorf("flags over the environment: %q %v %v", cfg.HealthAddr, cfg.LogLevel, err)
	}
	if _, err := ParseFlags([]string{"--log-level", "loud"}, io.Discard); err == nil || !strings.Contains(err.Error(), "log-level") {
		t.Errorf("--log-level loud: %v", err)
	}
	t.Setenv("STEPCOST_HEALTH_ADDR", "")
	t.Setenv("STEPCOST_LOG_LEVEL", "info")
	if cfg, err := ParseFlags(nil, io.Discard); err != nil || cfg.HealthAddr != "" || cfg.LogLevel != slog.LevelInfo {
		t.Errorf("defaults: %q %v %v", cfg.HealthAddr, cfg.LogLevel, err)
	}
	// A port that is taken stops the start-up, naming the listener.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg = DefaultConfig()
	cfg.WarmUp = nil // tests start at once
	cfg.GRPCAddr, cfg.HTTPAddr, cfg.HealthAddr = "127.0.0.1:0", "127.0.0.1:0", taken.Addr().String()
	if err := Run(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "health listen "+cfg.HealthAddr) {
		t.Errorf("taken health port: %v", err)
	}
}

// A health Watch open at SIGTERM (a gRPC client's health checking holds one per
// connection) sees NOT_SERVING, then ends with UNAVAILABLE when the servers stop,
// instead of holding GracefulStop until the grace period is over: the daemon
// stopped 8.0 s after the signal with an 8 s grace (in the pod: 25 s, the warning
// "shutdown grace period over" and every call still running cancelled), now at
// once.
func TestShutdownEndsHealthWatches(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.ShutdownGrace = 8 * time.Second })
	conn := grpcConn(t, d)
	w, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := w.Recv(); err != nil || st.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("%v, %v", st, err)
	}
	start := time.Now()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("stopped %v after the signal, with a watch open (grace 8 s)", took.Round(time.Millisecond))
	}
	st, err := w.Recv()
	if err != nil || st.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("after the signal: %v, %v; want NOT_SERVING", st, err)
	}
	if _, err := w.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("the watch ended with %v, want UNAVAILABLE", err)
	}
}
