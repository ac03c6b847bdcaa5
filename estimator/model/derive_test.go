package model_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
)

func TestFromParamsKnownShapes(t *testing.T) {
	tests := []struct {
		params         float64
		layers, hidden int
	}{
		{175e9, 96, 12288}, // GPT-3 175B
		{13e9, 40, 5120},   // GPT-3 13B / Llama 13B widths
		{7e9, 34, 4096},    // Llama 7B width (32 layers hold 6.7B)
		{3.5e8, 24, 1024},  // GPT-3 Medium
		{70e9, 68, 9216},
	}
	for _, tt := range tests {
		a, why, err := model.FromParams(tt.params)
		if err != nil {
			t.Fatal(err)
		}
		if a.Layers != tt.layers || a.Hidden != tt.hidden {
			t.Errorf("FromParams(%g) = %d × %d, want %d × %d (%s)", tt.params, a.Layers, a.Hidden, tt.layers, tt.hidden, why)
		}
		if !strings.HasPrefix(why, "derived a standard dense shape") || !strings.Contains(why, "hidden ≈ 128·layers") {
			t.Errorf("explanation %q", why)
		}
	}
}

func TestFromParamsHitsTheCount(t *testing.T) {
	for e := 7.0; e < 14; e += 0.0125 {
		n := math.Pow(10, e)
		a, why, err := model.FromParams(n)
		if err != nil {
			t.Fatalf("FromParams(%g): %v", n, err)
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("FromParams(%g) is invalid: %v", n, err)
		}
		if r := relErr(a.Params().Total, n); r > 0.02 {
			t.Errorf("FromParams(%g) has %.4g parameters (%.2f %% off): %s", n, a.Params().Total, 100*r, why)
		}
		if a.HeadDim() != 128 || a.KVHeads != a.Heads || a.FFN != 4*a.Hidden || a.GatedMLP || !a.TiedEmbeddings ||
			a.Vocab != 51200 || a.MoE != nil || a.Name == "" || a.Source == "" {
			t.Errorf("FromParams(%g) is not the documented standard shape: %+v", n, a)
		}
		if n >= 30e9 && a.Heads%8 != 0 {
			t.Errorf("FromParams(%g): %d heads do not suit TP 8", n, a.Heads)
		}
	}
}

func TestFromParamsRejects(t *testing.T) {
	for _, n := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 0, 1e6, 9.99e6, 1e14, 1e20} {
		_, _, err := model.FromParams(n)
		if !invalid.Is(err) || !slices.Equal(fields(err), []string{"params"}) {
			t.Errorf("FromParams(%g) error = %v, want an invalid field \"params\"", n, err)
		}
	}
}
