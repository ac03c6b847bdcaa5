package server

import (
	"context"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A scheduler cancelling a RankConfigs batch of 1000 configs mid-way (each config
// its own sequence length, so none is answered from the cache) gets CANCELLED,
// and the batch stops with it: the daemon's goroutines are back to what they were
// within a bounded time, and it spends little CPU after that. A deadline that
// passes mid-batch is DEADLINE_EXCEEDED the same way. goleak (TestMain) checks
// that nothing of either outlives the test.
func TestRankConfigsStopsMidBatch(t *testing.T) {
	_, c := startServing(t)
	batch := func(offset int) *pb.RankConfigsRequest {
		req := &pb.RankConfigsRequest{}
		for i := range 1000 {
			pp := []int32{4, 8, 16}[i%3]
			req.Configs = append(req.Configs, &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-405b"}},
				Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
				Training: &pb.Training{SeqLen: int32(4096 + 128*(offset+i)), GlobalBatch: 4096},
				Layout:   &pb.Layout{Tp: 8, Pp: pp, Dp: 2048 / pp, MicroBatch: 1, Zero: 1, Sp: true}})
		}
		return req
	}
	if _, err := c.EstimateStep(context.Background(), stepRequest()); err != nil {
		t.Fatal(err)
	}
	// The whole batch, for the time it takes: the test tests something only if
	// it is well past the cancel's bound.
	const bound = 300 * time.Millisecond
	start := time.Now()
	if _, err := c.RankConfigs(context.Background(), batch(0)); err != nil {
		t.Fatal(err)
	}
	if whole := time.Since(start); whole < 3*bound/2 {
		t.Fatalf("the whole batch took %v, not well past the %v a stopped one is allowed: the test tests nothing", whole, bound)
	} else {
		t.Logf("the whole batch: %v", whole.Round(time.Millisecond))
	}
	time.Sleep(50 * time.Millisecond)
	goroutines := runtime.NumGoroutine()
	for _, tc := range []struct {
		name string
		want codes.Code
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancelled", codes.Canceled, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}},
		{"deadline", codes.DeadlineExceeded, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}},
	} {
		ctx, cancel := tc.ctx()
		start := time.Now()
		resp, err := c.RankConfigs(ctx, batch(1000*int(tc.want)))
		cancel()
		took := time.Since(start)
		if status.Code(err) != tc.want {
			t.Fatalf("%s: %d results, %v; want %v (the batch took %v)", tc.name, len(resp.GetResults()), err, tc.want, took)
		}
		for runtime.NumGoroutine() > goroutines {
			if time.Since(start) > 2*time.Second {
				buf := make([]byte, 1<<20)
				t.Fatalf("%s: %d goroutines 2 s after, %d before:\n%s", tc.name, runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(time.Millisecond)
		}
		settled := time.Since(start)
		cpu1 := cpuTime(t)
		time.Sleep(300 * time.Millisecond)
		after := cpuTime(t) - cpu1
		t.Logf("%s: answered in %v, goroutines back after %v, %v CPU in the 300 ms after", tc.name, took.Round(time.Millisecond), settled.Round(time.Millisecond), after.Round(time.Millisecond))
		if took > bound || settled > bound {
			t.Errorf("%s: answered after %v, idle after %v: the batch ran on", tc.name, took, settled)
		}
		if after > 150*time.Millisecond {
			t.Errorf("%s: %v CPU in the 300 ms after: the batch ran on", tc.name, after)
		}
	}
}
