package step

import (
	"fmt"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/topology"
)

// The host CPU's part in a layer's time. An eager framework's CPU runs Python, the
// PyTorch dispatcher and the kernel launches of every operator; a layer whose GPU
// work is shorter than that waits for the host. How long the host takes depends
// on the CPU: Transformer Engine issue #2053 ("High CPU overhead on Grace
// systems", August 2025) times one forward call of a bf16 linear layer (8192
// tokens, hidden 2048) on the host — torch.nn.Linear 37.08 µs on GB200's Grace
// and 13.48 µs on a DGX H100's Xeon Platinum 8480C; Transformer Engine's Linear
// 99.66 µs on GB200 — the same Python and C++ run 2.75× slower on Grace.
const (
	// xeonTorchLinearHostUs and graceTorchLinearHostUs: torch.nn.Linear's forward
	// call on the host (TE #2053, bf16, 8192 × 2048 · 2048 × 2048).
	xeonTorchLinearHostUs  = 13.48
	graceTorchLinearHostUs = 37.08
	// graceTELinearHostUs: Transformer Engine's Linear forward call on Grace, the
	// same shape (TE #2053).
	graceTELinearHostUs = 99.66
)

// graceHostRatio is how much longer Grace takes than an x86 host of a DGX to
// dispatch the same operator (TE #2053: 37.08 / 13.48 = 2.75).
const graceHostRatio = graceTorchLinearHostUs / xeonTorchLinearHostUs

// teModuleHostUs is one Transformer Engine module's forward call on an x86 host
// (the unit of Constants.EagerOpHostUs): Transformer Engine's Linear on Grace
// brought back by Grace's ratio, 99.66 / 2.75 = 36.2 µs. Its Python — the fp8 and
// recipe checks, the workspace and output allocations, the autograd function and
// its saved tensors — is what a module costs besides its kernels.
const teModuleHostUs = graceTELinearHostUs / graceHostRatio

// hostOpScale is how much longer the node's host CPU takes to dispatch one
// operator than the x86 hosts the host constants (Constants.EagerOpHostUs,
// Constants.KernelLaunchUs, teModuleHostUs) describe: 1 on x86 and on a host
// the cluster does not describe, graceHostRatio on Grace.
func hostOpScale(s topology.Spec) float64 {
	if s.Host.CPU == topology.Grace {
		return graceHostRatio
	}
	return 1
}

// Eager operators of a Megatron-Core layer's forward besides its Transformer
// Engine modules, its MoE dispatch and its router (Megatron-Core
// transformer_layer.py, mlp.py, multi_latent_attention.py, rope_utils.py).
const (
	// teLayerBDAOps: the two fused bias-dropout-add residuals (self_attn_bda,
	// mlp_bda), one kernel each.
	teLayerBDAOps = 2
	// teMLPActivationOps: the MLP's activation between its two linear modules
	// (bias_swiglu_impl / bias_gelu_impl: one fused kernel).
	teMLPActivationOps = 1
	// teRoPEOps: rotary embedding of the queries and keys, one fused kernel each
	// (Transformer Engine's fused_apply_rotary_pos_emb).
	teRoPEOps = 2
	// mlaRoPEOpsUnfused: MLA's rotary part of the queries and of the shared key
	// without the fused kernel — rope_utils._apply_rotary_pos_emb_bshd with
	// multi_latent_attention: the de-interleaving cat, cos, × mscale, cast, sin,
	// × mscale, cast, t·cos, the rotate-half negation and cat, ·sin, the sum and the
	// cat with the pass-through part (13 kernels a call, two calls) — and the cats
	// joining each rotary part to its position-free part (2).
	mlaRoPEOpsUnfused = 2*13 + 2
	// mlaRoPEOpsFused: the two fused rotary kernels and the two cats.
	mlaRoPEOpsFused = 4
)

