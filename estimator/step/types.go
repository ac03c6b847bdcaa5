// Package step estimates how long one training step of a transformer takes on a
// cluster under a given parallel layout, and where the time and memory go.
package step

// Precision is the format of the matrix multiplications.
type Precision string

const (
	BF16 Precision = "bf16"
	FP16 Precision = "fp16"
	FP8  Precision = "fp8" // fp8 matmuls, bf16 everything else
)

// Recompute is the activation recomputation policy.
type Recompute string

const (
	RecomputeNone      Recompute = "none"
	RecomputeSelective Recompute = "selective" // attention core recomputed (Korthikanti et al.)
	// RecomputeFull recomputes every layer's forward from its input, or only
	// Layout.RecomputeLayers of each stage's layers.
	RecomputeFull Recompute = "full"
	// RecomputeOps is op-level selective checkpointing (PyTorch's
	// create_selective_checkpoint_contexts with torchtitan's policy): matmul and
	// attention outputs are saved except every second matmul of a layer, and every
	// memory-bound op (norms, rotary, activation function, residual adds) is
	// recomputed.
	RecomputeOps Recompute = "ops"
)

// recomputeShare is the share of a stage's layers whose whole forward runs again
// in the backward pass: with full recomputation RecomputeLayers of the stageLayers
// (all when 0), otherwise none.
func (l Layout) recomputeShare(stageLayers int) float64 {
	if l.Recompute != RecomputeFull || stageLayers <= 0 {
		return 0
	}
	if l.RecomputeLayers <= 0 || l.RecomputeLayers >= stageLayers {
		return 1
	}
	return float64(l.RecomputeLayers) / float64(stageLayers)
}

// tpRepeats is how many of a layer's two forward tensor-parallel collectives run
// again in the backward pass, on average over the stage's layers: both when the
// layer is fully recomputed; with op-level checkpointing the attention block's (the
// recomputed output projection feeds the residual sum the MLP's norm needs back),
// not the MLP's (its down projection output is saved).
func (l Layout) tpRepeats(stageLayers int) float64 {
	if l.Recompute == RecomputeOps {
		return 1
	}
	return 2 * l.recomputeShare(stageLayers)
}

// Recompute modules (Layout.RecomputeModules) as bits.
const (
	rmCoreAttn uint8 = 1 << iota
	rmLayerNorm
	rmMLAUp
	rmMoEAct
	rmMLP
	rmShared
	rmMoE
	// actNoDropout is not a module: it tells activationBytes that no dropout mask
	// is saved (Training.NoDropout).
	actNoDropout uint8 = 1 << 7
)

// recomputeModuleNames are Megatron-Core's names of the recompute modules.
var recomputeModuleNames = []struct {
	name string
	bit  uint8
}{{"core_attn", rmCoreAttn}, {"layernorm", rmLayerNorm}, {"mla_up_proj", rmMLAUp}, {"moe_act", rmMoEAct},
	{"mlp", rmMLP}, {"shared_experts", rmShared}, {"moe", rmMoE}}

// recomputeMask is the set of modules recomputed: with recompute selective the
// listed modules, or the attention core when none is listed; nothing otherwise.
func (l Layout) recomputeMask() uint8 {
	if l.Recompute != RecomputeSelective {
		return 0
	}
	if len(l.RecomputeModules) == 0 {
		return rmCoreAttn
	}
	var m uint8
	for _, n := range l.RecomputeModules {
		for _, r := range recomputeModuleNames {
			if r.name == n {
				m |= r.bit
			}
		}
	}
	return m
}

// Schedule is the pipeline schedule.
type Schedule string

