// Package framework describes the training frameworks a step runs under: what each
// overlaps, which kernels it uses and what it does by default when a setting is not
// given. The step model reads a profile to fill the settings a request leaves open,
// so that "Megatron-LM of 2021" or "Composer" means the same mechanisms everywhere
// (the API, the command line, rank files and the accuracy harness).
package framework

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Profile is what a framework does that changes the time or memory of a step.
type Profile struct {
	// Name is the canonical name; Aliases are other accepted spellings.
	Name    string
	Aliases []string
	// Description says what the profile stands for, Source where its settings come
	// from.
	Description, Source string

	// UnfusedAttention: the attention scores are materialised in HBM (no flash
	// attention kernel).
	UnfusedAttention bool
	// ZeRO3OnDemand: ZeRO-3 gathers each module's weights when it runs, waiting for
	// them, through one output tensor per rank (DeepSpeed ZeRO-3 of 2021).
	ZeRO3OnDemand bool
	// BackwardPrefetch is when ZeRO-3 / FSDP gathers the next layer's weights in the
	// backward pass: "pre", "post" or "none" (PyTorch FSDP's BackwardPrefetch).
	BackwardPrefetch string
	// GradReduceBytes is the width of the gradients data parallelism reduces when the
	// request gives no optimizer: 4 where the framework's default mixed precision
	// reduces in fp32; 0 keeps the optimizer's gradient bytes.
	GradReduceBytes float64
	// GradReduceBF16Only: GradReduceBytes holds under bf16 (and fp8, which runs on
	// bf16 parameters) only; under fp16 the gradients stay in the parameters' 16
	// bits. Megatron-LM turns fp32 accumulation and reduction on under --bf16 alone
	// (megatronGradReduceBytes).
	GradReduceBF16Only bool
	// HeldFP32GradCopies: the mixed-precision optimizer's fp32 copies of the 16-bit
	// gradients stay allocated from one step's update through the next step's
	// forward and backward passes, 4 B per parameter on top of the fp16 gradients;
	// under bf16 the same code accumulates and reduces the gradients in an fp32
	// buffer, the tensor the copies are (4-byte gradients instead of 2). Megatron-LM
	// before 4fd6432 (2021-07-09, "fixed zero_grad for fp32_from_float16_groups"):
	// megatron/optimizer/optimizer.py at 42c1cf4 (May 2021),
	// Float16OptimizerWithFloat16Params._copy_model_grads_to_main_grads sets
	// main_param.grad = model_param.grad.float() and its zero_grad frees only the
	// 16-bit model gradients (float16_groups and fp32_from_fp32_groups, not
	// fp32_from_float16_groups); megatron/arguments.py forces
	// accumulate_allreduce_grads_in_fp32 for bf16. Applies when the request gives no
	// optimizer.
	HeldFP32GradCopies bool
	// FP8WeightsCastInForward: an fp8 matmul casts its weight inside the layer's
	// forward pass and keeps the fp8 copy only as autograd saves it for the
	// backward pass (torchao's Float8Linear: the weight goes through
	// hp_tensor_to_float8_dynamic on every forward), where Transformer Engine keeps
	// its fp8 weights in the module for the step. Under full recomputation a
	// checkpointed layer's forward saves nothing, so only the layer being
	// recomputed (and the next) holds its copies.
	FP8WeightsCastInForward bool
	// FP8CastPerProjection: each fp8 linear casts its own input (torchao's
	// Float8Linear and MXLinear are converted nn.Linear modules, the cast inside
	// matmul_with_hp_or_float8_args), and the framework's layers run the
	// projections that read one input as separate linears (torchtitan's Llama
	// attention wq, wk and wv; its gated MLP w1 and w3: models/llama3/model.py at
	// 820504e), so that input is cast once per projection, forward and backward,
	// where Transformer Engine's fused QKV and gate-up linears cast it once. The
	// exception is torchao's tensorwise recipe under TP: torchtitan's
	// PrepareFloat8ModuleInput casts the attention's and the MLP's input once,
	// before its fp8 all-gather (parallelize_llama.py, enable_float8_tensorwise_tp).
	FP8CastPerProjection bool
	// SequenceParallelWithTP: tensor parallelism always shards the norms and dropout
	// over the sequence (the framework's TP plan has no other form).
	SequenceParallelWithTP bool
	// FP8Recipe is the framework's fp8 scaling recipe ("delayed", "current" or
	// "blockwise");
	// empty: delayed, Transformer Engine's default.
	FP8Recipe string
	// DPReduceAfterBackward: gradients are reduced after the backward pass, not under
	// it (DeepSpeed's engine: after the pipeline flush, and ZeRO-1/2 without
	// overlap_comm, its default).
	DPReduceAfterBackward bool
	// PipelineGradAllReduce: with a pipeline the engine reduces the data-parallel
	// gradients by all-reducing them whole, whatever the ZeRO stage, flattening each
	// bucket into a new buffer, averaging it in place after the all-reduce and copying
	// it back into the gradients (PipelineFallbackPassBytes a gradient element besides
	// the collective). DeepSpeed's PipelineEngine from v0.3.0 to v0.3.16
	// (deepspeed/runtime/pipe/engine.py _exec_reduce_grads → engine.py
	// buffered_allreduce_fallback → allreduce_no_retain → allreduce_and_copy, at
	// v0.3.14); from v0.4.0 it calls allreduce_gradients, which reduce-scatters under
	// ZeRO-1. Under ZeRO-1 the stage-1 optimizer then all-gathers the updated
	// parameters as before.
	PipelineGradAllReduce bool
	// FP16GradCheckBytes, when not 0, is the HBM traffic per 16-bit gradient element
	// of the ZeRO-1 optimizer's checks before its update, which read every gradient
	// the rank holds, owned shard or not: DeepSpeed's stage-1 optimizer of v0.3
	// (FP16GradCheckBytesDeepSpeed03).
	FP16GradCheckBytes float64
	// LossBytesPerLogit is the peak memory of the loss per logit of a micro-batch.
	// Zero: MegatronLossBytesPerLogit, Megatron's fused vocab-parallel cross entropy.
	LossBytesPerLogit float64
	// OptimizerUpdateBytes, when not 0, is the HBM traffic of the framework's
	// optimizer update per parameter a rank owns, where its optimizer is not a fused
	// multi-tensor Adam (step.Constants.OptimizerBytes): Composer's DecoupledAdamW,
	// eight elementwise kernels per tensor (ComposerDecoupledAdamWBytes).
	OptimizerUpdateBytes float64
	// LossParallelBytesPerLogit, when not 0, replaces LossBytesPerLogit under tensor
	// parallelism, where the framework computes the loss over the vocabulary-sharded
	// logits (torchtitan's loss_parallel).
	LossParallelBytesPerLogit float64
	// SequentialExpertGEMMs: the local experts of an MoE layer run one GEMM after
	// another (DeepSpeed-MoE's loop over its experts) instead of one grouped GEMM
	// (Megatron-Core's --moe-grouped-gemm, DeepSeek's DeepGEMM, torch._grouped_mm).
	SequentialExpertGEMMs bool
	// MegatronDDPBuckets: data-parallel gradients reduce in buckets of
	// max(40e6, 1e6 × DP) parameters when the request states none — Megatron-Core's
	// DistributedDataParallel default (megatron/core/distributed/
	// distributed_data_parallel.py: ddp_config.bucket_size = max(40000000,
	// 1000000 * dp_group.size()), "make buckets larger to ensure that chunks used in
	// NCCL ring-reduce implementations are large enough to remain bandwidth-bound").
	// Otherwise PyTorch DDP's buckets where TorchDDP names the stage, and
	// Constants.DPBucketBytes where neither does.
	MegatronDDPBuckets bool
	// TorchDDP lists the ZeRO stages at which the framework's data parallelism is
	// PyTorch's DistributedDataParallel with its default buckets (TorchDDPBucketBytes,
	// TorchDDPFirstBucketBytes): Lightning's DDP strategy, alone or under
	// ZeroRedundancyOptimizer (ZeRO 0, 1), and Composer's DDP (ZeRO 0; its sharded
	// stages are FSDP's).
	TorchDDP []int
	// HopperFusedAttention: on Hopper the framework's attention runs a Hopper-native
	// fused kernel (Transformer Engine's cuDNN fused attention, of FlashAttention-3's
	// class) rather than one of FlashAttention-2's generation (flash-attn 2, PyTorch's
	// scaled_dot_product_attention flash backend).
	HopperFusedAttention bool
	// NormEmitsFP8: under fp8 with delayed scaling the layer norm ahead of a linear
	// layer writes its output in fp8 in the same kernel, so the QKV and dense MLP
	// inputs need no cast of their own (Transformer Engine's LayerNormLinear, which
	// Megatron-Core's TE layer spec uses for both: TELayerNormColumnParallelLinear).
	// The norm writes the fp8 value alone; the backward pass transposes the gathered
	// fp8 input for the weight gradient (TE v1.9–v2.2), 2 B per element, which is
	// not priced (docs/step-model.md, "Tried and not kept"). Current scaling needs
	// the output's amax before the cast and keeps a cast kernel.
	NormEmitsFP8 bool
	// FP8TransposeFree: on Blackwell the per-tensor fp8 casts (delayed and current
	// scaling) write no transposed copy, since cuBLASLt takes fp8 operands in every
	// layout from compute capability 10.0 (Transformer Engine from bee4649,
	// 2025-03-18, in NeMo 25.04's manifest, through v2.8:
	// pytorch/csrc/extensions/quantizer.cpp create_transpose = columnwise_usage &&
	// !non_tn_fp8_gemm_supported(), true for major ≥ 10). Older stacks write the
	// transpose on every GPU, as on Hopper (TN layout only).
	FP8TransposeFree bool
	// PipelineScatterGather: without sequence parallelism, each TP rank sends its
	// 1/TP slice of the activations between pipeline stages and the receiving stage
	// all-gathers them over NVLink, instead of every rank sending the whole tensor
	// (Narayanan et al. 2021 §4.1, Megatron-LM's scatter_gather_tensors_in_pipeline,
	// on unless --no-scatter-gather-tensors-in-pipeline). With sequence parallelism
	// the activations are sharded anyway.
	PipelineScatterGather bool
	// PipelineSendOverlap: under the interleaved schedule each pipeline send and
	// receive runs asynchronously while the rank computes its next model chunk
	// (Megatron-Core's overlap_p2p_comm, batch_p2p_comm off): in the steady state a
	// rank posts a chunk's send after computing it and waits for the matching
	// receive only before the chunk that needs it, while the warm-up's forward
	// sends and the cool-down's backward sends stay blocking
	// (overlap_p2p_comm_warmup_flush off). Megatron-Core core_v0.12.0
	// megatron/core/pipeline_parallel/schedules.py
	// forward_backward_pipelining_with_interleaving; on by default in Megatron-LM's
	// training arguments from core_r0.6.0 (--no-overlap-p2p-communication, off for
	// the non-interleaved schedule, which rejects it), in NeMo 2's
	// MegatronCommOverlapCallback for virtual pipeline size > 1 (which the
	// performance recipes add) and in the NeMo 1 launcher and MLPerf configurations
	// (overlap_p2p_comm: True, batch_p2p_comm: False).
	PipelineSendOverlap bool
	// DedupDispatch: the MoE all-to-all sends each token across the network once per
	// node it is routed to and forwards it to that node's experts over NVLink
	// (DeepEP's normal kernels; DeepSeek-V3 report §3.2.2) — instead of one copy per
	// routed expert (Megatron-Core's all-to-all token dispatcher).
	DedupDispatch bool
	// FP8Dispatch: under fp8 training the dispatch all-to-alls (the forward one and
	// the backward one of the output gradients) carry fp8 with 1×128 scales; the
	// combines stay in 16 bits (DeepSeek-V3 §3.3.3).
	FP8Dispatch bool
	// FusedPermute: the MoE token permutation and un-permutation run as fused
	// gather/scatter kernels (or inside the dispatch kernels) rather than PyTorch's
	// index_select and sort-by-expert chunks (Megatron-Core's --moe-permute-fusion,
	// off by default).
	FusedPermute bool
	// CommSMs is how many SMs the kernels of communication that overlaps compute
	// occupy (0: 16, NCCL's channels of one collective); DeepSeek-V3's all-to-all
	// kernels take 20 (§3.2.2).
	CommSMs float64
	// TPUserbuffers: TP communication overlap (layout.overlap_tp) runs Transformer
	// Engine's userbuffers with its per-GEMM methods (Megatron-Core's
	// --tp-comm-overlap, NeMo's tp_comm_overlap): the all-gathers by ring exchange
	// on the copy engines, the forward reduce-scatters pipelined in chunks by SM
	// kernels beside a GEMM given the other SMs, the backward ones in bulk beside
	// the weight-gradient GEMM; all-gather buffers in fp8 under fp8 training.
	// false: every TP collective is decomposed into ring steps beside its GEMM's
	// chunks (PyTorch's async TP, torch/distributed/_symmetric_memory).
	TPUserbuffers bool
	// TPPipelinedRSFP8: with TPUserbuffers under fp8 training, the pipelined forward
	// reduce-scatters also run with fp8 buffers (fp8_buf). NeMo's userbuffers
	// configurations set it on every pipelined reduce-scatter of its fp8
	// configurations (nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py:
	// PipelineOverlapCfg(..., fp8_buf=True) in each userbuffers_fp8_* of
	// NVIDIA/NeMo 0594a70); Transformer Engine's default leaves them 16-bit.
	TPPipelinedRSFP8 bool
	// FP8Activations: under fp8 training the activations saved for the backward pass
	// as matmul inputs are kept in fp8 (DeepSeek-V3 §3.3.3).
	FP8Activations bool
	// BlackwellFusedHeadDim, when not 0, is the widest attention head (of the queries
	// and keys, and of the values) the framework's fused attention runs on Blackwell;
	// wider heads that flash-attn 2 does not take either run Transformer Engine's
	// UnfusedDotProductAttention (the scores
	// materialised in HBM). Transformer Engine before 2.5 (v2.2–v2.4 checked) admit cuDNN's fused attention
	// on sm100 only for head dimensions up to 128 (common/fused_attn/fused_attn.cpp,
	// nvte_get_fused_attn_backend: !(sm_arch_ >= 100 && (head_dim_qk > 128 ||
	// head_dim_v > 128)), lifted by TE PR #1797, June 2025, in v2.5), and disable
	// flash-attn for unequal query and value head dimensions (MLA: 192 and 128,
	// dot_product_attention/utils.py "does not support MLA"), so DeepSeek-V3's
	// attention ran unfused on B200 and GB200 under them. Equal heads up to 256 wide
	// (Nemotron-4's 192) still run flash-attn 2.
	BlackwellFusedHeadDim int
	// FP8Params: under fp8 training the framework can store the matmul weights in
	// fp8, the fp32 master copy with the optimizer (Transformer Engine's
	// fp8_model_init: Megatron-LM's --fp8-param-gather, NeMo's fp8_params). A
	// search tries it only where the framework runs it.
	FP8Params bool
	// ActivationOffload: the framework can copy the activations saved for the
	// backward pass to host memory and back (Megatron-Core's
	// --fine-grained-activation-offloading, with 1F1B and interleaved pipelines). A
	// search tries it only where the framework runs it.
	ActivationOffload bool
	// TorchRingAttention: ring context parallelism runs PyTorch's experimental
	// context_parallel (torch/distributed/tensor/experimental/_attention.py, the
	// round-robin load balance into 2·CP chunks): the K/V blocks go round as one
	// all-gather per attention call, issued with the first (diagonal) step and
	// waited for before the second (its default rotate method, "allgather"); the
	// dK/dV partial sums go round in fp32 (convert_to_f32) by a permuting
	// all-to-all per step, each waited for after the next step's kernel; the
	// partial outputs merge, and dQ, dK, dV accumulate, in fp32 through eager
	// elementwise kernels. The K/V passed to it are as wide as the queries where
	// the model repeats its K/V heads before scaled_dot_product_attention
	// (torchtitan's Llama: repeat_kv).
	TorchRingAttention bool
	// OpSACRecomputesBlackwellAttention: on Blackwell, op-level selective
	// checkpointing (torchtitan's per-op SAC) does not save the attention's output
	// and runs the attention forward again in the backward pass. torchtitan from
	// 3b85aa31f (PR #1196, 2025-05-14, "Use cudnn backend on B200") puts
	// SDPBackend.CUDNN_ATTENTION first on sm100 (models/attention.py,
	// has_cuda_capability(10, 0)), while its op save list
	// (models/llama3/infra/parallelize.py _save_list) names only the flash and
	// efficient SDPA kernels: every op outside it is PREFER_RECOMPUTE, so
	// aten._scaled_dot_product_cudnn_attention runs again in the backward (under
	// torch.compile too: torch/_functorch/partitioners.py must_recompute treats
	// PREFER_RECOMPUTE as MUST_RECOMPUTE). The save
	// list took the cuDNN kernel in b39377f9f (PR #2095, 2025-12-01, after issue
	// #2091); from 6a3a9da95 (2025-10-09) cuDNN came first on every GPU, Hopper too.
	OpSACRecomputesBlackwellAttention bool
	// BlackwellGroupedMMEfficiency, when not 0, is the efficiency — the fraction of
	// the dense peak of the operands' format — of the kernel that runs the routed
	// experts' GEMMs on Blackwell, where a measurement of that kernel puts it below
	// the model's GEMM efficiency: PyTorch's CUTLASS grouped GEMM, torch._grouped_mm
	// in bf16 and torch._scaled_grouped_mm in MXFP8 (torchao's
	// _to_mxfp8_then_scaled_grouped_mm), which torchtitan's GroupedExperts call
	// whatever the number of local experts. Its speed depends on the PyTorch build:
	// set on the profile of the versions it was measured with.
	BlackwellGroupedMMEfficiency float64
	// BlackwellMXCastHBM, when not zero, is the fraction of the GPU's HBM bandwidth
	// torchao's MXFP8 casts reach on Blackwell, along dim 0 (rows: torchao's to_mx
	// under torch.compile) and dim 1 (columns: torchao's Triton kernel, the default
	// of torchtitan's mx.mxfp8_dim1_cast_kernel_choice), where torchao's own
	// measurement of those kernels on B200 puts them below the model's elementwise
	// rate (Constants.HBMEfficiency). Their speed depends on the torchao and
	// PyTorch builds: set on the profile of the versions it was measured with
	// (dim 1 by the CUDA kernel torchao takes by default from 2026 on the current
	// torchtitan profile).
	BlackwellMXCastHBM [2]float64
	// FSDP2Copies: ZeRO-3 is PyTorch FSDP2 (fully_shard), which copies every
	// gathered weight and every gradient it reduces once more in HBM, on the
	// compute stream. torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py
	// wait_for_unshard runs foreach_all_gather_copy_out on the current stream
	// (torch.ops.fsdp.split_with_sizes_copy: the all-gather output read and the
	// unsharded parameters written, once per gather), and _fsdp_collectives.py
	// foreach_reduce runs foreach_reduce_scatter_copy_in there too
	// (torch.ops.fsdp.chunk_cat: the unsharded gradients read in the compute
	// dtype, the reduce-scatter input written in the reduce dtype) before it
	// switches to the reduce-scatter stream — since pytorch/pytorch PR #129721
	// (2024-06-27, "[FSDP2] Ran reduce-scatter copy-in in default stream"), and so
	// at 010ae4a89 (2026). A parameter sharded on dim 1 (torchtitan's routed
	// experts when the expert FSDP group times EP exceeds the experts,
	// apply_fsdp's shard_placement_fn, 7354848df, PR #1561) is copied through a
	// temporary and re-concatenated (torch.cat of its chunks), its gradient
	// chunked and concatenated before the copy-in: one more read and write each.
	FSDP2Copies bool
	// EagerMoEGlue: the MoE layer's own code around the routed experts runs as
	// eager PyTorch operators, each a pass over the routed tokens: torchtitan of
	// October–November 2025 compiles an MoE layer's submodules one by one and not
	// MoE.forward or the expert-parallel hooks (models/llama4/infra/parallelize.py
	// apply_compile, 35bffe989, 2025-11-07: "We don't compile token dispatch and
	// token combine due to an issue on B200", issue #1940), whose gather, fp32
	// score product, vstack, index gather, index_put and out-of-place scatter_add
	// (models/moe/moe.py MoE.forward, models/moe/utils.py _permute and _unpermute)
	// move 46 B per routed token and hidden element at top-1 where a fused
	// permutation moves 8 (step's eagerMoEGlueBytes).
	EagerMoEGlue bool
	// FSDP2CopyInOwnStream: FSDP2 before PR #129721 ran the reduce-scatter copy-in
	// on the reduce-scatter stream, beside the compute rather than in its stream.
	FSDP2CopyInOwnStream bool
	// TELayers: the transformer layers are Megatron-Core's Transformer Engine layer
	// spec (models/gpt/gpt_layer_specs.py), so the host calls a Transformer Engine
	// module for every linear layer, norm and attention, each with its own Python
	// and checks on top of its kernels (Transformer Engine issue #2053: its Linear's
	// forward takes 2.7× torch.nn.Linear's host time). The step model prices the
	// host per module (step's teModuleHostUs).
	TELayers bool
	// DTensorCollectives: the layers' tensor and expert parallelism run through
	// DTensor and PyTorch's functional collectives
	// (torch.distributed._functional_collectives: torchtitan's TP plan and
	// expert_parallel.py) and their data parallelism through FSDP2's
	// fully_shard, so the host issues each layer's collectives through those
	// (step's dtensorCollectiveCalls).
	DTensorCollectives bool
	// MoERouterFusion: the MoE router's score, top-k and auxiliary-loss kernels run
	// fused (Megatron-Core's --moe-router-fusion, Transformer Engine PR 1883: 72 →
	// 31 kernels for DeepSeek-V3's router), as the framework's recipes set it.
	MoERouterFusion bool
	// MLARoPEUnfused: the framework's MLA models apply their rotary embedding with
	// PyTorch's elementwise operators rather than a fused kernel.
	MLARoPEUnfused bool
	// MLADownProj is how multi-head latent attention's down-projections (hidden →
	// q_lora_rank, hidden → kv_lora_rank + the rotary key) run under tensor
	// parallelism: MLADownProjReplicated (the zero value), MLADownProjColumn or
	// MLADownProjDuplicated.
	MLADownProj MLADownProj
	// MoEPermuteExpertLoop: the fused MoE permutation (Megatron-Core's
	// --moe-permute-fusion) runs Transformer Engine's mask-map Triton kernels as
	// they were before TE PR #1927 (July 2025, first in v2.6): in
	// transformer_engine/pytorch/triton/permutation.py of v2.1–v2.5, _permute_kernel
	// and _unpermute_kernel give each token one program, which walks the hidden
	// dimension in blocks of at most 1 024 elements (the autotuned BLOCK_SIZE) and,
	// for every block, loops over every expert, loading the token's row of the row
	// map one scalar at a time and branching on it (`for expert_idx in
	// range(num_experts)`: dst_row = tl.load(...); if dst_row != -1: store). The
	// loop is a chain of dependent loads, E·⌈h/1024⌉ per token, whatever the top-k.
	// PR #1927 gives each (token, block) a program that visits only the token's
	// top-k destinations; NVIDIA's account of DeepSeek-V3 on GB200 (Megatron-LM
	// docs/discussions/deepseek-v3-gb200-optimization, 79e8592, §2.1.1) calls the old
	// kernel's length "clearly abnormal" for top-8 of 256 experts, the fix "up to a
	// 10x unit speedup". The step model prices the chain (step.permuteExpertLoop).
	MoEPermuteExpertLoop bool
	// MoEPaddedPermuteSync: Megatron-Core's all-to-all dispatcher copies to the
	// host in every MoE layer's forward even with each expert padded to its
	// capacity (step.Training.MoEPadToCapacity), which fixes the split sizes on the
	// host: its unfused permutation selects the routed tokens with masked_select,
	// whose output size the GPU must report before the host can go on
	// (megatron/core/transformer/moe/moe_utils.py at core_r0.10.0: permute,
	// token_indices.masked_select(routing_map); unpermute's probs likewise), until
	// Megatron-LM f27a04f (2025-01-10, "Make MoE token dispatcher cuda graph-able
	// if token-drop and padding", first in core_v0.11.0) gave the padded case a
	// fixed-size argsort and index_select. false: padding needs no sync
	// (Megatron-Core 0.11 on).
	MoEPaddedPermuteSync bool
	// MoERouterFP32Linear: the router's fp32 option (step.Training.MoERouterFP32,
	// Megatron-Core's moe_router_dtype "fp32") runs as
	// torch.nn.functional.linear(input.to(float32), weight.to(float32)) —
	// megatron/core/transformer/moe/router.py TopKRouter.gating at core_r0.12.0
	// (7094270) — so the gating GEMM and autograd's two backward GEMMs are fp32
	// GEMMs. PyTorch keeps TF32 off for matmuls by default
	// (torch.backends.cuda.matmul.allow_tf32 False since PyTorch 1.12) and neither
	// Megatron-Core 0.12 nor NeMo 25.04 (7a8f1cc) turns it on: they run on the CUDA
	// cores at the GPU's fp32 rate. Megatron-Core 0.14 (20d73fe) runs the forward
	// through Transformer Engine's general_gemm on the 16-bit operands instead
	// (moe_utils.py RouterGatingLinearFunction) and the backward's fp32 GEMMs in
	// TF32 (Transformer Engine v2.7 cublaslt_gemm.cu: CUBLAS_COMPUTE_32F_FAST_TF32
	// for pure fp32 GEMMs), half the 16-bit tensor rate on a GEMM of microseconds,
	// which the step model does not price apart.
	MoERouterFP32Linear bool
	// LossReductionHostSync: the framework's loss reduction reads a value of the
	// GPU on the host once a micro-batch, where the loss is computed (every rank
	// without a pipeline, the last stage with one), and then reduces the
	// micro-batch's loss over data parallelism before the backward pass starts.
	// NeMo 2.3 (the NeMo 25.04 containers; nemo/lightning/megatron_parallel.py
	// MaskedTokenLossReduction.forward at 6f2c6fd, b4148d2 and 7a8f1cc, lines
	// 1793–1813): `if num_valid_tokens_in_ub < 0.5` compares the loss mask's sum,
	// a GPU tensor, in Python — the host waits for the GPU to finish everything
	// queued — and average_losses_across_data_parallel_group
	// (nemo/collections/nlp/modules/common/megatron/utils.py) all-reduces the
	// micro-batch's loss over the data-parallel group. NeMo PR #13295 (58f6689,
	// 2025-05-05, "Fix loss compute and reduction"; first in v2.4.0, the 25.07
	// containers) removed both: the reduction moved to once a step, as
	// Megatron-LM !3139 (3806ec2) did for pretrain_gpt.py. The GPU idles while
	// the host issues what follows the sync up to the backward pass's first large
	// kernel (step.lossSyncOps).
	LossReductionHostSync bool
	// GLUClampUnfused: a clamped gated MLP (model.Arch.GLUClamp) clamps with
	// PyTorch's elementwise operators ahead of the fused activation: Megatron-Core's
	// weighted_bias_quick_geglu_impl (megatron/core/fusions/fused_bias_geglu.py,
	// the MoE experts' path under bias_activation_fusion) splits the first GEMM's
	// output in two (chunk), clamps each half (clamp, clamp) and concatenates them
	// again (torch.cat) before WeightedBiasQuickGeGLUFunction; autograd runs each
	// step's backward as its own kernels. MLPerf Training v6.0's gpt-oss-20b
	// (pretrain.py, PATCH_GEGLU_GRAPH_SAFE) keeps the same four operators where its
	// experts are TEGroupedMLP's own (not in Transformer Engine's op fuser:
	// nemo-te-ops).
	GLUClampUnfused bool
	// FP8GroupedExpertPadding: under fp8, Megatron-Core 0.12's TEGroupedMLP
	// (step.Training.MoEGroupedGEMM) pads every local expert's tokens to a multiple
	// of 16 before the first grouped GEMM and strips the padding after the second
	// (megatron/core/transformer/moe/experts.py at core_v0.12.0, d580efc:
	// self.fp8_padding / self.fp8_unpadding whenever config.fp8), with Transformer
	// Engine's Fp8Padding and Fp8Unpadding (transformer_engine/pytorch/module/
	// fp8_padding.py and fp8_unpadding.py at v2.2, c55e425), which copy whether or
	// not a split needs padding: the padding forward is a fused_multi_row_padding
	// into a new tensor and its backward a split and torch.cat; the unpadding forward
	// a split and torch.cat and its backward a fused_multi_row_padding. Four copies
	// of the experts' input or output rows (16 bits, hidden wide) a layer and
	// micro-batch, two forward and two backward (step.fp8ExpertPadBytes). Later
	// Megatron-Core skips them where the router already pads the routing map
	// (moe_router_padding_for_quantization: experts.py skip_routed_expert_padding
	// at 2436e3d).
	FP8GroupedExpertPadding bool
	// ExpertBiasUnfused: the routed experts' second bias (model.MoE.Bias) is added
	// with PyTorch's operators, one expert at a time, after the grouped GEMM:
	// Megatron-Core's TEGroupedMLP builds linear_fc2 with skip_bias_add and, outside
	// the Transformer Engine op fuser, adds the biases in _apply_bias
	// (megatron/core/transformer/moe/experts.py, from a329dd6 "Enable bias in expert
	// mlp [gpt-oss 5/5]", 2025-09, to 2436e3d of April 2026): split the output and
	// the router's probabilities by expert, t + b · p for each (the fp32
	// probabilities promote both products to fp32), torch.cat, and .to back to
	// 16 bits. The first GEMM's bias stays in its epilogue.
	ExpertBiasUnfused bool
	// Queues is how the framework's launch sets CUDA_DEVICE_MAX_CONNECTIONS, the
	// hardware work queues a process's streams share (DeviceMaxConnections), when
	// the request states none; the zero value sets nothing (CUDA's default).
	Queues Queues
	// Runs is what the framework can run at all; its zero value runs every layout
	// the step model prices. Set only where a source states the limit.
	Runs Runs
}

