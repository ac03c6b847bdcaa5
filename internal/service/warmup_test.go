package service

import (
	"context"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// After warming dgx-h100 at 1024 GPUs with the warm models, a first search of
// another model on that cluster runs on the cluster the warm-up built (the pool's
// entry, with its estimator's placements) and finds most of its groups placed: it
// places far fewer new groups than the same first search on a cold service.
func TestWarmUpPlacesTheGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("searches 1024 GPUs")
	}
	req := func() *pb.EstimatePlanRequest {
		return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "gpt3-175b"}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Training: &pb.Training{SeqLen: 2048, GlobalBatch: 1536}, Gpus: 1024, TopK: 3}
	}
	// placedBy is how many groups the first search of s places on the cluster's
	// estimator.
	placedBy := func(s *Service) int {
		entry, err := s.clusters.Sized(req().Cluster, 1024, -1, s.limits.MaxGPUs, "")
		if err != nil {
			t.Fatal(err)
		}
		before := entry.Est.Placements()
		if _, err := s.EstimatePlan(context.Background(), req()); err != nil {
			t.Fatal(err)
		}
		if again, _ := s.clusters.Sized(req().Cluster, 1024, -1, s.limits.MaxGPUs, ""); again != entry {
			t.Fatal("the search built its own cluster instead of the warmed one")
		}
		return entry.Est.Placements() - before
	}
	cold := placedBy(New(Options{}))
	s := New(Options{})
	if _, err := s.WarmUp(context.Background(), []WarmTarget{{"dgx-h100", 1024}}); err != nil {
		t.Fatal(err)
	}
	warm := placedBy(s)
	t.Logf("gpt3-175b on 1024 H100, groups the first search places: cold %d, after warm-up %d", cold, warm)
	if cold == 0 || float64(warm) > 0.5*float64(cold) {
		t.Errorf("after warm-up the first search places %d groups, cold %d: the warm-up placed little of what it needs", warm, cold)
	}
}
