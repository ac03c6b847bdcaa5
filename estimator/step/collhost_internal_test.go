package step

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/model"
)

// dsv3MoERequest is a DeepSeek-V3 MoE layer as NeMo's DeepSeek-V3 recipes run it
// (the all-to-all dispatcher, experts padded to capacity, shared experts
// overlapped with the dispatch, EP 64 with expert TP 1) at TP tp with sequence
// parallelism under framework fw, on the cluster sys.
func dsv3MoERequest(t *testing.T, fw, sys string, tp int) Request {
	t.Helper()
	a, err := model.Lookup("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := catalog.Cluster(sys, 256/4)
	if err != nil {
		t.Fatal(err)
	}
	return normalise(Request{Model: a, Cluster: cl,
		Training: Training{SeqLen: 4096, GlobalBatch: 2048, Precision: BF16, Framework: fw,
			MoECapacityFactor: 1, MoEPadToCapacity: true, MoEDispatcher: DispatchAllToAll, MoEPermuteFusion: true},
		Layout: Layout{TP: tp, PP: 4, DP: 64 / tp, CP: 1, EP: 64, ETP: 1, ZeRO: 1, MicroBatch: 1, SP: tp > 1,
			OverlapSharedExpert: true, Recompute: RecomputeSelective, RecomputeModules: []string{"core_attn"}}})
}

// The torch.distributed calls of one DeepSeek-V3 MoE layer, read off the code the
// NeMo 25.04 containers run (Megatron-Core 0.12 at 7094270, Transformer Engine
// v2.2) at TP 2 with sequence parallelism:
//
//	forward:  q_down (TEColumnParallelLinear) gathers the input          AG
//	          the query latent gathered over TP                          AG
//	          kv_down gathers the input again                            AG
//	          the key/value latent and rotary key gathered over TP       AG
//	          q_up, kv_up (TELayerNormColumnParallelLinear) gather        AG AG
//	          linear_proj reduce-scatters                                RS
//	          the router's sequence aux loss gathers the scores          AG
//	          the shared experts gather their input, reduce-scatter      AG RS
//	          tokens, probabilities dispatched; output combined          A2A ×3
//	          = 8 AG, 2 RS, 3 all-to-alls: 13 calls
//	backward: q_down, kv_down, q_up, kv_up gather again and RS           AG ×4, RS ×4
//	          the latents' scatter_to_sequence_parallel_region           AG ×2
//	          linear_proj's output gradient gathered                     AG
//	          the router gather's transpose                              RS
//	          the shared experts' transposes                             RS AG
//	          the three all-to-alls                                      A2A ×3
//	          = 8 AG, 6 RS, 3 all-to-alls: 17 calls
//
// Under Megatron-Bridge's recipe on NeMo 25.09 (Megatron-Core 0.14, profile nemo)
// at TP 1 only the three all-to-alls remain each way.
func TestLayerCollectivesMegatronCore012(t *testing.T) {
	req := dsv3MoERequest(t, "nemo-25.04", "gb200-nvl72", 2)
	attn, moe := layerCollectiveCalls(&req, true)
	sum := func(a, b [4]float64) [4]float64 {
		for i := range a {
			a[i] += b[i]
		}
		return a
	}
	fwd, bwd := sum(attn.fwd, moe.fwd), sum(attn.bwd, moe.bwd)
	if want := [4]float64{8, 2, 0, 3}; fwd != want {
		t.Errorf("nemo-25.04, TP 2: forward %v (all-gathers, reduce-scatters, all-reduces, all-to-alls), want %v", fwd, want)
	}
	if want := [4]float64{8, 6, 0, 3}; bwd != want {
		t.Errorf("nemo-25.04, TP 2: backward %v, want %v", bwd, want)
	}
	if moe.fwd[cA2A] != 3 || attn.fwd[cA2A] != 0 {
		t.Errorf("the all-to-alls belong to the MoE block: attention %v, MoE %v", attn.fwd, moe.fwd)
	}
	tp1 := dsv3MoERequest(t, "nemo", "gb200-nvl72", 1)
	attn, moe = layerCollectiveCalls(&tp1, true)
	if (attn != layerColls{}) || moe.fwd != [4]float64{0, 0, 0, 3} || moe.bwd != [4]float64{0, 0, 0, 3} {
		t.Errorf("nemo, TP 1: attention %+v, MoE %+v; want the three all-to-alls each way alone", attn, moe)
	}
	// The dense first layers: the attention block and a dense MLP's column/row pair.
	attn, moe = layerCollectiveCalls(&req, false)
	if attn.fwd != [4]float64{7, 2, 0, 0} || attn.bwd != [4]float64{9, 5, 0, 0} || (moe != layerColls{}) {
		t.Errorf("nemo-25.04 dense layer: %+v / %+v, want forward 7 AG 2 RS, backward 9 AG 5 RS", attn, moe)
	}
}

// Nothing counts where the calls leave the host: CUDA graphs capture a layer whose
// MoE block is padded to capacity, Transformer Engine's userbuffers run the dense
// TP collectives inside the GEMM calls (MLA's own gathers stay), and a framework
// not built of Megatron-Core's layers is not counted here.
func TestLayerCollectivesWhereNotIssued(t *testing.T) {
	req := dsv3MoERequest(t, "nemo-25.04", "gb200-nvl72", 2)
	req.Training.CUDAGraphs = true
	if a, m := layerCollectiveCalls(&req, true); (a != layerColls{}) || (m != layerColls{}) {
		t.Errorf("CUDA graphs, padded experts: %+v / %+v, want none", a, m)
	}
	req.Training.MoEPadToCapacity, req.Training.MoECapacityFactor = false, 0
	if _, m := layerCollectiveCalls(&req, true); m.fwd[cA2A] != 3 {
		t.Errorf("CUDA graphs, dropless: the block after the dispatcher's sync stays eager, want its 3 all-to-alls, got %v", m.fwd)
	}
	ub := dsv3MoERequest(t, "nemo-25.04", "gb200-nvl72", 2)
	ub.Layout.OverlapTP = true
	if a, _ := layerCollectiveCalls(&ub, true); a.fwd != [4]float64{5, 0, 0, 0} {
		t.Errorf("userbuffers TP overlap: attention forward %v, want MLA's 5 gathers alone", a.fwd)
	}
	tt := dsv3MoERequest(t, "torchtitan", "gb200-nvl72", 2)
	if a, m := layerCollectiveCalls(&tt, true); (a != layerColls{}) || (m != layerColls{}) {
		t.Errorf("torchtitan: %+v / %+v, want none counted", a, m)
	}
}

// The calls cost the host 89 µs each on x86 (PyTorch #138773) and Grace's 2.75×
// that on GB200; the layer's forward is never shorter than its host time with
// them. DeepSeek-V3 under nemo-25.04 at TP 2 on GB200: 13 calls forward, 17
// backward, 3.18 and 4.16 ms on Grace.
func TestCollectiveHostOnGrace(t *testing.T) {
	gb := dsv3MoERequest(t, "nemo-25.04", "gb200-nvl72", 2)
	e := New()
	hg := e.layerHost(gb, true)
	fwd, bwd := hg.collFwd+hg.moeCollFwd, hg.collBwd+hg.moeCollBwd
	const x86 = 89e-6
	if want := 13 * x86 * graceHostRatio; math.Abs(fwd-want) > 1e-12 {
		t.Errorf("Grace forward: %.4g s, want 13 × 89 µs × %.2f = %.4g s", fwd, graceHostRatio, want)
	}
	if want := 17 * x86 * graceHostRatio; math.Abs(bwd-want) > 1e-12 {
		t.Errorf("Grace backward: %.4g s, want %.4g s", bwd, want)
	}
	h100 := dsv3MoERequest(t, "nemo-25.04", "dgx-h100", 2)
	hx := e.layerHost(h100, true)
	if r := fwd / (hx.collFwd + hx.moeCollFwd); math.Abs(r-graceHostRatio) > 1e-9 {
		t.Errorf("Grace over x86: %.4f, want %.4f", r, graceHostRatio)
	}
	k := DefaultConstants()
	r := catalogRates(t, &k, "GB200", BF16)
	lt := e.layerCompute(gb, &r, 4096, 4096, 4096, true)
	h := moeHost(gb.Training, gb.Layout, 4, true, hg)
	if host := hg.layer + hg.collFwd + h.pre + h.post; lt.fwd < host*(1-1e-12) {
		t.Errorf("layer forward %.4g s, shorter than its host time %.4g s", lt.fwd, host)
	}
}

// The host's count and the priced collectives agree on MLA's own forward
// all-gathers (mlaTPCollectives, whose backward list leaves out Transformer
// Engine's regathers for the weight gradients, overlapped with the data-gradient
// GEMMs): column down-projections 5 beyond a dense layer's one, duplicated 3 in
// place of it.
func TestLayerCollectivesMatchMLAPricing(t *testing.T) {
	for _, c := range []struct {
		fw        string
		extraHost float64 // the host count's forward all-gathers beyond a dense attention block's
	}{{"nemo-25.04", 5}, {"nemo", 2}} {
		req := dsv3MoERequest(t, c.fw, "gb200-nvl72", 2)
		d := mlaTPCollectives(&req, 16)
		var fwdAG float64
		for _, x := range d.add {
			if x.op == collective.AllGather && x.calls == 1 && !strings.Contains(x.what, "backward") {
				fwdAG++
			}
		}
		fwdAG -= d.dropAG
		attn, _ := layerCollectiveCalls(&req, true)
		if got := attn.fwd[cAG] - 1; got != c.extraHost || fwdAG != c.extraHost {
			t.Errorf("%s: forward all-gathers beyond a dense layer's: host %v, priced %v, want %v", c.fw, got, fwdAG, c.extraHost)
		}
	}
}
