package step

import (
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/model"
)

// Multi-head latent attention (DeepSeek-V2/V3) under tensor parallelism, as the
// framework runs it (framework.Profile.MLADownProj). The up-projections (latent →
// per-head queries, keys and values) are column-parallel in every framework; the
// down-projections (hidden → q_lora_rank, hidden → kv_lora_rank + the shared
// rotary key) differ:
//
//   - replicated (torchtitan's models/deepseek_v3/infra/parallelize.py: wq_a,
//     wkv_a, q_norm and kv_norm NoParallel under the attention's all-gathered
//     input): whole, on the whole sequence, on every rank; the layer's
//     collectives are a dense layer's.
//   - column (Megatron-Core 0.11–0.13; megatron/core/transformer/
//     multi_latent_attention.py and models/gpt/gpt_layer_specs.py at core_r0.12.0
//     7094270): TEColumnParallelLinear, N/TP of the latent on the whole sequence.
//     With sequence parallelism each down-projection all-gathers the layer's
//     input itself (two gathers of s·b·h where a dense layer has one);
//     MLASelfAttention.get_query_key_value_tensors gathers each latent over TP
//     (gather_from_tensor_model_parallel_region) and scatters it back to the
//     sequence-parallel share (scatter_to_sequence_parallel_region, whose
//     backward all-gathers the gradient); the up-projections
//     (TELayerNormColumnParallelLinear with the latent norm) all-gather it again.
//     Without sequence parallelism the latent gathers remain and the
//     up-projections' and the second down-projection's input gradients are
//     all-reduced.
//   - duplicated (Megatron-Core 0.14 on; the same files at 20d73fe): TELinear with
//     parallel_mode "duplicated" on the rank's own input — its sequence-parallel
//     share, or the whole sequence without sequence parallelism —, so the layer's
//     input is never gathered: the up-projections all-gather the latents, and
//     gather_from_sequence_parallel_region the rotary key; backward their
//     transposes reduce-scatter the gradients.

// mlaDownMode is the framework's MLA down-projection form (replicated where the
// framework is unknown).
func mlaDownMode(name string) framework.MLADownProj {
	fw, err := framework.Get(name)
	if err != nil {
		return framework.MLADownProjReplicated
	}
	return fw.MLADownProj
}

// mlaDownShape is what each down-projection GEMM's M (tokens) and N (latent
// width) are multiplied by on one rank: column-parallel 1 and 1/TP (the whole
// sequence, the rank's columns); duplicated with sequence parallelism 1/TP and 1
// (the rank's tokens, the whole latent); replicated, or duplicated without
// sequence parallelism, 1 and 1. Either split does 1/TP of the replicated FLOPs.
func mlaDownShape(req Request, l Layout) (m, n float64) {
	if l.TP <= 1 {
		return 1, 1
	}
	t := float64(l.TP)
	switch mlaDownMode(req.Training.Framework) {
	case framework.MLADownProjColumn:
		return 1, 1 / t
	case framework.MLADownProjDuplicated:
		if l.SP {
			return 1 / t, 1
		}
	}
	return 1, 1
}

// mlaColl is one of MLA's tensor-parallel collectives that a dense layer does not
// have: its operation, its size in elements per token of the micro-batch (16-bit
// activations), and how many times a layer runs it per micro-batch.
type mlaColl struct {
	op    collective.Op
	width float64
	calls float64
	what  string
}

// mlaTP is the difference between MLA's tensor-parallel collectives and a dense
// layer's (tensorParallel's two all-gathers and two reduce-scatters, or four
// all-reduces, of s·b·h per layer): add lists the collectives a layer runs besides
// them, and dropAG, dropRS and dropAR how many of the dense layer's all-gathers,
// reduce-scatters and all-reduces of s·b·h it does not run, per layer and
// micro-batch. rFull is the share of the stage's layers fully recomputed (their
// forward collectives run again) and mla_up_proj's recomputation runs the
// up-projections' forward all-gathers again (the rotary key's gather and the
// down-projections are outside the checkpointed function).
type mlaTP struct {
	add                    []mlaColl
	dropAG, dropRS, dropAR float64
}

