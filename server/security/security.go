// Package security is the daemon's TLS (certificates reloaded when their files
// change, optional client certificates) and bearer-token authentication, for
// the gRPC server and the HTTP port.
package security

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/server/gateway"
)

// TLS serves both listeners (gRPC and HTTP) over TLS with one certificate.
type TLS struct {
	// CertFile and KeyFile are the server's certificate (PEM, intermediates after
	// the leaf) and its private key (--tls-cert, --tls-key). Both or neither.
	CertFile, KeyFile string
	// ClientCAFile (--tls-client-ca), when set, makes client certificates
	// mandatory: only those signed by one of the PEM certificates it holds are
	// accepted (mutual TLS), on both listeners.
	ClientCAFile string
}

// Enabled says whether TLS is configured.
func (t TLS) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" }

// Validate checks that the flags go together; the files are read by Run.
func (t TLS) Validate() error {
	v := invalid.Collector{}
	if t.CertFile != "" && t.KeyFile == "" {
		v.Add("--tls-key", "is required with --tls-cert")
	}
	if t.KeyFile != "" && t.CertFile == "" {
		v.Add("--tls-cert", "is required with --tls-key")
	}
	if t.ClientCAFile != "" && !t.Enabled() {
		v.Add("--tls-client-ca", "needs --tls-cert and --tls-key (client certificates are asked for in the TLS handshake)")
	}
	return v.Err()
}

// TokensEnv carries bearer tokens in the environment. There is deliberately no flag
// for them: a command line is visible to every user of the host (ps,
// /proc/<pid>/cmdline), the environment only to the process's owner.
const TokensEnv = "STEPCOST_AUTH_TOKENS"

// Auth requires a bearer token on every RPC except the health service.
// Authentication is on when TokenFile is set or Tokens is non-nil; it is then an
// error for them to hold no token at all, so that a secret that failed to mount
// does not leave the daemon open.
type Auth struct {
	// TokenFile (--auth-token-file) holds the accepted tokens, one a line; blank
	// lines and lines starting with # are ignored.
	TokenFile string
	// Tokens are accepted too (STEPCOST_AUTH_TOKENS, comma separated); blank
	// entries are ignored.
	Tokens []string
}

// Enabled says whether authentication is on.
func (a Auth) Enabled() bool { return a.TokenFile != "" || a.Tokens != nil }

// Guard is the daemon's TLS and token check, loaded once at start-up.
type Guard struct {
	tls *tls.Config // nil: plain text
	// digests are the SHA-256 of the accepted tokens; nil: no authentication.
	digests [][sha256.Size]byte
	log     *slog.Logger
}

// New reads the certificates and tokens named by tlsCfg and auth. Every error names
// the flag (or variable) at fault and none quotes a token.
func New(tlsCfg TLS, auth Auth, log *slog.Logger) (*Guard, error) {
	s := &Guard{log: log}
	if tlsCfg.Enabled() {
		var err error
		if s.tls, err = loadServerTLS(tlsCfg, log); err != nil {
			return nil, err
		}
	}
	if auth.Enabled() {
		tokens, err := loadTokens(auth)
		if err != nil {
			return nil, err
		}
		short := 0
		for _, t := range tokens {
			s.digests = append(s.digests, sha256.Sum256([]byte(t)))
			if len(t) < 16 {
				short++
			}
		}
		if short > 0 {
			log.Warn("some bearer tokens are shorter than 16 characters and may be guessed; `openssl rand -hex 32` makes a good one", "count", short)
		}
	}
	log.Info("security", "tls", s.tls != nil, "client_certificates", tlsCfg.ClientCAFile != "", "auth_tokens", len(s.digests))
	if s.digests != nil && s.tls == nil {
		log.Warn("bearer tokens travel in clear text: use --tls-cert and --tls-key unless TLS ends in front of the daemon")
	}
	return s, nil
}

