package step

import (
	"fmt"
	"math"
	"slices"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/model"
)

// layerTimes is one layer's compute for one micro-batch on one GPU, in seconds.
type layerTimes struct {
	fwd, bwd         float64
	bwdW             float64 // the weight-gradient GEMMs inside bwd
	attnFwd, attnBwd float64 // the attention core (scores, softmax, AV) inside fwd/bwd
	// cpReorder is what Transformer Engine's all-to-all context parallelism copies
	// around its all-to-alls, inside each of fwd and bwd (cpA2AReorderBytes).
	cpReorder float64
	// opsFwd is what op-level selective checkpointing recomputes of fwd: every
	// memory-bound op and every second matmul in execution order (RecomputeOps).
	opsFwd float64
	// weightCast is one fp8 cast of the layer's matmul weights (fp8 only).
	weightCast float64
	// castCols is the part of the fp8 casts inside fwd made for the backward pass
	// alone: the column-wise (transposed) copies of the matmul inputs, and of the
	// weights where fwd casts them (BackwardOnlyCasts).
	castCols float64
	// offloadFwd and offloadBwd are what the activation offload's copies add to fwd
	// and bwd (Layout.OffloadActivations).
	offloadFwd, offloadBwd float64
	// modsFwd is what selective recomputation runs again of fwd: the modules of
	// Layout.RecomputeModules (the attention core by default); modsFLOPs its FLOPs.
	modsFwd, modsFLOPs float64
	// shared is the shared experts' GEMMs inside fwd and bwd (MoE layers).
	shared float64
	// sharedTPGEMM are the shared experts' forward GEMMs next to their own TP
	// collectives (MoE layers): the up (and gate) projection after the input's
	// all-gather, the down projection before the reduce-scatter.
	sharedTPGEMM [2]float64
	// mlaRoPEFwd and mlaRoPEBwd are MLA's unfused rotary embedding and the cats
	// around it inside fwd and bwd (mlaUnfusedRoPEBytes).
	mlaRoPEFwd, mlaRoPEBwd float64
	// permuteLoop is what Transformer Engine's fused permutation before TE PR
	// #1927 adds to each of fwd and bwd (permuteExpertLoop; MoE layers).
	permuteLoop float64
	// gluClampFwd and gluClampBwd are the unfused clamp's passes inside fwd and
	// bwd (gluClampUnfused).
	gluClampFwd, gluClampBwd float64
	// mlpFwd, mlpBwd and mlpBwdW are the MoE block's part between its dispatch
	// and its combine (MoE layers): the received tokens' permutation, the routed
	// experts and their activations, the un-permutation (moePost, forward), their
	// backward and, inside it, the experts' weight-gradient GEMMs — the "mlp" node
	// Megatron-Core's EP all-to-all overlap runs between the all-to-alls
	// (epOverlapLayer); the rest of the layer is its "pre_dispatch_computation".
	mlpFwd, mlpBwd, mlpBwdW float64
	// expertBiasFwd and expertBiasBwd are the experts' second bias applied by
	// separate kernels inside fwd and bwd (expertBiasUnfused).
	expertBiasFwd, expertBiasBwd float64
	// expertPadFwd and expertPadBwd are TEGroupedMLP's fp8 padding and unpadding
	// copies inside fwd and bwd (fp8GroupedExpertPadding).
	expertPadFwd, expertPadBwd float64
	// elemFwd and elemBwd are the layer's elementwise kernels inside fwd and bwd:
	// norms, residual adds, rotary and the MLP's activation at the HBM rate.
	elemFwd, elemBwd float64
	// hostFwd and hostBwd are what the host's issue adds to fwd and bwd beyond
	// the GPU's work (fwd, bwd less the GPU's time, the dispatcher sync's stall
	// left out): a kernel launch returns to the host before the kernel runs (CUDA
	// C++ Programming Guide, "Asynchronous Concurrent Execution"), so the GPU idles
	// that long between the host's kernels, and communication exposed on its
	// stream (tpOverlap) runs in that time before it lengthens the layer — the
	// layer takes max(host issue, GPU work + exposed communication).
	hostFwd, hostBwd float64
	// tpGEMM are the forward GEMM times next to the layer's four TP collectives
	// with sequence parallelism: the attention's input projections (after the
	// all-gather), its output projection (before the reduce-scatter), the MLP's up
	// (and gate) and its down projection — what comm-GEMM overlap hides them under.
	tpGEMM [4]float64
	// FLOPs of the forward, and of what selective and op-level recomputation run
	// again (attention counted in full, as model FLOPs count it).
	fwdFLOPs, attnFLOPs, opsFLOPs float64
}

// layerCompute times one layer: its GEMMs at shape-dependent efficiency (forward;
// backward as the data-gradient and weight-gradient GEMMs of each), the attention
// core at the attention efficiency, the elementwise kernels at HBM bandwidth, never
// faster than the host can launch the layer's kernels.
func (e *Estimator) layerCompute(req Request, r *gpuRates, tokens, sLocal, s float64, moe bool) layerTimes {
	return e.layerComputeAt(&req, r, tokens, sLocal, s, moe)
}

