package server

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

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
)

// Admission control.
//
// An uncached EstimatePlan search is the one expensive thing the service does: from a
// few milliseconds to tens of seconds of every core, and up to ~130 MB of live heap
// for the largest search the limits allow (see Limits). Running more searches at once
// finishes none of them sooner, each already spreading over all the cores, but
// multiplies the memory; running only one lets a single large search hold up every
// other for as long as it runs. So searches take a slot first: at most
// --max-concurrent-searches run (default 2), large ones (see largeSearch) in at most
// half of the slots, so that a flood of them never holds up a scheduler's ordinary
// searches; up to --max-queued-searches more wait in arrival order (each at most
// until its deadline), and the rest are refused at once with UNAVAILABLE.
// RankConfigs calls of more than rankBatchGated configs take a large slot: each
// config can cost as much as a small search.
//
// Nothing else waits: cached answers (the slot is taken inside the cache's compute,
// so only a miss takes one), EstimateStep, SimulateCollective, ListCatalog, small
// RankConfigs calls and health are answered whatever the searches are doing.

// defaultConcurrentSearches is two: with one, a large search holds up all the others
// (in the load test, 17 of ~1 950 ordinary searches got through in 20 s); with four
// on the manifests' 2 CPUs, small requests waited for the CPU (p99 2.8 s against
// 0.12 s with two); and each may hold ~130 MB, two of them and the 256 MiB cache
// leaving room in the manifests' 1 GiB.
const defaultConcurrentSearches = 2

// largeSearchGPUs is the size (searchGPUs) from which a search counts as large: a
// range search up to ~720 GPUs on 8-GPU nodes, or a single job of 32 768 GPUs, takes
// a few tenths of a second; a range up to 4 000 GPUs takes seconds.
const largeSearchGPUs = 32768

// largeSearch tells the searches that may run for seconds: wide ranges, huge jobs,
// and the constraints that widen the space beyond the default one.
func largeSearch(pr planner.Request) bool {
	c := pr.Constraints
	return searchGPUs(pr) > largeSearchGPUs || c.UnevenPP || c.TPAcrossNodes || c.MaxMicroBatch > 16
}

// rankBatchGated is the size above which a RankConfigs call takes a search slot. An
// uncached config costs 0.1 ms (a node) to 30 ms (65 536 GPUs, placing its groups),
// so a call of up to 16 stays under half a second, like a small search.
const rankBatchGated = 16

// overloadRetry is the retry delay suggested to refused callers (RetryInfo).
const overloadRetry = time.Second

// admission bounds the searches running and waiting at once. A nil *admission
// admits everything.
type admission struct {
	all   *semaphore.Weighted // every search takes one of these slots
	large *semaphore.Weighted // and a large one first one of these
	slots int64               // --max-concurrent-searches
	queue int64               // --max-queued-searches

	running, runningLarge, waiting atomic.Int64
	// Outcomes since start: admitted at once or after waiting, queued (admitted
	// after waiting), refused because the queue was full, or given up while waiting
	// (deadline or cancellation).
	admitted, queued, refused, expired atomic.Int64
}

// newAdmission returns nil (no control) when slots is 0.
func newAdmission(slots, queue int) *admission {
	if slots <= 0 {
		return nil
	}
	return &admission{all: semaphore.NewWeighted(int64(slots)), large: semaphore.NewWeighted(int64(max(1, slots/2))),
		slots: int64(slots), queue: int64(max(queue, 0))}
}

