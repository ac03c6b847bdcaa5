package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

func plannerRequest() *pb.EstimatePlanRequest {
	return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 4},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 64}, Gpus: 32, TopK: 2}
}

func codeOf(err error) Code {
	c, _ := CodeOf(err)
	return c
}

// Wide ranges and the constraints that widen the space make a search large.
func TestLargeSearch(t *testing.T) {
	if !largeSearch(planner.Request{MaxGPUs: 1024}) || largeSearch(planner.Request{GPUs: 1024}) ||
		!largeSearch(planner.Request{GPUs: 8, Constraints: planner.Constraints{UnevenPP: true}}) {
		t.Error("largeSearch")
	}
}

// Every kind of error is classified where it arose: field errors and limits
// INVALID_ARGUMENT naming their fields, unknown names NOT_FOUND, context errors
// their own codes, the service's own errors their code, anything else INTERNAL;
// a batch item carries the code's name.
func TestCodeOf(t *testing.T) {
	for name, c := range map[string]struct {
		err   error
		code  Code
		name  string
		field string
	}{
		"field":       {invalid.Field("layout.tp", "must be ≥ 1"), InvalidArgument, "INVALID_ARGUMENT", "layout.tp"},
		"joined":      {errors.Join(errors.New("x"), invalid.Field("training.seq_len", "bad")), InvalidArgument, "INVALID_ARGUMENT", "training.seq_len"},
		"not found":   {wire.NotFound("model.name", errors.New("unknown model")), NotFound, "NOT_FOUND", "model.name"},
		"limit":       {wire.Limit("gpus", "too many"), InvalidArgument, "INVALID_ARGUMENT", "gpus"},
		"deadline":    {fmt.Errorf("search: %w", context.DeadlineExceeded), DeadlineExceeded, "DEADLINE_EXCEEDED", ""},
		"canceled":    {context.Canceled, Canceled, "CANCELLED", ""},
		"unsupported": {fmt.Errorf("x: %w", step.ErrUnsupported), InvalidArgument, "INVALID_ARGUMENT", ""},
		"no plan":     {errorf(FailedPrecondition, "no plan"), FailedPrecondition, "FAILED_PRECONDITION", ""},
		"other error": {errors.New("boom"), Internal, "INTERNAL", ""},
	} {
		t.Run(name, func(t *testing.T) {
			got, vs := CodeOf(c.err)
			if got != c.code || (c.field == "") != (len(vs) == 0) || (len(vs) > 0 && vs[0].Field != c.field) {
				t.Fatalf("got %v %v, want %v on %q", got, vs, c.code, c.field)
			}
			if Typed(c.err) == (c.code == Internal) {
				t.Errorf("Typed: %v", Typed(c.err))
			}
			e := ItemError(c.err)
			if e.GetCode() != c.name || e.GetMessage() != c.err.Error() || len(e.GetViolations()) != len(vs) {
				t.Errorf("item error %v, want code %s", e, c.name)
			}
		})
	}
}

// An answer with a number that is not finite is an error, never a 200: the guard
// behind the request bounds.
func TestNonFiniteAnswerIsAnError(t *testing.T) {
	for _, v := range []float64{math.Inf(1), math.NaN()} {
		answer := &pb.EstimateStepResponse{Estimate: &pb.StepEstimate{StepTimeS: 1,
			Communication: []*pb.CommCall{{TimeUs: 3}, {TimeUs: v}}}}
		run := finiteRun(func(context.Context) (proto.Message, error) { return answer, nil })
		_, err := run(context.Background())
		if codeOf(err) != InvalidArgument || !strings.Contains(err.Error(), "estimate.communication[1].time_us") {
			t.Errorf("%v: %v", v, err)
		}
	}
	ok := &pb.EstimateStepResponse{Estimate: &pb.StepEstimate{StepTimeS: math.MaxFloat64}}
	if _, err := finiteRun(func(context.Context) (proto.Message, error) { return ok, nil })(context.Background()); err != nil {
		t.Errorf("finite answer: %v", err)
	}
}

// A scheduler sends a different free map with every search. Their placements must
// not pile up in the cluster's shared estimator (they did, 150 KB a search of 16 GPUs,
// 3 MB of 1 024, so that an admission loop ran the daemon out of memory).
func TestFreeMapSearchesDoNotAccumulate(t *testing.T) {
	svc := New(Options{})
	svc.scratch.budget = 64 // a new scratch estimator every 4 searches
	search := func(i int) {
		free := make([]*pb.NodeFreeGPUs, 8)
		for n := range free {
			k := 4 + (i+n)%5 // 4–8 free GPUs, a different map each time
			free[n] = &pb.NodeFreeGPUs{Node: int32(n), Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}[:k]}
		}
		r := &pb.EstimatePlanRequest{Model: plannerRequest().Model, Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 8, FreeGpus: free},
			Training: &pb.Training{SeqLen: 8192, GlobalBatch: 64}, Gpus: 16, TopK: 1}
		if _, err := svc.EstimatePlan(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	// The heap is read at two points with the scratch estimator at the same age (it
	// serves four of these searches), after the estimators' bounded memos
	// (placements, pipeline runs and their hop prices, spans) have filled to their
	// working size: what one estimator holds is a level, about 0.8 MB here; what
	// must not happen is growth with every search after that.
	const warm, n = 32, 60
	for i := range warm {
		search(i)
	}
	before := heap()
	for i := range n {
		search(warm + i)
	}
	if grew := int64(heap()) - int64(before); grew > 1<<20 {
		t.Errorf("the heap grew %d KB over %d searches with free maps", grew>>10, n)
	}
}