// layerComputeAt is layerCompute of *req, which it only reads (by address: a
// request is about 1 kB, and an estimate without a BoundsCache times its layers
// each time).
func (e *Estimator) layerComputeAt(req *Request, r *gpuRates, tokens, sLocal, s float64, moe bool) layerTimes {
	a, l := &req.Model, &req.Layout
	k := &e.k
	t := float64(l.TP)
	h, f := float64(a.Hidden), float64(a.FFN)
	// Attention widths relative to the hidden size: queries (and keys), the keys and
	// values together, the attention output (1, 2g/a and 1 for grouped-query
	// attention without head_dim; MLA's per-head keys and values otherwise).
	qw, kvw, vw := float64(a.QDim())/h, float64(a.KVSavedDim())/h, float64(a.VOutDim())/h
	mlpMats := 2.0
	if a.GatedMLP {
		mlpMats = 3
	}
	var fwd, bwd float64
	var lt layerTimes
	var moeBytes float64 // the MoE layer's memory-bound traffic, forward
	// moePost is the GPU time of the MoE block's forward after the dispatcher's
	// device-to-host sync (permutation, experts and their activations, shared
	// experts, un-permutation);
	// moeLocal and moeGrouped its local experts and whether they run grouped.
	var moePost, moeLocal float64
	var moeExpertGEMMs float64 // the routed experts' forward GEMMs, inside moePost
	var moeGrouped bool
	mods := l.recomputeMask()
	// cur are the rates of the GEMMs being added: r, or the routed experts' own
	// (expertRates).
	cur := r
	// again prices a GEMM of a recomputed module once more.
	again := func(bit uint8, g gemm) {
		if mods&bit != 0 {
			lt.modsFwd += k.gemmTime(g, cur)
			lt.modsFLOPs += g.flops()
		}
	}
	// The weight-gradient GEMMs accumulate into the step's gradients.
	accBytes := wgradAccumulationBytes(req.Training.Optimizer.GradBytes)
	pair := 0 // the TP collective the next GEMMs sit next to (layerTimes.tpGEMM)
	// wKernels are the weight-gradient GEMMs' launches: one a GEMM, one a
	// grouped GEMM's group.
	var wKernels float64
	add := func(g gemm) {
		lt.fwdFLOPs += g.flops()
		gt := k.gemmTime(g, cur)
		fwd += gt
		lt.tpGEMM[pair] += gt
		rw := *cur
		rw.accBytes = accBytes
		wgrad := k.gemmTime(gemm{g.k, g.n, g.m, g.count, g.grouped}, &rw) // dB = Aᵀ·dC, added to the gradient
		bwd += k.gemmTime(gemm{g.m, g.k, g.n, g.count, g.grouped}, cur) + wgrad
		lt.bwdW += wgrad
		wKernels += g.count
		if g.grouped {
			wKernels -= g.count - 1
		}
	}
	if m := a.MLA; m != nil {
		// Multi-head latent attention: the down-projections (to the latents) as the
		// framework runs them under TP (mlaDownShape), the up-projections split by
		// heads.
		qr, kvr, rope := float64(m.QLoRARank), float64(m.KVLoRARank), float64(m.QKRopeDim)
		dm, dn := mlaDownShape(*req, *l)
		if qr > 0 {
			add(gemm{tokens * dm, qr * dn, h, 1, false})
			add(gemm{tokens, h * qw / t, qr, 1, false})
			again(rmMLAUp, gemm{tokens, h * qw / t, qr, 1, false})
		} else {
			add(gemm{tokens, h * qw / t, h, 1, false})
		}
		add(gemm{tokens * dm, (kvr + rope) * dn, h, 1, false})
		add(gemm{tokens, h * (kvw - rope*float64(a.Heads)/h) / t, kvr, 1, false}) // keys without their shared rotary part, values
		again(rmMLAUp, gemm{tokens, h * (kvw - rope*float64(a.Heads)/h) / t, kvr, 1, false})
	} else if fp8KVIn16Bits(req) {
		// Q in fp8, K and V as 16-bit linears (Training.FP8KVIn16Bits).
		add(gemm{tokens, h * qw / t, h, 1, false}) // Q, column parallel
		rr := routerRates(r)
		cur = &rr
		add(gemm{tokens, h * kvw / t, h, 1, false}) // K and V
		cur = r
	} else {
		add(gemm{tokens, h * (qw + kvw) / t, h, 1, false}) // QKV, column parallel
	}
	pair = 1
	add(gemm{tokens, h, h * vw / t, 1, false}) // output projection, row parallel
	pair = 2
	// Op-level checkpointing (torchtitan's policy saves every matmul output but those
	// of even count in the layer) recomputes the 2nd, 4th and 6th matmul as the layer
	// runs them one by one — Q, K, V, output, then the MLP's gate, up, down (or up,
	// down): the K and output projections and the MLP's up (gated) or down matrix.
	var ops float64
	recompute := func(g gemm) {
		if l.Recompute != RecomputeOps {
			return // priced only when it is the policy: this is the planner's inner loop
		}
		lt.opsFLOPs += g.flops()
		ops += k.gemmTime(g, cur)
	}
	recompute(gemm{tokens, h * kvw / 2 / t, h, 1, false})
	recompute(gemm{tokens, h, h * vw / t, 1, false})
	act := mlpMats * f / t // elementwise MLP width
	if moe && a.MoE != nil {
		ef := float64(a.MoE.ExpertFFN)
		if ef == 0 {
			ef = f
		}
		local := float64(a.MoE.Experts / max(1, l.EP))
		// Tokens each local expert of the busiest rank sees: the mean, times the
		// router's imbalance (capped where tokens are dropped).
		perExpert := tokens * float64(a.MoE.TopK) / local * req.Training.moeLoad(l.EP)
		if req.Training.MoECapacityFactor > 0 && perExpert > 0 {
			// An expert's capacity is a whole number of tokens, rounded up
			// (megatron/core/transformer/moe/moe_utils.py get_capacity: ceil(tokens
			// ÷ experts × capacity factor)): however small the factor, an expert
			// that is sent a token computes at least one.
			perExpert = max(perExpert, 1)
		}
		// The local experts' GEMMs run as one grouped GEMM unless the framework
		// loops over them.
		grouped := true
		fw, fwErr := framework.Get(req.Training.Framework)
		fwOK := fwErr == nil
		if fwOK && fw.SequentialExpertGEMMs {
			grouped = false
		}
		// With expert tensor parallelism et < t, each rank takes et/t of the tokens
		// through experts split et ways: the same work in other shapes.
		et := float64(l.etp())
		mE := perExpert * et / t
		beforeExperts, beforeExpertsBwd, beforeExpertsW := fwd, bwd, lt.bwdW
		re := k.expertRates(&req.Training, r)
		cur = &re
		add(gemm{mE, (mlpMats - 1) * ef / et, h, local, grouped})
		pair = 3
		add(gemm{mE, h, ef / et, local, grouped})
		pair = 2
		moePost = fwd - beforeExperts
		moeExpertGEMMs = moePost
		lt.mlpBwd, lt.mlpBwdW = bwd-beforeExpertsBwd, lt.bwdW-beforeExpertsW
		moeLocal, moeGrouped = local, grouped
		if expertBiasUnfused(req) {
			// The second GEMM's output, mE rows of h for each local expert.
			b := mE * local * h
			lt.expertBiasFwd, lt.expertBiasBwd = b*expertBiasFwdBytes/r.hbm, b*expertBiasBwdBytes/r.hbm
			moePost += lt.expertBiasFwd
		}
		if fp8GroupedExpertPadding(req, r) {
			// The experts' input rows padded and their output rows unpadded, mE
			// rows of h for each local expert, in and out.
			b := mE * local * h
			lt.expertPadFwd, lt.expertPadBwd = b*fp8ExpertPadBytes/r.hbm, b*fp8ExpertPadBytes/r.hbm
			moePost += lt.expertPadFwd
		}
		again(rmMoE, gemm{mE, (mlpMats - 1) * ef / et, h, local, grouped})
		again(rmMoE, gemm{mE, h, ef / et, local, grouped})
		recompute(gemm{mE, ef / et, h, local, grouped}) // up (gated) or down: the same work
		cur = r
		// The router: each rank scores its own tokens (its sequence-parallel share
		// under Megatron-Core's dispatcher).
		routerTokens := tokens
		if l.moeDispatcher() {
			routerTokens = tokens / t
		}
		if g := (gemm{routerTokens, float64(a.MoE.Experts), h, 1, false}); routerFP32Linear(req) && r.peak32 > 0 {
			f, b := k.fp32RouterTimes(g, r)
			lt.fwdFLOPs += g.flops()
			fwd += f
			bwd += b
			lt.tpGEMM[pair] += f
		} else {
			rr := routerRates(r)
			cur = &rr
			add(g)
			cur = r
		}
		act = mlpMats * ef / t * float64(a.MoE.TopK)
		// Memory-bound MoE kernels, per token this rank routes: the router's
		// softmax (or sigmoid), top-k and auxiliary loss over fp32 scores (write the
		// logits, read and write the probabilities, read them for top-k and the
		// loss: 20 B per expert); the permutation gathering k copies of each token
		// into expert order (read and write k·h) and the un-permutation summing
		// them back (read k·h, write h), in 16 bits; Megatron-Core also re-lays the
		// received chunks out by local expert after the dispatch and back before
		// the combine (read and write k·h each) where moeLocalRelayout says so.
		kf := float64(a.MoE.TopK) * req.Training.moeLoad(l.EP)
		perm := 3*kf + 1
		if moeLocalRelayout(req.Training, local) {
			perm += 4 * kf
		}
		moeBytes = routerTokens * (moeRouterBytesPerExpert*float64(a.MoE.Experts) + 2*perm*h)
		moePost += routerTokens * 2 * perm * h / r.hbm
		if fwOK && fw.EagerMoEGlue {
			g := routerTokens * h * eagerMoEGlueBytes(kf)
			moeBytes += g
			moePost += g / r.hbm
		}
		if req.Training.MoEPermuteFusion && fwOK && fw.MoEPermuteExpertLoop {
			// Transformer Engine's fused permutation before TE PR #1927: each
			// kernel as long as its chain of loads over the experts
			// (permuteExpertLoop). The permutation's backward runs the
			// un-permutation's kernel and the other way round.
			// Under the flex dispatcher on DeepEP the kernels permute what a rank
			// received (at most k copies of each token it routes, each to about
			// one local expert) over its local experts only (Megatron-Core 0.12
			// _DeepepManager.get_permuted_hidden_states_by_experts: a routing map
			// of the received tokens × the local experts).
			permTokens, permExperts, permK := routerTokens, float64(a.MoE.Experts), kf
			if req.Training.MoEDispatcher == DispatchDeepEP {
				permTokens, permExperts, permK = routerTokens*kf, local, 1
			}
			x := permuteExpertLoop(permTokens, permExperts, h, permK, r)
			lt.permuteLoop = x
			fwd += x
			bwd += x
			moePost += x
		}
		if mods&(rmMoEAct|rmMoE) != 0 {
			// The activation function again: read its inputs, write its output.
			lt.modsFwd += 2 * tokens * act / r.hbm
		}
		if sh := float64(a.MoE.SharedExperts); sh > 0 {
			// Shared experts: every token, one dense MLP of sh·ExpertFFN.
			before, beforeFwd := fwd+bwd, fwd
			add(gemm{tokens, (mlpMats - 1) * sh * ef / t, h, 1, false})
			lt.sharedTPGEMM[0] = fwd - beforeFwd
			pair = 3
			add(gemm{tokens, h, sh * ef / t, 1, false})
			lt.sharedTPGEMM[1] = fwd - beforeFwd - lt.sharedTPGEMM[0]
			lt.shared = fwd + bwd - before
			moePost += lt.shared / 3 // the forward's share: backward is twice its GEMMs
			again(rmShared|rmMoE, gemm{tokens, (mlpMats - 1) * sh * ef / t, h, 1, false})
			again(rmShared|rmMoE, gemm{tokens, h, sh * ef / t, 1, false})
			pair = 2
			recompute(gemm{tokens, sh * ef / t, h, 1, false})
			act += mlpMats * sh * ef / t
		}
	} else {
		add(gemm{tokens, (mlpMats - 1) * f / t, h, 1, false})
		pair = 3
		add(gemm{tokens, h, f / t, 1, false})
		again(rmMLP, gemm{tokens, (mlpMats - 1) * f / t, h, 1, false})
		again(rmMLP, gemm{tokens, h, f / t, 1, false})
		if mods&rmMLP != 0 {
			lt.modsFwd += 2 * tokens * act / r.hbm
		}
		if a.GatedMLP {
			recompute(gemm{tokens, f / t, h, 1, false})
		} else {
			recompute(gemm{tokens, h, f / t, 1, false})
		}
	}

	// Attention core: QKᵀ and AV, 2·2·s_q·s_kv·h FLOPs per sequence over the heads of
	// this rank; causal flash attention skips the masked half, and its backward
	// recomputes the scores (2.5× the forward's FLOPs, at the kernel's backward speed).
	b := tokens / sLocal
	// Sliding-window layers attend to fewer keys (model.Arch.AttentionSpan, the
	// mean over the layers).
	causalAttn := 2 * b * sLocal * s * h * (qw + vw) / t
	attn := causalAttn * a.AttentionSpan(int(s))
	lt.attnFLOPs = attn
	lt.fwdFLOPs += attn
	if req.Training.UnfusedAttention {
		at := attn / (r.peak16 * r.attnEff)
		// Scores, softmax and dropout go through HBM: about unfusedScoreBytes per
		// score written and read forward, twice that backward.
		at += unfusedScoreBytes * b * float64(a.Heads) / t * sLocal * s / r.hbm
		lt.attnFwd, lt.attnBwd = at, 2*at
	} else {
		// The fused kernel's speed depends on the kernel and on the key length of
		// one call: a ring step's local block under ring context parallelism, the
		// whole sequence otherwise (Ulysses attends over it on fewer heads).
		skv := s
		if l.CP > 1 && !l.CPAllToAll {
			skv = sLocal
		}
		headDim := float64(a.QDim()) / float64(max(1, a.Heads))
		fw, flash2 := req.Training.Framework, req.Training.FlashAttention2
		f, bw := fusedAttentionTimes(r, fw, flash2, skv, headDim, causalAttn*causalAttentionShare)
		// A windowed layer takes the tiles its kernel computes, not its share of
		// the scores (windowTileShare); the mean over the layers.
		if local := a.WindowedLayers(); local > 0 {
			sf, sb := windowTileShare(r.arch, fw, flash2, headDim, int(s), a.SlidingWindow)
			wl := float64(local) / float64(a.Layers)
			f *= wl*sf + 1 - wl
			bw *= wl*sb + 1 - wl
		}
		lt.attnFwd, lt.attnBwd = f, bw
	}
	fwd += lt.attnFwd
	bwd += lt.attnBwd
	if c := cpA2AReorderBytes(req, tokens, h*(qw+kvw+vw)/t); c > 0 {
		// Transformer Engine's all-to-all context parallelism copies the query,
		// key, value and output around its all-to-alls (cpA2AReorderBytes): the
		// forward's before and after the attention core, the backward's around
		// the output gradient's and the input gradients' all-to-alls, inside the
		// attention module a recomputation runs again.
		lt.cpReorder = c / r.hbm
		fwd += lt.cpReorder
		bwd += lt.cpReorder
		if mods&rmCoreAttn != 0 {
			lt.modsFwd += lt.cpReorder
		}
	}

	// Elementwise traffic: norms, residual adds, rotary, activation function, in 16 bits.
	hPart := elementwisePerHidden * h
	if l.SP {
		hPart /= t
	}
	elem := 2 * tokens * (hPart + act) / r.hbm
	lt.elemFwd, lt.elemBwd = elem, 2*elem
	fwd += elem + moeBytes/r.hbm
	if moe && a.MoE != nil {
		moePost += 2 * tokens * act / r.hbm // the experts' activations, after the sync
	}
	bwd += 2*elem + moeBytes/r.hbm // the gradients permuted back the same way
	if m := a.MLA; m != nil && mlaRoPEUnfused(req) {
		// MLA's rotary embedding as PyTorch operators and the cats that build the
		// query, key and value (mlaUnfusedRoPEBytes), on the whole sequence's
		// tokens for the rank's heads; inside the up-projections' checkpoint, so
		// recomputed with mla_up_proj.
		bf, bb := mlaUnfusedRoPEBytes(m, float64(a.Heads)/t)
		rf, rb := tokens*bf/r.hbm, tokens*bb/r.hbm
		lt.mlaRoPEFwd, lt.mlaRoPEBwd = rf, rb
		fwd += rf
		bwd += rb
		if mods&rmMLAUp != 0 {
			lt.modsFwd += rf
		}
	}
	if gluClampUnfused(req) {
		// The clamp's own passes over the first GEMM's output (the gate and up
		// halves, act's first mlpMats−1 parts of mlpMats).
		glu := tokens * act * (mlpMats - 1) / mlpMats
		cf, cb := glu*gluClampFwdBytes/r.hbm, glu*gluClampBwdBytes/r.hbm
		lt.gluClampFwd, lt.gluClampBwd = cf, cb
		fwd += cf
		if moe {
			moePost += cf
		}
		bwd += cb
		if moe && mods&(rmMoEAct|rmMoE) != 0 || !moe && mods&rmMLP != 0 {
			lt.modsFwd += cf
		}
	}
	if lt.expertBiasFwd > 0 {
		fwd += lt.expertBiasFwd
		bwd += lt.expertBiasBwd
		if mods&rmMoE != 0 {
			lt.modsFwd += lt.expertBiasFwd
		}
	}
	if lt.expertPadFwd > 0 {
		fwd += lt.expertPadFwd
		bwd += lt.expertPadBwd
		if mods&rmMoE != 0 {
			lt.modsFwd += lt.expertPadFwd
		}
	}
	lt.opsFwd = ops + elem
	if l.Recompute == RecomputeOps && r.arch == hardware.Blackwell && !req.Training.UnfusedAttention {
		// The framework's op save list leaves out the attention kernel it runs on
		// Blackwell (torchtitan's cuDNN attention before PR #2095,
		// framework.Profile.OpSACRecomputesBlackwellAttention): the backward runs
		// the attention forward again.
		if fw, err := framework.Get(req.Training.Framework); err == nil && fw.OpSACRecomputesBlackwellAttention {
			lt.opsFwd += lt.attnFwd
			lt.opsFLOPs += lt.attnFLOPs
		}
	}
	if mods&rmCoreAttn != 0 {
		lt.modsFwd += lt.attnFwd
		lt.modsFLOPs += lt.attnFLOPs
	}
	if mods&rmLayerNorm != 0 {
		// Both norms again: read the input, write the output, 2 B each.
		n := 2 * 2 * 2 * tokens * h
		if l.SP {
			n /= t
		}
		lt.modsFwd += n / r.hbm
	}

	if r.fp8 {
		fwd, bwd = e.fp8Casts(*req, r, &lt, fwd, bwd, tokens, moe)
	}

	// The host issues the layer (layerHost, on this node's CPU); its backward
	// launches twice as many kernels.
	hc := e.layerHostAt(req, moe)
	// The collectives it issues through torch.distributed cost the host their own
	// time (layerCollectiveCalls), forward and backward as counted.
	launch := hc.layer
	// The unfused attention's own operators under Transformer Engine layers
	// (layerHostCosts.attnFwd, attnBwd) come with the collectives' host time.
	collFwd, collBwd := hc.collFwd+hc.attnFwd, hc.collBwd+hc.attnBwd
	lt.fwd = max(fwd, launch+collFwd)
	hostB := 2*launch + collBwd // the backward's host issue
	var stall float64
	if moe && a.MoE != nil {
		h := moeHost(req.Training, *l, moeLocal, moeGrouped, hc)
		if gluClampUnfused(req) {
			h.post += gluClampOps * hc.op
		}
		if expertBiasUnfused(req) {
			h.post += (expertBiasOpsPerExpert*moeLocal + expertBiasOps) * hc.op
		}
		lt.fwd = max(fwd, launch+collFwd+h.pre+h.post)
		hostB = 2*(launch+h.pre+h.post-hc.moeCollFwd) + collBwd + hc.moeCollBwd
		if h.sync {
			// The host's work on each side of the sync (syncedForward). The
			// backward pass has no sync: the all-to-alls' split sizes and the
			// grouped GEMMs' token counts are host lists the forward saved
			// (core_v0.12.0 tensor_parallel/mappings.py _AllToAll.backward;
			// Transformer Engine's GroupedLinear m_splits).
			hostPost := h.post - hc.moeCollPreSync + hc.postSync
			hostPre := launch + collFwd + h.pre + hc.moeCollPreSync - hc.postSync
			lt.fwd = syncedForward(fwd, moePost, h.stall, hostPre, hostPost)
			stall = h.stall // the GPU's queue drained: no work of it to run then
		}
	}
	lt.bwd = max(bwd, hostB)
	if moe && a.MoE != nil {
		// The mlp node's backward: the experts' GEMMs' (already in mlpBwd) and
		// twice the forward's memory-bound work, as the layer's elementwise
		// backward is priced (elem).
		lt.mlpFwd = min(moePost, lt.fwd)
		lt.mlpBwd = min(lt.bwd, lt.mlpBwd+2*max(0, moePost-moeExpertGEMMs))
		lt.mlpBwdW = min(lt.mlpBwdW, lt.mlpBwd)
	}
	if SplitsWeightGrad(l.Schedule) {
		// The weight-gradient GEMMs run as a block of their own, issued apart
		// from the rest of the backward (Qi et al. 2023, "Zero Bubble Pipeline
		// Parallelism" §2: B and W scheduled separately; their implementation,
		// sail-sg/zero-bubble-pipeline-parallelism megatron/core/
		// weight_grad_store.py at 47c2c7a, WeightGradStore.put keeps each linear
		// layer's weight-gradient call and pop runs them one by one as the W
		// pass), so each block takes the longer of its
		// GPU work and its own host issue: the W block its GEMMs' launches (one
		// eager operator each, Constants.EagerOpHostUs), B the rest of the
		// backward's host time. Together never less than the backward as one
		// pass, and neither shrinks as GPU work grows.
		hw, gw := min(hostB, wKernels*hc.op), min(bwd, lt.bwdW)
		lt.bwdW = max(gw, hw)
		lt.bwd = max(bwd-gw, hostB-hw) + lt.bwdW
	}
	lt.hostFwd, lt.hostBwd = max(0, lt.fwd-stall-fwd), max(0, lt.bwd-bwd)
	if l.OffloadActivations {
		lt.offloadFwd, lt.offloadBwd = offloadWaits(*req, lt, tokens, sLocal, s, moe)
		lt.fwd += lt.offloadFwd
		lt.bwd += lt.offloadBwd
	}
	return lt
}

