package server

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// cpuTime is the CPU time this process (the test and the daemon in it) has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A client deadline of 1 ms on a 16 384-GPU search (about 170 ms and 0.4 s of CPU
// on 2 cores) ends the call with DEADLINE_EXCEEDED at once, and the search with
// it: the daemon's goroutines are back to what they were within a bounded time,
// the CPU it uses after that is a small part of the search's, and nothing was
// cached (the next call computes the search in full).
func TestDeadlineStopsTheSearch(t *testing.T) {
	_, c := startServing(t)
	req := &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-405b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 2048}, Gpus: 16384}
	// A small call first, so the connection and the daemon's goroutines are up.
	if _, err := c.EstimateStep(context.Background(), stepRequest()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	goroutines := runtime.NumGoroutine()

	// 1 ms, as a client asks; then deadlines that fall inside the search.
	for i, deadline := range []time.Duration{time.Millisecond, time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond} {
		cpu0 := cpuTime(t)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		_, err := c.EstimatePlan(ctx, req)
		cancel()
		took := time.Since(start)
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("got %v, want DeadlineExceeded", err)
		}
		// Wait for the daemon's goroutines to be back to what they were.
		var settled time.Duration
		for runtime.NumGoroutine() > goroutines {
			if settled = time.Since(start); settled > 2*time.Second {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines 2 s after the deadline, %d before:\n%s", runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(time.Millisecond)
		}
		settled = time.Since(start)
		cpu1 := cpuTime(t)
		time.Sleep(300 * time.Millisecond)
		after := cpuTime(t) - cpu1
		t.Logf("call %d, deadline %v: answered in %v, goroutines back after %v, %v CPU until then, %v CPU in the 300 ms after", i, deadline, took.Round(time.Microsecond), settled.Round(time.Millisecond), (cpu1 - cpu0).Round(time.Millisecond), after.Round(time.Millisecond))
		if took > deadline+500*time.Millisecond {
			t.Errorf("DEADLINE_EXCEEDED after %v", took)
		}
		if settled > time.Second {
			t.Errorf("the search ran on %v after a 1 ms deadline", settled)
		}
		if after > 100*time.Millisecond {
			t.Errorf("%v of CPU in the 300 ms after the search ended", after)
		}
	}
	// The abandoned searches left nothing in the cache: the call computes it.
	start, cpu0 := time.Now(), cpuTime(t)
	resp, err := c.EstimatePlan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("in full: %v, %v CPU, %d plans, cached %v", time.Since(start).Round(time.Millisecond), (cpuTime(t) - cpu0).Round(time.Millisecond), len(resp.GetPlans()), resp.GetCached())
	if resp.GetCached() || len(resp.GetPlans()) == 0 {
		t.Errorf("after abandoned searches: cached %v, %d plans", resp.GetCached(), len(resp.GetPlans()))
	}
}