// teLayerModules counts the Transformer Engine modules one layer's forward calls
// under Megatron-Core's Transformer Engine layer spec
// (models/gpt/gpt_layer_specs.py, get_gpt_layer_with_transformer_engine_spec):
// attention as TELayerNormColumnParallelLinear (QKV), TEDotProductAttention and
// TERowParallelLinear; MLA (with qk_layernorm) as TENorm (input norm), TELinear
// (q down), TELayerNormColumnParallelLinear (q up), TELinear (kv down),
// TELayerNormColumnParallelLinear (kv up), TEDotProductAttention and
// TERowParallelLinear (without a query latent, one column-parallel q projection
// instead of the two); a dense MLP as TELayerNormColumnParallelLinear and
// TERowParallelLinear; an MoE layer's pre-MLP TENorm, its shared experts' two
// linear modules (moe_module_specs.py) — the routed experts' grouped linear
// modules are counted with the MoE block (moeHost).
func teLayerModules(a model.Arch, moe bool) float64 {
	n := 3.0
	if m := a.MLA; m != nil {
		n = 6
		if m.QLoRARank > 0 {
			n = 7
		}
	}
	if moe && a.MoE != nil {
		n++ // pre_mlp_layernorm
		if a.MoE.SharedExperts > 0 {
			n += 2
		}
	} else {
		n += 2
	}
	return n
}

// layerHostCosts is what the host spends on one layer's forward, in seconds on
// this node's CPU.
type layerHostCosts struct {
	// layer is the host time of the layer outside an MoE block's dispatch and
	// experts (moeHost); op one eager operator, module one Transformer Engine
	// module's call.
	layer, op, module float64
	// te: the layers are Transformer Engine modules (their grouped expert GEMMs
	// too); routerOps the eager operators of the MoE router before the
	// dispatcher's sync.
	te        bool
	routerOps float64
	// paddedSync: the MoE dispatcher synchronises with the host even with the
	// experts padded to capacity (framework.Profile.MoEPaddedPermuteSync).
	paddedSync bool
	// collFwd and collBwd are the host time of the torch.distributed collectives
	// of the layer's attention block and dense MLP (layerCollectiveCalls), forward
	// and backward; moeCollFwd and moeCollBwd those of an MoE block, and a2a
	// whether its all-to-alls are among them (then not counted as eager operators).
	collFwd, collBwd, moeCollFwd, moeCollBwd float64
	a2a                                      bool
	// moeCollPreSync is the part of moeCollFwd the host issues before the MoE
	// dispatcher's device-to-host sync (layerColls.preFwd); postSync the part of
	// layer issued after it: the shared experts' two modules and activation and
	// the MLP's bias-dropout-add (layerCompute orders the layer's host and GPU
	// work around the sync).
	moeCollPreSync, postSync float64
	// attnFwd and attnBwd are the host time of the unfused attention's operators
	// under Transformer Engine layers (teUnfusedAttnOpsFwd, teUnfusedAttnOpsBwd),
	// forward and backward with their recomputation where the attention core is
	// recomputed.
	attnFwd, attnBwd float64
}

// Transformer Engine's UnfusedDotProductAttention (v2.2 pytorch/attention.py; the
// same in v2.3–v2.4), the backend of DotProductAttention where neither cuDNN nor
// flash-attn takes the heads (Training.UnfusedAttention: MLA's 192-wide queries
// and keys on Blackwell under Transformer Engine 2.2–2.4), is a chain of eager
// operators inside the one module call teLayerModules counts, for a causal
// self-attention in sbhd without padding or bias:
//
//   - dot_product_attention/utils.get_full_mask builds the causal mask on every
//     call: two torch.arange, their difference, swa_left and swa_right, the two
//     torch.where over their comparisons (a comparison and a where each), the
//     difference of those and torch.logical_not — 11 kernels;
//   - torch.baddbmm into the scores, FusedScaleMaskSoftmax's ScaledMaskedSoftmax
//     (one kernel, with its mask), torch.bmm with the values and the output's
//     permute(...).contiguous() — 4; dropout at probability 0 returns its input.
//
// 15 operators forward. Backward, autograd runs the gradients of baddbmm (two
// GEMMs), of the softmax (one kernel), of bmm (two) and of the permute's copy (one)
// — 6; the mask needs none. Recomputing the attention core (selective
// core_attn) runs the 15 again in the backward pass.
const (
	teUnfusedAttnOpsFwd = 15
	teUnfusedAttnOpsBwd = 6
)

