package server

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/stepcost/stepcost/server/security"
)

// ParseFlags reads the daemon's configuration from command-line flags; every flag
// can also be set by an environment variable STEPCOST_<FLAG> (upper case, '-' → '_'),
// which the flag overrides.
// ErrVersion is ParseFlags' answer to --version: print Version and exit 0.
var ErrVersion = errors.New("version requested")

func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("stepcostd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.Bool("version", false, "print the version (build, commit, estimator) and exit")
	fs.StringVar(&cfg.GRPCAddr, "grpc-addr", cfg.GRPCAddr, "gRPC listen address")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "HTTP listen address (REST gateway, /healthz, /openapi.json, /metrics)")
	fs.StringVar(&cfg.HealthAddr, "health-addr", cfg.HealthAddr, "listen address of a plain-HTTP port serving GET /healthz only, without TLS or token, for probes (empty: none)")
	fs.Int64Var(&cfg.CacheMaxBytes, "cache-bytes", cfg.CacheMaxBytes, "response cache size in bytes (0 disables the cache)")
	fs.Int64Var(&cfg.MemoryLimit, "memory-limit", cfg.MemoryLimit, "soft memory limit of the Go runtime in bytes (0: the memory budget, --cache-bytes + --max-concurrent-searches × 130 MiB + 24 MiB; -1: none); GOMEMLIMIT wins when lower")
	fs.DurationVar(&cfg.DefaultDeadline, "default-deadline", cfg.DefaultDeadline, "deadline of requests that come without one")
	fs.DurationVar(&cfg.DrainDelay, "drain-delay", cfg.DrainDelay, "after SIGTERM, keep answering (health NOT_SERVING) this long before closing the listeners")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", cfg.ShutdownGrace, "time in-flight requests get to finish after SIGTERM")
	fs.IntVar(&cfg.MaxRequestBytes, "max-request-bytes", cfg.MaxRequestBytes, "largest request accepted")
	fs.DurationVar(&cfg.Conns.ReadHeaderTimeout, "read-header-timeout", cfg.Conns.ReadHeaderTimeout, "time an HTTP request's headers, or a gRPC connection's TLS handshake, may take to arrive")
	fs.DurationVar(&cfg.Conns.ReadTimeout, "read-timeout", cfg.Conns.ReadTimeout, "time a whole HTTP request, body included, may take to arrive (a gRPC request's message: the call's deadline)")
	fs.DurationVar(&cfg.Conns.WriteTimeout, "write-timeout", cfg.Conns.WriteTimeout, "time from an HTTP request's headers to the end of its answer (at least --default-deadline)")
	fs.DurationVar(&cfg.Conns.IdleTimeout, "idle-timeout", cfg.Conns.IdleTimeout, "close a connection (HTTP keep-alive, HTTP/2, gRPC) after this long without a request")
	fs.IntVar(&cfg.Conns.MaxConnections, "max-connections", cfg.Conns.MaxConnections, "open connections per port (gRPC, HTTP, probes); more are closed as they are accepted (0: no limit)")
	fs.IntVar(&cfg.Conns.MaxStreams, "max-streams", cfg.Conns.MaxStreams, "calls at once on one HTTP/2 connection (gRPC, REST over HTTP/2)")
	fs.IntVar(&cfg.Limits.MaxGPUs, "max-gpus", cfg.Limits.MaxGPUs, "largest job or cluster (GPUs) a request may describe")
	fs.IntVar(&cfg.Limits.MaxRankConfigs, "max-rank-configs", cfg.Limits.MaxRankConfigs, "most configs in one RankConfigs call")
	fs.IntVar(&cfg.Limits.MaxCandidates, "max-candidates", cfg.Limits.MaxCandidates, "most layouts one EstimatePlan may consider (0: no limit)")
	fs.IntVar(&cfg.Limits.MaxSearchGPUs, "max-search-gpus", cfg.Limits.MaxSearchGPUs, "most GPUs one EstimatePlan may place, summed over the job sizes it tries (0: no limit)")
	fs.IntVar(&cfg.Limits.MaxAnswerGPUs, "max-answer-gpus", cfg.Limits.MaxAnswerGPUs, "most GPUs one EstimatePlan answer may list in its plans' placements: top_k × the largest job size (0: no limit)")
	fs.IntVar(&cfg.Limits.MaxConcurrentSearches, "max-concurrent-searches", cfg.Limits.MaxConcurrentSearches, "uncached searches (and RankConfigs calls of more than 16 configs) running at once, large ones in at most half (0: no limit)")
	fs.IntVar(&cfg.Limits.MaxQueuedSearches, "max-queued-searches", cfg.Limits.MaxQueuedSearches, "searches that may wait for a slot, each until its deadline; more are refused with UNAVAILABLE")
	warm := fs.String("warm-up", "default", "clusters to search at start-up before reporting SERVING, as system:gpus,… (default: the NVIDIA reference systems at 1024 GPUs, or the most whole nodes within --max-gpus when it is lower; none: skip)")
	fs.BoolVar(&cfg.Reflection, "reflection", cfg.Reflection, "serve gRPC reflection (for grpcurl; it needs the token when authentication is on)")
	fs.BoolVar(&cfg.Telemetry.Metrics, "metrics", cfg.Telemetry.Metrics, "serve Prometheus metrics at /metrics (it needs the token when authentication is on)")
	fs.StringVar(&cfg.Telemetry.Traces, "traces", cfg.Telemetry.Traces, "export OpenTelemetry traces: stdout or otlp (off by default)")
	fs.StringVar(&cfg.Telemetry.OTLPEndpoint, "otlp-endpoint", cfg.Telemetry.OTLPEndpoint, "OTLP gRPC endpoint (host:port) for --traces otlp")
	fs.StringVar(&cfg.TLS.CertFile, "tls-cert", cfg.TLS.CertFile, "server certificate (PEM, leaf then intermediates): serve gRPC and HTTP over TLS (1.2 or later); needs --tls-key")
	fs.StringVar(&cfg.TLS.KeyFile, "tls-key", cfg.TLS.KeyFile, "private key (PEM) of --tls-cert")
	fs.StringVar(&cfg.TLS.ClientCAFile, "tls-client-ca", cfg.TLS.ClientCAFile, "CA certificates (PEM): require a client certificate signed by one of them on both listeners (mutual TLS)")
	fs.Var(logLevel{&cfg.LogLevel}, "log-level", "log level: debug (also logs every API call: method, code, duration, caller), info, warn or error")
	fs.StringVar(&cfg.Auth.TokenFile, "auth-token-file", cfg.Auth.TokenFile, "require 'authorization: Bearer <token>' on every RPC but health, and on /metrics: file of the accepted tokens, one a line, # comments")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: stepcostd [flags]\n\nServes the stepcost API over gRPC and REST. Flags (or STEPCOST_<FLAG> environment variables, but for --version):")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nBearer tokens can also be given, comma separated, in "+security.TokensEnv+" (never on the command line,\nwhich other users of the host can see); with it or --auth-token-file, authentication is on.")
	}
	// Environment first, so that flags override it. --version is an action, not a
	// setting: STEPCOST_VERSION, which a deployment may well set to record what it
	// runs, would make every start print the version and exit, or fail.
	var envErr error
	envFlags := map[string]string{} // variable → flag
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "version" {
			return
		}
		name := envName(f.Name)
		envFlags[name] = f.Name
		if v, ok := os.LookupEnv(name); ok && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q (--%s): %s", name, v, f.Name, takes(f.Value, err))
			}
		}
	})
	if envErr != nil {
		return cfg, envErr
	}
	nearFlags(envFlags, stderr)
	if v, ok := os.LookupEnv(security.TokensEnv); ok {
		cfg.Auth.Tokens = strings.Split(v, ",") // set but empty still turns authentication on, and fails
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if *version {
		return cfg, ErrVersion
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	targets, err := ParseWarmUp(*warm)
	if err != nil {
		return cfg, err
	}
	if strings.TrimSpace(*warm) == "default" {
		targets = fitWarmUp(targets, cfg.Limits.MaxGPUs)
	}
	cfg.WarmUp = targets
	return cfg, cfg.Validate()
}

// logLevel is --log-level: slog's level names, and a refusal that lists them
// (slog's own said `slog: level string "loud": unknown name`, which names none).
type logLevel struct{ l *slog.Level }

func (v logLevel) String() string {
	if v.l == nil {
		return "" // the flag package's zero value, so that the help says the default
	}
	return v.l.String()
}

func (v logLevel) Set(s string) error {
	if err := v.l.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("must be debug, info, warn or error (got %q)", s)
	}
	return nil
}