const (
	GPipe       Schedule = "gpipe"
	OneFOneB    Schedule = "1f1b"
	Interleaved Schedule = "interleaved" // interleaved 1F1B with VirtualStages chunks per rank
	// ZeroBubble is ZB-H1 (Qi et al. 2024): the weight-gradient half of the backward
	// runs as blocks of its own, deferred into the bubbles.
	ZeroBubble Schedule = "zb-h1"
	// DualPipe (DeepSeek-V3 report §3.2.1) feeds micro-batches from both ends of the
	// pipeline and overlaps one micro-batch's forward with another's backward, so
	// the expert-parallel all-to-alls hide under compute: P+1 micro-batches of
	// activations, and two copies of the parameters (each rank holds stages s and
	// P−1−s). P must be even (ScheduleRules).
	DualPipe Schedule = "dualpipe"
	// ZeroBubbleV is ZB-V (Qi et al. 2024, §6): two model chunks per rank placed in
	// a V (rank s holds stages s and 2P−1−s, so the first rank also ends the model),
	// with the weight-gradient passes filling the bubbles, at 1F1B's activation
	// memory. The pipeline sends twice as often (two chunks per rank). Every
	// schedule's time comes from executing its block table (PipelineOrders).
	ZeroBubbleV Schedule = "zb-v"
)

// ParamGather is when the distributed optimizer (ZeRO-1/2) all-gathers the updated
// parameters for the next step.
type ParamGather string

const (
	// ParamGatherExposed gathers them all after the optimizer step, waited for
	// before the next forward (Megatron-Core's default, overlap_param_gather off:
	// distrib_optimizer.py step_with_ready_grads starts a synchronous param sync).
	ParamGatherExposed ParamGather = "exposed"
	// ParamGatherOverlapped gathers them bucket by bucket under the next step's
	// first forward (Megatron-Core's DistributedDataParallelConfig
	// overlap_param_gather, --overlap-param-gather): the first bucket's gather is
	// issued at the start of the step and waited for by the forward pre-hook of its
	// parameters' first module; that wait issues the next bucket's, which runs under
	// the forward of the layers the bucket before it holds
	// (distributed_data_parallel.py _make_forward_pre_hook, param_and_grad_buffer.py
	// start_param_sync / finish_param_sync and next_param_gather_bucket_group,
	// Megatron-Core 0.8 on). With interleaved pipelines each model chunk has its own
	// chain, all started together (align_param_gather).
	ParamGatherOverlapped ParamGather = "overlapped"
)

// BackwardPrefetch is when ZeRO-3 (FSDP) issues the next layer's weight all-gather in
// the backward pass — PyTorch FSDP's BackwardPrefetch.
type BackwardPrefetch string

const (
	// PrefetchPre issues it as the current layer's backward starts, so it runs under
	// that layer's compute (FSDP's BACKWARD_PRE, its default; FSDP2 and DeepSpeed
	// prefetch the same way).
	PrefetchPre BackwardPrefetch = "pre"
	// PrefetchPost issues it after the current layer's gradients are computed, ahead
	// of their reduce-scatter (BACKWARD_POST, Composer's default): it overlaps no
	// compute, and the next layer waits for it.
	PrefetchPost BackwardPrefetch = "post"
	// PrefetchNone gathers when the layer's backward needs the weights, after the
	// reduce-scatter already queued on the same communicator: waited for as well.
	PrefetchNone BackwardPrefetch = "none"
)

// Optimizer says how many bytes per parameter each kind of model state takes.
// Mixed-precision Adam with an fp32 master copy: 2 (bf16 weights) + 2 (bf16
// gradients) + 12 (fp32 master, momentum, variance) = 16 B (Rajbhandari et al. 2020).
type Optimizer struct {
	Name        string  `json:"name"`
	WeightBytes float64 `json:"weight_bytes"`
	GradBytes   float64 `json:"grad_bytes"`
	StateBytes  float64 `json:"state_bytes"`
}

// AdamMixed is the default optimizer: 2 + 2 + 12 bytes per parameter — 16-bit
// weights and gradients, fp32 master weights, momentum and variance (Rajbhandari
// et al. 2020, "ZeRO", arXiv 1910.02054, §3.1: 2Ψ + 2Ψ + 12Ψ for mixed-precision
// Adam).
func AdamMixed() Optimizer {
	return Optimizer{Name: "adam-mixed", WeightBytes: 2, GradBytes: 2, StateBytes: 12}
}

