package model_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
)

// fields lists the Field of every *invalid.Error in err (errors.Join trees included).
func fields(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		var ie *invalid.Error
		switch x := e.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, c := range x.Unwrap() {
				walk(c)
			}
		default:
			if errors.As(e, &ie) {
				out = append(out, ie.Field)
			}
		}
	}
	walk(err)
	return out
}

func llamaLike() model.Arch {
	return model.Arch{Name: "t", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, FFN: 14336,
		GatedMLP: true, Vocab: 32000}
}

func withMoE(m model.MoE) model.Arch {
	a := llamaLike()
	a.MoE = &m
	return a
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		arch model.Arch
		want []string // fields in error, nil if valid
	}{
		{"valid", llamaLike(), nil},
		{"kv heads default", func() model.Arch { a := llamaLike(); a.KVHeads = 0; return a }(), nil},
		{"valid moe", withMoE(model.MoE{Experts: 8, TopK: 2, ExpertFFN: 14336, Frequency: 1}), nil},
		{"moe defaults", withMoE(model.MoE{Experts: 8, TopK: 2}), nil},
		{"moe every other layer", withMoE(model.MoE{Experts: 64, TopK: 8, Frequency: 2}), nil},
		{"zero value", model.Arch{}, []string{"layers", "hidden", "heads", "ffn", "vocab"}},
		{"negative layers", func() model.Arch { a := llamaLike(); a.Layers = -1; return a }(), []string{"layers"}},
		{"too many layers", func() model.Arch { a := llamaLike(); a.Layers = 10_001; return a }(), []string{"layers"}},
		{"hidden too large", func() model.Arch { a := llamaLike(); a.Hidden = 1<<21 + 0; a.Heads = 32; return a }(), []string{"hidden"}},
		{"heads do not divide hidden", func() model.Arch { a := llamaLike(); a.Heads = 30; a.KVHeads = 0; return a }(), []string{"heads"}},
		{"kv heads above heads", func() model.Arch { a := llamaLike(); a.KVHeads = 64; return a }(), []string{"kv_heads"}},
		{"kv heads not dividing", func() model.Arch { a := llamaLike(); a.KVHeads = 6; return a }(), []string{"kv_heads"}},
		{"kv heads negative", func() model.Arch { a := llamaLike(); a.KVHeads = -8; return a }(), []string{"kv_heads"}},
		{"ffn zero", func() model.Arch { a := llamaLike(); a.FFN = 0; return a }(), []string{"ffn"}},
		{"ffn too large", func() model.Arch { a := llamaLike(); a.FFN = 1 << 25; return a }(), []string{"ffn"}},
		{"vocab too large", func() model.Arch { a := llamaLike(); a.Vocab = 10_000_001; return a }(), []string{"vocab"}},
		{"one expert", withMoE(model.MoE{Experts: 1, TopK: 1}), []string{"moe.experts"}},
		{"too many experts", withMoE(model.MoE{Experts: 1 << 17, TopK: 2}), []string{"moe.experts"}},
		{"top k above experts", withMoE(model.MoE{Experts: 8, TopK: 9}), []string{"moe.top_k"}},
		{"top k zero", withMoE(model.MoE{Experts: 8, TopK: 0}), []string{"moe.top_k"}},
		{"expert ffn negative", withMoE(model.MoE{Experts: 8, TopK: 2, ExpertFFN: -1}), []string{"moe.expert_ffn"}},
		{"frequency negative", withMoE(model.MoE{Experts: 8, TopK: 2, Frequency: -1}), []string{"moe.frequency"}},
		{"frequency above layers", withMoE(model.MoE{Experts: 8, TopK: 2, Frequency: 33}), []string{"moe.frequency"}},
		// Past the layers no layer is the n-th: the window applies to all, as if
		// global_every were not given.
		{"global every layer", func() model.Arch { a := llamaLike(); a.SlidingWindow, a.GlobalEvery = 4096, 32; return a }(), nil},
		{"global every past the layers", func() model.Arch { a := llamaLike(); a.SlidingWindow, a.GlobalEvery = 4096, 33; return a }(), []string{"global_every"}},
		{"several at once", model.Arch{Layers: 2, Hidden: 100, Heads: 3, KVHeads: 2, FFN: 1, Vocab: 0},
			[]string{"heads", "kv_heads", "vocab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.arch.Validate()
			if got := fields(err); !slices.Equal(got, tt.want) {
				t.Fatalf("Validate() fields = %v, want %v (err: %v)", got, tt.want, err)
			}
			if err != nil && !invalid.Is(err) {
				t.Errorf("error is not an *invalid.Error: %v", err)
			}
		})
	}
}

func TestValidateAtPrefixesFieldsAndStatesRule(t *testing.T) {
	a := llamaLike()
	a.KVHeads = 6
	err := a.ValidateAt("model.")
	if got := fields(err); !slices.Equal(got, []string{"model.kv_heads"}) {
		t.Fatalf("fields = %v", got)
	}
	if msg := err.Error(); !strings.Contains(msg, "must divide heads (32)") || !strings.Contains(msg, "got 6") {
		t.Errorf("rule does not say what is wrong: %q", msg)
	}
}

func TestNormalise(t *testing.T) {
	a := llamaLike()
	a.KVHeads = 0
	a.MoE = &model.MoE{Experts: 8, TopK: 2}
	n := a.Normalise()
	if n.KVHeads != 32 || n.MoE.ExpertFFN != 14336 || n.MoE.Frequency != 1 {
		t.Fatalf("Normalise() = %+v, moe %+v", n, *n.MoE)
	}
	if a.MoE.ExpertFFN != 0 || a.MoE.Frequency != 0 || a.KVHeads != 0 {
		t.Error("Normalise modified its receiver")
	}
	if n.MoE == a.MoE {
		t.Error("Normalise shares the MoE block")
	}
	// Defaults change nothing computed.
	if a.Params() != n.Params() || a.LayerFLOPs(3, 4096) != n.LayerFLOPs(3, 4096) {
		t.Error("zero defaults and normalised values disagree")
	}
	// Idempotent.
	if nn := n.Normalise(); nn.KVHeads != n.KVHeads || *nn.MoE != *n.MoE {
		t.Error("Normalise is not idempotent")
	}
}

func TestMoELayerPattern(t *testing.T) {
	tests := []struct {
		layers, freq int
		want         []int // MoE layer indices
	}{
		{4, 1, []int{0, 1, 2, 3}},
		{6, 2, []int{1, 3, 5}},
		{7, 2, []int{1, 3, 5}},
		{8, 4, []int{3, 7}},
		{5, 5, []int{4}},
	}
	for _, tt := range tests {
		a := withMoE(model.MoE{Experts: 8, TopK: 2, Frequency: tt.freq})
		a.Layers = tt.layers
		var got []int
		for i := -1; i <= tt.layers; i++ {
			if a.IsMoELayer(i) {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, tt.want) || a.MoELayers() != len(tt.want) || a.DenseLayers() != tt.layers-len(tt.want) {
			t.Errorf("layers %d freq %d: MoE layers %v (count %d, dense %d), want %v",
				tt.layers, tt.freq, got, a.MoELayers(), a.DenseLayers(), tt.want)
		}
	}
	if d := llamaLike(); d.IsMoELayer(0) || d.MoELayers() != 0 || d.DenseLayers() != 32 {
		t.Error("dense model has MoE layers")
	}
}
