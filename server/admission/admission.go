// Package admission bounds the expensive requests running and waiting at once:
// slots, each the live heap of a maximal search, large ones in at most half of
// them, a call that holds more heap (a calibration of large clusters) in as many
// slots as its heap weighs, a queue in arrival order until each waiter's
// deadline, and refusals (UNAVAILABLE, with when to retry) beyond it.
package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"golang.org/x/sync/semaphore"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// RetryDelay is the retry delay suggested to refused callers (RetryInfo).
const RetryDelay = time.Second

// Control bounds the searches running and waiting at once. A nil *Control
// admits everything.
type Control struct {
	all   *semaphore.Weighted // every search takes one of these slots
	large *semaphore.Weighted // and a large one first one of these
	slots int64               // --max-concurrent-searches
	queue int64               // --max-queued-searches
	heap  int64               // the live heap a slot stands for (0: not weighed)

	running, runningLarge, waiting atomic.Int64
	// slotsHeld counts slots, not calls: a call weighed by its heap
	// (AcquireHeap) holds several.
	slotsHeld atomic.Int64
	// Outcomes since start: admitted at once or after waiting, queued (admitted
	// after waiting), refused because the queue was full, or given up while waiting
	// (deadline or cancellation).
	admitted, queued, refused, expired atomic.Int64
}

// New returns nil (no control) when slots is 0. slotHeap is the live heap one
// slot stands for (the most a search holds), by which AcquireHeap weighs a call.
func New(slots, queue int, slotHeap int64) *Control {
	if slots <= 0 {
		return nil
	}
	return &Control{all: semaphore.NewWeighted(int64(slots)), large: semaphore.NewWeighted(int64(max(1, slots/2))),
		slots: int64(slots), queue: int64(max(queue, 0)), heap: max(slotHeap, 0)}
}

// Heap is the live heap of all the slots: the most one call may hold (0: not
// weighed, or no control).
func (a *Control) Heap() int64 {
	if a == nil {
		return 0
	}
	return a.slots * a.heap
}

// Acquire takes a slot (a large search one of the large slots too), waiting if they
// are busy and the queue has room, until ctx is done. The returned function gives
// them back.
func (a *Control) Acquire(ctx context.Context, large bool) (release func(), err error) {
	return a.acquire(ctx, large, 1)
}

// AcquireHeap takes, for a call that holds up to heap bytes of live heap, as
// many slots as that weighs (at least one; a large call one of the large slots
// too), waiting, queued or refused as Acquire. granted is the heap of the slots
// taken (0 when slots are not weighed: one slot). A call that weighs more than
// all the slots is refused (HeapError): the caller says which of its fields asks
// for it.
func (a *Control) AcquireHeap(ctx context.Context, large bool, heap int64) (release func(), granted int64, err error) {
	if a == nil || a.heap == 0 {
		release, err = a.Acquire(ctx, large)
		return release, 0, err
	}
	n := max(1, (heap+a.heap-1)/a.heap)
	if n > a.slots {
		a.refused.Add(1)
		return nil, 0, &HeapError{Heap: heap, Slots: a.slots, SlotHeap: a.heap}
	}
	release, err = a.acquire(ctx, large, n)
	return release, n * a.heap, err
}

// HeapError refuses a call that holds more live heap than all the slots stand
// for: it would fail again unchanged.
type HeapError struct {
	Heap, Slots, SlotHeap int64
}

func (e *HeapError) Error() string {
	return fmt.Sprintf("it holds about %d MiB of live heap, more than the %d MiB of all %d search slots (%d MiB each; flag --max-concurrent-searches)",
		mib(e.Heap), mib(e.Slots*e.SlotHeap), e.Slots, mib(e.SlotHeap))
}

func mib(b int64) int64 { return (b + 1<<20 - 1) >> 20 }

// acquire takes n slots (a large call one large slot too).
func (a *Control) acquire(ctx context.Context, large bool, n int64) (release func(), err error) {
	if a == nil {
		return func() {}, nil
	}
	sems := []*semaphore.Weighted{a.all}
	weights := []int64{n}
	if large {
		sems = []*semaphore.Weighted{a.large, a.all}
		weights = []int64{1, n}
	}
	held := 0
	giveBack := func() {
		for i := held - 1; i >= 0; i-- {
			sems[i].Release(weights[i])
		}
	}
	// TryAcquire fails while others wait, so a newcomer never overtakes the queue.
	for held < len(sems) && sems[held].TryAcquire(weights[held]) {
		held++
	}
	if held < len(sems) {
		if a.waiting.Add(1) > a.queue {
			a.waiting.Add(-1)
			giveBack()
			a.refused.Add(1)
			return nil, &overloadError{slots: a.slots, queue: a.queue, need: n}
		}
		start := time.Now()
		for ; held < len(sems); held++ {
			if err := sems[held].Acquire(ctx, weights[held]); err != nil {
				a.waiting.Add(-1)
				giveBack()
				a.expired.Add(1)
				return nil, &waitError{waited: time.Since(start), slots: a.slots, err: err}
			}
		}
		a.waiting.Add(-1)
		a.queued.Add(1)
	}
	a.admitted.Add(1)
	a.running.Add(1)
	a.slotsHeld.Add(n)
	if large {
		a.runningLarge.Add(1)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if large {
				a.runningLarge.Add(-1)
			}
			a.running.Add(-1)
			a.slotsHeld.Add(-n)
			giveBack()
		})
	}, nil
}

