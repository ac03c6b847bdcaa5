package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/stepcost/stepcost/internal/testpki"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server/security"
)

// Tokens of the authentication tests: two accepted, and one that differs from the
// first in its last character.
const (
	tokenA     = "alpha-7c1e0a9d5f3b4e2a"
	tokenB     = "bravo-0b9f8e7d6c5a4b3c"
	tokenWrong = "alpha-7c1e0a9d5f3b4e2b"
)

// secureDaemon is startDaemon, stopped at the end of the test.
func secureDaemon(t *testing.T, edit func(*Config)) daemon {
	t.Helper()
	d := startDaemon(t, edit)
	t.Cleanup(func() {
		if err := d.stop(); err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	return d
}

func dial(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// withToken returns a context carrying "authorization: Bearer token" (none if
// token is empty) and a 5 s deadline.
func withToken(t *testing.T, token string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	return ctx
}

// listCatalog calls ListCatalog on a fresh connection.
func listCatalog(t *testing.T, addr string, creds credentials.TransportCredentials, token string) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = pb.NewStepcostServiceClient(conn).ListCatalog(withToken(t, token), &pb.ListCatalogRequest{})
	return err
}

// get fetches url with client, sending the token if any; it returns the status and
// body.
func get(t *testing.T, client *http.Client, url, token string) (int, string, http.Header, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header, nil
}

// httpsClient speaks HTTP/2 over TLS; its connections are closed before the
// daemon stops (an idle HTTP/2 connection holds up the server's shutdown by a
// second).
func httpsClient(t *testing.T, c *tls.Config) *http.Client {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c, ForceAttemptHTTP2: true}}
	t.Cleanup(client.CloseIdleConnections)
	return client
}

// listServices asks the reflection service for the service names.
func listServices(ctx context.Context, conn *grpc.ClientConn) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	// On a refused stream Send reports io.EOF; Recv then has the status.
	if err := stream.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{ListServices: "*"}}); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	_ = stream.CloseSend()
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names, nil
}

// lockedBuffer collects the daemon's log from its goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// With a certificate, gRPC and REST (whose gateway reaches gRPC in memory) are
// served over TLS only: plain text and TLS 1.1 are refused.
func TestTLS(t *testing.T) {
	p := testpki.New(t)
	d := secureDaemon(t, func(c *Config) { c.TLS = TLSConfig{CertFile: p.ServerCert, KeyFile: p.ServerKey} })

	if err := listCatalog(t, d.grpcAddr, credentials.NewTLS(p.ClientTLS(nil)), ""); err != nil {
		t.Errorf("gRPC over TLS: %v", err)
	}
	client := httpsClient(t, p.ClientTLS(nil))
	for _, path := range []string{"/v1/catalog", "/healthz", "/openapi.json"} {
		if code, body, _, err := get(t, client, "https://"+d.httpAddr+path, ""); err != nil || code != http.StatusOK {
			t.Errorf("REST %s over TLS: %d %v %.200s", path, code, err, body)
		}
	}
	if code, _, _, err := get(t, client, "https://localhost"+d.httpAddr[strings.LastIndex(d.httpAddr, ":"):]+"/healthz", ""); err != nil || code != http.StatusOK {
		t.Errorf("REST by host name: %d %v", code, err)
	}

	if err := listCatalog(t, d.grpcAddr, insecure.NewCredentials(), ""); status.Code(err) != codes.Unavailable {
		t.Errorf("plain-text gRPC: %v, want Unavailable", err)
	}
	if code, _, _, err := get(t, http.DefaultClient, "http://"+d.httpAddr+"/v1/catalog", ""); err == nil && code == http.StatusOK {
		t.Error("plain-text HTTP answered 200")
	}
	// A client that does not know the CA refuses the server.
	if err := listCatalog(t, d.grpcAddr, credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12}), ""); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("unknown CA: %v", err)
	}
	for _, addr := range []string{d.grpcAddr, d.httpAddr} {
		old := p.ClientTLS(nil)
		old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
		if c, err := tls.Dial("tcp", addr, old); err == nil {
			c.Close()
			t.Errorf("%s: TLS 1.1 accepted", addr)
		}
	}
}

