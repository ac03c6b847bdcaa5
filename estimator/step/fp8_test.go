package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

func fp8Request(t *testing.T, precision step.Precision, recipe step.FP8Recipe, gbs int) step.Request {
	t.Helper()
	return step.Request{
		Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 8192, GlobalBatch: gbs, Precision: precision, FP8Recipe: recipe},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 8, CP: 1, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeFull},
	}
}

// sameStepAndExposed fails unless a and b take the same step time (to 10⁻¹²) with
// the same exposed communication.
func sameStepAndExposed(t *testing.T, what string, a, b step.Result) {
	t.Helper()
	if math.Abs(a.StepTime-b.StepTime) > 1e-12*a.StepTime || a.Breakdown.Exposed != b.Breakdown.Exposed {
		t.Errorf("%s: step %.6f vs %.6f s", what, a.StepTime, b.StepTime)
	}
}

func mustEstimate(t *testing.T, req step.Request) step.Result {
	t.Helper()
	r, err := step.New().Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The output layer stays in 16 bits under fp8 training: growing the vocabulary adds
// the same forward time whether the layers' matmuls run in fp8 or in bf16.
func TestFP8OutputLayerIn16Bits(t *testing.T) {
	grow := func(p step.Precision) float64 {
		small, large := fp8Request(t, p, "", 64), fp8Request(t, p, "", 64)
		small.Model.Vocab, large.Model.Vocab = 32000, 256000
		return mustEstimate(t, large).Breakdown.Forward - mustEstimate(t, small).Breakdown.Forward
	}
	bf, f8 := grow(step.BF16), grow(step.FP8)
	if bf <= 0 || math.Abs(f8/bf-1) > 1e-9 {
		t.Errorf("forward time added by a 8× vocabulary: bf16 %.4g s, fp8 %.4g s; want equal", bf, f8)
	}
}

// Casts: fp8 layers are faster than bf16 ones but by well under the 2× of the
// tensor-core peak (casts, 16-bit attention); current scaling costs more than
// delayed, and casts the weights in every micro-batch's forward where delayed
// scaling casts them once per step.
func TestFP8CastsAndRecipes(t *testing.T) {
	fwd := func(p step.Precision, r step.FP8Recipe, gbs int) float64 {
		return mustEstimate(t, fp8Request(t, p, r, gbs)).Breakdown.Forward
	}
	bf, delayed, current := fwd(step.BF16, "", 64), fwd(step.FP8, step.FP8Delayed, 64), fwd(step.FP8, step.FP8Current, 64)
	t.Logf("forward per step: bf16 %.3f s, fp8 delayed %.3f s, fp8 current %.3f s", bf, delayed, current)
	if !(delayed < bf && bf/delayed < 1.9) {
		t.Errorf("fp8 (delayed) forward %.3f s vs bf16 %.3f s: want faster, by less than 1.9×", delayed, bf)
	}
	if !(current > delayed) {
		t.Errorf("current scaling %.4f s not above delayed %.4f s", current, delayed)
	}
	// Doubling the micro-batches doubles the per-micro-batch work; only delayed
	// scaling's once-per-step weight cast stays.
	d2, c2 := fwd(step.FP8, step.FP8Delayed, 128), fwd(step.FP8, step.FP8Current, 128)
	if math.Abs(c2/(2*current)-1) > 1e-9 {
		t.Errorf("current scaling: forward %.4f s at 2× the micro-batches, want 2 × %.4f s", c2, current)
	}
	if !(d2 < 2*delayed) {
		t.Errorf("delayed scaling: forward %.4f s at 2× the micro-batches, want under 2 × %.4f s (weights cast once per step)", d2, delayed)
	}
}

// Memory: an fp8 copy and transpose of every layer weight, 2 B per parameter. For
// Llama 3 8B (8.03 B parameters, of which 2 × 128256 × 4096 = 1.05 B are the
// untied embedding and output layer, kept in 16 bits) that is 2 × 6.98 B = 14 GB
// without ZeRO-3; under ZeRO-3 only the layers being gathered hold one.
func TestFP8WeightCopies(t *testing.T) {
	r := mustEstimate(t, fp8Request(t, step.FP8, "", 64))
	if got, want := r.Memory.FP8Weights, 2*(8.03e9-2*128256*4096.0)/1e9; math.Abs(got/want-1) > 0.02 {
		t.Errorf("fp8 weight copies %.2f GB, want %.2f GB", got, want)
	}
	z3 := fp8Request(t, step.FP8, "", 64)
	z3.Layout.ZeRO = 3
	if got := mustEstimate(t, z3).Memory.FP8Weights; !(got > 0 && got < 1.0) {
		t.Errorf("ZeRO-3: fp8 weight copies %.2f GB, want under 1 GB (two layers' worth)", got)
	}
	if got := mustEstimate(t, fp8Request(t, step.BF16, "", 64)).Memory.FP8Weights; got != 0 {
		t.Errorf("bf16: fp8 weight copies %.2f GB", got)
	}
}

// The recipe comes from the framework when not given, and is checked.
func TestFP8RecipeDefaultsAndValidation(t *testing.T) {
	for fw, want := range map[string]step.FP8Recipe{"": step.FP8Delayed, "nemo": step.FP8Delayed, "torchtitan": step.FP8Current} {
		tr := step.Training{SeqLen: 8192, GlobalBatch: 8, Precision: step.FP8, Framework: fw}
		if got := tr.Normalise().FP8Recipe; got != want {
			t.Errorf("framework %q: recipe %q, want %q", fw, got, want)
		}
	}
	if got := (step.Training{SeqLen: 8192, GlobalBatch: 8, Framework: "torchtitan"}).Normalise().FP8Recipe; got != "" {
		t.Errorf("bf16 under torchtitan: recipe %q, want none", got)
	}
	for _, c := range []struct {
		tr   step.Training
		want string
	}{
		{step.Training{SeqLen: 8192, GlobalBatch: 8, Precision: step.BF16, FP8Recipe: step.FP8Delayed}, "fp8 only"},
		{step.Training{SeqLen: 8192, GlobalBatch: 8, Precision: step.FP8, FP8Recipe: "nvfp4"}, "delayed, current, rowwise, mxfp8 or blockwise"},
	} {
		err := c.tr.Validate()
		if err == nil || !invalid.Is(err) || !strings.Contains(err.Error(), "training.fp8_recipe") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.tr, err)
		}
	}
}

