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
// and the CPU it uses after that is a small part of the search's.
func TestDeadlineStopsTheSearch(t *testing.T) {
	_, c := startServing(t)
	// Requests of the same search that differ in the batch, so that none is
	// answered from another's cache entry.
	search := func(i int) *pb.EstimatePlanRequest {
		return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-405b"}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Training: &pb.Training{SeqLen: 8192, GlobalBatch: int64(2048 + 8*i)}, Gpus: 16384}
	}
	// A small call first, so the connection and the daemon's goroutines are up.
	if _, err := c.EstimateStep(context.Background(), stepRequest()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	goroutines := runtime.NumGoroutine()

	// call asks for search i with a deadline and checks that the daemon is idle
	// soon after; done tells whether the search answered within the deadline.
	call := func(i int, deadline time.Duration) (done bool) {
		t.Helper()
		cpu0 := cpuTime(t)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		_, err := c.EstimatePlan(ctx, search(i))
		cancel()
		took := time.Since(start)
		switch status.Code(err) {
		case codes.OK:
			return true
		case codes.DeadlineExceeded:
		default:
			t.Fatalf("deadline %v: got %v, want DeadlineExceeded", deadline, err)
		}
		// Wait for the daemon's goroutines to be back to what they were.
		for runtime.NumGoroutine() > goroutines {
			if time.Since(start) > 2*time.Second {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines 2 s after the deadline, %d before:\n%s", runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(time.Millisecond)
		}
		settled := time.Since(start)
		cpu1 := cpuTime(t)
		time.Sleep(300 * time.Millisecond)
		after := cpuTime(t) - cpu1
		t.Logf("deadline %v: answered in %v, goroutines back after %v, %v CPU until then, %v CPU in the 300 ms after", deadline, took.Round(time.Microsecond), settled.Round(time.Millisecond), (cpu1 - cpu0).Round(time.Millisecond), after.Round(time.Millisecond))
		if took > deadline+500*time.Millisecond {
			t.Errorf("DEADLINE_EXCEEDED after %v", took)
		}
		if settled > deadline+time.Second {
			t.Errorf("the search ran on %v after a %v deadline", settled, deadline)
		}
		if after > 100*time.Millisecond {
			t.Errorf("%v of CPU in the 300 ms after the search ended", after)
		}
		return false
	}
	// 1 ms, as a client asks.
	for i := range 2 {
		if call(i, time.Millisecond) {
			t.Fatal("a 16 384-GPU search answered within 1 ms")
		}
	}
	// Deadlines that fall inside the search: fractions of its time in full.
	start := time.Now()
	resp, err := c.EstimatePlan(context.Background(), search(2))
	if err != nil || len(resp.GetPlans()) == 0 {
		t.Fatalf("%v, %d plans", err, len(resp.GetPlans()))
	}
	full := time.Since(start)
	t.Logf("in full: %v", full.Round(time.Millisecond))
	for i, f := range []float64{0.25, 0.5, 0.75} {
		call(3+i, time.Duration(f*float64(full)))
	}
}
