package gateway

import (
	"context"
	"net"
	"sync"

	"google.golang.org/grpc/credentials"
)

// InProcess is an in-memory listener through which the REST gateway reaches the
// daemon's own gRPC server. The gateway is a real gRPC client, so every
// interceptor (authentication included: it forwards the caller's Authorization
// header) and stats handler applies to REST as to gRPC. Going through memory
// rather than the TCP port means the gateway needs no TLS of its own: dialing the
// port under TLS would need a certificate valid for the listen address (":8081"
// names no host) and, under mutual TLS, a client certificate for the daemon itself.
// The bytes never leave the process, and the loopback TCP stack is skipped.
type InProcess struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewInProcess is an in-memory listener for the gateway's connections.
func NewInProcess() *InProcess {
	return &InProcess{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Target is what the gateway's client dials (with Dial as its dialer).
func (*InProcess) Target() string { return "passthrough:///stepcostd-in-process" }

// inProcessConn marks the server end of an in-process connection; only Dial makes
// them, so no network peer can pass for one.
type inProcessConn struct{ net.Conn }

// RemoteAddr names the gateway in logs (the caller is in x-forwarded-for).
func (*inProcessConn) RemoteAddr() net.Addr { return inProcessAddr{} }
func (*inProcessConn) LocalAddr() net.Addr  { return inProcessAddr{} }

// Dial connects to the listener.
func (l *InProcess) Dial(ctx context.Context, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- &inProcessConn{server}:
		return client, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, net.ErrClosed
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

func (l *InProcess) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *InProcess) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (*InProcess) Addr() net.Addr { return inProcessAddr{} }

type inProcessAddr struct{}

func (inProcessAddr) Network() string { return "memory" }
func (inProcessAddr) String() string  { return "in-process" }

// ExceptInProcess is the gRPC server's TLS, except on in-process connections,
// which are handed over as they are.
func ExceptInProcess(c credentials.TransportCredentials) credentials.TransportCredentials {
	return exceptInProcess{c}
}

type exceptInProcess struct {
	credentials.TransportCredentials
}

func (c exceptInProcess) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if _, ok := conn.(*inProcessConn); ok {
		// Nothing can observe or alter bytes that stay in the process.
		return conn, inProcessAuth{credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
	}
	return c.TransportCredentials.ServerHandshake(conn)
}

func (c exceptInProcess) Clone() credentials.TransportCredentials {
	return exceptInProcess{c.TransportCredentials.Clone()}
}

type inProcessAuth struct{ credentials.CommonAuthInfo }

func (inProcessAuth) AuthType() string { return "in-process" }

// IsInProcess says whether a peer's address is the gateway's in-process connection.
func IsInProcess(a net.Addr) bool {
	_, ok := a.(inProcessAddr)
	return ok
}