// fp8 weights (training.fp8_params): the layers' matmul weights are held in 1 B
// instead of 2, and only their fp8 transposes are kept besides, so a Llama 3 8B
// replica holds 2 × 6.98 GB less (1 B less per weight, and a 1 B transpose instead
// of a 2 B copy and transpose). The distributed optimizer's parameter all-gather
// sends them in fp8, so it moves less than half as much and takes less time; ZeRO-3
// gathers and holds fp8 layers. In bf16 the setting is refused, naming the field.
func TestFP8Params(t *testing.T) {
	const matmul = 8.03e9 - 2*128256*4096.0 // Llama 3 8B without embedding and output layer
	plain := mustEstimate(t, fp8Request(t, step.FP8, "", 64))
	req := fp8Request(t, step.FP8, "", 64)
	req.Training.FP8Params = true
	params := mustEstimate(t, req)
	if got, want := plain.Memory.Total-params.Memory.Total, 2*matmul/1e9; math.Abs(got/want-1) > 0.02 {
		t.Errorf("fp8 weights save %.2f GB, want %.2f GB", got, want)
	}
	if got, want := params.Memory.FP8Weights, matmul/1e9; math.Abs(got/want-1) > 0.02 {
		t.Errorf("fp8 transposes %.2f GB, want %.2f GB", got, want)
	}
	if !(params.Breakdown.Exposed[step.CommDP] < plain.Breakdown.Exposed[step.CommDP]) {
		t.Errorf("parameter all-gather in fp8: exposed DP %.4g s, not below %.4g s in 16 bits", params.Breakdown.Exposed[step.CommDP], plain.Breakdown.Exposed[step.CommDP])
	}
	z3 := fp8Request(t, step.FP8, "", 64)
	z3.Layout.ZeRO = 3
	z3p := z3
	z3p.Training.FP8Params = true
	a, b := mustEstimate(t, z3), mustEstimate(t, z3p)
	if got, want := a.Memory.Weights-b.Memory.Weights, matmul/8/1e9; math.Abs(got/want-1) > 0.02 {
		t.Errorf("ZeRO-3 over 8: shards %.3f GB smaller, want %.3f GB", got, want)
	}
	if !(b.Memory.Gathered < a.Memory.Gathered && b.StepTime <= a.StepTime) {
		t.Errorf("ZeRO-3: gathered %.2f → %.2f GB, step %.4g → %.4g s; want fewer bytes, no slower", a.Memory.Gathered, b.Memory.Gathered, a.StepTime, b.StepTime)
	}
	// Weights offloaded to the host leave none on the GPU, fp8 or not.
	off := z3p
	off.Layout.Offload = step.OffloadParams
	if w := mustEstimate(t, off).Memory.Weights; w != 0 {
		t.Errorf("ZeRO-3 with offloaded fp8 weights: %.3f GB of weights on the GPU, want 0", w)
	}
	bf := fp8Request(t, step.BF16, "", 64)
	bf.Training.FP8Params = true
	if _, err := step.New().Estimate(bf); err == nil || !invalid.Is(err) || !strings.Contains(err.Error(), "training.fp8_params") {
		t.Errorf("fp8 weights in bf16: %v, want an error naming training.fp8_params", err)
	}
}

