package service

import (
	"context"
	"sync/atomic"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// expiring is a context whose deadline passes right after its first check: the
// batch's check before an item passes, the item's estimate finds it passed.
type expiring struct {
	context.Context
	checks atomic.Int32
}

func (c *expiring) Err() error {
	if c.checks.Add(1) == 1 {
		return nil
	}
	return context.DeadlineExceeded
}

func (c *expiring) Done() <-chan struct{} {
	if c.checks.Load() == 0 {
		return nil
	}
	done := make(chan struct{})
	close(done)
	return done
}

// A RankConfigs call whose deadline passes during its last item ends
// DEADLINE_EXCEEDED, as one whose deadline passes during any other item does: it
// answered OK with the last item "failed" DEADLINE_EXCEEDED, an item error that
// says nothing of the item.
func TestRankConfigsDeadlineInTheLastItem(t *testing.T) {
	req := &pb.RankConfigsRequest{Configs: []*pb.EstimateStepRequest{{
		Model:    &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 64},
		Layout:   &pb.Layout{Tp: 8, Pp: 1, Dp: 1, MicroBatch: 1},
	}}}
	svc := New(Options{})
	if resp, err := svc.RankConfigs(context.Background(), req); err != nil || resp.GetResults()[0].GetError() != nil {
		t.Fatalf("the item alone: %v, %v", resp, err)
	}
	resp, err := svc.RankConfigs(&expiring{Context: context.Background()}, req)
	if codeOf(err) != DeadlineExceeded {
		t.Errorf("deadline passed in the last item: %v, %v; want DEADLINE_EXCEEDED", resp, err)
	}
}