// syncedForward prices the forward of a layer whose MoE dispatcher waits for the
// GPU (moeHost's sync): fwd is its GPU time, gpuPost the part after the sync,
// hostPre and hostPost the host's time to issue the layer up to the sync and after
// it, stall the GPU's idle time at the sync. The sync drains the GPU's queue: the
// GPU idles while the host finishes the copy and issues the next operator (stall).
// From one layer's sync to the next the host issues this layer's rest (hostPost)
// and then the next layer up to its sync (hostPre), and the GPU runs them in that
// order, each kernel no earlier than the host issued it, so it is done at the
// latest of: all its work (fwd); the rest issued, then its pre-sync work run
// (hostPost + fwd − gpuPost); everything issued (hostPost + hostPre). GPU work
// after the sync never makes the layer faster, and a layer whose GPU outlasts its
// host on both sides pays the stall alone.
func syncedForward(fwd, gpuPost, stall, hostPre, hostPost float64) float64 {
	gpuPre := fwd - min(gpuPost, fwd)
	return stall + max(fwd, hostPost+max(gpuPre, hostPre))
}

// offloadWaits is what one layer's activation offload adds to its forward and
// backward passes for one micro-batch: its saved activations (the bytes the memory
// model keeps for it) cross the host link during its forward pass, under the next
// layer's compute, and come back during the backward pass of the layer after it;
// a copy longer than the compute it runs under delays the layer by the difference
// (Calculon's offload overhead, max(0, offload time − block time); the copy
// engines leave the SMs free, and its HBM traffic — a few per cent of the HBM
// bandwidth — is not counted).
func offloadWaits(req Request, lt layerTimes, tokens, sLocal, s float64, moe bool) (fwd, bwd float64) {
	a, t, l := req.Model, req.Training, req.Layout
	mods := l.recomputeMask()
	if t.NoDropout {
		mods |= actNoDropout
	}
	load := 1.0
	if moe {
		load = t.moeLoad(l.EP)
	}
	bytes := activationBytes(&a, moe, sLocal, s, tokens/sLocal, l.TP, l.SP, l.Recompute, t.UnfusedAttention, mods, t.FP8Activations, load, mlaDownMode(t.Framework))
	c := activationCopy(req.Cluster, bytes)
	return max(0, c-lt.fwd), max(0, c-lt.bwd)
}

// expertRates are the rates of the routed experts' GEMMs: r, but on Blackwell at
// the efficiency of the framework's grouped-GEMM kernel where a measurement puts it
// below the model's (framework.Profile.BlackwellGroupedMMEfficiency: torch._grouped_mm
// and torchao's MXFP8 torch._scaled_grouped_mm as torchao measured them on B200 in
// October–November 2025), and under fp8 with Transformer Engine's per-tensor
// scaled expert GEMMs at Constants.TEExpertFP8Efficiency where it is set for the
// GPU generation (teExpertFP8). The tiles, waves and the roofline of gemmTime
// still apply.
func (k *Constants) expertRates(t *Training, r *gpuRates) gpuRates {
	re := *r
	if teExpertFP8(t, r) {
		if v := k.TEExpertFP8Efficiency[r.arch]; v > 0 {
			re.gemmEff = v
		}
	}
	if r.arch != hardware.Blackwell {
		return re
	}
	if fw, err := framework.Get(t.Framework); err == nil && fw.BlackwellGroupedMMEfficiency > 0 {
		re.gemmEff = min(re.gemmEff, fw.BlackwellGroupedMMEfficiency)
	}
	return re
}

// teExpertFP8 reports whether the routed experts' GEMMs are Transformer Engine's
// per-tensor scaled fp8 GEMMs: fp8 matmuls, a framework built on Transformer
// Engine's layers (framework.Profile.TELayers: Megatron-Core's TE layer spec, whose
// MoE experts are TE Linear or GroupedLinear modules), and delayed or current
// per-tensor scaling (not block, row or microscaled recipes, whose GEMMs are other
// kernels: DeepGEMM, cuBLAS's block-scaled or MXFP8 paths).
func teExpertFP8(t *Training, r *gpuRates) bool {
	if !r.fp8 {
		return false
	}
	switch t.FP8Recipe {
	case "", FP8Delayed, FP8Current:
	default:
		return false
	}
	fw, err := framework.Get(t.Framework)
	return err == nil && fw.TELayers
}

// moeHostTimes is the host side of an MoE block's forward in eager PyTorch.
type moeHostTimes struct {
	// pre and post are the host time of the operators before and after the
	// dispatcher's device-to-host sync; stall the GPU's idle time at it.
	pre, post, stall float64
	sync             bool
}

// Host operators of an MoE block's forward, each one eager PyTorch dispatch
// (Constants.EagerOpHostUs), counted from Megatron-Core's router (TopKRouter:
// gating GEMM, score function, top-k, probability normalisation, the routing map,
// the auxiliary loss's sum, mean and scale), MoEAlltoAllTokenDispatcher (token
// counts per expert and per rank, their all-gather over EP, the two all-to-alls,
// the sort of the received chunks by local expert and back) and moe_utils'
// permute / unpermute (the index and sort operators, or one fused kernel each).
const (
	moeRouterOps = 10 // before the sync: router and the dispatcher's token counts
	// moeSyncStallOps: at the sync the GPU idles for the blocking copy of the token
	// counts and the first operator the host issues after it.
	moeSyncStallOps       = 2
	moeDispatchOps        = 4 // the two all-to-alls and their split-size bookkeeping
	moeDispatchA2AOps     = 2 // of which the all-to-alls
	moePermuteOpsUnfused  = 6 // permute: the routing map's indices, sort, gather; unpermute: zeros, weight, scatter-add
	moePermuteOpsFused    = 2 // one kernel each way
	moeChunkSortOpsLocal  = 2 // split and concatenate by local expert, each way
	moeExpertOpsGrouped   = 3 // grouped up (and gate) GEMM, activation, grouped down GEMM
	moeExpertOpsPerExpert = 3 // the same per local expert when they run one by one
)

