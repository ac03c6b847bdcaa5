// Package cache memoises computed responses under canonical keys.
//
// A [Cache] sits in front of an expensive, deterministic computation (an estimate or a
// plan search takes 1–100 ms): the first caller of a key computes, concurrent callers of
// the same key wait for that one computation (singleflight), and the result is kept in a
// cost-bounded ristretto cache with an optional TTL. Errors are never cached.
//
// Keys are strings built with [Key] from a deterministic serialisation of the normalised
// request, so equal requests share an entry and different requests never collide by
// construction.
//
// Values are stored and returned as-is, not copied: every caller of a key receives the
// same value, so callers must treat returned values as immutable (for protobuf messages:
// never modify a returned message; clone it first with proto.Clone if it must change).
package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"golang.org/x/sync/singleflight"
)

// Config configures a [Cache]. The zero value is invalid unless Disabled is set: an
// enabled cache needs a positive MaxCost.
type Config struct {
	// MaxCost bounds the total cost of the stored values: bytes if New is given a cost
	// function that returns bytes, otherwise the number of items (each costs 1).
	MaxCost int64
	// NumCounters is the number of ristretto admission counters, ideally 10× the number
	// of items expected when the cache is full. 0 picks a default: 10×MaxCost without a
	// cost function, 10×MaxCost/1 KiB with one, clamped to [1 Ki, 16 Mi].
	NumCounters int64
	// TTL is how long a stored value stays valid; 0 means no expiry.
	TTL time.Duration
	// Disabled makes the cache a pass-through: every Get calls compute, nothing is
	// stored and concurrent calls are not merged.
	Disabled bool
}

// FieldError reports an invalid [Config] field. Field is the snake_case name of the
// field ("max_cost", "num_counters", "ttl"), as flags and config files spell it.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return "cache: " + e.Field + ": " + e.Reason }

// Validate reports every invalid field as a *[FieldError] (joined with errors.Join when
// there are several; use errors.As to get one).
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.MaxCost < 0:
		errs = append(errs, &FieldError{"max_cost", fmt.Sprintf("must not be negative, got %d", c.MaxCost)})
	case c.MaxCost == 0 && !c.Disabled:
		errs = append(errs, &FieldError{"max_cost", "must be positive when the cache is enabled"})
	}
	if c.NumCounters < 0 {
		errs = append(errs, &FieldError{"num_counters", fmt.Sprintf("must not be negative, got %d", c.NumCounters)})
	}
	if c.TTL < 0 {
		errs = append(errs, &FieldError{"ttl", fmt.Sprintf("must not be negative, got %v", c.TTL)})
	}
	return errors.Join(errs...)
}

// Defaults for Config.NumCounters = 0.
const (
	assumedItemBytes = 1 << 10 // expected size of one value when cost is in bytes
	minCounters      = 1 << 10
	maxCounters      = 1 << 24 // about 50 MB of counters
)

func (c Config) numCounters(costInBytes bool) int64 {
	if c.NumCounters > 0 {
		return c.NumCounters
	}
	items := c.MaxCost
	if costInBytes {
		items /= assumedItemBytes
	}
	n := int64(maxCounters)
	if items < maxCounters/10 {
		n = 10 * items
	}
	return max(n, minCounters)
}

// Stats is a snapshot of a cache's counters since New.
type Stats struct {
	Hits   uint64 // Get calls answered from the cache
	Misses uint64 // Get calls not answered from the cache (they computed or waited)
	// Drops counts computed values that were not stored: the set buffer was full, the
	// admission policy rejected them, or their cost exceeded MaxCost.
	Drops    uint64
	Computes uint64 // calls of a compute function
	// Shared counts Get calls that returned the outcome (value or error) of a
	// computation started by another, concurrent Get of the same key.
	Shared uint64
	Cost   int64 // total cost of the stored values
	Items  int64 // number of stored values (approximate)
}

// HitRatio is Hits / (Hits + Misses), or 0 before the first Get.
func (s Stats) HitRatio() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

// Cache memoises computed responses of type V under canonical keys. It is safe for
// concurrent use. Values are returned as-is: callers must not mutate them.
type Cache[V any] struct {
	cfg   Config
	cost  func(V) int64 // nil: every value costs 1
	group singleflight.Group

	// mu guards rc against Close: ristretto panics if Get or Set runs concurrently with
	// its Close, and a computation abandoned by its callers may still finish after Close.
	mu     sync.RWMutex
	rc     *ristretto.Cache[string, V] // nil when disabled
	closed bool
	final  Stats // ristretto's counters at Close (Close clears them)

	misses       atomic.Uint64 // misses counted here (disabled or closed cache)
	computes     atomic.Uint64
	shared       atomic.Uint64
	oversize     atomic.Uint64
	onFlightJoin func() // test hook: called after a caller joined or started a flight
}