// With --tls-client-ca, a client needs a certificate from that CA, on both
// listeners; the REST gateway still works.
func TestMutualTLS(t *testing.T) {
	p := testpki.New(t)
	d := secureDaemon(t, func(c *Config) {
		c.TLS = TLSConfig{CertFile: p.ServerCert, KeyFile: p.ServerKey, ClientCAFile: p.CA}
	})
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
		ok   bool
	}{
		{"no client certificate", nil, false},
		{"a certificate from another CA", &p.Stranger, false},
		{"a certificate from the CA", &p.Client, true},
	} {
		err := listCatalog(t, d.grpcAddr, credentials.NewTLS(p.ClientTLS(tc.cert)), "")
		if tc.ok != (err == nil) {
			t.Errorf("gRPC with %s: %v", tc.name, err)
		}
		client := httpsClient(t, p.ClientTLS(tc.cert))
		for _, path := range []string{"/v1/catalog", "/healthz"} {
			code, body, _, err := get(t, client, "https://"+d.httpAddr+path, "")
			if tc.ok && (err != nil || code != http.StatusOK) || !tc.ok && err == nil {
				t.Errorf("REST %s with %s: %d %v %.200s", path, tc.name, code, err, body)
			}
		}
	}
}

// Bad certificate flags stop the start-up with the flag named, before anything
// listens.
func TestTLSStartupErrors(t *testing.T) {
	p := testpki.New(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		tls  TLSConfig
		want string
	}{
		{TLSConfig{CertFile: missing, KeyFile: p.ServerKey}, "--tls-cert: open " + missing},
		{TLSConfig{CertFile: p.ServerCert, KeyFile: missing}, "--tls-key: open " + missing},
		{TLSConfig{CertFile: p.ServerCert, KeyFile: p.ClientKey}, "--tls-cert/--tls-key: " + p.ServerCert + " and " + p.ClientKey + ": tls: private key does not match public key"},
		{TLSConfig{CertFile: p.ServerKey, KeyFile: p.ServerCert}, "--tls-cert/--tls-key: "},
		{TLSConfig{CertFile: p.ServerCert, KeyFile: p.ServerKey, ClientCAFile: missing}, "--tls-client-ca: open " + missing},
		{TLSConfig{CertFile: p.ServerCert, KeyFile: p.ServerKey, ClientCAFile: p.ClientKey}, "--tls-client-ca: no PEM certificate in " + p.ClientKey},
		{TLSConfig{CertFile: p.ServerCert}, "--tls-key: is required with --tls-cert"},
		{TLSConfig{KeyFile: p.ServerKey}, "--tls-cert: is required with --tls-key"},
		{TLSConfig{ClientCAFile: p.CA}, "--tls-client-ca: needs --tls-cert and --tls-key"},
	} {
		cfg := DefaultConfig()
		cfg.WarmUp = nil // tests start at once
		cfg.GRPCAddr, cfg.HTTPAddr, cfg.TLS = "127.0.0.1:0", "127.0.0.1:0", tc.tls
		// Cancelled: should the configuration pass, Run returns at once with nil.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := Run(ctx, cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%+v: %v, want %q", tc.tls, err, tc.want)
		}
	}
}