// Training is the workload of one step.
type Training struct {
	SeqLen      int `json:"seq_len"`
	GlobalBatch int `json:"global_batch"` // sequences per step
	// GlobalTokens gives the batch in tokens instead (a multiple of SeqLen).
	GlobalTokens int       `json:"global_tokens,omitempty"`
	Precision    Precision `json:"precision"`
	Optimizer    Optimizer `json:"optimizer"`
	// UnfusedAttention: the attention scores are materialised (Megatron-LM before
	// flash attention); otherwise causal flash attention is assumed.
	UnfusedAttention bool `json:"unfused_attention,omitempty"`
	// FlashAttention2: the fused attention is a FlashAttention-2-generation kernel
	// (flash-attn 2) even where the framework's own on Hopper is a Hopper-native one
	// (framework.Profile.HopperFusedAttention): Transformer Engine with its cuDNN
	// backend turned off (NVTE_FUSED_ATTN=0) runs flash-attn 2 instead
	// (transformer_engine/pytorch/attention.py, get_attention_backend; flash-attn 3
	// only where its separate flashattn-hopper package is installed).
	FlashAttention2 bool `json:"flash_attention_2,omitempty"`
	// OnDemandGathers: ZeRO-3 gathers each module's weights when the module runs,
	// waiting for them, into one output tensor per rank (torch.distributed.all_gather
	// with a list) — DeepSpeed ZeRO-3 of 2021. Otherwise flat shards are prefetched
	// under the previous layer's compute (FSDP, FSDP2, later DeepSpeed).
	OnDemandGathers bool `json:"zero3_on_demand_gathers,omitempty"`
	// BackwardPrefetch is when ZeRO-3 gathers the next layer's weights in the backward
	// pass (default pre); it matters only with ZeRO-3's flat, prefetched gathers.
	BackwardPrefetch BackwardPrefetch `json:"zero3_backward_prefetch,omitempty"`
	// Framework names the training framework (estimator/framework): its profile fills
	// the settings above that the request leaves open. Empty: Megatron-Core.
	Framework string `json:"framework,omitempty"`
	// FP8Recipe is how fp8 scales are chosen, with precision fp8 (empty: the
	// framework's, delayed unless it says otherwise).
	FP8Recipe FP8Recipe `json:"fp8_recipe,omitempty"`
	// FP8Params: with precision fp8, the transformer layers' matmul weights are
	// stored in fp8 rather than 16 bits — held, gathered by ZeRO-3 and all-gathered
	// after the optimizer in 1 B per parameter, the fp32 master copy staying with the
	// optimizer states — so only an fp8 transpose is kept besides them (Transformer
	// Engine's fp8_model_init; NeMo's and Megatron-LM's fp8_params / --fp8-param-gather).
	FP8Params bool `json:"fp8_params,omitempty"`
	// FP8Activations: with precision fp8, the activations saved for the backward pass
	// as matmul inputs (norm outputs, MLA latents, the dispatched tokens, the
	// experts' second-GEMM inputs) and the activation function's inputs are kept in
	// fp8, the attention output in 12 bits (DeepSeek-V3 report §3.3.3: "we cache the
	// activations in FP8 format for the backward pass of the Linear operator", the
	// SwiGLU inputs in FP8, the attention output in E5M6).
	FP8Activations bool `json:"fp8_activations,omitempty"`
	// FP8KVIn16Bits: with precision fp8, the attention's key and value projections
	// stay 16-bit linears (their GEMMs at the 16-bit rate, nothing cast to fp8 for
	// them), as torchao's converters leave a linear whose name matches one of
	// filter_fqns (torchtitan components/quantization/utils.py module_filter_fn,
	// 35bffe989) and torchao's Llama 4 Scout MXFP8 run filtered "attention.wk" and
	// "attention.wv" (pytorch/ao torchao/prototype/moe_training/README.md, its
	// configuration list, 2f903f81a). Only where the framework runs them as their
	// own linears (framework.Profile.FP8CastPerProjection) on a model without MLA;
	// elsewhere it changes nothing.
	FP8KVIn16Bits bool `json:"fp8_kv_projections_16bit,omitempty"`
	// NoDropout: the model trains without dropout, so no dropout masks are saved
	// (Korthikanti et al. count two per layer and one after the embedding, 1 B per
	// element). Llama 3, Qwen3 and DeepSeek-V3 pre-train without dropout
	// (DeepSeek-V3 config.json: attention_dropout 0.0, no hidden dropout).
	NoDropout bool `json:"no_dropout,omitempty"`
	// DPReduceAfterBackward: data-parallel gradients (ZeRO 0–2) are reduced after the
	// backward pass instead of bucket by bucket under it — DeepSpeed's pipeline engine
	// reduces after the pipeline flush, and its ZeRO-1/2 reduce on the compute stream
	// unless overlap_comm is set (off by default). None of the reduction hides.
	DPReduceAfterBackward bool `json:"dp_reduce_after_backward,omitempty"`
	// DPBucketParams is how many parameters one data-parallel gradient bucket holds
	// (Megatron-Core's --ddp-bucket-size, DistributedDataParallelConfig.bucket_size);
	// the last bucket of each gradient buffer is reduced after the backward pass.
	// 0: the framework's (Megatron-Core: max(40e6, 1e6 × DP); otherwise PyTorch
	// DDP's 25 MB).
	DPBucketParams float64 `json:"dp_bucket_params,omitempty"`
	// ParamGather is when ZeRO-1/2's updated parameters are all-gathered: "exposed"
	// (after the optimizer, waited for) or "overlapped" (bucket by bucket under the
	// next step's first forward, Megatron-Core's overlap_param_gather). Empty:
	// exposed, in every framework. NeMo's recipes turn the overlap on (NeMo 2's
	// DistributedDataParallelConfig(overlap_param_gather=True), NeMo 1's
	// overlap_param_sync), but the one run whose logs isolate the gather (MLPerf
	// Training v6.0 gpt-oss-20b on H100, overlap_param_gather on in its
	// conf/gpt_oss.yaml) pays it in full — the step after each evaluation, which
	// finds its parameters already gathered, is 56–67 ms shorter, the gather priced
	// exposed 52–54 ms — where the overlapped timeline hides most of it
	// (docs/step-model.md, "ZeRO-1's parameter all-gather").
	ParamGather ParamGather `json:"param_gather,omitempty"`
	// MoEImbalance is the router's load imbalance: the busiest expert-parallel rank
	// receives this many times the mean number of tokens (0 or 1: balanced). That
	// rank paces the experts' GEMMs and the all-to-all of every MoE layer. With EP 1
	// the one rank computes every routed token, so it changes nothing there.
	MoEImbalance float64 `json:"moe_imbalance,omitempty"`
	// MoECapacityFactor caps the tokens an expert takes at this multiple of the mean
	// and drops the rest (GShard/Switch token dropping); 0: dropless (Megatron-Core's
	// and DeepSeek's default), the busiest rank takes all its tokens.
	MoECapacityFactor float64 `json:"moe_capacity_factor,omitempty"`
	// MoEPadToCapacity, with a capacity factor, pads every expert's tokens up to its
	// capacity (Megatron-Core's --moe-pad-expert-input-to-capacity, GShard's fixed
	// expert buffers): every expert computes, and the all-to-all carries, capacity
	// factor × the mean tokens whatever the router's balance.
	MoEPadToCapacity bool `json:"moe_pad_to_capacity,omitempty"`
	// MoEDispatcher is the MoE token dispatcher: "alltoall" (Megatron-Core's
	// MoEAlltoAllTokenDispatcher: one copy of a token per routed expert) or "deepep"
	// (Megatron-Core's flex dispatcher with DeepEP, --moe-enable-deepep: one copy per
	// node a token reaches, forwarded over NVLink); empty: the framework's.
	MoEDispatcher string `json:"moe_dispatcher,omitempty"`
	// MoEPermuteFusion: the token permutation runs as fused kernels
	// (Megatron-Core's --moe-permute-fusion); false leaves it to the framework.
	MoEPermuteFusion bool `json:"moe_permute_fusion,omitempty"`
	// MoERouterFP32: the MoE router scores the tokens in fp32 (Megatron-Core's
	// --moe-router-dtype fp32, as NeMo 25.04's DeepSeek-V3 performance recipe and
	// Megatron-Bridge's DeepSeek-V3 provider set it). Where the framework runs it
	// as a GEMM of fp32 copies (framework.Profile.MoERouterFP32Linear) the gating
	// GEMM and its two backward GEMMs run at the GPU's fp32 rate; elsewhere, and on
	// a model without experts, it changes nothing.
	MoERouterFP32 bool `json:"moe_router_fp32,omitempty"`
	// MoEGroupedGEMM: the routed experts run as Megatron-Core's TEGroupedMLP
	// (--moe-grouped-gemm: Transformer Engine GroupedLinear modules) rather than
	// SequentialMLP; false leaves it to the framework. The step model prices the
	// local experts' GEMMs as one grouped launch either way; the flag matters where
	// the framework's grouped module does work of its own
	// (framework.Profile.FP8GroupedExpertPadding).
	MoEGroupedGEMM bool `json:"moe_grouped_gemm,omitempty"`
	// CUDAGraphs: each layer's forward and backward kernels are replayed from CUDA
	// graphs (Megatron-Core's --enable-cuda-graph / --external-cuda-graph, NeMo's
	// enable_cuda_graph), one launch per layer instead of one per kernel. An MoE block
	// is captured only up to the dispatcher's host sync (the router and token counts)
	// unless its experts are padded to capacity; the rest stays eager.
	CUDAGraphs bool `json:"cuda_graphs,omitempty"`
	// CPMaxCTAs is the NCCL maxCTAs of the context-parallel process group, 0 for
	// NCCL's default: Megatron-Core creates the group with the "cp" entry of
	// nccl_communicator_config_path (parallel_state.get_nccl_options: PyTorch's
	// ProcessGroupNCCL.Options().config.max_ctas), and NeMo's MLPerf Training v5.1
	// Llama 3.1 8B implementations set it to 1 (conf/nccl/custom_communicator_cta.yaml,
	// sourced through NCCL_CFG_PATH in config_common.sh). The ring attention's K/V
	// and dK/dV sends then run on that many channels, each at one thread block's copy
	// rate, and take that many SMs from the compute they run under.
	CPMaxCTAs int `json:"cp_nccl_max_ctas,omitempty"`
	// DPMaxCTAs is the NCCL maxCTAs of the data-parallel process group, 0 for
	// NCCL's default: Megatron-Core creates the data-parallel group with the "dp"
	// entry of nccl_communicator_config_path and the one with the context-parallel
	// ranks, which carries the gradients and the parameter all-gathers where CP > 1,
	// with the "dp_cp" entry (parallel_state.get_nccl_options). NeMo's MLPerf
	// Training v5.0/v5.1 Llama 3.1 implementations give both 8
	// (conf/nccl/custom_communicator_cta.yaml). The gradient reduce-scatters and
	// all-reduces and the parameter all-gathers over that group then run on at most
	// that many channels: a ring across NVL72 racks crosses the network through
	// that many GPUs' NICs (collective.Options.MaxCTAs).
	DPMaxCTAs int `json:"dp_nccl_max_ctas,omitempty"`
	// TPMaxCTAs is the NCCL maxCTAs of the tensor-parallel process group, 0 for
	// NCCL's default (the "tp" entry of the same file, 8 in the same
	// implementations): the TP collectives NCCL runs (not those of TP overlap,
	// which Transformer Engine's userbuffers or symmetric memory move) run on at
	// most that many channels.
	TPMaxCTAs int `json:"tp_nccl_max_ctas,omitempty"`
	// DeviceMaxConnections is the CUDA_DEVICE_MAX_CONNECTIONS the job runs with:
	// how many hardware work queues its streams share, 1 to 32 (CUDA's range;
	// framework.MaxDeviceConnections). 0: what the framework's launch sets for the
	// layout (framework.Profile.DeviceMaxConnections: Megatron-LM's validate_args,
	// NeMo's and Megatron-Bridge's PerfEnvPlugin), else CUDA's default 8. With one
	// queue the kernels start in the order the host launched them, which decides
	// what Megatron-Core's EP all-to-all overlap hides (epOverlapLayer).
	DeviceMaxConnections int `json:"cuda_device_max_connections,omitempty"`
}

