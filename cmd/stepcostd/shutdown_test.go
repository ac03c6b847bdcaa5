package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
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
// coming all the time, on an open connection and on new ones: every call in flight
// at the signal completes successfully; calls made after it are answered, or
// refused cleanly (UNAVAILABLE: the connection refused, or reset during its
// handshake once the listener has closed), never left hanging; the daemon exits 0
// within its grace period.
//
// Which calls were in flight is the daemon's to say, not the test's clock: a small
// call on a new connection made as the daemon closes its listener may or may not
// get through its handshake first, depending on scheduling (on a starved machine
// the connection is reset during the gRPC preface). The daemon runs with
// --log-level=debug, which logs every RPC it handled with its code; a call counts
// as in flight once the daemon handled it. So: every call the daemon logged
// succeeded, and its answer reached the caller (as many OK answers as logged
// calls); every other call was refused with UNAVAILABLE.
func TestShutdownUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon under load and stops it")
	}
	// STEPCOST_SHUTDOWN_DRAIN sets --drain-delay (the Kubernetes manifests use 5s).
	const grace = 10 * time.Second
	drain := envDuration(t, "STEPCOST_SHUTDOWN_DRAIN", 0)
	d := launch(t, nil, "--metrics", "--log-level=debug", "--max-concurrent-searches=1",
		"--shutdown-grace="+grace.String(), "--drain-delay="+drain.String())
	conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := pb.NewStepcostServiceClient(conn)

	// Every small call, its outcome and when it started and ended.
	type small struct {
		rest       bool // GET /v1/catalog; otherwise gRPC EstimateStep
		afterExit  bool // made once the daemon had exited
		start, end time.Time
		err        error  // gRPC
		outcome    string // the gRPC code, the HTTP status, "refused" or "hung"
	}
	var (
		mu    sync.Mutex
		calls []small
	)
	record := func(s small) {
		mu.Lock()
		calls = append(calls, s)
		mu.Unlock()
	}
	estimateStep := func(c pb.StepcostServiceClient, afterExit bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s := small{afterExit: afterExit, start: time.Now()}
		_, s.err = c.EstimateStep(ctx, smallStep())
		s.end, s.outcome = time.Now(), status.Code(s.err).String()
		record(s)
	}
	estimateStep(c, false) // warms the cache
	if calls[0].err != nil {
		t.Fatal(calls[0].err)
	}

	// Small calls all along, from before the searches to after the exit, on the
	// open connection and on new ones: each worker stops after one call made once
	// the daemon has exited.
	exited := func() bool {
		select {
		case <-d.exited:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	started := make(chan struct{}, 4)
	for w := range 4 {
		wg.Go(func() {
			for n, last := 0, false; !last; n++ {
				if n == 1 {
					started <- struct{}{}
				}
				time.Sleep(5 * time.Millisecond)
				last = exited()
				if w%2 == 0 {
					estimateStep(c, last)
					continue
				}
				nc, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					panic(err) // only for a malformed target
				}
				estimateStep(pb.NewStepcostServiceClient(nc), last)
				nc.Close()
			}
		})
	}
	for range 4 { // every worker has made a call
		<-started
	}

	// In flight at the signal: searches, one large, one of them over REST; more
	// than the slot, so that some are still queued. They queue in this order: the
	// REST one (running at the signal; the HTTP server waits for it as it shuts
	// down), then the large one and four more over gRPC, all still running or
	// queued when the gRPC server stops after that and has to wait for them.
	type result struct {
		name string
		err  error
		end  time.Time
	}
	inflight := make(chan result, 16)
	// arrived waits until n searches have reached the daemon: admitted to the slot
	// (perhaps finished already, on a slow runner) or waiting for it.
	re := regexp.MustCompile(`(?m)^stepcost_searches_(?:total\{[^}]*outcome="admitted"|waiting\{)[^}]*\} (\d+)`)
	arrived := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(2 * time.Millisecond) {
			got := 0
			if resp, err := http.Get("http://" + d.httpAddr + "/metrics"); err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				for _, m := range re.FindAllStringSubmatch(string(body), -1) {
					v, _ := strconv.Atoi(m[1])
					got += v
				}
			}
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d searches reached the daemon", got, n)
			}
		}
	}
	call := func(name string, f func(context.Context) error) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := f(ctx)
			inflight <- result{name, err, time.Now()}
		}()
	}
	const searches = 6
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
	arrived(1)
	call("large search", func(ctx context.Context) error {
		_, err := c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: model("llama3-8b"), Cluster: system("dgx-h100", 0),
			Training: &pb.Training{SeqLen: 8192, GlobalBatch: 4096}, MaxGpus: 1024})
		return err
	})
	arrived(2)
	for i := range searches - 2 {
		call(fmt.Sprintf("search %d", i), func(ctx context.Context) error {
			_, err := c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: model("llama3-70b"), Cluster: system("dgx-h100", 0),
				Training: &pb.Training{SeqLen: 8192, GlobalBatch: 512 + 64*int64(i)}, Gpus: 256})
			return err
		})
	}
	arrived(searches) // then the signal, at once

	sent := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// New REST calls after the signal: answered, or refused at the door.
	wg.Go(func() {
		for last := false; !last; time.Sleep(20 * time.Millisecond) {
			last = exited()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			s := small{rest: true, afterExit: last, start: time.Now()}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.httpAddr+"/v1/catalog", nil)
			resp, err := http.DefaultClient.Do(req)
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				s.outcome = "hung"
			case err != nil:
				s.outcome = "refused"
			default:
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				s.outcome = strconv.Itoa(resp.StatusCode)
			}
			cancel()
			s.end = time.Now()
			record(s)
		}
	})

	var exit time.Duration
	select {
	case <-d.exited:
		exit = time.Since(sent)
	case <-time.After(drain + grace + 5*time.Second):
		t.Fatalf("no exit %v after SIGTERM", drain+grace+5*time.Second)
	}
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()

	var last time.Duration
	running := 0 // searches still running or queued at the signal
	for range searches {
		r := <-inflight
		if r.err != nil {
			t.Errorf("%s, sent before SIGTERM: %v", r.name, r.err)
		}
		if r.end.After(sent) {
			running++
		}
		last = max(last, r.end.Sub(sent))
	}
	t.Logf("SIGTERM → exit %v (drain delay %v, grace %v); %d searches were in flight, the last ended %v after the signal",
		exit.Round(time.Millisecond), drain, grace, running, last.Round(time.Millisecond))
	if running == 0 {
		t.Error("no search was in flight at the signal")
	}
	if d.exitErr != nil {
		t.Errorf("exit status: %v\n%s", d.exitErr, d.log())
	}
	if exit > drain+grace {
		t.Errorf("exit %v after SIGTERM, past the drain delay and grace period %v", exit, drain+grace)
	}

	// What the daemon handled, from its log: "gRPC EstimateStep" → calls.
	logged := regexp.MustCompile(`msg=rpc method=/stepcost\.v1\.StepcostService/(\w+) code=(\w+) took=\S+ peer=(\S+)`)
	handled := map[string]int{}
	for _, m := range logged.FindAllStringSubmatch(d.log(), -1) {
		via := "gRPC"
		if m[3] == "in-process" { // the REST gateway
			via = "REST"
		}
		handled[via+" "+m[1]]++
		if m[2] != codes.OK.String() {
			t.Errorf("the daemon handled a %s %s call and answered %s", via, m[1], m[2])
		}
	}
	if handled["gRPC EstimatePlan"] != searches-1 || handled["REST EstimatePlan"] != 1 {
		t.Errorf("the daemon logged %v, want %d gRPC searches and 1 over REST", handled, searches-1)
	}

	// What the callers saw.
	mu.Lock()
	defer mu.Unlock()
	answered := map[string]int{} // calls answered OK, same keys
	grpcAfter, restAfter := map[string]int{}, map[string]int{}
	var slowest time.Duration    // of the calls made after the daemon exited
	refusals := map[string]int{} // how gRPC calls were refused
	for _, s := range calls {
		key, ok := "gRPC EstimateStep", s.outcome == codes.OK.String()
		if s.rest {
			key, ok = "REST ListCatalog", s.outcome == "200"
		}
		if ok {
			answered[key]++
		}
		switch {
		case s.end.Before(sent):
			if !ok {
				t.Errorf("a call before the signal failed: %v %s", s.err, s.outcome)
			}
		case s.rest:
			restAfter[s.outcome]++
			if s.outcome != "200" && s.outcome != "refused" && s.outcome != "503" {
				t.Errorf("a REST call after the signal: %s", s.outcome)
			}
		default:
			grpcAfter[s.outcome]++
			if code := status.Code(s.err); code != codes.OK && code != codes.Unavailable {
				t.Errorf("a call after the signal failed otherwise than refused: %v", s.err)
			}
		}
		if !ok && s.err != nil {
			switch msg := s.err.Error(); {
			case strings.Contains(msg, "connection refused"):
				refusals["connection refused"]++
			case strings.Contains(msg, "reset by peer") || strings.Contains(msg, "broken pipe") || strings.Contains(msg, "EOF"):
				refusals["connection reset or closed"]++ // in the handshake, by the closing listener
			default:
				refusals["other"]++
			}
		}
		if s.afterExit {
			if ok {
				t.Errorf("a call made after the daemon exited was answered")
			}
			slowest = max(slowest, s.end.Sub(s.start))
		}
	}
	t.Logf("calls ending after the signal: gRPC %v (refusals: %v), REST %v; the daemon handled %v, the callers got %v answers; refused after the exit in %v at most",
		grpcAfter, refusals, restAfter, handled, answered, slowest.Round(time.Millisecond))
	// Every call the daemon handled was answered OK (above), and the answer reached
	// its caller: as many answers as logged calls. A call it handled whose answer
	// was lost would make fewer answers; the reverse cannot happen.
	for _, k := range []string{"gRPC EstimateStep", "REST ListCatalog"} {
		if handled[k] != answered[k] {
			t.Errorf("%s: the daemon handled %d calls, the callers got %d answers", k, handled[k], answered[k])
		}
	}
	// The calls it did not handle were refused (UNAVAILABLE above), at once rather
	// than left waiting for their deadline.
	if grpcAfter[codes.Unavailable.String()] == 0 {
		t.Errorf("no call was refused after the signal: %v", grpcAfter)
	}
	if slowest > 2*time.Second || restAfter["hung"] > 0 || grpcAfter[codes.DeadlineExceeded.String()] > 0 {
		t.Errorf("calls after the signal hung: slowest refusal %v, gRPC %v, REST %v", slowest, grpcAfter, restAfter)
	}
	if strings.Contains(d.log(), "grace period over") {
		t.Errorf("calls were cancelled at the end of the grace period:\n%s", d.log())
	}
}
