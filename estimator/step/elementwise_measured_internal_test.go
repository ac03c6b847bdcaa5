package step

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
)

// measuredElementwise is one published time of a layer's elementwise kernel by
// shape (testdata/elementwise_measured.jsonl; testdata/README.md gives each
// source's URL, commit, GPU and what its benchmark times): RMSNorm over `width`
// hidden units or the SwiGLU activation over `width` gated columns (its input is
// 2·width wide), on `tokens` tokens in bf16, forward (`fwd`) or forward, the
// benchmark's out.sum() and the backward of both (`fwd_bwd_sum`).
type measuredElementwise struct {
	Source string  `json:"source"`
	GPU    string  `json:"gpu"`
	Op     string  `json:"op"`
	Impl   string  `json:"impl"`
	Pass   string  `json:"pass"`
	Tokens float64 `json:"tokens"`
	Width  float64 `json:"width"`
	TimeMs float64 `json:"time_ms"`
}

func (m measuredElementwise) validate() error {
	switch {
	case m.Source == "":
		return fmt.Errorf("source: empty")
	case m.GPU == "":
		return fmt.Errorf("gpu: empty")
	case m.Op != "rmsnorm" && m.Op != "swiglu":
		return fmt.Errorf("op: %q is not rmsnorm or swiglu", m.Op)
	case m.Impl != "torch" && m.Impl != "megatron" && m.Impl != "liger" && m.Impl != "liger_in_place":
		return fmt.Errorf("impl: %q is not torch, megatron, liger or liger_in_place", m.Impl)
	case m.Pass != "fwd" && m.Pass != "fwd_bwd_sum":
		return fmt.Errorf("pass: %q is not fwd or fwd_bwd_sum", m.Pass)
	case m.Tokens < 1 || m.Width < 1:
		return fmt.Errorf("tokens, width: not both positive")
	case !(m.TimeMs > 0):
		return fmt.Errorf("time_ms: %g not positive", m.TimeMs)
	}
	return nil
}

// modelBytes is the HBM traffic the step model counts for the measured pass, in
// bytes: per token, a norm reads and writes its width (2·width 16-bit elements,
// as the model's elementwisePerHidden counts each of the layer's two norms) and the
// activation reads the gate and up halves and writes their product (3·width: the
// layer's act, mlpMats·FFN); the backward moves twice the forward (layerCompute:
// bwd += 2·elem). The benchmark's pass adds out.sum(), which reads the output
// (width elements a token) and whose gradient is a stride-0 expansion that
// moves nothing.
func (m measuredElementwise) modelBytes() float64 {
	per := 2 * m.Width
	if m.Op == "swiglu" {
		per = 3 * m.Width
	}
	if m.Pass == "fwd_bwd_sum" {
		per = 3*per + m.Width
	}
	return 2 * m.Tokens * per
}

func loadMeasuredElementwise(t *testing.T) []measuredElementwise {
	t.Helper()
	return loadMeasured[measuredElementwise](t, "elementwise_measured.jsonl")
}

// largeElementwiseBytes is where a measured pass is counted as streaming: below
// 64 MB of the model's traffic a launch and the last wave's tail are a large part
// of the time (torch.nn.RMSNorm's forward on H100: 12.8 µs at 17 MB, 19.0 µs at
// 34 MB, 32.5 µs at 67 MB).
const largeElementwiseBytes = 64e6