// Runs is what layouts a framework of its version runs: estimate refuses the
// others, naming the layout field, and a search under the framework enumerates only
// these (an explicit constraint asking for more is refused, naming it).
type Runs struct {
	// Schedules are the pipeline schedules (step.Schedule names: "1f1b",
	// "interleaved", ...) it runs with more than one stage; empty: any.
	Schedules []string
	// ZeRO are the ZeRO stages it runs without a pipeline, ZeROWithPipeline those
	// with one (empty: as ZeRO); empty ZeRO: any.
	ZeRO, ZeROWithPipeline []int
	// Recompute are the activation recomputation modes (step.Recompute names:
	// "none", "selective", "ops", "full") it runs; empty: any.
	Recompute []string
	// EvenLayerSplit: the framework splits the transformer layers evenly over the
	// pipeline stages and the model chunks of an interleaved schedule, no other
	// way, and interleaves only pipelines of more than 2 stages. Megatron-LM of
	// April 2021 (Narayanan et al. SC'21; the code at 42c1cf4, May 2021):
	// megatron/model/transformer.py asserts num_layers %
	// pipeline_model_parallel_size == 0 and gives every stage (every virtual
	// stage: num_layers_per_virtual_pipeline_stage) the same number of layers, and
	// megatron/arguments.py allows --num-layers-per-virtual-pipeline-stage only
	// with a pipeline-model-parallel size above 2. The layer split, the
	// embedding and loss accounting of later Megatron-Core (its
	// --decoder-first/last-pipeline-num-layers, --account-for-embedding/loss-in-
	// pipeline-split) did not exist.
	EvenLayerSplit bool
	// NoPipeline: no pipeline parallelism; NoSequenceParallel: tensor parallelism
	// without sequence parallelism only; NoContextParallel: no context
	// parallelism; NoTPOverlap: TP communication never overlaps the GEMMs;
	// NoEPOverlap: the MoE all-to-alls never overlap compute.
	NoPipeline, NoSequenceParallel, NoContextParallel, NoTPOverlap, NoEPOverlap bool
	// NoMLATPOverlap: TP communication never overlaps the GEMMs of a model with
	// multi-head latent attention (model.Arch.MLA), whatever it does for other
	// models. Megatron-Core builds MLA's four latent projections (q down, q up,
	// kv down, kv up) as Transformer Engine linear layers; up to 0.12 it gives
	// them no userbuffers name, and TELinear asserts one under tp_comm_overlap
	// ("Buffer name should be set to configure communication overlap settings"):
	// the model is not built. From Megatron-LM 4e6ae3a (2025-04-24, first in
	// core_v0.13.0) they are named q_down_proj, q_up_proj, kv_down_proj and
	// kv_up_proj, and TELinear, meeting a name that is not qkv, proj, fc1 or fc2,
	// sets tp_comm_overlap False on the config it was given — the model's one
	// TransformerConfig, shared by every layer — so no module built after the
	// first layer's q down-projection overlaps (still so at d98e8a6, 2026-08):
	// of the whole model only the first layer's attention output projection, built
	// before it, does (mlaTPOverlapSource).
	NoMLATPOverlap bool
	// NoMLAContextParallel: no context parallelism for a model with latent
	// attention, whose queries and keys are wider than its values (MLA's 192 and
	// 128). Transformer Engine 2.2–2.4 (dot_product_attention/utils.py,
	// get_attention_backend) disables FusedAttention under context parallelism
	// when head_dim_qk != head_dim_v ("does not support context parallelism with
	// MLA"), flash-attn whenever they differ, and UnfusedDotProductAttention under
	// any context parallelism: no backend is left, and DotProductAttention raises
	// "No dot product attention backend is available for the provided inputs"
	// (v2.5 lifts the first; mlaContextParallelSource).
	NoMLAContextParallel bool
	// NoSlidingWindowRingCP: context parallelism for a model with sliding-window
	// attention (model.Arch.SlidingWindow) only by all-to-alls (step.Layout's
	// CPAllToAll, Megatron-Core's cp_comm_type a2a), not by the ring of K/V blocks
	// (cp_comm_type p2p). Transformer Engine from v1.12 (pytorch/attention.py) to
	// v2.18 and d0067d0 (2026-08, dot_product_attention/context_parallel.py,
	// attn_forward_func_with_cp) asserts that a window other than (-1, 0) and
	// (-1, -1) runs only with cp_comm_type a2a or all_gather ("The context parallel
	// running configs cannot support sliding window attention", later "Context
	// parallelism does not support sliding window attention with cp_comm_type=...");
	// Megatron-Core passes the layer's window_size to it (slidingWindowCPSource).
	NoSlidingWindowRingCP bool
	// NoGradAccumulation: the framework runs one forward and one backward pass a
	// step on each data-parallel replica's local batch, so without a pipeline the
	// micro-batch is the local batch (global batch / DP: one micro-batch a step);
	// with one, the pipeline schedule splits the local batch into its
	// micro-batches (any number dividing it). torchtitan before June 2025
	// (torchtitan#1238, "Support gradient accumulation"): train.py at 9dec370
	// calls model(input_ids) and loss.backward() once a step without a pipeline,
	// pp_schedule.step(input_ids) once with one.
	NoGradAccumulation bool
	// DDPAlone: replicated data parallelism (ZeRO 0 over more than one replica)
	// runs only as the one parallelism: no TP, PP or CP beside it. torchtitan at
	// 9dec370: parallelize_llama.py's apply_ddp path raises "DDP has not
	// supported > 1D parallelism" on a world mesh of more than one dimension.
	DDPAlone bool
	// ExpertTPIsTP: an MoE layer's experts are split over the tensor-parallel ranks
	// like the dense MLP (expert tensor parallelism = TP, never whole experts per
	// TP rank): the framework passes no expert tensor-parallel size, and
	// Megatron-Core's initialize_model_parallel takes TP's.
	ExpertTPIsTP bool
	// FP8ParamsSharded: the fp8 primary weights (Profile.FP8Params) train only under
	// a sharded optimizer, ZeRO 1 or more: only Megatron-Core's distributed optimizer
	// (and FSDP) quantise the updated master weights into them
	// (fp8ParamsShardedSource).
	FP8ParamsSharded bool
	// Sources gives, for each limit above, where its framework's code states it.
	Sources []Source
}

