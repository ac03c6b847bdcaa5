package step

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stepcost/stepcost/estimator/collective"
)

// TestPlaceOnceBuildsOnce: workers that ask at once for a placement nobody has
// built wait for the one building it and get its pointer, where each built its own
// before (the first search of a process on two cores placed groups of 100 000
// ranks twice); a failed build is no answer kept, and a build that stops without
// one (a panic) leaves its waiters an error, not a hang.
func TestPlaceOnceBuildsOnce(t *testing.T) {
	e := New()
	key := placeKey{from: 1}
	var builds atomic.Int32
	release := make(chan struct{})
	want := &collective.Placement{}
	build := func() (*collective.Placement, error) {
		builds.Add(1)
		<-release
		return want, nil
	}
	const workers = 8
	got := make([]*collective.Placement, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := e.placeOnce(key, build)
			if err != nil {
				t.Error(err)
			}
			got[i] = p
		}()
	}
	time.Sleep(20 * time.Millisecond) // let every worker reach placeOnce
	close(release)
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("%d builds for %d workers asking at once, want 1", n, workers)
	}
	for i, p := range got {
		if p != want {
			t.Errorf("worker %d got %p, want the one placement %p", i, p, want)
		}
	}
	if p, err := e.placeOnce(key, func() (*collective.Placement, error) { panic("kept placement rebuilt") }); p != want || err != nil {
		t.Errorf("kept placement: %p, %v", p, err)
	}

	failed := placeKey{from: 2}
	boom := errors.New("boom")
	if _, err := e.placeOnce(failed, func() (*collective.Placement, error) { return nil, boom }); err != boom {
		t.Errorf("failed build: %v, want its error", err)
	}
	if p, err := e.placeOnce(failed, func() (*collective.Placement, error) { return want, nil }); p != want || err != nil {
		t.Errorf("after a failed build: %p, %v, want a new build's placement", p, err)
	}

	stopped := placeKey{from: 3}
	started := make(chan struct{})
	waiter := make(chan error, 1)
	go func() {
		defer func() { _ = recover() }()
		_, _ = e.placeOnce(stopped, func() (*collective.Placement, error) {
			close(started)
			time.Sleep(20 * time.Millisecond) // the waiter below queues meanwhile
			panic("build stopped")
		})
	}()
	<-started
	go func() {
		_, err := e.placeOnce(stopped, func() (*collective.Placement, error) { return want, nil })
		waiter <- err
	}()
	select {
	case err := <-waiter:
		if err != nil && !errors.Is(err, errPlacingStopped) {
			t.Errorf("waiter of a stopped build: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiter of a build that panicked still waits")
	}
}
