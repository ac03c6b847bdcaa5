package server

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// bigSearch is a 16 384-GPU search of an MoE model, whose expert layouts make
// the space large (about 300 ms on 2 cores; the tests need it well past their
// 20 ms deadlines even when the estimator's shared tables are warm), batch b
// apart so that searches with distinct b share no cache entry.
func bigSearch(b int) *pb.EstimatePlanRequest {
	return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "qwen3-235b-a22b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: int64(2048 + 8*b)}, Gpus: 16384}
}

// resetAt is the context gRPC's server gives a call whose client's deadline fired
// first: the client resets the stream when its own timer fires (RST_STREAM CANCEL,
// as for a cancel: grpc-go internal/transport http2_client.go closeStream), and
// the reset cancels the call's context (http2_server.go handleRSTStream,
// s.cancel) before the server's own timer for the same deadline — set from the
// grpc-timeout header as it arrived, so a transit later than the client's, and
// run by the scheduler after the transport's reader under load — makes it
// DEADLINE_EXCEEDED. Its Err is Canceled from the deadline on, and its deadline
// is the one the call carried.
type resetAt struct {
	context.Context
	deadline time.Time
}

func (c resetAt) Deadline() (time.Time, bool) { return c.deadline, true }

func newResetAt(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(d, cancel)
	t.Cleanup(func() { stop.Stop(); cancel() })
	return resetAt{ctx, time.Now().Add(d)}
}

// A call that ran out of time is DEADLINE_EXCEEDED also when the stream's reset
// cancelled its context before the server's timer did: a 20 ms client deadline
// on a 16 384-GPU EstimatePlan answered CANCELLED "context canceled", as did
// the same call while it waited for a search slot.
func TestDeadlineResetIsDeadlineExceeded(t *testing.T) {
	lim := DefaultLimits()
	svc := NewService(lim, nil)
	for i, deadline := range []time.Duration{time.Millisecond, 20 * time.Millisecond} {
		_, err := svc.EstimatePlan(newResetAt(t, deadline), bigSearch(i))
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("deadline %v, reset at it: %v, want DEADLINE_EXCEEDED", deadline, err)
		}
	}
	// Waiting for a slot: one slot, held by a search with no deadline.
	lim.MaxConcurrentSearches, lim.MaxQueuedSearches = 1, 4
	svc = NewService(lim, nil)
	held := make(chan error, 1)
	go func() { _, err := svc.EstimatePlan(context.Background(), bigSearch(10)); held <- err }()
	for svc.admit.Running() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := svc.EstimatePlan(newResetAt(t, 20*time.Millisecond), bigSearch(11)); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("reset at the deadline while waiting for a slot: %v, want DEADLINE_EXCEEDED", err)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	// A cancel before the deadline is the client's: CANCELLED.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cancel()
	if _, err := svc.EstimatePlan(ctx, bigSearch(12)); status.Code(err) != codes.Canceled {
		t.Errorf("cancelled a minute before the deadline: %v, want CANCELLED", err)
	}
}

// Two identical searches through the cache, the first with a deadline inside the
// search, the second with a long one, joined to the first's computation: the first
// gets its own DEADLINE_EXCEEDED, the second its answer (the computation it
// waited for failed on the first's deadline, so it computes again), whether the
// first's context ended by its timer or by the stream's reset.
func TestCacheWaiterOutlivesLeadersDeadline(t *testing.T) {
	c, err := cache.New(cache.Config{MaxCost: 64 << 20}, func(m proto.Message) int64 { return int64(proto.Size(m)) })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	svc := NewService(DefaultLimits(), c)
	for i, leaderCtx := range []func() context.Context{
		func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		},
		func() context.Context { return newResetAt(t, 20*time.Millisecond) },
	} {
		req := bigSearch(20 + i)
		leader := make(chan error, 1)
		go func() { _, err := svc.EstimatePlan(leaderCtx(), req); leader <- err }()
		time.Sleep(5 * time.Millisecond) // the leader is searching
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		resp, err := svc.EstimatePlan(ctx, req)
		cancel()
		if err != nil || len(resp.GetPlans()) == 0 {
			t.Errorf("case %d: the waiter with a minute's deadline: %v, %d plans", i, err, len(resp.GetPlans()))
		}
		if err := <-leader; status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("case %d: the leader with 20 ms: %v, want DEADLINE_EXCEEDED", i, err)
		}
	}
}