// torchao's rowwise recipe (float8_linear.py at 6243040) against per-tensor current
// scaling, for Llama 3 8B on 8 H100 (TP 1, micro-batch 1 × 8192 tokens, 8 micro-batches,
// 32 layers), per layer and micro-batch. Forward: the inputs and the weights are cast
// along the rows only, 5 B per element (amax read 2, cast read 2 and write 1) against
// current scaling's 6 (amax 2, cast writing fp8 and its transpose 4). Backward: the
// output gradients cast both ways, the saved inputs and the weights again along the
// columns — the column-wise casts at 0.65 / 2.1 of the row-wise bandwidth, Inductor's
// 0.6–0.7 against 2.0–2.2 TB/s on H100 (pytorch/pytorch#149982) — and the backward
// GEMMs' bf16 outputs rescaled in place (read 2, write 2: the input gradients, the
// size of the inputs, and the weight gradients), against current scaling's 6 B per
// output-gradient element.
func TestFP8RowwiseAndMXFP8(t *testing.T) {
	est := func(r step.FP8Recipe) step.Result { return mustEstimate(t, fp8Request(t, step.FP8, r, 64)) }
	cur, row := est(step.FP8Current), est(step.FP8Rowwise)
	const layers, mbs, tokens = 32, 8, 8192.0 // 64 sequences over DP 8
	hbm := 3.35e12 * 0.90
	// Matmul inputs (QKV, output projection, MLP in, MLP out) and output gradients
	// (QKV 4096 + 2 × 512 wide, output projection, two MLP-in halves, MLP out) per
	// token; one layer's weights.
	inputs := tokens * (4096 + 4096 + 4096 + 14336)
	grads := tokens * (4096 + 1024 + 4096 + 2*14336 + 4096)
	weights := 4096.0*6144 + 4096*4096 + 3*4096*14336
	col := 5 / (0.65 / 2.1)
	perLayer := func(d float64) float64 { return d / (layers * mbs) }
	if got, want := perLayer(row.Breakdown.Forward-cur.Breakdown.Forward), (5-6)*(inputs+weights)/hbm; math.Abs(got/want-1) > 0.02 {
		t.Errorf("rowwise forward per layer %+.3f ms over current, want %+.3f ms", 1e3*got, 1e3*want)
	}
	if got, want := perLayer(row.Breakdown.Backward-cur.Breakdown.Backward), ((5+col-6)*grads+col*(inputs+weights)+4*(inputs+weights))/hbm; math.Abs(got/want-1) > 0.02 {
		t.Errorf("rowwise backward per layer %+.3f ms over current, want %+.3f ms", 1e3*got, 1e3*want)
	}
	b200 := func(r step.FP8Recipe, fw string) step.Result {
		req := fp8Request(t, step.FP8, r, 64)
		req.Cluster = cluster(t, "hgx-b200", 1)
		req.Training.Framework = fw
		return mustEstimate(t, req)
	}
	// A stack that writes the fp8 transpose on Blackwell too (nemo-24: the MLPerf
	// containers of 2024 with a Transformer Engine before 2.2) pays as much for per-tensor
	// current scaling as for MXFP8: 6 B per element.
	if mx, c := b200(step.FP8MXFP8, "nemo-24"), b200(step.FP8Current, "nemo-24"); math.Abs(mx.StepTime/c.StepTime-1) > 1e-9 {
		t.Errorf("B200, nemo-24: mxfp8 %.4f s, current scaling %.4f s; want equal (6 B per element each)", mx.StepTime, c.StepTime)
	}
	// Transformer Engine's current scaling on Blackwell writes no transpose: 5 B per
	// element of every input, output-gradient and weight cast against MXFP8's 6
	// (current scaling casts the weights in every forward).
	mx, c := b200(step.FP8MXFP8, "megatron-core"), b200(step.FP8Current, "megatron-core")
	hbmB := 7.7e12 * 0.90
	got := (mx.Breakdown.Forward + mx.Breakdown.Backward + mx.Breakdown.Recompute) - (c.Breakdown.Forward + c.Breakdown.Backward + c.Breakdown.Recompute)
	want := layers * mbs * (inputs + grads + weights) / hbmB
	// Full recomputation casts the inputs and the weights once more.
	want += layers * mbs * (inputs + weights) / hbmB
	if math.Abs(got/want-1) > 0.02 {
		t.Errorf("B200, Transformer Engine: mxfp8 over current scaling %.4f s, want %.4f s (1 B per cast element)", got, want)
	}
	_, err := step.New().Estimate(fp8Request(t, step.FP8, step.FP8MXFP8, 64))
	if err == nil || !invalid.Is(err) || !strings.Contains(err.Error(), "training.fp8_recipe") || !strings.Contains(err.Error(), "Blackwell") {
		t.Errorf("mxfp8 on H100: %v, want refused naming training.fp8_recipe", err)
	}
}

