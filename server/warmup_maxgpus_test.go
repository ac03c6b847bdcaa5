package server

import (
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
)

// A daemon started with a --max-gpus below the default warm-up's sizes (1024
// GPUs, 1152 for gb200-nvl72) and no --warm-up starts, its default warm-up sized
// to the most whole nodes within the limit: it refused to start with "--warm-up:
// dgx-a100:1024: more GPUs than --max-gpus 512", one line a system, naming a flag
// it was not given (and with an invalid --max-gpus 0 said so beside that flag's own
// error). A --warm-up the operator lists above the limit is still refused.
func TestDefaultWarmUpFitsMaxGPUs(t *testing.T) {
	for _, limit := range []int{512, 100, 4} {
		cfg, err := ParseFlags([]string{"--max-gpus", strconv.Itoa(limit)}, io.Discard)
		if err != nil {
			t.Fatalf("--max-gpus %d: %v", limit, err)
		}
		if len(cfg.WarmUp) == 0 {
			t.Errorf("--max-gpus %d: no warm-up left", limit)
		}
		for _, w := range cfg.WarmUp {
			sys, err := catalog.System(w.System)
			if err != nil || w.GPUs > limit || w.GPUs%sys.GPUsPerNode != 0 || limit-w.GPUs >= sys.GPUsPerNode {
				t.Errorf("--max-gpus %d: warm-up %s:%d, want the most whole nodes within the limit (%v)", limit, w.System, w.GPUs, err)
			}
		}
	}
	if cfg, err := ParseFlags(nil, io.Discard); err != nil || len(cfg.WarmUp) != len(DefaultWarmUp()) || cfg.WarmUp[0] != DefaultWarmUp()[0] {
		t.Errorf("defaults: %v %v", cfg.WarmUp, err)
	}
	if _, err := ParseFlags([]string{"--max-gpus", "0"}, io.Discard); err == nil || strings.Contains(err.Error(), "--warm-up") {
		t.Errorf("--max-gpus 0: %v; want its own error alone", err)
	}
	if _, err := ParseFlags([]string{"--max-gpus", "512", "--warm-up", "dgx-h100:1024"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--warm-up: dgx-h100:1024: more GPUs than --max-gpus 512") {
		t.Errorf("listed warm-up above the limit: %v", err)
	}
}
