// Package server is the stepcost daemon: the gRPC service, the REST gateway in front
// of it, health, reflection, the OpenAPI spec, the response cache, telemetry and an
// orderly shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	"github.com/stepcost/stepcost/estimator/invalid"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server/admission"
	"github.com/stepcost/stepcost/server/bounded"
	"github.com/stepcost/stepcost/server/gateway"
	"github.com/stepcost/stepcost/server/openapi"
	"github.com/stepcost/stepcost/server/security"
	"github.com/stepcost/stepcost/server/telemetry"
)

// Config of the daemon.
type Config struct {
	GRPCAddr string // e.g. ":8081"
	HTTPAddr string // e.g. ":8080"
	// HealthAddr, when set, serves GET /healthz alone, in plain HTTP without
	// authentication whatever TLS and tokens the other listeners use, for probes
	// (kubelet) that cannot present a client certificate or trust the server's.
	HealthAddr string
	Limits     Limits
	// CacheMaxBytes bounds the response cache; 0 disables it.
	CacheMaxBytes int64
	// MemoryLimit is the Go runtime's soft memory limit in bytes: 0 for the memory
	// budget (memoryBudget), -1 for none. GOMEMLIMIT, when lower, wins.
	MemoryLimit int64
	// DefaultDeadline applies to requests that come without one.
	DefaultDeadline time.Duration
	// ShutdownGrace is how long in-flight requests may take to finish after SIGTERM.
	ShutdownGrace time.Duration
	// DrainDelay keeps the listeners open, answering but reporting NOT_SERVING, for
	// this long after SIGTERM: load balancers and kube-proxy take a moment to stop
	// sending new connections to a terminating replica.
	DrainDelay time.Duration
	// MaxRequestBytes bounds one request message.
	MaxRequestBytes int
	// Conns bounds the clients' connections on every port: timeouts, numbers.
	Conns Conns
	// Reflection serves the gRPC reflection service (for grpcurl).
	Reflection bool
	// TLS for both listeners, optionally mutual (off by default).
	TLS TLSConfig
	// Auth requires a bearer token on every RPC but health (off by default).
	Auth AuthConfig
	// Telemetry switches (off by default).
	Telemetry telemetry.Config
	// LogLevel is the level of the logger the daemon's main builds (Run logs to
	// Logger, whatever its level). At debug, every unary RPC but health (every API
	// call) is logged when it ends, with its method, code, duration and peer.
	LogLevel slog.Level
	Logger   *slog.Logger
	// WarmUp are the clusters searched at start-up, before health reports SERVING,
	// so that the first requests on them find their communication groups placed
	// (DefaultWarmUp: the NVIDIA reference systems at 1024 GPUs; empty: none).
	WarmUp []WarmTarget
}

// warmUpTimeout bounds the start-up warm-up; what it has not done by then is left
// to the first requests.
const warmUpTimeout = 2 * time.Minute

// DefaultConfig is what `stepcostd` runs with when given no flags.
func DefaultConfig() Config {
	return Config{GRPCAddr: ":8081", HTTPAddr: ":8080", Limits: DefaultLimits(), CacheMaxBytes: 256 << 20,
		DefaultDeadline: 30 * time.Second, ShutdownGrace: 20 * time.Second, MaxRequestBytes: 4 << 20, Reflection: true,
		WarmUp: DefaultWarmUp(), Conns: DefaultConns()}
}

// Validate checks the configuration. Problems are named by their flag.
func (c Config) Validate() error {
	v := invalid.Collector{}
	if c.GRPCAddr == "" {
		v.Add("--grpc-addr", "must not be empty")
	}
	if c.HTTPAddr == "" {
		v.Add("--http-addr", "must not be empty")
	}
	if c.CacheMaxBytes < 0 {
		v.Add("--cache-bytes", "must be ≥ 0 (got %d)", c.CacheMaxBytes)
	}
	if c.DefaultDeadline <= 0 {
		v.Add("--default-deadline", "must be positive (got %v)", c.DefaultDeadline)
	}
	if c.DrainDelay < 0 || c.DrainDelay > time.Minute {
		v.Add("--drain-delay", "must be between 0 and 1m (got %v)", c.DrainDelay)
	}
	if c.ShutdownGrace <= 0 {
		v.Add("--shutdown-grace", "must be positive (got %v)", c.ShutdownGrace)
	}
	if c.MaxRequestBytes < 1024 {
		v.Add("--max-request-bytes", "must be at least 1024 (got %d)", c.MaxRequestBytes)
	}
	c.Limits.Validate(&v)
	for _, w := range c.WarmUp {
		if w.GPUs > c.Limits.MaxGPUs {
			v.Add("--warm-up", "%s: more GPUs than --max-gpus %d", w, c.Limits.MaxGPUs)
		}
	}
	c.Conns.validate(&v, c.DefaultDeadline)
	validateMemoryLimit(&v, c.MemoryLimit)
	v.Join(c.Telemetry.Validate())
	v.Join(c.TLS.Validate())
	return v.Err()
}

