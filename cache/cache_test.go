package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// failAfter bounds how long a test waits for something that should happen at once; it
// only turns a hang into a failure and never measures speed.
const failAfter = 10 * time.Second

func newCache[V any](t testing.TB, cfg Config, cost func(V) int64) *Cache[V] {
	t.Helper()
	c, err := New(cfg, cost)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(c.Close)
	return c
}

// joins makes c report each caller that joined or started a flight on the returned
// channel.
func joins[V any](c *Cache[V]) <-chan struct{} {
	ch := make(chan struct{}, 100)
	c.onFlightJoin = func() { ch <- struct{}{} }
	return ch
}

func awaitJoins(t *testing.T, ch <-chan struct{}, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-ch:
		case <-time.After(failAfter):
			t.Fatalf("only %d of %d callers joined the flight", i, n)
		}
	}
}

type result[V any] struct {
	v   V
	hit bool
	err error
}

// goGet runs c.Get in a goroutine and returns the channel its result arrives on.
func goGet[V any](ctx context.Context, c *Cache[V], key string, compute func(context.Context) (V, error)) <-chan result[V] {
	ch := make(chan result[V], 1)
	go func() {
		v, hit, err := c.Get(ctx, key, compute)
		ch <- result[V]{v, hit, err}
	}()
	return ch
}

func await[V any](t *testing.T, ch <-chan result[V]) result[V] {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(failAfter):
		t.Fatal("Get did not return")
		return result[V]{}
	}
}

// counting returns a compute function that returns v and counts its calls.
func counting[V any](v V) (func(context.Context) (V, error), *atomic.Int64) {
	var n atomic.Int64
	return func(context.Context) (V, error) {
		n.Add(1)
		return v, nil
	}, &n
}

