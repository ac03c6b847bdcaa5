package service

import (
	"context"
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A refusal over --max-search-gpus names the field the caller sent: EstimatePlan
// with gpus (one job size) was refused naming max_gpus, a field the request did
// not give, and advising to narrow min_gpus/max_gpus.
func TestSearchGPUsLimitNamesTheFieldSent(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxSearchGPUs = 63
	s := New(Options{Limits: &lim})
	ctx := context.Background()
	model := &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}}
	cluster := &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}
	training := &pb.Training{SeqLen: 4096, GlobalBatch: 512}

	_, err := s.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: model, Cluster: cluster, Training: training, Gpus: 64})
	if err == nil || !strings.HasPrefix(err.Error(), "gpus: ") || strings.Contains(err.Error(), "max_gpus") || !strings.Contains(err.Error(), "--max-search-gpus") {
		t.Errorf("gpus 64 over --max-search-gpus 63: %v; want a refusal naming gpus and the flag, not max_gpus", err)
	}
	_, err = s.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: model, Cluster: cluster, Training: training, MinGpus: 8, MaxGpus: 64})
	if err == nil || !strings.HasPrefix(err.Error(), "max_gpus: ") || !strings.Contains(err.Error(), "--max-search-gpus") {
		t.Errorf("min_gpus 8, max_gpus 64 over --max-search-gpus 63: %v; want a refusal naming max_gpus and the flag", err)
	}
}