// Listening reports the addresses the daemon listens on once it is ready.
type Listening func(grpcAddr, httpAddr net.Addr)

// Run serves until ctx is cancelled, then shuts down in order: health turns
// NOT_SERVING, requests are still answered for DrainDelay, the probe port closes,
// the HTTP server stops taking requests and drains, the gRPC server
// finishes in-flight calls (or is stopped when the grace period ends), telemetry is
// flushed and the cache closed.
func Run(ctx context.Context, cfg Config, ready Listening) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	defer applyMemoryLimit(cfg, log)()
	sec, err := security.New(cfg.TLS, cfg.Auth, log)
	if err != nil {
		return err
	}
	tel, err := telemetry.New(ctx, cfg.Telemetry)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.Background())
	svc, closeCache, err := newDaemonService(cfg, tel)
	if err != nil {
		return err
	}
	defer closeCache()
	lis, err := listen(cfg, log)
	if err != nil {
		return err
	}
	hs := health.NewServer()
	setServing(hs, healthpb.HealthCheckResponse_NOT_SERVING)
	watches := &endingWatches{Server: hs, end: make(chan struct{})}
	gs := newGRPCServer(cfg, svc, watches, watches.end, tel, sec, log)
	gwlis := gateway.NewInProcess()
	conn, rest, err := gateway.New(ctx, gwlis, tel.ClientOptions()...)
	if err != nil {
		lis.close()
		return err
	}
	defer conn.Close()
	httpSrv := cfg.Conns.httpServer(http.MaxBytesHandler(tel.WrapHTTP(restRoutes(rest, tel, sec)), int64(cfg.MaxRequestBytes)), log)
	// The probes' port answers /healthz exactly as the HTTP port does (the same
	// gateway handler, so it also proves the gateway reaches the gRPC server), and
	// nothing else: no TLS, no token, no API.
	var healthSrv *http.Server
	if lis.probes != nil {
		probes := http.NewServeMux()
		probes.Handle("GET /healthz", rest)
		healthSrv = cfg.Conns.httpServer(probes, log)
	}

	// Every server runs in the group; the first to fail ends the others (below).
	g := new(errgroup.Group)
	failed := make(chan struct{})
	var failOnce sync.Once
	serve := func(f func() error) {
		g.Go(func() error {
			err := f()
			if err != nil {
				failOnce.Do(func() { close(failed) })
			}
			return err
		})
	}
	serve(func() error { return grpcStopped(gs.Serve(lis.grpc)) })
	serve(func() error { return grpcStopped(gs.Serve(gwlis)) })
	serve(func() error { return httpClosed(sec.ServeHTTP(httpSrv, lis.http)) })
	if healthSrv != nil {
		serve(func() error { return httpClosed(healthSrv.Serve(lis.probes)) })
	}
	warmUp(ctx, cfg, svc, log)
	setServing(hs, healthpb.HealthCheckResponse_SERVING)
	addrs := []any{"grpc", lis.grpc.Addr().String(), "http", lis.http.Addr().String()}
	if lis.probes != nil {
		addrs = append(addrs, "health", lis.probes.Addr().String())
	}
	log.Info("serving", addrs...)
	if ready != nil {
		ready(lis.grpc.Addr(), lis.http.Addr())
	}

	select {
	case <-ctx.Done():
	case <-failed:
	}
	shutdown(cfg, log, watches, failed, healthSrv, httpSrv, gs)
	return g.Wait()
}

// newDaemonService is the service with its cache (closed by the function
// returned) and telemetry.
func newDaemonService(cfg Config, tel *telemetry.Telemetry) (*Service, func(), error) {
	var c *cache.Cache[proto.Message]
	closeCache := func() {}
	if cfg.CacheMaxBytes > 0 {
		var err error
		c, err = cache.New(cache.Config{MaxCost: cfg.CacheMaxBytes}, cacheCost)
		if err != nil {
			return nil, nil, err
		}
		closeCache = c.Close
		tel.ObserveCache(c)
	}
	svc := newService(cfg.Limits, c, tel.Tracer())
	admission.Observe(tel.Meter(), svc.admit)
	return svc, closeCache, nil
}

// listeners are the daemon's ports; probes is nil without --health-addr.
type listeners struct{ grpc, http, probes net.Listener }

func (l listeners) close() {
	l.grpc.Close()
	l.http.Close()
	if l.probes != nil {
		l.probes.Close()
	}
}

