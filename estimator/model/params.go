package model

// Params is the parameter count of an Arch, split the way memory and sharding need
// it. Counts are float64 (they exceed 2^31 and feed float arithmetic anyway).
//
//	Total = Embedding + Output + FinalNorm
//	      + DenseLayers·(PerLayerAttention + PerLayerNorm + PerLayerDenseMLP)
//	      + MoELayers·(PerLayerAttention + PerLayerNorm + PerLayerMoE)
type Params struct {
	Total     float64 `json:"total"`
	Embedding float64 `json:"embedding"` // Vocab·Hidden
	Output    float64 `json:"output"`    // Vocab·Hidden, 0 when tied to the embedding
	// PerLayerAttention: Q and O are Hidden×QDim (Hidden×Hidden unless head_dim says
	// otherwise), K and V Hidden×KVDim each.
	PerLayerAttention float64 `json:"per_layer_attention"`
	// PerLayerDenseMLP: 2·Hidden·FFN, or 3·Hidden·FFN when gated; 0 when no layer
	// is dense.
	PerLayerDenseMLP float64 `json:"per_layer_dense_mlp"`
	// PerLayerMoE: all experts of one MoE layer — routed and shared — plus its
	// router (Hidden×Experts); 0 for a dense model.
	PerLayerMoE float64 `json:"per_layer_moe"`
	// PerLayerShared: the shared experts of one MoE layer (inside PerLayerMoE):
	// replicated over expert parallelism like a dense MLP.
	PerLayerShared float64 `json:"per_layer_shared,omitempty"`
	PerLayerNorm   float64 `json:"per_layer_norm"` // two norms of Hidden weights each
	FinalNorm      float64 `json:"final_norm"`     // Hidden
	// Active: parameters a token passes through — Total minus the experts it is not
	// routed to (Experts − TopK per MoE layer). Embedding and output are included,
	// as in published "active parameter" figures. Equal to Total for dense models.
	Active      float64 `json:"active"`
	DenseLayers int     `json:"dense_layers"`
	MoELayers   int     `json:"moe_layers"`
}

// Params counts the parameters of a (which should be valid).
// MTPParamsPerModule is the parameters of one multi-token-prediction module
// (Arch.MTPLayers) besides the embedding and output layer it shares: a transformer
// layer (attention and norms; an MoE MLP in an MoE model, otherwise a dense one),
// the 2h → h projection and its two input norms.
func (a Arch) MTPParamsPerModule() float64 {
	p := a.Params()
	h := float64(a.Hidden)
	mlp := p.PerLayerDenseMLP
	if p.MoELayers > 0 {
		mlp = p.PerLayerMoE
	} else if mlp == 0 {
		mlp = a.denseMLPParams()
	}
	return p.PerLayerAttention + p.PerLayerNorm + mlp + 2*h*h + 2*h
}

func (a Arch) Params() Params {
	h := float64(a.Hidden)
	p := Params{
		Embedding:         float64(a.Vocab) * h,
		PerLayerAttention: a.attentionParams(),
		PerLayerNorm:      2 * h,
		FinalNorm:         h,
		DenseLayers:       a.DenseLayers(),
		MoELayers:         a.MoELayers(),
	}
	if !a.TiedEmbeddings {
		p.Output = p.Embedding
	}
	if p.DenseLayers > 0 {
		p.PerLayerDenseMLP = a.denseMLPParams()
	}
	if p.MoELayers > 0 {
		p.PerLayerShared = a.SharedParamsPerLayer()
		p.PerLayerMoE = a.ExpertParamsPerLayer() + p.PerLayerShared + a.routerParams()
	}
	base := p.PerLayerAttention + p.PerLayerNorm
	p.Total = p.Embedding + p.Output + p.FinalNorm +
		float64(p.DenseLayers)*(base+p.PerLayerDenseMLP) +
		float64(p.MoELayers)*(base+p.PerLayerMoE)
	p.Active = p.Total
	if p.MoELayers > 0 {
		unused := float64(a.MoE.Experts-a.MoE.TopK) * a.expertParams()
		p.Active -= float64(p.MoELayers) * unused
	}
	return p
}

// LayerParams is the parameter count of layer i (0-based): attention, its two norms
// and the MLP — the MoE block (all experts and the router) when IsMoELayer(i). It is
// 0 for i outside [0, Layers).
func (a Arch) LayerParams(i int) float64 {
	if i < 0 || i >= a.Layers {
		return 0
	}
	p := a.attentionParams() + 2*float64(a.Hidden)
	if a.IsMoELayer(i) {
		return p + a.ExpertParamsPerLayer() + a.SharedParamsPerLayer() + a.routerParams()
	}
	return p + a.denseMLPParams()
}

// ExpertParamsPerLayer is the parameter count of all routed experts of one MoE layer
// (Experts · one expert's MLP, router excluded): what expert parallelism shards.
// It is 0 for a dense model.
func (a Arch) ExpertParamsPerLayer() float64 {
	if a.MoE == nil {
		return 0
	}
	return float64(a.MoE.Experts) * a.expertParams()
}

// SharedParamsPerLayer is the parameter count of one MoE layer's shared experts
// (0 without them).
func (a Arch) SharedParamsPerLayer() float64 {
	if a.MoE == nil {
		return 0
	}
	return float64(max(0, a.MoE.SharedExperts)) * a.expertParams()
}

func (a Arch) attentionParams() float64 {
	h := float64(a.Hidden)
	if m := a.MLA; m != nil {
		return a.mlaProjections() + float64(m.QLoRARank+m.KVLoRARank) // plus the two latent norms
	}
	return 2*h*float64(a.QDim()) + 2*h*float64(a.KVDim()) // Q and O, K and V
}

// mlaProjections is the matrix parameters of MLA's projections: queries (through
// the query latent, or directly), the key/value latent with the shared rotary key,
// its up-projection to per-head keys and values, and the output.
func (a Arch) mlaProjections() float64 {
	m, h, H := a.MLA, float64(a.Hidden), float64(a.Heads)
	qk := float64(m.QKNopeDim + m.QKRopeDim)
	q := h * H * qk
	if m.QLoRARank > 0 {
		q = h*float64(m.QLoRARank) + float64(m.QLoRARank)*H*qk
	}
	kva := h * float64(m.KVLoRARank+m.QKRopeDim)
	kvb := float64(m.KVLoRARank) * H * float64(m.QKNopeDim+m.VDim)
	o := H * float64(m.VDim) * h
	return q + kva + kvb + o
}

func (a Arch) denseMLPParams() float64 {
	return a.mlpMatrices() * float64(a.Hidden) * float64(a.FFN)
}

// expertParams is one expert's MLP.
func (a Arch) expertParams() float64 {
	return a.mlpMatrices() * float64(a.Hidden) * float64(a.expertFFN())
}

func (a Arch) routerParams() float64 {
	if a.MoE == nil {
		return 0
	}
	return float64(a.Hidden) * float64(a.MoE.Experts)
}
