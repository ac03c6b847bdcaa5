package step_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// TP comm-GEMM overlap hides what the chunked GEMMs leave room for, not all of it:
// on GPT-3 175B with TP 8 the exposed TP time falls, hidden plus exposed is the
// communication the layout without overlap exposes, and the share hidden grows with
// the micro-batch (longer GEMMs against the same per-token collectives: a chunked
// GEMM hides a collective only when it outlasts it). Transformer Engine's userbuffers
// also move the backward re-gathers of the input projections' inputs (bulk, beside
// their data gradients), which the layout without overlap does not price
// (regathers). Without SP the frameworks do not run it, and estimate says so.
func TestTPOverlapIsPartial(t *testing.T) {
	e := step.New()
	hidden := map[int]float64{}
	for _, mbs := range []int{1, 4} {
		r := gpt3Request(t)
		r.Layout.MicroBatch = mbs
		plain, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		r.Layout.OverlapTP = true
		over, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		tp, exp, hid := plain.Breakdown.Exposed[step.CommTP], over.Breakdown.Exposed[step.CommTP], over.Breakdown.Hidden[step.CommTP]
		rg := regathers(over)
		t.Logf("mbs %d: TP %.3f s without overlap; with it %.3f s exposed, %.3f s hidden (%.3f s of re-gathers); step %.3f → %.3f s", mbs, tp, exp, hid, rg, plain.StepTime, over.StepTime)
		if !(exp > 0 && exp < tp) || !(rg > 0) || math.Abs(exp+hid-tp-rg) > 1e-9*tp {
			t.Errorf("mbs %d: exposed %.4f + hidden %.4f against %.4f without overlap and %.4f of re-gathers", mbs, exp, hid, tp, rg)
		}
		hidden[mbs] = hid / tp
	}
	if !(hidden[4] > hidden[1]) {
		t.Errorf("share hidden: mbs 1 %.3f, mbs 4 %.3f", hidden[1], hidden[4])
	}
	r := gpt3Request(t)
	r.Layout.SP, r.Layout.OverlapTP = false, true
	_, err := e.Estimate(r)
	var fe *invalid.Error
	if !errors.As(err, &fe) || fe.Field != "layout.overlap_tp" {
		t.Errorf("overlap without SP: %v", err)
	}
}

// The search's lower bound of an overlapped layout stays under its estimate
// (dense and MoE, with and without expert TP, recomputation).
func TestTPOverlapBoundHolds(t *testing.T) {
	e := step.New()
	for _, tc := range []struct {
		model string
		l     step.Layout
	}{
		{"gpt3-175b", step.Layout{TP: 8, PP: 8, DP: 16, MicroBatch: 1, SP: true, ZeRO: 1, Recompute: step.RecomputeSelective}},
		{"gpt3-175b", step.Layout{TP: 4, PP: 8, DP: 32, MicroBatch: 2, SP: true, ZeRO: 1, Recompute: step.RecomputeFull}},
		{"gpt3-175b", step.Layout{TP: 2, PP: 16, DP: 32, MicroBatch: 4, SP: true, ZeRO: 2}},
		{"mixtral-8x7b", step.Layout{TP: 4, PP: 4, DP: 64, EP: 8, MicroBatch: 1, SP: true, ZeRO: 1}},
		{"mixtral-8x7b", step.Layout{TP: 4, PP: 4, DP: 64, EP: 8, MicroBatch: 1, SP: true, ZeRO: 1, ETP: 1}},
	} {
		tc.l.OverlapTP = true
		req := step.Request{Model: arch(t, tc.model), Cluster: cluster(t, "dgx-h100", 128),
			Training: step.Training{SeqLen: 2048, GlobalBatch: 1024}, Layout: tc.l}
		res, err := e.Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		b, ok := e.LowerBounds(req)
		if !ok || b.StepTime > res.StepTime {
			t.Errorf("%s %+v: bound %.4f s, estimate %.4f s", tc.model, tc.l, b.StepTime, res.StepTime)
		}
	}
}