// acquire takes a slot (a large search one of the large slots too), waiting if they
// are busy and the queue has room, until ctx is done. The returned function gives
// them back.
func (a *admission) acquire(ctx context.Context, large bool) (release func(), err error) {
	if a == nil {
		return func() {}, nil
	}
	sems := []*semaphore.Weighted{a.all}
	if large {
		sems = []*semaphore.Weighted{a.large, a.all}
	}
	held := 0
	giveBack := func() {
		for i := held - 1; i >= 0; i-- {
			sems[i].Release(1)
		}
	}
	// TryAcquire fails while others wait, so a newcomer never overtakes the queue.
	for held < len(sems) && sems[held].TryAcquire(1) {
		held++
	}
	if held < len(sems) {
		if a.waiting.Add(1) > a.queue {
			a.waiting.Add(-1)
			giveBack()
			a.refused.Add(1)
			return nil, &overloadError{slots: a.slots, queue: a.queue}
		}
		start := time.Now()
		for ; held < len(sems); held++ {
			if err := sems[held].Acquire(ctx, 1); err != nil {
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
}

func (e *overloadError) Error() string {
	return fmt.Sprintf("overloaded: all %d search slots are taken (flag --max-concurrent-searches) and all %d places in their queue (flag --max-queued-searches); retry later or on another replica",
		e.slots, e.queue)
}

// GRPCStatus carries a RetryInfo (when to retry) and an ErrorInfo naming the limits.
func (e *overloadError) GRPCStatus() *status.Status {
	st := status.New(codes.Unavailable, e.Error())
	if d, err := st.WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(overloadRetry)},
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

// gatedBatch is whether a RankConfigs call of n configs takes a search slot.
func gatedBatch(n int) bool { return n > rankBatchGated }

// searchGPUs is the number of GPUs a search places, summed over the job sizes it
// tries (the planner's gpuCounts): a fixed-size search counts its size, a range up to
// max_gpus on 8-GPU nodes 8 + 16 + … + max_gpus. The planner places every size for
// every TP degree and keeps those placements while it searches, so this sum, not the
// number of layouts, is what makes a wide range search big: about 150 bytes each
// (a range up to 4 096 GPUs ≈ 1 M ≈ 160 MB, up to 8 192 ≈ 4.2 M ≈ 0.5 GB).
func searchGPUs(pr planner.Request) int {
	if pr.GPUs > 0 {
		return pr.GPUs
	}
	g := 1
	if pr.Cluster != nil {
		g = max(1, pr.Cluster.Spec.GPUsPerNode)
	}
	sum := 0
	for n := max(1, pr.MinGPUs); n <= pr.MaxGPUs; n++ {
		if n%g == 0 || (n < g && g%n == 0) {
			sum += n
		}
	}
	return sum
}

// checkSearchSize refuses a search over --max-search-gpus before it runs.
func (s *Service) checkSearchSize(pr planner.Request) error {
	if s.limits.MaxSearchGPUs <= 0 {
		return nil
	}
	if n := searchGPUs(pr); n > s.limits.MaxSearchGPUs {
		return wire.Limit("max_gpus", fmt.Sprintf("the search would place %d GPUs summed over its job sizes, over the limit of %d (flag --max-search-gpus); narrow min_gpus/max_gpus", n, s.limits.MaxSearchGPUs))
	}
	return nil
}

// validateAdmission checks the admission flags.
func (l Limits) validateAdmission(v *invalid.Collector) {
	if l.MaxConcurrentSearches < 0 {
		v.Add("--max-concurrent-searches", "must be ≥ 0 (got %d)", l.MaxConcurrentSearches)
	}
	if l.MaxQueuedSearches < 0 {
		v.Add("--max-queued-searches", "must be ≥ 0 (got %d)", l.MaxQueuedSearches)
	}
	if l.MaxSearchGPUs < 0 {
		v.Add("--max-search-gpus", "must be ≥ 0 (got %d)", l.MaxSearchGPUs)
	}
}

// observeAdmission exports the searches running (by size) and waiting, and how
// admissions ended, as stepcost_searches_{running,waiting} and
// stepcost_searches_total{outcome}.
func observeAdmission(m metric.Meter, a *admission) {
	if m == nil || a == nil {
		return
	}
	running, _ := m.Int64ObservableGauge("stepcost.searches.running",
		metric.WithDescription("searches (and large RankConfigs calls) holding a slot, by size"))
	waiting, _ := m.Int64ObservableGauge("stepcost.searches.waiting",
		metric.WithDescription("searches waiting for a slot"))
	outcomes, _ := m.Int64ObservableCounter("stepcost.searches",
		metric.WithDescription("admissions by outcome: admitted (at once or after waiting), queued (admitted after waiting), refused (queue full), expired (deadline or cancellation while waiting)"))
	_, _ = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		l := a.runningLarge.Load()
		o.ObserveInt64(running, a.running.Load()-l, metric.WithAttributes(attribute.String("size", "small")))
		o.ObserveInt64(running, l, metric.WithAttributes(attribute.String("size", "large")))
		o.ObserveInt64(waiting, a.waiting.Load())
		for name, v := range map[string]int64{"admitted": a.admitted.Load(), "queued": a.queued.Load(), "refused": a.refused.Load(), "expired": a.expired.Load()} {
			o.ObserveInt64(outcomes, v, metric.WithAttributes(attribute.String("outcome", name)))
		}
		return nil
	}, running, waiting, outcomes)
}
