package step

import (
	"math"
	"testing"
)

// scoutRequest is Llama 4 Scout as torchao's MXFP8 case study trains it under
// torchtitan (FSDP 256, EP 16, TP tp, local batch 1 × 8192) on GB200.
func scoutRequest(t *testing.T, fw string, tp int) Request {
	t.Helper()
	a, cl := catalogPair(t, "llama4-scout", "gb200-nvl72", 64)
	return normalise(Request{Model: a, Cluster: cl,
		Training: Training{SeqLen: 8192, GlobalBatch: 256 / tp, Precision: BF16, Framework: fw},
		Layout:   Layout{TP: tp, PP: 1, DP: 256 / tp, CP: 1, EP: 16, ETP: 1, ZeRO: 3, MicroBatch: 1, SP: tp > 1}})
}

// The collectives of one Llama 4 Scout MoE layer under torchtitan, read off its
// code (parallelize_llama4's fully_shard of the block and of moe.experts over
// dp_mod_ep; the Llama TP plan; expert_parallel.py's dispatch and combine):
//
//	forward:  FSDP2 gathers the block and the routed experts       AG AG      (c10d)
//	          TP 2: attention and MLP inputs gathered, outputs RS   fAG fRS ×2 (funcol)
//	          token counts, tokens dispatched, output combined      fA2A ×3
//	backward: FSDP2 gathers again, reduce-scatters the gradients   AG AG RS RS
//	          TP's transposes                                      fRS fAG ×2
//	          the tokens' two all-to-alls                          fA2A ×2
func TestDTensorCollectivesTorchtitan(t *testing.T) {
	req := scoutRequest(t, "torchtitan-2025-11", 2)
	attn, moe := dtensorCollectiveCalls(&req, true)
	if attn.fwd != [4]float64{1, 0, 0, 0} || attn.bwd != [4]float64{1, 1, 0, 0} {
		t.Errorf("block FSDP2: fwd %v bwd %v, want one gather forward, gather and reduce-scatter backward", attn.fwd, attn.bwd)
	}
	if moe.fwd != [4]float64{1, 0, 0, 0} || moe.bwd != [4]float64{1, 1, 0, 0} {
		t.Errorf("experts' FSDP2: fwd %v bwd %v", moe.fwd, moe.bwd)
	}
	if attn.funFwd != [4]float64{1, 1, 0, 0} || attn.funBwd != [4]float64{1, 1, 0, 0} {
		t.Errorf("attention TP: fwd %v bwd %v, want a gather and a reduce-scatter each way", attn.funFwd, attn.funBwd)
	}
	if moe.funFwd != [4]float64{1, 1, 0, 3} || moe.funBwd != [4]float64{1, 1, 0, 2} {
		t.Errorf("MoE block: fwd %v bwd %v, want TP's pair and 3 all-to-alls forward, 2 backward", moe.funFwd, moe.funBwd)
	}
	// Async TP fuses the TP collectives into symmetric-memory matmuls.
	async := req
	async.Layout.OverlapTP = true
	if a, _ := dtensorCollectiveCalls(&async, true); a.funFwd != ([4]float64{}) {
		t.Errorf("async TP: %v, want no functional collectives", a.funFwd)
	}
	// Priced on Grace: 2 c10d gathers (89 µs) and 2 gathers, 2 reduce-scatters
	// and 3 all-to-alls through funcol (205, 164, 149 µs) forward, × 2.75.
	e := New()
	hc := e.layerHost(req, true)
	want := graceHostRatio * 1e-6 * (2*89 + 2*205 + 2*164 + 3*149)
	if got := hc.collFwd + hc.moeCollFwd; math.Abs(got-want) > 1e-12 {
		t.Errorf("forward host %.4g s, want %.4g s", got, want)
	}
	// Megatron-Core's profiles keep their own count.
	nemo := scoutRequest(t, "nemo", 2)
	if a, _ := layerCollectiveCalls(&nemo, true); a.funFwd != ([4]float64{}) {
		t.Errorf("nemo: functional collectives %v", a.funFwd)
	}
}

// Under torchtitan's layout of Llama 4 Scout (TP 1) the layer's host time,
// collectives included, stays below its GPU time on Grace: not host-bound.
func TestScoutNotHostBound(t *testing.T) {
	req := scoutRequest(t, "torchtitan-2025-11", 1)
	e := New()
	hc := e.layerHost(req, true)
	k := DefaultConstants()
	r := catalogRates(t, &k, "GB200", BF16)
	lt := e.layerCompute(req, &r, 8192, 8192, 8192, true)
	t.Logf("Scout layer: GPU-bound fwd %.3g ms bwd %.3g ms; host layer %.3g ms, colls fwd %.3g ms bwd %.3g ms",
		1e3*lt.fwd, 1e3*lt.bwd, 1e3*hc.layer, 1e3*(hc.collFwd+hc.moeCollFwd), 1e3*(hc.collBwd+hc.moeCollBwd))
	if host := hc.layer + hc.collFwd + hc.moeCollFwd; host >= lt.fwd {
		t.Errorf("host %.4g s ≥ layer forward %.4g s", host, lt.fwd)
	}
}
