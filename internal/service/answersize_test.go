package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Each plan of an EstimatePlan answer lists every GPU of its placement, so the
// answer grows with top_k × the job's GPUs. Nothing bounded it: llama3-405b on
// 98 304 GPUs with top_k 1000 (409 plans found) took the daemon to 3.4 GB resident
// (its memory budget is 540 MiB, the manifests' pod 1 GiB) and 51 s of CPU for one
// call. The product is refused before the search, naming top_k and the flag; the
// default top_k on the largest job allowed still passes.
func TestAnswerSizeIsBounded(t *testing.T) {
	s := New(Options{})
	req := func(gpus, maxGPUs, topK int32) *pb.EstimatePlanRequest {
		return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-405b"}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Training: &pb.Training{SeqLen: 8192, GlobalBatch: 4096}, Gpus: gpus, MaxGpus: maxGPUs, MinGpus: max(0, maxGPUs-8), TopK: topK}
	}
	for _, c := range []struct {
		req  *pb.EstimatePlanRequest
		want string // "": accepted
	}{
		{req(98304, 0, 1000), "98304000 GPUs"},
		{req(98304, 0, 22), "2162688 GPUs"},
		{req(0, 131072, 17), "2228224 GPUs"},
		{req(98304, 0, 21), ""},
		{req(131072, 0, 0), ""}, // the default top_k, 10
		{req(131072, 0, 16), ""},
	} {
		_, err := s.estimatePlan(c.req)
		var le *wire.LimitError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("gpus %d max_gpus %d top_k %d: %v", c.req.Gpus, c.req.MaxGpus, c.req.TopK, err)
		case c.want == "":
		case !errors.As(err, &le) || le.Field != "top_k" || codeOf(err) != InvalidArgument ||
			!strings.Contains(err.Error(), "--max-answer-gpus") || !strings.Contains(err.Error(), c.want):
			t.Errorf("gpus %d max_gpus %d top_k %d: got %v, want INVALID_ARGUMENT on top_k naming --max-answer-gpus and %q", c.req.Gpus, c.req.MaxGpus, c.req.TopK, err, c.want)
		}
	}
}

// The Pareto front's plans list their placements too, and the front's size is
// known only after the search: 16 plans and 19 on the front of 131 072 GPUs listed
// 4.6 M GPUs (22.7 MB of JSON) under a limit of 2 097 152. The GPUs listed by the
// whole answer, top plans and front, stay within --max-answer-gpus; a front plan
// past it keeps its placement's counts, its nodes left out and a warning naming the
// flag.
func TestAnswerSizeCountsTheFront(t *testing.T) {
	req := plannerRequest()
	req.Gpus, req.MaxGpus, req.TopK, req.IncludeDominated = 0, 32, 3, true
	lim := DefaultLimits()
	lim.MaxAnswerGPUs = 3*32 + 40 // the top plans, and room for a front plan or two
	s := New(Options{Limits: &lim})
	resp, res, err := s.PlanResult(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	top := 0
	for _, p := range res.Top {
		top += p.GPUs
	}
	front := 0
	for _, p := range res.Pareto {
		front += p.GPUs
	}
	if top+front <= lim.MaxAnswerGPUs || len(res.Pareto) < 2 {
		t.Fatalf("the search's top plans (%d GPUs) and front (%d plans, %d GPUs) do not exceed the limit %d: the test tests nothing", top, len(res.Pareto), front, lim.MaxAnswerGPUs)
	}
	listed := func(ps []*pb.Plan) (n int) {
		for _, p := range ps {
			for _, u := range p.GetPlacement().GetNodes() {
				n += len(u.GetGpus())
			}
		}
		return n
	}
	if n := listed(resp.GetPlans()); n != top {
		t.Errorf("the top plans list %d GPUs, want all %d", n, top)
	}
	if n := listed(resp.GetPlans()) + listed(resp.GetPareto()); n > lim.MaxAnswerGPUs {
		t.Errorf("the answer lists %d GPUs, over --max-answer-gpus %d", n, lim.MaxAnswerGPUs)
	}
	if len(resp.GetPareto()) != len(res.Pareto) {
		t.Fatalf("the answer's front has %d plans, the search's %d", len(resp.GetPareto()), len(res.Pareto))
	}
	cut := 0
	for i, p := range resp.GetPareto() {
		pl := p.GetPlacement()
		if len(pl.GetNodes()) > 0 {
			continue
		}
		cut++
		if int(pl.GetWholeNodes()+pl.GetPartialNodes()) == 0 || int(p.GetGpus()) != res.Pareto[i].GPUs {
			t.Errorf("front plan %d: its placement's counts are gone: %v", i, pl)
		}
		if !slices.ContainsFunc(p.GetEstimate().GetWarnings(), func(w string) bool { return strings.Contains(w, "--max-answer-gpus") }) {
			t.Errorf("front plan %d: nodes left out without a warning naming --max-answer-gpus: %q", i, p.GetEstimate().GetWarnings())
		}
	}
	if cut == 0 {
		t.Error("no front plan had its nodes left out")
	}
}

// A top_k above the most plans a search returns is refused for that, naming its
// range: under --max-answer-gpus it was refused for the answer's size instead,
// advising "ask for at most 65536 plans" (top_k 70000 on 32 GPUs), which is itself
// refused, "top_k: must be between 1 and 1000".
func TestTopKOverItsRangeNamesTheRange(t *testing.T) {
	s := New(Options{})
	req := plannerRequest()
	req.Gpus, req.TopK = 32, 70000
	_, err := s.EstimatePlan(context.Background(), req)
	if codeOf(err) != InvalidArgument || !strings.Contains(err.Error(), "top_k: must be between 1 and 1000 (got 70000)") || strings.Contains(err.Error(), "65536") {
		t.Errorf("top_k 70000 on 32 GPUs: got %v, want top_k's range, not a size to ask for above it", err)
	}
}
