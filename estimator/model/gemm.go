package model

import "math"

// GEMM is one matrix multiplication shape as a single GPU runs it: an M×K matrix times
// a K×N matrix, Count times (independent instances, e.g. one per attention head or
// per local expert). For a linear layer M is tokens, K its input width and N its
// output width.
type GEMM struct {
	Name  string `json:"name"`
	M     int    `json:"m"`
	N     int    `json:"n"`
	K     int    `json:"k"`
	Count int    `json:"count"`
}

// Names of the GEMMs of a layer (GEMM.Name).
const (
	GEMMQKV           = "qkv"             // fused Q, K, V projection (column-parallel)
	GEMMScores        = "scores"          // QKᵀ, per head
	GEMMContext       = "context"         // probabilities × V, per head
	GEMMOut           = "out"             // attention output projection (row-parallel)
	GEMMMLPUp         = "mlp_up"          // non-gated MLP first matrix (column-parallel)
	GEMMMLPGateUp     = "mlp_gate_up"     // gated MLP gate and up, fused (column-parallel)
	GEMMMLPDown       = "mlp_down"        // MLP second matrix (row-parallel)
	GEMMRouter        = "router"          // MoE router (replicated)
	GEMMSharedUp      = "shared_up"       // MoE shared experts, every token (two-matrix MLP)
	GEMMSharedGateUp  = "shared_gate_up"  // MoE shared experts, gated
	GEMMSharedDown    = "shared_down"     // MoE shared experts' down projection
	GEMMExpertsUp     = "experts_up"      // per local expert, non-gated
	GEMMExpertsGateUp = "experts_gate_up" // per local expert, gated, fused
	GEMMExpertsDown   = "experts_down"    // per local expert
	GEMMLogits        = "logits"          // output projection (vocab-parallel)
	GEMMMLAQLatent    = "mla_q_latent"    // MLA: x → query latent (replicated over TP)
	GEMMMLAQUp        = "mla_q_up"        // MLA: query latent → per-head queries (column-parallel)
	GEMMMLAKVLatent   = "mla_kv_latent"   // MLA: x → key/value latent and rotary key (replicated)
	GEMMMLAKVUp       = "mla_kv_up"       // MLA: latent → per-head keys and values (column-parallel)
)

// FLOPs is 2·M·N·K·Count.
func (g GEMM) FLOPs() float64 {
	return 2 * float64(g.M) * float64(g.N) * float64(g.K) * float64(g.Count)
}

// Backward returns the two GEMMs of the backward pass of g, each with the same FLOPs
// as g: the gradient of the left operand (M×N times N×K, "<name>.dgrad") and of the
// right operand (K×M times M×N, "<name>.wgrad"; the weight gradient of a linear
// layer).
func (g GEMM) Backward() [2]GEMM {
	return [2]GEMM{
		{Name: g.Name + ".dgrad", M: g.M, N: g.K, K: g.N, Count: g.Count},
		{Name: g.Name + ".wgrad", M: g.K, N: g.N, K: g.M, Count: g.Count},
	}
}

// Partition is the share of a micro-batch one GPU works on.
type Partition struct {
	MicroBatch int `json:"micro_batch"` // sequences per micro-batch
	Seq        int `json:"seq"`         // sequence length
	// Parallel degrees; values below 1 count as 1.
	TP int `json:"tp"` // tensor parallelism (Megatron column/row splits)
	CP int `json:"cp"` // context parallelism: each GPU holds Seq/CP tokens of each sequence
	EP int `json:"ep"` // expert parallelism: each GPU holds Experts/EP experts
	// Causal: the attention kernel skips the masked half, so each query sees Seq/2
	// keys on average (see the package's FLOP conventions).
	Causal bool `json:"causal"`
}

