// Package model describes transformer language models: their architecture, parameter
// counts and the floating-point work of each operation, and a catalog of published
// models.
//
// Conventions used throughout the package (see also params.go and flops.go):
//
//   - Zero means "the default" for three fields: KVHeads 0 is Heads (multi-head
//     attention), MoE.ExpertFFN 0 is FFN and MoE.Frequency 0 is 1 (every layer is an
//     MoE layer). Validate accepts those zeros; Normalise writes the defaults out.
//     Catalog entries always carry explicit values.
//   - Layers are numbered from 0. With MoE, layer i is an MoE layer when
//     (i+1) % Frequency == 0: Frequency 1 makes every layer MoE (Mixtral), Frequency 2
//     makes layers 1, 3, 5, … MoE and the model has ⌊Layers/Frequency⌋ MoE layers.
//     (Megatron-Core's integer moe_layer_freq starts at layer 0 instead, which gives
//     ⌈Layers/Frequency⌉; the two agree when Frequency divides Layers.)
//   - No linear layer has a bias and every norm has one weight vector of size Hidden
//     (RMSNorm, or LayerNorm without bias as in MPT). Models that do have biases and
//     LayerNorm biases (GPT-3, Megatron GPT) have 13·Hidden more parameters per layer,
//     under 0.05 % of any catalog model, so there is no field for them; the one
//     exception is MoE.Bias, whose parameters are not counted either but whose
//     application some frameworks run as kernels of its own. Learned
//     absolute position embeddings (GPT-3, Megatron GPT: seq·Hidden parameters,
//     ≤ 0.3 %) are likewise not counted.
package model

import "github.com/stepcost/stepcost/estimator/invalid"

// MoE describes mixture-of-experts MLP layers.
type MoE struct {
	Experts   int `json:"experts"`    // routed experts per MoE layer
	TopK      int `json:"top_k"`      // experts each token is routed to
	ExpertFFN int `json:"expert_ffn"` // FFN hidden size of one expert (0: the dense FFN size)
	// Frequency: every Frequency-th layer is an MoE layer (1: all layers).
	Frequency int `json:"frequency"`
	// SharedExperts are experts every token passes through besides its routed ones,
	// each of ExpertFFN (DeepSeek-V2/V3, Llama 4): replicated like a dense MLP, not
	// sharded by expert parallelism.
	SharedExperts int `json:"shared_experts,omitempty"`
	// FirstDense: the first FirstDense layers have a dense MLP (DeepSeek-V3's
	// first_k_dense_replace, 3); the Frequency rule applies from there on.
	FirstDense int `json:"first_dense,omitempty"`
	// Groups and TopKGroups are group-limited routing (DeepSeek-V3's n_group 8 and
	// topk_group 4): the experts form Groups groups and a token's top-k experts come
	// from its TopKGroups best groups. With the groups laid out on nodes, a token
	// reaches at most TopKGroups nodes (the report's node-limited routing, §2.1.2,
	// M = 4). 0: no limit.
	Groups     int `json:"groups,omitempty"`
	TopKGroups int `json:"topk_groups,omitempty"`
	// Bias: the routed experts' linear layers carry biases (gpt-oss: each
	// expert's gate_up_proj_bias and down_proj_bias, Hugging Face transformers'
	// GptOssExperts; Megatron-Core's add_bias_linear on an MoE model). Their
	// parameters (a few thousand per expert) are not counted; what applying them
	// costs depends on the framework (framework.Profile.ExpertBiasUnfused).
	Bias bool `json:"bias,omitempty"`
}

// MLA is multi-head latent attention (DeepSeek-V2/V3): queries and keys/values pass
// through low-rank latent projections, and each head's query and key have a part
// without position (nope) and a rotary part (rope) shared by all heads' keys.
//
//	q  = W_qb · norm(W_qa · x)          (or W_q · x without QLoRARank)
//	kv = W_kvb · norm(c),  [c, k_rope] = W_kva · x
//	out = W_o · attention(q, k, v)
type MLA struct {
	QLoRARank  int `json:"q_lora_rank"` // 0: queries projected directly
	KVLoRARank int `json:"kv_lora_rank"`
	QKNopeDim  int `json:"qk_nope_head_dim"`
	QKRopeDim  int `json:"qk_rope_head_dim"`
	VDim       int `json:"v_head_dim"`
}

