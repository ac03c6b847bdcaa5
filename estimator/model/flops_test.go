package model_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/model"
)

var megatronTable1 = []string{"megatron-1.7b", "megatron-3.6b", "megatron-7.5b", "megatron-18.4b",
	"megatron-39.1b", "megatron-76.1b", "megatron-145.6b", "megatron-310.1b", "megatron-529.6b",
	"megatron-1t", "gpt3-175b"}

// Narayanan et al. 2021 eq. 3: F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per iteration
// with full recomputation. It is 4 layer forwards (forward, recompute, backward = 2)
// plus 3 logits forwards (the output layer is not recomputed): the layer part is
// 96·B·s·l·h²·(1 + s/6h) and the logits part 6·B·s·h·V. So the forward pass is
// 24·B·s·l·h²·(1 + s/6h) + 2·B·s·h·V — not 24·B·s·l·h²·(1 + s/6h + V/16lh), which
// counts only 1.5·s·h·V of logits and is up to 1.6 % low for the 1.7B model.
func TestForwardFLOPsMatchNarayanan(t *testing.T) {
	const s, batch = 2048, 512
	for _, name := range megatronTable1 {
		a := mustLookup(t, name)
		l, h, v := float64(a.Layers), float64(a.Hidden), float64(a.Vocab)
		eq3 := 96 * batch * s * l * h * h * (1 + s/(6*h) + v/(16*l*h))
		got := batch * (4*a.LayersForwardFLOPs(s) + 3*a.LogitsFLOPs(s))
		if relErr(got, eq3) > 1e-12 {
			t.Errorf("%s: 4·layers + 3·logits = %.6g per iteration, eq. 3 gives %.6g", name, got, eq3)
		}
		fwd := 24*batch*s*l*h*h*(1+s/(6*h)) + 2*batch*s*h*v
		if relErr(batch*a.ForwardFLOPs(s), fwd) > 1e-12 {
			t.Errorf("%s: forward %.6g, want %.6g", name, batch*a.ForwardFLOPs(s), fwd)
		}
		loose := 24 * batch * s * l * h * h * (1 + s/(6*h) + v/(16*l*h))
		if e := relErr(batch*a.ForwardFLOPs(s), loose); e > 0.02 {
			t.Errorf("%s: forward differs from 24Bslh²(1+s/6h+V/16lh) by %.2f %%", name, 100*e)
		}
	}
}

// MosaicML's MFU formula (llm-foundry): forward = 2·n_params·s + 4·n_layers·h·s²,
// with n_params the whole (tied) model. The package's FLOPs skip the norm weights.
func TestForwardFLOPsMatchMosaic(t *testing.T) {
	const s = 2048
	for _, name := range []string{"mpt-7b", "mpt-13b", "mpt-30b", "mpt-70b"} {
		a := mustLookup(t, name)
		p := a.Params()
		n := p.Total - float64(a.Layers)*p.PerLayerNorm - p.FinalNorm
		want := 2*n*s + 4*float64(a.Layers)*float64(a.Hidden)*s*s
		if got := a.ForwardFLOPs(s); relErr(got, want) > 1e-12 {
			t.Errorf("%s: forward %.6g, want %.6g", name, got, want)
		}
		withNorms := 2*p.Total*s + 4*float64(a.Layers)*float64(a.Hidden)*s*s
		if relErr(a.ForwardFLOPs(s), withNorms) > 1e-4 {
			t.Errorf("%s: forward differs from MosaicML's formula by more than 0.01 %%", name)
		}
	}
}

