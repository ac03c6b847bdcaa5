package server

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/internal/service"
)

// WarmTarget is a cluster to have searched before the first request
// (service.WarmTarget).
type WarmTarget = service.WarmTarget

// WarmUp searches the targets through the service core (service.Service.WarmUp).
func (s *Service) WarmUp(ctx context.Context, targets []WarmTarget) (time.Duration, error) {
	return s.core.WarmUp(ctx, targets)
}

// DefaultWarmUp is the NVIDIA reference systems of the catalog at 1024 GPUs
// (rounded up to whole nodes, 1152 for GB200 NVL72's 18-tray domains): the size of
// the cold search the planner's targets name. A fleet lists its own with --warm-up.
func DefaultWarmUp() []WarmTarget {
	return []WarmTarget{{System: "dgx-a100", GPUs: 1024}, {System: "dgx-h100", GPUs: 1024}, {System: "hgx-h200", GPUs: 1024}, {System: "hgx-b200", GPUs: 1024}, {System: "gb200-nvl72", GPUs: 1152}}
}

// fitWarmUp sizes the default warm-up to the daemon's --max-gpus: a target above
// it is searched at the most whole nodes of its system within it, and left out
// when not one node fits. A daemon started with --max-gpus 512 (or any limit
// below 1152) and no --warm-up refused to start, "--warm-up: dgx-a100:1024: more
// GPUs than --max-gpus 512", naming a flag it was not given; a --warm-up the
// operator lists is still refused that way.
func fitWarmUp(targets []WarmTarget, maxGPUs int) []WarmTarget {
	var out []WarmTarget
	for _, w := range targets {
		if w.GPUs > maxGPUs {
			sys, err := catalog.System(w.System)
			if err != nil || sys.GPUsPerNode < 1 {
				continue
			}
			w.GPUs = maxGPUs / sys.GPUsPerNode * sys.GPUsPerNode
		}
		if w.GPUs >= 1 {
			out = append(out, w)
		}
	}
	return out
}

// ParseWarmUp reads "system:gpus,system:gpus" ("" or "none": no warm-up,
// "default": DefaultWarmUp).
func ParseWarmUp(s string) ([]WarmTarget, error) {
	switch strings.TrimSpace(s) {
	case "", "none":
		return nil, nil
	case "default":
		return DefaultWarmUp(), nil
	}
	var out []WarmTarget
	for _, f := range strings.Split(s, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(f), ":")
		gpus, err := strconv.Atoi(n)
		if !ok || err != nil || gpus < 1 {
			return nil, invalid.Field("--warm-up", "want system:gpus, e.g. dgx-h100:1024 (got %q)", f)
		}
		sys, err := catalog.System(name)
		if err != nil {
			return nil, invalid.Field("--warm-up", "%q: %v", name, err)
		}
		out = append(out, WarmTarget{System: sys.Name, GPUs: gpus})
	}
	return out, nil
}
