package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// tokenEnv holds the bearer token for a daemon that requires one. There is no flag
// for the token itself: a command line is visible to every user of the host.
const tokenEnv = "STEPCOST_TOKEN"

// remoteSecurity is how the commands with --server reach a daemon that serves TLS
// or wants a token.
type remoteSecurity struct {
	tls       bool
	ca        string
	cert, key string
	tokenFile string
}

func remoteSecurityFlags(fs *pflag.FlagSet) *remoteSecurity {
	s := &remoteSecurity{}
	fs.BoolVar(&s.tls, "tls", false, "with --server: connect over TLS, trusting the system's CAs (or --tls-ca)")
	fs.StringVar(&s.ca, "tls-ca", "", "with --server: trust only the CA certificates in this PEM file; implies --tls")
	fs.StringVar(&s.cert, "tls-cert", "", "with --server: client certificate (PEM) for a daemon that requires one; implies --tls")
	fs.StringVar(&s.key, "tls-key", "", "private key (PEM) of --tls-cert")
	fs.StringVar(&s.tokenFile, "token-file", "", "with --server: file holding the bearer token (default: $"+tokenEnv+")")
	return s
}

// dialOptions are the transport credentials and the token for addr.
func (s *remoteSecurity) dialOptions(addr string) ([]grpc.DialOption, error) {
	if s == nil {
		s = &remoteSecurity{}
	}
	token, err := s.token()
	if err != nil {
		return nil, err
	}
	useTLS := s.tls || s.ca != "" || s.cert != "" || s.key != ""
	var opts []grpc.DialOption
	if useTLS {
		c, err := s.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(c)))
	} else {
		if token != "" && !loopback(addr) {
			return nil, fmt.Errorf("--server %s: refusing to send the token in clear text to another host: add --tls or --tls-ca", addr)
		}
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	opts = append(opts, grpc.WithChainUnaryInterceptor(hint(token != "", useTLS, s.cert != "")))
	return opts, nil
}

func (s *remoteSecurity) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12} // RootCAs nil: the system's
	if s.ca != "" {
		data, err := readFile(s.ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--tls-ca: no PEM certificate in %s", s.ca)
		}
	}
	if s.cert != "" || s.key != "" {
		if s.cert == "" || s.key == "" {
			return nil, errors.New("--tls-cert and --tls-key: give both")
		}
		cert, err := tls.LoadX509KeyPair(s.cert, s.key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// token reads --token-file (its one token; blank lines and # comments are
// skipped, as in the daemon's file) or else $STEPCOST_TOKEN.
func (s *remoteSecurity) token() (string, error) {
	if s.tokenFile == "" {
		return strings.TrimSpace(os.Getenv(tokenEnv)), nil
	}
	data, err := readFile(s.tokenFile) // bounded, and without a byte-order mark
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	var tokens []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			tokens = append(tokens, l)
		}
	}
	if len(tokens) != 1 {
		return "", fmt.Errorf("--token-file %s: want one token, found %d", s.tokenFile, len(tokens))
	}
	return tokens[0], nil
}

// loopback reports whether addr (host:port) is this host, where a token sent in
// clear text stays on the machine.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// bearer sends the token with every call. Clear text is allowed only to loopback
// addresses, which dialOptions checks, so the transport is not required to be
// secure here.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

// notGRPC says whether err is gRPC's report of a server that answered in HTTP
// but not as a gRPC server: an HTTP/1.1 server read the client's HTTP/2 preface
// as a request and answered it, or an HTTP/2 server answered the call with a web
// page's status (404) and no gRPC content type.
func notGRPC(err error) bool {
	msg := status.Convert(err).Message()
	return strings.Contains(msg, "looked like an HTTP/1.1 header") ||
		strings.Contains(msg, "unexpected HTTP status code received from server")
}

// hint adds to an error what the user can change about how they connect. A
// refused TLS handshake often reaches the client as a bare connection error (with
// TLS 1.3 the server checks the client certificate after the client has finished),
// hence the conditional wording.
func hint(sentToken, usedTLS, sentCert bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		switch code := status.Code(err); {
		case notGRPC(err):
			// The daemon's REST port, or another web server: the TLS hint
			// below was given for it, which changes nothing.
			return fmt.Errorf("%w (the address answers HTTP, not gRPC: --server takes the daemon's gRPC address, its --grpc-addr, :8081 by default, not its REST one, --http-addr, :8080)", err)
		case code == codes.Unauthenticated && !sentToken:
			return fmt.Errorf("%w (the server wants a token: set %s or --token-file)", err, tokenEnv)
		case code == codes.Unavailable && !usedTLS:
			return fmt.Errorf("%w (if the server uses TLS, add --tls or --tls-ca)", err)
		case code == codes.Unavailable && !sentCert:
			return fmt.Errorf("%w (if the server requires client certificates, add --tls-cert and --tls-key)", err)
		case code == codes.Unavailable:
			return fmt.Errorf("%w (if the server refused the client certificate, its CA must be in the server's --tls-client-ca)", err)
		}
		return err
	}
}