// Every RPC but health needs an accepted token, over gRPC and REST; refusals are
// Unauthenticated (401) and neither they nor the log repeat a token.
func TestAuth(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# stepcost clients\n"+tokenA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logged lockedBuffer
	d := startDaemon(t, func(c *Config) {
		c.Auth = AuthConfig{TokenFile: file, Tokens: []string{tokenB}}
		c.Telemetry.Metrics = true
		c.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	stopped := false
	defer func() {
		if !stopped {
			d.stop()
		}
	}()
	noToken := func(where, s string) {
		t.Helper()
		for _, tok := range []string{tokenA, tokenB, tokenWrong} {
			if strings.Contains(s, tok) {
				t.Errorf("%s repeats a token: %s", where, s)
			}
		}
	}

	conn := dial(t, d.grpcAddr, insecure.NewCredentials())
	svc := pb.NewStepcostServiceClient(conn)
	for _, tc := range []struct {
		name, header string
		want         codes.Code
	}{
		{"no token", "", codes.Unauthenticated},
		{"a wrong token", "Bearer " + tokenWrong, codes.Unauthenticated},
		{"an accepted token as Basic credentials", "Basic " + tokenA, codes.Unauthenticated},
		{"a bare Bearer", "Bearer", codes.Unauthenticated},
		{"the token from the file", "Bearer " + tokenA, codes.OK},
		{"the token from the environment", "bearer " + tokenB, codes.OK},
	} {
		ctx := withToken(t, "")
		if tc.header != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", tc.header)
		}
		_, err := svc.ListCatalog(ctx, &pb.ListCatalogRequest{})
		if status.Code(err) != tc.want {
			t.Errorf("gRPC with %s: %v, want %v", tc.name, err, tc.want)
		}
		if err != nil {
			noToken("gRPC error", err.Error())
		}
	}
	// Health needs no token; reflection (a stream) does.
	if r, err := healthpb.NewHealthClient(conn).Check(withToken(t, ""), &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health without a token: %v %v", r, err)
	}
	if _, err := listServices(withToken(t, ""), conn); status.Code(err) != codes.Unauthenticated {
		t.Errorf("reflection without a token: %v", err)
	}
	if names, err := listServices(withToken(t, tokenA), conn); err != nil || !slices.Contains(names, pb.StepcostService_ServiceDesc.ServiceName) {
		t.Errorf("reflection with the token: %v %v", names, err)
	}

	// REST: the gateway forwards the Authorization header to the interceptor.
	base := "http://" + d.httpAddr
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/v1/catalog", "", http.StatusUnauthorized},
		{"/v1/catalog", tokenWrong, http.StatusUnauthorized},
		{"/v1/catalog", tokenA, http.StatusOK},
		{"/v1/catalog", tokenB, http.StatusOK},
		{"/healthz", "", http.StatusOK},
		{"/openapi.json", "", http.StatusOK},
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", tokenWrong, http.StatusUnauthorized},
		{"/metrics", tokenB, http.StatusOK},
	} {
		code, body, h, err := get(t, http.DefaultClient, base+tc.path, tc.token)
		if err != nil || code != tc.want {
			t.Errorf("GET %s with %q: %d %v %.200s", tc.path, tc.token, code, err, body)
			continue
		}
		if code == http.StatusUnauthorized {
			noToken("REST error", body)
			if tc.path == "/v1/catalog" && !strings.Contains(body, "bearer token") {
				t.Errorf("GET %s: %s", tc.path, body)
			}
			if tc.path == "/metrics" && h.Get("WWW-Authenticate") == "" {
				t.Errorf("GET /metrics: 401 without WWW-Authenticate")
			}
		}
		if tc.path == "/metrics" && code == http.StatusOK && !strings.Contains(body, `code="Unauthenticated"`) {
			t.Errorf("refused calls not in the metrics")
		}
	}

	stopped = true
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	log := logged.String()
	noToken("the log", log)
	if !strings.Contains(log, "msg=unauthenticated") || !strings.Contains(log, "auth_tokens=2") {
		t.Errorf("log lacks the refusals or the token count:\n%s", log)
	}
}