// layerHost prices the host side of one layer's forward: with the framework's
// layers built of Transformer Engine modules (framework.Profile.TELayers), each
// module's call (teModuleHostUs) and the eager operators between them; otherwise
// the generic launch count (Constants.KernelsPerLayer launches of
// Constants.KernelLaunchUs); with CUDA graphs one graph launch. All of it scaled
// by the node's CPU (hostOpScale).
func (e *Estimator) layerHost(req Request, moe bool) layerHostCosts { return e.layerHostAt(&req, moe) }

// layerHostAt is layerHost of *req, which it only reads (by address).
func (e *Estimator) layerHostAt(req *Request, moe bool) layerHostCosts {
	k := &e.k
	a, t := &req.Model, &req.Training
	s := hostOpScale(req.Cluster.Spec)
	c := layerHostCosts{op: k.EagerOpHostUs * 1e-6 * s, module: teModuleHostUs * 1e-6 * s, routerOps: moeRouterOps}
	fw, err := framework.Get(t.Framework)
	c.te = err == nil && fw.TELayers
	c.paddedSync = err == nil && fw.MoEPaddedPermuteSync
	if c.te && a.MoE != nil && a.MoE.Groups > 0 {
		// Group-limited sigmoid routing with its auxiliary losses (DeepSeek-V3):
		// Megatron-Core's TopKRouter launches 72 kernels, 31 with
		// --moe-router-fusion (Transformer Engine PR 1883) — NVIDIA's account of
		// DeepSeek-V3 on GB200 (Megatron-LM docs/discussions/
		// deepseek-v3-gb200-optimization, 79e8592, §2.1.4).
		c.routerOps = moeRouterKernelsGroupLimited
		if fw.MoERouterFusion {
			c.routerOps = moeRouterKernelsGroupLimitedFused
		}
	}
	if c.te && a.MoE != nil && t.MoECapacityFactor > 0 {
		c.routerOps += moeRouterCapacityOps
		if !t.MoEPadToCapacity {
			c.routerOps++
		}
	}
	var attn, mb layerColls
	if err == nil && fw.DTensorCollectives {
		attn, mb = dtensorCollectiveCalls(req, moe)
	} else {
		attn, mb = layerCollectiveCalls(req, moe)
	}
	c.collFwd, c.collBwd = attn.hostSeconds(true, s), attn.hostSeconds(false, s)
	c.moeCollFwd, c.moeCollBwd = mb.hostSeconds(true, s), mb.hostSeconds(false, s)
	c.moeCollPreSync = mb.preSyncSeconds(s)
	c.a2a = mb.fwd[cA2A]+mb.funFwd[cA2A] > 0
	if c.te && t.UnfusedAttention && !t.CUDAGraphs {
		bwdOps := float64(teUnfusedAttnOpsBwd)
		if req.Layout.recomputeMask()&rmCoreAttn != 0 {
			bwdOps += teUnfusedAttnOpsFwd
		}
		c.attnFwd, c.attnBwd = teUnfusedAttnOpsFwd*c.op, bwdOps*c.op
	}
	switch {
	case t.CUDAGraphs:
		c.layer = k.KernelLaunchUs * 1e-6 * s // one graph launch
	case c.te:
		ops := float64(teLayerBDAOps)
		if !moe || a.MoE == nil {
			ops += teMLPActivationOps
		} else if a.MoE.SharedExperts > 0 {
			ops += teMLPActivationOps // the shared experts' activation
		}
		switch {
		case a.MLA != nil && fw.MLARoPEUnfused:
			ops += mlaRoPEOpsUnfused
		case a.MLA != nil:
			ops += mlaRoPEOpsFused
		default:
			ops += teRoPEOps
		}
		c.layer = teLayerModules(*a, moe)*c.module + ops*c.op
		if moe && a.MoE != nil {
			// After the MoE block's dispatch and experts (moe_layer.py: the shared
			// experts run after the routed ones, or beside the dispatcher's
			// all-to-alls with --moe-shared-expert-overlap; then mlp_bda).
			c.postSync = c.op // mlp_bda, one of the teLayerBDAOps
			if a.MoE.SharedExperts > 0 {
				c.postSync += 2*c.module + teMLPActivationOps*c.op
			}
		}
	default:
		c.layer = k.KernelLaunchUs * 1e-6 * k.KernelsPerLayer * s
	}
	return c
}