// Every model: forward = 2·s·(matrix parameters a token passes through) + 4·L·s²·q,
// where the matrix parameters are Active without the embedding and norms but with
// the output projection (once, tied or not), and q is the query width (heads ×
// head_dim: the hidden size unless the model sets head_dim, as Qwen3 does). With MLA
// the context term runs over the value heads: 2·L·s²·(q + v).
func TestForwardFLOPsIsTwoActiveParamsPerToken(t *testing.T) {
	for _, a := range model.Catalog() {
		for _, s := range []int{1, 2048, 8192} {
			p := a.Params()
			matrix := p.Active - p.Embedding - float64(a.Layers)*p.PerLayerNorm - p.FinalNorm +
				float64(a.Vocab*a.Hidden) - p.Output
			if a.MLA != nil {
				matrix -= float64(a.Layers * (a.MLA.QLoRARank + a.MLA.KVLoRARank)) // the latents' norms
			}
			sf := float64(s)
			core := float64(a.QDim()+a.VOutDim()) * a.AttentionSpan(s) // scores over queries/keys, context over values; windows
			want := 2*sf*matrix + 2*float64(a.Layers)*sf*sf*core
			if got := a.ForwardFLOPs(s); relErr(got, want) > 1e-12 {
				t.Errorf("%s s=%d: forward %.6g, want %.6g", a.Name, s, got, want)
			}
			causal := want - float64(a.Layers)*sf*sf*core
			if got := a.CausalForwardFLOPs(s); relErr(got, causal) > 1e-12 {
				t.Errorf("%s s=%d: causal forward %.6g, want %.6g", a.Name, s, got, causal)
			}
			var sum float64
			for i := range a.Layers {
				sum += a.LayerFLOPs(i, s).Total()
			}
			if relErr(sum+a.LogitsFLOPs(s), a.ForwardFLOPs(s)) > 1e-12 || relErr(sum, a.LayersForwardFLOPs(s)) > 1e-12 {
				t.Errorf("%s s=%d: per-layer sum %.6g disagrees with ForwardFLOPs", a.Name, s, sum)
			}
		}
	}
}