// The all-to-all overlap runs where Megatron-Core runs it, and estimate names the
// field otherwise.
func TestEPOverlapRules(t *testing.T) {
	e := step.New()
	base := step.Request{Model: arch(t, "mixtral-8x7b"), Cluster: cluster(t, "dgx-h100", 8),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 128},
		Layout:   step.Layout{TP: 1, PP: 4, DP: 16, EP: 8, MicroBatch: 1, ZeRO: 1, OverlapEP: true}}
	for name, edit := range map[string]func(*step.Layout){
		"1f1b with pp": func(l *step.Layout) { l.Schedule = step.OneFOneB },
		"full recompute": func(l *step.Layout) {
			l.Schedule, l.VirtualStages, l.Recompute = step.Interleaved, 2, step.RecomputeFull
		},
		"no expert groups": func(l *step.Layout) { l.Schedule, l.VirtualStages, l.EP = step.Interleaved, 2, 1 },
	} {
		r := base
		edit(&r.Layout)
		_, err := e.Estimate(r)
		var fe *invalid.Error
		if !errors.As(err, &fe) || fe.Field != "layout.overlap_ep" {
			t.Errorf("%s: %v", name, err)
		}
	}
	r := base
	r.Layout.Schedule, r.Layout.VirtualStages = step.Interleaved, 2
	if _, err := e.Estimate(r); err != nil {
		t.Errorf("interleaved: %v", err)
	}
	r = base
	r.Layout.Schedule, r.Training.Framework = step.DualPipe, "hai-llm"
	if _, err := e.Estimate(r); err != nil {
		t.Errorf("dualpipe: %v", err)
	}
	// DualPipe overlaps the all-to-alls itself; with ep 1 there are none, and
	// overlap_ep was taken without a word, the answer the one without it.
	r.Layout.EP = 1
	var fe *invalid.Error
	if _, err := e.Estimate(r); !errors.As(err, &fe) || fe.Field != "layout.overlap_ep" {
		t.Errorf("dualpipe without expert groups: %v", err)
	}
}

// Megatron-Core's TransformerConfig refuses the all-to-all overlap beside the
// shared-expert overlap (core_v0.14.0 on) and with the MoE layer among the
// recomputed modules (45b8eac on, 2026-03): estimate names layout.overlap_ep; the
// same layout with either setting alone, or with other modules recomputed, is
// priced. Llama 4 Scout (one shared expert) on 64 H100, EP 16, no pipeline.
func TestEPOverlapSharedExpertAndMoERecomputeRefused(t *testing.T) {
	e := step.New()
	base := step.Request{Model: arch(t, "llama4-scout"), Cluster: cluster(t, "dgx-h100", 8),
		Training: step.Training{SeqLen: 8192, GlobalBatch: 256},
		Layout:   step.Layout{TP: 2, PP: 1, DP: 32, EP: 16, MicroBatch: 1, SP: true, ZeRO: 1, OverlapEP: true}}
	for _, fw := range []string{"", "nemo"} {
		for name, tc := range map[string]struct {
			edit    func(*step.Layout)
			refused bool
		}{
			"shared-expert overlap": {func(l *step.Layout) { l.OverlapSharedExpert = true }, true},
			"moe recomputed": {func(l *step.Layout) {
				l.Recompute, l.RecomputeModules = step.RecomputeSelective, []string{"core_attn", "moe"}
			}, true},
			"moe_act and mlp recomputed": {func(l *step.Layout) {
				l.Recompute, l.RecomputeModules = step.RecomputeSelective, []string{"moe_act", "mlp"}
			}, false},
			"shared-expert overlap alone": {func(l *step.Layout) { l.OverlapSharedExpert, l.OverlapEP = true, false }, false},
			"moe recomputed alone": {func(l *step.Layout) {
				l.Recompute, l.RecomputeModules, l.OverlapEP = step.RecomputeSelective, []string{"moe"}, false
			}, false},
		} {
			r := base
			r.Training.Framework = fw
			tc.edit(&r.Layout)
			_, err := e.Estimate(r)
			var fe *invalid.Error
			switch {
			case tc.refused && (!errors.As(err, &fe) || fe.Field != "layout.overlap_ep"):
				t.Errorf("%s %q: want layout.overlap_ep refused, got %v", fw, name, err)
			case !tc.refused && err != nil:
				t.Errorf("%s %q: %v", fw, name, err)
			}
		}
	}
}

