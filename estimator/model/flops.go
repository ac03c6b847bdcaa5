package model

// Floating-point work and memory traffic of the forward pass.
//
// A multiply-add counts as 2 FLOPs. Only matrix multiplications are counted as
// FLOPs; norms, activation functions, softmax, residual adds and the MoE token
// permutation are memory-bound and are given as bytes moved instead, so a roofline can
// time them at HBM bandwidth. The backward pass is about twice the forward FLOPs
// (one GEMM for the input gradient and one for the weight gradient per forward GEMM,
// see GEMM.Backward) and moves about twice the elementwise bytes.
//
// Attention. LayerFLOPs counts the full score matrix: QKᵀ is 2·s²·Hidden and the
// weighted sum over values 2·s²·Hidden per layer per sequence, whatever the head
// counts (grouped-query attention shares K/V heads but every query head still attends
// to every key). This is the convention of published model-FLOP formulas
// (Narayanan et al. 2021 eq. 3, PaLM's MFU, MosaicML's MFU), so use the full
// figures for reported model FLOPs and MFU. For time, use LayerFLOPs.Causal (or
// Partition.Causal for GEMM shapes) when the attention kernel skips the masked upper
// triangle — FlashAttention-2/3, cuDNN and Transformer Engine fused attention with a
// causal mask, i.e. every current framework — and the full figures when it computes
// the whole score matrix and masks it (unfused attention, Megatron-LM 2021 with its
// fused scale-mask-softmax kernel), in which case SoftmaxBytes also applies.

// Bytes per element of activations (bf16/fp16).
const activationBytes = 2

// LayerFLOPs is the forward work of one transformer layer on one sequence.
type LayerFLOPs struct {
	QKV     float64 `json:"qkv"`     // 2·s·h·(h + 2·KVDim)
	Scores  float64 `json:"scores"`  // QKᵀ, 2·s²·h (full; see Causal)
	Context float64 `json:"context"` // attention probabilities × V, 2·s²·h (full)
	Out     float64 `json:"out"`     // output projection, 2·s·h²
	MLP     float64 `json:"mlp"`     // dense MLP, 2·s·h·FFN·(2 or 3); 0 in an MoE layer
	Router  float64 `json:"router"`  // MoE router, 2·s·h·Experts
	Experts float64 `json:"experts"` // routed and shared experts, 2·s·(TopK+Shared)·h·ExpertFFN·(2 or 3)
	// ElementwiseBytes is the HBM traffic (read + written, bf16) of the memory-bound
	// operations: the two norms (read and write h per token each), the two residual
	// adds (read 2h, write h), the MLP activation (read f, write f; gated: read 2f,
	// write f) and, in an MoE layer, the token permutation to the experts and the
	// weighted combine back (read h, write TopK·h; read TopK·h, write h). Rotary
	// embeddings, dropout and bias adds are not included.
	ElementwiseBytes float64 `json:"elementwise_bytes"`
	// SoftmaxBytes is the traffic of a fused scale-mask-softmax over the full
	// Heads×s×s score matrix (read scores, write probabilities, bf16): add it only when
	// attention is not one fused kernel; a FlashAttention-style kernel never writes
	// the score matrix.
	SoftmaxBytes float64 `json:"softmax_bytes"`
}

// Total is the matrix-multiplication FLOPs of the layer.
func (f LayerFLOPs) Total() float64 {
	return f.QKV + f.Scores + f.Context + f.Out + f.MLP + f.Router + f.Experts
}

// AttentionCore is Scores + Context: the work selective recomputation repeats.
func (f LayerFLOPs) AttentionCore() float64 { return f.Scores + f.Context }

// Causal returns f with the attention core (and its softmax traffic) halved: the work
// of a kernel that skips the masked upper triangle of a causal score matrix. (The
// exact fraction of pairs is (s+1)/(2s); kernels that work in tiles also compute the
// diagonal tiles whole, so one half is as good an estimate as either.)
func (f LayerFLOPs) Causal() LayerFLOPs {
	f.Scores /= 2
	f.Context /= 2
	f.SoftmaxBytes /= 2
	return f
}

// LayerFLOPs is the forward work of layer i (0-based) on one sequence of seq tokens
// (micro-batch 1, no parallelism). The zero value is returned for i outside
// [0, Layers) or seq < 1.
func (a Arch) LayerFLOPs(i, seq int) LayerFLOPs {
	if i < 0 || i >= a.Layers || seq < 1 {
		return LayerFLOPs{}
	}
	return a.layerFLOPs(a.IsMoELayer(i), seq, a.layerSpan(i, seq))
}

