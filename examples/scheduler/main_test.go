package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server"
)

// startDaemon runs the daemon in this process on loopback ports, as stepcostd
// does, and stops it at the end of the test.
func startDaemon(t *testing.T) string {
	t.Helper()
	cfg, err := server.ParseFlags([]string{"--warm-up=none", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, cfg, func(g, _ net.Addr) { addr <- g.String() })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	select {
	case a := <-addr:
		return a
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("daemon did not start")
	}
	return ""
}

func runExample(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return o.String(), e.String(), code
}

// TestAgainstDaemon runs the example as a scheduler would against the daemon
// and checks that it admits the job with the plan the daemon ranks first, on
// free GPUs only.
func TestAgainstDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the daemon and searches")
	}
	addr := startDaemon(t)

	// The same question asked directly: the example must print this plan.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	free := exampleFreeGPUs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := pb.NewStepcostServiceClient(conn).EstimatePlan(ctx, &pb.EstimatePlanRequest{
		Model:    &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-70b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 16, FreeGpus: free},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 512},
		MaxGpus:  64,
		TopK:     1,
	})
	if err != nil || len(resp.GetPlans()) == 0 {
		t.Fatalf("EstimatePlan: %v, %d plans", err, len(resp.GetPlans()))
	}
	want := resp.GetPlans()[0]

	stdout, stderr, code := runExample(t, "--server", addr)
	if code != exitAdmitted {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("\n%s", stdout)
	l := want.GetLayout()
	lines := []string{fmt.Sprintf("admit llama3-70b on %d GPUs: tp=%d pp=%d dp=%d cp=%d ep=%d zero=%d micro_batch=%d",
		want.GetGpus(), l.GetTp(), l.GetPp(), l.GetDp(), l.GetCp(), l.GetEp(), l.GetZero(), l.GetMicroBatch())}
	used := 0
	for _, n := range want.GetPlacement().GetNodes() {
		lines = append(lines, fmt.Sprintf("  node %d gpus %s\n", n.GetNode(), ranges(n.GetGpus())))
		used += len(n.GetGpus())
		// Only GPUs the scheduler said were free.
		var freeHere []int32
		for _, f := range free {
			if f.GetNode() == n.GetNode() {
				freeHere = f.GetGpus()
			}
		}
		for _, g := range n.GetGpus() {
			if !containsGPU(freeHere, g) {
				t.Errorf("plan uses node %d GPU %d, which is not free", n.GetNode(), g)
			}
		}
	}
	if used != int(want.GetGpus()) {
		t.Errorf("placement has %d GPUs, plan %d", used, want.GetGpus())
	}
	for _, s := range lines {
		if !strings.Contains(stdout, s) {
			t.Errorf("output lacks %q", s)
		}
	}

	t.Run("free map file", func(t *testing.T) {
		// Two idle nodes and one half busy: at most 20 GPUs to plan on.
		path := filepath.Join(t.TempDir(), "free.json")
		if err := os.WriteFile(path, []byte(`{"9": [0,1,2,3,4,5,6,7], "2": [4,5,6,7], "3": [0,1,2,3,4,5,6,7]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runExample(t, "--server", addr, "--model", "llama3-8b", "--gbs", "256", "--max-gpus", "20", "--free-map", path)
		if code != exitAdmitted {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, line := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(line, "  node ") && !strings.HasPrefix(line, "  node 9 ") &&
				!strings.HasPrefix(line, "  node 3 ") && line != "  node 2 gpus 4-7" {
				t.Errorf("uses GPUs that are not free: %q", line)
			}
		}
	})

	t.Run("rejected with the field", func(t *testing.T) {
		_, stderr, code := runExample(t, "--server", addr, "--model", "llama3-9b")
		if code != exitRejected || !strings.Contains(stderr, "NotFound") || !strings.Contains(stderr, "field model.name:") {
			t.Errorf("unknown model: exit %d: %s", code, stderr)
		}
		_, stderr, code = runExample(t, "--server", addr, "--gbs", "0")
		if code != exitRejected || !strings.Contains(stderr, "field training.global_batch:") {
			t.Errorf("no batch: exit %d: %s", code, stderr)
		}
	})
}

func containsGPU(gpus []int32, g int32) bool {
	for _, x := range gpus {
		if x == g {
			return true
		}
	}
	return false
}

// flaky answers EstimatePlan from a script of codes (OK once the script runs
// out), counting the calls.
type flaky struct {
	pb.UnimplementedStepcostServiceServer
	codes []codes.Code
	retry time.Duration // RetryInfo sent with UNAVAILABLE, if positive
	calls atomic.Int32
}

func (f *flaky) EstimatePlan(context.Context, *pb.EstimatePlanRequest) (*pb.EstimatePlanResponse, error) {
	n := int(f.calls.Add(1)) - 1
	if n >= len(f.codes) || f.codes[n] == codes.OK {
		return &pb.EstimatePlanResponse{Plans: []*pb.Plan{{Gpus: 8}}}, nil
	}
	st := status.New(f.codes[n], "scripted")
	if f.codes[n] == codes.Unavailable && f.retry > 0 {
		st, _ = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(f.retry)})
	}
	return nil, st.Err()
}

func serveFlaky(t *testing.T, f *flaky) pb.StepcostServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterStepcostServiceServer(s, f)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewStepcostServiceClient(conn)
}

// TestRetries checks the error policy: UNAVAILABLE is retried (after the
// daemon's RetryInfo), nothing else is, and the budget bounds the retries.
func TestRetries(t *testing.T) {
	fast := backoff{base: time.Millisecond, max: 10 * time.Millisecond, attempts: 6}
	for _, tc := range []struct {
		name      string
		script    []codes.Code
		retry     time.Duration
		budget    time.Duration
		wantCode  codes.Code
		wantCalls int32
		maxTime   time.Duration
	}{
		{"unavailable then ok", []codes.Code{codes.Unavailable, codes.Unavailable}, 0, 10 * time.Second, codes.OK, 3, 5 * time.Second},
		{"waits for RetryInfo", []codes.Code{codes.Unavailable}, 300 * time.Millisecond, 10 * time.Second, codes.OK, 2, 5 * time.Second},
		{"gives up after attempts", []codes.Code{7: codes.OK, 0: codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable}, 0, 10 * time.Second, codes.Unavailable, 6, 5 * time.Second},
		{"RetryInfo past the budget", []codes.Code{codes.Unavailable}, 5 * time.Second, 500 * time.Millisecond, codes.Unavailable, 1, 400 * time.Millisecond},
		{"invalid argument not retried", []codes.Code{codes.InvalidArgument}, 0, 10 * time.Second, codes.InvalidArgument, 1, 5 * time.Second},
		{"resource exhausted not retried", []codes.Code{codes.ResourceExhausted}, 0, 10 * time.Second, codes.ResourceExhausted, 1, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &flaky{codes: tc.script, retry: tc.retry}
			c := serveFlaky(t, f)
			ctx, cancel := context.WithTimeout(context.Background(), tc.budget)
			defer cancel()
			start := time.Now()
			_, err := plan(ctx, c, &pb.EstimatePlanRequest{}, fast)
			took := time.Since(start)
			if status.Code(err) != tc.wantCode || f.calls.Load() != tc.wantCalls {
				t.Errorf("got %v after %d calls, want %v after %d", err, f.calls.Load(), tc.wantCode, tc.wantCalls)
			}
			if took > tc.maxTime {
				t.Errorf("took %v, want at most %v", took, tc.maxTime)
			}
			if tc.retry > 0 && tc.wantCode == codes.OK && took < tc.retry {
				t.Errorf("retried after %v, before the daemon's RetryInfo %v", took, tc.retry)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		code codes.Code
		want int
	}{
		{codes.InvalidArgument, exitRejected},
		{codes.NotFound, exitRejected},
		{codes.ResourceExhausted, exitRejected},
		{codes.Unavailable, exitWait},
		{codes.DeadlineExceeded, exitWait},
		{codes.Internal, exitWait},
	} {
		if got := reportError(io.Discard, status.Error(tc.code, "x")); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.code, got, tc.want)
		}
	}
}

func TestRanges(t *testing.T) {
	for in, want := range map[string]string{"": "", "3": "3", "0 1 2 3": "0-3", "0 1 2 3 6": "0-3,6", "1 3 4 5 7": "1,3-5,7"} {
		var gpus []int32
		for _, f := range strings.Fields(in) {
			var g int32
			fmt.Sscan(f, &g)
			gpus = append(gpus, g)
		}
		if got := ranges(gpus); got != want {
			t.Errorf("ranges(%v) = %q, want %q", gpus, got, want)
		}
	}
}
