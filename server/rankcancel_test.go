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

// A scheduler cancelling a RankConfigs batch of 10 000 configs mid-way gets CANCELLED,
// and the batch stops with it: the daemon's goroutines are back to what they were
// within a bounded time, and it spends little CPU after that. A deadline that
// passes mid-batch is DEADLINE_EXCEEDED the same way. goleak (TestMain) checks
// that nothing of either outlives the test.
func TestRankConfigsStopsMidBatch(t *testing.T) {
	d := startDaemon(t, func(c *Config) { c.Limits.MaxRankConfigs = 10000 })
	t.Cleanup(func() {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
	})
	c := pb.NewStepcostServiceClient(grpcConn(t, d))
	// Each config its own job size on a cluster of its size, so that none is
	// answered from the cache and each places its communication groups anew.
	batch := func(offset, n int) *pb.RankConfigsRequest {
		req := &pb.RankConfigsRequest{}
		for i := range n {
			nodes := int32(2 + (offset+i)%16000)
			req.Configs = append(req.Configs, &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
				Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: nodes},
				Training: &pb.Training{SeqLen: 4096, GlobalBatch: int64(8 * nodes)},
				Layout:   &pb.Layout{Tp: 8, Pp: 1, Dp: nodes, MicroBatch: 1, Zero: 1, Sp: true}})
		}
		return req
	}
	if _, err := c.EstimateStep(context.Background(), stepRequest()); err != nil {
		t.Fatal(err)
	}
	// A fiftieth of a batch, for the time a whole one takes. A stopped batch must end
	// within a tenth of that (and 500 ms is always allowed: under a load average of 12
	// on two cores one stop took 322 ms, 100 ms of which is the test's own wait before
	// it cancels): a loaded machine, or the race detector, stretches the batch and the
	// stop alike, so the bound follows the batch rather than the clock. The test tests
	// something only if a whole batch takes well past 500 ms.
	start := time.Now()
	if _, err := c.RankConfigs(context.Background(), batch(0, 200)); err != nil {
		t.Fatal(err)
	}
	whole := 50 * time.Since(start)
	if whole < time.Second {
		t.Fatalf("a whole batch would take %v, not well past the 500 ms a stopped one is allowed: the test tests nothing", whole)
	}
	bound := max(500*time.Millisecond, whole/10)
	t.Logf("a whole batch: about %v; a stopped one is allowed %v", whole.Round(time.Millisecond), bound.Round(time.Millisecond))
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
		resp, err := c.RankConfigs(ctx, batch(10000*int(tc.want), 10000))
		cancel()
		took := time.Since(start)
		if status.Code(err) != tc.want {
			t.Fatalf("%s: %d results, %v; want %v (the batch took %v)", tc.name, len(resp.GetResults()), err, tc.want, took)
		}
		for runtime.NumGoroutine() > goroutines {
			if wait := max(2*time.Second, 2*bound); time.Since(start) > wait {
				buf := make([]byte, 1<<20)
				t.Fatalf("%s: %d goroutines %v after, %d before:\n%s", tc.name, runtime.NumGoroutine(), wait, goroutines, buf[:runtime.Stack(buf, true)])
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