// Under delayed scaling Transformer Engine's LayerNormLinear writes the norm's output
// in fp8 (framework megatron-core: NormEmitsFP8), so the QKV and MLP inputs have no
// cast of their own; current scaling needs their amax first and casts them. For
// Llama 3 8B on 8 H100 (micro-batch 1 × 8192 tokens, 8 micro-batches, 32 layers),
// current scaling's forward over delayed's is, per layer and micro-batch, the amax
// pass over every matmul input (2 B × 8192 × 26624), the two fused casts (4 B × 8192
// × 2 × 4096) and the weights' cast (6 B per weight, where delayed casts them with
// 4 B once per step).
func TestFP8NormEmitsFP8(t *testing.T) {
	const layers, mbs, tokens = 32, 8, 8192.0
	hbm := 3.35e12 * 0.90
	inputs := 4096.0 + 4096 + 4096 + 14336
	weights := 4096.0*6144 + 4096*4096 + 3*4096*14336
	want := layers * (mbs*(2*tokens*inputs+4*tokens*2*4096+6*weights) - 4*weights) / hbm
	d := mustEstimate(t, fp8Request(t, step.FP8, step.FP8Delayed, 64)).Breakdown.Forward
	c := mustEstimate(t, fp8Request(t, step.FP8, step.FP8Current, 64)).Breakdown.Forward
	if got := c - d; math.Abs(got/want-1) > 0.01 {
		t.Errorf("current − delayed forward %.4f s, want %.4f s", got, want)
	}
}

