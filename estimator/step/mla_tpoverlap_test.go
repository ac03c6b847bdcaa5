package step_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// Megatron-Core runs no TP communication overlap for a model with latent attention
// (framework.Runs.NoMLATPOverlap): under 0.12 TELinear asserts a userbuffers name
// MLA's projections do not have, and from 0.13 on the first of them switches the
// overlap off on the config every later module is built from. DeepSeek-V3 at TP 2
// with sequence parallelism is refused with the overlap under every Megatron-Core
// profile, naming layout.overlap_tp and the framework, and priced without it; a
// dense model keeps the overlap under the same profiles, and DeepSeek's own
// framework (hai-llm), not Megatron-Core, is not held to the rule.
func TestMLATPOverlapRefused(t *testing.T) {
	estimate := func(fw string, overlap bool, mla bool) error {
		return estimateMLAOrDense(t, fw, mla, step.Layout{TP: 2, SP: true, DP: 32, EP: 1, MicroBatch: 1, ZeRO: 1, OverlapTP: overlap})
	}
	for _, fw := range []string{"megatron-core", "megatron-core-0.12", "nemo", "nemo-24", "nemo-24.12", "nemo-25.04"} {
		err := estimate(fw, true, true)
		var fe *invalid.Error
		if !errors.As(err, &fe) || fe.Field != "layout.overlap_tp" || !strings.Contains(err.Error(), fw) || !strings.Contains(err.Error(), "latent attention") {
			t.Errorf("%s: DeepSeek-V3 with TP overlap: got %v, want an error naming layout.overlap_tp, %s and latent attention", fw, err, fw)
		}
		if err := estimate(fw, false, true); err != nil {
			t.Errorf("%s: DeepSeek-V3 without TP overlap: %v", fw, err)
		}
		if err := estimate(fw, true, false); err != nil {
			t.Errorf("%s: a dense model with TP overlap: %v", fw, err)
		}
	}
	if err := estimate("hai-llm", true, true); err != nil && strings.Contains(err.Error(), "overlap_tp") {
		t.Errorf("hai-llm: DeepSeek-V3 with TP overlap refused: %v", err)
	}
}

// NeMo 25.04's Transformer Engine (2.2–2.4) has no attention backend for latent
// attention under context parallelism (framework.Runs.NoMLAContextParallel):
// DeepSeek-V3 with cp 2 is refused under nemo-25.04, naming layout.cp and the
// framework, and priced under nemo (Transformer Engine 2.5 on); a dense model
// keeps cp 2 under nemo-25.04.
func TestMLAContextParallelRefused(t *testing.T) {
	estimate := func(fw string, mla bool) error {
		return estimateMLAOrDense(t, fw, mla, step.Layout{TP: 1, CP: 2, DP: 32, EP: 1, MicroBatch: 1, ZeRO: 1})
	}
	err := estimate("nemo-25.04", true)
	var fe *invalid.Error
	if !errors.As(err, &fe) || fe.Field != "layout.cp" || !strings.Contains(err.Error(), "nemo-25.04") || !strings.Contains(err.Error(), "latent attention") {
		t.Errorf("nemo-25.04: DeepSeek-V3 with cp 2: got %v, want an error naming layout.cp, nemo-25.04 and latent attention", err)
	}
	if err := estimate("nemo", true); err != nil {
		t.Errorf("nemo: DeepSeek-V3 with cp 2: %v", err)
	}
	if err := estimate("nemo-25.04", false); err != nil {
		t.Errorf("nemo-25.04: a dense model with cp 2: %v", err)
	}
}

// estimateMLAOrDense estimates layout l on 64 GB200 under framework fw, for an
// 8-layer DeepSeek-V3 (latent attention, EP 32) when mla is set and for Llama 3 8B
// otherwise, and returns the estimator's error.
func estimateMLAOrDense(t *testing.T, fw string, mla bool, l step.Layout) error {
	t.Helper()
	a := arch(t, "llama3-8b")
	if mla {
		a = arch(t, "deepseek-v3")
		a.Layers = 8
		l.EP = 32
	}
	_, err := step.New().Estimate(step.Request{Model: a, Cluster: cluster(t, "gb200-nvl72", 16),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 256, Framework: fw, Optimizer: step.AdamMixed()},
		Layout:   l})
	return err
}