// overloadError refuses work because every slot is busy and the queue is full. It is
// UNAVAILABLE rather than RESOURCE_EXHAUSTED: the request itself is fine and will
// succeed if retried a little later or on another replica (the standard retry
// policies of gRPC clients and proxies retry UNAVAILABLE), whereas the service's
// RESOURCE_EXHAUSTED means a request over a limit, which fails again unchanged.
type overloadError struct {
	slots, queue int64
	need         int64 // the slots the call weighs
}

func (e *overloadError) Error() string {
	taken := fmt.Sprintf("all %d search slots are taken", e.slots)
	if e.need > 1 {
		taken = fmt.Sprintf("the call weighs %d of the %d search slots, which are not free", e.need, e.slots)
	}
	return fmt.Sprintf("overloaded: %s (flag --max-concurrent-searches) and all %d places in their queue (flag --max-queued-searches); retry later or on another replica",
		taken, e.queue)
}

// GRPCStatus carries a RetryInfo (when to retry) and an ErrorInfo naming the limits.
func (e *overloadError) GRPCStatus() *status.Status {
	st := status.New(codes.Unavailable, e.Error())
	if d, err := st.WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(RetryDelay)},
		&errdetails.ErrorInfo{Reason: "SEARCHES_AT_CAPACITY", Domain: "stepcost", Metadata: map[string]string{
			"max_concurrent_searches": fmt.Sprint(e.slots), "max_queued_searches": fmt.Sprint(e.queue)}},
	); err == nil {
		st = d
	}
	return st
}

// waitError is a request whose deadline passed (or that was cancelled) while it
// waited for a slot: DEADLINE_EXCEEDED or CANCELLED, saying what it waited for.
type waitError struct {
	waited time.Duration
	slots  int64
	err    error
}

func (e *waitError) Error() string {
	return fmt.Sprintf("waited %v for one of the %d search slots (flag --max-concurrent-searches): %v", e.waited.Round(time.Millisecond), e.slots, e.err)
}

func (e *waitError) Unwrap() error { return e.err }

func (e *waitError) GRPCStatus() *status.Status {
	code := codes.DeadlineExceeded
	if errors.Is(e.err, context.Canceled) {
		code = codes.Canceled
	}
	return status.New(code, e.Error())
}

// Waiting is how many requests wait for a slot.
func (a *Control) Waiting() int64 {
	if a == nil {
		return 0
	}
	return a.waiting.Load()
}

// Running is how many requests hold a slot.
func (a *Control) Running() int64 {
	if a == nil {
		return 0
	}
	return a.running.Load()
}

// SlotsHeld is how many slots the running requests hold: more than Running
// when a calibration holds the several its heap weighs.
func (a *Control) SlotsHeld() int64 {
	if a == nil {
		return 0
	}
	return a.slotsHeld.Load()
}

// Observe exports the searches running (by size) and waiting, the slots they
// hold, and how admissions ended, as stepcost_searches_{running,waiting},
// stepcost_search_slots_held and stepcost_searches_total{outcome}.
func Observe(m metric.Meter, a *Control) {
	if m == nil || a == nil {
		return
	}
	running, _ := m.Int64ObservableGauge("stepcost.searches.running",
		metric.WithDescription("searches (and large RankConfigs calls) holding a slot, by size"))
	waiting, _ := m.Int64ObservableGauge("stepcost.searches.waiting",
		metric.WithDescription("searches waiting for a slot"))
	held, _ := m.Int64ObservableGauge("stepcost.search_slots.held",
		metric.WithDescription("search slots held (of --max-concurrent-searches): a calibration holds as many as the live heap it needs weighs"))
	outcomes, _ := m.Int64ObservableCounter("stepcost.searches",
		metric.WithDescription("admissions by outcome: admitted (at once or after waiting), queued (admitted after waiting), refused (queue full), expired (deadline or cancellation while waiting)"))
	_, _ = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		l := a.runningLarge.Load()
		o.ObserveInt64(running, a.running.Load()-l, metric.WithAttributes(attribute.String("size", "small")))
		o.ObserveInt64(running, l, metric.WithAttributes(attribute.String("size", "large")))
		o.ObserveInt64(waiting, a.waiting.Load())
		o.ObserveInt64(held, a.slotsHeld.Load())
		for name, v := range map[string]int64{"admitted": a.admitted.Load(), "queued": a.queued.Load(), "refused": a.refused.Load(), "expired": a.expired.Load()} {
			o.ObserveInt64(outcomes, v, metric.WithAttributes(attribute.String("outcome", name)))
		}
		return nil
	}, running, waiting, held, outcomes)
}