// moeHost prices the host side of one MoE block's forward. Megatron-Core's
// dropless all-to-all dispatcher (and a capacity factor without padding) copies
// the token counts to the host before the expert-parallel all-to-all
// (token_dispatcher.py: cuda_sync_point "before_ep_alltoall", or
// "before_permutation_1" with dropping): the host can no longer run ahead of the
// GPU there. Padding every expert to its capacity (training.moe_pad_to_capacity)
// fixes the split sizes and needs no sync — from Megatron-Core 0.11 on: before it
// the permutation itself asks the GPU for its output size (masked_select; framework.
// Profile.MoEPaddedPermuteSync), padded or not. The flex dispatcher on DeepEP
// synchronises once whatever the padding (Megatron-Core 2436e3d): DeepEP's
// dispatch has the host wait for the GPU's count of the tokens it receives before
// it allocates them (fused_a2a.py FusedDispatch.forward, "the CPU will wait for
// GPU's signal to arrive"). The counts per expert come back as a host tensor
// (FusedDispatch.forward: torch.tensor(num_recv_tokens_per_expert_list)), so the
// permutation's tokens_per_expert.sum().item()
// (_DeepepManager.get_permuted_hidden_states_by_experts) and the grouped MLP's
// tokens_per_expert.tolist() (experts.py TEGroupedMLP.forward) read host memory
// and leave the GPU's queue alone.
//
// Under Transformer Engine layers (layerHostCosts.te) the grouped expert GEMMs
// are two of its GroupedLinear modules, each a module's call; the router's
// operators are layerHostCosts.routerOps. Every operator costs the node's CPU
// its time (layerHostCosts.op, .module).
func moeHost(t Training, l Layout, local float64, grouped bool, c layerHostCosts) moeHostTimes {
	var h moeHostTimes
	perOp := c.op
	post := float64(moeDispatchOps)
	if c.a2a {
		// The two all-to-alls are priced as collectives (layerCollectiveCalls).
		post -= moeDispatchA2AOps
	}
	if t.MoEPermuteFusion {
		post += moePermuteOpsFused
	} else {
		post += moePermuteOpsUnfused
	}
	if moeLocalRelayout(t, local) {
		post += 2 * moeChunkSortOpsLocal
	}
	var modules float64
	switch {
	case grouped && c.te:
		// The two grouped GEMMs are GroupedLinear modules' calls (modules); the
		// activation between them stays an eager operator.
		post += moeExpertOpsGrouped - 2
		modules = 2
	case grouped:
		post += moeExpertOpsGrouped
	default:
		post += moeExpertOpsPerExpert * local
	}
	deepEP := t.MoEDispatcher == DispatchDeepEP
	h.sync = (!t.MoEPadToCapacity || deepEP || c.paddedSync) && (l.EP > 1 || local > 1)
	// Megatron-Core's dropless all-to-all dispatcher issues the permutation
	// before it waits (token_permutation: permute, then the sync point
	// "before_ep_alltoall", "before_permutation_2" or "before_finish" — a stream
	// synchronize at core_r0.10.0 and core_v0.11.0, the wait for the side
	// stream's copy at core_v0.12.0); with dropping ("before_permutation_1"), on
	// DeepEP (the wait is in the dispatch) and in torchtitan (the counts' .tolist()
	// precedes the permutation) it comes after.
	var permPre float64
	if h.sync && c.te && !deepEP && t.MoECapacityFactor == 0 {
		permPre = moePermuteOpsUnfused / 2
		if t.MoEPermuteFusion {
			permPre = moePermuteOpsFused / 2
		}
	}
	h.pre, h.post = c.routerOps*perOp, (post-permPre)*perOp+modules*c.module+c.moeCollFwd
	if h.sync {
		h.stall = moeSyncStallOps * perOp
	}
	if t.CUDAGraphs {
		// The graph holds what precedes the sync (Megatron-Core's moe_router and
		// moe_preprocess capture scopes); without a sync the whole block.
		h.pre = 0
		if !h.sync {
			h.post = 0
		}
	}
	h.pre += permPre * perOp
	return h
}

// A clamped gated MLP under a framework that clamps with PyTorch's operators
// (framework.Profile.GLUClampUnfused: Megatron-Core's weighted_bias_quick_geglu_impl)
// moves, per element of the first GEMM's output (the gate and up halves, 16 bits):
//   - forward: each half clamped (read 2 B, write 2 B) and the halves concatenated
//     (read 2 B, write 2 B): 8 B;
//   - backward: PyTorch's clamp_backward (torch/csrc/autograd/FunctionsManual.cpp)
//     is where(self <= max, grad, 0) on the gate half (the comparison: read 2 B,
//     write a 1-byte mask; where: read 1 + 2 B, write 2 B: 8 B) and
//     where((self >= min).logical_and_(self <= max), grad, 0) on the up half (two
//     comparisons, 3 B each, the and 3 B, where 5 B: 14 B), and chunk's backward
//     (split_backward) concatenates the two halves' gradients (read 2 B, write
//     2 B): (8 + 14) / 2 + 4 = 15 B.
//
// The forward's operators on the host: chunk, two clamps, cat.
const (
	gluClampFwdBytes = 8
	gluClampBwdBytes = 15
	gluClampOps      = 4
)

// gluClampUnfused tells whether req's model clamps its gated MLP's inputs with
// separate elementwise kernels.
func gluClampUnfused(req *Request) bool {
	if !req.Model.GLUClamp || !req.Model.GatedMLP {
		return false
	}
	fw, err := framework.Get(req.Training.Framework)
	return err == nil && fw.GLUClampUnfused
}

// The experts' second bias as Megatron-Core's TEGroupedMLP._apply_bias adds it
// (framework.Profile.ExpertBiasUnfused), per element of the second GEMM's output
// (16 bits), with the router's probabilities in fp32 (DeepEP's dispatch requires
// them so; PyTorch promotes a 16-bit tensor times an fp32 one to fp32):
//   - forward: b · p written in fp32 (4 B; the bias and the probabilities are a
//     row and a column), t + b·p reads 2 + 4 B and writes fp32 (10 B), torch.cat
//     of the experts' pieces reads and writes fp32 (8 B), .to(16 bits) reads 4 B
//     and writes 2 B (6 B): 28 B;
//   - backward: .to's backward casts the 16-bit gradient to fp32 (6 B); cat's
//     backward narrows (no copy); the sum's gradient for t is cast back to 16
//     bits (6 B); the product's gradients, grad · p summed to the bias and
//     grad · b summed to the probabilities, each write and read an fp32 product
//     (8 + 4 B twice): 36 B.
//
// On the host: the two splits, a product and a sum per local expert, the cat and
// the cast, eager operators after the dispatcher's sync.
const (
	expertBiasFwdBytes     = 28
	expertBiasBwdBytes     = 36
	expertBiasOpsPerExpert = 2
	expertBiasOps          = 4
)

// expertBiasUnfused tells whether req's model adds its routed experts' second
// bias with separate elementwise kernels.
func expertBiasUnfused(req *Request) bool {
	if req.Model.MoE == nil || !req.Model.MoE.Bias {
		return false
	}
	fw, err := framework.Get(req.Training.Framework)
	return err == nil && fw.ExpertBiasUnfused
}

// TEGroupedMLP's fp8 padding and unpadding (framework.Profile.FP8GroupedExpertPadding),
// per element of the experts' input and output rows (16 bits): forward, Transformer
// Engine's fused_multi_row_padding of the input into a new tensor (read 2 B, write
// 2 B) and the unpadding's torch.cat of the output's splits (read 2 B, write 2 B):
// 8 B; backward, the unpadding's fused_multi_row_padding of the output gradient and
// the padding's torch.cat of the input gradient's splits: 8 B.
const fp8ExpertPadBytes = 8

// fp8GroupedExpertPadding tells whether req's routed experts copy their tokens
// through Transformer Engine's fp8 padding and unpadding: fp8 matmuls, experts in
// Megatron-Core's TEGroupedMLP, a framework whose grouped MLP pads under fp8.
func fp8GroupedExpertPadding(req *Request, r *gpuRates) bool {
	if !r.fp8 || !req.Training.MoEGroupedGEMM || req.Model.MoE == nil {
		return false
	}
	fw, err := framework.Get(req.Training.Framework)
	return err == nil && fw.FP8GroupedExpertPadding
}

// moeLocalRelayout tells whether Megatron-Core's all-to-all dispatcher copies the
// tokens a rank receives into local-expert order after the dispatch, and back
// before the combine, as a kernel of its own. Without fused permutation it sorts
// the received chunks (moe_utils.sort_chunks_by_idxs: split and concatenate); with
// it the sort is one of Transformer Engine's fused kernels — except where the
// experts are padded to their capacity: then every rank's chunk has the same
// shape and the dispatcher re-lays them out with view(ranks, local experts,
// capacity, h).transpose(0, 1).contiguous(), a full copy whatever
// --moe-permute-fusion says (megatron/core/transformer/moe/token_dispatcher.py,
// MoEAlltoAllTokenDispatcher.token_permutation and token_unpermutation, drop_and_pad
// branch, the same in Megatron-Core 0.12 (7094270) and 0.14 (20d73fe)).
//
// The flex dispatcher (DispatchDeepEP: DeepEP's or HybridEP's kernels) has no such
// step: the tokens arrive one per rank they are routed to, and its managers put them
// in local-expert order in the permutation itself — _DeepepManager's
// get_permuted_hidden_states_by_experts permutes them over the dispatched routing
// map, _HybridEPManager's returns hybrid_ep_dispatch's output, already permuted by
// HybridEP (token_dispatcher.py at 26.04-alpha.rc2, 99a1081: sort_chunks_by_idxs is
// called in MoEAlltoAllTokenDispatcher only).
func moeLocalRelayout(t Training, local float64) bool {
	if t.MoEDispatcher == DispatchDeepEP {
		return false
	}
	return local > 1 && (!t.MoEPermuteFusion || t.MoEPadToCapacity)
}

// Transformer Engine's mask-map permutation kernels before TE PR #1927
// (framework.Profile.MoEPermuteExpertLoop).
const (
	// tePermuteMaxBlock is the widest block of the hidden dimension a program
	// copies at once: the largest BLOCK_SIZE of the kernels' autotune configurations
	// (64 … 1024 in transformer_engine/pytorch/triton/permutation.py, v2.1–v2.5),
	// the one that makes the fewest trips round the expert loop.
	tePermuteMaxBlock = 1024
	// tePermuteProgramsPerSM is how many of the kernels' programs an SM holds at
	// once: Triton's default of 4 warps a program (the configurations set no
	// num_warps) against the 64 resident warps of an SM of compute capability 9.0
	// and 10.0 (CUDA C++ Programming Guide, "Technical Specifications per Compute
	// Capability"; under its 32 resident blocks).
	tePermuteProgramsPerSM = 16
	// gpuL2HitLatency is one load served by the GPU's L2 cache: about 150 ns
	// within an L2 partition of a B200 (Chips and Cheese, "Nvidia's B200: Keeping
	// the CUDA Juggernaut Rolling", 2025). The row map a program walks (experts ×
	// tokens × 8 B: 4 MiB for 256 experts and 2 048 tokens) was written just
	// before and sits in L2; its entries for one token lie a row of the map apart
	// and the programs on an SM hold tokens an SM count apart, so L1 does not
	// serve them. Hopper's L2 is of the same design; the one value is used for
	// both.
	gpuL2HitLatency = 150e-9
)

// permuteExpertLoop is what one MoE layer's fused permutation and
// un-permutation take beyond their memory traffic (already priced) under
// Transformer Engine's kernels before TE PR #1927, for the forward pass (the
// backward's, the same kernels swapped, take as long). Each kernel gives every
// token the rank routes a program that, for each of ⌈h/1024⌉ blocks of the hidden
// dimension, loops over all the experts loading one entry of the row map and
// branching on it: a chain of dependent L2 loads, experts·⌈h/1024⌉ long, and the
// programs run in waves of tePermuteProgramsPerSM per SM. A kernel lasts the
// longer of its chain and its traffic: gathering k copies of each token (read and
// write k·h, 16 bits) and summing them back (read k·h, write h), as moeBytes
// counts them.
func permuteExpertLoop(tokens, experts, h, k float64, r *gpuRates) float64 {
	if tokens <= 0 || experts <= 0 {
		return 0
	}
	waves := 1.0
	if r.sms > 0 {
		waves = math.Ceil(tokens / (r.sms * tePermuteProgramsPerSM))
	}
	chain := waves * experts * math.Ceil(h/tePermuteMaxBlock) * gpuL2HitLatency
	permute := tokens * 2 * 2 * k * h / r.hbm
	unpermute := tokens * 2 * (k + 1) * h / r.hbm
	return max(0, chain-permute) + max(0, chain-unpermute)
}