// moeRouterCapacityOps are the kernels Megatron-Core's router adds with a capacity
// factor (moe_utils.topk_softmax_with_capacity, the same at core_v0.12.0 and
// 20d73fe; the router counts above are of dropless routing): the top-capacity
// tokens of each expert (torch.topk over the tokens), the capacity mask built by
// zeros_like, scatter and the cast to bool, and the probabilities multiplied by it
// — 5; without padding the mask is also and-ed with the routing map (one more).
const moeRouterCapacityOps = 5

// Kernels of Megatron-Core's router for group-limited sigmoid routing with
// expert bias and the sequence auxiliary loss (DeepSeek-V3), without and with
// --moe-router-fusion (NVIDIA's DeepSeek-V3 GB200 account, §2.1.4).
const (
	moeRouterKernelsGroupLimited      = 72
	moeRouterKernelsGroupLimitedFused = 31
)

// hostNote says what the host spends to issue one layer's forward pass.
func (e *Estimator) hostNote(req Request) string {
	c := e.layerHost(req, false)
	cpu := "an x86 host"
	if s := hostOpScale(req.Cluster.Spec); s != 1 {
		cpu = fmt.Sprintf("Grace, %.2f× an x86 host per operator (Transformer Engine issue #2053)", s)
	}
	switch {
	case req.Training.CUDAGraphs:
		return fmt.Sprintf("each layer replayed from a CUDA graph with one launch on %s", cpu)
	case c.te:
		return fmt.Sprintf("the host issues a dense layer's forward in %.0f µs on %s: %.0f Transformer Engine modules of %.1f µs and the eager operators between them of %.1f µs (twice that backward); a layer is never faster",
			1e6*c.layer, cpu, teLayerModules(req.Model, false), 1e6*c.module, 1e6*c.op)
	}
	return fmt.Sprintf("at least %.0f kernel launches of %.1f µs per layer forward on %s", e.k.KernelsPerLayer, 1e6*c.layer/e.k.KernelsPerLayer, cpu)
}

// Host time of the collectives a layer issues through torch.distributed. Every
// collective call costs the host its Python binding, ProcessGroupNCCL's work
// (the stream synchronisation events, the work object) and NCCL's enqueue and
// kernel launch: PyTorch issue #138773 (torch 2.4, "[funcol] functional
// collectives are 67% slower than torch.distributed collectives") profiles the
// host side of one torch.distributed call at 89 µs for an in-place all-reduce, and
// at 131 µs for the list all-gather and 122 µs for the reduce-scatter, which also
// allocate, flatten and copy their tensor lists (Megatron-Core and Transformer
// Engine call the tensor forms, all_gather_into_tensor and
// reduce_scatter_tensor, into outputs they allocate themselves). The model takes
// the bare call's 89 µs for every collective and all-to-all (all_to_all_single: a
// NCCL group of sends and receives), on an x86 host; the node's CPU scales it
// (hostOpScale).
const c10dCallHostUs = 89

// Host time of one call of PyTorch's functional collectives
// (torch.distributed._functional_collectives, what DTensor's redistribute and
// torchtitan's expert parallelism call): PyTorch issue #138773 (torch 2.4)
// profiles funcol's all_gather at 205 µs, reduce_scatter at 164 µs and
// all_reduce at 149 µs on the host against c10d's 131, 122 and 89 ("extra copy,
// extra wrapping, and extra aten ops due to the tracing requirement for
// torch.compile"). The all-to-all (all_to_all_single, not profiled there) is
// taken at the bare call's all_reduce figure, as c10dCallHostUs takes c10d's.
var funcolCallHostUs = [4]float64{205, 164, 149, 149}

// layerColls counts the collectives one layer issues from the host for one
// micro-batch: all-gathers, reduce-scatters, all-reduces and all-to-alls, forward
// (fwd) and backward with what recomputation runs again (bwd), through
// torch.distributed (c10d); funFwd and funBwd those through the functional
// collectives (funcolCallHostUs).
type layerColls struct {
	fwd, bwd       [4]float64 // all-gather, reduce-scatter, all-reduce, all-to-all
	funFwd, funBwd [4]float64
	// preFwd and funPreFwd: of an MoE block's fwd and funFwd, the calls the host
	// issues before the dispatcher's device-to-host sync (moeHost).
	preFwd, funPreFwd [4]float64
}