// MoE token dispatchers (Training.MoEDispatcher).
const (
	DispatchAllToAll = "alltoall"
	DispatchDeepEP   = "deepep"
)

// moeLoad is how many times the mean tokens the busiest expert-parallel rank
// processes on ep expert-parallel ranks: the imbalance, capped by the capacity
// factor when tokens are dropped, or the capacity factor itself when the experts'
// inputs are padded to capacity. On one rank (ep 1) the rank holds every expert and
// computes every routed token whatever the router's imbalance among them, so only
// the padding to capacity remains.
func (t Training) moeLoad(ep int) float64 {
	f := 1.0
	if ep > 1 {
		f = max(1, t.MoEImbalance)
	}
	if c := t.MoECapacityFactor; c > 0 {
		f = min(f, c)
		if t.MoEPadToCapacity {
			f = c
		}
	}
	return f
}

// FP8Recipe is the scaling recipe of fp8 matmuls. Either way the matmuls of the
// transformer layers run in fp8 and everything else in 16 bits: the attention core,
// the embedding and the output layer (Transformer Engine's te.Linear layers;
// torchtitan's float8 conversion skips the output layer).
type FP8Recipe string

const (
	// FP8Delayed is Transformer Engine's DelayedScaling (Megatron-Core and NeMo's
	// default): each tensor's scale comes from the amax history of earlier steps, so
	// the cast computes the new amax on the way (one read, one fp8 write plus its
	// transpose), and the fp8 weights are cast once per step and reused by every
	// micro-batch.
	FP8Delayed FP8Recipe = "delayed"
	// FP8Current is per-tensor current scaling (torchao float8 "tensorwise",
	// torchtitan's default; Transformer Engine's Float8CurrentScaling): the amax of a
	// tensor is taken right before its cast, one more read of it, and weights are cast
	// in every forward pass.
	FP8Current FP8Recipe = "current"
	// FP8Rowwise is per-row current scaling (torchao float8 "rowwise"): every
	// operand is quantised twice, with scales along each of its axes — rows for the
	// forward GEMM, columns for the transposed operand of a backward GEMM — each an
	// amax pass and a cast (fp8RowwiseCastBytes), weights in every forward; the
	// casts along the columns run at fp8ColumnCastRate of the row-wise ones'
	// bandwidth; the backward GEMMs, which need full-precision accumulation, run as
	// tensorwise cuBLAS GEMMs whose 16-bit output is rescaled by the row and column
	// scales in an extra pass (torchao PR #1325: the rowwise CUTLASS kernel is too
	// slow without fast accumulation), fp8RescaleBytes per output element.
	FP8Rowwise FP8Recipe = "rowwise"
	// FP8MXFP8 is OCP microscaling fp8 (torchao "mxfp8"; Transformer Engine's
	// MXFP8BlockScaling): a shared E8M0 scale per 32 consecutive elements, computed
	// by the cast kernel itself, so no amax pass; each operand is still quantised
	// along both axes (fp8MXCastBytes). Blackwell's tensor cores apply the block
	// scales inside the GEMM, so it needs Blackwell.
	FP8MXFP8 FP8Recipe = "mxfp8"
	// FP8Blockwise is fine-grained block scaling (DeepSeek-V3 report §3.3.1: 1×128
	// tiles for activations and gradients, 128×128 blocks for weights; Transformer
	// Engine's Float8BlockScaling): each tile's scale is the amax the cast kernel
	// finds in its registers, so no amax pass, and one kernel writes both the
	// row-tiled and the column-tiled (transposed) fp8 copy (fp8CastBytes plus the
	// scales, fp8BlockScaleBytes). A weight's 128×128 block scales serve the weight
	// and its transpose alike and change only when the optimizer updates it, so the
	// weights are cast once per step, as under delayed scaling. Hopper runs it
	// (DeepGEMM; cuBLAS's block-scaled fp8 GEMMs), the scales applied by the GEMM.
	FP8Blockwise FP8Recipe = "blockwise"
)