// listen opens the ports, each capped at cfg.Conns.MaxConnections connections.
func listen(cfg Config, log *slog.Logger) (listeners, error) {
	l, err := listenAll(cfg)
	if err != nil {
		return l, err
	}
	l.grpc = capListener(l.grpc, cfg.Conns.MaxConnections, log)
	l.http = capListener(l.http, cfg.Conns.MaxConnections, log)
	if l.probes != nil {
		l.probes = capListener(l.probes, cfg.Conns.MaxConnections, log)
	}
	return l, nil
}

func listenAll(cfg Config) (listeners, error) {
	var l listeners
	var err error
	if l.grpc, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
		return l, fmt.Errorf("grpc listen %s: %w", cfg.GRPCAddr, err)
	}
	if l.http, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		l.grpc.Close()
		return l, fmt.Errorf("http listen %s: %w", cfg.HTTPAddr, err)
	}
	if cfg.HealthAddr != "" {
		if l.probes, err = net.Listen("tcp", cfg.HealthAddr); err != nil {
			l.grpc.Close()
			l.http.Close()
			return l, fmt.Errorf("health listen %s: %w", cfg.HealthAddr, err)
		}
	}
	return l, nil
}

func setServing(hs *health.Server, st healthpb.HealthCheckResponse_ServingStatus) {
	hs.SetServingStatus("", st)
	hs.SetServingStatus(pb.StepcostService_ServiceDesc.ServiceName, st)
}

// newGRPCServer is the gRPC server: the service, health and reflection behind
// logging, panic recovery, the default deadline, telemetry and security. The
// streams a client sends on (reflection's) end once end is closed.
func newGRPCServer(cfg Config, svc *Service, hs healthpb.HealthServer, end <-chan struct{}, tel *telemetry.Telemetry, sec *security.Guard, log *slog.Logger) *grpc.Server {
	faults := &undecodable{}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(cfg.MaxRequestBytes),
		grpc.ForceServerCodecV2(newDecodeCodec(faults)),
		grpc.ChainUnaryInterceptor(boundUnary, decodeFaults(faults), logUnary(log), recoverUnary(log), deadlineUnary(cfg.DefaultDeadline), tel.Unary()),
		grpc.ChainStreamInterceptor(endingStreams(end)),
	}
	opts = append(opts, cfg.Conns.grpcOptions(cfg.DefaultDeadline)...)
	opts = append(opts, tel.ServerOptions()...)
	opts = append(opts, sec.ServerOptions()...)
	gs := grpc.NewServer(opts...)
	pb.RegisterStepcostServiceServer(gs, svc)
	pb.RegisterPictureServiceServer(gs, svc)
	healthpb.RegisterHealthServer(gs, hs)
	if cfg.Reflection {
		reflection.Register(gs)
	}
	return gs
}