// Arch is a decoder-only transformer.
type Arch struct {
	Name    string `json:"name"`
	Layers  int    `json:"layers"`
	Hidden  int    `json:"hidden"`
	Heads   int    `json:"heads"`
	KVHeads int    `json:"kv_heads"` // key/value heads (grouped-query attention); = Heads for MHA
	// HeadSize is the size of one attention head when it is not Hidden/Heads (Qwen3:
	// 128 with 32 heads of a 2048 hidden); 0: Hidden/Heads.
	HeadSize int `json:"head_dim,omitempty"`
	FFN      int `json:"ffn"` // MLP hidden size
	// GatedMLP: SwiGLU-style MLP with three matrices (gate, up, down) instead of two.
	GatedMLP bool `json:"gated_mlp"`
	// GLUClamp: the gated MLP clamps its two inputs before the activation
	// (gpt-oss's SwiGLU with limit 7: openai/gpt-oss-20b config.json
	// swiglu_limit; Megatron-Core's activation_func_clamp_value). What the clamp
	// costs depends on the framework (framework.Profile.GLUClampUnfused).
	GLUClamp       bool `json:"glu_clamp,omitempty"`
	Vocab          int  `json:"vocab"`
	TiedEmbeddings bool `json:"tied_embeddings"` // output projection shares the input embedding
	// MTPLayers is the depth of multi-token prediction (DeepSeek-V3 §2.2, config.json
	// num_nextn_predict_layers 1): each module predicts one more token ahead with one
	// more transformer layer (an MoE layer in an MoE model), a 2h → h projection of
	// the previous depth's output and the next token's embedding, two norms, and the
	// embedding and output layer shared with the model. Its parameters are not
	// counted in the model's total (DeepSeek-V3's 671 B excludes its 14 B).
	MTPLayers int  `json:"mtp_layers,omitempty"`
	MoE       *MoE `json:"moe,omitempty"`
	// MLA replaces grouped-query attention's projections (KVHeads and head_dim are
	// then unused).
	MLA *MLA `json:"mla,omitempty"`
	// SlidingWindow is how many tokens a query attends to, itself included, in the
	// layers with local attention (Mistral 7B: 4096 in every layer; Gemma 2: 4096
	// in every other layer; Gemma 3: 1024 in five layers of six); 0: every layer
	// attends to the whole (causal) sequence.
	SlidingWindow int `json:"sliding_window,omitempty"`
	// GlobalEvery makes every n-th layer (the n-th, 2n-th, …) attend to the whole
	// sequence and the others to the window (Gemma 2: 2, Gemma 3: 6); 0: every layer
	// has the window.
	GlobalEvery int    `json:"global_every,omitempty"`
	Source      string `json:"source,omitempty"`
}

// AttentionSpan is the attention-core work of the model's layers at sequence length
// seq, as a fraction of causal attention over the whole sequence in every layer:
// a query at position i attends to min(i, W) keys in a windowed layer against i in
// a global one, so a windowed layer does (W(W+1)/2 + (s−W)·W) / (s(s+1)/2) of the
// work when s > W.
func (a Arch) AttentionSpan(seq int) float64 {
	if a.SlidingWindow <= 0 || seq <= a.SlidingWindow || a.Layers < 1 {
		return 1
	}
	local := a.WindowedLayers()
	return (float64(local)*a.windowShare(seq) + float64(a.Layers-local)) / float64(a.Layers)
}

// WindowedLayers is how many of the layers attend through the sliding window (those
// Windowed reports): every layer but each GlobalEvery-th; 0 without a window.
func (a Arch) WindowedLayers() int {
	if a.SlidingWindow <= 0 || a.Layers < 1 {
		return 0
	}
	local := a.Layers
	if a.GlobalEvery > 0 {
		local -= a.Layers / a.GlobalEvery
	}
	return local
}