// weightsCastOncePerStep says whether the recipe casts a layer's weights once per
// step and reuses them over the micro-batches (delayed scaling's scales from the
// amax history, block scaling's from the weight's own blocks) rather than in every
// forward pass.
func (r FP8Recipe) weightsCastOncePerStep() bool { return r == FP8Delayed || r == FP8Blockwise }

// fp8WeightsCastOncePerStep says whether a layer's fp8 weights are cast once a step
// and reused by every micro-batch: under delayed and block scaling
// (FP8Recipe.weightsCastOncePerStep), and with MXFP8 weights (FP8Params), which
// Megatron-Core quantises from the bf16 its distributed optimizer all-gathers, once
// after each gather (megatron/core/distributed/param_and_grad_buffer.py
// _post_param_sync under reuse_grad_buf_for_mxfp8_param_ag: param.data.copy_ of the
// gathered bf16 slice into each MXFP8 parameter; the same at 25.09-alpha and
// 26.04-alpha.rc2).
func (t *Training) fp8WeightsCastOncePerStep() bool {
	return t.FP8Recipe.weightsCastOncePerStep() || (t.FP8Params && t.FP8Recipe == FP8MXFP8)
}

// Layout is how the model is parallelised and placed.
type Layout struct {
	TP int `json:"tp"`
	PP int `json:"pp"`
	DP int `json:"dp"`
	CP int `json:"cp"`
	// EP is expert parallelism (MoE). Megatron-Core forms the expert groups over the
	// TP × CP × DP ranks of a pipeline stage independently of attention's ("MoE
	// parallel folding", parallel_state.py's expert RankGenerator: tp=ETP, ep=EP,
	// dp=TP·CP·DP/(ETP·EP), cp=1, the same rank order), so EP may exceed DP: ETP × EP
	// must divide TP × CP × DP.
	EP int `json:"ep"`
	// ZeRO is the sharding stage over DP: 0 none, 1 optimizer states, 2 + gradients,
	// 3 + weights (FSDP full shard).
	ZeRO       int       `json:"zero"`
	MicroBatch int       `json:"micro_batch"`
	Recompute  Recompute `json:"recompute"`
	// RecomputeLayers, with full recomputation, recomputes only this many layers of
	// each pipeline stage (all its chunks together) and keeps every activation of the
	// others: Megatron-LM's --recompute-method block --recompute-num-layers, or
	// torchtitan's layer-wise selective checkpointing of every k-th layer (L/k of L).
	// 0 recomputes them all.
	RecomputeLayers int `json:"recompute_layers,omitempty"`
	// RecomputeModules, with recompute selective, names the parts of each layer
	// whose outputs are discarded and recomputed in the backward pass, as
	// Megatron-Core's --recompute-modules (TransformerConfig.recompute_modules):
	// core_attn (the default, what selective means without this list), layernorm
	// (both norms' outputs), mla_up_proj (MLA's up-projections and rotary: the
	// per-head queries, keys and values; the latents stay), moe_act (the experts'
	// activation function output), mlp (a dense MLP), shared_experts, moe (the whole
	// MoE MLP, dispatch included).
	RecomputeModules []string `json:"recompute_modules,omitempty"`
	SP               bool     `json:"sp"` // sequence parallelism with TP
	Schedule         Schedule `json:"schedule"`
	// VirtualStages is the interleaving depth v (model chunks per pipeline rank).
	VirtualStages int `json:"virtual_stages"`
	// LayerSplit optionally gives the layers of each pipeline stage (uneven split):
	// model chunk c of pipeline rank s is entry c·pp + s.
	LayerSplit []int `json:"layer_split,omitempty"`
	// AccountForEmbedding and AccountForLoss split the layers as Megatron-LM's
	// --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split
	// do: the embedding counts as one layer of the first model chunk and the output
	// layer with the loss as one layer of the last, the other chunks holding
	// (layers + those) / (pp × virtual stages) layers each. Without a layer_split, a
	// pp × virtual stages that does not divide the layers turns them on when that
	// makes it divide (the loss first, then both): 126 layers on pp 16 × 4 chunks, 70
	// on pp 12.
	AccountForEmbedding bool `json:"account_for_embedding,omitempty"`
	AccountForLoss      bool `json:"account_for_loss,omitempty"`
	// RankOrder is the order of the parallel dimensions from fastest-varying rank to
	// slowest, Megatron's "tp-cp-ep-dp-pp" by default.
	RankOrder string `json:"rank_order,omitempty"`
	// OverlapTP hides TP communication behind compute (async TP / comm-GEMM overlap).
	OverlapTP bool `json:"overlap_tp,omitempty"`
	// CPAllToAll uses DeepSpeed-Ulysses context parallelism (all-to-alls that trade the
	// sequence split for a head split, 4 per layer forward) instead of ring attention.
	CPAllToAll bool `json:"cp_all_to_all,omitempty"`
	// OverlapEP hides the expert-parallel all-to-alls under the compute of another
	// micro-batch (Megatron-Core's overlapped MoE all-to-all, DeepEP with two
	// micro-batches; DualPipe always does): only what outlasts that compute is
	// exposed.
	OverlapEP bool `json:"overlap_ep,omitempty"`
	// OverlapSharedExpert runs the shared experts while the dispatch and combine
	// all-to-alls of the same micro-batch are in flight (Megatron-Core's
	// --moe-shared-expert-overlap): those hide under the shared experts' GEMMs,
	// what outlasts them stays exposed.
	OverlapSharedExpert bool `json:"overlap_shared_expert,omitempty"`
	// ETP is expert tensor parallelism (Megatron-Core's
	// --expert-tensor-parallel-size): how many ranks split each expert's matrices.
	// 0 means tp: the experts are split like the dense MLP. With sequence
	// parallelism every rank routes its own share of the tokens and the expert-TP
	// group all-gathers the dispatched tokens (and reduce-scatters the experts'
	// output), as Megatron-Core's all-to-all token dispatcher does. 1: every rank
	// holds its experts whole (no expert-TP collectives; DeepSeek's and Qwen's MoE
	// recipes). The ranks of a stage that hold the same experts, TP·CP·DP/(ETP·EP)
	// of them, reduce their gradients.
	ETP int `json:"etp,omitempty"`
	// Offload keeps the optimizer states (and the weight shards) in host memory and
	// runs the optimizer on the CPU; empty or none: everything on the GPU.
	Offload Offload `json:"offload,omitempty"`
	// FP8Params, with precision fp8, stores the matmul weights in fp8: the layout's
	// side of Training.FP8Params (either turns it on; the estimate reports it in
	// both), so that a search can choose it per layout.
	FP8Params bool `json:"fp8_params,omitempty"`
	// OffloadActivations copies the activations each layer saves for the backward
	// pass to host memory during the forward pass and back before the layer's
	// backward, on the copy engines under the compute (Megatron-Core's
	// --fine-grained-activation-offloading; Calculon's activation offload, Isaev
	// et al. SC'23): the GPU keeps two layers' worth (the one computing, the one in
	// transfer), the host the rest, and a layer whose copy outlasts its compute
	// waits for it. Runs with 1F1B and interleaved pipelines (or none).
	OffloadActivations bool `json:"offload_activations,omitempty"`
}

