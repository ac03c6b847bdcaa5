package step_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// fieldOf is the field err names, "" for no error.
func fieldOf(err error) string {
	var fe *invalid.Error
	if errors.As(err, &fe) {
		return fe.Field
	}
	if err != nil {
		return "not a field error: " + err.Error()
	}
	return ""
}

// One rule for the batch's range: CheckBatchBounds (on a request's int64 values,
// before they are narrowed to int) and Validate refuse a batch over MaxBatch in the
// same words, and accept the bound itself.
func TestBatchBoundsAreValidates(t *testing.T) {
	for _, c := range []struct {
		batch, tokens int64
		field         string // "" for accepted
	}{
		{0, 0, ""}, // the batch given by the tokens, or refused by Validate
		{1, 0, ""},
		{step.MaxBatch, 0, ""},
		{step.MaxBatch + 1, 0, "training.global_batch"},
		{-1, 0, "training.global_batch"},
		{math.MaxInt64, 0, "training.global_batch"},
		{math.MinInt64, 0, "training.global_batch"},
		{0, step.MaxGlobalTokens, ""},
		{0, step.MaxGlobalTokens + 1, "training.global_tokens"},
		{0, -8192, "training.global_tokens"},
		{0, math.MaxInt64, "training.global_tokens"},
	} {
		err := step.CheckBatchBounds(c.batch, c.tokens)
		if got := fieldOf(err); got != c.field {
			t.Errorf("batch %d, tokens %d: %v, want a violation of %q", c.batch, c.tokens, err, c.field)
		}
	}
	// Where both apply, Validate draws the line at the same batch, in the same words.
	for _, b := range []int64{step.MaxBatch, step.MaxBatch + 1, -1} {
		bounds := step.CheckBatchBounds(b, 0)
		v := step.Training{SeqLen: 4096, GlobalBatch: int(b)}.Validate()
		if (bounds == nil) != (v == nil) || bounds != nil && v.Error() != bounds.Error() {
			t.Errorf("batch %d: CheckBatchBounds %v, Validate %v", b, bounds, v)
		}
	}
	// The tokens' bound is MaxBatch sequences of MaxSeqLen: Validate takes it.
	if err := (step.Training{SeqLen: step.MaxSeqLen, GlobalTokens: step.MaxGlobalTokens}).Validate(); err != nil {
		t.Errorf("MaxGlobalTokens of MaxSeqLen sequences: %v", err)
	}
}

// An unknown recompute module is refused with the list of the modules the
// estimator takes, drawn from its table (RecomputeModuleNames, which the service's
// count check uses too): Megatron-Core's --recompute-modules choices.
func TestUnknownRecomputeModuleListsTheTable(t *testing.T) {
	r := step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1), Training: step.Training{SeqLen: 4096, GlobalBatch: 8},
		Layout: step.Layout{DP: 8, MicroBatch: 1, Recompute: step.RecomputeSelective, RecomputeModules: []string{"attention"}}}
	_, err := step.New().Estimate(r)
	const want = `layout.recompute_modules[0]: must be core_attn, layernorm, mla_up_proj, moe_act, mlp, shared_experts or moe (got "attention")`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
	if got := strings.Join(step.RecomputeModuleNames(), " "); got != "core_attn layernorm mla_up_proj moe_act mlp shared_experts moe" {
		t.Errorf("modules %s", got)
	}
}