// A token source that holds no token, or a malformed token, stops the start-up
// naming its flag or variable and a line number, never the line.
func TestTokenSourcesStopStartup(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := write("good", "# stepcost clients\r\n\n  "+tokenA+"  \r\n# prometheus\n"+tokenB+"\n\n")
	for _, tc := range []struct {
		auth AuthConfig
		want string
	}{
		{AuthConfig{TokenFile: write("empty", "")}, "--auth-token-file: " + dir + "/empty holds no token"},
		{AuthConfig{TokenFile: write("comments", "# to do\n\n   \n")}, "--auth-token-file: " + dir + "/comments holds no token"},
		{AuthConfig{TokenFile: filepath.Join(dir, "missing")}, "--auth-token-file: open "},
		{AuthConfig{TokenFile: write("spaced", "# ok\n"+tokenA+" # laptop\n")}, "--auth-token-file: " + dir + "/spaced: line 2: a token must be printable ASCII without spaces"},
		{AuthConfig{TokenFile: good, Tokens: []string{""}}, security.TokensEnv + ": is set but holds no token"},
		{AuthConfig{Tokens: []string{" ", "  "}}, security.TokensEnv + ": is set but holds no token"},
		{AuthConfig{Tokens: []string{tokenA, "bravo\x00-" + tokenB}}, security.TokensEnv + ": entry 2: a token must be printable ASCII"},
	} {
		cfg := DefaultConfig()
		cfg.WarmUp = nil // tests start at once
		cfg.GRPCAddr, cfg.HTTPAddr, cfg.Auth = "127.0.0.1:0", "127.0.0.1:0", tc.auth
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := Run(ctx, cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tokenA) || strings.Contains(err.Error(), tokenB) {
			t.Errorf("%+v: %v, want %q", tc.auth, err, tc.want)
		}
	}
}