func mlaTPCollectives(req *Request, stageLayers int) mlaTP {
	a, l := &req.Model, &req.Layout
	var out mlaTP
	m := a.MLA
	if m == nil || l.TP <= 1 {
		return out
	}
	qr, kvr, rope, h := float64(m.QLoRARank), float64(m.KVLoRARank), float64(m.QKRopeDim), float64(a.Hidden)
	rFull := l.recomputeShare(stageLayers)
	rUp := 0.0
	if l.Recompute == RecomputeSelective && l.recomputeMask()&rmMLAUp != 0 {
		rUp = 1
	}
	fwd := 1 + rFull // a forward collective, again where the layer is recomputed
	up := fwd + rUp  // an up-projection's forward all-gather
	add := func(op collective.Op, width, calls float64, what string) {
		if width > 0 && calls > 0 {
			out.add = append(out.add, mlaColl{op, width, calls, what})
		}
	}
	AG, RS, AR := collective.AllGather, collective.ReduceScatter, collective.AllReduce
	switch mlaDownMode(req.Training.Framework) {
	case framework.MLADownProjColumn:
		if l.SP {
			add(AG, h, fwd, "MLA per layer: the kv down-projection's own all-gather of the sequence-parallel input (forward, again where recomputed)")
			add(RS, h, 1, "MLA per layer: the kv down-projection's input-gradient reduce-scatter (backward)")
			add(AG, qr, fwd, "MLA per layer: the query latent gathered over TP (gather_from_tensor_model_parallel_region; forward, again where recomputed)")
			add(AG, kvr+rope, fwd, "MLA per layer: the key/value latent and rotary key gathered over TP (forward, again where recomputed)")
			add(AG, qr, up, "MLA per layer: the query up-projection's all-gather of its sequence-parallel input (forward, again where recomputed or mla_up_proj)")
			add(AG, kvr, up, "MLA per layer: the key/value up-projection's all-gather of its sequence-parallel input (forward, again where recomputed or mla_up_proj)")
			add(AG, qr, 1, "MLA per layer: the query latent's gradient all-gathered (scatter_to_sequence_parallel_region's backward)")
			add(AG, kvr, 1, "MLA per layer: the key/value latent's gradient all-gathered (scatter_to_sequence_parallel_region's backward)")
			add(RS, qr, 1, "MLA per layer: the query up-projection's input-gradient reduce-scatter (backward)")
			add(RS, kvr, 1, "MLA per layer: the key/value up-projection's input-gradient reduce-scatter (backward)")
		} else {
			add(AG, qr, fwd, "MLA per layer: the query latent gathered over TP (forward, again where recomputed)")
			add(AG, kvr+rope, fwd, "MLA per layer: the key/value latent and rotary key gathered over TP (forward, again where recomputed)")
			add(AR, h, 1, "MLA per layer: the kv down-projection's input-gradient all-reduce (backward)")
			add(AR, qr, 1, "MLA per layer: the query up-projection's input-gradient all-reduce (backward)")
			add(AR, kvr, 1, "MLA per layer: the key/value up-projection's input-gradient all-reduce (backward)")
		}
	case framework.MLADownProjDuplicated:
		if l.SP {
			if qr > 0 {
				// No gather of the layer's input for the attention, no reduce-scatter
				// of its gradient.
				out.dropAG, out.dropRS = fwd, 1
			}
			add(AG, qr, up, "MLA per layer: the query up-projection's all-gather of the query latent (forward, again where recomputed or mla_up_proj)")
			add(AG, kvr, up, "MLA per layer: the key/value up-projection's all-gather of the key/value latent (forward, again where recomputed or mla_up_proj)")
			add(AG, rope, fwd, "MLA per layer: the rotary key all-gathered (gather_from_sequence_parallel_region; forward, again where recomputed)")
			add(RS, qr, 1, "MLA per layer: the query up-projection's input-gradient reduce-scatter (backward)")
			add(RS, kvr, 1, "MLA per layer: the key/value up-projection's input-gradient reduce-scatter (backward)")
			add(RS, rope, 1, "MLA per layer: the rotary key's gradient reduce-scattered (backward)")
		} else {
			if qr > 0 {
				out.dropAR = 1 // the layer input's gradient is whole on every rank
			}
			add(AR, qr, 1, "MLA per layer: the query up-projection's input-gradient all-reduce (backward)")
			add(AR, kvr, 1, "MLA per layer: the key/value up-projection's input-gradient all-reduce (backward)")
		}
	}
	return out
}

