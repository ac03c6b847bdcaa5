package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// WarmTarget is a cluster to have searched before the first request: a catalog
// system at a size in GPUs.
type WarmTarget struct {
	System string
	GPUs   int
}

func (w WarmTarget) String() string { return fmt.Sprintf("%s:%d", w.System, w.GPUs) }

// warmModels are searched on every warm-up target: a dense model of each scale
// whose layouts cover the group shapes (TP, CP, DP and PP sizes) most requests use.
var warmModels = []string{"llama3-70b", "llama3-8b"}

// WarmUp searches each target with the warm models through the service's own
// cluster pool, so that the communication groups of those clusters are placed and
// priced before the first request (a first search places every group: several
// times a warm search's time). A target that fails is reported and the others
// still run; it stops when ctx ends. It returns how long it took.
func (s *Service) WarmUp(ctx context.Context, targets []WarmTarget) (time.Duration, error) {
	start := time.Now()
	var errs []error
	for _, w := range targets {
		for _, m := range warmModels {
			if err := ctx.Err(); err != nil {
				return time.Since(start), err
			}
			req := &pb.EstimatePlanRequest{
				Model:    &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: m}},
				Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: w.System}},
				Training: &pb.Training{SeqLen: 4096, GlobalBatch: int64(w.GPUs)},
				Gpus:     int32(w.GPUs), TopK: 1,
			}
			if _, err := s.EstimatePlan(ctx, req); err != nil {
				errs = append(errs, fmt.Errorf("warm-up %s with %s: %w", w, m, err))
			}
		}
	}
	return time.Since(start), errors.Join(errs...)
}