// The admission flags are checked at start-up, and /metrics reports the searches

// Searches whose free map leaves ranks on the first GPUs in order share the
// cluster's estimator (and its placements); others share a scratch one, replaced
// when it has served its budget.
func TestEstimatorFor(t *testing.T) {
	svc := New(Options{})
	svc.scratch.budget = 48
	ce, err := svc.clusters.Sized(plannerRequest().Cluster, 32, -1, svc.limits.MaxGPUs, "")
	if err != nil {
		t.Fatal(err)
	}
	full := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, free := range []planner.FreeMap{nil, {0: full}, {0: full, 1: full, 2: full}} {
		if svc.estimatorFor(ce, planner.Request{Cluster: ce.Cluster, GPUs: 16, Free: free}) != ce.Est {
			t.Errorf("%v: not the cluster's estimator", free)
		}
	}
	var got []*step.Estimator
	for _, free := range []planner.FreeMap{{1: full}, {0: full[:4]}, {0: full, 2: full}, {0: full[:7]}} {
		got = append(got, svc.estimatorFor(ce, planner.Request{Cluster: ce.Cluster, GPUs: 16, Free: free}))
	}
	if got[0] == ce.Est || got[0] != got[1] || got[1] != got[2] || got[3] == got[2] {
		t.Errorf("scratch estimators: %p %p %p %p (cluster's %p)", got[0], got[1], got[2], got[3], ce.Est)
	}
}

// EstimateStep and SimulateCollective put their ranks on the first GPUs in order: a
// free map that holds those GPUs changes nothing of the answer; one that leaves
// one of them busy, or names GPUs that do not exist, is refused by field (it was
// read by neither and silently ignored).
func TestFreeGPUsOfOneLayout(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	all := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	step := func(free ...*pb.NodeFreeGPUs) *pb.EstimateStepRequest {
		return &pb.EstimateStepRequest{Model: plannerRequest().Model,
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 4, FreeGpus: free},
			Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1}}
	}
	coll := func(free ...*pb.NodeFreeGPUs) *pb.SimulateCollectiveRequest {
		return &pb.SimulateCollectiveRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 4, FreeGpus: free},
			Nodes: 2, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 26}
	}
	base, err := s.EstimateStep(ctx, step())
	if err != nil {
		t.Fatal(err)
	}
	held, err := s.EstimateStep(ctx, step(&pb.NodeFreeGPUs{Node: 2, Gpus: all[:3]}, &pb.NodeFreeGPUs{Node: 0, Gpus: all}, &pb.NodeFreeGPUs{Node: 1, Gpus: all}))
	if err != nil || held.GetEstimate().GetStepTimeS() != base.GetEstimate().GetStepTimeS() {
		t.Errorf("a free map holding the layout's GPUs: %v, %v (without: %v)", held.GetEstimate().GetStepTimeS(), err, base.GetEstimate().GetStepTimeS())
	}
	cbase, err := s.SimulateCollective(ctx, coll())
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.SimulateCollective(ctx, coll(&pb.NodeFreeGPUs{Node: 0, Gpus: all}, &pb.NodeFreeGPUs{Node: 1, Gpus: all})); err != nil ||
		c.GetChosen().GetTimeUs() != cbase.GetChosen().GetTimeUs() {
		t.Errorf("a free map holding the group's GPUs: %v, %v", c.GetChosen(), err)
	}
	for name, c := range map[string]struct {
		err   func() error
		field string
	}{
		"step, node 1 busy": {func() error {
			_, err := s.EstimateStep(ctx, step(&pb.NodeFreeGPUs{Node: 0, Gpus: all}, &pb.NodeFreeGPUs{Node: 2, Gpus: all}))
			return err
		}, "cluster.free_gpus"},
		"step, GPU 7 busy": {func() error {
			_, err := s.EstimateStep(ctx, step(&pb.NodeFreeGPUs{Node: 0, Gpus: all[:7]}, &pb.NodeFreeGPUs{Node: 1, Gpus: all}))
			return err
		}, "cluster.free_gpus"},
		"step, no such GPU": {func() error {
			_, err := s.EstimateStep(ctx, step(&pb.NodeFreeGPUs{Node: 0, Gpus: []int32{9}}))
			return err
		}, "cluster.free_gpus[0].gpus[0]"},
		"step, negative node": {func() error {
			_, err := s.EstimateStep(ctx, step(&pb.NodeFreeGPUs{Node: -1, Gpus: all}))
			return err
		}, "cluster.free_gpus[0].node"},
		"collective, node 1 busy": {func() error {
			_, err := s.SimulateCollective(ctx, coll(&pb.NodeFreeGPUs{Node: 0, Gpus: all}))
			return err
		}, "cluster.free_gpus"},
		"collective, GPU listed twice": {func() error {
			_, err := s.SimulateCollective(ctx, coll(&pb.NodeFreeGPUs{Node: 0, Gpus: []int32{0, 0}}))
			return err
		}, "cluster.free_gpus[0].gpus[1]"},
	} {
		err := c.err()
		code, vs := CodeOf(err)
		if code != InvalidArgument || len(vs) != 1 || vs[0].Field != c.field {
			t.Errorf("%s: %v, want INVALID_ARGUMENT on %s", name, err, c.field)
		}
	}
}
