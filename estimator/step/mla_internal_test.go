package step

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/model"
)

// DeepSeek-V3's attention (hidden 7168; latents q 1536, kv 512 + rotary key 64;
// 128 heads) in a 4-layer dense model, one 4096-token sequence a micro-batch, TP 2
// with sequence parallelism on one DGX H100.
func mlaRequest(t *testing.T, fw string, sp bool, mods ...string) Request {
	t.Helper()
	a, err := model.Lookup("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	a.Layers, a.MoE = 4, nil
	cl, err := catalog.Cluster("dgx-h100", 1)
	if err != nil {
		t.Fatal(err)
	}
	rc, zero := RecomputeNone, 1
	if fw == "torchtitan" {
		zero = 3 // FSDP beside TP
	}
	if len(mods) > 0 {
		rc = RecomputeSelective
	}
	return Request{Model: a, Cluster: cl,
		Training: Training{SeqLen: 4096, GlobalBatch: 16, Precision: BF16, Framework: fw},
		Layout:   Layout{TP: 2, PP: 1, DP: 4, CP: 1, ZeRO: zero, MicroBatch: 1, SP: sp, Recompute: rc, RecomputeModules: mods}}
}

// The down-projections' FLOPs per token, from their shapes: hidden 7168 → 1536
// (queries) and → 512 + 64 (keys/values and the rotary key), 2 FLOPs a
// multiply-add. Replicated, each TP rank computes all of them on every token of
// the sequence; column-parallel (Megatron-Core 0.11–0.13) half the columns on
// every token, duplicated (0.14 on, with sequence parallelism) all the columns on
// half the tokens: either saves half of 2·7168·2112 = 30 277 632 FLOPs a token.
func TestMLADownProjectionFLOPs(t *testing.T) {
	k := DefaultConstants()
	r := catalogRates(t, &k, "H100", BF16)
	e := New()
	flops := func(fw string, sp bool) float64 {
		req := normalise(mlaRequest(t, fw, sp))
		return e.layerCompute(req, &r, 4096, 4096, 4096, false).fwdFLOPs
	}
	const perToken = 2.0 * 7168 * (1536 + 512 + 64) // 30 277 632
	if perToken != 30277632 {
		t.Fatalf("per token %v", perToken)
	}
	rep := flops("torchtitan", true)
	for _, c := range []struct {
		fw   string
		sp   bool
		save float64
	}{
		{"nemo-25.04", true, perToken / 2 * 4096},  // column-parallel
		{"nemo-25.04", false, perToken / 2 * 4096}, // column-parallel without SP: the same split
		{"nemo", true, perToken / 2 * 4096},        // duplicated on the sequence-parallel share
		{"nemo", false, 0},                         // duplicated on the whole sequence: replicated
	} {
		if got := rep - flops(c.fw, c.sp); math.Abs(got-c.save) > 1e-9*c.save+1 {
			t.Errorf("%s SP %v: %.6g FLOPs a layer below the replicated down-projections, want %.6g", c.fw, c.sp, got, c.save)
		}
	}
}

// mlaCalls sums, per operation, the bytes × calls a step of the request runs of
// the TP collectives whose description starts with prefix.
func mlaCalls(t *testing.T, req Request, prefix string) (map[string]float64, Result) {
	t.Helper()
	res, err := New().Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	sum := map[string]float64{}
	for _, c := range res.Comms {
		if c.Kind == CommTP && strings.HasPrefix(c.When, prefix) {
			sum[c.Op] += c.Bytes * c.PerStep
		}
	}
	return sum, res
}

// Megatron-Core's MLA collectives under TP 2 with sequence parallelism, counted
// from multi_latent_attention.py as the module calls run (4 layers × 4
// micro-batches a step, 2 B an element, 4096 tokens), beside the dense layer's
// all-gather and reduce-scatter of 7168 a token around the attention:
//
//   - column-parallel down-projections (0.11–0.13): forward, the kv
//     down-projection's own gather of the input (7168), the latents gathered over
//     TP (1536, 576) and again by the up-projections (1536, 512); backward, the
//     scatters' transposes gather the latents' gradients (1536, 512); the
//     reduce-scatters are the kv down-projection's and the up-projections' input
//     gradients (7168, 1536, 512);
//   - duplicated (0.14 on): the up-projections' gathers (1536, 512) and the rotary
//     key's (64) forward, the reduce-scatters of their gradients backward — and
//     the dense layer's gather of the input and reduce-scatter of its gradient
//     are not run.
func TestMLATensorParallelCollectives(t *testing.T) {
	const calls = 4 * 4 * 2 * 4096.0 // layers × micro-batches × bytes × tokens
	for _, c := range []struct {
		fw     string
		ag, rs float64 // elements a token, per layer and micro-batch
	}{
		{"nemo-25.04", 7168 + 1536 + 576 + 1536 + 512 + 1536 + 512, 7168 + 1536 + 512},
		{"nemo", 1536 + 512 + 64, 1536 + 512 + 64},
		{"torchtitan", 0, 0},
	} {
		got, _ := mlaCalls(t, mlaRequest(t, c.fw, true), "MLA")
		for op, want := range map[string]float64{collective.AllGather.String(): c.ag * calls, collective.ReduceScatter.String(): c.rs * calls} {
			if math.Abs(got[op]-want) > 1e-9*want {
				t.Errorf("%s: MLA %s %.6g bytes a step, want %.6g", c.fw, op, got[op], want)
			}
		}
	}
	// Duplicated down-projections' weight gradients, partial on each rank, are
	// all-reduced over TP once a step: 4 layers × 7168 × 2112 = 60 555 264
	// gradients in the training's gradient width; the other forms hold them whole.
	for _, fw := range []string{"nemo", "nemo-25.04"} {
		got, res := mlaCalls(t, mlaRequest(t, fw, true), "end of step: MLA")
		want := 0.0
		if fw == "nemo" {
			want = 60555264 * res.Training.Optimizer.GradBytes
		}
		if ar := got[collective.AllReduce.String()]; ar != want || (want > 0 && !(res.Training.Optimizer.GradBytes >= 2)) {
			t.Errorf("%s: the down-projections' gradient all-reduce %.6g bytes a step, want %.6g", fw, ar, want)
		}
	}
	// mla_up_proj runs the up-projections' forward gathers again.
	up, _ := mlaCalls(t, mlaRequest(t, "nemo", true, "mla_up_proj"), "MLA")
	if want := (2*(1536+512) + 64) * calls; math.Abs(up[collective.AllGather.String()]-want) > 1e-9*want {
		t.Errorf("nemo, mla_up_proj: MLA all-gathers %.6g bytes a step, want %.6g", up[collective.AllGather.String()], want)
	}
	// Without sequence parallelism, column-parallel down-projections gather the
	// latents (1536, 576) and all-reduce three input gradients (7168, 1536, 512).
	noSP, _ := mlaCalls(t, mlaRequest(t, "nemo-25.04", false), "MLA")
	if ag, ar := noSP[collective.AllGather.String()], noSP[collective.AllReduce.String()]; math.Abs(ag-(1536+576)*calls) > 1 || math.Abs(ar-(7168+1536+512)*calls) > 1 {
		t.Errorf("nemo-25.04 without SP: all-gathers %.6g, all-reduces %.6g bytes a step, want %.6g and %.6g", ag, ar, (1536+576)*calls, (7168+1536+512)*calls)
	}
}

// The exposed TP time is the dense layer's collectives and MLA's as listed, less
// what duplicated down-projections do not run: one all-gather and one
// reduce-scatter of the input a layer and micro-batch.
func TestMLATensorParallelTime(t *testing.T) {
	for _, fw := range []string{"nemo-25.04", "nemo", "torchtitan"} {
		res, err := New().Estimate(mlaRequest(t, fw, true))
		if err != nil {
			t.Fatal(err)
		}
		var sum, ag, rs float64
		for _, c := range res.Comms {
			if c.Kind != CommTP {
				continue
			}
			sum += c.TimeUs * 1e-6 * c.PerStep
			if !strings.HasPrefix(c.When, "MLA") && c.Bytes == 4096*7168*2 {
				switch c.Op {
				case collective.AllGather.String():
					ag = c.TimeUs * 1e-6
				case collective.ReduceScatter.String():
					rs = c.TimeUs * 1e-6
				}
			}
		}
		want := sum
		if fw == "nemo" {
			want -= 4 * 4 * (ag + rs)
		}
		if got := res.Breakdown.Exposed[CommTP]; math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: exposed TP %.6f s, want %.6f s from the calls listed", fw, got, want)
		}
	}
}