// eagerMoEGlueBytes is what an eager MoE layer's own operators move per token the
// rank routes and hidden element beyond the permutation and un-permutation priced
// for every MoE layer (read and write k·h, read k·h and write h, in 16 bits), for
// kf routed copies of each token (framework.Profile.EagerMoEGlue; torchtitan at
// 35bffe989, models/moe/moe.py MoE.forward and models/moe/utils.py): per routed
// copy, the fp32 score product (cast up: read 2 B, write 4; multiply: read and
// write 4 each; cast down: read 4, write 2 — 20 B), the expert-parallel _permute's
// vstack of the received tokens with a zero row (read and write 2 B each) and its
// index gather (the same), _unpermute's index_put (the same), and scatter_add's
// read of its source and read and write of its output (6 B, of which the priced
// un-permutation counts 2 + 2/k); per token, scatter_add being out of place, the
// clone of the shared experts' output it adds into (read and write 2 B).
func eagerMoEGlueBytes(kf float64) float64 {
	const perCopy = 20 + 4 + 4 + 4 + 6 - 2 // score product, vstack, gather, index_put, scatter_add less the priced read
	const perToken = 4 - 2                 // the clone, less the priced write of h
	return perCopy*kf + perToken
}

// fusedAttentionTimes prices a fused (flash) attention core of flops forward FLOPs
// (the causal mask's skipped half already taken off) on a GPU of rates r, under
// framework fw (flash2: Training.FlashAttention2), key length skv of one kernel call
// and query-key head width headDim: the forward at the attention efficiency times the
// kernel's speed there (attentionSpeed, ultraAttentionSpeed on Blackwell Ultra), the
// backward flashBwdFLOPsRatio times the FLOPs at the kernel's backward speed. The
// layer's estimate and TestAttentionPricesAgainstMeasuredKernels price through it.
func fusedAttentionTimes(r *gpuRates, fw string, flash2 bool, skv, headDim, flops float64) (fwd, bwd float64) {
	vf, vb := attentionSpeed(r.arch, fw, flash2, skv, headDim)
	if r.ultra {
		uf, ub := ultraAttentionSpeed(fw, flash2, skv, headDim)
		vf, vb = vf*uf, vb*ub
	}
	return flops / (r.peak16 * r.attnEff * vf), flashBwdFLOPsRatio * flops / (r.peak16 * r.attnEff * vb)
}

// The attention core's FLOP conventions: a causal mask computes about half of the
// scores (causalAttentionShare), and the backward pass of a fused (flash) kernel
// runs 2.5 × the forward's FLOPs — five matmuls against two, the scores recomputed
// (flashBwdFLOPsRatio). Both are FlashAttention's own accounting: Dao 2023,
// "FlashAttention-2" (arXiv 2307.08691) §4.1, and flash-attention's
// benchmarks/benchmark_flash_attention.py, flops(): 4·b·s²·heads·d halved
// when causal, 2.5 × that backward.
const (
	causalAttentionShare = 0.5
	flashBwdFLOPsRatio   = 2.5
)

// unfusedScoreBytes is the HBM traffic per attention score of an unfused
// attention's forward (the score matrix, its softmax and dropout written and read
// back in 16 bits); the backward moves twice as much. An allowance from the first
// version of the model (93c8f98) with no published source: docs/step-model.md,
// "Constants without a published source".
const unfusedScoreBytes = 8

// Transformer Engine's all-to-all context parallelism (cp_comm_type "a2a",
// AttnFuncWithCPAndQKVOA2A and flash_attn_a2a_communicate in
// transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py
// at v2.15, the runs' MLPerf v6.0 images) copies each tensor it exchanges twice
// in Megatron-Core's sbhd layout: the query, key and value before the attention
// core — made contiguous with their heads split out first
// (x.movedim(head_dim, 0).contiguous()), then their sequence chunks put back in
// the load-balanced order after the all-to-all
// (reorder_seq_chunks_for_a2a_before_attn's index_select) — and the output after
// it — its chunks reordered before the all-to-all
// (reorder_seq_chunks_for_a2a_after_attn's index_select), its heads moved back
// and made contiguous after. The backward does the same to the output gradient
// (before_attn=True) and to the query, key and value gradients
// (before_attn=False). Each copy reads and writes the tensor in 16 bits.
const (
	cpA2ACopiesPerTensor = 2
	cpA2ACopyBytes       = 2 + 2
)

// cpA2AReorderBytes is the HBM traffic of those copies in one pass, forward or
// backward, of one layer on one GPU: tokens of the rank's micro-batch, width
// the elements a token has of the query, key, value and output on the rank's
// heads. Zero unless the layer runs context parallelism by all-to-all through
// Transformer Engine's attention (framework.Profile.TELayers).
func cpA2AReorderBytes(req *Request, tokens, width float64) float64 {
	l := &req.Layout
	if l.CP <= 1 || !l.CPAllToAll {
		return 0
	}
	if fw, err := framework.Get(req.Training.Framework); err != nil || !fw.TELayers {
		return 0
	}
	return cpA2ACopiesPerTensor * cpA2ACopyBytes * tokens * width
}

// elementwisePerHidden is the 16-bit elements per token, in units of the hidden
// size, that a layer's elementwise kernels read and write besides the MLP's
// activation: the two norms and two residual adds (10, as the model package counts
// them in model.Arch.layerFLOPs' ElementwiseBytes) and rotary (the remaining 4).
// An allowance from the first version of the model (93c8f98) with no published
// measurement: docs/step-model.md, "Constants without a published source".
const elementwisePerHidden = 14

// ncclBuffersGB is the memory set aside for NCCL's channel buffers (GB per GPU),
// besides the gradient buckets. No published source (first version of the model,
// 93c8f98): docs/step-model.md, "Constants without a published source".
const ncclBuffersGB = 0.5

// moeRouterBytesPerExpert is the router's memory traffic per token and expert:
// the fp32 logits written, the probabilities read and written, read again for the
// top-k and the auxiliary loss.
const moeRouterBytesPerExpert = 20

// mxCastBytes is fp8MXCastBytes priced at the elementwise rate: each axis's cast
// (2 B read, 1 B written per element) at the fraction of HBM bandwidth torchao
// measured its kernel reach on Blackwell (framework.Profile.BlackwellMXCastHBM:
// dim 0, dim 1), where that is below the model's elementwise fraction
// (Constants.HBMEfficiency); fp8MXCastBytes where the profile measures none.
func (k *Constants) mxCastBytes(frac [2]float64) float64 {
	return k.mxAxisBytes(frac[0]) + k.mxAxisBytes(frac[1])
}

// mxAxisBytes is one axis's share of mxCastBytes: half of fp8MXCastBytes, slowed
// to the fraction f of HBM bandwidth its kernel reaches (0: not measured).
func (k *Constants) mxAxisBytes(f float64) float64 {
	slow := 1.0
	if f > 0 {
		slow = max(1, k.HBMEfficiency/f)
	}
	return fp8MXCastBytes / 2 * slow
}

// fp8Casts adds the casts of one layer's fp8 matmuls to its forward and backward
// time: the inputs of the four matmul groups (QKV, output projection, MLP in, MLP
// out) forward, their output gradients backward, and, under current scaling, the
// weights in every forward (delayed scaling casts them once per step, priced by the
// caller from lt.weightCast).
func (e *Estimator) fp8Casts(req Request, r *gpuRates, lt *layerTimes, fwd, bwd, tokens float64, moe bool) (float64, float64) {
	a, l := req.Model, req.Layout
	t := float64(l.TP)
	h := float64(a.Hidden)
	// Attention widths relative to the hidden size: queries (and keys), the keys and
	// values together, the attention output (1, 2g/a and 1 for grouped-query
	// attention without head_dim; MLA's per-head keys and values otherwise).
	qw, kvw, vw := float64(a.QDim())/h, float64(a.KVSavedDim())/h, float64(a.VOutDim())/h
	mats := 2.0
	if a.GatedMLP {
		mats = 3
	}
	// routed counts the MLP copies of a token, inH the hidden-wide rows they read
	// and write: each copy's input (forward) and its output gradient (backward).
	// A dense MLP or a shared expert runs under attention's TP: every rank holds the
	// gathered sequence, h per token. A routed expert's copies are gathered over the
	// expert-TP group only (MoE parallel folding: Megatron-Core's token dispatcher
	// all-gathers the received tokens over the expert-TP group, of size etp), so a
	// rank holds etp/tp of them, each h wide — the same share the expert GEMMs take
	// above (mE = perExpert·et/t). The FFN-wide parts are width/etp for etp/tp of
	// the copies: width/tp per copy either way.
	width, routed, inH, experts := float64(a.FFN), 1.0, 1.0, 1.0
	if moe && a.MoE != nil {
		if a.MoE.ExpertFFN > 0 {
			width = float64(a.MoE.ExpertFFN)
		}
		top, shared := float64(a.MoE.TopK), float64(a.MoE.SharedExperts)
		routed, experts = top+shared, float64(a.MoE.Experts/max(1, l.EP)+a.MoE.SharedExperts)
		inH = top*float64(l.etp())/t + shared
	}
	rec := req.Training.FP8Recipe
	per := float64(fp8CastBytes)
	switch rec {
	case FP8Current:
		per += fp8AmaxBytes
	case FP8Rowwise:
		per = fp8RowwiseCastBytes
	case FP8MXFP8:
		per = fp8MXCastBytes
	case FP8Blockwise:
		per += fp8BlockScaleBytes
	}
	fw, fwErr := framework.Get(req.Training.Framework)
	if rec == FP8MXFP8 && r.arch == hardware.Blackwell && fwErr == nil {
		per = e.k.mxCastBytes(fw.BlackwellMXCastHBM)
	}
	// On Blackwell, Transformer Engine's per-tensor casts write the fp8 value alone
	// (framework.Profile.FP8TransposeFree): 1 B less per element, and fp8 weights
	// need no transpose at all.
	noTranspose := r.arch == hardware.Blackwell && fwErr == nil && fw.FP8TransposeFree && (rec == FP8Delayed || rec == FP8Current)
	if noTranspose {
		per -= fp8TransposeWriteBytes
	}
	inputs := tokens * (h + h*vw/t + inH*h + routed*width/t)
	// recast: the inputs cast again by projections that read one input as separate
	// fp8 linears (framework.Profile.FP8CastPerProjection): wk and wv beside wq, and
	// a dense gated MLP's w3 beside w1 — torchao's recipes that cast inside each
	// linear, but tensorwise under TP, which casts the module input once.
	var recast float64
	kv16 := fp8KVIn16Bits(&req)
	if fwErr == nil && fw.FP8CastPerProjection && (rec == FP8Rowwise || rec == FP8MXFP8 || (rec == FP8Current && l.TP == 1)) {
		if a.MLA == nil && !kv16 {
			recast += 2 * h
		}
		if a.GatedMLP && (!moe || a.MoE == nil) {
			recast += h
		}
		recast *= tokens
	}
	if fwErr == nil && fw.NormEmitsFP8 && rec == FP8Delayed {
		// The norms emit the QKV input, and a dense MLP's, in fp8 themselves; the
		// experts' inputs are cast after the permutation.
		fused := h
		if !moe || a.MoE == nil {
			fused += h
		}
		if a.MLA != nil {
			fused -= h // MLA's latent projections read the norm output; the cast is its up-projections' input
		}
		inputs -= tokens * fused
	}
	grads := tokens * (h*(qw+kvw)/t + h + routed*(mats-1)*width/t + inH*h)
	weights := a.Params().PerLayerAttention/t + experts*mats*h*width/float64(l.etp())
	if kv16 {
		// The 16-bit K and V projections cast neither their output gradients nor
		// their weights (their input is cast by Q's linear, above).
		grads -= tokens * h * kvw / t
		weights -= h * h * kvw / t
	}
	if rec == FP8Rowwise {
		// torchao's rowwise recipe (float8_linear.py at 6243040): the forward casts
		// the input and the weight along the rows; the backward casts the output
		// gradient both ways, and the saved input and the weight again along the
		// columns for the weight- and input-gradient GEMMs — those column casts at
		// fp8ColumnCastRate. The backward GEMMs' outputs are rescaled: the input
		// gradients (the size of the matmul inputs) and the weight gradients.
		// A projection that casts its input again casts it along the columns again
		// for its weight gradient, and its own input gradient is rescaled.
		col := fp8RowwiseAxisBytes / fp8ColumnCastRate
		fwd += fp8RowwiseAxisBytes * (inputs + recast) / r.hbm
		bwd += ((fp8RowwiseAxisBytes+col)*grads + col*(inputs+recast+weights)) / r.hbm
		bwd += fp8RescaleBytes * (inputs + recast + weights) / r.hbm
		per = fp8RowwiseAxisBytes
	} else {
		fwd += per * (inputs + recast) / r.hbm
		bwd += per * grads / r.hbm
	}
	if req.Training.FP8Params && rec == FP8MXFP8 {
		// MXFP8 weights are all-gathered in 16 bits and quantised along both axes
		// from them once a step (Training.fp8WeightsCastOncePerStep): a whole cast.
		lt.weightCast = per * weights / r.hbm
	} else if req.Training.FP8Params {
		// The optimizer writes the fp8 weights; what is left is their transpose
		// (none where the GEMMs take them as they are).
		lt.weightCast = fp8ParamCastBytes * weights / r.hbm
		if noTranspose {
			lt.weightCast = 0
		}
	} else {
		lt.weightCast = per * weights / r.hbm
	}
	// What of the forward's casts only the backward reads (BackwardOnlyCasts): the
	// transposed copy a per-tensor or block cast writes (none where the GPU takes
	// the operand as it is), MXFP8's column-scaled axis; torchao's rowwise recipe
	// casts along the rows alone in the forward. With fp8 weights their cast is the
	// transpose alone.
	var col float64
	switch {
	case rec == FP8Rowwise:
	case rec == FP8MXFP8 && r.arch == hardware.Blackwell && fwErr == nil:
		col = e.k.mxAxisBytes(fw.BlackwellMXCastHBM[1])
	case rec == FP8MXFP8:
		col = fp8MXCastBytes / 2
	case noTranspose:
	case rec == FP8Blockwise:
		col = fp8TransposeWriteBytes + fp8BlockScaleBytes/2
	default:
		col = fp8TransposeWriteBytes
	}
	lt.castCols = col * (inputs + recast) / r.hbm
	if !req.Training.fp8WeightsCastOncePerStep() {
		fwd += lt.weightCast
		if req.Training.FP8Params {
			lt.castCols += lt.weightCast
		} else if per > 0 {
			lt.castCols += lt.weightCast * col / per
		}
	}
	return fwd, bwd
}

