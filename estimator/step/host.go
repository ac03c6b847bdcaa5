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
}

// layerHost prices the host side of one layer's forward: with the framework's
// layers built of Transformer Engine modules (framework.Profile.TELayers), each
// module's call (teModuleHostUs) and the eager operators between them; otherwise
// the generic launch count (Constants.KernelsPerLayer launches of
// Constants.KernelLaunchUs); with CUDA graphs one graph launch. All of it scaled
// by the node's CPU (hostOpScale).
func (e *Estimator) layerHost(req Request, moe bool) layerHostCosts {
	k := &e.k
	a, t := req.Model, req.Training
	s := hostOpScale(req.Cluster.Spec)
	c := layerHostCosts{op: k.EagerOpHostUs * 1e-6 * s, module: teModuleHostUs * 1e-6 * s, routerOps: moeRouterOps}
	fw, err := framework.Lookup(t.Framework)
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
		c.layer = teLayerModules(a, moe)*c.module + ops*c.op
	default:
		c.layer = k.KernelLaunchUs * 1e-6 * k.KernelsPerLayer * s
	}
	return c
}

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