// restRoutes is the HTTP port: the gateway (the API and its pictures), the OpenAPI
// document, /metrics and the web page.
func restRoutes(rest http.Handler, tel *telemetry.Telemetry, sec *security.Guard) http.Handler {
	root := http.NewServeMux()
	root.Handle("/", rest)
	root.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openapi.Spec)
	})
	if h := tel.MetricsHandler(); h != nil {
		root.Handle("GET /metrics", sec.RequireToken(h))
	} else {
		// Off: a 404 that says how to turn it on, where the gateway said a bare
		// "Not Found" to a scraper pointed at a daemon started without --metrics.
		// Behind the token as the metrics are: no open side door once
		// authentication is on (docs/operating.md).
		root.Handle("GET /metrics", sec.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"code":5,"message":"metrics are off: start stepcostd with --metrics (or STEPCOST_METRICS=true)","details":[]}`))
		})))
	}
	uiHandlers(root)
	return root
}

// warmUp searches the warm-up targets before the daemon reports SERVING.
func warmUp(ctx context.Context, cfg Config, svc *Service, log *slog.Logger) {
	if len(cfg.WarmUp) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, warmUpTimeout)
	took, err := svc.WarmUp(wctx, cfg.WarmUp)
	cancel()
	if err != nil {
		log.Warn("warm-up incomplete", "targets", len(cfg.WarmUp), "took", took, "err", err)
	} else {
		log.Info("warmed up", "targets", len(cfg.WarmUp), "took", took)
	}
}

// grpcStopped is the gRPC server's Serve error, nil when it was stopped before
// Serve began (a stop right after start).
func grpcStopped(err error) error {
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// httpClosed is an HTTP server's Serve error, nil once it was shut down.
func httpClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// shutdown stops the servers in order: health NOT_SERVING, the drain delay (unless
// a server failed), the probes, HTTP, then gRPC raced against the grace period.
func shutdown(cfg Config, log *slog.Logger, hs *endingWatches, failed <-chan struct{}, healthSrv, httpSrv *http.Server, gs *grpc.Server) {
	log.Info("shutting down")
	hs.Shutdown() // every service NOT_SERVING, so load balancers stop sending work
	select {
	case <-failed:
	default:
		if cfg.DrainDelay > 0 {
			log.Info("draining", "for", cfg.DrainDelay)
			select {
			case <-time.After(cfg.DrainDelay):
			case <-failed:
			}
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	if healthSrv != nil {
		// The probe port closes first: it has no API traffic to drain.
		if err := healthSrv.Shutdown(sctx); err != nil {
			log.Warn("health shutdown", "err", err)
		}
	}
	if err := httpSrv.Shutdown(sctx); err != nil {
		log.Warn("http shutdown", "err", err)
	}
	// The health watches have told their clients NOT_SERVING since the signal; end
	// them and the reflection streams, or GracefulStop would wait for them until
	// the grace period is over.
	close(hs.end)
	done := make(chan struct{})
	go func() { gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-sctx.Done():
		log.Warn("shutdown grace period over: cancelling the calls still running", "grace", cfg.ShutdownGrace)
		gs.Stop()
		<-done
	}
}

// endingWatches is the health service whose Watch streams end, UNAVAILABLE, once
// end is closed at shutdown. A Watch stays open as long as its client does (a
// gRPC client's health checking holds one per connection), and GracefulStop
// waits for every stream: one watch held the daemon's stop to the end of
// --shutdown-grace, and then cut the calls still running
// (TestShutdownEndsHealthWatches).
type endingWatches struct {
	*health.Server
	end chan struct{}
}

// Watch is the health server's, on a stream whose context is done once w.end is
// closed.
func (w *endingWatches) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		select {
		case <-w.end:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := w.Server.Watch(req, watchStream{stream, ctx})
	select {
	case <-w.end:
		return errShuttingDown
	default:
		return err
	}
}

// endingStreams ends the streams a client sends on, UNAVAILABLE, once end is
// closed at shutdown: server reflection's (grpcurl and grpcui hold one open as
// long as they run) waits in RecvMsg for the client's next request, and, as a
// health watch did, held GracefulStop to the end of --shutdown-grace
// (TestShutdownEndsReflectionStreams). The handler's RecvMsg returns the error
// and the handler returns it; the receive it leaves behind ends when the stream
// closes (gRPC allows a RecvMsg beside the stream's other calls). Server-streaming
// calls (health's Watch, endingWatches) do not receive after their request.
func endingStreams(end <-chan struct{}) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if !info.IsClientStream {
			return h(srv, ss)
		}
		return h(srv, &endingStream{ServerStream: ss, end: end})
	}
}

// endingStream is a stream whose RecvMsg returns UNAVAILABLE once end is closed.
type endingStream struct {
	grpc.ServerStream
	end <-chan struct{}
}

func (s *endingStream) RecvMsg(m any) error {
	select {
	case <-s.end:
		return errShuttingDown
	default:
	}
	got := make(chan error, 1)
	go func() { got <- s.ServerStream.RecvMsg(m) }()
	select {
	case err := <-got:
		return err
	case <-s.end:
		return errShuttingDown
	}
}

var errShuttingDown = status.Error(codes.Unavailable, "stepcostd is shutting down")

// watchStream is a Watch stream with its context replaced.
type watchStream struct {
	healthpb.Health_WatchServer
	ctx context.Context
}

func (s watchStream) Context() context.Context { return s.ctx }

// logUnary logs every unary RPC but health (every API call; reflection is a
// stream) at debug level when it ends: method, code, duration and peer (for REST
// calls the peer is the in-process gateway).
func logUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if !log.Enabled(ctx, slog.LevelDebug) || strings.HasPrefix(info.FullMethod, security.HealthService) {
			return h(ctx, req)
		}
		start := time.Now()
		resp, err := h(ctx, req)
		attrs := []any{"method", info.FullMethod, "code", status.Code(err).String(), "took", time.Since(start)}
		if p, ok := peer.FromContext(ctx); ok {
			attrs = append(attrs, "peer", p.Addr.String())
		}
		log.Debug("rpc", attrs...)
		return resp, err
	}
}

// boundUnary bounds every error answer (package bounded): whatever a request
// holds, its error fits in a few KiB of trailers.
func boundUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	return resp, bounded.Error(err)
}

// recoverUnary turns a panic in a handler into Internal, logging the stack.
func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				resp, err = nil, status.Errorf(codes.Internal, "internal error in %s", info.FullMethod)
			}
		}()
		return h(ctx, req)
	}
}

// deadlineUnary gives requests without a deadline the default one.
func deadlineUnary(d time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		return h(ctx, req)
	}
}

// TelemetryConfig switches on traces and metrics (package telemetry).
type TelemetryConfig = telemetry.Config

// TLSConfig is the daemon's TLS (package security).
type TLSConfig = security.TLS

// AuthConfig is the daemon's bearer-token authentication (package security).
type AuthConfig = security.Auth
