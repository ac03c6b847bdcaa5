package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/tap"

	"github.com/stepcost/stepcost/estimator/invalid"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Conns bounds what a client's connections may hold of the daemon: how long a
// request may take to arrive, how long an idle connection stays open, and how
// many connections and streams there may be. Without them a client sending a
// body at a byte a second, or opening connections and leaving them idle, holds
// a goroutine and its buffers each for ever.
type Conns struct {
	// ReadHeaderTimeout bounds the arrival of an HTTP request's headers, and the
	// TLS handshake of a gRPC connection.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the arrival of a whole HTTP request, body included. (A
	// gRPC request's message must arrive within the call's deadline, the default
	// deadline when the caller sets none.)
	ReadTimeout time.Duration
	// WriteTimeout bounds an HTTP request from the end of its headers to the end of
	// its answer, so it must leave room for the longest call: the default
	// deadline and some.
	WriteTimeout time.Duration
	// IdleTimeout closes a connection (HTTP keep-alive, HTTP/2, gRPC) that has had
	// no request for this long.
	IdleTimeout time.Duration
	// MaxConnections bounds the open connections of each port (gRPC, HTTP, probes);
	// one more is closed as soon as it is accepted. 0: no limit.
	MaxConnections int
	// MaxStreams bounds the calls at once on one HTTP/2 connection (gRPC, and REST
	// over HTTP/2).
	MaxStreams int
}

// DefaultConns are the bounds stepcostd runs with.
func DefaultConns() Conns {
	return Conns{
		ReadHeaderTimeout: 10 * time.Second,
		// The largest request (4 MiB) in 30 s is 140 KB/s, a client on any network.
		ReadTimeout: 30 * time.Second,
		// The default deadline (30 s) and as much again to write the answer.
		WriteTimeout: time.Minute,
		IdleTimeout:  2 * time.Minute,
		// Each connection costs a goroutine or two and up to a few hundred KiB of
		// buffers (HTTP/2 and gRPC read and write buffers): 1024 of them bound that
		// to a few hundred MiB at worst, and are far more clients than one daemon's
		// planner (--max-concurrent-searches) can serve at once.
		MaxConnections: 1024,
		// HTTP/2's advised minimum (RFC 9113 §6.5.2): one client cannot queue more
		// calls than that on one connection.
		MaxStreams: 100,
	}
}

func (c Conns) validate(v *invalid.Collector, deadline time.Duration) {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--read-header-timeout", c.ReadHeaderTimeout}, {"--read-timeout", c.ReadTimeout}, {"--write-timeout", c.WriteTimeout}, {"--idle-timeout", c.IdleTimeout}} {
		if d.v <= 0 {
			v.Add(d.flag, "must be positive (got %v)", d.v)
		}
	}
	if c.WriteTimeout > 0 && c.WriteTimeout < deadline {
		v.Add("--write-timeout", "must be at least --default-deadline %v, or answers are cut (got %v)", deadline, c.WriteTimeout)
	}
	if c.MaxConnections < 0 {
		v.Add("--max-connections", "must be ≥ 0 (got %d)", c.MaxConnections)
	}
	if c.MaxStreams < 1 {
		v.Add("--max-streams", "must be ≥ 1 (got %d)", c.MaxStreams)
	}
}

// httpServer is an HTTP server of h with the bounds.
func (c Conns) httpServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: c.ReadHeaderTimeout, ReadTimeout: c.ReadTimeout,
		WriteTimeout: c.WriteTimeout, IdleTimeout: c.IdleTimeout, MaxHeaderBytes: maxHeaderBytes,
		HTTP2:    &http.HTTP2Config{MaxConcurrentStreams: c.MaxStreams},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// maxHeaderBytes bounds a request's headers, on HTTP and gRPC (net/http's
// default; gRPC's is 16 MiB): a token and a few forwarded headers are a few KiB.
const maxHeaderBytes = 1 << 20

// grpcOptions are the gRPC server's bounds: keep-alive enforcement (a client
// pinging more often than every 10 s is sent away), idle connections closed,
// dead peers found by ping, streams per connection, the TLS handshake's time,
// and the default deadline set as the call arrives, so that it also bounds the
// arrival of the request's message.
func (c Conns) grpcOptions(deadline time.Duration) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: c.IdleTimeout, Time: time.Minute, Timeout: 20 * time.Second}),
		grpc.MaxConcurrentStreams(uint32(c.MaxStreams)),
		grpc.ConnectionTimeout(c.ReadHeaderTimeout),
		grpc.MaxHeaderListSize(maxHeaderBytes),
		grpc.InTapHandle(defaultDeadlineTap(deadline)),
	}
}

// defaultDeadlineTap gives a unary call without a deadline the default one as it
// arrives: gRPC reads a unary call's message before any interceptor runs, and a
// message sent a byte a second would otherwise hold its stream for ever. Streams
// (health's Watch, reflection) are meant to stay open and are left alone.
func defaultDeadlineTap(d time.Duration) tap.ServerInHandle {
	service := "/" + pb.StepcostService_ServiceDesc.ServiceName + "/"
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		unary := strings.HasPrefix(info.FullMethodName, service) || info.FullMethodName == healthpb.Health_Check_FullMethodName
		if _, ok := ctx.Deadline(); ok || !unary {
			return ctx, nil
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		// gRPC cancels the stream's context, this one's parent, when the call ends,
		// which releases the timer; cancel once done all the same.
		context.AfterFunc(ctx, cancel)
		return ctx, nil
	}
}

// capped is a listener that closes the connections it accepts beyond max open
// at once (a client that is refused sees its connection closed at once, rather
// than waiting in the kernel's queue).
type capped struct {
	net.Listener
	open    chan struct{}
	refused atomic.Int64
	log     *slog.Logger
}

// capListener caps lis at max open connections (0: lis as it is).
func capListener(lis net.Listener, max int, log *slog.Logger) net.Listener {
	if max == 0 {
		return lis
	}
	return &capped{Listener: lis, open: make(chan struct{}, max), log: log}
}

func (l *capped) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.open <- struct{}{}:
			return &cappedConn{Conn: c, release: func() { <-l.open }}, nil
		default:
			c.Close()
			if n := l.refused.Add(1); n&(n-1) == 0 { // the 1st, 2nd, 4th, 8th… refusal
				l.log.Warn("connection refused: too many open", "addr", l.Addr().String(), "max", cap(l.open), "refused", n)
			}
		}
	}
}

// cappedConn gives its slot back when it is closed (once).
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