// What one rank keeps of the latents for a 4096-token micro-batch at TP 2 with
// sequence parallelism, in 16 bits (mlaSavedBytes), from the tensors
// multi_latent_attention.py holds:
//
//   - mla_up_proj, column-parallel: q_compressed on the rank's 2048 tokens (1536),
//     kv_compressed on them (512), and the whole sequence's gathered key/value
//     latent and rotary key (576) under k_pos_emb's view: 2·(768 + 256 + 576) =
//     3200 B a token;
//   - mla_up_proj, duplicated: q_compressed (768), the kv latent with its rotary
//     part on the rank's tokens (288), the rotary key gathered (64): 2240 B;
//   - mla_up_proj, replicated: every latent on every token: 2·2112 = 4224 B;
//   - not recomputed: the latent norms' inputs and outputs on the rank's tokens,
//     4·(768 + 256) = 4096 B (replicated: 8192).
func TestMLASavedLatents(t *testing.T) {
	a, err := model.Lookup("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	const s = 4096.0
	for _, c := range []struct {
		mode framework.MLADownProj
		mods uint8
		want float64 // bytes a token
	}{
		{framework.MLADownProjColumn, rmMLAUp, 3200},
		{framework.MLADownProjDuplicated, rmMLAUp, 2240},
		{framework.MLADownProjReplicated, rmMLAUp, 4224},
		{framework.MLADownProjColumn, 0, 4096},
		{framework.MLADownProjDuplicated, 0, 4096},
		{framework.MLADownProjReplicated, 0, 8192},
	} {
		if got := mlaSavedBytes(&a, s, 1, 2, true, c.mods, 2, c.mode); got != c.want*s {
			t.Errorf("mode %d, modules %b: %.0f B a token, want %.0f", c.mode, c.mods, got/s, c.want)
		}
	}
	// Without TP every form keeps the same: 2·2112 with mla_up_proj.
	for _, mode := range []framework.MLADownProj{framework.MLADownProjColumn, framework.MLADownProjDuplicated, framework.MLADownProjReplicated} {
		if got := mlaSavedBytes(&a, s, 1, 1, false, rmMLAUp, 2, mode); got != 4224*s {
			t.Errorf("TP 1, mode %d: %.0f B a token, want 4224", mode, got/s)
		}
	}
}

// The planner's lower bounds hold under every form, with and without sequence
// parallelism and mla_up_proj: the step time (which prices TP without the
// collectives duplicated down-projections skip) and the memory.
func TestMLALowerBoundsHold(t *testing.T) {
	e := New()
	for _, fw := range []string{"nemo-25.04", "nemo", "torchtitan"} {
		for _, sp := range []bool{true, false} {
			for _, mods := range [][]string{nil, {"mla_up_proj"}} {
				if fw == "torchtitan" && mods != nil {
					continue // no recompute modules
				}
				req := mlaRequest(t, fw, sp, mods...)
				res, err := e.Estimate(req)
				if err != nil {
					t.Fatal(err)
				}
				b, ok := e.LowerBounds(req)
				if !ok {
					t.Fatalf("%s SP %v %v: no bound", fw, sp, mods)
				}
				if b.StepTime > res.StepTime*(1+1e-12) || b.StatesGB > res.Memory.Total*(1+1e-12) {
					t.Errorf("%s SP %v %v: bounds %.4g s, %.4g GB above the estimate's %.4g s, %.4g GB", fw, sp, mods, b.StepTime, b.StatesGB, res.StepTime, res.Memory.Total)
				}
			}
		}
	}
}
