package server

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

func TestParseWarmUp(t *testing.T) {
	got, err := ParseWarmUp("dgx-h100:1024, hgx-b200:64")
	if err != nil || len(got) != 2 || got[0] != (WarmTarget{"dgx-h100", 1024}) || got[1] != (WarmTarget{"hgx-b200", 64}) {
		t.Errorf("%v, %v", got, err)
	}
	if got, err := ParseWarmUp("none"); err != nil || got != nil {
		t.Errorf("none: %v, %v", got, err)
	}
	if got, _ := ParseWarmUp("default"); len(got) != len(DefaultWarmUp()) || len(got) == 0 {
		t.Errorf("default: %v", got)
	}
	for _, bad := range []string{"dgx-h100", "dgx-h100:0", "no-such-system:8", "dgx-h100:x"} {
		if _, err := ParseWarmUp(bad); err == nil || !strings.Contains(err.Error(), "--warm-up") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// After warming dgx-h100 at 1024 GPUs with the warm models, a first search of
// another model on that cluster finds its groups placed.
func TestWarmUpPlacesTheGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("searches 1024 GPUs")
	}
	req := func() *pb.EstimatePlanRequest {
		return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "gpt3-175b"}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Training: &pb.Training{SeqLen: 2048, GlobalBatch: 1536}, Gpus: 1024, TopK: 3}
	}
	cold := NewService(DefaultLimits(), nil)
	t0 := time.Now()
	if _, err := cold.EstimatePlan(context.Background(), req()); err != nil {
		t.Fatal(err)
	}
	coldTime := time.Since(t0)

	warm := NewService(DefaultLimits(), nil)
	took, err := warm.WarmUp(context.Background(), []WarmTarget{{"dgx-h100", 1024}})
	if err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if _, err := warm.EstimatePlan(context.Background(), req()); err != nil {
		t.Fatal(err)
	}
	first := time.Since(t0)
	t.Logf("gpt3-175b on 1024 H100: cold first search %v; after a %v warm-up, first search %v", coldTime, took, first)
}
