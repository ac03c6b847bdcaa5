package step_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// A framework's profile fills what the request leaves open, and nothing it sets.
func TestFrameworkProfilesFillOpenSettings(t *testing.T) {
	cases := []struct {
		framework string
		given     step.Training
		check     func(step.Training) string
	}{
		{"composer", step.Training{}, func(t step.Training) string {
			if t.BackwardPrefetch != step.PrefetchPost || t.Optimizer.GradBytes != 4 {
				return "want backward prefetch post and fp32 gradient reduction"
			}
			return ""
		}},
		{"llm-foundry", step.Training{BackwardPrefetch: step.PrefetchPre, Optimizer: step.AdamMixed()}, func(t step.Training) string {
			if t.Framework != "composer" || t.BackwardPrefetch != step.PrefetchPre || t.Optimizer.GradBytes != 2 {
				return "an alias resolves, and given settings stay"
			}
			return ""
		}},
		{"megatron-lm-2021", step.Training{}, func(t step.Training) string {
			if !t.UnfusedAttention || t.OnDemandGathers {
				return "want unfused attention, flat ZeRO-3"
			}
			return ""
		}},
		// Its fp16 optimizer held the fp32 copies of the gradients between steps; under
		// bf16 it accumulated and reduced them in fp32 instead.
		{"megatron-lm-2021", step.Training{Precision: step.FP16}, func(t step.Training) string {
			if t.Optimizer.StateBytes != 16 || t.Optimizer.GradBytes != 2 {
				return "fp16: want 16 B of optimizer state (fp32 master, moments and gradient copies), 2 B gradients"
			}
			return ""
		}},
		{"megatron-lm-2021", step.Training{Precision: step.BF16}, func(t step.Training) string {
			if t.Optimizer.StateBytes != 12 || t.Optimizer.GradBytes != 4 {
				return "bf16: want fp32 gradients, 12 B of optimizer state"
			}
			return ""
		}},
		{"megatron-lm-2021", step.Training{Precision: step.FP16, Optimizer: step.AdamMixed()}, func(t step.Training) string {
			if t.Optimizer != step.AdamMixed() {
				return "a given optimizer stays"
			}
			return ""
		}},
		{"deepspeed-2021", step.Training{}, func(t step.Training) string {
			if !t.UnfusedAttention || !t.OnDemandGathers {
				return "want unfused attention and on-demand gathers"
			}
			return ""
		}},
		{"", step.Training{}, func(t step.Training) string {
			if t.Framework != "megatron-core" || t.UnfusedAttention || t.BackwardPrefetch != step.PrefetchPre || t.Optimizer.GradBytes != 4 {
				return "the default is megatron-core with flash attention and fp32 gradients under bf16"
			}
			return ""
		}},
	}
	for _, c := range cases {
		tr := c.given
		tr.SeqLen, tr.GlobalBatch, tr.Framework = 2048, 8, c.framework
		if msg := c.check(tr.Normalise()); msg != "" {
			t.Errorf("framework %q: %s (got %+v)", c.framework, msg, tr.Normalise())
		}
	}
}

// torchtitan's TP plan always shards the sequence: the framework turns SP on with TP
// and the TP collectives become all-gathers and reduce-scatters.
func TestTorchtitanTPImpliesSP(t *testing.T) {
	req := step.Request{
		Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 8192, GlobalBatch: 8, Framework: "torchtitan"},
		Layout:   step.Layout{TP: 8, PP: 1, DP: 1, MicroBatch: 1},
	}
	res, err := step.New().Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Layout.SP {
		t.Error("torchtitan with TP 8: SP off")
	}
	for _, c := range res.Comms {
		if c.KindName == "tp" && c.Op == "allreduce" {
			t.Error("torchtitan with TP 8: a TP all-reduce, want all-gather + reduce-scatter")
		}
	}
	if !strings.HasPrefix(res.Assumptions[0], "framework torchtitan:") {
		t.Errorf("first assumption %q does not name the framework", res.Assumptions[0])
	}
}

func TestUnknownFrameworkNamesTheField(t *testing.T) {
	req := step.Request{
		Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 8192, GlobalBatch: 8, Framework: "jax"},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1},
	}
	_, err := step.New().Estimate(req)
	var fe *invalid.Error
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "training.framework") || !strings.Contains(err.Error(), "torchtitan") {
		t.Errorf("error %v: want one naming training.framework and listing the known ones", err)
	}
}

