package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/stepcost/stepcost/estimator/invalid"
)

// The standard dense shape of FromParams: a GPT-3 / Megatron GPT layer (multi-head
// attention with heads of 128, non-gated MLP of 4·hidden), the 51200-token padded
// GPT-2 vocabulary and tied embeddings — the family of Narayanan et al. 2021, whose
// FLOP formula then applies exactly.
const (
	derivedVocab   = 51200
	derivedHeadDim = 128
	// derivedAspect is hidden/layers: 128 for GPT-3 175B (12288/96), GPT-3 6.7B and
	// Llama 7B (4096/32) and GPT-3 13B (5140/40).
	derivedAspect = 128
	// derivedTolerance is how close to the requested count the shape must land.
	derivedTolerance = 0.02

	// MinDerivedParams and MaxDerivedParams bound FromParams. Below 1e7 the
	// 51200×128 embedding of the narrowest shape (6.6M) leaves no room for layers.
	MinDerivedParams = 1e7
	MaxDerivedParams = 1e14
)

// FromParams derives a standard dense architecture with about params parameters
// (embeddings included), for a caller that knows only the size of the model.
//
// The rule: the hidden size h* solves params = L·12h² + 51200·h with the GPT-3 aspect
// ratio L = h/128; h is h* rounded to a multiple of 1024 (512 below h* = 4096, 256
// below 2048, 128 below 1024, so that the head count suits tensor parallelism), and
// the layer count is then solved for params with that h. If that misses params by
// more than 2 % (possible for small models, where one layer is a large fraction),
// the next multiples of the same step by distance from h*, then the other multiples
// of 128, within a factor 1.5 of h*, are tried in turn. Heads are h/128 (multi-head
// attention), the MLP non-gated with FFN = 4h, the vocabulary 51200, embeddings tied.
// This gives 96 × 12288 for 175e9 (GPT-3), 40 × 5120 for 13e9 and 34 × 4096 for 7e9.
//
// It returns the Arch, a one-line explanation of the derivation for the caller to
// report, and an *invalid.Error for field "params" unless MinDerivedParams ≤ params
// < MaxDerivedParams.
func FromParams(params float64) (Arch, string, error) {
	if math.IsNaN(params) || params < MinDerivedParams || params >= MaxDerivedParams {
		return Arch{}, "", invalid.Field("params",
			"must be a finite number of parameters from %g up to %g to derive a standard shape (got %g)",
			MinDerivedParams, MaxDerivedParams, params)
	}
	hStar := aspectHidden(params)
	best, bestErr := 0, math.Inf(1)
	layersOf := map[int]int{}
	for _, h := range hiddenCandidates(hStar) {
		l := derivedLayers(params, h)
		if l < 1 || l > MaxLayers {
			continue
		}
		layersOf[h] = l
		e := math.Abs(derivedParams(h, l)/params - 1)
		if e <= derivedTolerance {
			best, bestErr = h, e
			break
		}
		if e < bestErr {
			best, bestErr = h, e
		}
	}
	h, l := best, layersOf[best]
	a := Arch{
		Name: "derived-" + countName(params), Layers: l, Hidden: h,
		Heads: h / derivedHeadDim, KVHeads: h / derivedHeadDim, FFN: 4 * h,
		Vocab: derivedVocab, TiedEmbeddings: true,
	}
	got := a.Params().Total
	step := roundingStep(hStar)
	if h%step != 0 {
		step = derivedHeadDim
	}
	why := fmt.Sprintf("derived a standard dense shape for %.4g parameters: %d layers × hidden %d, "+
		"%d heads of %d (MHA), non-gated MLP with ffn %d (4·hidden), vocab %d, tied embeddings — "+
		"%.4g parameters (%+.1f %%); rule: the GPT-3 aspect ratio hidden ≈ %d·layers gives "+
		"hidden ≈ %.0f, taken as a multiple of %d, then the layer count solved for the parameter count",
		params, l, h, a.Heads, derivedHeadDim, a.FFN, derivedVocab, got, 100*(got/params-1),
		derivedAspect, hStar, step)
	a.Source = "model.FromParams: " + why
	return a, why, nil
}

// derivedParams is the parameter count of the standard shape (see Arch.Params).
func derivedParams(h, l int) float64 {
	hf := float64(h)
	return float64(l)*(12*hf*hf+2*hf) + derivedVocab*hf + hf
}

// derivedLayers is the layer count that brings the standard shape of hidden h
// closest to params.
func derivedLayers(params float64, h int) int {
	hf := float64(h)
	return int(math.Round((params - derivedVocab*hf - hf) / (12*hf*hf + 2*hf)))
}

// aspectHidden solves derivedParams(h, h/derivedAspect) = params for a real h by
// bisection (the function is increasing in h).
func aspectHidden(params float64) float64 {
	f := func(h float64) float64 { return h/derivedAspect*(12*h*h+2*h) + derivedVocab*h + h }
	lo, hi := 1.0, float64(MaxHidden)
	for range 100 {
		mid := (lo + hi) / 2
		if f(mid) < params {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// roundingStep is the multiple hidden is rounded to: 1024 from h* = 4096 up (heads a
// multiple of 8, so that tensor parallelism up to 8 divides them), 512 from 2048, 256
// from 1024, 128 below.
func roundingStep(hStar float64) int {
	switch {
	case hStar >= 4096:
		return 1024
	case hStar >= 2048:
		return 512
	case hStar >= 1024:
		return 256
	}
	return derivedHeadDim
}

// hiddenCandidates lists the hidden sizes to try, best first: the multiples of the
// rounding step, then the other multiples of 128, each group within a factor 1.5 of
// h* and ordered by distance from h*.
func hiddenCandidates(hStar float64) []int {
	step := roundingStep(hStar)
	lo := max(1, int(math.Floor(hStar/1.5/derivedHeadDim)))
	hi := max(lo, int(math.Ceil(hStar*1.5/derivedHeadDim)))
	var out []int
	for m := lo; m <= hi && m*derivedHeadDim <= MaxHidden; m++ {
		out = append(out, m*derivedHeadDim)
	}
	slices.SortStableFunc(out, func(a, b int) int {
		if (a%step == 0) != (b%step == 0) {
			if a%step == 0 {
				return -1
			}
			return 1
		}
		return cmp.Compare(math.Abs(float64(a)-hStar), math.Abs(float64(b)-hStar))
	})
	return out
}

// countName writes a parameter count the way model names do: 1.3b, 175b, 125m, 1t.
func countName(n float64) string {
	unit, div := "m", 1e6
	switch {
	case n >= 1e12:
		unit, div = "t", 1e12
	case n >= 1e9:
		unit, div = "b", 1e9
	}
	return strconv.FormatFloat(n/div, 'g', 3, 64) + unit
}