// mlaTensorParallel prices one micro-batch's MLA difference (mlaTPCollectives)
// on the stage's layers: ag, rs and ar are the prices of one dense all-gather,
// reduce-scatter and all-reduce of s·b·h (0 where not priced).
func (p *pricing) mlaTensorParallel(ag, rs, ar float64) (float64, error) {
	d := mlaTPCollectives(&p.req, p.parts.stageLayers)
	per := -(d.dropAG*ag + d.dropRS*rs + d.dropAR*ar)
	for _, c := range d.add {
		t, err := p.comm(CommTP, c.op, p.tokens*c.width*2, p.layers*c.calls*p.mf, c.what)
		if err != nil {
			return 0, err
		}
		per += c.calls * t
	}
	return per * p.layers, nil
}

// mlaSavedBytes is what one rank keeps of MLA's latents for the backward pass,
// for one layer and a micro-batch of b sequences of s tokens (this rank's share
// with context parallelism); lin is the width of a saved matmul input (2 B, or 1
// with fp8 activations).
//
// With mla_up_proj recomputed, Megatron-Core's CheckpointWithoutOutput keeps the
// checkpointed function's inputs (multi_latent_attention.py: q_compressed,
// kv_compressed and k_pos_emb, the latents before their norms and the rotary
// key), and a view keeps the whole tensor it was cut from. Each rank holds them
// for its sequence-parallel share where the down-projections split the sequence
// (column: scattered back to it; duplicated: computed on it), for the whole
// sequence where they run on the gathered input (replicated) or without sequence
// parallelism. Two exceptions hold more: with column-parallel down-projections the
// rotary key is a view of the key/value latent gathered over TP — the whole
// sequence's kv_lora_rank + rope stays —, and duplicated ones gather the rotary
// key over the sequence before the checkpoint.
//
// Without it the up-projections (TELayerNormColumnParallelLinear with the latent
// norms under qk_layernorm; DeepSeek's q_norm and kv_norm before wq_b and wkv_b)
// keep each latent twice: the norm's 16-bit input for the norm's backward and its
// output, the matmul's input, for the weight gradient. The rotary key is not kept:
// the rotary embedding multiplies it by constant cosines and sines.
func mlaSavedBytes(a *model.Arch, s, b float64, t int, sp bool, mods uint8, lin float64, mode framework.MLADownProj) float64 {
	m := a.MLA
	if m == nil {
		return 0
	}
	qr, kvr, rope := float64(m.QLoRARank), float64(m.KVLoRARank), float64(m.QKRopeDim)
	sb, tf := s*b, float64(max(1, t))
	split := sp && t > 1 && mode != framework.MLADownProjReplicated
	share := 1.0 // of the sequence whose latents a rank holds
	if split {
		share = 1 / tf
	}
	if mods&rmMLAUp == 0 {
		return (2 + lin) * (qr + kvr) * sb * share
	}
	kv := (kvr + rope) * share // the key/value latent and rotary key, as computed
	if split {
		switch mode {
		case framework.MLADownProjColumn:
			kv = kvr/tf + kvr + rope // scattered latent; the gathered tensor under the rotary key's view
		case framework.MLADownProjDuplicated:
			kv += rope // the rotary key gathered over the sequence
		}
	}
	return lin * (qr*share + kv) * sb
}