// The loss's peak memory follows how the framework computes cross entropy: PyTorch's
// eager fp32 cross_entropy (torchtitan of 2024) holds 12 B per logit, 14 B
// vocab-parallel under TP (loss_parallel's decomposition), Megatron's fused
// vocab-parallel one 6 B, and torchtitan's loss compiled with the model (April 2025
// on: framework.CompiledLossBytesPerLogit) 4 B with or without TP.
func TestLossMemoryByFramework(t *testing.T) {
	logits := func(fw string, tp int) float64 {
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 16, Framework: fw},
			Layout:   step.Layout{TP: tp, PP: 1, DP: 8 / tp, CP: 1, ZeRO: 3, MicroBatch: 2 * tp, Recompute: step.RecomputeFull},
		}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Memory.Logits
	}
	mc, eager, compiled := logits("megatron-core", 1), logits("torchtitan-2024", 1), logits("torchtitan", 1)
	// 2 × 8192 tokens × 128256 logits: 6 B each is 12.6 GB (plus the embedding output).
	if want := 6 * 2 * 8192 * 128256.0 / 1e9; mc < want || mc > want*1.05 {
		t.Errorf("megatron-core: loss and embedding memory %.2f GB, want about %.2f GB", mc, want)
	}
	if r := eager / mc; r < 1.9 || r > 2.05 {
		t.Errorf("torchtitan-2024 / megatron-core loss memory = %.2f, want about 12/6", r)
	}
	if r := compiled / mc; r < 0.64 || r > 0.7 {
		t.Errorf("torchtitan (loss compiled) / megatron-core loss memory = %.2f, want about 4/6", r)
	}
	// Under TP 2 the logits a GPU holds are vocab-sharded: 4 × 8192 tokens × 128256 / 2.
	perByte := 4 * 8192 * 128256.0 / 2 / 1e9
	if got := logits("torchtitan-2024", 2); math.Abs(got-14*perByte) > 0.05*14*perByte {
		t.Errorf("torchtitan-2024 at TP 2: loss memory %.2f GB, want about 14 B × %.3f G logits = %.2f GB", got, perByte, 14*perByte)
	}
	if got := logits("torchtitan", 2); math.Abs(got-4*perByte) > 0.05*4*perByte {
		t.Errorf("torchtitan (loss compiled) at TP 2: loss memory %.2f GB, want about 4 B × %.3f G logits = %.2f GB", got, perByte, 4*perByte)
	}
}

// DeepSpeed's engine reduces data-parallel gradients after the backward pass: the
// whole reduction is exposed, where Megatron-Core hides all but the last bucket
// under the last micro-batch's backward. The flag alone does the same on any
// framework.
func TestDPReduceAfterBackward(t *testing.T) {
	run := func(fw string, after bool) step.Result {
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 4),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: fw, DPReduceAfterBackward: after},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 32, CP: 1, ZeRO: 0, MicroBatch: 1, Recompute: step.RecomputeFull},
		}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Each run against its own all-reduce: megatron-core reduces its gradients in
	// fp32 under bf16 (4 B a parameter), megatron-deepspeed in the optimizer's 2 B.
	allReduce := func(r step.Result) float64 {
		for _, c := range r.Comms {
			if c.KindName == "dp" && c.Op == "allreduce" {
				return c.TimeUs * 1e-6
			}
		}
		t.Fatal("no DP all-reduce in the communication table")
		return 0
	}
	mc, ds, flag := run("megatron-core", false), run("megatron-deepspeed", false), run("megatron-core", true)
	if got, reduce := mc.Breakdown.Exposed[step.CommDP], allReduce(mc); !(got < 0.5*reduce) {
		t.Errorf("megatron-core: %.4f s of a %.4f s gradient all-reduce exposed; most should hide", got, reduce)
	}
	for name, r := range map[string]step.Result{"megatron-deepspeed": ds, "flag": flag} {
		if got, reduce := r.Breakdown.Exposed[step.CommDP], allReduce(r); math.Abs(got-reduce) > 1e-9*reduce {
			t.Errorf("%s: %.6f s exposed, want the whole all-reduce %.6f s", name, got, reduce)
		}
	}
}

