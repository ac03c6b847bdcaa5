// Package Telemetry is the daemon's OpenTelemetry traces and metrics: off by
// default (no-op providers), switched on by configuration, exported on a private
// Prometheus registry.
package telemetry

import (
	"context"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/internal/buildinfo"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Config switches OpenTelemetry on. Everything is off by default.
type Config struct {
	// Metrics serves Prometheus metrics at /metrics (a private registry).
	Metrics bool
	// Traces exports spans: "" (off), "stdout" or "otlp" (gRPC to OTLPEndpoint).
	Traces       string
	OTLPEndpoint string
}

// Validate checks the switches.
func (t Config) Validate() error {
	switch t.Traces {
	case "", "stdout":
	case "otlp":
		if t.OTLPEndpoint == "" {
			return invalid.Field("--otlp-endpoint", "is required with --traces otlp")
		}
	default:
		return invalid.Field("--traces", "must be empty, stdout or otlp (got %q)", t.Traces)
	}
	return nil
}

// Telemetry holds the providers; with everything off they are no-ops.
type Telemetry struct {
	tp       trace.TracerProvider
	shutdown func(context.Context) error
	registry *prometheus.Registry
	meter    metric.Meter
	latency  metric.Float64Histogram
	layouts  metric.Int64Counter
	cacheReg metric.Registration
}

// New builds the providers cfg asks for.
func New(ctx context.Context, cfg Config) (*Telemetry, error) {
	t := &Telemetry{tp: noop.NewTracerProvider(), shutdown: func(context.Context) error { return nil }}
	var shutdowns []func(context.Context) error
	switch cfg.Traces {
	case "stdout":
		exp, err := stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
		if err != nil {
			return nil, err
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		t.tp, shutdowns = tp, append(shutdowns, tp.Shutdown)
	case "otlp":
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(cfg.OTLPEndpoint), otlptracegrpc.WithInsecure())
		if err != nil {
			return nil, err
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		t.tp, shutdowns = tp, append(shutdowns, tp.Shutdown)
	}
	if cfg.Metrics {
		t.registry = prometheus.NewRegistry()
		// The Go runtime and the process (go_*, process_*) and which build serves
		// (stepcost_build_info, 1, labelled).
		bi := buildinfo.Read()
		t.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "stepcost_build_info",
				Help:        "Build of the running stepcostd: module version, commit, Go toolchain and estimator version (always 1).",
				ConstLabels: prometheus.Labels{"version": bi.Version, "commit": bi.Commit, "go_version": bi.Go, "estimator_version": buildinfo.EstimatorVersion}},
				func() float64 { return 1 }))
		exp, err := otelprom.New(otelprom.WithRegisterer(t.registry))
		if err != nil {
			return nil, err
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
		shutdowns = append(shutdowns, mp.Shutdown)
		t.meter = mp.Meter("github.com/stepcost/stepcost/server")
		if t.latency, err = t.meter.Float64Histogram("stepcost.rpc.duration", metric.WithUnit("s"),
			metric.WithDescription("RPC latency by method and code"),
			metric.WithExplicitBucketBoundaries(1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5, 5)); err != nil {
			return nil, err
		}
		if t.layouts, err = t.meter.Int64Counter("stepcost.planner.layouts",
			metric.WithDescription("layouts the planner enumerated, estimated or pruned, by outcome")); err != nil {
			return nil, err
		}
	}
	t.shutdown = func(ctx context.Context) error {
		var errs []error
		if t.cacheReg != nil {
			errs = append(errs, t.cacheReg.Unregister())
		}
		for _, s := range shutdowns {
			errs = append(errs, s(ctx))
		}
		return errors.Join(errs...)
	}
	return t, nil
}

// ObserveCache exports the cache's counters.
func (t *Telemetry) ObserveCache(c *cache.Cache[proto.Message]) {
	if t.meter == nil {
		return
	}
	hits, _ := t.meter.Int64ObservableCounter("stepcost.cache.hits")
	misses, _ := t.meter.Int64ObservableCounter("stepcost.cache.misses")
	drops, _ := t.meter.Int64ObservableCounter("stepcost.cache.drops")
	shared, _ := t.meter.Int64ObservableCounter("stepcost.cache.shared", metric.WithDescription("callers served by a concurrent identical request"))
	reg, err := t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := c.Stats()
		o.ObserveInt64(hits, int64(s.Hits))
		o.ObserveInt64(misses, int64(s.Misses))
		o.ObserveInt64(drops, int64(s.Drops))
		o.ObserveInt64(shared, int64(s.Shared))
		return nil
	}, hits, misses, drops, shared)
	if err == nil {
		t.cacheReg = reg
	}
}

// Unary records latency per method and code, and the planner's search counts.
func (t *Telemetry) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if t.latency == nil {
			return h(ctx, req)
		}
		start := time.Now()
		resp, err := h(ctx, req)
		t.latency.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(
			attribute.String("method", info.FullMethod), attribute.String("code", status.Code(err).String())))
		if r, ok := resp.(*pb.EstimatePlanResponse); ok && !r.GetCached() {
			st := r.GetStats()
			t.layouts.Add(ctx, st.GetEnumerated(), metric.WithAttributes(attribute.String("outcome", "enumerated")))
			t.layouts.Add(ctx, st.GetEvaluated(), metric.WithAttributes(attribute.String("outcome", "estimated")))
			for reason, n := range st.GetPruned() {
				t.layouts.Add(ctx, n, metric.WithAttributes(attribute.String("outcome", "pruned_"+reason)))
			}
		}
		return resp, err
	}
}

// ServerOptions adds the OpenTelemetry stats handler when tracing is on; health
// checks are not traced.
func (t *Telemetry) ServerOptions() []grpc.ServerOption {
	if _, off := t.tp.(noop.TracerProvider); off {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(t.tp),
		otelgrpc.WithFilter(func(i *stats.RPCTagInfo) bool { return i.FullMethodName != "/grpc.health.v1.Health/Check" })))}
}

// Tracer is nil when tracing is off, so that the planner skips its phase hooks.
func (t *Telemetry) Tracer() trace.Tracer {
	if _, off := t.tp.(noop.TracerProvider); off {
		return nil
	}
	return t.tp.Tracer("github.com/stepcost/stepcost/planner")
}

// ClientOptions traces the gateway's calls when tracing is on.
func (t *Telemetry) ClientOptions() []grpc.DialOption {
	if _, off := t.tp.(noop.TracerProvider); off {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(t.tp)))}
}

// WrapHTTP is the HTTP handler as telemetry sees it.
func (t *Telemetry) WrapHTTP(h http.Handler) http.Handler { return h }

// MetricsHandler serves /metrics, or is nil with metrics off.
func (t *Telemetry) MetricsHandler() http.Handler {
	if t.registry == nil {
		return nil
	}
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}

// Shutdown flushes and stops the providers.
func (t *Telemetry) Shutdown(ctx context.Context) error { return t.shutdown(ctx) }

// Meter is the meter of the daemon's own metrics, nil with metrics off.
func (t *Telemetry) Meter() metric.Meter { return t.meter }