// Block scaling (DeepSeek-V3 §3.3.1, 1×128 activation tiles and 128×128 weight
// blocks) finds each tile's scale in the cast kernel: no amax pass, one fused cast
// writing fp8 and its transpose (4 B per element) plus the fp32 scales of both
// copies (2 × 4 B per 128 elements); the weights' block scales come from the
// weights themselves, so they are cast once per step, as under delayed scaling. It
// has no norm-fused cast: against delayed scaling (whose norms emit the QKV and MLP
// inputs in fp8) it casts those two inputs besides. For Llama 3 8B on 8 H100
// (micro-batch 1 × 8192 tokens, 8 micro-batches, 32 layers) the forward's excess
// per layer is 8 × (4.0625 × 8192 × 26624 − 4 × 8192 × 18432) B + 0.0625 B per weight.
// Hopper runs it; the hai-llm profile (DeepSeek's framework) uses it by default.
func TestFP8Blockwise(t *testing.T) {
	const layers, mbs, tokens = 32, 8, 8192.0
	hbm := 3.35e12 * 0.90
	inputs := 4096.0 + 4096 + 4096 + 14336
	weights := 4096.0*6144 + 4096*4096 + 3*4096*14336
	scale := 2 * 4.0 / 128
	want := layers * (mbs*((4+scale)*tokens*inputs-4*tokens*(inputs-2*4096)) + scale*weights) / hbm
	d := mustEstimate(t, fp8Request(t, step.FP8, step.FP8Delayed, 64))
	b := mustEstimate(t, fp8Request(t, step.FP8, step.FP8Blockwise, 64))
	c := mustEstimate(t, fp8Request(t, step.FP8, step.FP8Current, 64))
	if got := b.Breakdown.Forward - d.Breakdown.Forward; math.Abs(got/want-1) > 0.01 {
		t.Errorf("blockwise − delayed forward %.4f s, want %.4f s", got, want)
	}
	if !(b.StepTime < c.StepTime) {
		t.Errorf("blockwise %.4f s not faster than current scaling's %.4f s (an amax pass per cast, weights every forward)", b.StepTime, c.StepTime)
	}
	ds := fp8Request(t, step.FP8, "", 64)
	ds.Training.Framework = "hai-llm"
	if r := mustEstimate(t, ds); r.Training.FP8Recipe != step.FP8Blockwise {
		t.Errorf("hai-llm's fp8 recipe %q, want blockwise", r.Training.FP8Recipe)
	}
}

// On Blackwell Transformer Engine from bee4649 (NeMo 25.04's pin; the profiles with
// FP8TransposeFree) writes no transposed fp8 copy under delayed or current scaling
// (quantizer.cpp: create_transpose = columnwise_usage && !non_tn_fp8_gemm_supported(),
// true from compute capability 10.0), so the step holds each layer weight's fp8 copy
// alone (1 B), and with fp8 weights nothing besides the weights. Llama 3 8B on 8 B200:
// megatron-core 1 B per matmul weight, 0 with fp8 weights; megatron-core-0.12 (an older
// Transformer Engine) the copy and its transpose, 2 B and 1 B, as on H100.
func TestFP8WeightCopiesTransposeFree(t *testing.T) {
	const matmul = 8.03e9 - 2*128256*4096.0 // Llama 3 8B without embedding and output layer
	for _, c := range []struct {
		fw          string
		plain, with float64 // bytes per matmul weight
	}{
		{"megatron-core", 1, 0},
		{"megatron-core-0.12", 2, 1},
	} {
		req := fp8Request(t, step.FP8, step.FP8Delayed, 64)
		req.Cluster = cluster(t, "hgx-b200", 1)
		req.Training.Framework = c.fw
		plain := mustEstimate(t, req)
		req.Training.FP8Params = true
		params := mustEstimate(t, req)
		for _, x := range []struct {
			name      string
			got, want float64
		}{{"fp8 weight copies", plain.Memory.FP8Weights, c.plain * matmul / 1e9}, {"with fp8 weights", params.Memory.FP8Weights, c.with * matmul / 1e9}} {
			if math.Abs(x.got-x.want) > 0.02*matmul/1e9 {
				t.Errorf("%s on B200, %s: %.2f GB, want %.2f GB", c.fw, x.name, x.got, x.want)
			}
		}
	}
}