// etp is the expert tensor-parallel size in effect.
func (l Layout) etp() int {
	if l.ETP >= 1 {
		return l.ETP
	}
	return max(1, l.TP)
}

// expertShard is how many ranks hold the same experts: the expert-data-parallel
// size, TP·CP·DP/(ETP·EP) — the ranks of a pipeline stage over which the expert
// groups fold, divided by those an expert's copy spans.
func (l Layout) expertShard() int {
	return max(1, l.TP*l.CP*l.DP/(l.etp()*max(1, l.EP)))
}

// moeDispatcher says each rank routes its own sequence-parallel share of the tokens
// (Megatron-Core's all-to-all token dispatcher, which needs sequence parallelism
// with TP): the MoE MLP has no TP collectives of its own, the expert-TP group
// gathers the dispatched tokens instead. Without TP there is nothing to split;
// with TP but without SP every TP rank holds all tokens and the MoE MLP is reduced
// like a dense one.
func (l Layout) moeDispatcher() bool { return l.TP <= 1 || l.SP }

// EvenSplit is a Layout.LayerSplit that spreads layers over stages as evenly as
// possible, earlier stages one layer more.
func EvenSplit(layers, stages int) []int {
	out := make([]int, stages)
	for i := range out {
		out[i] = layers / stages
		if i < layers%stages {
			out[i]++
		}
	}
	return out
}