// Memory the framework decides: Composer's fused cross entropy keeps 4 bytes per
// logit where torchtitan's eager fp32 PyTorch loss (torchtitan-2024) keeps 12, and DeepSpeed's ZeRO-3 holds
// its live-parameter limit, its prefetch bucket and the running module gathered,
// not two whole layers.
func TestFrameworkMemory(t *testing.T) {
	e := step.New()
	r := step.Request{Model: arch(t, "llama2-13b"), Cluster: cluster(t, "dgx-a100", 2),
		Training: step.Training{SeqLen: 2048, GlobalBatch: 64, Precision: step.BF16},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 16, CP: 1, ZeRO: 3, MicroBatch: 4, Recompute: step.RecomputeFull}}
	logits := map[string]float64{}
	for _, fw := range []string{"composer", "torchtitan-2024"} {
		r.Training.Framework = fw
		res, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		logits[fw] = res.Memory.Logits
	}
	perByte := 4 * 2048 * float64(r.Model.Vocab) / 1e9 // GB per byte per logit
	if d := logits["torchtitan-2024"] - logits["composer"]; math.Abs(d-8*perByte) > 1e-9 {
		t.Errorf("torchtitan-2024 − composer logits = %.3f GB, want (12 − 4) B × %.0f logits = %.3f GB", d, perByte*1e9, 8*perByte)
	}

	big := r
	big.Model = arch(t, "gpt3-175b")
	big.Cluster = cluster(t, "dgx-a100", 48)
	big.Layout.DP, big.Training.GlobalBatch = 384, 1536
	big.Training.Framework = "megatron-core" // Megatron-LM of 2021 ran no ZeRO-3 (framework.Runs)
	flat, err := e.Estimate(big)
	if err != nil {
		t.Fatal(err)
	}
	big.Training.Framework = "deepspeed-2021"
	od, err := e.Estimate(big)
	if err != nil {
		t.Fatal(err)
	}
	h := float64(big.Model.Hidden)
	layer := 12 * h * h * 2 / 1e9 // bf16 weights of one 175B layer
	want := (h*float64(big.Model.FFN) + step.ZeRO3MaxLiveParams + step.ZeRO3PrefetchBucketParams) * 2 / 1e9
	if math.Abs(flat.Memory.Gathered-2*layer)/(2*layer) > 0.01 {
		t.Errorf("flat ZeRO-3 gathers %.2f GB, want two layers, %.2f GB", flat.Memory.Gathered, 2*layer)
	}
	if math.Abs(od.Memory.Gathered-want) > 1e-6 {
		t.Errorf("DeepSpeed ZeRO-3 gathers %.2f GB, want the MLP input, the live limit and the bucket, %.2f GB", od.Memory.Gathered, want)
	}
}

// On Hopper, Megatron-Core runs Transformer Engine's cuDNN fused attention, which
// Shah et al. 2024 (FlashAttention-3, Fig. 5 and 6) measured at 529 TFLOP/s forward
// and 518 backward at 8k keys against FlashAttention-2's 333 and 318; torchtitan's
// SDPA runs the FlashAttention-2 kernel. The two frameworks' steps differ by the
// attention core alone, by that ratio; on Ampere, where both run FlashAttention-2,
// not at all.
func TestHopperFusedAttention(t *testing.T) {
	const s = 8192
	run := func(clusterName, fw string) step.Result {
		req := step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, clusterName, 1),
			// The optimizer given: without one each profile holds its own gradient
			// width (framework.Profile.GradReduceBytes).
			Training: step.Training{SeqLen: s, GlobalBatch: 8, Framework: fw, Optimizer: step.AdamMixed()},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, ZeRO: 0, MicroBatch: 1, Recompute: step.RecomputeNone}, // torchtitan has no ZeRO-1, and its FSDP2 (ZeRO 2–3) copies weights and gradients on the compute stream
		}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tt, mc := run("dgx-h100", "torchtitan"), run("dgx-h100", "megatron-core")
	m := arch(t, "llama3-8b")
	// Causal forward FLOPs of the attention core of one layer: half of 2·2·s²·(q + v widths).
	flops := 0.5 * 2 * s * s * float64(m.QDim()+m.VOutDim())
	g := cluster(t, "dgx-h100", 1).GPU()
	peak := g.PeakTFLOPS[hardware.BF16] * 1e12
	fa2 := flops / (peak * step.DefaultConstants().AttentionEfficiency[hardware.Hopper]) * float64(m.Layers)
	wantF := fa2 * (1 - 333.0/529)
	wantB := 2.5 * fa2 * (1 - 318.0/518)
	if d := tt.Breakdown.Forward - mc.Breakdown.Forward; math.Abs(d-wantF) > 0.01*wantF {
		t.Errorf("forward: torchtitan − megatron-core = %.4f s, want %.4f s", d, wantF)
	}
	if d := tt.Breakdown.Backward - mc.Breakdown.Backward; math.Abs(d-wantB) > 0.01*wantB {
		t.Errorf("backward: torchtitan − megatron-core = %.4f s, want %.4f s", d, wantB)
	}
	at, am := run("dgx-a100", "torchtitan"), run("dgx-a100", "megatron-core")
	if at.Breakdown.Forward != am.Breakdown.Forward || at.Breakdown.Backward != am.Breakdown.Backward {
		t.Errorf("A100: torchtitan %.4f+%.4f s, megatron-core %.4f+%.4f s; want the same kernels", at.Breakdown.Forward, at.Breakdown.Backward, am.Breakdown.Forward, am.Breakdown.Backward)
	}
}