// preSyncSeconds prices the calls issued before an MoE dispatcher's sync
// (preFwd, funPreFwd) on the host: x86 times scaled by s.
func (c layerColls) preSyncSeconds(s float64) float64 {
	t := collHostSeconds(c.preFwd, s)
	for i, n := range c.funPreFwd {
		t += s * 1e-6 * funcolCallHostUs[i] * n
	}
	return t
}

// hostSeconds prices the forward (fwd) or backward counts on the host: x86
// times scaled by s.
func (c layerColls) hostSeconds(fwd bool, s float64) float64 {
	n, f := c.bwd, c.funBwd
	if fwd {
		n, f = c.fwd, c.funFwd
	}
	t := collHostSeconds(n, s)
	for i := range f {
		t += s * 1e-6 * funcolCallHostUs[i] * f[i]
	}
	return t
}

const (
	cAG = iota
	cRS
	cAR
	cA2A
)

// collHostSeconds prices counts on the host: x86 times scaled by s.
func collHostSeconds(n [4]float64, s float64) float64 {
	return s * 1e-6 * c10dCallHostUs * (n[cAG] + n[cRS] + n[cAR] + n[cA2A])
}

// layerCollectiveCalls counts the torch.distributed collectives of one layer under
// a framework built of Megatron-Core's Transformer Engine layers
// (framework.Profile.TELayers), eager (with CUDA graphs the captured collectives
// cost the host nothing per call): attn are those of the attention block and the
// dense layer's MLP, moe those of an MoE block (router, shared experts,
// dispatcher), so that the MoE block's own stay with its host time (moeHost).
// Counted from the code:
//
//   - Transformer Engine's linear modules with sequence parallelism (Transformer
//     Engine v2.2 module/linear.py, layernorm_linear.py, base.py
//     grad_output_preprocess): a column-parallel module all-gathers its input
//     forward and, keeping only its share for the backward pass, all-gathers it
//     again for the weight gradient and reduce-scatters the input gradient
//     (backward_input_needs_gather); a row-parallel module reduce-scatters its
//     output forward and all-gathers the output gradient backward. Without
//     sequence parallelism the row-parallel output and the column-parallel input
//     gradient are all-reduced. With Transformer Engine's userbuffers TP overlap
//     (Layout.OverlapTP) these run inside the GEMM calls, not through
//     torch.distributed.
//   - Multi-head latent attention's own collectives (mlaTPCollectives): column
//     down-projections (Megatron-Core 0.11–0.13, multi_latent_attention.py at
//     7094270) all-gather the second down-projection's input, the two latents over
//     TP and the up-projections' inputs forward; backward the second
//     down-projection and the up-projections gather again and reduce-scatter, and
//     scatter_to_sequence_parallel_region's backward all-gathers each latent's
//     gradient. Duplicated down-projections (0.14 on, 20d73fe) gather no layer
//     input: the up-projections' inputs and the rotary key are all-gathered.
//   - An MoE block under the all-to-all dispatcher (token_dispatcher.py,
//     MoEAlltoAllTokenDispatcher, the same in 0.12 and 0.14): the tokens and
//     their probabilities dispatched and the experts' output combined, three
//     all-to-alls forward and three backward; with expert TP the dispatched
//     tokens and probabilities all-gathered and the output reduce-scattered.
//     Shared experts overlapped with the dispatcher (shared_experts.py,
//     --moe-shared-expert-overlap) gather their input and reduce-scatter their
//     output explicitly (backward the reverse); otherwise they are a dense MLP.
//     The sequence-level auxiliary loss of group-limited routing (DeepSeek-V3's
//     seq_aux_loss, router.py, moe_utils.sequence_load_balancing_loss_func)
//     all-gathers the scores over the TP and CP group.
//
// The recomputation of selected modules (mla_up_proj's up-projections, the MLP,
// the MoE block) runs their forward collectives again, counted with the backward
// pass; a fully recomputed layer's forward, host included, is priced again whole
// by the caller (computeInto).
func layerCollectiveCalls(req *Request, moe bool) (attn, moeBlock layerColls) {
	a, l := &req.Model, &req.Layout
	fw, err := framework.Get(req.Training.Framework)
	if err != nil || !fw.TELayers {
		return
	}
	isMoE := moe && a.MoE != nil
	if req.Training.CUDAGraphs {
		defer func() {
			// The graphs hold the layer's collectives, and an MoE block's unless
			// the dispatcher's host sync splits it (moeHost).
			attn = layerColls{}
			if req.Training.MoEPadToCapacity && req.Training.MoEDispatcher != DispatchDeepEP {
				moeBlock = layerColls{}
			}
		}()
	}
	tp := l.TP > 1
	ub := l.OverlapTP && fw.TPUserbuffers
	// A column-parallel and a row-parallel module pair (attention, or an MLP).
	pair := func(c *layerColls) {
		if !tp || ub {
			return
		}
		if l.SP {
			c.fwd[cAG]++
			c.fwd[cRS]++
			c.bwd[cAG] += 2
			c.bwd[cRS]++
			return
		}
		c.fwd[cAR]++
		c.bwd[cAR]++
	}
	// The attention block.
	mlaMode := framework.MLADownProjReplicated
	if a.MLA != nil {
		mlaMode = fw.MLADownProj
	}
	switch {
	case !tp:
	case mlaMode == framework.MLADownProjDuplicated && l.SP:
		// The layer input is not gathered: the two up-projections' inputs and the
		// rotary key are; the output projection reduce-scatters.
		attn.fwd[cAG] += 3
		attn.fwd[cRS]++
		attn.bwd[cAG] += 3
		attn.bwd[cRS] += 3
	case mlaMode == framework.MLADownProjDuplicated:
		attn.fwd[cAR]++
		attn.bwd[cAR] += 2
	default:
		pair(&attn)
		if mlaMode == framework.MLADownProjColumn {
			if l.SP {
				attn.fwd[cAG] += 5
				attn.bwd[cAG] += 5
				attn.bwd[cRS] += 3
			} else {
				attn.fwd[cAG] += 2
				attn.bwd[cAR] += 3
			}
		}
	}
	mods := l.recomputeMask()
	if tp && a.MLA != nil && mods&rmMLAUp != 0 &&
		mlaMode != framework.MLADownProjReplicated && l.SP {
		attn.bwd[cAG] += 2 // the up-projections' gathers again
	}
	// The MLP half.
	switch {
	case !isMoE:
		pair(&attn)
		if mods&rmMLP != 0 {
			addRecompute(&attn, pairColls(tp && !ub, l.SP))
		}
	case !l.moeDispatcher():
		// TP without SP: every TP rank holds all tokens and the MoE MLP is reduced
		// like a dense one.
		pair(&moeBlock)
	default:
		if sh := a.MoE.SharedExperts; sh > 0 && tp {
			if l.OverlapSharedExpert {
				if l.SP {
					// pre_forward_comm gathers the shared experts' input
					// before the dispatcher's sync (token_permutation), the
					// rest after it.
					moeBlock.fwd[cAG]++
					moeBlock.preFwd[cAG]++
					moeBlock.fwd[cRS]++
					moeBlock.bwd[cAG]++
					moeBlock.bwd[cRS]++
				} else {
					moeBlock.fwd[cAR]++
					moeBlock.bwd[cAR]++
				}
			} else {
				pair(&moeBlock)
			}
		}
		if req.Training.MoEDispatcher != DispatchDeepEP && (l.EP > 1 || l.etp() > 1) {
			if l.EP > 1 {
				moeBlock.fwd[cA2A] += 3
				moeBlock.bwd[cA2A] += 3
			}
			if l.etp() > 1 {
				moeBlock.fwd[cAG] += 2
				moeBlock.fwd[cRS]++
				moeBlock.bwd[cRS] += 2
				moeBlock.bwd[cAG]++
			}
		}
		if mods&rmMoE != 0 {
			addRecompute(&moeBlock, moeBlock.fwd)
		}
	}
	if isMoE && a.MoE.Groups > 0 && l.TP*l.CP > 1 {
		// In the router: before the dispatcher's sync.
		moeBlock.fwd[cAG]++
		moeBlock.preFwd[cAG]++
		moeBlock.bwd[cRS]++
	}
	return
}

