package framework_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/framework"
)

// Every profile says what it stands for and where its settings come from, and
// every alias finds it.
func TestProfiles(t *testing.T) {
	for _, p := range framework.All() {
		if p.Description == "" || p.Source == "" {
			t.Errorf("%s: description %q, source %q", p.Name, p.Description, p.Source)
		}
		for _, a := range append([]string{p.Name, strings.ToUpper(p.Name)}, p.Aliases...) {
			if got, err := framework.Lookup(a); err != nil || got.Name != p.Name {
				t.Errorf("Lookup(%q) = %q, %v; want %s", a, got.Name, err, p.Name)
			}
		}
	}
	if _, err := framework.Lookup("hai-llm-2"); err == nil || !strings.Contains(err.Error(), "hai-llm") {
		t.Errorf("unknown framework: %v (should list the known ones)", err)
	}
	// DeepSeek's framework as the V3 report describes it.
	p, err := framework.Lookup("deepseek")
	if err != nil || p.Name != "hai-llm" || !p.DedupDispatch || !p.FP8Dispatch || !p.FusedPermute || !p.FP8Activations || p.CommSMs != 20 {
		t.Errorf("deepseek: %+v, %v", p, err)
	}
	// TP overlap: Transformer Engine's userbuffers under Megatron-Core and NeMo, NeMo's
	// fp8 configurations with fp8 pipelined reduce-scatters; PyTorch's async TP
	// under torchtitan.
	for name, want := range map[string][2]bool{
		"megatron-core": {true, false}, "nemo": {true, true}, "nemo-25.04": {true, true}, "torchtitan": {false, false},
	} {
		p, err := framework.Lookup(name)
		if err != nil || p.TPUserbuffers != want[0] || p.TPPipelinedRSFP8 != want[1] {
			t.Errorf("%s: userbuffers %v, fp8 pipelined reduce-scatters %v, want %v (%v)", name, p.TPUserbuffers, p.TPPipelinedRSFP8, want, err)
		}
	}
	if d, _ := framework.Lookup(""); d.Name != framework.Default || d.DedupDispatch || d.FusedPermute {
		t.Errorf("default profile %+v: Megatron-Core's all-to-all dispatcher, permutation not fused", d)
	}
}

// Get answers as Lookup does, sharing the profile instead of copying it; an
// unknown name gets Lookup's empty profile with the error.
func TestGetIsLookupShared(t *testing.T) {
	for _, p := range framework.All() {
		for _, name := range append([]string{"", p.Name, " " + strings.ToUpper(p.Name)}, p.Aliases...) {
			got, err := framework.Get(name)
			want, wantErr := framework.Lookup(name)
			if err != nil || wantErr != nil || !reflect.DeepEqual(*got, want) {
				t.Errorf("Get(%q) = %s, %v; Lookup %s, %v", name, got.Name, err, want.Name, wantErr)
			}
			if again, _ := framework.Get(name); again != got {
				t.Errorf("Get(%q) twice: two profiles (should share one)", name)
			}
		}
	}
	got, err := framework.Get("hai-llm-2")
	if _, wantErr := framework.Lookup("hai-llm-2"); err == nil || err.Error() != wantErr.Error() || !reflect.DeepEqual(*got, framework.Profile{}) {
		t.Errorf("unknown framework: %+v, %v; want the empty profile and Lookup's error %v", got, err, wantErr)
	}
}

