package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// SIGTERM with searches running and queued, over gRPC and REST, and small calls
// coming all the time: every call in flight at the signal completes successfully;
// calls made after it are answered or refused at once (UNAVAILABLE, connection
// refused), never left hanging; the daemon exits 0 within its grace period.
func TestShutdownUnderLoad(t *testing.T) {
	// Its assertions about which calls race the closing listener still depend on
	// timing on a starved runner (a reset during the connection preface is reported
	// as a failure), so it runs on demand; TestREADMEOverRESTAndGRPC stops the daemon with SIGTERM on
	// every run.
	if testing.Short() || os.Getenv("STEPCOST_SHUTDOWN_TEST") == "" {
		t.Skip("set STEPCOST_SHUTDOWN_TEST=1 to run the daemon under load and stop it")
	}
	// STEPCOST_SHUTDOWN_DRAIN sets --drain-delay (the Kubernetes manifests use 5s).
	const grace = 10 * time.Second
	drain := envDuration(t, "STEPCOST_SHUTDOWN_DRAIN", 0)
	d := launch(t, nil, "--metrics", "--shutdown-grace="+grace.String(), "--drain-delay="+drain.String())
	conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := pb.NewStepcostServiceClient(conn)
	if _, err := c.EstimateStep(context.Background(), smallStep()); err != nil { // warm the cache
		t.Fatal(err)
	}

	// In flight at the signal: searches, one large, one of them over REST; more
	// than the slots, so that some are still queued.
	type result struct {
		name string
		err  error
		end  time.Time
	}
	inflight := make(chan result, 16)
	call := func(name string, f func(context.Context) error) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := f(ctx)
			inflight <- result{name, err, time.Now()}
		}()
	}
	const searches = 6
	call("large search", func(ctx context.Context) error {
		_, err := c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: model("llama3-8b"), Cluster: system("dgx-h100", 0),
			Training: &pb.Training{SeqLen: 8192, GlobalBatch: 4096}, MaxGpus: 1024})
		return err
	})
	for i := range searches - 2 {
		call(fmt.Sprintf("search %d", i), func(ctx context.Context) error {
			_, err := c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: model("llama3-70b"), Cluster: system("dgx-h100", 0),
				Training: &pb.Training{SeqLen: 8192, GlobalBatch: 512 + 64*int64(i)}, Gpus: 256})
			return err
		})
	}
	call("REST search", func(ctx context.Context) error {
		body, _ := protojson.Marshal(&pb.EstimatePlanRequest{Model: model("llama3-70b"), Cluster: system("dgx-h100", 0),
			Training: &pb.Training{SeqLen: 8192, GlobalBatch: 2048}, Gpus: 256})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+d.httpAddr+"/v1/plans:estimate", bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d: %s", resp.StatusCode, out)
		}
		return nil
	})
	// All of them have reached the daemon: running or waiting for a slot.
	re := regexp.MustCompile(`(?m)^stepcost_searches_(?:running|waiting)\{[^}]*\} (\d+)`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := 0
		if resp, err := http.Get("http://" + d.httpAddr + "/metrics"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, m := range re.FindAllStringSubmatch(string(body), -1) {
				v, _ := strconv.Atoi(m[1])
				n += v
			}
		}
		if n >= searches {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d searches reached the daemon", n)
		}
	}

	// Small calls all along, on the open connection and on new ones.
	var (
		mu        sync.Mutex
		after     = map[string]int{} // outcomes of calls made after the signal
		slowest   time.Duration
		firstOdd  error
		signalled atomic.Bool
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				was := signalled.Load()
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				var err error
				if w%2 == 0 {
					_, err = c.EstimateStep(ctx, smallStep())
				} else if nc, cerr := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials())); cerr != nil {
					err = cerr
				} else {
					_, err = pb.NewStepcostServiceClient(nc).EstimateStep(ctx, smallStep())
					nc.Close()
				}
				cancel()
				took := time.Since(start)
				mu.Lock()
				switch {
				case !was && err != nil: // before the signal every call succeeds
					after["error before the signal"]++
					if firstOdd == nil {
						firstOdd = err
					}
				case was:
					slowest = max(slowest, took)
					code := status.Code(err)
					after[code.String()]++
					if code != codes.OK && code != codes.Unavailable && firstOdd == nil {
						firstOdd = err
					}
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)

	signalled.Store(true)
	sent := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// New REST calls after the signal: answered, or refused at the door.
	var restAfter []string
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.httpAddr+"/v1/catalog", nil)
			resp, err := http.DefaultClient.Do(req)
			var outcome string
			if err != nil {
				outcome = "refused"
				if errors.Is(err, context.DeadlineExceeded) {
					outcome = "hung"
				}
			} else {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				outcome = strconv.Itoa(resp.StatusCode)
			}
			cancel()
			mu.Lock()
			restAfter = append(restAfter, outcome)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()

	var exited time.Duration
	select {
	case <-d.exited:
		exited = time.Since(sent)
	case <-time.After(drain + grace + 10*time.Second):
		t.Fatalf("no exit %v after SIGTERM", drain+grace+10*time.Second)
	}
	time.Sleep(200 * time.Millisecond) // calls on the closed ports
	close(stop)
	wg.Wait()

	var last time.Duration
	for range searches {
		r := <-inflight
		if r.err != nil {
			t.Errorf("%s, in flight at SIGTERM: %v", r.name, r.err)
		}
		last = max(last, r.end.Sub(sent))
	}
	mu.Lock()
	defer mu.Unlock()
	rest := map[string]int{}
	for _, o := range restAfter {
		rest[o]++
	}
	t.Logf("SIGTERM → exit %v (drain delay %v, grace %v); the last call in flight ended %v after the signal", exited.Round(time.Millisecond), drain, grace, last.Round(time.Millisecond))
	t.Logf("gRPC calls made after the signal: %v, slowest %v; REST: %v", after, slowest.Round(time.Millisecond), rest)
	if d.exitErr != nil {
		t.Errorf("exit status: %v\n%s", d.exitErr, d.log())
	}
	if exited > drain+grace {
		t.Errorf("exit %v after SIGTERM, past the drain delay and grace period %v", exited, drain+grace)
	}
	if firstOdd != nil {
		t.Errorf("a call failed otherwise than refused: %v (%v)", firstOdd, after)
	}
	if after[codes.Unavailable.String()] == 0 {
		t.Errorf("no call was refused after the signal: %v", after)
	}
	if slowest > 2*time.Second || rest["hung"] > 0 {
		t.Errorf("calls after the signal hung: slowest gRPC %v, REST %v", slowest, rest)
	}
}