// dtensorCollectiveCalls counts the collectives of one layer under a framework
// whose parallelism runs through DTensor, the functional collectives and FSDP2
// (framework.Profile.DTensorCollectives: torchtitan), for one micro-batch, as
// layerCollectiveCalls does for Transformer Engine layers:
//
//   - FSDP2 (fully_shard on every transformer block, ZeRO-3 over DP > 1:
//     torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py) all-gathers the
//     block's parameters forward (all_gather_into_tensor) and again backward
//     (reshard_after_forward), and reduce-scatters its gradients
//     (reduce_scatter_tensor): c10d calls. torchtitan shards a MoE layer's routed
//     experts as their own FSDP2 unit over the ranks expert parallelism leaves
//     (parallelize_llama4 / parallelize_deepseekv3: fully_shard(moe.experts,
//     mesh=dp_mod_ep)), one more of each.
//   - Tensor parallelism, always with sequence parallelism (the Llama TP plan:
//     PrepareModuleInput gathers the normed input Shard(1) → Replicate before
//     the column-parallel projections, RowwiseParallel reduce-scatters the
//     output to Shard(1)): per attention and per MLP one all-gather and one
//     reduce-scatter forward, and their transposes backward (the gradient of the
//     gather is reduce-scattered, of the scatter gathered) — DTensor
//     redistributes through the functional collectives. Async TP
//     (Layout.OverlapTP: torch.compile's micro-pipeline TP) replaces them with
//     symmetric-memory fused matmuls: not counted.
//   - Expert parallelism (torchtitan/distributed/expert_parallel.py at
//     03a13843, ExpertParallel and its Float8 and MXFP8 forms): the dispatch
//     exchanges the token counts per expert (funcol's all_to_all_single, then
//     the splits copied to the host: the sync moeHost prices) and all-to-alls
//     the tokens
//     (all_to_all_single_autograd), the combine all-to-alls them back: three
//     functional all-to-alls forward, two backward (the counts carry no
//     gradient).
func dtensorCollectiveCalls(req *Request, moe bool) (attn, moeBlock layerColls) {
	l := &req.Layout
	isMoE := moe && req.Model.MoE != nil
	if l.ZeRO == 3 && l.DP > 1 {
		attn.fwd[cAG]++
		attn.bwd[cAG]++
		attn.bwd[cRS]++
		if isMoE && l.EP > 1 && l.DP > l.EP {
			moeBlock.fwd[cAG]++
			moeBlock.bwd[cAG]++
			moeBlock.bwd[cRS]++
		}
	}
	if l.TP > 1 && !l.OverlapTP {
		attn.funFwd[cAG]++
		attn.funFwd[cRS]++
		attn.funBwd[cAG]++
		attn.funBwd[cRS]++
		mlp := &attn
		if isMoE {
			mlp = &moeBlock
		}
		mlp.funFwd[cAG]++
		mlp.funFwd[cRS]++
		if isMoE {
			// The MoE module's input gathered before the router, so before
			// the dispatch's sync (torchtitan's PrepareModuleInputOutput on
			// "moe"); its output scattered after it.
			mlp.funPreFwd[cAG]++
		}
		mlp.funBwd[cAG]++
		mlp.funBwd[cRS]++
	}
	if isMoE && l.EP > 1 {
		moeBlock.funFwd[cA2A] += 3
		moeBlock.funBwd[cA2A] += 2
		// The token counts' exchange precedes the sync that copies them to
		// the host (_token_dispatch: all_to_all_single, then .tolist()).
		moeBlock.funPreFwd[cA2A]++
	}
	return
}

// pairColls is the forward collectives of one column- and row-parallel module
// pair (none without TP through torch.distributed).
func pairColls(on, sp bool) [4]float64 {
	var n [4]float64
	switch {
	case !on:
	case sp:
		n[cAG], n[cRS] = 1, 1
	default:
		n[cAR] = 1
	}
	return n
}

// addRecompute adds forward collectives that run again before the backward pass.
func addRecompute(c *layerColls, fwd [4]float64) {
	for i := range fwd {
		c.bwd[i] += fwd[i]
	}
}
