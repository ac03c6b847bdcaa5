package wire_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
)

// laterDeadline is a context whose deadline passes after its Err has been read n
// times: a conversion that looks at it between plans stops in the middle.
type laterDeadline struct {
	context.Context
	n int
}

func (c *laterDeadline) Err() error {
	if c.n--; c.n < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// Converting the plans found into the answer took up to ~0.1 s on jobs of 98 304
// GPUs (50 plans) and did not look at the request's deadline: it returns the
// context's error, before converting any plan when the context is already done,
// and between plans when it ends during the conversion.
func TestPlanResponseStopsAtTheDeadline(t *testing.T) {
	var res planner.Result
	for i := range 6 {
		p := planner.Plan{Rank: i + 1, GPUs: 8, Placement: planner.Placement{WholeNodes: 1, Nodes: []planner.NodeUse{{Node: i, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}}}}}
		res.Top = append(res.Top, p)
		res.Pareto = append(res.Pareto, p)
	}
	if resp, err := wire.PlanResponse(context.Background(), planner.Request{}, res, 0); err != nil || len(resp.GetPlans()) != 6 || len(resp.GetPareto()) != 6 {
		t.Fatalf("without a deadline: %d plans, %d on the front, %v", len(resp.GetPlans()), len(resp.GetPareto()), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if resp, err := wire.PlanResponse(ctx, planner.Request{}, res, 0); !errors.Is(err, context.Canceled) || resp != nil {
		t.Errorf("cancelled: got %v, %v; want context.Canceled and no answer", resp != nil, err)
	}
	for _, n := range []int{1, 3, 8} {
		ctx := &laterDeadline{Context: context.Background(), n: n}
		if resp, err := wire.PlanResponse(ctx, planner.Request{}, res, 0); !errors.Is(err, context.DeadlineExceeded) || resp != nil {
			t.Errorf("deadline after %d looks: got %v, %v; want context.DeadlineExceeded and no answer", n, resp != nil, err)
		}
	}
}
