package step

import (
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/model"
)

// Memory is the peak memory of one GPU, in 10⁹ bytes, on the pipeline stage that
// needs the most.
type Memory struct {
	Weights   float64 `json:"weights_gb"`
	Gradients float64 `json:"gradients_gb"`
	Optimizer float64 `json:"optimizer_gb"`
	Gathered  float64 `json:"gathered_weights_gb"` // ZeRO-3: full layers in flight
	// FP8Weights are the fp8 copies of the layers' matmul weights and their
	// transposes (fp8 training), 2 B per parameter.
	FP8Weights  float64 `json:"fp8_weight_copies_gb"`
	Activations float64 `json:"activations_gb"`
	Logits      float64 `json:"embeddings_logits_gb"`
	Buffers     float64 `json:"comm_buffers_gb"`
	Reserve     float64 `json:"runtime_reserve_gb"` // CUDA context, workspaces, fragmentation
	Total       float64 `json:"total_gb"`
	Capacity    float64 `json:"capacity_gb"`
	Headroom    float64 `json:"headroom_gb"` // capacity − total (negative: does not fit)
	Fits        bool    `json:"fits"`
	Stage       int     `json:"stage"` // the pipeline stage of the peak
	// InFlight is how many micro-batches' activations the peak stage holds.
	InFlight float64 `json:"in_flight_micro_batches"`
	// ActivationBytesPerLayer is one layer's saved activations for one micro-batch.
	ActivationBytesPerLayer float64 `json:"activation_bytes_per_layer"`
	// Host is what an offloading GPU keeps in host memory, and HostCapacity its
	// share of the node's usable host memory (both 0 without offload). Fits needs
	// both the GPU and the host to hold their parts.
	Host         float64 `json:"host_gb,omitempty"`
	HostCapacity float64 `json:"host_capacity_gb,omitempty"`
}

// ModelStateBytes returns the bytes per GPU of weights, gradients and optimizer
// states for params parameters held by the GPU (after tensor and pipeline
// splitting), sharded over shard data-parallel ranks by ZeRO stage zero
// (Rajbhandari et al. 2020): stage 1 shards the optimizer states, stage 2 also the
// gradients, stage 3 also the weights.
func ModelStateBytes(params float64, o Optimizer, zero, shard int) (w, g, s float64) {
	d := float64(max(1, shard))
	w, g, s = params*o.WeightBytes, params*o.GradBytes, params*o.StateBytes
	if zero >= 1 {
		s /= d
	}
	if zero >= 2 {
		g /= d
	}
	if zero >= 3 {
		w /= d
	}
	return w, g, s
}

// ActivationBytes is what one transformer layer saves for the backward pass for one
// micro-batch of b sequences of s tokens (s is this GPU's share with context
// parallelism; skv the keys each query attends to), following Korthikanti et al.
// 2022 generalised to grouped-query attention and to gated and non-4h MLPs:
//
//   - outside the tensor-parallel region (split by t only with sequence
//     parallelism): the two layer-norm inputs (4sbh), the attention and MLP inputs
//     (2sbh each) and two dropout masks (2sbh);
//   - inside it (split by t): Q (2sbh), K and V (2sbh·g/a each), the output
//     projection input (2sbh), the MLP's inner activations (4sbf for a two-matrix
//     MLP, 6sbf gated; × top-k for an MoE layer), and, unless the attention core is
//     recomputed or fused (flash attention keeps no score matrix), the scores,
//     softmax and dropout mask 5·a·s·skv·b.
//
// For GPT (g = a, f = 4h, two matrices) this is sbh(34 + 5as/h) without TP,
// sbh(10 + 24/t + 5as/(ht)) with TP and sbh(34 + 5as/h)/t with TP and SP. Full
// recomputation keeps only the layer input, 2sbh (/t with SP). Op-level
// checkpointing keeps the input, the outputs of the matmuls it saves — Q, V and the
// MLP's first matrix inside the TP region, the down projection's (before its
// reduction, so whole on every rank) when the MLP is gated — and the attention
// output.
func ActivationBytes(a model.Arch, moe bool, s, skv, b float64, t int, sp bool, rc Recompute, scores bool) float64 {
	mods := uint8(0)
	if rc == RecomputeSelective {
		mods = rmCoreAttn
	}
	return activationBytes(&a, moe, s, skv, b, t, sp, rc, scores, mods, false, 1, framework.MLADownProjDuplicated)
}

