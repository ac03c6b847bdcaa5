package service

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// layout.recompute_modules is a set (the estimator reads it as bits): the same
// modules in another order are one question, with one cache key and one answer,
// whose layout lists them in the estimator's order (step.RecomputeModuleNames)
// whichever order was sent. A field error still names the index the caller sent,
// also when another order of the same modules was computed at the same time.
func TestRecomputeModulesInAnyOrderAreOneQuestion(t *testing.T) {
	c, err := cache.New(cache.Config{MaxCost: 64 << 20}, func(m proto.Message) int64 { return int64(proto.Size(m)) + 64 })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := New(Options{Cache: c})
	req := func(model string, modules ...string) *pb.EstimateStepRequest {
		return &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: model}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64},
			Layout:   &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1, Recompute: pb.Recompute_RECOMPUTE_SELECTIVE, RecomputeModules: modules}}
	}
	a, b := req("llama3-8b", "layernorm", "core_attn"), req("llama3-8b", "core_attn", "layernorm")
	ka, err := keyOf(s, "EstimateStep", a)
	if err != nil {
		t.Fatal(err)
	}
	if kb, _ := keyOf(s, "EstimateStep", b); kb != ka {
		t.Error("the same recompute modules in another order have another cache key")
	}
	ra, err := s.EstimateStep(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	// The cache stores asynchronously: the second order is asked until it is served
	// from the first's entry (its key is the first's, checked above).
	var rb *pb.EstimateStepResponse
	for range 200 {
		if rb, err = s.EstimateStep(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		if rb.GetCached() {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !rb.GetCached() {
		t.Error("the second order was never served from the first's entry")
	}
	want := []string{"core_attn", "layernorm"}
	for name, r := range map[string]*pb.EstimateStepResponse{"layernorm, core_attn": ra, "core_attn, layernorm": rb} {
		if got := r.GetEstimate().GetLayout().GetRecomputeModules(); !slices.Equal(got, want) {
			t.Errorf("sent %s: the answer's layout lists %q, want the estimator's order %q", name, got, want)
		}
	}
	rb.Cached = false
	if !proto.Equal(ra, rb) {
		t.Error("the same modules in another order get another answer")
	}

	// Errors name the caller's index: alone, and beside the other order at once
	// (one computation for both would name one caller's index to the other).
	cases := []struct {
		req   *pb.EstimateStepRequest
		field string
	}{
		{req("llama3-8b", "core_attn", "bogus"), "layout.recompute_modules[1]"},
		{req("llama3-8b", "bogus", "core_attn"), "layout.recompute_modules[0]"},
		{req("llama3-8b", "moe", "layernorm"), "layout.recompute_modules[0]"},
		{req("llama3-8b", "layernorm", "moe"), "layout.recompute_modules[1]"},
	}
	check := func(i int) error {
		_, err := s.EstimateStep(context.Background(), cases[i].req)
		if codeOf(err) != InvalidArgument || !strings.Contains(err.Error(), cases[i].field+":") {
			return fmt.Errorf("%q: got %v, want INVALID_ARGUMENT naming %s", cases[i].req.Layout.RecomputeModules, err, cases[i].field)
		}
		return nil
	}
	for i := range cases {
		if err := check(i); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for range 50 {
		for i := range cases {
			wg.Go(func() {
				if err := check(i); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error("at once:", err)
		break
	}
}