// Windowed says whether layer i attends through the sliding window (every layer
// but the GlobalEvery-th ones).
func (a Arch) Windowed(i int) bool {
	return a.SlidingWindow > 0 && (a.GlobalEvery == 0 || (i+1)%a.GlobalEvery != 0)
}

// windowShare is a windowed layer's attention work relative to causal attention
// over the whole sequence.
func (a Arch) windowShare(seq int) float64 {
	w, s := float64(a.SlidingWindow), float64(seq)
	if a.SlidingWindow <= 0 || seq <= a.SlidingWindow {
		return 1
	}
	return (w*(w+1)/2 + (s-w)*w) / (s * (s + 1) / 2)
}

// layerSpan is layer i's attention work relative to causal attention over the
// whole sequence.
func (a Arch) layerSpan(i, seq int) float64 {
	if a.Windowed(i) {
		return a.windowShare(seq)
	}
	return 1
}

// Upper bounds of Validate. They are far above any published model and keep every
// count and FLOP figure of this package finite and exact enough in float64, and every
// GEMM dimension well inside int.
const (
	MaxLayers  = 10_000
	MaxHidden  = 1 << 20 // 1 048 576
	MaxFFN     = 1 << 24 // 16 777 216
	MaxVocab   = 10_000_000
	MaxExperts = 1 << 16 // 65 536
	// MaxSlidingWindow is the step estimator's longest sequence (2^24 tokens).
	MaxSlidingWindow = 1 << 24
)

// Normalise returns a copy of a with the defaults written out: KVHeads 0 becomes
// Heads, MoE.ExpertFFN 0 becomes FFN, MoE.Frequency 0 becomes 1. The MoE block is
// copied, so the result shares nothing with a. Every other field is unchanged;
// Normalise does not validate.
func (a Arch) Normalise() Arch {
	if a.KVHeads == 0 {
		a.KVHeads = a.Heads
	}
	if a.MoE != nil {
		m := *a.MoE
		if m.ExpertFFN == 0 {
			m.ExpertFFN = a.FFN
		}
		if m.Frequency == 0 {
			m.Frequency = 1
		}
		a.MoE = &m
	}
	if a.MLA != nil {
		m := *a.MLA
		a.MLA = &m
	}
	return a
}

// Validate checks every field and returns all violations, each an *invalid.Error
// naming the JSON field ("layers", "kv_heads", "moe.top_k", …) and the rule. The
// defaulting zeros described in the package documentation are accepted.
func (a Arch) Validate() error { return a.ValidateAt("") }