func TestGetHitAfterMiss(t *testing.T) {
	c := newCache[string](t, Config{MaxCost: 100}, nil)
	compute, calls := counting("value")
	ctx := t.Context()

	v, hit, err := c.Get(ctx, "k", compute)
	if v != "value" || hit || err != nil {
		t.Fatalf("first Get = %q, hit %v, %v; want \"value\", miss, nil", v, hit, err)
	}
	c.wait()
	for i := range 3 {
		v, hit, err = c.Get(ctx, "k", compute)
		if v != "value" || !hit || err != nil {
			t.Fatalf("Get #%d after wait = %q, hit %v, %v; want \"value\", hit, nil", i+2, v, hit, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("compute called %d times, want 1", n)
	}
	want := Stats{Hits: 3, Misses: 1, Computes: 1, Cost: 1, Items: 1}
	if got := c.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	if got := c.Stats().HitRatio(); got != 0.75 {
		t.Errorf("HitRatio() = %v, want 0.75", got)
	}
}

func TestGetDistinctKeys(t *testing.T) {
	c := newCache[string](t, Config{MaxCost: 100}, nil)
	ctx := t.Context()
	for _, k := range []string{"a", "b"} {
		if v, _, _ := c.Get(ctx, k, func(context.Context) (string, error) { return "v" + k, nil }); v != "v"+k {
			t.Errorf("Get(%q) = %q, want %q", k, v, "v"+k)
		}
	}
	c.wait()
	for _, k := range []string{"a", "b"} {
		v, hit, _ := c.Get(ctx, k, func(context.Context) (string, error) { return "recomputed", nil })
		if v != "v"+k || !hit {
			t.Errorf("Get(%q) = %q, hit %v; want %q, hit", k, v, hit, "v"+k)
		}
	}
}

func TestSingleflight(t *testing.T) {
	const n = 16
	c := newCache[int](t, Config{MaxCost: 100}, nil)
	joined := joins(c)
	release := make(chan struct{})
	var calls atomic.Int64
	compute := func(context.Context) (int, error) {
		calls.Add(1)
		<-release
		return 42, nil
	}

	results := make([]<-chan result[int], n)
	for i := range results {
		results[i] = goGet(t.Context(), c, "k", compute)
	}
	awaitJoins(t, joined, n)
	close(release)

	for i, ch := range results {
		if r := await(t, ch); r.v != 42 || r.hit || r.err != nil {
			t.Errorf("caller %d: Get = %d, hit %v, %v; want 42, miss, nil", i, r.v, r.hit, r.err)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("compute called %d times, want 1", got)
	}
	if s := c.Stats(); s.Computes != 1 || s.Shared != n-1 || s.Misses != n || s.Hits != 0 {
		t.Errorf("Stats() = %+v, want Computes 1, Shared %d, Misses %d, Hits 0", s, n-1, n)
	}
}

func TestErrorsAreNotCached(t *testing.T) {
	c := newCache[string](t, Config{MaxCost: 100}, nil)
	ctx := t.Context()
	errBoom := errors.New("boom")

	if _, _, err := c.Get(ctx, "k", func(context.Context) (string, error) { return "", errBoom }); !errors.Is(err, errBoom) {
		t.Fatalf("Get = %v, want %v", err, errBoom)
	}
	c.wait()
	v, hit, err := c.Get(ctx, "k", func(context.Context) (string, error) { return "ok", nil })
	if v != "ok" || hit || err != nil {
		t.Fatalf("Get after error = %q, hit %v, %v; want \"ok\", miss, nil", v, hit, err)
	}
	c.wait()
	if s := c.Stats(); s.Computes != 2 || s.Items != 1 {
		t.Errorf("Stats() = %+v, want Computes 2, Items 1", s)
	}
}

// An error is shared by every caller of the flight that produced it, but not kept.
func TestErrorIsSharedByWaiters(t *testing.T) {
	c := newCache[int](t, Config{MaxCost: 100}, nil)
	joined := joins(c)
	release := make(chan struct{})
	errBoom := errors.New("boom")
	compute := func(context.Context) (int, error) {
		<-release
		return 0, errBoom
	}
	a := goGet(t.Context(), c, "k", compute)
	b := goGet(t.Context(), c, "k", compute)
	awaitJoins(t, joined, 2)
	close(release)
	for _, ch := range []<-chan result[int]{a, b} {
		if r := await(t, ch); !errors.Is(r.err, errBoom) {
			t.Errorf("Get = %v, want %v", r.err, errBoom)
		}
	}
	if s := c.Stats(); s.Computes != 1 || s.Shared != 1 {
		t.Errorf("Stats() = %+v, want Computes 1, Shared 1", s)
	}
}

func TestWaiterCancellation(t *testing.T) {
	c := newCache[int](t, Config{MaxCost: 100}, nil)
	joined := joins(c)
	release := make(chan struct{})
	compute := func(context.Context) (int, error) {
		<-release // ignores its context: the waiter must not depend on it
		return 7, nil
	}

	leader := goGet(t.Context(), c, "k", compute)
	awaitJoins(t, joined, 1)
	ctx, cancel := context.WithCancel(t.Context())
	waiter := goGet(ctx, c, "k", compute)
	awaitJoins(t, joined, 1)
	cancel()
	if r := await(t, waiter); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled waiter: Get = %v, %v; want context.Canceled", r.v, r.err)
	}

	close(release)
	if r := await(t, leader); r.v != 7 || r.err != nil {
		t.Fatalf("leader: Get = %v, %v; want 7, nil", r.v, r.err)
	}
}

func TestCancelledBeforeGet(t *testing.T) {
	c := newCache[int](t, Config{MaxCost: 100}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	compute, calls := counting(1)
	if _, _, err := c.Get(ctx, "k", compute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get = %v, want context.Canceled", err)
	}
	if calls.Load() != 0 {
		t.Errorf("compute called with a cancelled context")
	}
}

// When the caller that started a computation gives up and the computation fails with
// its context error, a waiter whose context is alive computes again.
func TestLeaderCancellationDoesNotFailWaiters(t *testing.T) {
	c := newCache[int](t, Config{MaxCost: 100}, nil)
	joined := joins(c)
	started := make(chan struct{}, 2)
	var calls atomic.Int64
	compute := func(ctx context.Context) (int, error) {
		started <- struct{}{}
		if calls.Add(1) == 1 {
			<-ctx.Done() // the first computation runs until its caller gives up
			return 0, fmt.Errorf("estimating: %w", ctx.Err())
		}
		return 9, nil
	}

	leaderCtx, cancelLeader := context.WithCancel(t.Context())
	leader := goGet(leaderCtx, c, "k", compute)
	awaitJoins(t, joined, 1)
	<-started
	waiter := goGet(t.Context(), c, "k", compute)
	awaitJoins(t, joined, 1)
	cancelLeader()

	if r := await(t, leader); !errors.Is(r.err, context.Canceled) {
		t.Errorf("leader: Get = %v, %v; want context.Canceled", r.v, r.err)
	}
	if r := await(t, waiter); r.v != 9 || r.hit || r.err != nil {
		t.Errorf("waiter: Get = %v, hit %v, %v; want 9, miss, nil", r.v, r.hit, r.err)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("compute called %d times, want 2", got)
	}
	if s := c.Stats(); s.Shared != 0 {
		t.Errorf("Stats().Shared = %d, want 0 (the waiter computed itself)", s.Shared)
	}
}

// A computation that finishes although its starter gave up still serves the waiters and
// is stored.
func TestLeaderCancellationKeepsFinishedValue(t *testing.T) {
	c := newCache[int](t, Config{MaxCost: 100}, nil)
	joined := joins(c)
	release := make(chan struct{})
	compute, calls := counting(5)
	blocking := func(ctx context.Context) (int, error) {
		<-release
		return compute(ctx)
	}

	leaderCtx, cancelLeader := context.WithCancel(t.Context())
	leader := goGet(leaderCtx, c, "k", blocking)
	awaitJoins(t, joined, 1)
	waiter := goGet(t.Context(), c, "k", blocking)
	awaitJoins(t, joined, 1)
	cancelLeader()
	if r := await(t, leader); !errors.Is(r.err, context.Canceled) {
		t.Errorf("leader: Get = %v, %v; want context.Canceled", r.v, r.err)
	}
	close(release)
	if r := await(t, waiter); r.v != 5 || r.err != nil {
		t.Errorf("waiter: Get = %v, %v; want 5, nil", r.v, r.err)
	}
	c.wait()
	if _, hit, _ := c.Get(t.Context(), "k", compute); !hit {
		t.Error("value computed for a cancelled caller was not stored")
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("compute called %d times, want 1", got)
	}
}

// A context error that is not caused by the starting caller's context (an internal
// timeout, say) is an ordinary error: waiters receive it and do not retry.
func TestInternalDeadlineIsNotRetried(t *testing.T) {
	c := newCache[int](t, Config{MaxCost: 100}, nil)
	joined := joins(c)
	release := make(chan struct{})
	var calls atomic.Int64
	compute := func(context.Context) (int, error) {
		calls.Add(1)
		<-release
		return 0, context.DeadlineExceeded
	}
	a := goGet(t.Context(), c, "k", compute)
	b := goGet(t.Context(), c, "k", compute)
	awaitJoins(t, joined, 2)
	close(release)
	for _, ch := range []<-chan result[int]{a, b} {
		if r := await(t, ch); !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("Get = %v, want context.DeadlineExceeded", r.err)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("compute called %d times, want 1", got)
	}
}

func TestDisabled(t *testing.T) {
	c := newCache[string](t, Config{Disabled: true}, nil)
	compute, calls := counting("v")
	for range 3 {
		v, hit, err := c.Get(t.Context(), "k", compute)
		if v != "v" || hit || err != nil {
			t.Fatalf("Get = %q, hit %v, %v; want \"v\", miss, nil", v, hit, err)
		}
		c.wait()
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("compute called %d times, want 3", n)
	}
	want := Stats{Misses: 3, Computes: 3}
	if got := c.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

func TestOversizeValueIsNotStored(t *testing.T) {
	c := newCache[[]byte](t, Config{MaxCost: 10}, func(v []byte) int64 { return int64(len(v)) })
	big := make([]byte, 11)
	for i := range 2 {
		v, hit, err := c.Get(t.Context(), "k", func(context.Context) ([]byte, error) { return big, nil })
		if len(v) != 11 || hit || err != nil {
			t.Fatalf("Get #%d = %d bytes, hit %v, %v; want 11 bytes, miss, nil", i+1, len(v), hit, err)
		}
		c.wait()
	}
	if s := c.Stats(); s.Computes != 2 || s.Drops != 2 || s.Items != 0 || s.Cost != 0 {
		t.Errorf("Stats() = %+v, want Computes 2, Drops 2, Items 0, Cost 0", s)
	}
}

func TestCostInBytes(t *testing.T) {
	c := newCache[[]byte](t, Config{MaxCost: 1000}, func(v []byte) int64 { return int64(len(v)) })
	for i, size := range []int{100, 250, 0} {
		c.Get(t.Context(), strconv.Itoa(i), func(context.Context) ([]byte, error) { return make([]byte, size), nil })
	}
	c.wait()
	// A value of cost 0 counts 1, so that MaxCost always bounds the number of items.
	if s := c.Stats(); s.Cost != 351 || s.Items != 3 {
		t.Errorf("Stats() = %+v, want Cost 351, Items 3", s)
	}
}

// With cost counted in items, MaxCost items fit: ristretto's internal per-item cost must
// not be added (it would leave room for only a few of them).
func TestMaxCostCountsItems(t *testing.T) {
	const n = 200
	c := newCache[int](t, Config{MaxCost: n}, nil)
	for i := range n {
		c.Get(t.Context(), strconv.Itoa(i), func(context.Context) (int, error) { return i, nil })
		c.wait()
	}
	if s := c.Stats(); s.Items != n || s.Cost != n {
		t.Errorf("Stats() = %+v, want Items %d, Cost %d", s, n, n)
	}
	for i := range n {
		v, hit, _ := c.Get(t.Context(), strconv.Itoa(i), func(context.Context) (int, error) { return -1, nil })
		if v != i || !hit {
			t.Fatalf("Get(%d) = %d, hit %v; want %d, hit", i, v, hit, i)
		}
	}
	// Beyond MaxCost, items are evicted or rejected: the bound holds.
	for i := n; i < 2*n; i++ {
		c.Get(t.Context(), strconv.Itoa(i), func(context.Context) (int, error) { return i, nil })
		c.wait()
	}
	if s := c.Stats(); s.Items > n || s.Cost > n {
		t.Errorf("Stats() = %+v, want at most %d items", s, n)
	}
}

func TestTTL(t *testing.T) {
	c := newCache[int](t, Config{MaxCost: 100, TTL: time.Millisecond}, nil)
	compute, calls := counting(1)
	c.Get(t.Context(), "k", compute)
	c.wait()
	time.Sleep(3 * time.Millisecond)
	if _, hit, _ := c.Get(t.Context(), "k", compute); hit {
		t.Error("Get after the TTL = hit, want miss")
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("compute called %d times, want 2", n)
	}

	long := newCache[int](t, Config{MaxCost: 100, TTL: time.Hour}, nil)
	long.Get(t.Context(), "k", compute)
	long.wait()
	if _, hit, _ := long.Get(t.Context(), "k", compute); !hit {
		t.Error("Get within the TTL = miss, want hit")
	}
}

func TestPanicIsRaisedInCallers(t *testing.T) {
	c := newCache[int](t, Config{MaxCost: 100}, nil)
	errBoom := errors.New("boom")
	get := func() (p any) {
		defer func() { p = recover() }()
		c.Get(t.Context(), "k", func(context.Context) (int, error) { panic(errBoom) })
		return nil
	}
	p := get()
	pe, ok := p.(*PanicError)
	if !ok {
		t.Fatalf("Get panicked with %T %v, want *PanicError", p, p)
	}
	if !errors.Is(pe, errBoom) || len(pe.Stack) == 0 {
		t.Errorf("PanicError = %v, want it to wrap %v and carry a stack", pe.Value, errBoom)
	}
	// The key is usable afterwards.
	if v, _, err := c.Get(t.Context(), "k", func(context.Context) (int, error) { return 3, nil }); v != 3 || err != nil {
		t.Errorf("Get after a panic = %v, %v; want 3, nil", v, err)
	}
}

func TestClose(t *testing.T) {
	c, err := New[int](Config{MaxCost: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	compute, calls := counting(1)
	c.Get(t.Context(), "k", compute)
	c.wait()
	c.Get(t.Context(), "k", compute)
	c.Close()
	c.Close() // idempotent
	for range 2 {
		if v, hit, err := c.Get(t.Context(), "k", compute); v != 1 || hit || err != nil {
			t.Errorf("Get after Close = %v, hit %v, %v; want 1, miss, nil", v, hit, err)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("compute called %d times, want 3", n)
	}
	want := Stats{Hits: 1, Misses: 3, Computes: 3, Cost: 1, Items: 1}
	if got := c.Stats(); got != want {
		t.Errorf("Stats() after Close = %+v, want %+v", got, want)
	}
}

// Close may run while Gets and abandoned computations are still storing values.
func TestCloseDuringGets(t *testing.T) {
	c, err := New[int](Config{MaxCost: 50}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range 4 {
		wg.Go(func() {
			<-start
			for i := range 200 {
				key := strconv.Itoa(g*1000 + i%100)
				if _, _, err := c.Get(t.Context(), key, func(context.Context) (int, error) { return i, nil }); err != nil {
					t.Errorf("Get: %v", err)
					return
				}
			}
		})
	}
	close(start)
	c.Close()
	wg.Wait()
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	if _, err := New[int](Config{MaxCost: -1}, nil); err == nil {
		t.Error("New(MaxCost -1) succeeded, want an error")
	}
	if _, err := New[int](Config{}, nil); err == nil {
		t.Error("New(zero Config) succeeded, want an error (MaxCost is required)")
	}
}

// fields returns the Field of every *FieldError in err.
func fields(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		var fe *FieldError
		switch x := err.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		default:
			if errors.As(err, &fe) {
				out = append(out, fe.Field)
			}
		}
	}
	walk(err)
	return out
}

func TestConfigValidate(t *testing.T) {
	tests := map[string]struct {
		cfg  Config
		want []string // fields reported, in order
	}{
		"items":                 {Config{MaxCost: 1000}, nil},
		"all set":               {Config{MaxCost: 64 << 20, NumCounters: 1e6, TTL: time.Minute}, nil},
		"disabled zero":         {Config{Disabled: true}, nil},
		"zero max cost":         {Config{}, []string{"max_cost"}},
		"negative max cost":     {Config{MaxCost: -1}, []string{"max_cost"}},
		"negative num counters": {Config{MaxCost: 1, NumCounters: -1}, []string{"num_counters"}},
		"negative ttl":          {Config{MaxCost: 1, TTL: -time.Second}, []string{"ttl"}},
		"disabled negative":     {Config{Disabled: true, MaxCost: -1}, []string{"max_cost"}},
		"all negative":          {Config{MaxCost: -1, NumCounters: -1, TTL: -1}, []string{"max_cost", "num_counters", "ttl"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := tt.cfg.Validate()
			got := fields(err)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || (err == nil) != (len(tt.want) == 0) {
				t.Fatalf("Validate() = %v; want errors for fields %v", err, tt.want)
			}
			for _, f := range tt.want {
				var fe *FieldError
				if !errors.As(err, &fe) || !containsField(err.Error(), f) {
					t.Errorf("Validate() = %q, want the message to name %q", err, f)
				}
			}
		})
	}
}

func containsField(msg, field string) bool {
	for i := 0; i+len(field) <= len(msg); i++ {
		if msg[i:i+len(field)] == field {
			return true
		}
	}
	return false
}

func TestNumCountersDefault(t *testing.T) {
	tests := map[string]struct {
		cfg         Config
		costInBytes bool
		want        int64
	}{
		"explicit":       {Config{MaxCost: 10, NumCounters: 77}, false, 77},
		"items":          {Config{MaxCost: 10_000}, false, 100_000},
		"few items":      {Config{MaxCost: 10}, false, minCounters},
		"bytes":          {Config{MaxCost: 64 << 20}, true, 10 * (64 << 10)},
		"huge":           {Config{MaxCost: 1 << 40}, false, maxCounters},
		"huge in bytes":  {Config{MaxCost: 1 << 50}, true, maxCounters},
		"small in bytes": {Config{MaxCost: 1 << 20}, true, 10 << 10},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tt.cfg.numCounters(tt.costInBytes); got != tt.want {
				t.Errorf("numCounters(%v) = %d, want %d", tt.costInBytes, got, tt.want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	k := Key([]byte("/stepcost.v1.EstimatorService/Estimate"), []byte{1, 2, 3})
	if len(k) != 64 {
		t.Errorf("len(Key) = %d, want 64", len(k))
	}
	for _, r := range k {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			t.Fatalf("Key = %q, want lower-case hex", k)
		}
	}
	if k2 := Key([]byte("/stepcost.v1.EstimatorService/Estimate"), []byte{1, 2, 3}); k2 != k {
		t.Errorf("Key is not deterministic: %s != %s", k, k2)
	}

	distinct := map[string][][]byte{
		"ab|c":   {[]byte("ab"), []byte("c")},
		"a|bc":   {[]byte("a"), []byte("bc")},
		"abc":    {[]byte("abc")},
		"c|ab":   {[]byte("c"), []byte("ab")},
		"none":   nil,
		"empty":  {{}},
		"empty2": {{}, {}},
		"nil":    {nil, []byte("abc")},
		"zero":   {{0}},
	}
	seen := map[string]string{}
	for name, parts := range distinct {
		k := Key(parts...)
		if other, ok := seen[k]; ok {
			t.Errorf("Key(%s) == Key(%s)", name, other)
		}
		seen[k] = name
	}
	// sha256 of the empty encoding.
	if got, want := Key(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("Key() = %s, want %s", got, want)
	}
}

func FuzzKey(f *testing.F) {
	f.Add([]byte("ab"), []byte("c"), []byte("a"), []byte("bc"))
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 []byte) {
		same := string(a1) == string(b1) && string(a2) == string(b2)
		if (Key(a1, a2) == Key(b1, b2)) != same {
			t.Errorf("Key(%q, %q) == Key(%q, %q) is %v, want %v", a1, a2, b1, b2, !same, same)
		}
	})
}

func BenchmarkGetHit(b *testing.B) {
	const keys = 1024
	c := newCache[*[64]byte](b, Config{MaxCost: keys}, nil)
	names := make([]string, keys)
	for i := range names {
		names[i] = Key([]byte("bench"), []byte(strconv.Itoa(i)))
		c.Get(b.Context(), names[i], func(context.Context) (*[64]byte, error) { return new([64]byte), nil })
	}
	c.wait()
	miss := func(context.Context) (*[64]byte, error) {
		return nil, errors.New("miss")
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := 0
		for pb.Next() {
			if _, hit, _ := c.Get(ctx, names[i%keys], miss); !hit {
				b.Error("miss")
				return
			}
			i++
		}
	})
}

func BenchmarkKey(b *testing.B) {
	method := []byte("/stepcost.v1.PlannerService/Search")
	for _, size := range []int{64, 1024} {
		req := make([]byte, size)
		b.Run(fmt.Sprintf("bytes=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				Key(method, req)
			}
		})
	}
}