func loadServerTLS(c TLS, log *slog.Logger) (*tls.Config, error) {
	files := &certFiles{certFile: c.CertFile, keyFile: c.KeyFile, log: log}
	if err := files.load(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		// Rather than Certificates: the pair is reloaded when its files change.
		GetCertificate: files.get,
		// TLS 1.0 and 1.1 are deprecated (RFC 8996): SHA-1 and CBC constructions with
		// known attacks. 1.2 stays allowed because some clients still lack 1.3
		// (older Java and gRPC runtimes, corporate proxies); with Go's cipher suite
		// defaults 1.2 is forward secret and AEAD-only. Set explicitly so that a
		// GODEBUG setting cannot lower it.
		MinVersion: tls.VersionTLS12,
	}
	if c.ClientCAFile != "" {
		pool, err := clientCAs(c.ClientCAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// clientCAs reads --tls-client-ca's certificates.
func clientCAs(path string) (*x509.CertPool, error) {
	data, err := readPEM(path)
	if err != nil {
		return nil, invalid.Field("--tls-client-ca", "%v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, invalid.Field("--tls-client-ca", "no PEM certificate in %s", path)
	}
	return pool, nil
}

// maxPEM bounds a certificate, key or CA file: a CA bundle of every public root
// is under 1 MiB.
const maxPEM = 16 << 20

// readPEM reads a PEM file up to maxPEM bytes: a file without end (/dev/zero, a
// device) was read until memory ran out.
func readPEM(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPEM+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxPEM {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, maxPEM>>20)
	}
	return data, nil
}

// certFiles serves the certificate of --tls-cert and --tls-key and reloads it
// when either file changes (a renewed certificate, a Kubernetes Secret updated in
// place), so that no restart is needed. The files' modification times and sizes
// are looked at during a TLS handshake, at most once a second; a new pair that
// fails to load is logged (once per change) and the previous one kept.
type certFiles struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	loaded  [2]fileStamp // of the files cert was read from
	failed  [2]fileStamp // of the last pair that failed to load, to log it once
	checked time.Time
}

// fileStamp tells whether a file has changed; zero if it cannot be read.
type fileStamp struct{ mod, size int64 }

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path) // follows symbolic links, as Secret volumes use
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{fi.ModTime().UnixNano(), fi.Size()}
}

// load reads the pair; errors name the flag at fault.
func (f *certFiles) load() error {
	// Stamped before reading, so that a change during the read is seen next time.
	stamp := [2]fileStamp{stampOf(f.certFile), stampOf(f.keyFile)}
	// The files are read one by one so that a missing one is named by its flag.
	certPEM, err := readPEM(f.certFile)
	if err != nil {
		return invalid.Field("--tls-cert", "%v", err)
	}
	keyPEM, err := readPEM(f.keyFile)
	if err != nil {
		return invalid.Field("--tls-key", "%v", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return invalid.Field("--tls-cert/--tls-key", "%s and %s: %v", f.certFile, f.keyFile, err)
	}
	if cert.Leaf != nil && time.Now().After(cert.Leaf.NotAfter) {
		// Not fatal: refusing to start would turn an expired certificate into an
		// outage at the next restart; clients refuse it anyway.
		f.log.Warn("the --tls-cert certificate has expired", "not_after", cert.Leaf.NotAfter)
	}
	f.cert, f.loaded, f.checked = &cert, stamp, time.Now()
	return nil
}

// get is the tls.Config's GetCertificate.
func (f *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); now.Sub(f.checked) >= time.Second {
		f.checked = now
		f.reload()
	}
	return f.cert, nil
}

// reload loads the pair again if a file has changed since it was loaded. A pair
// that fails (a key not yet written, a mismatch) is tried again at the next check,
// until it loads or the files go back to the loaded pair.
func (f *certFiles) reload() {
	stamp := [2]fileStamp{stampOf(f.certFile), stampOf(f.keyFile)}
	if stamp == f.loaded {
		return
	}
	if err := f.load(); err != nil {
		if stamp != f.failed {
			f.failed = stamp
			f.log.Warn("TLS certificate not reloaded: still serving the previous one", "err", err)
		}
		return
	}
	f.failed = [2]fileStamp{}
	attrs := []any{"cert", f.certFile}
	if leaf := f.cert.Leaf; leaf != nil {
		attrs = append(attrs, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
	}
	f.log.Info("TLS certificate reloaded", attrs...)
}

// loadTokens reads the token file and the tokens from the environment. An empty
// source is an error even if the other has tokens: it is a mistake either way.
func loadTokens(a Auth) ([]string, error) {
	var tokens []string
	if a.TokenFile != "" {
		f, err := os.Open(a.TokenFile)
		if err != nil {
			return nil, invalid.Field("--auth-token-file", "%v", err)
		}
		defer f.Close()
		t, err := parseTokens(f)
		if err != nil {
			return nil, invalid.Field("--auth-token-file", "%s: %v", a.TokenFile, err)
		}
		if len(t) == 0 {
			return nil, invalid.Field("--auth-token-file", "%s holds no token (only blank lines and comments)", a.TokenFile)
		}
		tokens = append(tokens, t...)
	}
	if a.Tokens != nil {
		n := 0
		for i, t := range a.Tokens {
			t = strings.TrimSpace(t)
			if t == "" {
				continue
			}
			if err := checkToken(t); err != nil {
				return nil, invalid.Field(TokensEnv, "entry %d: %v", i+1, err)
			}
			tokens, n = append(tokens, t), n+1
		}
		if n == 0 {
			return nil, invalid.Field(TokensEnv, "is set but holds no token")
		}
	}
	return tokens, nil
}

// parseTokens reads one token a line; blank lines and # comments are skipped.
// Errors give the line number, never the line.
func parseTokens(r io.Reader) ([]string, error) {
	var tokens []string
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		t := sc.Text()
		if line == 1 {
			// A byte-order mark (a file saved by a Windows editor) is not part
			// of the first token, as the command line's --token-file reads it.
			t = strings.TrimPrefix(t, "\uFEFF")
		}
		t = strings.TrimSpace(t)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if err := checkToken(t); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		tokens = append(tokens, t)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return tokens, nil
}

// checkToken accepts what can travel in an Authorization header and in gRPC
// metadata: printable ASCII without spaces.
func checkToken(t string) error {
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] > '~' {
			return fmt.Errorf("a token must be printable ASCII without spaces (comments take a line of their own)")
		}
	}
	return nil
}