// layerFLOPs is a layer's work with span, its attention work relative to causal
// attention over the whole sequence (a windowed layer's, or the layers' mean).
func (a Arch) layerFLOPs(moe bool, seq int, span float64) LayerFLOPs {
	s := float64(seq)
	h := float64(a.Hidden)
	q := float64(a.QDim()) // = h unless head_dim says otherwise
	f := LayerFLOPs{
		QKV:          2 * s * h * (q + 2*float64(a.KVDim())),
		Scores:       2 * s * s * q * span,
		Context:      2 * s * s * float64(a.VOutDim()) * span,
		Out:          2 * s * float64(a.VOutDim()) * h,
		SoftmaxBytes: 2 * activationBytes * float64(a.Heads) * s * s,
	}
	if a.MLA != nil {
		// All projections but the output one count as "QKV".
		f.QKV = 2*s*a.mlaProjections() - f.Out
	}
	// Norms (2h each) and residual adds (3h each), per token.
	elems := 2*2*h + 2*3*h
	act := 2.0 // elements moved per MLP hidden unit by the activation
	if a.GatedMLP {
		act = 3
	}
	if moe {
		k := float64(a.MoE.TopK + max(0, a.MoE.SharedExperts)) // a token's experts, routed and shared
		fe := float64(a.expertFFN())
		f.Router = 2 * s * h * float64(a.MoE.Experts)
		f.Experts = 2 * s * k * a.mlpMatrices() * h * fe
		elems += act*k*fe + 2*(h+k*h)
	} else {
		f.MLP = 2 * s * a.mlpMatrices() * h * float64(a.FFN)
		elems += act * float64(a.FFN)
	}
	f.ElementwiseBytes = activationBytes * s * elems
	return f
}

// LogitsFLOPs is the output projection of one sequence: 2·s·Hidden·Vocab.
func (a Arch) LogitsFLOPs(seq int) float64 {
	if seq < 1 {
		return 0
	}
	return 2 * float64(seq) * float64(a.Hidden) * float64(a.Vocab)
}

// HeadBytes is the memory-bound traffic outside the layers for one sequence: the
// embedding gather (read and write h per token, bf16), the final norm (read and write
// h) and the cross-entropy loss, taken as 10 bytes per logit (read the bf16 logits,
// write and read back an fp32 softmax).
func (a Arch) HeadBytes(seq int) float64 {
	if seq < 1 {
		return 0
	}
	s := float64(seq)
	return s * (activationBytes*4*float64(a.Hidden) + 10*float64(a.Vocab))
}

// ForwardFLOPs is the matrix-multiplication work of a forward pass over one sequence:
// every layer (full, non-causal attention) plus the logits. Norms and other
// elementwise work are not FLOPs here. For a dense model this is
// 2·s·(matrix parameters, counting the output projection once even when tied) +
// 4·Layers·s²·Hidden, the usual "2N per token plus attention".
func (a Arch) ForwardFLOPs(seq int) float64 {
	if seq < 1 {
		return 0
	}
	return a.LayersForwardFLOPs(seq) + a.LogitsFLOPs(seq)
}

// CausalForwardFLOPs is ForwardFLOPs with every layer's attention core halved
// (LayerFLOPs.Causal): the work actually executed by a causal fused-attention kernel.
func (a Arch) CausalForwardFLOPs(seq int) float64 {
	if seq < 1 {
		return 0
	}
	dense, moe := a.layerFLOPs(false, seq, a.AttentionSpan(seq)), LayerFLOPs{}
	if a.MoELayers() > 0 {
		moe = a.layerFLOPs(true, seq, a.AttentionSpan(seq))
	}
	return float64(a.DenseLayers())*dense.Causal().Total() +
		float64(a.MoELayers())*moe.Causal().Total() + a.LogitsFLOPs(seq)
}

// LayersForwardFLOPs is the forward work of all layers on one sequence (full
// attention), without the logits: the part full recomputation repeats.
func (a Arch) LayersForwardFLOPs(seq int) float64 {
	if seq < 1 || a.Layers < 1 {
		return 0
	}
	total := float64(a.DenseLayers()) * a.layerFLOPs(false, seq, a.AttentionSpan(seq)).Total()
	if n := a.MoELayers(); n > 0 {
		total += float64(n) * a.layerFLOPs(true, seq, a.AttentionSpan(seq)).Total()
	}
	return total
}