// mlaTPOverlapSource is where Megatron-Core states Runs.NoMLATPOverlap.
var mlaTPOverlapSource = Source{Limit: "NoMLATPOverlap", Repo: "NVIDIA/Megatron-LM",
	File:   "megatron/core/extensions/transformer_engine.py (TELinear.__init__); megatron/core/transformer/multi_latent_attention.py (MLASelfAttention.__init__)",
	Commit: "core_v0.12.0; 4e6ae3a (core_v0.13.0); 20d73fe; d98e8a6 (2026)",
	Note: "0.12: MLASelfAttention builds linear_q_down_proj, linear_q_up_proj, linear_kv_down_proj and linear_kv_up_proj " +
		"without tp_comm_buffer_name and TELinear asserts \"Buffer name should be set to configure communication overlap settings\" " +
		"when config.tp_comm_overlap is set; from 4e6ae3a on they are named q_down_proj, q_up_proj, kv_down_proj, kv_up_proj and " +
		"TELinear sets self.config.tp_comm_overlap = False for a name outside qkv, proj, fc1, fc2 (\"Disabling TP communication " +
		"overlap for this layer\"), on the TransformerConfig every module shares: no module built after it overlaps"}

// mlaContextParallelSource is where Transformer Engine states
// Runs.NoMLAContextParallel.
var mlaContextParallelSource = Source{Limit: "NoMLAContextParallel", Repo: "NVIDIA/TransformerEngine",
	File:   "transformer_engine/pytorch/dot_product_attention/utils.py (get_attention_backend); transformer_engine/pytorch/attention.py (DotProductAttention.forward)",
	Commit: "v2.2, v2.3, v2.4 (not v2.5)",
	Note: "under context_parallel: \"Disabling UnfusedDotProductAttention as it does not support context parallelism\", " +
		"\"Disabling FusedAttention as it does not support context parallelism with MLA\" (head_dim_qk != head_dim_v); flash-attn " +
		"is off for head_dim_qk != head_dim_v; with no backend left DotProductAttention raises \"No dot product attention backend " +
		"is available for the provided inputs\""}

// slidingWindowCPSource is where Transformer Engine states
// Runs.NoSlidingWindowRingCP.
var slidingWindowCPSource = Source{Limit: "NoSlidingWindowRingCP", Repo: "NVIDIA/TransformerEngine",
	File:   "transformer_engine/pytorch/attention.py (v1.12–v2.1); transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py (attn_forward_func_with_cp, v2.2 on)",
	Commit: "v1.12, v2.0, v2.2, v2.4, v2.5, v2.8, v2.10, v2.12, v2.14, v2.18, d0067d0 (2026-08)",
	Note: "sliding_window_attn = window_size not in ((-1, 0), (-1, -1)); assert not sliding_window_attn or cp_comm_type in " +
		"[\"a2a\", \"all_gather\"]: the ring (p2p) does not run a sliding window. MLPerf Training v6.0's gpt-oss-20b " +
		"configurations with CP (GB200, GB300) set cp_comm_type a2a"}

// mcoreSchedulesSource is where Megatron-Core of 2026 states its Runs.Schedules.
// The combined-1F1B EP overlap (overlap_moe_expert_parallel_comm, Megatron-Core
// 0.14's --combined-1f1b) is the EP overlap run inside the no-pipelining and
// interleaved schedules, not a schedule of its own, and delay_wgrad_compute (which
// asserts overlap_moe_expert_parallel_comm) splits the weight-gradient GEMMs off
// within it: the pipeline stays 1F1B or interleaved.
var mcoreSchedulesSource = Source{Limit: "Schedules: 1f1b, interleaved", Repo: "NVIDIA/Megatron-LM",
	File:   "megatron/core/pipeline_parallel/schedules.py (get_forward_backward_func); megatron/core/transformer/transformer_config.py",
	Commit: "d98e8a6 (2026-08-22); 2436e3d the same",
	Note: "get_forward_backward_func returns forward_backward_no_pipelining, forward_backward_pipelining_without_interleaving " +
		"(1F1B) or forward_backward_pipelining_with_interleaving (the bridge schedule of a multi-module collection is the " +
		"1F1B one); with overlap_moe_expert_parallel_comm the no-pipelining and interleaved functions call " +
		"combined_1f1b_schedule_for_no_pipelining / _for_interleaved_pipelining, and __post_init__ asserts " +
		"virtual_pipeline_model_parallel_size is set when pipeline_model_parallel_size > 1; delay_wgrad_compute asserts " +
		"overlap_moe_expert_parallel_comm. No zero-bubble or DualPipe schedule"}

// fp8ParamsShardedSource is where Megatron states Runs.FP8ParamsSharded.
var fp8ParamsShardedSource = Source{Limit: "FP8ParamsSharded", Repo: "NVIDIA/Megatron-LM",
	File: "megatron/training/arguments.py; megatron/core/optimizer/optimizer.py", Commit: "core_r0.12.0; d98e8a6 (2026)",
	Note: "validate_args asserts \"--fp8-param-gather only supported with distributed optimizer or torch fsdp2\" (core_r0.12.0; " +
		"\"…, megatron fsdp, or inference mode\" at d98e8a6); without it Megatron-Core steps Float16OptimizerWithFloat16Params, " +
		"whose _copy_main_params_to_model_params copies the fp32 main weights with a multi-tensor copy and quantises nothing, " +
		"where the distributed optimizer and Megatron-FSDP cast them through Transformer Engine's cast_master_weights_to_fp8"}

// Source is where a framework's code states one limit of what it runs.
type Source struct {
	// Limit names the Runs field (and the value) the source states, Repo the
	// repository (owner/name), File the file(s) in it, Commit the commit or
	// release read; Note says what the code does.
	Limit, Repo, File, Commit, Note string
}

// Limited tells whether the framework runs fewer layouts than the step model prices.
func (r Runs) Limited() bool {
	return len(r.Schedules) > 0 || len(r.ZeRO) > 0 || len(r.ZeROWithPipeline) > 0 || len(r.Recompute) > 0 ||
		r.EvenLayerSplit || r.NoPipeline || r.NoSequenceParallel || r.NoContextParallel || r.NoTPOverlap || r.NoEPOverlap ||
		r.NoMLATPOverlap || r.NoMLAContextParallel || r.NoSlidingWindowRingCP || r.NoGradAccumulation || r.DDPAlone || r.ExpertTPIsTP || r.FP8ParamsSharded
}