// GEMMs returns the forward GEMMs that one GPU runs for layer i (0-based) on its
// share p of a micro-batch, or nil for i outside [0, Layers) or an empty partition.
// Tokens per GPU are T = MicroBatch·⌈Seq/CP⌉ (with sequence parallelism the GEMM
// input is all-gathered first, so T is the same).
//
// Tensor parallelism follows Megatron: column-parallel layers (QKV, MLP up/gate,
// expert up/gate) split N by TP, row-parallel layers (attention output, MLP down,
// expert down) split K, each GPU runs Heads/TP heads of the attention core, and when
// KVHeads < TP each GPU keeps one (replicated) key/value head. Experts are split by TP
// too (Megatron-Core's default expert tensor parallelism = TP); the router is
// replicated. A degree that does not divide its dimension gives the largest shard
// (ceiling division).
//
// With MoE, each GPU holds ⌈Experts/EP⌉ experts and the token dispatch brings each
// of them T·EP·TopK/Experts tokens on average (balanced routing), so an expert GEMM
// has M = that many tokens and Count = local experts. The GEMMs follow forward order;
// GEMM.Backward gives the backward ones. The logits GEMM is LogitsGEMM.
func (a Arch) GEMMs(i int, p Partition) []GEMM {
	if i < 0 || i >= a.Layers || p.MicroBatch < 1 || p.Seq < 1 || a.Heads < 1 {
		return nil
	}
	tp, cp, ep := max(p.TP, 1), max(p.CP, 1), max(p.EP, 1)
	h, d := a.Hidden, a.HeadDim()
	qLocal := ceilDiv(a.Heads, tp)
	kvLocal := ceilDiv(a.kvHeads(), tp)
	seqLocal := ceilDiv(p.Seq, cp)
	tokens := p.MicroBatch * seqLocal
	keys := p.Seq
	if p.Causal {
		keys = max(1, (p.Seq+1)/2)
	}
	if span := a.layerSpan(i, p.Seq); span < 1 {
		// A windowed layer: its mean keys per query, rounded.
		keys = max(1, int(math.Round(float64(keys)*span)))
	}
	heads := p.MicroBatch * qLocal

	out := []GEMM{
		{Name: GEMMQKV, M: tokens, N: (qLocal + 2*kvLocal) * d, K: h, Count: 1},
		{Name: GEMMScores, M: seqLocal, N: keys, K: d, Count: heads},
		{Name: GEMMContext, M: seqLocal, N: d, K: keys, Count: heads},
		{Name: GEMMOut, M: tokens, N: h, K: qLocal * d, Count: 1},
	}
	if m := a.MLA; m != nil {
		qk := m.QKNopeDim + m.QKRopeDim
		out = out[:0]
		if m.QLoRARank > 0 {
			out = append(out, GEMM{Name: GEMMMLAQLatent, M: tokens, N: m.QLoRARank, K: h, Count: 1},
				GEMM{Name: GEMMMLAQUp, M: tokens, N: qLocal * qk, K: m.QLoRARank, Count: 1})
		} else {
			out = append(out, GEMM{Name: GEMMMLAQUp, M: tokens, N: qLocal * qk, K: h, Count: 1})
		}
		out = append(out,
			GEMM{Name: GEMMMLAKVLatent, M: tokens, N: m.KVLoRARank + m.QKRopeDim, K: h, Count: 1},
			GEMM{Name: GEMMMLAKVUp, M: tokens, N: qLocal * (m.QKNopeDim + m.VDim), K: m.KVLoRARank, Count: 1},
			GEMM{Name: GEMMScores, M: seqLocal, N: keys, K: qk, Count: heads},
			GEMM{Name: GEMMContext, M: seqLocal, N: m.VDim, K: keys, Count: heads},
			GEMM{Name: GEMMOut, M: tokens, N: h, K: qLocal * m.VDim, Count: 1})
	}
	if !a.IsMoELayer(i) {
		f := ceilDiv(a.FFN, tp)
		up := GEMM{Name: GEMMMLPUp, M: tokens, N: f, K: h, Count: 1}
		if a.GatedMLP {
			up = GEMM{Name: GEMMMLPGateUp, M: tokens, N: 2 * f, K: h, Count: 1}
		}
		return append(out, up, GEMM{Name: GEMMMLPDown, M: tokens, N: h, K: f, Count: 1})
	}
	e := a.MoE.Experts
	local := ceilDiv(e, ep)
	perExpert := max(1, int(math.Round(float64(tokens)*float64(min(ep, e))*float64(a.MoE.TopK)/float64(e))))
	f := ceilDiv(a.expertFFN(), tp)
	up := GEMM{Name: GEMMExpertsUp, M: perExpert, N: f, K: h, Count: local}
	if a.GatedMLP {
		up = GEMM{Name: GEMMExpertsGateUp, M: perExpert, N: 2 * f, K: h, Count: local}
	}
	out = append(out,
		GEMM{Name: GEMMRouter, M: tokens, N: e, K: h, Count: 1},
		up,
		GEMM{Name: GEMMExpertsDown, M: perExpert, N: h, K: f, Count: local},
	)
	if sh := a.MoE.SharedExperts; sh > 0 {
		// Shared experts see every token, like a dense MLP of sh·ExpertFFN.
		sf := sh * f
		sup := GEMM{Name: GEMMSharedUp, M: tokens, N: sf, K: h, Count: 1}
		if a.GatedMLP {
			sup = GEMM{Name: GEMMSharedGateUp, M: tokens, N: 2 * sf, K: h, Count: 1}
		}
		out = append(out, sup, GEMM{Name: GEMMSharedDown, M: tokens, N: h, K: sf, Count: 1})
	}
	return out
}

// LogitsGEMM is the output projection on one GPU's share of a micro-batch:
// T×Hidden times Hidden×⌈Vocab/TP⌉ (Megatron's vocabulary-parallel output layer).
func (a Arch) LogitsGEMM(p Partition) GEMM {
	tokens := max(p.MicroBatch, 0) * ceilDiv(max(p.Seq, 0), max(p.CP, 1))
	return GEMM{Name: GEMMLogits, M: tokens, N: ceilDiv(a.Vocab, max(p.TP, 1)), K: a.Hidden, Count: 1}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
