package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// One slot, one place in the queue: the second search waits (FIFO, until its
// deadline), the third is refused at once with UNAVAILABLE naming both flags and
// saying when to retry; a waiter is admitted as soon as the slot is given back.
func TestAdmissionQueue(t *testing.T) {
	a := New(1, 1, 0)
	ctx := context.Background()
	release, err := a.Acquire(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	admitted := make(chan error, 1)
	go func() {
		r, err := a.Acquire(ctx, false)
		if err == nil {
			r()
		}
		admitted <- err
	}()
	waitFor(t, func() bool { return a.waiting.Load() == 1 })

	start := time.Now()
	_, err = a.Acquire(ctx, false)
	st := status.Convert(err)
	if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "--max-concurrent-searches") ||
		!strings.Contains(st.Message(), "--max-queued-searches") || time.Since(start) > time.Second {
		t.Fatalf("queue full: %v after %v", err, time.Since(start))
	}
	var retry *errdetails.RetryInfo
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			retry = d
		case *errdetails.ErrorInfo:
			info = d
		}
	}
	if retry.GetRetryDelay().AsDuration() != RetryDelay || info.GetReason() != "SEARCHES_AT_CAPACITY" || info.GetMetadata()["max_queued_searches"] != "1" {
		t.Errorf("details: %v %v", retry, info)
	}

	release()
	release() // twice is harmless
	if err := <-admitted; err != nil {
		t.Fatalf("waiter: %v", err)
	}

	// A waiter whose deadline passes gets DEADLINE_EXCEEDED saying what it waited for.
	release, _ = a.Acquire(ctx, false)
	defer release()
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = a.Acquire(dctx, false)
	if st := status.Convert(err); st.Code() != codes.DeadlineExceeded || !strings.Contains(st.Message(), "search slots") {
		t.Errorf("deadline: %v", err)
	}
	if a.refused.Load() != 1 || a.expired.Load() != 1 || a.queued.Load() != 1 || a.running.Load() != 1 || a.waiting.Load() != 0 {
		t.Errorf("counters: refused %d expired %d queued %d running %d waiting %d", a.refused.Load(), a.expired.Load(), a.queued.Load(), a.running.Load(), a.waiting.Load())
	}
	if New(0, 10, 0) != nil {
		t.Error("0 slots should mean no admission control")
	}
}

// Large searches take at most half the slots: with two, a second large search waits
// while an ordinary one runs at once.
func TestLargeSearchesLeaveSlots(t *testing.T) {
	a := New(2, 4, 0)
	ctx := context.Background()
	release, err := a.Acquire(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan func(), 1)
	go func() {
		r, err := a.Acquire(ctx, true)
		if err != nil {
			t.Error(err)
			r = func() {}
		}
		second <- r
	}()
	waitFor(t, func() bool { return a.waiting.Load() == 1 })
	small, err := a.Acquire(ctx, false)
	if err != nil || a.running.Load() != 2 || a.runningLarge.Load() != 1 {
		t.Fatalf("small search beside a large one: %v, %d running", err, a.running.Load())
	}
	small()
	release()
	(<-second)()
	if a.running.Load() != 0 || a.waiting.Load() != 0 || a.queued.Load() != 1 {
		t.Errorf("running %d waiting %d queued %d", a.running.Load(), a.waiting.Load(), a.queued.Load())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
	}
}
