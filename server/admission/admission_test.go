package admission

import (
	"context"
	"errors"
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

// A call that holds more heap takes as many slots as it weighs (at least one),
// and is granted their heap: a 200 MiB calibration takes both slots of 130 MiB,
// a search then finds none free and waits in the queue until they are given
// back; a call over all the slots' heap is refused at once (HeapError), the
// slots untouched.
func TestHeapWeighsSlots(t *testing.T) {
	const slot = 130 << 20
	a := New(2, 1, slot)
	ctx := context.Background()
	if a.Heap() != 2*slot {
		t.Fatalf("heap of two slots: %d", a.Heap())
	}
	release, granted, err := a.AcquireHeap(ctx, true, 200<<20)
	if err != nil || granted != 2*slot {
		t.Fatalf("200 MiB: granted %d, %v; want both slots", granted, err)
	}
	// One call, two slots: the gauges say both (running alone said one of two
	// slots busy while a search was refused as overloaded).
	if a.Running() != 1 || a.SlotsHeld() != 2 {
		t.Errorf("a call holding both slots: running %d, slots held %d; want 1 and 2", a.Running(), a.SlotsHeld())
	}
	admitted := make(chan func(), 1)
	go func() {
		r, err := a.Acquire(ctx, false)
		if err != nil {
			t.Error(err)
			r = func() {}
		}
		admitted <- r
	}()
	waitFor(t, func() bool { return a.waiting.Load() == 1 })
	if _, err := a.Acquire(ctx, false); status.Code(err) != codes.Unavailable {
		t.Errorf("a search while a calibration holds both slots and one waits: %v; want UNAVAILABLE", err)
	}
	release()
	(<-admitted)()
	r, granted, err := a.AcquireHeap(ctx, true, 1<<20)
	if err != nil || granted != slot {
		t.Fatalf("1 MiB: granted %d, %v; want one slot", granted, err)
	}
	r()
	_, _, err = a.AcquireHeap(ctx, true, 2*slot+1)
	var he *HeapError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "260 MiB of all 2 search slots") {
		t.Errorf("over all the slots: %v", err)
	}
	if a.running.Load() != 0 || a.waiting.Load() != 0 || a.SlotsHeld() != 0 {
		t.Errorf("running %d waiting %d slots held %d", a.running.Load(), a.waiting.Load(), a.SlotsHeld())
	}
	// Not weighed (no heap per slot): one slot, no heap granted.
	b := New(1, 0, 0)
	r, granted, err = b.AcquireHeap(ctx, true, 1<<30)
	if err != nil || granted != 0 || b.running.Load() != 1 {
		t.Errorf("unweighed: granted %d, %v", granted, err)
	} else {
		r()
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