// TPOverlapRuns tells whether the framework overlaps TP communication with the
// GEMMs of a model, mla telling whether it has multi-head latent attention.
func (r Runs) TPOverlapRuns(mla bool) bool {
	return !r.NoTPOverlap && !(mla && r.NoMLATPOverlap)
}

// ZeROAllowed tells whether the framework runs ZeRO stage z with (pipeline) or
// without a pipeline.
func (r Runs) ZeROAllowed(z int, pipeline bool) bool {
	list := r.ZeRO
	if pipeline && len(r.ZeROWithPipeline) > 0 {
		list = r.ZeROWithPipeline
	}
	return len(list) == 0 || slices.Contains(list, z)
}

// Or joins a list of names for an error message: "a, b or c".
func Or[T any](vs []T) Choices {
	out := make(Choices, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// Choices is a list of names an error message offers, written "a, b or c". It
// keeps the values themselves, for a transport to spell them its way
// (invalid.Error.Respell).
type Choices []any

func (c Choices) String() string {
	s := make([]string, len(c))
	for i, v := range c {
		s[i] = fmt.Sprint(v)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// Peak memory of the loss, bytes per logit (one vocabulary entry of one token):
//   - Megatron's vocab-parallel cross entropy keeps the 16-bit logits and the fp32
//     softmax it computes in place for the backward pass: 2 + 4.
//   - PyTorch's cross_entropy on fp32 logits (torchtitan upcasts them; autocast runs
//     log_softmax in fp32 for Composer and FSDP models) saves the fp32 log-softmax,
//     and its backward holds that, the gradient of the loss w.r.t. it and the
//     gradient of the logits at once: 3 × 4 (the 16-bit logits are freed before the
//     backward pass, torchtitan's `del pred`).
//   - flash-attn's fused cross entropy (llm-foundry's default loss_fn
//     "fused_crossentropy") takes the 16-bit logits and computes the softmax in
//     registers, keeping only each token's log-sum-exp; its backward writes a
//     16-bit gradient of the logits: 2 + 2.
//   - PyTorch's loss_parallel on DTensor logits sharded over the vocabulary
//     (torchtitan with tensor parallelism) runs log_softmax as its decomposition
//     (torch/distributed/tensor/parallel/loss.py, _log_softmax): on the fp32 logits
//     it allocates the shifted logits, their exponential and the result in turn,
//     with the 16-bit logits still held (torchtitan deletes them only after the
//     loss): 2 + 4 + 4 + 4 at the forward's peak, more than the backward's 3 × 4.
//   - torchtitan's loss compiled (CompiledLossBytesPerLogit): from pytorch/torchtitan
//     bbb1b616e (PR #1033, 2025-04-02) build_cross_entropy_loss wraps the same
//     cross_entropy(pred.float(), labels) in torch.compile whenever the model is
//     compiled (torchtitan/components/loss.py, the same at 820504e; from 08b8b244f,
//     2025-08-20, compile.components lists "loss" beside "model" by default).
//     Inductor fuses the upcast, the log-softmax and the loss into row reductions
//     and AOTAutograd's partitioner saves the 16-bit logits and each token's
//     log-sum-exp rather than an fp32 copy (the pointwise rest is recomputed in the
//     backward's one fused kernel, which writes the 16-bit gradient of the logits):
//     2 + 2, as flash-attn's fused loss. loss_parallel's decomposition (above) is
//     traced into the same graph, its all-reduces of the row maximum and sum
//     between the reductions, so it fuses alike. torchao's float8 README measured
//     Llama 3 8B on 8 GPUs (batch 1 × 8192, compile, FSDP2, per-op SAC, bf16) at
//     47.65 with torchtitan 0.0.2 (loss eager; torch 2.7.0a0, PR #1793, 2025-03) and
//     39.09 with torchtitan 2c8b594 (loss compiled; 2025-08, on MI300X): 8.6 less,
//     where 8 B per logit of 8192 × 128 256 logits is 8.4 GB (PR #996 measured
//     7 GiB saved by chunking the eager loss instead).
const (
	MegatronLossBytesPerLogit      = 6
	TorchLossBytesPerLogit         = 12
	FusedLossBytesPerLogit         = 4
	TorchLossParallelBytesPerLogit = 14
	CompiledLossBytesPerLogit      = 4
)

// deepspeedPipeline is what DeepSpeed's PipelineEngine runs: its one training
// schedule, TrainSchedule (1F1B), and ZeRO below stage 2 — deepspeed/runtime/pipe/
// engine.py asserts zero_optimization_stage() < ZeroStageEnum.gradients, "ZeRO-2 and
// ZeRO-3 are incompatible with pipeline parallelism" (DeepSpeed edaa722, 2026;
// schedule.py has TrainSchedule, InferenceSchedule and DataParallelSchedule).
var deepspeedPipeline = Runs{Schedules: []string{"1f1b"}, ZeROWithPipeline: []int{0, 1}, Sources: deepspeedPipelineSources}

var deepspeedPipelineSources = []Source{
	{Limit: "Schedules: 1f1b", Repo: "deepspeedai/DeepSpeed", File: "deepspeed/runtime/pipe/schedule.py", Commit: "edaa722",
		Note: "TrainSchedule (1F1B) is its one training schedule, beside InferenceSchedule and DataParallelSchedule"},
	{Limit: "ZeROWithPipeline: 0, 1", Repo: "deepspeedai/DeepSpeed", File: "deepspeed/runtime/pipe/engine.py", Commit: "edaa722",
		Note: "PipelineEngine asserts zero_optimization_stage() < ZeroStageEnum.gradients: \"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\""},
}

// mcore012 is what Megatron-Core 0.7–0.12 (2024 to spring 2025, the NeMo 24.05–25.04
// containers) runs, as NeMo's recipes and the MLPerf implementation train with it:
// its 1F1B and interleaved pipeline schedules, the distributed optimizer (ZeRO-1)
// or plain DDP, and no overlap of the MoE all-to-alls.
var mcore012 = Runs{Schedules: []string{"1f1b", "interleaved"}, ZeRO: []int{0, 1}, NoEPOverlap: true, FP8ParamsSharded: true,
	NoMLATPOverlap: true,
	Sources: []Source{
		fp8ParamsShardedSource,
		mlaTPOverlapSource,
		{Limit: "Schedules: 1f1b, interleaved", Repo: "NVIDIA/Megatron-LM", File: "megatron/core/pipeline_parallel/schedules.py",
			Commit: "core_r0.12.0", Note: "get_forward_backward_func returns forward_backward_no_pipelining, " +
				"forward_backward_pipelining_without_interleaving or _with_interleaving"},
		{Limit: "ZeRO: 0, 1", Repo: "NVIDIA/NeMo", File: "nemo/collections/llm/recipes/*.py (MegatronStrategy, MegatronOptimizerModule)",
			Commit: "v2.3.0 (NeMo 25.04)", Note: "the recipes train with Megatron-Core's distributed optimizer " +
				"(use_distributed_optimizer=True: optimizer states sharded, ZeRO-1) or DDP"},
		{Limit: "NoEPOverlap", Repo: "NVIDIA/Megatron-LM", File: "megatron/core/transformer/transformer_config.py",
			Commit: "core_r0.12.0", Note: "no overlap_moe_expert_parallel_comm: the EP all-to-all overlap came with Megatron-Core 0.14"},
	}}

// torchtitan2024 is what torchtitan runs at its December 2024 benchmarks' commit
// (9dec370, 2024-12-26; benchmarks/llama3_h100_202412_torchtitan.md).
var torchtitan2024 = Runs{Schedules: []string{"gpipe", "1f1b", "interleaved"}, ZeRO: []int{0, 3}, ZeROWithPipeline: []int{0, 1},
	Recompute: torchtitanRecompute, NoEPOverlap: true, NoGradAccumulation: true, DDPAlone: true,
	Sources: []Source{
		{Limit: "Recompute: none, ops, full", Repo: "pytorch/torchtitan", File: "torchtitan/config_manager.py, torchtitan/parallelisms/parallelize_llama.py",
			Commit: "9dec370", Note: torchtitanRecomputeNote},
		{Limit: "NoGradAccumulation", Repo: "pytorch/torchtitan", File: "train.py", Commit: "9dec370",
			Note: "one model(input_ids) / loss.backward() a step on the local batch (training.batch_size) without a pipeline, " +
				"one pp_schedule.step() with one; gradient accumulation came with #1238 (8570415, 2025-06-05)"},
		{Limit: "pipeline micro-batches", Repo: "pytorch/torchtitan", File: "torchtitan/parallelisms/pipelining_utils.py, torchtitan/config_manager.py",
			Commit: "9dec370", Note: "the schedule splits the local batch into experimental.pipeline_parallel_microbatches, " +
				"by default the pipeline degree; the batch must divide evenly"},
		{Limit: "ZeRO: 0, 3", Repo: "pytorch/torchtitan", File: "torchtitan/parallelisms/parallelize_llama.py", Commit: "9dec370",
			Note: "data parallelism is DDP (apply_ddp) or FSDP2 resharding after the forward pass (apply_fsdp: every block but " +
				"the last, which the backward pass gathers first); resharding became configurable with #822 (February 2025)"},
		{Limit: "DDPAlone", Repo: "pytorch/torchtitan", File: "torchtitan/parallelisms/parallelize_llama.py", Commit: "9dec370",
			Note: "apply_ddp raises \"DDP has not supported > 1D parallelism\" when the world mesh has more than one dimension"},
		{Limit: "ZeROWithPipeline: 0, 1", Repo: "pytorch/torchtitan, pytorch/pytorch",
			File: "torchtitan/parallelisms/parallelize_llama.py; torch/distributed/pipelining/stage.py", Commit: "9dec370; torch nightly 2024-12-23 (1963fc8)",
			Note: "apply_fsdp sets reshard_after_forward=False on every block when pp_enabled, and the pipeline stage's " +
				"backward_maybe_with_nosync sets reshard_after_backward and requires_gradient_sync False for every micro-batch " +
				"but the last: the 16-bit weights are gathered once and the gradients kept whole and reduce-scattered once a step, " +
				"the fp32 weights and optimizer states sharded (ZeRO-1); ZeRO 0: no data parallelism beside the pipeline (DDPAlone)"},
		{Limit: "Schedules: gpipe, 1f1b, interleaved", Repo: "pytorch/torchtitan", File: "torchtitan/parallelisms/pipelining_utils.py",
			Commit: "9dec370", Note: "get_schedule_class of torch.distributed.pipelining (torch 2024-12-23): GPipe, 1F1B, " +
				"Interleaved1F1B, looped BFS; ZBVZeroBubble came with PyTorch 2.7"},
		{Limit: "NoEPOverlap", Repo: "pytorch/torchtitan", File: "torchtitan/models", Commit: "9dec370",
			Note: "Llama models only: no MoE layers"},
	}}

// MLADownProj is the tensor-parallel form of MLA's down-projections (see
// Profile.MLADownProj).
type MLADownProj uint8

const (
	// MLADownProjReplicated: every TP rank runs both down-projections whole on the
	// whole (all-gathered) sequence, as the attention's other input projections
	// see it (torchtitan's DeepSeek-V3 plan: wq_a, wkv_a and the latent norms
	// NoParallel under the attention's all-gathered input).
	MLADownProjReplicated MLADownProj = iota
	// MLADownProjColumn: Megatron-Core 0.11–0.13 (megatron/core/models/gpt/
	// gpt_layer_specs.py at core_r0.12.0 7094270: linear_q_down_proj and
	// linear_kv_down_proj TEColumnParallelLinear, from ADLR/megatron-lm!2710,
	// 1c425a8): each down-projection is column-parallel, so it all-gathers the
	// sequence-parallel input itself and computes 1/TP of the latent on the
	// whole sequence; multi_latent_attention.py then gathers the latent over TP
	// (gather_from_tensor_model_parallel_region) and scatters it back to the
	// sequence-parallel share (scatter_to_sequence_parallel_region), and the
	// column-parallel up-projections all-gather it again.
	MLADownProjColumn
	// MLADownProjDuplicated: Megatron-Core 0.14 on (ADLR/megatron-lm!3576,
	// 720c8b4, "MLA down proj switch back to TELinear"; 20d73fe): the
	// down-projections are TELinear with parallel_mode "duplicated", the weight
	// whole on every TP rank, run on the rank's own input — its sequence-parallel
	// share with sequence parallelism, the whole sequence without —; the
	// up-projections all-gather the latents and gather_from_sequence_parallel_region
	// the rotary key.
	MLADownProjDuplicated
)

// nemoProfile is NeMo's (and Megatron-Bridge's) profile on Megatron-Core of 2025–2026.
var nemoProfile = Profile{
	Name:    "nemo",
	Aliases: []string{"nemo-megatron", "nvidia-nemo"},
	Description: "NVIDIA NeMo on Megatron-Core: the same kernels, overlaps and pipeline engine as megatron-core " +
		"(NeMo's recipes turn the overlaps on)",
	Source:               "NeMo framework performance guide (communication overlap settings of the Megatron-Core strategy)",
	TPPipelinedRSFP8:     true,
	TPUserbuffers:        true,
	Queues:               QueuesBridgePerfEnv,
	HopperFusedAttention: true,
	NormEmitsFP8:         true,
	FP8TransposeFree:     true,
	FP8Params:            true,
	ActivationOffload:    true,
	// Megatron-Bridge's performance recipes turn the router fusion on
	// (scripts/performance configs for DeepSeek-V3 at d7dfa76:
	// moe_router_fusion, with moe_permute_fusion and apply_rope_fusion).
	MoERouterFusion:     true,
	MLADownProj:         MLADownProjDuplicated,
	TELayers:            true,
	PipelineSendOverlap: true,
	GLUClampUnfused:     true,
	ExpertBiasUnfused:   true, // not on nemo-25.04: no expert biases before Megatron-Core a329dd6
	MegatronDDPBuckets:  true,
	// NeMo's pipelines are Megatron-Core's: forward_backward_pipelining_
	// without_interleaving and _with_interleaving (megatron/core/
	// pipeline_parallel/schedules.py, get_forward_backward_func); no
	// zero-bubble or DualPipe schedule.
	Runs: Runs{Schedules: []string{"1f1b", "interleaved"}, FP8ParamsSharded: true, NoMLATPOverlap: true, NoSlidingWindowRingCP: true, Sources: []Source{
		fp8ParamsShardedSource,
		mlaTPOverlapSource,
		slidingWindowCPSource,
		{Limit: "Schedules: 1f1b, interleaved", Repo: "NVIDIA/Megatron-LM", File: "megatron/core/pipeline_parallel/schedules.py",
			Commit: "2436e3d (Megatron-Core of 2026, MLPerf Training v6.0)", Note: "get_forward_backward_func returns the " +
				"no-pipelining, 1F1B (forward_backward_pipelining_without_interleaving) or interleaved schedule; no zero-bubble or DualPipe schedule"},
	}},
}

// nemoTEOpsProfile is nemo with the routed experts run through Transformer Engine's
// op fuser (Megatron-Core's use_transformer_engine_op_fuser: TEGroupedMLP hands
// fc1, the activation and fc2 to te.ops as GroupedLinear, ScaledClampedQGeGLU and
// GroupedLinear with scale_bias, megatron/core/transformer/moe/experts.py
// _make_fused_ops at d98e8a6, merged to main in 6815c0f, 2026-05-15). The clamp of a
// clamped gated MLP is the activation op's own (limit = the clamp) and the second
// GEMM's bias, scaled by the router's probabilities, is GroupedLinear's (Transformer
// Engine 0be9046 "Bias/Dbias Support for GroupedLinear" and 580e7aa "Bias Prob
// Scaling for GroupedLinear and Fused MOE Layers", April 2026); on compute
// capability 10.x under MXFP8 with NVTE_CUTEDSL_FUSED_GROUPED_MLP the fuser runs the
// three as one fused grouped MLP, the activation in the first GEMM's epilogue
// (transformer_engine/pytorch/ops/fused/grouped_mlp.py at d0067d0). Neither the
// unfused clamp (GLUClampUnfused) nor Megatron-Core's per-expert _apply_bias
// (ExpertBiasUnfused) runs. MLPerf Training v6.0's gpt-oss-20b on Blackwell sets it
// (USE_TE_OPS=True with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 in the configs; the logs
// print use_transformer_engine_op_fuser and name the CuTe DSL GroupedGemmGluSm100
// kernels).
func nemoTEOpsProfile() Profile {
	return nemoProfile.as("nemo-te-ops",
		"NVIDIA NeMo / Megatron-Bridge on Megatron-Core with the routed experts in Transformer Engine's op fuser "+
			"(use_transformer_engine_op_fuser): as nemo, a clamped gated MLP's clamp and the experts' biases inside Transformer Engine's grouped MLP",
		"Megatron-LM megatron/core/transformer/moe/experts.py (_is_fused_impl_supported, _make_fused_ops) at d98e8a6; "+
			"Transformer Engine transformer_engine/pytorch/ops/fused/grouped_mlp.py at d0067d0",
		func(p *Profile) {
			p.GLUClampUnfused = false
			p.ExpertBiasUnfused = false
		})
}

// nemo24Profile is NeMo of 24.05–25.04 on Megatron-Core 0.7–0.12; nemo-24.12 is it
// with what NeMo 24.12 (Megatron-Core 0.10) did otherwise.
var nemo24Profile = Profile{
	Name:    "nemo-24",
	Aliases: []string{"nemo-24.05", "nemo-24.09", "nemo-25.01"},
	Description: "NVIDIA NeMo 24.05–25.04 containers (Megatron-Core 0.7–0.12) with the run's own precision settings " +
		"(NeMo 1 models, the MLPerf implementation): nemo's kernels and overlaps, Megatron-Core 0.12's pipelines, " +
		"the distributed optimizer, no MoE all-to-all overlap",
	Source:               "NeMo 24.05–25.04 containers; Megatron-Core core_r0.7.0–core_r0.12.0 (the Runs sources)",
	HopperFusedAttention: true,
	NormEmitsFP8:         true,
	FP8Params:            true,
	MLADownProj:          MLADownProjColumn,
	TELayers:             true,
	PipelineSendOverlap:  true,
	MegatronDDPBuckets:   true,
	// No ActivationOffload: Megatron-Core's fine-grained activation offloading is of 2026.
	Queues: QueuesOne,
	Runs:   mcore012,
}

// Default is the profile of a request that names no framework.
const Default = "megatron-core"

var profiles = []Profile{
	{
		Name:    "megatron-core",
		Aliases: []string{"megatron", "mcore", "megatron-lm"},
		Description: "Megatron-LM with Megatron-Core (2023 on): flash attention (Transformer Engine), distributed optimizer, " +
			"gradient reduce-scatter overlapped with the backward pass in buckets, zig-zag load-balanced context parallelism",
		Source: "Megatron-Core docs (distributed optimizer, --overlap-grad-reduce, context parallelism, fine-grained activation offloading); " +
			"Transformer Engine docs (DotProductAttention backends: cuDNN FusedAttention on Hopper; fp8_model_init); " +
			"Megatron-LM megatron/training/arguments.py and training.py at d98e8a6 (fp32 gradients under --bf16)",
		TPUserbuffers:        true,
		HopperFusedAttention: true,
		NormEmitsFP8:         true,
		FP8TransposeFree:     true,
		FP8Params:            true,
		ActivationOffload:    true,
		MLADownProj:          MLADownProjDuplicated,
		TELayers:             true,
		PipelineSendOverlap:  true,
		GLUClampUnfused:      true,
		ExpertBiasUnfused:    true,
		MegatronDDPBuckets:   true,
		// Under --bf16 (and fp8 with it) Megatron-LM accumulates and reduces the
		// gradients in fp32 unless --grad-reduce-in-bf16 is passed
		// (megatronGradReduceBytes).
		GradReduceBytes:    megatronGradReduceBytes,
		GradReduceBF16Only: true,
		// Megatron-Core's pipelines: 1F1B and interleaved only (mcoreSchedulesSource);
		// the zero-bubble schedules are sail-sg's fork, DualPipe is HAI-LLM's.
		Queues: QueuesMegatronLM,
		Runs: Runs{Schedules: []string{"1f1b", "interleaved"}, FP8ParamsSharded: true, NoMLATPOverlap: true, NoSlidingWindowRingCP: true,
			Sources: []Source{fp8ParamsShardedSource, mlaTPOverlapSource, slidingWindowCPSource, mcoreSchedulesSource}},
	},
	{
		Name:    "megatron-core-0.12",
		Aliases: []string{"megatron-core-0.8", "megatron-core-0.9", "mcore-0.12"},
		Description: "Megatron-LM with Megatron-Core 0.7–0.12 (2024 to spring 2025): megatron-core's kernels and overlaps, " +
			"its 1F1B and interleaved pipelines, the distributed optimizer, no MoE all-to-all overlap",
		Source:               "Megatron-Core core_r0.7.0–core_r0.12.0 (the Runs sources; fp32 gradients under --bf16: megatron/training/arguments.py)",
		HopperFusedAttention: true,
		NormEmitsFP8:         true,
		FP8Params:            true,
		MLADownProj:          MLADownProjColumn,
		TELayers:             true,
		PipelineSendOverlap:  true,
		MegatronDDPBuckets:   true,
		MoERouterFP32Linear:  true,
		// fp32 gradients under bf16 since 2021 (megatronGradReduceBytes): at
		// core_r0.7.0 unconditionally, --grad-reduce-in-bf16 the opt-out from
		// d165a85 (2025-02-26, in core_r0.12.0) on.
		GradReduceBytes:    megatronGradReduceBytes,
		GradReduceBF16Only: true,
		Queues:             QueuesMegatronLM012,
		Runs:               mcore012,
	},
	nemoProfile,
	nemoTEOpsProfile(),
	nemo24Profile,
	nemo24Profile.as("nemo-24.12",
		"NVIDIA NeMo 24.12 (NeMo 2.1, Megatron-Core 0.10): as nemo-24, an MoE layer's experts split "+
			"over the tensor-parallel ranks like the dense MLP, and its dispatcher's permutation synchronising with the host "+
			"even with the experts padded to capacity",
		"NeMo 24.12 container (NeMo v2.1.0); Megatron-Core core_r0.10.0 moe_utils.py (permute's masked_select); the Runs sources",
		func(p *Profile) {
			p.Aliases = []string{"nemo-2.1"}
			// Megatron-Core 0.10's permutation syncs with the host whether or not the
			// experts are padded (before Megatron-LM f27a04f, core_v0.11.0).
			p.MoEPaddedPermuteSync = true
			p.Queues = QueuesNeMoPerfEnv
			p.Runs = mcore012
			p.Runs.ExpertTPIsTP = true
			p.Runs.Sources = append(slices.Clone(mcore012.Sources), Source{Limit: "ExpertTPIsTP", Repo: "NVIDIA/NeMo",
				File: "nemo/collections/nlp/models/language_modeling/megatron_base_model.py, nemo/lightning/megatron_init.py " +
					"(initialize_model_parallel_for_nemo), nemo/lightning/pytorch/strategies/megatron_strategy.py",
				Commit: "v2.1.0 (NeMo 24.12)", Note: "neither the NeMo 1 models nor the NeMo 2 strategy pass an expert " +
					"tensor-parallel size, so Megatron-Core's initialize_model_parallel takes TP's (NeMo 2.2 passes it)"})
		}),
	{
		Name:    "nemo-25.04",
		Aliases: []string{"nemo-2.3"},
		Description: "NVIDIA NeMo 25.04 (NeMo 2.3, on a Transformer Engine before 2.5): as nemo, gradients accumulated " +
			"and reduced in fp32 (its bf16 mixed-precision recipe), and on Blackwell " +
			"attention heads wider than 128 (MLA's 192-wide queries and keys) run unfused",
		Source: "NeMo 25.04 containers (NeMo v2.3.x), recipes/precision/mixed_precision.py (grad_reduce_in_fp32=True); Transformer Engine v2.2–v2.4 " +
			"common/fused_attn/fused_attn.cpp (cuDNN F16_arbitrary_seqlen on sm100 only for head_dim_qk, head_dim_v <= 128) " +
			"and pytorch/dot_product_attention/utils.py (flash-attn off for head_dim_qk != head_dim_v)",
		TPPipelinedRSFP8:     true,
		TPUserbuffers:        true,
		HopperFusedAttention: true,
		NormEmitsFP8:         true,
		FP8TransposeFree:     true,
		// NeMo 2.x's precision recipes (nemo/collections/llm/recipes/precision/
		// mixed_precision.py: bf16_mixed, and bf16_with_fp8_mixed built on it) set
		// grad_reduce_in_fp32=True: Megatron-Core's DDP keeps main_grad in fp32,
		// the weight-gradient GEMMs accumulate into it and data parallelism
		// reduces it in fp32. NeMo's performance scripts turn it off
		// (scripts/performance/utils.py and the recipes'
		// pretrain_performance_optimizations: grad_reduce_in_fp32 = False); the
		// published runs that used them say so per row (the accuracy rows'
		// grad_reduce_dtype), which a request gives as its optimizer's GradBytes.
		GradReduceBytes:       4,
		BlackwellFusedHeadDim: 128,
		// NeMo 25.04's DeepSeekConfig leaves apply_rope_fusion False
		// (collections/llm/gpt/model/deepseek.py at 7a8f1cc): MLA's YaRN rotary
		// embedding runs as PyTorch operators (rope_utils._apply_rotary_pos_emb_bshd).
		// Megatron-Core 0.12 has no --moe-router-fusion.
		MLARoPEUnfused: true,
		// The NeMo 25.04 containers' Transformer Engine (2.2–2.4) is before TE PR
		// #1927: its fused permutation loops over every expert per token.
		MoEPermuteExpertLoop: true,
		MLADownProj:          MLADownProjColumn,
		TELayers:             true,
		PipelineSendOverlap:  true,
		GLUClampUnfused:      true,
		MegatronDDPBuckets:   true,
		FP8Params:            true,
		// Megatron-Core 0.12's router casts to fp32 and calls F.linear.
		MoERouterFP32Linear: true,
		// NeMo 2.3's loss reduction syncs with the host once a micro-batch.
		LossReductionHostSync: true,
		// Megatron-Core 0.12's TEGroupedMLP copies its tokens into and out of
		// Transformer Engine v2.2's Fp8Padding / Fp8Unpadding under fp8.
		FP8GroupedExpertPadding: true,
		// No ActivationOffload: Megatron-Core's fine-grained activation offloading is of 2026.
		// NeMo 25.04 (Megatron-Core 0.12): the 1F1B and interleaved schedules
		// (schedules.py get_forward_backward_func), the distributed optimizer
		// (ZeRO-1) in its recipes, TP overlap (Transformer Engine userbuffers),
		// context parallelism (but not for latent attention under its Transformer
		// Engine, 2.2–2.4: NoMLAContextParallel); the MoE all-to-all overlap
		// (overlap_moe_expert_parallel_comm) came in Megatron-Core 0.14.
		Queues: QueuesNeMoPerfEnv,
		Runs: func() Runs {
			r := mcore012
			r.NoMLAContextParallel = true
			// Transformer Engine 2.2–2.4 assert it (v2.2 and v2.4 read).
			r.NoSlidingWindowRingCP = true
			r.Sources = append(slices.Clone(r.Sources), mlaContextParallelSource, slidingWindowCPSource)
			return r
		}(),
	},
	{
		Name:    "megatron-lm-2021",
		Aliases: []string{"megatron-2021"},
		Description: "Megatron-LM as of Narayanan et al. (SC'21): attention as separate batched GEMMs and a fused softmax, " +
			"scores materialised",
		Source: "Narayanan et al. 2021, §3–5 (§4.1 scatter/gather); Megatron-LM v2 (2021) fused_softmax kernels, p2p_communication.py scatter_gather_tensors_in_pipeline; " +
			"Megatron-LM 42c1cf4 (May 2021) megatron/optimizer/optimizer.py (fp32 gradient copies kept between steps until 4fd6432, July 2021)",
		UnfusedAttention:      true,
		PipelineScatterGather: true,
		HeldFP32GradCopies:    true,
		// Megatron-LM of April 2021 (42c1cf4): megatron/schedules.py has the 1F1B
		// schedule with and without interleaving only; the distributed optimizer
		// (--use-distributed-optimizer), sequence parallelism and selective
		// recomputation (--recompute-activations) came in 2022 (Korthikanti et
		// al.), context parallelism and TP overlap (Transformer Engine
		// userbuffers) in 2023, and it has no MoE layers.
		Runs: Runs{Schedules: []string{"1f1b", "interleaved"}, ZeRO: []int{0}, Recompute: []string{"none", "full"},
			EvenLayerSplit: true, NoSequenceParallel: true, NoContextParallel: true, NoTPOverlap: true, NoEPOverlap: true,
			Sources: []Source{
				{Limit: "Schedules: 1f1b, interleaved", Repo: "NVIDIA/Megatron-LM", File: "megatron/schedules.py", Commit: "42c1cf4",
					Note: "forward_backward_pipelining_without_interleaving and _with_interleaving only"},
				{Limit: "EvenLayerSplit", Repo: "NVIDIA/Megatron-LM", File: "megatron/model/transformer.py, megatron/arguments.py", Commit: "42c1cf4",
					Note: "asserts num_layers % pipeline_model_parallel_size == 0, the same layers per (virtual) stage; " +
						"--num-layers-per-virtual-pipeline-stage only with a pipeline over 2 stages"},
				{Limit: "ZeRO: 0; Recompute: none, full; NoSequenceParallel; NoContextParallel; NoTPOverlap; NoEPOverlap",
					Repo: "NVIDIA/Megatron-LM", File: "megatron/arguments.py", Commit: "42c1cf4",
					Note: "no --use-distributed-optimizer, --sequence-parallel, selective recomputation, context parallelism, " +
						"TP overlap or MoE layers (they came in 2022–2023); --checkpoint-activations recomputes whole layers"},
			}},
	},
	{
		Name:    "megatron-deepspeed",
		Aliases: []string{"megatron-ds"},
		Description: "Megatron-DeepSpeed: Megatron-LM's layers on DeepSpeed's engine (ZeRO-1 optimizer sharding, " +
			"DeepSpeed pipeline engine); attention unfused unless flash attention is switched on",
		Source:                "microsoft/Megatron-DeepSpeed README and examples (--use-flash-attn is opt-in); DeepSpeed PipelineEngine (ReduceGrads after the schedule's last backward), ZeRO config (overlap_comm default false)",
		UnfusedAttention:      true,
		DPReduceAfterBackward: true,
		SequentialExpertGEMMs: true, // DeepSpeed-MoE loops over its local experts
		Runs:                  deepspeedPipeline,
	},
	{
		Name:    "deepspeed",
		Aliases: []string{"deepspeed-zero"},
		Description: "DeepSpeed ZeRO 1/2/3 with flat, prefetched ZeRO-3 parameter gathers " +
			"(stage3_prefetch_bucket_size) and fused kernels",
		Source:                "DeepSpeed ZeRO configuration docs (stage3_prefetch_bucket_size; overlap_comm, default false for stages 1 and 2)",
		BackwardPrefetch:      "pre",
		DPReduceAfterBackward: true,
		SequentialExpertGEMMs: true,                   // DeepSpeed-MoE loops over its local experts
		LossBytesPerLogit:     TorchLossBytesPerLogit, // models trained with it compute their loss in PyTorch
		Runs:                  deepspeedPipeline,
	},
	{
		Name:    "deepspeed-2021",
		Aliases: []string{"deepspeed-zero3-2021"},
		Description: "DeepSpeed ZeRO-3 as measured in 2021: each module gathers its weights on demand with " +
			"torch.distributed.all_gather into one tensor per rank; attention unfused",
		Source:                "Rajbhandari et al. 2021 (ZeRO-Infinity) and DeepSpeed 0.3–0.5 stage3.py; DeepSpeed v0.3.14 pipe/engine.py and zero/stage1.py; Narayanan et al. 2021 Table 2",
		UnfusedAttention:      true,
		ZeRO3OnDemand:         true,
		DPReduceAfterBackward: true,
		SequentialExpertGEMMs: true, // DeepSpeed-MoE loops over its local experts
		// The runs this profile stands for could only have used DeepSpeed v0.3.14
		// (2021-04-08) or the master of that week: the on-demand gathers priced
		// (ZeRO3OnDemand, nothing prefetched) start with v0.3.14's reset_step hook,
		// and Narayanan et al.'s first version is of 2021-04-09. Its pipeline engine
		// and its stage-1 optimizer are v0.3.14's.
		PipelineGradAllReduce: true,
		FP16GradCheckBytes:    FP16GradCheckBytesDeepSpeed03,
		// Megatron-LM with DeepSpeed of 2021: ZeRO 0–3 without a pipeline;
		// DeepSpeed's PipelineEngine runs its 1F1B TrainSchedule and asserts that
		// ZeRO-2 and ZeRO-3 are not used with pipeline parallelism
		// (deepspeed/runtime/pipe/engine.py); Megatron's tensor parallelism of
		// then, without sequence parallelism or TP overlap; full recomputation
		// (deepspeed.checkpointing) only; no context parallelism.
		Runs: Runs{Schedules: []string{"1f1b"}, ZeROWithPipeline: []int{0, 1}, Recompute: []string{"none", "full"},
			NoSequenceParallel: true, NoContextParallel: true, NoTPOverlap: true,
			Sources: append(slices.Clone(deepspeedPipelineSources), Source{
				Limit: "Recompute: none, full; NoSequenceParallel; NoContextParallel; NoTPOverlap", Repo: "NVIDIA/Megatron-LM",
				File: "megatron/arguments.py (with deepspeed.checkpointing)", Commit: "42c1cf4",
				Note: "Megatron's tensor parallelism of 2021, without sequence parallelism, context parallelism or TP overlap; " +
					"whole-layer activation checkpointing only"})},
	},
	{
		Name:    "fsdp",
		Aliases: []string{"pytorch-fsdp", "fsdp1"},
		Description: "PyTorch FSDP (FullyShardedDataParallel): flat parameters, backward prefetch BACKWARD_PRE " +
			"(its default), flash attention through scaled_dot_product_attention",
		Source:            "PyTorch FSDP documentation (BackwardPrefetch default BACKWARD_PRE)",
		BackwardPrefetch:  "pre",
		LossBytesPerLogit: TorchLossBytesPerLogit,
	},
	torchtitanProfile,
	torchtitan2024Profile,
	torchtitan2024Profile.as("torchtitan-2024-04",
		"torchtitan of April 2024: FSDP2 alone or with tensor parallelism, no pipeline (its parallelize_llama refuses one), "+
			"no context parallelism or async TP, no gradient accumulation",
		"pytorch/torchtitan 258f608 (2024-04-30) train.py, torchtitan/parallelisms (the Runs sources)",
		func(p *Profile) {
			p.Aliases = []string{"torchtitan-258f608"}
			// No context parallelism at 258f608 (Runs: NoContextParallel), so no
			// ring attention.
			p.TorchRingAttention = false
			// The torch nightlies of April 2024 ran the reduce-scatter copy-in on the
			// reduce-scatter stream (before PR #129721, 2024-06-27).
			p.FSDP2CopyInOwnStream = true
			p.Runs = Runs{ZeRO: []int{3}, Recompute: torchtitanRecompute, NoPipeline: true, NoContextParallel: true, NoTPOverlap: true, NoEPOverlap: true,
				NoGradAccumulation: true,
				Sources: []Source{
					{Limit: "Recompute: none, ops, full", Repo: "pytorch/torchtitan", File: "torchtitan/config_manager.py, torchtitan/parallelisms/parallelize_llama.py",
						Commit: "258f608", Note: "activation_checkpoint.mode none, full or selective; selective is selective_ac_option " +
							"\"op\" (op-level, the policy's _save_list) or every n-th block checkpointed whole (checkpoint_wrapper)"},
					{Limit: "NoPipeline", Repo: "pytorch/torchtitan", File: "torchtitan/parallelisms/parallelize_llama.py", Commit: "258f608",
						Note: "parallelize_llama raises NotImplementedError when the pipeline-parallel degree is above 1"},
					{Limit: "ZeRO: 3", Repo: "pytorch/torchtitan", File: "torchtitan/parallelisms/parallelize_llama.py", Commit: "258f608",
						Note: "data parallelism is FSDP2's fully_shard, resharding after the forward pass (all blocks but the last)"},
					{Limit: "NoContextParallel, NoTPOverlap", Repo: "pytorch/torchtitan", File: "torchtitan/parallelisms/__init__.py (ParallelDims: dp, tp, pp)",
						Commit: "258f608", Note: "no context-parallel dimension; TP through parallelize_module without async TP"},
					{Limit: "NoGradAccumulation", Repo: "pytorch/torchtitan", File: "train.py", Commit: "258f608",
						Note: "one forward and backward a step on the local batch"},
					{Limit: "NoEPOverlap", Repo: "pytorch/torchtitan", File: "torchtitan/models", Commit: "258f608", Note: "Llama models only: no MoE layers"},
				}}
		}),
	torchtitanProfile.as("torchtitan-0.1",
		"torchtitan of mid-2025 (v0.1.0, 2025-06-17, through 2025-10-09): as torchtitan, and on Blackwell "+
			"per-op selective checkpointing runs the attention (cuDNN's, first on sm100) again in the backward pass",
		"pytorch/torchtitan 3b85aa31f (PR #1196: cuDNN attention first on sm100) through 6a3a9da95 (v0.1.0 and 6fc499f checked): "+
			"models/attention.py ScaledDotProductAttention backends and models/llama3/infra/parallelize.py _save_list "+
			"(flash and efficient attention only; the cuDNN kernel added in b39377f9f, PR #2095, 2025-12-01)",
		func(p *Profile) {
			p.OpSACRecomputesBlackwellAttention = true
			// torchao's mx_formats README from 934d11ead (PR #1989, 2025-04-01) to
			// d20876810 (PR #3210, 2025-10-19), the torchao of torchao's B200 table
			// (0.13.0, torchtitan 6fc499f, whose mx.mxfp8_dim1_cast_kernel_choice
			// defaults to "triton"): "On NVIDIA B200 machines, our to_mx kernels for
			// mxfp8 achieve up to 5.5 TB/s for the dim0 cast (with torch.compile), and
			// up to 3.9 TB/s for the dim1 cast (with a triton kernel)" — at 16384 ×
			// 16384, their best shape: 0.69 and 0.49 of the B200's 8 TB/s.
			p.BlackwellMXCastHBM = [2]float64{5.5 / 8, 3.9 / 8}
		}),
	torchtitanProfile.as("torchtitan-2025-11",
		"torchtitan of October–November 2025 on torch 2.10 nightlies with torchao 0.14–0.15: as torchtitan, "+
			"on Blackwell the routed experts' grouped GEMMs (torch._grouped_mm, torchao's MXFP8 torch._scaled_grouped_mm) at "+
			"the rate torchao measured them then, per-op selective checkpointing runs cuDNN's attention again in the backward pass, "+
			"and the MoE layer's own operators (MoE.forward, the expert-parallel hooks) run eagerly around its compiled submodules",
		"pytorch/ao torchao/prototype/moe_training/README.md (ff163084e, 2025-10-14: torch 2.10.0a0+gitf6de195, torchao "+
			"0.14.0+gitc7b8e13da; c7d0b5814, kernel breakdown of 2025-11-26) for the grouped GEMMs; pytorch/torchtitan 6a3a9da95 "+
			"(2025-10-09, cuDNN attention first) to b39377f9f (2025-12-01, the op save list takes it) for the recomputation; "+
			"pytorch/torchtitan 35bffe989 (2025-11-07) models/llama4/infra/parallelize.py apply_compile for the eager MoE operators",
		func(p *Profile) {
			// From 6a3a9da95 cuDNN's attention came first on every GPU while the save
			// list named only the flash and efficient kernels: the recomputation ran on
			// Hopper too, which this Blackwell-only flag does not price there.
			p.OpSACRecomputesBlackwellAttention = true
			// torchao's MoE training README, Llama 4 Scout's expert shapes (K 5120,
			// N 8192) on a B200: the autograd function's forward and backward of
			// torch._grouped_mm in bf16, three GEMMs of 2·M·N·K at M = 128 000 tokens over
			// 1, 2, 4 and 8 groups, took 43.14, 39.49, 39.19 and 37.70 ms (ff163084e):
			// 747–854 TFLOP/s, 0.33–0.38 of the B200's 2.25 PFLOP/s, 0.36 on average;
			// the kernel breakdown of 2025-11-26 (c7d0b5814, M = 131 072, 8 groups) draws
			// the bf16 GEMMs at about 12.4, 12.4 and 12.6 ms (0.39) and the MXFP8 ones at
			// about 6.2, 6.1 and 8.9 ms besides their casts: 1.56 PFLOP/s, 0.35 of the
			// 4.5 PFLOP/s fp8 peak. The model's GEMM efficiency prices the same work at
			// 0.60 (bf16) and 0.54 (fp8). By January 2026 (torch 2.11.0.dev20260101,
			// 95120b1f2's breakdown, at 1000 W) the same work ran at about 0.52 (bf16)
			// and 0.57 (MXFP8): the later profile (torchtitan) keeps the model's.
			p.BlackwellGroupedMMEfficiency = 0.36
			// torchao's mx_formats README from d20876810 (PR #3210, 2025-10-19) to
			// 4446ad91b (PR #3563, 2026-01-02): the dim0 cast under torch.compile "up to
			// 6.3 TB/s", the dim1 cast with the Triton kernel (torchtitan 35bffe989's
			// default) "up to 3.9 TB/s": 0.79 and 0.49 of the B200's 8 TB/s. From
			// 4446ad91b the README times a CUDA dim1 kernel at 5.4–5.7 TB/s and the
			// dim0 cast at 6.5 TB/s on a 1000 W B200 (0.68–0.81): the current
			// profile's. The nightlies of 2025-09-29 to 2025-10-15 ran the compiled
			// dim0 cast at 1.49–4.69 TB/s (pytorch/pytorch#164301: Inductor's div_rn
			// from #164144, put behind TORCHINDUCTOR_EMULATE_DIVISION_ROUNDING by
			// #165566); no published run is known to have run one, so no profile
			// prices them (docs/step-model.md, "The regressed nightlies").
			p.BlackwellMXCastHBM = [2]float64{6.3 / 8, 3.9 / 8}
			// MoE.forward and the expert-parallel hooks run eagerly around the
			// compiled submodules (apply_compile at 35bffe989).
			p.EagerMoEGlue = true
		}),
	{
		Name:    "hai-llm",
		Aliases: []string{"deepseek", "deepseek-v3"},
		Description: "DeepSeek's HAI-LLM as the DeepSeek-V3 report describes it: DualPipe, node-limited all-to-all " +
			"over IB then NVLink on 20 SMs with fp8 dispatch, fused permutation, fp8 activation caching",
		Source:         "DeepSeek-V3 technical report, arXiv:2412.19437, §3.2.1–3.2.2 (DualPipe, cross-node all-to-all, 20 SMs), §3.3 (fp8 training, low-precision storage and communication); deepseek-ai/DeepEP README",
		DedupDispatch:  true,
		FP8Dispatch:    true,
		FusedPermute:   true,
		CommSMs:        20,
		FP8Activations: true,
		FP8Recipe:      "blockwise", // §3.3.1: 1×128 activation tiles, 128×128 weight blocks
		// §3.2: DualPipe (and the 1F1B and ZB1P pipelines it is compared with),
		// ZeRO-1 data parallelism.
		Runs: Runs{Schedules: []string{"1f1b", "zb-h1", "dualpipe"}, ZeRO: []int{0, 1}, Sources: []Source{
			{Limit: "Schedules: 1f1b, zb-h1, dualpipe; ZeRO: 0, 1", Repo: "deepseek-ai/DeepSeek-V3", File: "DeepSeek_V3.pdf (arXiv:2412.19437) §3.2",
				Commit: "arXiv:2412.19437v1", Note: "DualPipe, compared with 1F1B and ZB1P; ZeRO-1 data parallelism"},
		}},
	},
	{
		Name:    "composer",
		Aliases: []string{"llm-foundry", "mosaic", "mosaicml"},
		Description: "MosaicML Composer / llm-foundry on PyTorch FSDP: backward prefetch BACKWARD_POST and mixed " +
			"precision DEFAULT (gradients reduced in fp32), Composer's FSDPConfig defaults, flash-attn's fused cross entropy",
		Source: "mosaicml/composer FSDPConfig (backward_prefetch BACKWARD_POST, mixed_precision DEFAULT); " +
			"mosaicml/llm-foundry ComposerMPTCausalLM (loss_fn default fused_crossentropy: flash_attn.losses.cross_entropy); " +
			"Composer v0.13.4 DecoupledAdamW.adamw (an unfused loop over the parameters)",
		BackwardPrefetch:     "post",
		GradReduceBytes:      4,
		LossBytesPerLogit:    FusedLossBytesPerLogit,
		OptimizerUpdateBytes: ComposerDecoupledAdamWBytes,
		// Without sharding Composer wraps the model in DistributedDataParallel
		// with PyTorch's defaults (prepare_ddp_module, composer/trainer/
		// dist_strategy.py: DistributedDataParallel(module,
		// find_unused_parameters=...), nothing else set).
		TorchDDP: []int{0},
		// Composer's FSDP (and lit-gpt's and flash-attention's training scripts,
		// which train with the same traits: Lightning's FSDPStrategy or DDP):
		// data parallelism with PyTorch FSDP's sharding strategies or DDP, no
		// pipeline or context parallelism, whole-block activation checkpointing.
		Runs: Runs{Recompute: []string{"none", "full"}, NoPipeline: true, NoContextParallel: true, Sources: []Source{
			{Limit: "Recompute: none, full; NoPipeline; NoContextParallel", Repo: "mosaicml/composer", File: "composer/trainer/trainer.py (FSDPConfig, activation_checkpointing)",
				Commit: "not pinned (Composer 0.1x, 2023)", Note: "data parallelism through PyTorch FSDP's sharding strategies or DDP; " +
					"activation checkpointing of whole blocks; no pipeline or context parallelism"},
		}},
	},
	{
		Name:    "lightning",
		Aliases: []string{"pytorch-lightning", "flash-attention-training"},
		Description: "PyTorch Lightning's DDP as flash-attention's training scripts run it: bf16 autocast over fp32 weights " +
			"(gradients reduced in fp32), Apex's fused cross entropy, Apex's FusedAdam",
		Source: "Dao-AILab/flash-attention training/ (4a6eaa9f, 2022-11-29): configs/trainer (Lightning DDP, precision bf16), " +
			"configs/optimizer/adamw-apex.yaml (apex.optimizers.FusedAdam), the GPT models' Apex CrossEntropyLoss",
		BackwardPrefetch:  "pre",
		GradReduceBytes:   4,
		LossBytesPerLogit: FusedLossBytesPerLogit,
		// Lightning's DDPStrategy builds DistributedDataParallel with PyTorch's
		// bucket defaults (training/configs/trainer/ddp.yaml: strategy ddp, no
		// bucket_cap_mb); DDPStrategyZero1 (training/src/utils/ddp_zero1.py)
		// subclasses it and shards the optimizer with ZeroRedundancyOptimizer.
		TorchDDP: []int{0, 1},
		// Lightning's DDP (and FSDPStrategy, PyTorch FSDP's sharding strategies):
		// data parallelism only, no pipeline or context parallelism, whole-block
		// activation checkpointing.
		Runs: Runs{Recompute: []string{"none", "full"}, NoPipeline: true, NoContextParallel: true, Sources: []Source{
			{Limit: "Recompute: none, full; NoPipeline; NoContextParallel", Repo: "Dao-AILab/flash-attention", File: "training/src/train.py, training/configs/trainer",
				Commit: "4a6eaa9f", Note: "PyTorch Lightning's Trainer with its DDP strategy (optionally ZeroRedundancyOptimizer); " +
					"no pipeline or context parallelism"},
		}},
	},
}

// PyTorch DistributedDataParallel's default gradient buckets. bucket_cap_mb=25
// is converted as int(bucket_cap_mb * 1024 * 1024) bytes (DistributedDataParallel.
// __init__, torch/nn/parallel/distributed.py; c10d::kDefaultBucketBytesCap in
// torch/csrc/distributed/c10d/reducer.hpp; read in the 1.x and 2.x sources, not at
// the tag of the PyTorch 1.13–1.14 of the NGC 22.1x containers flash-attention's
// training/Dockerfile builds on, nvcr.io/nvidia/pytorch:22.12-py3 at 0a1d03c).
// After the first
// iteration the Reducer rebuilds its buckets in the order the gradients became
// ready with the limits {first_bucket_bytes_cap, bucket_bytes_cap}
// (Reducer::rebuild_buckets, reducer.cpp; reversed only under
// DDP_SET_LAST_BUCKET_CAP=1), the first being dist._DEFAULT_FIRST_BUCKET_BYTES =
// c10d::kDefaultFirstBucketBytes = 1 MiB: the first bucket holds the last
// layers' gradients, the first ready, and is reduced first, so the reductions
// start once 1 MiB of gradients is complete rather than a whole bucket.
const (
	TorchDDPBucketBytes      = 25 * 1024 * 1024
	TorchDDPFirstBucketBytes = 1024 * 1024
)

// PipelineFallbackPassBytes is what DeepSpeed's buffered_allreduce_fallback moves
// per 16-bit gradient element besides the all-reduce (deepspeed/runtime/engine.py at
// v0.3.14): allreduce_bucket flattens the bucket into a new tensor (read 2 B, write
// 2 B), and after dist.all_reduce averages it in place (postscale_gradients, its
// default, with gradient_predivide_factor 1.0: tensor.mul_(1 / dp), read and write 2 B);
// allreduce_and_copy copies each unflattened view back into its gradient (read and
// write 2 B).
const PipelineFallbackPassBytes = 12

// FP16GradCheckBytesDeepSpeed03 is the traffic per fp16 gradient element of the
// checks DeepSpeed's stage-1 optimizer runs over all its fp16 groups before each
// update (deepspeed/runtime/zero/stage1.py FP16_DeepSpeedZeroOptimizer_Stage1.step
// at v0.3.13–v0.3.14, before it frees the gradients it does not own): the overflow
// check (runtime/utils.py CheckOverflow.has_overflow_serial → _has_inf_or_nan:
// float(x.float().sum()) per gradient — the .float() copy reads 2 B and writes 4 B,
// the sum reads 4 B) and the gradient norm (get_grad_norm: p.grad.data.float().norm(2)
// per gradient, the same 10 B): 20 B.
const FP16GradCheckBytesDeepSpeed03 = 20

// ComposerDecoupledAdamWBytes is the HBM traffic per parameter of one update by
// Composer's DecoupledAdamW (composer/optim/decoupled_weight_decay.py, v0.13.4 —
// the mosaicml==0.13.4 llm-foundry 300cc5c58 pins for its MPT benchmarks — and
// unchanged since): DecoupledAdamW.adamw loops over the parameters and runs eight
// elementwise kernels on each, all fp32 under PyTorch FSDP (its flat parameters
// are kept in full precision and their gradients cast back to it):
// exp_avg.mul_ (read and write m, 8 B), .add_(grad) (m, grad, m: 12),
// exp_avg_sq.mul_ (8), .addcmul_(grad, grad) (v, grad, v: 12), exp_avg_sq.sqrt()
// (8), / sqrt(bias_correction2) (8), .add_(eps) (8) and param.addcdiv_(exp_avg,
// denom) (p, m, denom, p: 16) — 80 B, where a fused multi-tensor Adam moves 30.
// Weight decay adds a param.mul_ (8 B) that llm-foundry's MPT yamls skip
// (scripts/train/yamls/mosaic_gpt/*.yaml: weight_decay 0.0 at 300cc5c58).
const ComposerDecoupledAdamWBytes = 80

var byName = func() map[string]*Profile {
	m := map[string]*Profile{}
	for i := range profiles {
		p := &profiles[i]
		m[p.Name] = p
		for _, a := range p.Aliases {
			m[a] = p
		}
	}
	return m
}()

// defaultProfile is Default's profile (byName's entry, never changed).
var defaultProfile = byName[Default]

// Lookup returns the profile of a framework name or alias (case-insensitive); the
// empty name is Default. The profile is the caller's copy (Get shares it).
func Lookup(name string) (Profile, error) {
	p, err := Get(name)
	return *p, err
}

// Get is Lookup without the copy: the package's own profile, which the caller
// must only read. An estimate reads its framework's profile in nearly every part
// (about 11 500 times a warm search of llama3-405b on 4096 GPUs), and a copy of a
// profile (some 400 bytes) cost about as much as the lookup. For an unknown name
// it returns, with the error, an empty profile (Lookup's Profile{}), so that a
// caller that reads fields regardless reads the same zero values.
func Get(name string) (*Profile, error) {
	if name == "" || name == Default {
		// The estimator looks the request's framework up in every part of an
		// estimate (thousands of times a search), nearly always the default:
		// answered without hashing the name (a lookup 56 → 38 ns on a shared 2-core host).
		return defaultProfile, nil
	}
	if p, ok := byName[name]; ok {
		return p, nil
	}
	if p, ok := byName[strings.ToLower(strings.TrimSpace(name))]; ok {
		return p, nil
	}
	return &unknownProfile, fmt.Errorf("unknown framework %q (one of %s)", name, strings.Join(Names(), ", "))
}

// unknownProfile is what Get returns with its error: an empty profile, never
// changed.
var unknownProfile Profile

// Canonical returns the canonical name of a known framework name or alias, and
// Default for the empty name.
func Canonical(name string) (string, bool) {
	p, err := Get(name)
	return p.Name, err == nil
}

// Names lists the canonical names, sorted.
func Names() []string {
	out := make([]string, len(profiles))
	for i, p := range profiles {
		out[i] = p.Name
	}
	sort.Strings(out)
	return out
}

// All returns every profile, in the order above (most used first).
func All() []Profile {
	out := make([]Profile, len(profiles))
	copy(out, profiles)
	return out
}

// torchtitan2024Profile is torchtitan of 2024 as at its December 2024 benchmarks;
// torchtitan-2024-04 is it with what torchtitan of April 2024 did otherwise.
var torchtitan2024Profile = Profile{
	Name:    "torchtitan-2024",
	Aliases: []string{"torchtitan-9dec370", "torchtitan-2024-12"},
	Description: "torchtitan of 2024, as at its December 2024 benchmarks (9dec370): torchtitan's kernels, no gradient " +
		"accumulation, FSDP2 without resharding after the forward pass under a pipeline, GPipe, 1F1B and Interleaved1F1B",
	Source:                    "pytorch/torchtitan 9dec370 (2024-12-26) train.py, torchtitan/parallelisms (the Runs sources)",
	BackwardPrefetch:          "pre",
	SequenceParallelWithTP:    true,
	FP8Recipe:                 "current",
	LossBytesPerLogit:         TorchLossBytesPerLogit,
	GradReduceBytes:           torchtitanGradReduceBytes,
	FP8WeightsCastInForward:   true,
	FP8CastPerProjection:      true,
	LossParallelBytesPerLogit: TorchLossParallelBytesPerLogit,
	TorchRingAttention:        true,
	FSDP2Copies:               true, // torch nightly 1963fc8 (2024-12-23): after PR #129721
	DTensorCollectives:        true,
	Runs:                      torchtitan2024,
}

// torchtitanProfile is torchtitan as it is now; its dated versions (torchtitan-0.1,
// torchtitan-2025-11) are it with what differed then (Profile.as).
var torchtitanProfile = Profile{
	Name:    "torchtitan",
	Aliases: []string{"fsdp2", "pytorch-fsdp2"},
	Description: "torchtitan on PyTorch FSDP2 (fully_shard): per-parameter sharding with prefetching, " +
		"tensor parallelism always with sequence parallelism (its TP plan shards the norms)",
	Source:                 "pytorch/torchtitan docs (parallelisms, FSDP2, TP plan of the Llama models, float8 with torchao)",
	BackwardPrefetch:       "pre",
	SequenceParallelWithTP: true,
	FP8Recipe:              "current", // torchao float8, tensorwise dynamic scaling
	// The loss compiled with the model (from April 2025; CompiledLossBytesPerLogit).
	LossBytesPerLogit: CompiledLossBytesPerLogit,
	// FSDP2 under torchtitan reduces in fp32 (torchtitanGradReduceBytes).
	GradReduceBytes:         torchtitanGradReduceBytes,
	FP8WeightsCastInForward: true,
	FP8CastPerProjection:    true,
	// torchtitan computes the loss vocab-parallel whenever TP is on
	// (parallelize_llama: loss_parallel unless --training.disable_loss_parallel),
	// compiled as well.
	LossParallelBytesPerLogit: CompiledLossBytesPerLogit,
	TorchRingAttention:        true,
	// FSDP2's copy-out of every gather and copy-in of every reduce-scatter run
	// on the compute stream.
	FSDP2Copies:        true,
	DTensorCollectives: true,
	// torchao's MXFP8 casts as its documentation times them on a 1000 W B200 from
	// 4446ad91b (PR #3563, 2026-01-02; docs/source/workflows/training.md since
	// f8bbce54e), 16384 × 16384: the dim0 cast under torch.compile 6462 GB/s, the
	// dim1 cast with the CUDA kernel 5404 GB/s (floor scaling; 5717 rceil): 0.81
	// and 0.68 of 8 TB/s.
	BlackwellMXCastHBM: [2]float64{6462.0 / 8000, 5404.0 / 8000},
	// FSDP2 shards the weights, gradients and optimizer states together
	// (fully_shard, reshard_after_forward: ZeRO-3, or not: ZeRO-2) or
	// replicates them (DDP): no optimizer-only sharding (ZeRO-1) without a
	// pipeline; under one, the weights stay gathered and the gradients whole
	// until the last micro-batch (ZeRO-1; torchtitanRuns' sources). Its pipelines
	// are torch.distributed.pipelining's GPipe, 1F1B, Interleaved1F1B and (from
	// PyTorch 2.7) ZBVZeroBubble (torchtitan docs, parallelisms).
	Runs: torchtitanRuns,
}

// as is p under another profile's name, description and source (no aliases),
// with diff setting what that profile does otherwise: a dated version of the
// framework p describes (torchtitan-0.1 of torchtitan, nemo-24.12 of nemo-24), or
// the same framework with one option on (nemo-te-ops).
func (p Profile) as(name, description, source string, diff func(*Profile)) Profile {
	p.Name, p.Aliases, p.Description, p.Source = name, nil, description, source
	diff(&p)
	return p
}

// megatronGradReduceBytes: Megatron-LM's training entry (pretrain_gpt.py →
// megatron/training/arguments.py validate_args, the args.bf16 branch) sets
// accumulate_allreduce_grads_in_fp32 under --bf16 unless --grad-reduce-in-bf16 is
// given ("bfloat16 requires gradient accumulation and all-reduce to be done in
// fp32"; --main-grads-dtype, default fp32, must stay fp32 for it), and
// megatron/training/training.py passes it to Megatron-Core's DDP config as
// grad_reduce_in_fp32, whose main_grad buffers are then fp32
// (megatron/core/distributed/distributed_data_parallel.py: grad_dtype = torch.float
// if grad_reduce_in_fp32 else param.dtype): the weight-gradient GEMMs accumulate
// into them and data parallelism reduces them, 4 B per parameter. fp8 runs with
// --bf16 as well; under --fp16 the flag stays off. Read at d98e8a6 (2026-08-22;
// arguments.py lines 1204–1217, training.py line 2635) and 1e057005 (2025-05-24;
// arguments.py 618–630, training.py 1101): the same. History: unconditional under
// --bf16 since 50a4b5f (2021-04-08, "Release fixes") and through core_r0.7.0–
// core_r0.11.0; --grad-reduce-in-bf16, the opt-out, since d165a85 (2025-02-26, in
// core_r0.12.0); --main-grads-dtype bf16 (47a175b, 2024-12-19, the precision-aware
// optimizer's) also leaves it off. The default has not changed. Megatron-FSDP
// (--use-custom-fsdp, these profiles' ZeRO-2/3) takes the same config: its
// main-gradient buffers are fp32 under grad_reduce_in_fp32 and reduce-scattered as
// they are, every micro-batch under optim_grads / optim_grads_params
// (megatron/core/distributed/custom_fsdp/param_and_grad_buffer.py line 1356,
// fully_sharded_data_parallel.py lines 392–398, at 1e057005).
const megatronGradReduceBytes = 4

// torchtitanRuns is what torchtitan runs since v0.1.0 (the torchtitan and
// torchtitan-0.1 profiles).
// torchtitanGradReduceBytes: torchtitan's FSDP2 mixed precision keeps the
// parameters in fp32, computes in bf16 and reduces in fp32 —
// training.mixed_precision_reduce, default "float32" and its only choice at
// 258f608 (hard-coded MixedPrecisionPolicy(param_dtype=bfloat16,
// reduce_dtype=float32)), 9dec370 and 6fc499f — so the sharded gradients are fp32,
// the reduce-scatter runs in fp32, and under a pipeline, where gradient sync waits
// for the last micro-batch, FSDP2 accumulates the unsharded gradients in fp32
// (torch/distributed/_composable/fsdp/_fsdp_param.py
// FSDPParam.to_accumulated_grad_if_needed: the unsharded gradient is upcast to
// reduce_dtype when the group does not reduce): 4 B per parameter.
const torchtitanGradReduceBytes = 4

// torchtitanRecompute are the activation checkpointing modes torchtitan runs, from
// its first release on: activation_checkpoint.mode "none", "full" or "selective",
// and selective is either op-level (selective_ac_option "op": step's "ops") or
// every n-th transformer block checkpointed whole (an integer option: "full" on
// some of the layers, Layout.RecomputeLayers). Megatron's selective recomputation
// of the attention core alone ("selective") is not among them.
var torchtitanRecompute = []string{"none", "ops", "full"}

const torchtitanRecomputeNote = "_apply_ac_to_transformer_block accepts the modes \"full\" (checkpoint_wrapper on the block) and " +
	"\"selective\", whose selective_ac_option is \"op\" (create_selective_checkpoint_contexts saving the _save_list ops' outputs " +
	"but every second mm) or an integer n (every n-th block checkpointed whole); mode \"none\" applies none"

var torchtitanRuns = Runs{Schedules: []string{"gpipe", "1f1b", "interleaved", "zb-v"}, ZeRO: []int{0, 2, 3}, ZeROWithPipeline: []int{0, 1},
	Recompute: torchtitanRecompute, Sources: []Source{
		{Limit: "Recompute: none, ops, full", Repo: "pytorch/torchtitan", File: "torchtitan/config/job_config.py (ActivationCheckpoint), " +
			"torchtitan/models/llama3/infra/parallelize.py", Commit: "6fc499f", Note: torchtitanRecomputeNote},
		{Limit: "Schedules: gpipe, 1f1b, interleaved, zb-v", Repo: "pytorch/torchtitan", File: "torchtitan/distributed/pipeline_parallel.py",
			Commit: "6fc499f", Note: "get_schedule_class of torch.distributed.pipelining, ScheduleZBVZeroBubble among them"},
		{Limit: "ZeRO: 0, 2, 3", Repo: "pytorch/torchtitan", File: "torchtitan/config/job_config.py", Commit: "6fc499f",
			Note: "data parallelism is DDP replication or FSDP2's fully_shard (fsdp_reshard_after_forward: always, never or " +
				"default); no optimizer-only sharding"},
		{Limit: "ZeROWithPipeline: 0, 1", Repo: "pytorch/torchtitan, pytorch/pytorch",
			File: "torchtitan/models/llama3/infra/parallelize.py (apply_fsdp; deepseek_v3 and llama4 the same); " +
				"torch/distributed/pipelining/stage.py", Commit: "6fc499f (v0.1.0 6a3a9da95 the same); torch stage.py 0138610",
			Note: "fsdp_reshard_after_forward \"default\" is reshard_after_forward = not pp_enabled (\"never\" the same), and the " +
				"pipeline stage's backward_maybe_with_nosync sets reshard_after_backward and requires_gradient_sync False on " +
				"every micro-batch, its _post_backward reduce-scatters and reshards once after the last: the 16-bit weights " +
				"gathered once and the gradients kept whole, the fp32 weights and optimizer states sharded (ZeRO-1), as at " +
				"9dec370; \"always\" regathers the weights per micro-batch but still keeps the gradients whole, which no ZeRO " +
				"stage here prices. ZeRO 0: no data parallelism beside the pipeline (apply_ddp raises \"DDP has not supported " +
				"> 1D parallelism\")"},
		{Limit: "DDPAlone", Repo: "pytorch/torchtitan", File: "torchtitan/models/llama3/infra/parallelize.py (deepseek_v3 the same)",
			Commit: "6fc499f (v0.1.0 6a3a9da95 the same)", Note: "replication without sharding is apply_ddp, reached only when FSDP is " +
				"off, and it raises \"DDP has not supported > 1D parallelism\" when the world mesh has more than one dimension"},
	}, DDPAlone: true}

// Queues is how a framework's launch sets CUDA_DEVICE_MAX_CONNECTIONS, the number
// of hardware work queues (connections) a process's CUDA streams are mapped onto:
// 1 to 32, CUDA's default 8 (CUDA Programming Guide, "CUDA Environment
// Variables", CUDA_DEVICE_MAX_CONNECTIONS). With one queue the kernels of every
// stream start in the order the host launched them (a kernel waits behind the one
// queued before it, whatever its stream: pytorch/pytorch#143890, NVIDIA's reply),
// which Megatron-Core relies on to start a TP collective before the GEMM it
// overlaps (megatron/core/tensor_parallel/layers.py at d98e8a6:
// "CUDA_DEVICE_MAX_CONNECTIONS=1 forces the kernels to be scheduled in the order
// they are called").
type Queues int8

const (
	// QueuesUnset: the launch sets nothing; CUDA's default.
	QueuesUnset Queues = iota
	// QueuesOne: the launch exports 1 whatever the layout (MLPerf Training's NeMo
	// implementations, config_common.sh: CUDA_DEVICE_MAX_CONNECTIONS=1).
	QueuesOne
	// QueuesMegatronLM: Megatron-LM's validate_args (megatron/training/arguments.py
	// at d98e8a6; the same at 1e057005) asserts 1 where TP or CP > 1 before
	// Blackwell ("CUDA_DEVICE_MAX_CONNECTIONS requirement no longer exists since the
	// Blackwell architecture"), except under Megatron FSDP or torch FSDP2 (ZeRO-3),
	// which require more than one, and with the EP all-to-all overlap, where it only
	// warns that the overlap "requires setting a larger CUDA_DEVICE_MAX_CONNECTIONS"
	// (ae1c882 on; 45b1a606's combined_1f1b the same) and the MoE README lists
	// CUDA_DEVICE_MAX_CONNECTIONS > 1 among the overlap's requirements. Elsewhere
	// nothing is asserted and the launch is taken to leave CUDA's default.
	QueuesMegatronLM
	// QueuesMegatronLM012 is core_r0.12.0's validate_args: the same assertion, its
	// condition "tensor_model_parallel_size > 1 or context_parallel_size > 1 and
	// get_device_arch_version() < 10" binding the architecture to CP alone, so TP > 1
	// asserts 1 on Blackwell too; no EP overlap to exempt.
	QueuesMegatronLM012
	// QueuesNeMoPerfEnv: NeMo's PerfEnvPlugin (nemo/lightning/run/plugins.py at
	// NeMo 6f2c6fd and 7a8f1cc, which its performance scripts launch with): 32 from Blackwell (sm100) with TP or CP > 1, 1
	// before it with TP or CP > 1, nothing otherwise.
	QueuesNeMoPerfEnv
	// QueuesBridgePerfEnv: Megatron-Bridge's PerfEnvPlugin
	// (scripts/performance/perf_plugins.py, _set_num_cuda_device_max_connections,
	// NVIDIA-NeMo/Megatron-Bridge 0022e9d): 32 from Blackwell; before it 1 with
	// TP or CP > 1 unless the EP all-to-all overlap is on, else 32 with DeepEP (or
	// HybridEP), else 8.
	QueuesBridgePerfEnv
)

// Hardware queue counts CUDA takes (CUDA Programming Guide, "CUDA Environment
// Variables": CUDA_DEVICE_MAX_CONNECTIONS, 1 to 32 connections, default 8).
const (
	DefaultDeviceConnections = 8
	MaxDeviceConnections     = 32
)

// QueueLayout is what a framework's launch reads to set the hardware queues.
type QueueLayout struct {
	TP, CP int
	// Blackwell: the GPUs are sm100 or newer; EPOverlap: the EP all-to-all overlap
	// is on; FSDP: ZeRO-3 (Megatron FSDP, torch FSDP2); DeepEP: the flex
	// dispatcher's DeepEP backend.
	Blackwell, EPOverlap, FSDP, DeepEP bool
}

// DeviceMaxConnections is the CUDA_DEVICE_MAX_CONNECTIONS the framework's launch
// runs the layout with, and what sets it.
func (p *Profile) DeviceMaxConnections(l QueueLayout) (int, string) {
	tpcp := l.TP > 1 || l.CP > 1
	switch p.Queues {
	case QueuesOne:
		return 1, "the launch's (MLPerf Training's config_common.sh)"
	case QueuesMegatronLM:
		if tpcp && !l.Blackwell && !l.FSDP && !l.EPOverlap {
			return 1, "Megatron-LM's validate_args requires it under TP or CP > 1 before Blackwell"
		}
	case QueuesMegatronLM012:
		if (l.TP > 1 || l.CP > 1 && !l.Blackwell) && !l.FSDP {
			return 1, "Megatron-LM's validate_args (core_r0.12.0) requires it under TP > 1, or CP > 1 before Blackwell"
		}
	case QueuesNeMoPerfEnv:
		switch {
		case tpcp && l.Blackwell:
			return MaxDeviceConnections, "NeMo's PerfEnvPlugin sets it on Blackwell under TP or CP > 1"
		case tpcp:
			return 1, "NeMo's PerfEnvPlugin sets it before Blackwell under TP or CP > 1"
		}
	case QueuesBridgePerfEnv:
		switch {
		case l.Blackwell:
			return MaxDeviceConnections, "Megatron-Bridge's PerfEnvPlugin sets it on Blackwell"
		case tpcp && !l.EPOverlap:
			return 1, "Megatron-Bridge's PerfEnvPlugin sets it before Blackwell under TP or CP > 1 without the EP overlap"
		case l.DeepEP:
			return MaxDeviceConnections, "Megatron-Bridge's PerfEnvPlugin sets it with DeepEP"
		}
		return DefaultDeviceConnections, "Megatron-Bridge's PerfEnvPlugin sets CUDA's default"
	}
	return DefaultDeviceConnections, "CUDA's default"
}