// stageParams returns the parameters one GPU of the largest pipeline stage holds:
// dense (split by TP) and expert (split by EP and TP).
func (e *Estimator) stageParams(req *Request, stageLayers int) (dense, expert float64) {
	p := req.Model.Params()
	return stageParamsOf(req, &p, stageLayers)
}

// stageParamsOf is stageParams with the model's parameter counts p given (they
// take a walk over the layers to compute).
func stageParamsOf(req *Request, p *model.Params, stageLayers int) (dense, expert float64) {
	t := float64(req.Layout.TP)
	if req.Layout.Schedule == DualPipe {
		// The two stages of the rank that holds the most.
		var buf stageKindsBuf
		dl, ml := stageKinds(req, buf[:])
		nd, nm, ends := dualPipePair(dl, ml, dualPipeHeaviest(req, p, dl, ml))
		dense, expert = pairMatmulParams(&req.Layout, p, nd, nm)
		dense += float64(nd+nm) * p.PerLayerNorm
		if ends {
			dense += (p.Embedding + p.Output) / t
		}
		return dense, expert
	}
	dense, expert = matmulParams(req, p, stageLayers)
	dense += float64(stageLayers) * p.PerLayerNorm
	// The first stage holds the embedding, the last the output layer (vocab-parallel).
	emb := p.Embedding / t
	if req.Layout.PP == 1 {
		emb += p.Output / t
	}
	dense += emb
	return dense, expert
}

// matmulParams returns the weights of the transformer layers' matmuls one GPU of a
// stage of stageLayers layers holds — the ones fp8 training runs in fp8: dense
// (attention and dense or shared-expert MLPs, split by TP) and expert (split by EP
// and expert TP), before any ZeRO sharding. Norms, the embedding and the output
// layer stay in 16 bits.
func matmulParams(req *Request, p *model.Params, stageLayers int) (dense, expert float64) {
	if req.Layout.Schedule == DualPipe {
		var buf stageKindsBuf
		dl, ml := stageKinds(req, buf[:])
		nd, nm, _ := dualPipePair(dl, ml, dualPipeHeaviest(req, p, dl, ml))
		return pairMatmulParams(&req.Layout, p, nd, nm)
	}
	nMoE := min(stageLayers, stageMoELayers(req))
	return pairMatmulParams(&req.Layout, p, stageLayers-nMoE, nMoE)
}

// dualPipeHeaviest is the pipeline rank whose two DualPipe stages hold the most
// model-state bytes per GPU (weights, gradients, optimizer states, with ZeRO's
// sharding over the dense and the expert-data-parallel ranks): the outermost pair
// holds the embedding and the output layer, a middle pair the most MoE layers. dl
// and ml are the stages' dense and MoE layers (stageKinds). A pair without MoE
// layers holds no expert states: the sum leaves their zeros out (adding +0 changes
// no sum), and their sharding is not worked out.
func dualPipeHeaviest(req *Request, p *model.Params, dl, ml []int) int {
	l, o := &req.Layout, &req.Training.Optimizer
	t := float64(l.TP)
	best, most := 0, -1.0
	for r := 0; r < l.PP/2; r++ {
		nd, nm, ends := dualPipePair(dl, ml, r)
		d, e := pairMatmulParams(l, p, nd, nm)
		d += float64(nd+nm) * p.PerLayerNorm
		if ends {
			d += (p.Embedding + p.Output) / t
		}
		w, g, s := ModelStateBytes(d, *o, l.ZeRO, l.DP*l.CP)
		b := w + g + s
		if e != 0 {
			we, ge, se := ModelStateBytes(e, *o, l.ZeRO, l.expertShard())
			b = b + we + ge + se
		}
		if b > most {
			best, most = r, b
		}
	}
	return best
}

// pairMatmulParams is matmulParams for nDense dense and nMoE MoE layers.
func pairMatmulParams(l *Layout, p *model.Params, nDense, nMoE int) (dense, expert float64) {
	t := float64(l.TP)
	dense = float64(nDense) * (p.PerLayerAttention + p.PerLayerDenseMLP) / t
	if nMoE > 0 {
		// Shared experts are replicated over expert parallelism, like a dense MLP.
		dense += float64(nMoE) * (p.PerLayerAttention + p.PerLayerShared) / t
		expert = float64(nMoE) * (p.PerLayerMoE - p.PerLayerShared) / (float64(l.etp()) * float64(max(1, l.EP)))
	}
	return dense, expert
}

// activationsPerLayer is the activation bytes one micro-batch keeps per layer of a
// stage of stageLayers layers (MoE layers in their share, layers not recomputed
// with all of theirs).
func activationsPerLayer(req *Request, stageLayers int) float64 {
	return activationsPerLayerOf(req, stageLayers, -1)
}

// activationsPerLayerOf is activationsPerLayer for layers of which moeShare are MoE
// layers (negative: the model's share, 1/Frequency).
func activationsPerLayerOf(req *Request, stageLayers int, moeShare float64) float64 {
	a, t, l := &req.Model, &req.Training, &req.Layout
	b := float64(l.MicroBatch)
	s := float64(t.SeqLen) / float64(l.CP)
	mods := l.recomputeMask()
	if t.NoDropout {
		mods |= actNoDropout
	}
	perLayer := func(rc Recompute) float64 {
		mla := mlaDownMode(t.Framework)
		per := activationBytes(a, false, s, float64(t.SeqLen), b, l.TP, l.SP, rc, t.UnfusedAttention, mods, t.FP8Activations, 1, mla)
		if a.MoE != nil {
			moe := activationBytes(a, true, s, float64(t.SeqLen), b, l.TP, l.SP, rc, t.UnfusedAttention, mods, t.FP8Activations, t.moeLoad(l.EP), mla)
			every := float64(max(1, a.MoE.Frequency))
			if moeShare >= 0 {
				return per*(1-moeShare) + moe*moeShare
			}
			per = per*(1-1/every) + moe/every
		}
		return per
	}
	per := perLayer(l.Recompute)
	if share := l.recomputeShare(stageLayers); share > 0 && share < 1 {
		// Layers not recomputed keep all their activations.
		per = share*per + (1-share)*perLayer(RecomputeNone)
	}
	return per
}

// memory computes the peak per-GPU memory.
func (e *Estimator) memory(req *Request, stageLayers int, dense, expert float64, m int) Memory {
	return e.memoryWith(req, nil, stageLayers, dense, expert, m)
}

// memoryWith is memory with the model's parameter counts p (nil: counted here); it
// only reads *req.
func (e *Estimator) memoryWith(req *Request, p *model.Params, stageLayers int, dense, expert float64, m int) Memory {
	if req.Layout.Schedule == DualPipe {
		return e.dualPipeMemory(req, p, stageLayers, m)
	}
	var md, me float64
	if req.Training.Precision == FP8 {
		if p == nil {
			counts := req.Model.Params()
			md, me = matmulParams(req, &counts, stageLayers)
		} else {
			md, me = matmulParams(req, p, stageLayers)
		}
	}
	return e.memoryOf(req, stageLayers, float64(stageLayers), -1, dense, expert, md, me, false, m)
}

// dualPipeMemory is the peak memory of the DualPipe rank that needs the most: rank
// r holds stages r and P−1−r — their parameters, and P+1 micro-batches' activations
// of one stage of its (DeepSeek-V3 report Table 2; the mean of its two stages'
// layers) —, and rank 0 also the embedding and the output layer with its logits.
// params are the model's parameter counts (nil: counted here).
func (e *Estimator) dualPipeMemory(req *Request, params *model.Params, stageLayers, m int) Memory {
	l := &req.Layout
	if params == nil {
		counted := req.Model.Params()
		params = &counted
	}
	p := params
	t := float64(l.TP)
	var buf stageKindsBuf
	dl, ml := stageKinds(req, buf[:])
	var peak Memory
	// Ranks whose two stages hold the same layers hold the same memory: each pair
	// is priced once (a later equal one would not raise the peak).
	type pairKey struct {
		nd, nm int
		ends   bool
	}
	var seenBuf [32]pairKey
	seen := seenBuf[:0]
	for r := 0; r < l.PP/2; r++ {
		nd, nm, ends := dualPipePair(dl, ml, r)
		k := pairKey{nd, nm, ends}
		if slices.Contains(seen, k) {
			continue
		}
		seen = append(seen, k)
		md, me := pairMatmulParams(l, p, nd, nm)
		dense := md + float64(nd+nm)*p.PerLayerNorm
		if ends {
			dense += (p.Embedding + p.Output) / t
		}
		expert := me
		if req.Training.Precision != FP8 {
			md, me = 0, 0
		}
		share := -1.0
		if nd+nm > 0 {
			share = float64(nm) / float64(nd+nm)
		}
		mem := e.memoryOf(req, stageLayers, float64(nd+nm)/2, share, dense, expert, md, me, ends, m)
		if r == 0 || mem.Total > peak.Total {
			peak = mem
			peak.Stage = r
		}
	}
	return peak
}

