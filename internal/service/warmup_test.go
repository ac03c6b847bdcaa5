package service

import (
	"context"
	"runtime"
	"slices"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// After warming dgx-h100 at 1024 GPUs with the warm models, a first search of
// another model on that cluster runs on the cluster the warm-up built (the pool's
// entry, with its estimator's placements) and finds part of its groups placed: it
// allocates less than the same first search on a cold service (placing a group
// allocates its links and routes; a second search, everything placed, allocates
// about a quarter of a cold one).
func TestWarmUpPlacesTheGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("searches 1024 GPUs")
	}
	req := func() *pb.EstimatePlanRequest {
		return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "gpt3-175b"}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Training: &pb.Training{SeqLen: 2048, GlobalBatch: 1536}, Gpus: 1024, TopK: 3}
	}
	// firstSearch is the bytes the first search of s allocates.
	firstSearch := func(s *Service) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := s.EstimatePlan(context.Background(), req()); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	firstSearch(New(Options{})) // the process's one-time costs (catalog, pools)
	var cold, warm []uint64
	for range 3 {
		cold = append(cold, firstSearch(New(Options{})))

		s := New(Options{})
		if _, err := s.WarmUp(context.Background(), []WarmTarget{{"dgx-h100", 1024}}); err != nil {
			t.Fatal(err)
		}
		entry, err := s.clusters.Sized(req().Cluster, 1024, -1, s.limits.MaxGPUs)
		if err != nil {
			t.Fatal(err)
		}
		warm = append(warm, firstSearch(s))
		if again, _ := s.clusters.Sized(req().Cluster, 1024, -1, s.limits.MaxGPUs); again != entry {
			t.Fatal("the search built its own cluster instead of the warmed one")
		}
	}
	slices.Sort(cold)
	slices.Sort(warm)
	t.Logf("gpt3-175b on 1024 H100, first search allocates (median of 3): cold %d B, after warm-up %d B", cold[1], warm[1])
	if float64(warm[1]) > 0.9*float64(cold[1]) {
		t.Errorf("after warm-up the first search allocates %d B, cold %d B: the warm-up placed next to nothing of it", warm[1], cold[1])
	}
}
