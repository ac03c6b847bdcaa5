package server

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// ParseFlags reads the daemon's configuration from command-line flags; every flag
// can also be set by an environment variable STEPCOST_<FLAG> (upper case, '-' → '_'),
// which the flag overrides.
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("stepcostd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.GRPCAddr, "grpc-addr", cfg.GRPCAddr, "gRPC listen address")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "HTTP listen address (REST gateway, /healthz, /openapi.json, /metrics)")
	fs.Int64Var(&cfg.CacheMaxBytes, "cache-bytes", cfg.CacheMaxBytes, "response cache size in bytes (0 disables the cache)")
	fs.DurationVar(&cfg.DefaultDeadline, "default-deadline", cfg.DefaultDeadline, "deadline of requests that come without one")
	fs.DurationVar(&cfg.DrainDelay, "drain-delay", cfg.DrainDelay, "after SIGTERM, keep answering (health NOT_SERVING) this long before closing the listeners")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", cfg.ShutdownGrace, "time in-flight requests get to finish after SIGTERM")
	fs.IntVar(&cfg.MaxRequestBytes, "max-request-bytes", cfg.MaxRequestBytes, "largest request accepted")
	fs.IntVar(&cfg.Limits.MaxGPUs, "max-gpus", cfg.Limits.MaxGPUs, "largest job or cluster (GPUs) a request may describe")
	fs.IntVar(&cfg.Limits.MaxRankConfigs, "max-rank-configs", cfg.Limits.MaxRankConfigs, "most configs in one RankConfigs call")
	fs.IntVar(&cfg.Limits.MaxCandidates, "max-candidates", cfg.Limits.MaxCandidates, "most layouts one EstimatePlan may consider (0: no limit)")
	fs.BoolVar(&cfg.Reflection, "reflection", cfg.Reflection, "serve gRPC reflection (for grpcurl)")
	fs.BoolVar(&cfg.Telemetry.Metrics, "metrics", cfg.Telemetry.Metrics, "serve Prometheus metrics at /metrics")
	fs.StringVar(&cfg.Telemetry.Traces, "traces", cfg.Telemetry.Traces, "export OpenTelemetry traces: stdout or otlp (off by default)")
	fs.StringVar(&cfg.Telemetry.OTLPEndpoint, "otlp-endpoint", cfg.Telemetry.OTLPEndpoint, "OTLP gRPC endpoint (host:port) for --traces otlp")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: stepcostd [flags]\n\nServes the stepcost API over gRPC and REST. Flags (or STEPCOST_<FLAG> environment variables):")
		fs.PrintDefaults()
	}
	// Environment first, so that flags override it.
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := "STEPCOST_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %w", name, v, err)
			}
		}
	})
	if envErr != nil {
		return cfg, envErr
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return cfg, cfg.Validate()
}