// ValidateAt is Validate with every field name prefixed by path (for example
// "model." gives "model.kv_heads").
func (a Arch) ValidateAt(path string) error {
	c := invalid.Collector{Prefix: path}
	between(&c, "layers", a.Layers, 1, MaxLayers)
	between(&c, "hidden", a.Hidden, 1, MaxHidden)
	headsOK := between(&c, "heads", a.Heads, 1, MaxHidden)
	if a.MTPLayers != 0 {
		between(&c, "mtp_layers", a.MTPLayers, 0, MaxMTPLayers)
	}
	if a.SlidingWindow != 0 {
		between(&c, "sliding_window", a.SlidingWindow, 1, MaxSlidingWindow)
	}
	if a.GlobalEvery != 0 {
		// Every n-th layer (LocalAttention): past the layers none is, the window
		// applying to all as if global_every were not given.
		maxEvery := MaxLayers
		if a.Layers >= 1 && a.Layers <= MaxLayers {
			maxEvery = a.Layers
		}
		between(&c, "global_every", a.GlobalEvery, 1, maxEvery)
		if a.SlidingWindow == 0 {
			c.Add("global_every", "makes every n-th layer global among windowed ones: needs sliding_window")
		}
	}
	if a.GLUClamp && !a.GatedMLP {
		c.Add("glu_clamp", "clamps a gated MLP's inputs: needs gated_mlp")
	}
	if a.HeadSize != 0 {
		if between(&c, "head_dim", a.HeadSize, 1, MaxHidden) && headsOK && a.Heads*a.HeadSize > MaxFFN {
			c.Add("head_dim", "heads × head_dim must be at most %d (got %d × %d)", MaxFFN, a.Heads, a.HeadSize)
		}
	} else if headsOK && a.Hidden >= 1 && a.Hidden%a.Heads != 0 {
		c.Add("heads", "must divide hidden (%d) into whole heads, or give head_dim (got %d)", a.Hidden, a.Heads)
	}
	switch {
	case a.KVHeads == 0: // default: = heads
	case a.KVHeads < 0 || (headsOK && a.KVHeads > a.Heads):
		c.Add("kv_heads", "must be between 1 and heads (%d), or 0 for heads (got %d)", a.Heads, a.KVHeads)
	case headsOK && a.Heads%a.KVHeads != 0:
		c.Add("kv_heads", "must divide heads (%d) so that query heads share key/value heads evenly (got %d)", a.Heads, a.KVHeads)
	}
	if m := a.MLA; m != nil {
		if m.QLoRARank != 0 {
			between(&c, "mla.q_lora_rank", m.QLoRARank, 1, MaxHidden)
		}
		between(&c, "mla.kv_lora_rank", m.KVLoRARank, 1, MaxHidden)
		between(&c, "mla.qk_nope_head_dim", m.QKNopeDim, 1, MaxHidden)
		if m.QKRopeDim != 0 {
			between(&c, "mla.qk_rope_head_dim", m.QKRopeDim, 1, MaxHidden)
		}
		between(&c, "mla.v_head_dim", m.VDim, 1, MaxHidden)
	}
	between(&c, "ffn", a.FFN, 1, MaxFFN)
	between(&c, "vocab", a.Vocab, 1, MaxVocab)
	if m := a.MoE; m != nil {
		expertsOK := between(&c, "moe.experts", m.Experts, 2, MaxExperts)
		if expertsOK {
			between(&c, "moe.top_k", m.TopK, 1, m.Experts)
		} else {
			between(&c, "moe.top_k", m.TopK, 1, MaxExperts)
		}
		if m.ExpertFFN != 0 {
			between(&c, "moe.expert_ffn", m.ExpertFFN, 1, MaxFFN)
		}
		if m.SharedExperts != 0 {
			between(&c, "moe.shared_experts", m.SharedExperts, 0, MaxExperts)
		}
		maxDense := MaxLayers - 1
		if a.Layers >= 1 && a.Layers <= MaxLayers {
			maxDense = a.Layers - 1 // at least one MoE layer
		}
		if m.FirstDense != 0 {
			between(&c, "moe.first_dense", m.FirstDense, 0, maxDense)
		}
		if m.Groups != 0 || m.TopKGroups != 0 {
			if between(&c, "moe.groups", m.Groups, 1, MaxExperts) && m.Experts > 0 && m.Experts%m.Groups != 0 {
				c.Add("moe.groups", "must divide the %d experts (got %d)", m.Experts, m.Groups)
			}
			between(&c, "moe.topk_groups", m.TopKGroups, 1, max(1, m.Groups))
		}
		if m.Frequency != 0 {
			maxFreq := MaxLayers
			if a.Layers >= 1 && a.Layers <= MaxLayers {
				maxFreq = max(1, a.Layers-max(0, min(m.FirstDense, maxDense))) // at least one MoE layer
			}
			between(&c, "moe.frequency", m.Frequency, 1, maxFreq)
		}
	}
	return c.Err()
}

// MaxMTPLayers bounds the multi-token-prediction depth (DeepSeek-V3 trains with 1;
// its report studies up to predicting the next 2 tokens).
const MaxMTPLayers = 8

// between records a violation unless lo ≤ v ≤ hi, and reports whether v is in range.
func between(c *invalid.Collector, field string, v, lo, hi int) bool {
	if v < lo || v > hi {
		c.Add(field, "must be an integer between %d and %d (got %d)", lo, hi, v)
		return false
	}
	return true
}