// Flags and environment: the TLS and token-file flags, tokens only from the
// environment, reflection and metrics switchable.
func TestSecurityFlags(t *testing.T) {
	t.Setenv(security.TokensEnv, tokenA+","+tokenB)
	t.Setenv("STEPCOST_TLS_CLIENT_CA", "/etc/stepcost/ca.pem")
	cfg, err := ParseFlags([]string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--auth-token-file", "/run/secrets/tokens", "--reflection=false"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := TLSConfig{CertFile: "c.pem", KeyFile: "k.pem", ClientCAFile: "/etc/stepcost/ca.pem"}
	if cfg.TLS != want || cfg.Auth.TokenFile != "/run/secrets/tokens" || !slices.Equal(cfg.Auth.Tokens, []string{tokenA, tokenB}) || cfg.Reflection || cfg.Telemetry.Metrics {
		t.Errorf("config %+v", cfg)
	}
	if _, err := ParseFlags([]string{"--auth-tokens", tokenA}, io.Discard); err == nil {
		t.Error("tokens accepted on the command line")
	}
	if _, err := ParseFlags([]string{"--tls-cert", "c.pem"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--tls-key:") {
		t.Errorf("--tls-cert alone: %v", err)
	}
	t.Setenv(security.TokensEnv, "")
	t.Setenv("STEPCOST_TLS_CLIENT_CA", "")
	if cfg, err := ParseFlags(nil, io.Discard); err != nil || !cfg.Auth.Enabled() {
		t.Errorf("empty %s: authentication off (%v)", security.TokensEnv, err)
	}
	var help bytes.Buffer
	if _, err := ParseFlags([]string{"--help"}, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, w := range []string{"-tls-cert", "-tls-key", "-tls-client-ca", "-auth-token-file", security.TokensEnv} {
		if !strings.Contains(help.String(), w) {
			t.Errorf("--help lacks %s", w)
		}
	}
}

// With --reflection=false the reflection service is absent.
func TestReflectionSwitch(t *testing.T) {
	for _, on := range []bool{true, false} {
		d := startDaemon(t, func(c *Config) { c.Reflection = on })
		conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		names, err := listServices(withToken(t, ""), conn)
		if on && (err != nil || !slices.Contains(names, pb.StepcostService_ServiceDesc.ServiceName)) {
			t.Errorf("reflection on: %v %v", names, err)
		}
		if !on && status.Code(err) != codes.Unimplemented {
			t.Errorf("reflection off: %v %v, want Unimplemented", names, err)
		}
		conn.Close()
		if err := d.stop(); err != nil {
			t.Fatal(err)
		}
	}
}

// A renewed certificate is served without a restart: once its files change, new
// connections to both listeners get it within about a second. A pair that fails to
// load is logged and the previous certificate kept until the files are fixed.
func TestCertificateReload(t *testing.T) {
	a, b := testpki.New(t), testpki.New(t) // two CAs, each with a server certificate
	read := func(f string) []byte {
		t.Helper()
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	der := func(f string) []byte {
		block, _ := pem.Decode(read(f))
		return block.Bytes
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	installed := 0
	install := func(cert, key string) {
		t.Helper()
		installed++
		// Distinct modification times even on a file system that keeps whole seconds.
		mod := time.Now().Add(time.Duration(installed) * time.Second)
		for f, data := range map[string][]byte{certFile: read(cert), keyFile: read(key)} {
			if err := os.WriteFile(f, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(f, mod, mod); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(a.ServerCert, a.ServerKey)
	var logged lockedBuffer
	d := secureDaemon(t, func(c *Config) {
		c.TLS = TLSConfig{CertFile: certFile, KeyFile: keyFile}
		c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	})
	roots := a.Roots.Clone()
	roots.AppendCertsFromPEM(read(b.CA))
	// served is the certificate a new connection to addr gets.
	served := func(addr string) []byte {
		t.Helper()
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Raw
	}
	// await waits until both listeners serve want.
	await := func(what string, want []byte) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if bytes.Equal(served(d.grpcAddr), want) && bytes.Equal(served(d.httpAddr), want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not served 5 s after the files changed:\n%s", what, logged.String())
			}
		}
	}
	if !bytes.Equal(served(d.grpcAddr), der(a.ServerCert)) || !bytes.Equal(served(d.httpAddr), der(a.ServerCert)) {
		t.Fatal("not serving the first certificate")
	}

	install(b.ServerCert, b.ServerKey)
	await("the renewed certificate", der(b.ServerCert))
	// Clients that trust only the new CA get through, over gRPC and REST.
	if err := listCatalog(t, d.grpcAddr, credentials.NewTLS(b.ClientTLS(nil)), ""); err != nil {
		t.Errorf("gRPC after the renewal: %v", err)
	}
	if code, _, _, err := get(t, httpsClient(t, b.ClientTLS(nil)), "https://"+d.httpAddr+"/v1/catalog", ""); err != nil || code != http.StatusOK {
		t.Errorf("REST after the renewal: %d %v", code, err)
	}

	// A key that does not match: logged, and the renewed certificate stays.
	install(a.ServerCert, b.ServerKey)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logged.String(), "TLS certificate not reloaded"); time.Sleep(50 * time.Millisecond) {
		served(d.grpcAddr) // a handshake looks at the files
		if time.Now().After(deadline) {
			t.Fatalf("the failed reload was not logged:\n%s", logged.String())
		}
	}
	if !bytes.Equal(served(d.grpcAddr), der(b.ServerCert)) || !bytes.Equal(served(d.httpAddr), der(b.ServerCert)) {
		t.Error("a mismatched pair replaced the certificate")
	}
	// Fixed: loaded at the next check.
	install(a.ServerCert, a.ServerKey)
	await("the fixed pair", der(a.ServerCert))

	log := logged.String()
	if n := strings.Count(log, "TLS certificate reloaded"); n != 2 {
		t.Errorf("%d reloads logged, want 2:\n%s", n, log)
	}
	if n := strings.Count(log, "TLS certificate not reloaded"); n != 1 || !strings.Contains(log, "private key does not match public key") {
		t.Errorf("the failed reload logged %d times, or without its reason:\n%s", n, log)
	}
}
