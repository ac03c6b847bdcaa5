package service

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The nodes a scheduler lists (exclude_nodes, degraded_nodes) are sets: the same
// nodes in another order are the same question, so they get the same answer —
// the plans' notes name the degraded nodes in node order — and the same cache key.
func TestNodeListsInAnyOrderAreOneQuestion(t *testing.T) {
	req := func(exclude []int32, degraded ...*pb.DegradedNode) *pb.EstimatePlanRequest {
		r := plannerRequest()
		r.Cluster.Nodes, r.Gpus, r.Training.GlobalBatch = 5, 16, 32
		r.ExcludeNodes, r.DegradedNodes = exclude, degraded
		return r
	}
	gpu := &pb.DegradedNode{Node: 0, GpuSpeed: 0.5}
	nic := &pb.DegradedNode{Node: 1, NicSpeed: 0.5}
	a := req([]int32{2, 4, 3}, gpu, nic)
	b := req([]int32{4, 3, 2}, nic, gpu)
	s := New(Options{})
	ka, err := keyOf(s, "EstimatePlan", a)
	if err != nil {
		t.Fatal(err)
	}
	if kb, _ := keyOf(s, "EstimatePlan", b); kb != ka {
		t.Error("the same nodes in another order have another cache key")
	}
	answer := func(r *pb.EstimatePlanRequest) *pb.EstimatePlanResponse {
		resp, err := s.EstimatePlan(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Stats.ElapsedMs = 0
		return resp
	}
	ra, rb := answer(a), answer(b)
	if len(ra.GetPlans()) == 0 || len(ra.GetPlans()[0].GetPlacement().GetDegradedNodesUsed()) != 2 {
		t.Fatalf("the test means both degraded nodes to be used: %v", ra.GetPlans())
	}
	if !proto.Equal(ra, rb) {
		for i := range ra.GetPlans() {
			if x, y := ra.Plans[i].GetEstimate().GetAssumptions(), rb.Plans[i].GetEstimate().GetAssumptions(); !proto.Equal(ra.Plans[i], rb.Plans[i]) {
				t.Errorf("plan %d differs with the nodes' order:\n%q\n%q", i+1, x[len(x)-1], y[len(y)-1])
			}
		}
		t.Error("the same nodes in another order get another answer")
	}
}

// gpus is the job size; min_gpus and max_gpus a range of sizes "instead of gpus".
// Given with gpus, the range was ignored without a word (max_gpus only sized the
// cluster): the request is refused, naming the field.
func TestPlanRefusesGPUsWithARange(t *testing.T) {
	s := New(Options{})
	for field, set := range map[string]func(*pb.EstimatePlanRequest){
		"max_gpus": func(r *pb.EstimatePlanRequest) { r.MaxGpus = 64 },
		"min_gpus": func(r *pb.EstimatePlanRequest) { r.MinGpus = 8 },
	} {
		r := plannerRequest()
		set(r)
		_, err := s.EstimatePlan(context.Background(), r)
		if codeOf(err) != InvalidArgument || !strings.Contains(err.Error(), field) {
			t.Errorf("gpus %d with %s: got %v, want INVALID_ARGUMENT naming %s", r.Gpus, field, err, field)
		}
	}
}