// fp8ActivationBytes is the width of an activation saved in fp8 (one byte; the
// per-block scales add under 1 %), and attnOutFP8Bytes that of the attention output
// DeepSeek-V3 keeps in its E5M6 format (12 bits) for the output projection's
// backward (DeepSeek-V3 report §3.3.3, "Low-Precision Storage and Communication").
const (
	fp8ActivationBytes = 1
	attnOutFP8Bytes    = 1.5
)

// activationBytes is ActivationBytes with Megatron-Core's recompute modules (mods,
// Layout.recomputeMask) and fp8 activation storage (Training.FP8Activations).
// Besides Korthikanti et al.'s terms it counts, for an MoE layer, the dispatched
// (permuted) tokens the experts' first GEMM saves for its weight gradient — top-k
// copies of each token —, and for multi-head latent attention the latents the
// up-projections save (mlaSavedBytes, as the framework's down-projections run
// under TP: mla). The
// routed experts' tensors are load × the mean's: the busiest rank's share
// (Training.moeLoad: imbalance, capacity, padding).
//
//   - layernorm discards both norms' outputs (the attention and MLP inputs, 4sbh);
//   - mla_up_proj discards the up-projected queries, keys and values (the latents
//     stay);
//   - moe_act discards the experts' activation output (their second GEMM's input);
//   - mlp, shared_experts and moe discard a dense MLP's, the shared experts' and the
//     whole MoE MLP's inner activations (and the dispatched tokens);
//   - core_attn discards the score terms of unfused attention.
//
// With fp8 activations the inputs of the fp8 matmuls (norm outputs, latents,
// dispatched tokens, the experts' second-GEMM inputs) and the activation
// function's inputs are kept in one byte, the attention output in 12 bits.
func activationBytes(a *model.Arch, moe bool, s, skv, b float64, t int, sp bool, rc Recompute, scores bool, mods uint8, fp8 bool, load float64, mla framework.MLADownProj) float64 {
	h, f := float64(a.Hidden), float64(a.FFN)
	tf := float64(t)
	sbh := s * b * h
	if rc == RecomputeFull {
		if sp {
			return 2 * sbh / tf
		}
		return 2 * sbh
	}
	// Attention widths relative to the hidden size: queries, keys and values
	// together, the attention output (1, 2g/a, 1 without head_dim or MLA).
	qw, kvw, vw := float64(a.QDim())/h, float64(a.KVSavedDim())/h, float64(a.VOutDim())/h
	inner := 2.0
	if a.GatedMLP {
		inner = 3
	}
	width := f // of one MLP matrix's output, over the experts a token visits
	routed, shared := 0.0, 0.0
	if moe && a.MoE != nil {
		width = float64(a.MoE.ExpertFFN)
		if width == 0 {
			width = f
		}
		routed, shared = float64(a.MoE.TopK), float64(a.MoE.SharedExperts)
		width *= routed + shared
	}
	if rc == RecomputeOps {
		inside := (2*qw+kvw+2*vw)*sbh + 2*s*b*width
		down := 0.0
		if a.GatedMLP {
			down = 2 * sbh
		}
		if sp {
			return (2*sbh+inside)/tf + down
		}
		return 2*sbh + inside/tf + down
	}
	lin := 2.0 // bytes of a saved matmul input
	if fp8 {
		lin = fp8ActivationBytes
	}
	// Outside the TP region: the norm inputs (4sbh), the norm outputs (the attention
	// and MLP inputs), two dropout masks (2sbh; none without dropout).
	outside := 6 * sbh
	if mods&actNoDropout != 0 {
		outside = 4 * sbh
	}
	if mods&rmLayerNorm == 0 {
		outside += 2 * lin * sbh
	}
	attnOut := 2.0
	if fp8 {
		attnOut = attnOutFP8Bytes
	}
	inside := attnOut * vw * sbh
	if mods&rmMLAUp == 0 {
		inside += (2*qw + 2*kvw) * sbh
	}
	var mlaRank float64 // already one rank's
	if a.MLA != nil {
		mlaRank = mlaSavedBytes(a, s, b, t, sp, mods, lin, mla)
	}
	// The MLP: each matrix-1 output (gate and up, or up) feeds the activation
	// function, whose output is the last matrix's input.
	mlp := func(w float64, discardAct bool) float64 {
		act := lin
		if discardAct {
			act = 0
		}
		fc1 := 2.0
		if fp8 {
			fc1 = fp8ActivationBytes
		}
		return ((inner-1)*fc1 + act) * s * b * w
	}
	if !fp8 && mods&rmMoEAct == 0 {
		// The Korthikanti et al. form: 2·inner·sbf.
		mlp = func(w float64, _ bool) float64 { return 2 * inner * s * b * w }
	}
	if moe && a.MoE != nil {
		ef := width / (routed + shared)
		if mods&rmMoE == 0 {
			inside += (mlp(routed*ef, mods&rmMoEAct != 0) + lin*routed*sbh) * max(1, load)
			if mods&rmShared == 0 {
				inside += mlp(shared*ef, false)
			}
		}
	} else if mods&rmMLP == 0 {
		inside += mlp(width, false)
	}
	if scores && mods&rmCoreAttn == 0 {
		inside += 5 * float64(a.Heads) * s * skv * b
	}
	if sp {
		return (outside+inside)/tf + mlaRank
	}
	return outside + inside/tf + mlaRank
}