// mlaGradSync prices the all-reduce over TP, once a step, of the weight gradients
// of duplicated down-projections under sequence parallelism: each rank's are
// partial sums over its own tokens, and Megatron-Core sums them over the TP group
// after the backward pass (megatron/core/distributed/finalize_model_grads.py
// _allreduce_non_tensor_model_parallel_grads at 20d73fe, one coalesced all-reduce
// of the main gradients of the parameters transformer_engine.py's TELinear marks
// sequence_parallel in "duplicated" mode), before the optimizer: exposed.
func (p *pricing) mlaGradSync() error {
	a, l := &p.req.Model, &p.req.Layout
	m := a.MLA
	if m == nil || l.TP <= 1 || !l.SP || mlaDownMode(p.req.Training.Framework) != framework.MLADownProjDuplicated {
		return nil
	}
	grads := p.layers * float64(a.Hidden) * float64(m.QLoRARank+m.KVLoRARank+m.QKRopeDim) * p.req.Training.Optimizer.GradBytes
	x, err := p.comm(CommTP, collective.AllReduce, grads, 1, "end of step: MLA's duplicated down-projections' weight gradients summed over TP (finalize_model_grads)")
	if err != nil {
		return err
	}
	p.tpPerStep = x
	return nil
}

// MLA's rotary embedding without the fused kernel (framework.Profile.MLARoPEUnfused)
// moves, per element of the rotary part it rotates (16 bits), in
// rope_utils._apply_rotary_pos_emb_bshd with multi_latent_attention (Megatron-Core
// core_r0.12.0, 7094270):
//   - forward 28 B: the de-interleaving cat of the even and odd halves (read 2,
//     write 2), t · cos (4), the rotate-half negation of one half (2 per element
//     of the whole), its cat (4), · sin (4), the sum (read 4, write 2) and the cat
//     with the empty pass-through part (4);
//   - backward 34 B: the two strided slices' backwards (zeros and a half copied
//     in, 4 each) and their sum (6), grad · cos (4), the chunk's backward cat (4),
//     the negation (2), grad · sin (4) and the two branches' gradients summed (6).
//     (The full-width slice t[..., :rot_dim] is the tensor itself: PyTorch's
//     indexing returns self for a slice over a whole dimension, so it has no
//     backward of its own.)
//
// The cats around it (multi_latent_attention.py qkv_up_proj_and_rope_apply at the
// same commit) move, per token and head: the query's cat of its position-free
// part and its rotary part, read 2·(nope + rope) and written 2·(nope + rope) B;
// the key's cat of its position-free part (read 2·nope) with the shared rotary
// key broadcast over the heads (read once a token), written 2·(nope + rope); the
// value's contiguous copy out of the key-value up-projection (read and write
// 2·v). Backward, autograd's split backwards concatenate the query's two
// gradients (read and write 2·(nope + rope)) and the key's position-free part's
// with the value's (read and write 2·(nope + v)), and the broadcast's backward
// sums the shared rotary key's gradient over the heads (read 2·rope a head).
// With the fused kernels (Megatron-Core 0.13 on, apply_rope_fusion:
// fused_apply_mla_rope_for_q / _kv) the rotated query, key and value are written
// once, which the layer's elementwise allowance holds.
const (
	mlaRoPEUnfusedFwdBytes = 28
	mlaRoPEUnfusedBwdBytes = 34
)

// mlaUnfusedRoPEBytes is the HBM traffic a token moves, forward and backward, in
// MLA's unfused rotary embedding and the cats that build the attention's query,
// key and value, for n heads on the rank.
func mlaUnfusedRoPEBytes(m *model.MLA, n float64) (fwd, bwd float64) {
	nope, rope, v := float64(m.QKNopeDim), float64(m.QKRopeDim), float64(m.VDim)
	// The rotary chains: the query's n heads and the shared key's one.
	fwd = mlaRoPEUnfusedFwdBytes * rope * (n + 1)
	bwd = mlaRoPEUnfusedBwdBytes * rope * (n + 1)
	fwd += 4*n*(nope+rope) + // the query's cat
		2*n*nope + 2*rope + 2*n*(nope+rope) + // the key's cat
		4*n*v // the value's contiguous copy
	bwd += 4*n*(nope+rope) + // the query's split backward
		4*n*(nope+v) + // the key-value split backward
		2*n*rope + 2*rope // the shared rotary key's gradient summed over the heads
	return fwd, bwd
}