// Llama 3.1 405B in fp8 at TP 8 on H100 with TP overlap, as three frameworks run
// it: NeMo (Transformer Engine's userbuffers, fp8 all-gathers and fp8 pipelined
// reduce-scatters), Megatron-Core (userbuffers at Transformer Engine's defaults:
// fp8 all-gathers, 16-bit reduce-scatters) and torchtitan (PyTorch's async TP, every
// collective in 16 bits by ring exchange). NeMo's detailed answer lists the TP
// all-gathers and its forward reduce-scatters at half the 16-bit bytes, the others
// as they run them; the fp8 reduce-scatter chunks leave NeMo less exposed than
// Megatron-Core.
func TestTPOverlapUserbuffersFP8(t *testing.T) {
	e := step.New()
	req := step.Request{Model: arch(t, "llama3-405b"), Cluster: cluster(t, "dgx-h100", 128),
		Training: step.Training{SeqLen: 8192, GlobalBatch: 128, Precision: step.FP8, FP8Recipe: step.FP8Current},
		Layout:   step.Layout{TP: 8, PP: 1, DP: 16, MicroBatch: 1, SP: true, ZeRO: 3, Recompute: step.RecomputeFull, OverlapTP: true}}
	act := 8192.0 * float64(req.Model.Hidden) * 2 // one micro-batch's activations in 16 bits
	exposed := map[string]float64{}
	for _, fw := range []string{"nemo", "megatron-core", "torchtitan"} {
		r := req
		r.Training.Framework = fw
		res, err := e.Estimate(r)
		if err != nil {
			t.Fatalf("%s: %v", fw, err)
		}
		half := map[string]bool{}
		for _, c := range res.Comms {
			if c.Kind == step.CommTP && c.Bytes == act/2 {
				half[c.Op] = true
			}
		}
		exposed[fw] = res.Breakdown.Exposed[step.CommTP]
		t.Logf("%s: TP %.3f s exposed, %.3f s hidden, contention %.3f s; fp8 TP collectives %v", fw,
			exposed[fw], res.Breakdown.Hidden[step.CommTP], res.Breakdown.Contention, half)
		wantAG, wantRS := fw != "torchtitan", fw == "nemo"
		if half[collective.AllGather.String()] != wantAG || half[collective.ReduceScatter.String()] != wantRS {
			t.Errorf("%s: TP collectives at half the bytes %v, want all-gather %v, reduce-scatter %v", fw, half, wantAG, wantRS)
		}
	}
	if !(exposed["nemo"] < exposed["megatron-core"]) {
		t.Errorf("fp8 pipelined reduce-scatters: NeMo %.4f s exposed, Megatron-Core %.4f s", exposed["nemo"], exposed["megatron-core"])
	}
}

// regathers is the time a step of r spends in the backward re-gathers that
// Transformer Engine's userbuffers run in bulk beside the input projections' data
// gradients, as r lists them.
func regathers(r step.Result) float64 {
	var s float64
	for _, c := range r.Comms {
		if c.Kind == step.CommTP && strings.Contains(c.When, "gathered again for their weight gradients") {
			s += c.TimeUs * 1e-6 * c.PerStep
		}
	}
	return s
}

// Megatron-Core's interleaved schedule with the all-to-all overlap pairs a chunk's
// forward with another's backward only in its steady state: the first stage runs
// (P − 1) · 2 + (v − 1) · P + 1 chunks forward alone before it and as many backward
// alone after it (megatron/core/pipeline_parallel/schedules.py at 2436e3d,
// get_pp_rank_microbatches, the last chunk "one extra micro-batch forward step"
// the overlap adds). Mixtral 8x7B on 64 H100, PP 4 × v 2 over 8 micro-batches: 11
// of the 16 chunk steps each way unpaired, so 11/16 of the all-to-alls priced
// without the overlap stay exposed with it, and the rest hide; with PP 1 (the
// combined 1F1B without a pipeline) one micro-batch of the 8 each way.
func TestEPOverlapInterleavedWarmup(t *testing.T) {
	e := step.New()
	for _, tc := range []struct {
		name       string
		pp, v, dp  int
		num, denom float64
	}{
		{"pp 4, v 2", 4, 2, 16, 11, 16},
		{"pp 2, v 4", 2, 4, 32, 2*1 + 3*2 + 1, 4 * 4},
		{"pp 1", 1, 0, 64, 1, 2},
	} {
		r := step.Request{Model: arch(t, "mixtral-8x7b"), Cluster: cluster(t, "dgx-h100", 8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 128},
			Layout:   step.Layout{TP: 1, PP: tc.pp, DP: tc.dp, EP: 8, MicroBatch: 1, ZeRO: 1, VirtualStages: tc.v}}
		if tc.pp > 1 {
			r.Layout.Schedule = step.Interleaved
		}
		off, err := e.Estimate(r)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r.Layout.OverlapEP = true
		on, err := e.Estimate(r)
		if err != nil {
			t.Fatalf("%s, overlap: %v", tc.name, err)
		}
		all := off.Breakdown.Exposed[step.CommEP]
		exp, hid := on.Breakdown.Exposed[step.CommEP], on.Breakdown.Hidden[step.CommEP]
		if want := all * tc.num / tc.denom; !(all > 0) || math.Abs(exp-want) > 1e-9*all || math.Abs(exp+hid-all) > 1e-9*all {
			t.Errorf("%s: exposed %.6f s and hidden %.6f s of the %.6f s priced without the overlap; want %.6f s (%g/%g) exposed",
				tc.name, exp, hid, all, want, tc.num, tc.denom)
		}
	}
}
