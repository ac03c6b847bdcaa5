package step

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/hardware"
)

// The routed experts take Constants.TEExpertFP8Efficiency only where Transformer
// Engine runs them as per-tensor scaled fp8 GEMMs on Hopper: fp8, a framework of
// Transformer Engine layers, delayed or current scaling. Block-scaled, bf16 and
// non-Transformer-Engine experts, and Blackwell's, keep their rates.
func TestTEExpertFP8EfficiencyWhere(t *testing.T) {
	k := DefaultConstants()
	te := k.TEExpertFP8Efficiency[hardware.Hopper]
	if !(te > 0 && te < k.FP8GEMMEfficiency[hardware.Hopper]) {
		t.Fatalf("TEExpertFP8Efficiency.hopper = %v, want set and under the dense fp8 rate %v", te, k.FP8GEMMEfficiency[hardware.Hopper])
	}
	h8 := catalogRates(t, &k, "H100-SXM", FP8)
	h16 := catalogRates(t, &k, "H100-SXM", BF16)
	b8 := catalogRates(t, &k, "B200", FP8)
	for _, c := range []struct {
		what string
		tr   Training
		r    *gpuRates
		want float64
	}{
		{"NeMo 24.12, delayed scaling, H100", Training{Framework: "nemo-24.12", FP8Recipe: FP8Delayed}, &h8, te},
		{"Megatron-Core, current scaling, H100", Training{Framework: "megatron-core", FP8Recipe: FP8Current}, &h8, te},
		{"Megatron-Core, recipe unstated, H100", Training{Framework: "megatron-core"}, &h8, te},
		{"Megatron-Core, block scaling, H100", Training{Framework: "megatron-core", FP8Recipe: FP8Blockwise}, &h8, h8.gemmEff},
		{"HAI-LLM, block scaling, H800's Hopper", Training{Framework: "hai-llm", FP8Recipe: FP8Blockwise}, &h8, h8.gemmEff},
		{"torchtitan, tensorwise, H100", Training{Framework: "torchtitan", FP8Recipe: FP8Current}, &h8, h8.gemmEff},
		{"NeMo 24.12, bf16, H100", Training{Framework: "nemo-24.12"}, &h16, h16.gemmEff},
		{"NeMo 25.04, delayed scaling, B200", Training{Framework: "nemo-25.04", FP8Recipe: FP8Delayed}, &b8, b8.gemmEff},
	} {
		if got := k.expertRates(&c.tr, c.r).gemmEff; got != c.want {
			t.Errorf("%s: experts at %v of the peak, want %v", c.what, got, c.want)
		}
	}
}