// Reasons for refusing a call; they are the whole message the caller sees, so they
// never include what was sent.
const (
	errNoToken  = "missing bearer token: send the header authorization: Bearer <token>"
	errNoBearer = "the authorization header is not a bearer token"
	errBadToken = "invalid bearer token"
)

// check returns why the Authorization values do not authenticate, or "".
func (s *Guard) check(values []string) string {
	if len(values) == 0 {
		return errNoToken
	}
	reason := errNoBearer
	for _, v := range values {
		scheme, token, _ := strings.Cut(strings.TrimSpace(v), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			continue
		}
		if s.valid(strings.TrimSpace(token)) {
			return ""
		}
		reason = errBadToken
	}
	return reason
}

// valid compares token with every accepted one in constant time. Hashing first
// makes all comparisons the same length, so neither the position of the first
// differing byte nor the accepted tokens' lengths show in the timing; the loop
// never stops early, so neither does which token matched.
func (s *Guard) valid(token string) bool {
	h := sha256.Sum256([]byte(token))
	ok := 0
	for _, d := range s.digests {
		ok |= subtle.ConstantTimeCompare(h[:], d[:])
	}
	return ok == 1
}

// HealthService is exempt from authentication: load balancers and kubelet probes
// have no token, and it reveals only SERVING or NOT_SERVING. Reflection is not
// exempt: grpcurl sends -H headers with its reflection calls too, and an
// unauthenticated caller then learns nothing but health.
const HealthService = "/grpc.health.v1.Health/"

func (s *Guard) authorize(ctx context.Context, method string) error {
	if strings.HasPrefix(method, HealthService) {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	reason := s.check(md.Get("authorization"))
	if reason == "" {
		return nil
	}
	attrs := []any{"method", method, "reason", reason}
	if p, ok := peer.FromContext(ctx); ok {
		attrs = append(attrs, "peer", p.Addr.String())
		// Through the REST gateway, the caller's address is in x-forwarded-for; from
		// anyone else that header is only a claim.
		if gateway.IsInProcess(p.Addr) {
			attrs = append(attrs, "forwarded_for", strings.Join(md.Get("x-forwarded-for"), ", "))
		}
	}
	s.log.Warn("unauthenticated", attrs...)
	return status.Error(codes.Unauthenticated, reason)
}

// ServerOptions are the gRPC server's TLS and authentication. The authentication
// interceptors come after those installed before them (recovery, deadline,
// metrics), so refused calls are counted in the metrics by their code.
func (s *Guard) ServerOptions() []grpc.ServerOption {
	var opts []grpc.ServerOption
	if s.tls != nil {
		opts = append(opts, grpc.Creds(gateway.ExceptInProcess(credentials.NewTLS(s.tls))))
	}
	if s.digests != nil {
		opts = append(opts,
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if err := s.authorize(ctx, info.FullMethod); err != nil {
					return nil, err
				}
				return h(ctx, req)
			}),
			// Streams: reflection (and health's Watch, which is exempt).
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				if err := s.authorize(ss.Context(), info.FullMethod); err != nil {
					return err
				}
				return h(srv, ss)
			}))
	}
	return opts
}

// RequireToken guards an HTTP handler that does not go through gRPC (/metrics)
// with the same tokens.
func (s *Guard) RequireToken(h http.Handler) http.Handler {
	if s.digests == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := s.check(r.Header.Values("Authorization")); reason != "" {
			s.log.Warn("unauthenticated", "path", r.URL.Path, "reason", reason, "peer", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="stepcostd"`)
			http.Error(w, reason, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP serves srv on lis, over TLS when it is configured.
func (s *Guard) ServeHTTP(srv *http.Server, lis net.Listener) error {
	if s.tls == nil {
		return srv.Serve(lis)
	}
	srv.TLSConfig = s.tls.Clone() // ServeTLS adds h2 and http/1.1 to NextProtos
	return srv.ServeTLS(lis, "", "")
}
