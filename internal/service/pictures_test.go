package service

import (
	"context"
	"reflect"
	"testing"

	"github.com/stepcost/stepcost/picture"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The Pareto picture of an API answer is the picture of the planner's result it
// was made from: the same plans, merged by the one key of package picture, in the
// same order, with the same ranks and front flags.
func TestParetoFrontOfTheAnswerIsThePlanners(t *testing.T) {
	s := New(Options{})
	req := plannerRequest()
	req.Gpus, req.MaxGpus, req.TopK, req.IncludeDominated = 0, 32, 8, true
	resp, res, err := s.PlanResult(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pareto) < 2 || len(res.Top) < 2 {
		t.Fatalf("want a front and top plans to merge: %d, %d", len(res.Pareto), len(res.Top))
	}
	want := picture.FrontOf(res, "t")
	got := FrontOf(resp, "t")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("from the answer:\n%+v\nfrom the planner:\n%+v", got, want)
	}
	onBoth := 0
	for _, c := range got.Candidates {
		if c.OnFront && c.Rank > 0 {
			onBoth++
		}
	}
	if onBoth == 0 {
		t.Error("no plan both ranked and on the front: the merge is not exercised")
	}
}

// DrawPareto of a search without a plan is FAILED_PRECONDITION saying why.
func TestDrawParetoWithoutPlan(t *testing.T) {
	s := New(Options{})
	req := plannerRequest()
	req.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-405b"}}
	req.Gpus, req.Cluster.Nodes = 8, 1
	_, err := s.DrawPareto(context.Background(), &pb.DrawParetoRequest{Plan: req})
	if codeOf(err) != FailedPrecondition {
		t.Fatalf("got %v", err)
	}
}