// memoryOf is the memory of a GPU that holds dense and expert parameters (md and me
// of them the layers' matmul weights, fp8 training only) and the activations of
// actLayers layers per micro-batch in flight; ends: a DualPipe rank that holds both
// the first and the last stage.
func (e *Estimator) memoryOf(req *Request, stageLayers int, actLayers, moeShare, dense, expert, md, me float64, ends bool, m int) Memory {
	a, t, l := &req.Model, &req.Training, &req.Layout
	o := t.Optimizer
	const gb = 1e9
	var mem Memory
	shard := l.DP * l.CP
	w, gr, st := ModelStateBytes(dense, o, l.ZeRO, shard)
	we, ge, se := ModelStateBytes(expert, o, l.ZeRO, max(1, l.expertShard()))
	if t.FP8Params {
		// The same sharding, with the matmul weights at 1 B.
		o8 := o
		o8.WeightBytes = fp8ElementBytes
		w8, _, _ := ModelStateBytes(md, o8, l.ZeRO, shard)
		w16, _, _ := ModelStateBytes(md, o, l.ZeRO, shard)
		we8, _, _ := ModelStateBytes(me, o8, l.ZeRO, max(1, l.expertShard()))
		we16, _, _ := ModelStateBytes(me, o, l.ZeRO, max(1, l.expertShard()))
		w, we = w-w16+w8, we-we16+we8
	}
	mem.Weights, mem.Gradients, mem.Optimizer = (w+we)/gb, (gr+ge)/gb, (st+se)/gb
	// The parameters whose optimizer states this rank owns (all of its own without
	// ZeRO).
	owned := dense + expert
	if l.ZeRO >= 1 {
		owned = dense/float64(max(1, shard)) + expert/float64(max(1, l.expertShard()))
	}
	switch l.Offload {
	case OffloadOptimizer:
		mem.Optimizer = 0
	case OffloadParams:
		// Only the gathered layers (below) are on the GPU; gradients leave with
		// each reduce-scatter.
		mem.Weights, mem.Gradients, mem.Optimizer = 0, 0, 0
	default:
		owned = 0
	}
	// Under DualPipe dense and expert hold the two stages of a rank (stageParams):
	// two copies of the parameters.
	if owned > 0 {
		h := req.Cluster.Spec.Host
		mem.Host = owned * HostBytesPerParam / gb
		mem.HostCapacity = h.MemoryGB * HostMemoryUsable / float64(req.Cluster.Spec.GPUsPerNode)
	}
	layers := actLayers
	if l.ZeRO == 3 && shard > 1 {
		// The layer being computed and the one being prefetched, unsharded.
		mem.Gathered = 2 * (dense + expert) / layers * o.WeightBytes / gb
		if t.FP8Params {
			mem.Gathered -= 2 * (md + me) / layers * (o.WeightBytes - fp8ElementBytes) / gb
		}
		if t.OnDemandGathers {
			// DeepSpeed gathers module by module and releases what it no longer
			// needs once more than stage3_max_live_parameters are resident, with
			// stage3_prefetch_bucket_size more on the way: the running module, the
			// live limit and the bucket, when that is less than two whole layers.
			live := largestMatmulParams(*a, l.TP) + ZeRO3MaxLiveParams + ZeRO3PrefetchBucketParams
			mem.Gathered = min(mem.Gathered, live*o.WeightBytes/gb)
		}
	}
	if t.Precision == FP8 {
		// Delayed scaling caches every layer's fp8 weights (and transposes) for the
		// step; current scaling saves them for the backward pass. Under ZeRO-3 the
		// gathered fp8 weights live as long as their layer's gather. With fp8
		// weights only the transposes are kept besides the weights themselves.
		held := 1.0
		if l.ZeRO == 3 && shard > 1 {
			held = min(2, layers) / layers
		}
		if l.Recompute == RecomputeFull && !t.FP8Recipe.weightsCastOncePerStep() {
			if fw, err := framework.Get(t.Framework); err == nil && fw.FP8WeightsCastInForward {
				// A checkpointed layer's forward keeps no fp8 copy of its weights
				// (framework.Profile.FP8WeightsCastInForward): the layers not
				// recomputed hold theirs, the recomputed ones only the layer being
				// recomputed and the next.
				share := l.recomputeShare(stageLayers)
				held = min(held, 1-share+share*min(2, layers)/layers)
			}
		}
		copies := float64(fp8WeightCopyBytes)
		if t.FP8Params {
			copies = fp8TransposeBytes
		}
		// On Blackwell a Transformer Engine that writes no fp8 transposes
		// (framework.Profile.FP8TransposeFree, delayed and current scaling) holds
		// the copy alone, and nothing besides fp8 weights.
		if fw, err := framework.Get(t.Framework); err == nil && fw.FP8TransposeFree && req.Cluster.GPU().Arch == hardware.Blackwell &&
			(t.FP8Recipe == FP8Delayed || t.FP8Recipe == FP8Current) {
			copies -= fp8TransposeBytes
		}
		mem.FP8Weights = copies * (md + me) * held / gb
	}
	b := float64(l.MicroBatch)
	s := float64(t.SeqLen) / float64(l.CP)
	scores := t.UnfusedAttention
	per := activationsPerLayerOf(req, stageLayers, moeShare)
	mem.ActivationBytesPerLayer = per
	inflight := inFlight(l.Schedule, l.PP, l.VirtualStages, m)
	mem.InFlight = inflight
	act := per * layers * inflight
	// keep is what of a stage's saved activations stays on the GPU: with activation
	// offload, two layers' worth (the one computing, the one in transfer) and the
	// rest in host memory.
	keep := func(b float64) float64 { return b }
	if l.OffloadActivations {
		keep = func(b float64) float64 { return min(b, 2*per) }
		h := req.Cluster.Spec.Host
		mem.Host += (act - keep(act)) / gb
		mem.HostCapacity = h.MemoryGB * HostMemoryUsable / float64(req.Cluster.Spec.GPUsPerNode)
		act = keep(act)
	}
	if l.Recompute == RecomputeFull || l.Recompute == RecomputeOps {
		// The layer being recomputed holds its full activations during its backward.
		full := ActivationBytes(*a, a.MoE != nil, s, float64(t.SeqLen), b, l.TP, l.SP, RecomputeNone, scores)
		act += full
	}
	if scores {
		// Unfused attention's backward (the layer at the peak, recomputed or not)
		// writes the gradient of the dropped-out probabilities, 2 B per score, while
		// the probabilities, the mask and the dropped-out copy it saved are still
		// held: Megatron-LM's torch.bmm backward ahead of the dropout's and the fused
		// softmax's (that one in place). It reproduces Narayanan et al. 2021 Table 2:
		// the 530B model under ZeRO-3 at micro-batch 4 ran on 640 GPUs and did not
		// fit on 560.
		act += 2 * float64(a.Heads) * s * float64(t.SeqLen) * b / float64(l.TP)
	}
	tokens := b * s
	h, v := float64(a.Hidden), float64(a.Vocab)
	// The first stage keeps, besides its layers' activations, the embedding
	// dropout's 1-byte mask for each micro-batch in flight. The embedding output
	// itself is the first layer's input, which that layer's activations already
	// count (its norm's input, or the checkpoint input under full recomputation):
	// Megatron-Core's LanguageModelEmbedding hands its dropout output to the first
	// layer, and Megatron-LM of 2021 its transposed copy (ParallelTransformer's
	// hidden_states.transpose(0, 1).contiguous()), the dropout output freed.
	firstEmb := tokens * h * inflight
	if t.NoDropout {
		firstEmb = 0
	}
	// The loss's peak per logit (vocab-parallel over TP) depends on how the
	// framework computes cross entropy (framework.LossBytesPerLogit).
	lossBytes := float64(framework.MegatronLossBytesPerLogit)
	if fw, err := framework.Get(t.Framework); err == nil && l.TP > 1 && fw.LossParallelBytesPerLogit > 0 {
		lossBytes = fw.LossParallelBytesPerLogit
	} else if err == nil && fw.LossBytesPerLogit > 0 {
		lossBytes = fw.LossBytesPerLogit
	}
	// The multi-token-prediction modules compute their own logits and loss.
	lastLogits := lossBytes * tokens * v / float64(l.TP) * float64(1+a.MTPLayers)
	first := act + firstEmb
	last := keep(per*layers*min(1, inflight)) + lastLogits // the last stage holds one micro-batch
	if l.PP == 1 || ends {
		first += lastLogits
		last = first
	} else if l.Schedule == DualPipe {
		last, firstEmb = 0, 0 // a middle pair: neither end of the model
		first = act
	}
	mem.Stage = 0
	peakAct, logits := act, firstEmb
	if last > first {
		mem.Stage = l.PP - 1
		peakAct, logits = last-lastLogits, lastLogits
	} else if l.PP == 1 {
		logits += lastLogits
	}
	mem.Activations = peakAct / gb
	mem.Logits = logits / gb
	// NCCL channel buffers, plus two gradient buckets being reduced.
	mem.Buffers = ncclBuffersGB
	if l.DP*l.CP > 1 && l.ZeRO < 3 {
		bucket := e.k.DPBucketBytes
		if torchDDP(req) {
			bucket = dpBucketBytes(req, &e.k)
		}
		mem.Buffers += 2 * bucket / gb
	}
	mem.Capacity = req.Cluster.GPU().MemoryGB
	mem.Reserve = e.k.RuntimeReserveGB + e.k.Fragmentation*mem.Capacity
	mem.Total = mem.Weights + mem.Gradients + mem.Optimizer + mem.Gathered + mem.FP8Weights + mem.Activations + mem.Logits + mem.Buffers + mem.Reserve
	mem.Headroom = mem.Capacity - mem.Total
	mem.Fits = mem.Headroom >= 0 && mem.Host <= mem.HostCapacity
	return mem
}

// modelForwardFLOPs is the forward FLOPs of one sequence: every GEMM (active
// parameters), full attention 4·s²·h per layer (the convention of Narayanan et al.
// and MFU reports) and the logits.
func (e *Estimator) modelForwardFLOPs(req *Request) float64 {
	return req.Model.ForwardFLOPs(req.Training.SeqLen)
}

// assumptions returns the (cached, shared: do not modify) list of modelling
// assumptions for a GPU, precision and attention kind. The key holds every input
// of describe: besides the GPU and the training's switches, what the host's note
// reads of the model, the training and the node (hostNote: CUDA graphs, MLA and
// its query compression, the host's CPU) and the data-parallel bucket, which
// grows with dp under Megatron-Core (dpBucketBytes); without them a list made for
// one request was given to the next on the same GPU (TestAnswersDoNotDependOnHistory
// in internal/service).
func (e *Estimator) assumptions(req *Request, r *gpuRates) []string {
	gpu := req.Cluster.GPU()
	mla := int8(0)
	if m := req.Model.MLA; m != nil {
		mla = 1
		if m.QLoRARank > 0 {
			mla = 2
		}
	}
	queues, from := deviceMaxConnections(req)
	key := assumptionKey{gpu.Name, gpu.Arch, req.Training.Precision, req.Training.UnfusedAttention, req.Training.FlashAttention2, req.Training.OnDemandGathers, req.Training.BackwardPrefetch, req.Training.Framework, req.Training.FP8Recipe, req.Training.FP8Params, req.Training.DPReduceAfterBackward, r.peak, r.sms,
		req.Training.CUDAGraphs, mla, hostOpScale(req.Cluster.Spec), dpBucketBytes(req, &e.k), queues, from, oneQueueSerialisesEP(req, queues), fp8KVIn16Bits(req)}
	e.mu.RLock()
	out, ok := e.notes[key]
	e.mu.RUnlock()
	if ok {
		return out
	}
	// The hardware queues close the list: the what-if notes explain appends
	// come after them.
	out = append(e.describe(*req, r), queuesNote(key.queues, key.queuesFrom, key.oneQueueEP))
	e.mu.Lock()
	e.notes[key] = out
	e.mu.Unlock()
	return out
}

func (e *Estimator) describe(req Request, r *gpuRates) []string {
	fw, _ := framework.Get(req.Training.Framework)
	notes := []string{fmt.Sprintf("framework %s: %s", fw.Name, fw.Description)}
	return append(notes, e.describeModel(req, r)...)
}