// torchtitan-0.1 is torchtitan with one difference: on Blackwell its per-op SAC
// runs the attention again (cuDNN's, which its op save list left out until PR
// #2095); the current profile saves it.
func TestTorchtitanMid2025(t *testing.T) {
	now, err := framework.Lookup("torchtitan")
	if err != nil {
		t.Fatal(err)
	}
	mid, err := framework.Lookup("torchtitan-0.1")
	if err != nil {
		t.Fatal(err)
	}
	if now.OpSACRecomputesBlackwellAttention || !mid.OpSACRecomputesBlackwellAttention {
		t.Errorf("OpSACRecomputesBlackwellAttention: torchtitan %v, torchtitan-0.1 %v; want false, true",
			now.OpSACRecomputesBlackwellAttention, mid.OpSACRecomputesBlackwellAttention)
	}
	// torchao's mx_formats README of 2025-04-01 to 2025-10-19: dim0 cast up to
	// 5.5 TB/s, dim1 up to 3.9 TB/s on B200 (8 TB/s).
	// From 2026-01-02 on a 1000 W B200: dim0 6462 GB/s, dim1 (CUDA) 5404 GB/s.
	if now.BlackwellMXCastHBM != [2]float64{6462.0 / 8000, 5404.0 / 8000} || mid.BlackwellMXCastHBM != [2]float64{5.5 / 8, 3.9 / 8} {
		t.Errorf("BlackwellMXCastHBM: torchtitan %v, torchtitan-0.1 %v; want torchao's measured 6.46 / 5.40 and 5.5 / 3.9 of 8 TB/s",
			now.BlackwellMXCastHBM, mid.BlackwellMXCastHBM)
	}
	mid.Name, mid.Aliases, mid.Description, mid.Source = now.Name, now.Aliases, now.Description, now.Source
	mid.OpSACRecomputesBlackwellAttention, mid.BlackwellMXCastHBM = false, now.BlackwellMXCastHBM
	if !reflect.DeepEqual(mid, now) {
		t.Errorf("torchtitan-0.1 differs from torchtitan in more than its attention recomputation and MXFP8 casts:\n%+v\n%+v", mid, now)
	}
}

// torchtitan-2025-11 is torchtitan on the torch 2.10 nightlies of October–November
// 2025: on Blackwell its routed experts' grouped GEMMs run at the efficiency
// torchao measured for torch._grouped_mm then, and its per-op SAC still runs
// cuDNN's attention again (the save list took it on 2025-12-01); nothing else
// differs from the current profile.
func TestTorchtitanLate2025(t *testing.T) {
	now, err := framework.Lookup("torchtitan")
	if err != nil {
		t.Fatal(err)
	}
	late, err := framework.Lookup("torchtitan-2025-11")
	if err != nil {
		t.Fatal(err)
	}
	if now.BlackwellGroupedMMEfficiency != 0 || late.BlackwellGroupedMMEfficiency <= 0 || late.BlackwellGroupedMMEfficiency >= 0.5 {
		t.Errorf("BlackwellGroupedMMEfficiency: torchtitan %v, torchtitan-2025-11 %v; want 0 and torchao's measured 0.33–0.39",
			now.BlackwellGroupedMMEfficiency, late.BlackwellGroupedMMEfficiency)
	}
	if !late.OpSACRecomputesBlackwellAttention {
		t.Error("torchtitan-2025-11: per-op SAC before b39377f9f recomputes cuDNN's attention")
	}
	if now.EagerMoEGlue || !late.EagerMoEGlue {
		t.Errorf("EagerMoEGlue: torchtitan %v, torchtitan-2025-11 %v; want false and true (MoE.forward eager at 35bffe989)",
			now.EagerMoEGlue, late.EagerMoEGlue)
	}
	late.Name, late.Aliases, late.Description, late.Source = now.Name, now.Aliases, now.Description, now.Source
	// torchao's mx_formats README of 2025-10-19 to 2026-01-02: dim0 cast up to
	// 6.3 TB/s, dim1 up to 3.9 TB/s on B200 (8 TB/s).
	if late.BlackwellMXCastHBM != [2]float64{6.3 / 8, 3.9 / 8} {
		t.Errorf("BlackwellMXCastHBM: torchtitan-2025-11 %v; want torchao's measured 6.3 / 3.9 of 8 TB/s", late.BlackwellMXCastHBM)
	}
	late.OpSACRecomputesBlackwellAttention, late.BlackwellGroupedMMEfficiency, late.EagerMoEGlue = false, 0, false
	late.BlackwellMXCastHBM = now.BlackwellMXCastHBM
	if !reflect.DeepEqual(late, now) {
		t.Errorf("torchtitan-2025-11 differs from torchtitan in more than its grouped GEMMs, attention recomputation, eager MoE glue and MXFP8 casts:\n%+v\n%+v", late, now)
	}
}
