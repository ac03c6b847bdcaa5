package step

import (
	"fmt"
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/model"
)

// syncGrid is a small grid of MoE layers whose dispatcher waits for the GPU
// (moeHost's sync): Qwen3-30B-A3B and DeepSeek-V3 in fp8 on DGX H100 (x86) and
// GB200 (Grace: 2.75× the host time per operator), under NeMo 25.04 (Megatron-Core
// 0.12, whose TEGroupedMLP pads the experts' fp8 input) and Megatron-Core, at 1K
// to 16K tokens a micro-batch: host-bound layers at the short end, GPU-bound at
// the long end.
func syncGrid(t *testing.T, each func(name string, req Request, r *gpuRates, tokens float64)) {
	t.Helper()
	k := DefaultConstants()
	for _, sys := range []struct{ name, gpu string }{{"dgx-h100", "H100"}, {"gb200-nvl72", "GB200"}} {
		cl, err := catalog.Cluster(sys.name, 2)
		if err != nil {
			t.Fatal(err)
		}
		r := catalogRates(t, &k, sys.gpu, FP8)
		for _, m := range []string{"qwen3-30b-a3b", "deepseek-v3"} {
			a, err := model.Lookup(m)
			if err != nil {
				t.Fatal(err)
			}
			for _, fw := range []string{"nemo-25.04", "megatron-core"} {
				for _, seq := range []int{1024, 4096, 16384} {
					req := normalise(Request{Model: a, Cluster: cl,
						Training: Training{SeqLen: seq, GlobalBatch: 64, Precision: FP8, Framework: fw, MoEPermuteFusion: true},
						Layout:   Layout{TP: 1, PP: 1, DP: 8, CP: 1, EP: 8, ZeRO: 1, MicroBatch: 1, Recompute: RecomputeNone}})
					each(fmt.Sprintf("%s/%s/%s/%d", sys.name, m, fw, seq), req, &r, float64(seq))
				}
			}
		}
	}
}

// hostBound reports whether a synced MoE layer's forward is paced by its host:
// the stall and everything the host issues (layerHost, moeHost).
func hostBound(e *Estimator, req Request, lt layerTimes) bool {
	hc := e.layerHost(req, true)
	local := float64(req.Model.MoE.Experts / max(1, req.Layout.EP))
	h := moeHost(req.Training, req.Layout, local, true, hc)
	host := h.stall + hc.layer + hc.collFwd + hc.attnFwd + h.pre + h.post
	return math.Abs(lt.fwd-host) <= 1e-9*host
}

// Work the GPU does after the dispatcher's sync — the experts' GEMMs, Transformer
// Engine's fp8 padding of their input — never makes an MoE layer's forward
// faster: whether the layer waits for its host or its host for the GPU, more GPU
// work can only keep or lengthen it. Checked on syncGrid with the experts' fp8
// padding (Training.MoEGroupedGEMM under NeMo 25.04) added and with the experts
// 1.5× and 2× as wide (more grouped-GEMM work after the sync, nothing else
// changed), on host-bound and GPU-bound layers alike.
func TestMoESyncPostWorkNeverFaster(t *testing.T) {
	e := New()
	var hostSide, gpuSide int
	syncGrid(t, func(name string, req Request, r *gpuRates, tokens float64) {
		base := e.layerCompute(req, r, tokens, tokens, tokens, true)
		if h := moeHost(req.Training, req.Layout, 32, true, e.layerHost(req, true)); !h.sync {
			t.Fatalf("%s: want a dispatcher that syncs", name)
		}
		if hostBound(e, req, base) {
			hostSide++
		} else {
			gpuSide++
		}
		pad := req
		pad.Training.MoEGroupedGEMM = true
		if p := e.layerCompute(pad, r, tokens, tokens, tokens, true); p.fwd < base.fwd {
			t.Errorf("%s: the experts' fp8 padding (%.1f µs of GPU work after the sync) takes the forward from %.1f to %.1f µs",
				name, 1e6*p.expertPadFwd, 1e6*base.fwd, 1e6*p.fwd)
		}
		prev := base.fwd
		for _, x := range []float64{1.5, 2} {
			wide := req
			m := *req.Model.MoE
			m.ExpertFFN = int(x * float64(max(m.ExpertFFN, req.Model.FFN)))
			wide.Model.MoE = &m
			w := e.layerCompute(wide, r, tokens, tokens, tokens, true)
			if w.fwd < prev {
				t.Errorf("%s: experts %.1f× as wide take the forward from %.1f to %.1f µs", name, x, 1e6*prev, 1e6*w.fwd)
			}
			prev = w.fwd
		}
	})
	if hostSide == 0 || gpuSide == 0 {
		t.Errorf("the grid has %d host-bound and %d GPU-bound synced layers, want both", hostSide, gpuSide)
	}
}

// A layer whose GPU outlasts its host on both sides of the sync — the whole
// layer's GPU time at least its host time, and the work after the sync at least
// the host's time to issue it — pays the stall alone, as it was priced before
// the host's two sides were ordered: fwd + stall. Checked over a grid of such
// layers (µs); TestMoEHostSync and TestDeepEPHostSyncs check whole layers.
func TestMoESyncGPUBoundUnchanged(t *testing.T) {
	for _, fwd := range []float64{400, 1000, 5000} {
		for _, gpuPost := range []float64{0.3, 0.6, 0.9} {
			for _, hostPost := range []float64{0.1, 0.5, 1} {
				for _, hostPre := range []float64{0.05, 0.3, 0.6} {
					post, hp, hq := gpuPost*fwd, hostPost*gpuPost*fwd, hostPre*fwd
					if hp+hq > fwd {
						continue
					}
					const stall = 14
					if got := syncedForward(fwd, post, stall, hq, hp); math.Abs(got-(fwd+stall)) > 1e-9*fwd {
						t.Errorf("GPU %.0f µs (%.0f after the sync), host %.0f + %.0f µs: %.3f µs, want %.0f",
							fwd, post, hq, hp, got, fwd+stall)
					}
				}
			}
		}
	}
}