// TestElementwisePricesAgainstMeasuredKernels prices each published elementwise
// kernel time (testdata/elementwise_measured.jsonl) as the step model prices a
// layer's elementwise traffic — the model's byte count (modelBytes) at the GPU's
// HBM rate (Constants.HBMEfficiency of the datasheet bandwidth) — and reports,
// by source, op, implementation and pass, the error (priced ÷ measured − 1) and
// the fraction of the datasheet bandwidth the kernel reaches on the model's count
// (the HBMEfficiency that would price it right). It fails if the mean |error| of
// a group's streaming rows (largeElementwiseBytes) grows past today's.
//
// It then prices one Llama 3 8B layer (8 192 tokens, TP 1, Megatron-Core, H100)
// with the shipped constants and again with its elementwise traffic at the
// measured rates of the kernels Megatron-Core and PyTorch run (norms, residual adds
// and rotary at torch.nn.RMSNorm's forward-and-backward fraction, the activation
// at bias_swiglu_impl's) and its attention at the kernels' level (FlashAttention-2,
// 0.339 of the H100's 16-bit peak: attention_measured.jsonl), and logs the
// layer's budget by category both ways (docs/step-model.md, "Where a layer's
// time goes, against published elementwise-kernel times").
func TestElementwisePricesAgainstMeasuredKernels(t *testing.T) {
	k := DefaultConstants()
	rows := loadMeasuredElementwise(t)
	type stat struct {
		n                 int
		sumAbs, sum, frac float64
	}
	groups := map[string]*stat{}
	var keys []string
	for _, m := range rows {
		gpu, err := catalog.GPU(m.GPU)
		if err != nil {
			t.Fatal(err)
		}
		r := catalogRates(t, &k, m.GPU, BF16)
		bytes := m.modelBytes()
		priced := bytes / r.hbm
		measured := m.TimeMs / 1e3
		e := priced/measured - 1
		frac := bytes / measured / (gpu.MemoryBandwidthGBps * 1e9)
		t.Logf("%-14s %-7s %-8s %-11s %6.0f tok × %6.0f: %8.1f µs measured, %8.1f µs priced (%+6.1f %%), %.2f of HBM",
			m.Source, m.Op, m.Impl, m.Pass, m.Tokens, m.Width, 1e6*measured, 1e6*priced, 100*e, frac)
		if bytes < largeElementwiseBytes {
			continue
		}
		key := strings.Join([]string{m.Source, m.GPU, m.Op, m.Impl, m.Pass}, " ")
		if groups[key] == nil {
			groups[key] = &stat{}
			keys = append(keys, key)
		}
		g := groups[key]
		g.n++
		g.sumAbs += math.Abs(e)
		g.sum += e
		g.frac += frac
	}
	sort.Strings(keys)
	// Today's mean |error| of each group's streaming rows, rounded up to the next
	// 0.5 point. Negative errors: the model prices the kernels faster than they run.
	bounds := map[string]float64{
		"liger-27fe47e H100-SXM rmsnorm liger fwd":                 0.145,
		"liger-27fe47e H100-SXM rmsnorm liger fwd_bwd_sum":         0.655,
		"liger-27fe47e H100-SXM rmsnorm megatron fwd":              0.375,
		"liger-27fe47e H100-SXM rmsnorm megatron fwd_bwd_sum":      0.615,
		"liger-27fe47e H100-SXM rmsnorm torch fwd":                 0.375,
		"liger-27fe47e H100-SXM rmsnorm torch fwd_bwd_sum":         0.615,
		"liger-2120862 H100-SXM swiglu liger fwd":                  0.06,
		"liger-2120862 H100-SXM swiglu liger fwd_bwd_sum":          0.20,
		"liger-2120862 H100-SXM swiglu liger_in_place fwd":         0.06,
		"liger-2120862 H100-SXM swiglu liger_in_place fwd_bwd_sum": 0.20,
		"liger-2120862 H100-SXM swiglu megatron fwd":               0.405,
		"liger-2120862 H100-SXM swiglu megatron fwd_bwd_sum":       0.665,
		"liger-2120862 H100-SXM swiglu torch fwd":                  0.66,
		"liger-2120862 H100-SXM swiglu torch fwd_bwd_sum":          0.635,
	}
	fracOf := map[string]float64{}
	for _, key := range keys {
		g := groups[key]
		n := float64(g.n)
		fracOf[key] = g.frac / n
		t.Logf("%-52s n %2d  mean |error| %5.1f %%  mean error %+6.1f %%  %.2f of HBM", key, g.n, 100*g.sumAbs/n, 100*g.sum/n, g.frac/n)
		b, ok := bounds[key]
		if !ok {
			t.Errorf("%s: no bound (today's mean |error| %.1f %%)", key, 100*g.sumAbs/n)
			continue
		}
		if g.sumAbs/n > b {
			t.Errorf("%s: mean |error| %.1f %% > %.1f %%", key, 100*g.sumAbs/n, 100*b)
		}
	}

	// One Llama 3 8B layer's budget, priced as shipped and re-priced at the
	// measured rates.
	a, cl := catalogPair(t, "llama3-8b", "dgx-h100", 1)
	req := normalise(Request{Model: a, Cluster: cl,
		Training: Training{SeqLen: 4096, GlobalBatch: 16, Precision: BF16, Framework: "megatron-core"},
		Layout:   Layout{TP: 1, PP: 1, DP: 8, CP: 1, EP: 1, ETP: 1, MicroBatch: 2}})
	r := catalogRates(t, &k, "H100", BF16)
	const tokens = 8192
	lt := New().layerCompute(req, &r, tokens, 4096, 4096, false)
	gpuF, gpuB := lt.fwd-lt.hostFwd, lt.bwd-lt.hostBwd
	attn := lt.attnFwd + lt.attnBwd
	elem := lt.elemFwd + lt.elemBwd
	gemm := gpuF + gpuB - attn - elem
	if gemm <= 0 || elem <= 0 || attn <= 0 {
		t.Fatalf("layer parts: GEMMs %.3g, attention %.3g, elementwise %.3g s", gemm, attn, elem)
	}
	// The model's elementwise traffic splits into the hidden-wide kernels
	// (elementwisePerHidden·h) and the activation (mlpMats·FFN), as layerCompute
	// counts them.
	h, f := float64(a.Hidden), float64(a.FFN)
	hShare := elementwisePerHidden * h / (elementwisePerHidden*h + 3*f)
	normFrac := fracOf["liger-27fe47e H100-SXM rmsnorm torch fwd_bwd_sum"]
	actFrac := fracOf["liger-2120862 H100-SXM swiglu megatron fwd_bwd_sum"]
	if normFrac <= 0 || actFrac <= 0 {
		t.Fatalf("no measured fraction for the norm (%v) or the activation (%v)", normFrac, actFrac)
	}
	elemM := elem * k.HBMEfficiency * (hShare/normFrac + (1-hShare)/actFrac)
	attnM := attn * k.AttentionEfficiency[r.arch] / kernelAttentionEfficiency
	total, totalM := gemm+attn+elem, gemm+attnM+elemM
	t.Logf("Llama 3 8B layer, 8 192 tokens, H100, forward + backward (ms): as priced GEMMs %.2f (%.0f %%), attention %.2f (%.0f %%), elementwise %.2f (%.0f %%), total %.2f",
		1e3*gemm, 100*gemm/total, 1e3*attn, 100*attn/total, 1e3*elem, 100*elem/total, 1e3*total)
	t.Logf("  at the measured rates (norms %.2f, activation %.2f of HBM; attention %.3g): GEMMs %.2f (%.0f %%), attention %.2f (%.0f %%), elementwise %.2f (%.0f %%), total %.2f",
		normFrac, actFrac, kernelAttentionEfficiency, 1e3*gemm, 100*gemm/totalM, 1e3*attnM, 100*attnM/totalM, 1e3*elemM, 100*elemM/totalM, 1e3*totalM)
	// What the shipped attention level holds over the kernels' is time the
	// measured elementwise rates more than fill: the finding the docs record.
	if attn-attnM <= 0 || elemM-elem <= attn-attnM {
		t.Errorf("attention held slow by %.3g ms, elementwise under-priced by %.3g ms: the docs' comparison no longer holds", 1e3*(attn-attnM), 1e3*(elemM-elem))
	}
}

// kernelAttentionEfficiency is the fraction of the H100's 16-bit peak that
// FlashAttention-2's causal forward reaches at 16k keys and head 128 (335 of 989
// TFLOP/s: testdata/attention_measured.jsonl, fa3-fig5; docs/step-model.md,
// "Attention prices against published attention-kernel measurements").
const kernelAttentionEfficiency = 0.339