// HeadDim is the size of one attention head: HeadSize, or Hidden / Heads.
func (a Arch) HeadDim() int {
	if a.HeadSize > 0 {
		return a.HeadSize
	}
	if a.Heads <= 0 {
		return 0
	}
	return a.Hidden / a.Heads
}

// QDim is the width of the query projection and of the attention output, Heads ·
// HeadDim: Hidden unless head_dim says otherwise. With MLA it is the query (and key)
// width, Heads · (nope + rope).
func (a Arch) QDim() int {
	if m := a.MLA; m != nil {
		return a.Heads * (m.QKNopeDim + m.QKRopeDim)
	}
	return a.Heads * a.HeadDim()
}

// VOutDim is the width of the attention output (the output projection's input):
// QDim, or Heads · v_head_dim with MLA.
func (a Arch) VOutDim() int {
	if m := a.MLA; m != nil {
		return a.Heads * m.VDim
	}
	return a.QDim()
}

// KVSavedDim is the width of the keys and values together, per token, as attention
// reads them (and context parallelism passes them on): 2 · KVDim, or with MLA the
// per-head keys and values after the latent up-projection, Heads · (nope + rope + v).
func (a Arch) KVSavedDim() int {
	if m := a.MLA; m != nil {
		return a.Heads * (m.QKNopeDim + m.QKRopeDim + m.VDim)
	}
	return 2 * a.KVDim()
}

// KVDim is the width of the key (and of the value) projection: KVHeads · HeadDim,
// which is Hidden for multi-head attention.
func (a Arch) KVDim() int { return a.kvHeads() * a.HeadDim() }

// IsMoELayer reports whether layer i (0-based) has an MoE MLP: i ≥ FirstDense and
// (i − FirstDense + 1) % Frequency == 0.
func (a Arch) IsMoELayer(i int) bool {
	if a.MoE == nil || i < 0 || i >= a.Layers {
		return false
	}
	j := i - a.firstDense()
	return j >= 0 && (j+1)%a.moeFrequency() == 0
}

// MoELayers is the number of MoE layers, ⌊(Layers − FirstDense) / Frequency⌋ (0 for a
// dense model).
func (a Arch) MoELayers() int {
	if a.MoE == nil || a.Layers <= a.firstDense() {
		return 0
	}
	return (a.Layers - a.firstDense()) / a.moeFrequency()
}

// MoELayersBefore is the number of MoE layers among layers 0 … i−1: layer j is one
// when j ≥ FirstDense and (j − FirstDense + 1) % Frequency == 0 (IsMoELayer), so
// ⌊(i − FirstDense) / Frequency⌋ of them come before i.
func (a *Arch) MoELayersBefore(i int) int {
	if a.MoE == nil {
		return 0
	}
	i = min(i, a.Layers) - a.firstDense()
	if i <= 0 {
		return 0
	}
	return i / a.moeFrequency()
}

func (a Arch) firstDense() int {
	if a.MoE == nil {
		return 0
	}
	return max(0, a.MoE.FirstDense)
}

// DenseLayers is the number of layers with a dense MLP.
func (a Arch) DenseLayers() int { return max(a.Layers, 0) - a.MoELayers() }

func (a Arch) kvHeads() int {
	if a.KVHeads == 0 {
		return a.Heads
	}
	return a.KVHeads
}

func (a Arch) expertFFN() int {
	if a.MoE == nil {
		return 0
	}
	if a.MoE.ExpertFFN == 0 {
		return a.FFN
	}
	return a.MoE.ExpertFFN
}

func (a Arch) moeFrequency() int {
	if a.MoE == nil || a.MoE.Frequency <= 0 {
		return 1
	}
	return a.MoE.Frequency
}

// mlpMatrices is 3 for a gated (SwiGLU) MLP and 2 otherwise.
func (a Arch) mlpMatrices() float64 {
	if a.GatedMLP {
		return 3
	}
	return 2
}