func TestLayerFLOPsTerms(t *testing.T) {
	const s = 4096.0
	tests := []struct {
		name string
		arch string
		want model.LayerFLOPs
	}{
		{"gpt3 dense MHA", "gpt3-175b", model.LayerFLOPs{
			QKV: 2 * s * 12288 * 3 * 12288, Scores: 2 * s * s * 12288, Context: 2 * s * s * 12288,
			Out: 2 * s * 12288 * 12288, MLP: 2 * s * 2 * 12288 * 49152}},
		{"llama2-70b GQA gated", "llama2-70b", model.LayerFLOPs{
			QKV: 2 * s * 8192 * (8192 + 2*1024), Scores: 2 * s * s * 8192, Context: 2 * s * s * 8192,
			Out: 2 * s * 8192 * 8192, MLP: 2 * s * 3 * 8192 * 28672}},
		{"mixtral top-2 of 8", "mixtral-8x7b", model.LayerFLOPs{
			QKV: 2 * s * 4096 * (4096 + 2*1024), Scores: 2 * s * s * 4096, Context: 2 * s * s * 4096,
			Out: 2 * s * 4096 * 4096, Router: 2 * s * 4096 * 8, Experts: 2 * s * 2 * 3 * 4096 * 14336}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustLookup(t, tt.arch).LayerFLOPs(5, int(s))
			got.ElementwiseBytes, got.SoftmaxBytes = 0, 0
			if got != tt.want {
				t.Errorf("LayerFLOPs = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestGQAReducesKVFLOPs(t *testing.T) {
	gqa := mustLookup(t, "llama3-70b")
	mha := gqa
	mha.KVHeads = mha.Heads
	g, m := gqa.LayerFLOPs(0, 8192), mha.LayerFLOPs(0, 8192)
	// Q is h×h, K and V h×1024 each instead of h×h.
	if want := (8192.0 + 2*1024) / (3 * 8192); relErr(g.QKV/m.QKV, want) > 1e-12 {
		t.Errorf("GQA/MHA QKV ratio %.4f, want %.4f", g.QKV/m.QKV, want)
	}
	if g.Scores != m.Scores || g.Context != m.Context || g.Out != m.Out || g.MLP != m.MLP {
		t.Error("GQA changed FLOPs other than the K/V projections")
	}
}

func TestMoEActiveFLOPs(t *testing.T) {
	a := mustLookup(t, "mixtral-8x7b")
	dense := a
	dense.MoE = nil // the same model with one 14336-wide SwiGLU MLP per layer
	m, d := a.LayerFLOPs(0, 4096), dense.LayerFLOPs(0, 4096)
	if m.MLP != 0 || relErr(m.Experts, 2*d.MLP) > 1e-12 || m.Router != 2*4096*4096*8 {
		t.Errorf("top-2 experts should do twice a dense MLP's work: experts %g, dense MLP %g", m.Experts, d.MLP)
	}
	// Doubling the experts at the same top-k leaves the expert FLOPs unchanged.
	b := a
	b.MoE = &model.MoE{Experts: 16, TopK: 2, ExpertFFN: 14336, Frequency: 1}
	if b.LayerFLOPs(0, 4096).Experts != m.Experts {
		t.Error("expert FLOPs depend on the number of experts")
	}
	// Every other layer MoE: dense layers have an MLP and no experts.
	b.MoE.Frequency = 2
	if f0, f1 := b.LayerFLOPs(0, 64), b.LayerFLOPs(1, 64); f0.Experts != 0 || f0.MLP == 0 || f1.Experts == 0 || f1.MLP != 0 {
		t.Errorf("layer 0 %+v, layer 1 %+v", f0, f1)
	}
}

func TestCausalHalvesAttentionCore(t *testing.T) {
	f := mustLookup(t, "llama3-8b").LayerFLOPs(0, 8192)
	c := f.Causal()
	if c.Scores != f.Scores/2 || c.Context != f.Context/2 || c.SoftmaxBytes != f.SoftmaxBytes/2 ||
		c.AttentionCore() != f.AttentionCore()/2 || c.QKV != f.QKV || c.MLP != f.MLP ||
		c.ElementwiseBytes != f.ElementwiseBytes {
		t.Errorf("Causal() = %+v from %+v", c, f)
	}
}

func TestMemoryBoundBytes(t *testing.T) {
	const s = 2048.0
	// GPT-3, non-gated: per token 2 norms (2h each) + 2 residual adds (3h each) + GeLU (2f).
	g := mustLookup(t, "gpt3-175b")
	h, f := 12288.0, 49152.0
	if got, want := g.LayerFLOPs(0, int(s)).ElementwiseBytes, 2*s*(10*h+2*f); got != want {
		t.Errorf("GPT-3 elementwise bytes %g, want %g", got, want)
	}
	if got, want := g.LayerFLOPs(0, int(s)).SoftmaxBytes, 4*96*s*s; got != want {
		t.Errorf("GPT-3 softmax bytes %g, want %g", got, want)
	}
	// Mixtral: SwiGLU on top-2 experts (3·2·f) plus permute and combine (2(h+2h)).
	m := mustLookup(t, "mixtral-8x7b")
	h, f = 4096, 14336
	if got, want := m.LayerFLOPs(0, int(s)).ElementwiseBytes, 2*s*(10*h+3*2*f+2*(h+2*h)); got != want {
		t.Errorf("Mixtral elementwise bytes %g, want %g", got, want)
	}
	if got, want := g.HeadBytes(int(s)), s*(2*4*12288+10*51200); got != want {
		t.Errorf("head bytes %g, want %g", got, want)
	}
}

func TestFLOPsOutOfRange(t *testing.T) {
	a := mustLookup(t, "llama3-8b")
	zero := model.LayerFLOPs{}
	if a.LayerFLOPs(-1, 10) != zero || a.LayerFLOPs(32, 10) != zero || a.LayerFLOPs(0, 0) != zero {
		t.Error("out-of-range layer or empty sequence gave work")
	}
	if a.ForwardFLOPs(0) != 0 || a.CausalForwardFLOPs(-1) != 0 || a.LogitsFLOPs(0) != 0 || a.HeadBytes(0) != 0 {
		t.Error("empty sequence gave work")
	}
	if a.GEMMs(32, model.Partition{MicroBatch: 1, Seq: 8}) != nil || a.GEMMs(0, model.Partition{Seq: 8}) != nil {
		t.Error("GEMMs for an out-of-range layer or an empty micro-batch")
	}
}

func TestGEMMsSumToLayerFLOPs(t *testing.T) {
	for _, a := range append(model.Catalog(), withMoE(model.MoE{Experts: 16, TopK: 4, ExpertFFN: 1024, Frequency: 2})) {
		for _, i := range []int{0, 1} {
			for _, b := range []int{1, 4} {
				p := model.Partition{MicroBatch: b, Seq: 2048}
				var sum float64
				for _, g := range a.GEMMs(i, p) {
					sum += g.FLOPs()
				}
				tol := 1e-12
				if a.Windowed(i) {
					tol = 1e-4 // the window's mean keys per query, rounded to whole keys
				}
				if want := float64(b) * a.LayerFLOPs(i, 2048).Total(); relErr(sum, want) > tol {
					t.Errorf("%s layer %d b=%d: GEMMs %.6g FLOPs, LayerFLOPs %.6g", a.Name, i, b, sum, want)
				}
				p.Causal = true
				sum = 0
				for _, g := range a.GEMMs(i, p) {
					sum += g.FLOPs()
				}
				if want := float64(b) * a.LayerFLOPs(i, 2048).Causal().Total(); relErr(sum, want) > tol {
					t.Errorf("%s layer %d b=%d causal: GEMMs %.6g FLOPs, want %.6g", a.Name, i, b, sum, want)
				}
			}
		}
		if got, want := a.LogitsGEMM(model.Partition{MicroBatch: 2, Seq: 2048}).FLOPs(), 2*a.LogitsFLOPs(2048); got != want {
			t.Errorf("%s: logits GEMM %g, want %g", a.Name, got, want)
		}
	}
}

// With TP t (dividing everything), each GPU does 1/t of every GEMM but the replicated
// router; with CP c, 1/c of every GEMM.
func TestGEMMsShardWithTPAndCP(t *testing.T) {
	for _, name := range []string{"gpt3-175b", "llama3-70b", "mixtral-8x7b"} {
		a := mustLookup(t, name)
		full := a.GEMMs(0, model.Partition{MicroBatch: 2, Seq: 4096})
		for _, p := range []model.Partition{
			{MicroBatch: 2, Seq: 4096, TP: 8},
			{MicroBatch: 2, Seq: 4096, CP: 4},
			{MicroBatch: 2, Seq: 4096, TP: 2, CP: 2},
		} {
			shard := a.GEMMs(0, p)
			if len(shard) != len(full) {
				t.Fatalf("%s %+v: %d GEMMs, unsharded %d", name, p, len(shard), len(full))
			}
			for j := range shard {
				div := float64(max(p.TP, 1) * max(p.CP, 1))
				if shard[j].Name == model.GEMMRouter {
					div = float64(max(p.CP, 1))
				}
				if relErr(shard[j].FLOPs()*div, full[j].FLOPs()) > 1e-12 {
					t.Errorf("%s %+v %s: %g FLOPs, unsharded %g", name, p, shard[j].Name, shard[j].FLOPs(), full[j].FLOPs())
				}
			}
		}
	}
}

func TestGEMMShapes(t *testing.T) {
	find := func(gs []model.GEMM, name string) model.GEMM {
		for _, g := range gs {
			if g.Name == name {
				return g
			}
		}
		t.Fatalf("no GEMM %s in %+v", name, gs)
		return model.GEMM{}
	}
	l70 := mustLookup(t, "llama2-70b") // 64 heads, 8 KV heads of 128, ffn 28672
	tests := []struct {
		name string
		got  model.GEMM
		want model.GEMM
	}{
		{"qkv tp8: 8 q + 2·1 kv heads", find(l70.GEMMs(0, model.Partition{MicroBatch: 1, Seq: 4096, TP: 8}), model.GEMMQKV),
			model.GEMM{Name: "qkv", M: 4096, N: (8 + 2) * 128, K: 8192, Count: 1}},
		{"qkv tp16 replicates kv heads", find(l70.GEMMs(0, model.Partition{MicroBatch: 1, Seq: 4096, TP: 16}), model.GEMMQKV),
			model.GEMM{Name: "qkv", M: 4096, N: (4 + 2) * 128, K: 8192, Count: 1}},
		{"out row-parallel", find(l70.GEMMs(0, model.Partition{MicroBatch: 2, Seq: 4096, TP: 8}), model.GEMMOut),
			model.GEMM{Name: "out", M: 8192, N: 8192, K: 1024, Count: 1}},
		{"gate+up column-parallel", find(l70.GEMMs(0, model.Partition{MicroBatch: 1, Seq: 4096, TP: 8}), model.GEMMMLPGateUp),
			model.GEMM{Name: "mlp_gate_up", M: 4096, N: 2 * 3584, K: 8192, Count: 1}},
		{"down row-parallel", find(l70.GEMMs(0, model.Partition{MicroBatch: 1, Seq: 4096, TP: 8}), model.GEMMMLPDown),
			model.GEMM{Name: "mlp_down", M: 4096, N: 8192, K: 3584, Count: 1}},
		{"scores per head, cp", find(l70.GEMMs(0, model.Partition{MicroBatch: 2, Seq: 4096, TP: 8, CP: 2}), model.GEMMScores),
			model.GEMM{Name: "scores", M: 2048, N: 4096, K: 128, Count: 2 * 8}},
		{"context causal", find(l70.GEMMs(0, model.Partition{MicroBatch: 1, Seq: 4096, Causal: true}), model.GEMMContext),
			model.GEMM{Name: "context", M: 4096, N: 128, K: 2048, Count: 64}},
		{"gpt3 mlp up non-gated", find(mustLookup(t, "gpt3-175b").GEMMs(0, model.Partition{MicroBatch: 1, Seq: 2048, TP: 8}), model.GEMMMLPUp),
			model.GEMM{Name: "mlp_up", M: 2048, N: 6144, K: 12288, Count: 1}},
		{"logits vocab-parallel", l70.LogitsGEMM(model.Partition{MicroBatch: 1, Seq: 4096, TP: 8}),
			model.GEMM{Name: "logits", M: 4096, N: 4000, K: 8192, Count: 1}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
}

func TestGEMMsMoEExpertParallel(t *testing.T) {
	a := mustLookup(t, "mixtral-8x7b") // 8 experts, top-2, ffn 14336
	tests := []struct {
		p    model.Partition
		want model.GEMM
	}{
		// 4096 tokens × top-2 / 8 experts = 1024 tokens per expert, 8 experts local.
		{model.Partition{MicroBatch: 1, Seq: 4096}, model.GEMM{Name: "experts_gate_up", M: 1024, N: 2 * 14336, K: 4096, Count: 8}},
		// EP 8: one local expert gets the tokens of 8 GPUs: 8 × 4096 × 2 / 8.
		{model.Partition{MicroBatch: 1, Seq: 4096, EP: 8}, model.GEMM{Name: "experts_gate_up", M: 8192, N: 2 * 14336, K: 4096, Count: 1}},
		// EP 2 and expert TP 2.
		{model.Partition{MicroBatch: 2, Seq: 4096, EP: 2, TP: 2}, model.GEMM{Name: "experts_gate_up", M: 4096, N: 14336, K: 4096, Count: 4}},
	}
	for _, tt := range tests {
		gs := a.GEMMs(0, tt.p)
		var got model.GEMM
		var expertFLOPs float64
		for _, g := range gs {
			if g.Name == model.GEMMExpertsGateUp {
				got = g
			}
			if g.Name == model.GEMMExpertsGateUp || g.Name == model.GEMMExpertsDown {
				expertFLOPs += g.FLOPs()
			}
		}
		if got != tt.want {
			t.Errorf("%+v: %+v, want %+v", tt.p, got, tt.want)
		}
		// EP moves work between GPUs but does not change its amount per GPU.
		tokens := float64(tt.p.MicroBatch * tt.p.Seq)
		want := tokens / 4096 * a.LayerFLOPs(0, 4096).Experts / float64(max(tt.p.TP, 1))
		if relErr(expertFLOPs, want) > 1e-12 {
			t.Errorf("%+v: expert FLOPs per GPU %g, want %g", tt.p, expertFLOPs, want)
		}
	}
}

func TestGEMMBackward(t *testing.T) {
	g := model.GEMM{Name: "qkv", M: 4096, N: 1280, K: 8192, Count: 3}
	b := g.Backward()
	want := [2]model.GEMM{
		{Name: "qkv.dgrad", M: 4096, N: 8192, K: 1280, Count: 3},
		{Name: "qkv.wgrad", M: 8192, N: 1280, K: 4096, Count: 3},
	}
	if b != want {
		t.Fatalf("Backward() = %+v, want %+v", b, want)
	}
	if b[0].FLOPs() != g.FLOPs() || b[1].FLOPs() != g.FLOPs() || g.FLOPs() != 2*4096*1280*8192*3 {
		t.Error("backward GEMMs do not each match the forward FLOPs")
	}
	if math.IsInf(g.FLOPs(), 0) {
		t.Error("overflow")
	}
}
