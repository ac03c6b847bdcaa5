package main

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/stepcost/stepcost/internal/service"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Every kind of call the load sends is one the daemon takes, so that the load is
// what it says: the small calls answer, and the searches are accepted and start
// (they are stopped by a short deadline here, the code naming the deadline, not a
// field). An expensive search once sent a price without a token budget, which the
// service refuses naming token_budget: every expensive call was then a fast 400
// and the load measured nothing but refusals.
func TestRequestsAreAccepted(t *testing.T) {
	s := service.New(service.Options{})
	step, cachedPlan := smallRequests()
	if _, err := s.EstimateStep(context.Background(), step); err != nil {
		t.Errorf("EstimateStep: %v", err)
	}
	if _, err := s.EstimatePlan(context.Background(), cachedPlan); err != nil {
		t.Errorf("cached EstimatePlan: %v", err)
	}
	r := rand.New(rand.NewSource(1))
	for name, req := range map[string]func(*rand.Rand) *pb.EstimatePlanRequest{"search": newSearch, "expensive": expensiveSearch} {
		for range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			_, err := s.EstimatePlan(ctx, req(r))
			cancel()
			if code, vs := service.CodeOf(err); err != nil && code == service.InvalidArgument {
				t.Errorf("%s: refused: %v (%v)", name, err, vs)
			}
		}
	}
}