func (e *Estimator) describeModel(req Request, r *gpuRates) []string {
	attn := "causal flash attention (masked half skipped, backward 2.5× the forward's FLOPs)"
	kernel := ""
	if fw, err := framework.Get(req.Training.Framework); err == nil && fw.HopperFusedAttention && req.Cluster.GPU().Arch == hardware.Hopper && !req.Training.FlashAttention2 {
		kernel = ", Transformer Engine's cuDNN fused attention on Hopper"
	}
	if req.Training.FlashAttention2 {
		kernel = ", flash-attn 2 (the framework's Hopper-native kernel turned off)"
	}
	if fw, err := framework.Get(req.Training.Framework); err == nil && fw.OpSACRecomputesBlackwellAttention &&
		req.Cluster.GPU().Arch == hardware.Blackwell && !req.Training.UnfusedAttention {
		kernel += "; under op-level checkpointing the backward pass runs it again (the framework's op save list leaves out its Blackwell kernel)"
	}
	if req.Training.UnfusedAttention {
		attn = "unfused attention (full score matrix computed, stored and read back)"
	}
	dpNote := fmt.Sprintf("data-parallel gradients reduce in %.0f MB buckets under the last micro-batch's backward, the last of each buffer after it; ", dpBucketBytes(&req, &e.k)/1e6)
	if req.Training.DPReduceAfterBackward {
		dpNote = "data-parallel gradients reduce after the backward pass, none of it hidden; "
	}
	fw, fwErr := framework.Get(req.Training.Framework)
	megatronDDP := fwErr == nil && fw.MegatronDDPBuckets
	if megatronDDP {
		dpNote += "Megatron-Core zeroes its gradient buffers at the start of every step (ZeRO 0–1); "
	}
	zero3 := "ZeRO-3 prefetches the next layer"
	if req.Training.BackwardPrefetch != PrefetchPre {
		zero3 = "ZeRO-3 prefetches the next layer forward; backward, each layer waits for its gather (backward prefetch " + string(req.Training.BackwardPrefetch) + ")"
	}
	if req.Training.OnDemandGathers {
		zero3 = fmt.Sprintf("ZeRO-3 gathers each of a layer's %.0f weighted modules on demand, waiting for it, with %.1f µs of host work per peer rank and call and the list collectives' copies on the GPU (each gather zeroed and copied out, each reduce-scatter copied in)", e.k.ModulesPerLayer, 2*e.k.EagerOpHostUs)
	} else if fwErr == nil && fw.FSDP2Copies {
		zero3 += "; FSDP2 copies each gathered weight out of the all-gather buffer and each gradient into the reduce-scatter buffer on the compute stream"
		if fw.FSDP2CopyInOwnStream {
			zero3 = "ZeRO-3 prefetches the next layer; FSDP2 copies each gathered weight out of the all-gather buffer on the compute stream (the gradients' copy-in on the reduce-scatter stream)"
		}
	}
	notes := []string{
		fmt.Sprintf("GEMMs at up to %.0f%% of the %.0f TFLOP/s %s peak, lowered for small and badly tiled shapes (%d SMs, %d×%d tiles)",
			100*r.gemmEff, r.peak/1e12, req.Training.Precision, int(r.sms), e.k.TileM, e.k.TileN),
		fmt.Sprintf("attention core at %.0f%% of the 16-bit peak for FlashAttention-2-class kernels at 16k keys, scaled by the kernel's published speed at the call's key length (Shah et al. 2024)%s; %s", 100*r.attnEff, kernel, attn),
		fmt.Sprintf("elementwise kernels at %.0f%% of HBM bandwidth; %s", 100*e.k.HBMEfficiency, e.hostNote(req)),
		dpNote + zero3,
		fmt.Sprintf("communication overlapped with compute slows it by the share of SMs its kernels take (%.0f)", commSMs(req.Training.Framework)),
	}
	if r.fp8 {
		cast := fmt.Sprintf("%s scaling: casts read 16 bits and write fp8 and its transpose (%d B per element)", req.Training.FP8Recipe, fp8CastBytes)
		weights := "weights cast once per step"
		if fw, err := framework.Get(req.Training.Framework); err == nil && fw.NormEmitsFP8 && req.Training.FP8Recipe == FP8Delayed {
			cast += "; the norms write the QKV and dense MLP inputs in fp8 themselves (Transformer Engine's LayerNormLinear)"
		}
		switch req.Training.FP8Recipe {
		case FP8Current:
			cast = fmt.Sprintf("current scaling: an amax pass before every cast, %d B per element", fp8CastBytes+fp8AmaxBytes)
			weights = "weights cast in every forward"
		case FP8Rowwise:
			cast = fmt.Sprintf("rowwise scaling: every operand quantised along both axes, an amax pass and a cast each (%d B per element), the column-wise casts at %.0f%% of the row-wise ones' bandwidth (Inductor's transposed casts), the backward GEMMs' outputs rescaled in place (%d B per element)", fp8RowwiseCastBytes, 100*fp8ColumnCastRate, fp8RescaleBytes)
			weights = "weights cast in every forward"
		case FP8MXFP8:
			cast = fmt.Sprintf("MXFP8 block scaling: every operand quantised along both axes with 32-element block scales found in the cast (%d B per element)", fp8MXCastBytes)
			weights = "weights cast in every forward"
		case FP8Blockwise:
			cast = fmt.Sprintf("block scaling (1×128 tiles, 128×128 weight blocks): scales found in the cast kernel, which writes fp8 and its transpose (%.2f B per element with the scales)", fp8CastBytes+fp8BlockScaleBytes)
		}
		copies := "; fp8 weight copies (and transposes) of 2 B per parameter are kept"
		if req.Training.FP8Params {
			copies = "; the matmul weights are stored, gathered and sent in fp8 (1 B per parameter) and their fp8 transposes kept; each step transposes them (2 B per parameter)"
			ops := 0
			switch req.Training.FP8Recipe {
			case FP8Delayed:
				ops = fp8MasterCastOpsDelayed
			case FP8Current:
				ops = fp8MasterCastOpsCurrent
			}
			if megatronDDP && ops > 0 {
				copies += fmt.Sprintf("; the optimizer casts the master weights into them in a host loop of %d operators of %.0f µs per fp8 weight tensor (the distributed optimizer at ZeRO 0–1, Megatron-FSDP at ZeRO 2–3), exposed beyond the update", ops, e.k.EagerOpHostUs)
			}
		}
		in16 := "attention core, embedding and output layer in 16 bits"
		if fp8KVIn16Bits(&req) {
			in16 = "attention core, key and value projections, embedding and output layer in 16 bits"
		}
		notes = append(notes, "fp8 matmuls in the transformer layers only ("+in16+"); "+cast+"; "+weights+copies)
	}
	return notes
}

// fp8KVIn16Bits tells whether req's attention runs its key and value projections
// as 16-bit linears beside fp8 ones (Training.FP8KVIn16Bits under a framework whose
// projections are their own linears, framework.Profile.FP8CastPerProjection, on a
// model without MLA).
func fp8KVIn16Bits(req *Request) bool {
	if !req.Training.FP8KVIn16Bits || req.Training.Precision != FP8 || req.Model.MLA != nil {
		return false
	}
	fw, err := framework.Get(req.Training.Framework)
	return err == nil && fw.FP8CastPerProjection
}

// routerRates are the rates of the MoE router's gating GEMM (tokens × experts ×
// hidden) and its two backward GEMMs: 16 bits whatever the layers' matmul
// precision, as every framework with fp8 MoE training runs it (its fp32 option is
// routerFP32Linear's):
//   - Megatron-Core, so megatron-core, megatron-core-0.12 and the nemo profiles:
//     TopKRouter.gating is torch.nn.functional.linear(input.to(router_dtype),
//     self.weight.to(router_dtype)) with router_dtype the input's dtype, bf16
//     (megatron/core/transformer/moe/router.py at core_v0.12.0, d580efc), and
//     router_gating_linear at 2436e3d (moe_utils.py RouterGatingLinearFunction:
//     Transformer Engine's general_gemm without a quantizer, or torch.mm) —
//     outside Transformer Engine's fp8 modules, which are the only ones
//     fp8_autocast quantises.
//   - torchtitan: the router's gate is an nn.Linear
//     (TokenChoiceTopKRouter.gate: torchtitan/models/moe.py at 6fc499f,
//     models/moe/moe.py at b39377f9f), which torchao's
//     float8 and MX converters would convert (components/quantization/utils.py
//     module_filter_fn at b39377f9f and 6a3a9da95: every nn.Linear with both
//     dimensions multiples of 16 whose name matches no filter_fqns), but every
//     MoE training config torchtitan ships names it in filter_fqns = ["output",
//     "router.gate"] (models/llama4/train_configs, models/deepseek_v3/
//     train_configs at b39377f9f and 35bffe989; experiments/llama4 at
//     6fc499f), and so did torchao's Llama 4 Scout MXFP8 run.
//   - HAI-LLM: DeepSeek-V3 keeps "MoE gating modules" in their original
//     precision, BF16 or FP32, beside the embedding, the output head, the norms
//     and attention (arXiv:2412.19437 §3.3.1, "Mixed Precision Framework").
func routerRates(r *gpuRates) gpuRates {
	if !r.fp8 {
		return *r
	}
	return r.bf16()
}

// routerFP32Linear tells whether req's MoE router runs its gating GEMM on fp32
// copies of its operands (Training.MoERouterFP32 under a framework with
// framework.Profile.MoERouterFP32Linear).
func routerFP32Linear(req *Request) bool {
	if !req.Training.MoERouterFP32 || req.Model.MoE == nil {
		return false
	}
	fw, err := framework.Get(req.Training.Framework)
	return err == nil && fw.MoERouterFP32Linear
}

// Bytes per element of the router's casts to and from fp32: the input cast up
// (read 2, write 4: Tensor.to(float32)) forward, its gradient cast back (read 4,
// write 2: ToCopyBackward) backward.
const routerFP32CastBytes = 6

// fp32RouterTimes prices the router's gating GEMM g (tokens × experts × hidden)
// as Megatron-Core 0.12 runs it under moe_router_dtype fp32: F.linear of fp32
// copies, so the forward GEMM and autograd's input- and weight-gradient GEMMs run
// at the GPU's fp32 rate (gpuRates.peak32) with 4-byte operands and outputs, at
// the architecture's GEMM efficiency and small-problem ramp. The tile-wave model
// of gemmTime (Constants.TileM × TileN, the tensor-core tiles its efficiencies
// were fitted with) is not applied: the fp32 kernels are other kernels, and with
// 256 experts the forward's output is only a few such tiles wide. The casts of
// the input (forward) and of its gradient (backward) go through HBM.
func (k *Constants) fp32RouterTimes(g gemm, r *gpuRates) (fwd, bwd float64) {
	one := func(m, n, kk float64) float64 {
		work := 2 * m * n * kk
		eff := r.gemmEff16 * work / (work + k.GEMMHalfFLOPs)
		bytes := 4 * (m*kk + kk*n + m*n)
		return max(work/(r.peak32*eff), bytes/r.hbm)
	}
	cast := routerFP32CastBytes * g.m * g.k / r.hbm
	fwd = one(g.m, g.n, g.k) + cast
	bwd = one(g.m, g.k, g.n) + one(g.k, g.n, g.m) + cast
	return fwd, bwd
}

// mlaRoPEUnfused tells whether req's framework applies MLA's rotary embedding
// with PyTorch's operators (framework.Profile.MLARoPEUnfused).
func mlaRoPEUnfused(req *Request) bool {
	fw, err := framework.Get(req.Training.Framework)
	return err == nil && fw.MLARoPEUnfused
}