// inFlight is how many micro-batches' activations the first pipeline stage holds at
// its peak: all M with GPipe, min(P, M) with 1F1B (so about L layers' worth over its
// L/P layers), times 1 + (P−1)/(P·v) when interleaved (Narayanan et al. 2021) but
// never more than the M micro-batches there are: with M ≤ P the interleaved warm-up
// ((P−1)·2 + (v−1)·P chunk forwards on the first stage, Megatron-LM's schedules.py)
// runs every chunk of every micro-batch forward before the first backward, M
// micro-batches through all v chunks.
func inFlight(sched Schedule, p, v, m int) float64 {
	switch {
	case p == 1:
		return 1
	case sched == GPipe:
		return float64(m)
	}
	f := float64(min(p, m))
	switch sched {
	case Interleaved:
		f = min(f*(1+float64(p-1)/float64(p*v)), float64(m))
	case DualPipe:
		f = float64(min(p+1, m)) // DeepSeek-V3 report, Table 2
	}
	return f
}

// DeepSpeed ZeRO-3's defaults for what it keeps gathered (deepspeed.readthedocs.io,
// ZeRO configuration: stage3_max_live_parameters 1e9, stage3_prefetch_bucket_size
// 5e8 parameters), unchanged since ZeRO-3's release in 2021.
const (
	ZeRO3MaxLiveParams        = 1e9
	ZeRO3PrefetchBucketParams = 5e8
)

// largestMatmulParams is the parameter count of a layer's largest weight matrix on
// one tensor-parallel rank: the fused QKV projection, the (fused gate and up) MLP
// input or the MLP output. DeepSpeed gathers a module's weights as a whole.
func largestMatmulParams(a model.Arch, tp int) float64 {
	h := float64(a.Hidden)
	hd := float64(a.Hidden) / float64(max(1, a.Heads))
	if a.HeadSize > 0 {
		hd = float64(a.HeadSize)
	}
	qkv := h * hd * float64(a.Heads+2*max(1, a.KVHeads))
	up := h * float64(a.FFN)
	if a.GatedMLP {
		up *= 2
	}
	return max(qkv, up) / float64(max(1, tp))
}