// envName is the environment variable of flag name: STEPCOST_<NAME>.
func envName(flag string) string {
	return "STEPCOST_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// takes says what a flag's value must be, for a variable whose value did not
// parse (the flag package says only "parse error").
func takes(v flag.Value, err error) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return err.Error()
	}
	switch g.Get().(type) {
	case int, int64, uint, uint64:
		return "must be an integer"
	case bool:
		return "must be true or false"
	case time.Duration:
		return "must be a duration such as 5s or 1m30s"
	}
	return err.Error()
}

// nearFlags names on stderr each STEPCOST_ variable of the environment that sets
// no flag but is one or two letters from one that does (STEPCOST_CACHE_BYTE): a
// misspelt setting, otherwise ignored without a word. Variables further from
// every flag's are left alone: a deployment may keep its own under the prefix
// (STEPCOST_VERSION; the command line's STEPCOST_TOKEN).
func nearFlags(envFlags map[string]string, stderr io.Writer) {
	var names []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := envFlags[name]; !ok && strings.HasPrefix(name, "STEPCOST_") && name != security.TokensEnv {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		best, dist := "", 3
		for env := range envFlags {
			if d := editDistance(name, env); d < dist || d == dist && env < best {
				best, dist = env, d
			}
		}
		if best != "" {
			fmt.Fprintf(stderr, "stepcostd: %s sets no flag (did you mean %s, --%s?); ignored\n", name, best, envFlags[best])
		}
	}
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev = cur
	}
	return prev[len(b)]
}
