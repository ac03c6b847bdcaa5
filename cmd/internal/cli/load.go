package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/stepcost/stepcost/internal/jsonreq"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// maxLoadConcurrency bounds load's --concurrency (its goroutines and streams).
const maxLoadConcurrency = 1024

// runLoad drives a running daemon with one request at a fixed concurrency for a
// bounded time and count, and reports throughput and latency percentiles.
func loadCommand(fs *pflag.FlagSet) runFunc {
	addr := fs.String("server", "", "the running stepcostd to drive: its gRPC address (host:port), local or remote (with --tls… and --token-file as it requires)")
	sec := remoteSecurityFlags(fs)
	in := fs.String("in", "", "an EstimatePlan request (JSON)")
	conc := fs.Int("concurrency", 8, "requests in flight")
	dur := fs.Duration("duration", 10*time.Second, "stop after this long")
	maxReq := fs.Int("requests", 100000, "stop after this many requests")
	vary := fs.Bool("uncached", false, "make every request distinct (vary the batch), so none hits the cache")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		switch {
		case *addr == "" && *in == "":
			return errors.New("--server and --in: required (a stepcostd's host:port, an EstimatePlan request as JSON)")
		case *addr == "":
			return errors.New("--server: required (a stepcostd's host:port)")
		case *in == "":
			return errors.New("--in: required (an EstimatePlan request as JSON)")
		}
		switch {
		case *conc < 1 || *conc > maxLoadConcurrency:
			return fmt.Errorf("--concurrency: must be between 1 and %d (got %d)", maxLoadConcurrency, *conc)
		case *dur <= 0 || *dur > time.Hour:
			return fmt.Errorf("--duration: must be more than 0 and at most %v (got %v)", time.Hour, *dur)
		case *maxReq < 1:
			return fmt.Errorf("--requests: must be at least 1 (got %d)", *maxReq)
		}
		data, err := readFile(*in)
		if err != nil {
			return fmt.Errorf("--in: %w", err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return emptyInput(*in, "an EstimatePlanRequest as JSON")
		}
		var base pb.EstimatePlanRequest
		if err := jsonreq.Unmarshal(protojson.UnmarshalOptions{}, data, &base); err != nil {
			return fmt.Errorf("--in %s: %w", *in, err)
		}
		svc, done, err := connect(*addr, sec)
		if err != nil {
			return err
		}
		defer done()
		// The duration stops new requests; those in flight finish under their own
		// deadline (bound to the run's, the server would cut them short and they would
		// count as errors, a few microseconds before the client notices the run is over).
		reqCtx := ctx
		ctx, cancel := context.WithTimeout(ctx, *dur)
		defer cancel()
		// The workers read the clock too: the context is cancelled by a timer
		// that may fire after a worker has looked, and a run shorter than that
		// would send a request after its end.
		deadline, _ := ctx.Deadline()
		const perRequest = 30 * time.Second
		var (
			mu        sync.Mutex
			latencies []time.Duration
			errs      int
			firstErr  error
			next      int
		)
		start := time.Now()
		var wg sync.WaitGroup
		for w := 0; w < *conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil && time.Now().Before(deadline) {
					mu.Lock()
					if next >= *maxReq {
						mu.Unlock()
						return
					}
					i := next
					next++
					mu.Unlock()
					req := &base
					if *vary {
						req = protoClone(&base)
						req.Training.GlobalBatch = base.GetTraining().GetGlobalBatch() + int64(i)*int64(max(1, req.GetGpus()))
					}
					t0 := time.Now()
					rctx, rcancel := context.WithTimeout(reqCtx, perRequest)
					_, err := svc.EstimatePlan(rctx, req)
					rcancel()
					d := time.Since(t0)
					mu.Lock()
					if err != nil {
						errs++
						if firstErr == nil {
							firstErr = err
						}
					} else {
						latencies = append(latencies, d)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		if len(latencies) == 0 {
			if errs == 0 {
				if err := reqCtx.Err(); err != nil {
					return err // interrupted
				}
				return fmt.Errorf("--duration %s: over before a request was sent; give it longer", *dur)
			}
			return fmt.Errorf("no successful request (%d errors; the first: %v)", errs, firstErr)
		}
		slices.Sort(latencies)
		pct := func(p float64) time.Duration { return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))] }
		fmt.Fprintf(stdout, "%d requests in %s at concurrency %d: %.0f req/s, %d errors\n", len(latencies), elapsed.Round(time.Millisecond), *conc,
			float64(len(latencies))/elapsed.Seconds(), errs)
		fmt.Fprintf(stdout, "latency p50 %s  p90 %s  p99 %s  max %s\n", pct(0.5), pct(0.9), pct(0.99), latencies[len(latencies)-1])
		if firstErr != nil {
			fmt.Fprintf(stdout, "first error: %v\n", firstErr)
		}
		return nil
	}
}

func protoClone(r *pb.EstimatePlanRequest) *pb.EstimatePlanRequest {
	b, _ := protojson.Marshal(r)
	var out pb.EstimatePlanRequest
	_ = protojson.Unmarshal(b, &out)
	return &out
}