// Megatron-LM 2021 sends each TP rank's slice of the activations between pipeline
// stages without sequence parallelism (scatter/gather, Narayanan et al. 2021 §4.1);
// Megatron-Core without SP sends the whole tensor, and with SP the slice.
func TestPipelineScatterGather(t *testing.T) {
	send := func(fw string, sp bool) float64 {
		req := step.Request{
			Model: arch(t, "gpt3-175b"), Cluster: cluster(t, "dgx-a100", 8),
			Training: step.Training{SeqLen: 2048, GlobalBatch: 64, Framework: fw},
			Layout:   step.Layout{TP: 8, PP: 8, DP: 1, CP: 1, MicroBatch: 1, SP: sp, Recompute: step.RecomputeFull},
		}
		r, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Comms {
			if c.KindName == "pp" {
				return c.Bytes
			}
		}
		t.Fatalf("%s: no pipeline send/recv in the communication table", fw)
		return 0
	}
	whole := 2048.0 * 12288 * 2 // one micro-batch's activations in 16 bits
	for _, c := range []struct {
		fw   string
		sp   bool
		want float64
	}{
		{"megatron-lm-2021", false, whole / 8},
		{"megatron-core", false, whole},
		{"megatron-core", true, whole / 8},
	} {
		if got := send(c.fw, c.sp); got != c.want {
			t.Errorf("%s, SP %v: %.0f bytes per transfer, want %.0f", c.fw, c.sp, got, c.want)
		}
	}
}

// Megatron-LM turns fp32 gradient accumulation and reduction on under --bf16 unless
// --grad-reduce-in-bf16 is passed (megatron/training/arguments.py at 1e057005 and
// d98e8a6: accumulate_allreduce_grads_in_fp32, passed to the DDP config as
// grad_reduce_in_fp32), and fp8 runs with --bf16; under --fp16 it stays off. Both
// Megatron-Core profiles keep 4-byte gradients under bf16 and fp8 when the request
// names no optimizer, 2-byte ones under fp16; a stated optimizer stays.
func TestMegatronGradientsInFP32(t *testing.T) {
	for _, fw := range []string{"megatron-core", "megatron-core-0.12"} {
		for _, c := range []struct {
			p    step.Precision
			want float64
		}{{step.BF16, 4}, {step.FP8, 4}, {step.FP16, 2}} {
			if g := (step.Training{Framework: fw, Precision: c.p}).Normalise().Optimizer.GradBytes; g != c.want {
				t.Errorf("%s %s: %v B gradients, want %v", fw, c.p, g, c.want)
			}
		}
		o := step.Optimizer{Name: "adam-bf16-grads", WeightBytes: 2, GradBytes: 2, StateBytes: 12}
		if g := (step.Training{Framework: fw, Optimizer: o}).Normalise().Optimizer.GradBytes; g != 2 {
			t.Errorf("%s, a stated optimizer (--grad-reduce-in-bf16): %v B gradients, want its 2", fw, g)
		}
	}
}

// NeMo 2.3's bf16 mixed-precision recipe reduces gradients in fp32
// (recipes/precision/mixed_precision.py: grad_reduce_in_fp32=True), so its profile
// keeps 4-byte gradients when the request names no optimizer; one that names its
// optimizer keeps it.
func TestNeMo2GradientsInFP32(t *testing.T) {
	if g := (step.Training{Framework: "nemo-25.04"}).Normalise().Optimizer.GradBytes; g != 4 {
		t.Errorf("nemo-25.04: %v B gradients, want 4", g)
	}
	o := step.Optimizer{Name: "adam-bf16-grads", WeightBytes: 2, GradBytes: 2, StateBytes: 12}
	if g := (step.Training{Framework: "nemo-25.04", Optimizer: o}).Normalise().Optimizer.GradBytes; g != 2 {
		t.Errorf("a stated optimizer: %v B gradients, want its 2", g)
	}
}