// New returns a cache configured by cfg. cost gives the cost of a value in the unit of
// cfg.MaxCost (typically its size in bytes); nil counts every value as 1. A cost below 1
// counts as 1. Close the cache when done.
func New[V any](cfg Config, cost func(V) int64) (*Cache[V], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cache[V]{cfg: cfg, cost: cost}
	if cfg.Disabled {
		return c, nil
	}
	rc, err := ristretto.NewCache(&ristretto.Config[string, V]{
		NumCounters: cfg.numCounters(cost != nil),
		MaxCost:     cfg.MaxCost,
		BufferItems: 64,
		Metrics:     true,
		// Costs are exactly what cost returns (or 1): ristretto would otherwise add its
		// own per-item overhead and a MaxCost in items would hold a fraction of them.
		IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c.rc = rc
	return c, nil
}

// Get returns the cached value for key, or computes it: concurrent callers of the same
// key share one computation, whose value is stored (errors are never cached). hit
// reports whether the value came from the cache.
//
// compute receives the context of the caller that started the computation and runs in
// its own goroutine. If ctx is done before the value is available, Get returns ctx.Err()
// at once; the computation goes on for the other callers, and its value is still stored.
// If the computation fails after the context of the caller that started it is done, the
// other callers whose context is still alive do not receive that error: they compute
// again. A panic in compute is re-raised in every caller that receives its outcome.
//
// A value whose cost exceeds MaxCost is returned but not stored. Storing is asynchronous
// and may be dropped under contention, so a Get right after a computation may compute
// again. compute must not call runtime.Goexit (t.FailNow, for one): its callers would
// then wait until their contexts are done.
//
// A disabled cache calls compute(ctx) in the caller's goroutine on every Get. After
// Close, Get still merges concurrent calls but stores nothing.
func (c *Cache[V]) Get(ctx context.Context, key string, compute func(ctx context.Context) (V, error)) (v V, hit bool, err error) {
	if c.rc == nil {
		c.misses.Add(1)
		c.computes.Add(1)
		v, err = compute(ctx)
		return v, false, err
	}
	if v, ok := c.lookup(key); ok {
		return v, true, nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return v, false, err
		}
		// led is set by the flight goroutine only if this call starts the computation;
		// reading it after receiving the result is ordered by the channel.
		led := false
		ch := c.group.DoChan(key, func() (any, error) {
			led = true
			return c.run(ctx, key, compute), nil
		})
		if c.onFlightJoin != nil {
			c.onFlightJoin()
		}
		select {
		case <-ctx.Done():
			return v, false, ctx.Err()
		case r := <-ch:
			if r.Err != nil { // not expected: the flight function never returns an error
				return v, false, r.Err
			}
			o := r.Val.(*outcome[V])
			if o.panic != nil {
				panic(o.panic)
			}
			if !led {
				if o.err != nil && o.leaderDone {
					// The computation failed because its starter gave up, not on its
					// own account: compute again unless this caller gave up too.
					if err := ctx.Err(); err != nil {
						return v, false, err
					}
					continue
				}
				c.shared.Add(1)
			}
			return o.v, false, o.err
		}
	}
}

// outcome is what one computation hands to every caller that waited for it.
type outcome[V any] struct {
	v          V
	err        error
	leaderDone bool        // err came after the starting caller's context was done
	panic      *PanicError // compute panicked
}

// PanicError is the value Get panics with when compute panicked: the panic is recovered
// in the computation's goroutine (where it would crash the process) and raised again in
// the callers.
type PanicError struct {
	Value any    // the value compute panicked with
	Stack []byte // the stack of the computation's goroutine when it panicked
}

func (p *PanicError) Error() string {
	return fmt.Sprintf("cache: compute panicked: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns the panic value if it is an error.
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// run computes the value of key for one flight and stores it.
func (c *Cache[V]) run(ctx context.Context, key string, compute func(context.Context) (V, error)) (o *outcome[V]) {
	o = new(outcome[V])
	defer func() {
		if r := recover(); r != nil {
			o.panic = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	c.computes.Add(1)
	o.v, o.err = compute(ctx)
	if o.err != nil {
		o.leaderDone = ctx.Err() != nil
		return o
	}
	c.store(key, o.v)
	return o
}

func (c *Cache[V]) lookup(key string) (v V, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		c.misses.Add(1)
		return v, false
	}
	return c.rc.Get(key)
}

func (c *Cache[V]) store(key string, v V) {
	cost := int64(1)
	if c.cost != nil {
		cost = max(c.cost(v), 1)
	}
	if cost > c.cfg.MaxCost {
		c.oversize.Add(1)
		return
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.closed {
		// Never Wait here: a dropped set only costs a later recomputation.
		c.rc.SetWithTTL(key, v, cost, c.cfg.TTL)
	}
}

// wait blocks until all buffered sets are applied. Tests only.
func (c *Cache[V]) wait() {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.rc != nil && !c.closed {
		c.rc.Wait()
	}
}

// Stats returns a snapshot of the cache's counters. After Close, Hits, Drops, Cost and
// Items keep their values at Close.
func (c *Cache[V]) Stats() Stats {
	c.mu.RLock()
	s := c.final
	if c.rc != nil && !c.closed {
		s = c.ristrettoStats()
	}
	c.mu.RUnlock()
	s.Misses += c.misses.Load()
	s.Drops += c.oversize.Load()
	s.Computes = c.computes.Load()
	s.Shared = c.shared.Load()
	return s
}

// ristrettoStats reads the counters kept by ristretto; c.mu must be held.
func (c *Cache[V]) ristrettoStats() Stats {
	m := c.rc.Metrics
	return Stats{
		Hits:   m.Hits(),
		Misses: m.Misses(),
		Drops:  m.SetsDropped() + m.SetsRejected(),
		Cost:   c.rc.MaxCost() - c.rc.RemainingCost(),
		Items:  items(m),
	}
}

// items is the number of stored keys. Evictions are read first: every evicted key was
// added before, so the difference cannot underflow while sets go on.
func items(m *ristretto.Metrics) int64 {
	evicted := m.KeysEvicted()
	return int64(m.KeysAdded() - evicted)
}

// Close releases the cache's goroutines and stored values. It is idempotent and safe to
// call concurrently with Get; later Gets compute every time.
func (c *Cache[V]) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rc == nil || c.closed {
		return
	}
	c.final = c.ristrettoStats()
	c.closed = true
	c.rc.Close()
}
