package step

import (
	"math"

	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/topology"
)

// layerMemo is one generation of layers timed by estimates without a BoundsCache
// (Estimate, Quick), by their key's hash word (layerMemoKey.hash: a word the map
// hashes at a fraction of the cost of the key's kilobyte of fields, strings and
// floats); each entry holds its whole key, compared on a hit, so that a collision
// costs a layer's timing, not an answer. It is replaced once it holds
// maxLayerMemo entries.
type layerMemo = boundedMemo[uint64, *layerEntry]

// maxLayerMemo bounds a layer memo generation: about 1.3 kB an entry, so ~5 MB.
const maxLayerMemo = 1 << 12

// layerEntry is a layer's times and the key they were timed for; read only once
// stored.
type layerEntry struct {
	key layerMemoKey
	lt  layerTimes
}

// layerMemoKey is every input of layerComputeAt besides the estimator (whose
// constants it reads; each estimator keeps its own memo): the cluster (its
// node's CPU), the GPU's rates, the model (its MoE and MLA parts by value), the
// training, the layout (layoutKey) and the shape of the micro-batch on the GPU
// (bits, as layerKey). Unlike layerKey, which holds what a search varies, it
// holds every field of the request a layer could read, so that any two requests
// that share one share their layers' times.
type layerMemoKey struct {
	cl       *topology.Cluster
	rates    gpuRates
	model    model.Arch // MoE and MLA nil: their values are below
	moe      model.MoE
	mla      model.MLA
	training Training
	layout   layoutKey
	tokens   uint64
	sLocal   uint64
	s        uint64
	hasMoE   bool
	hasMLA   bool
	moeLayer bool
}

// layoutKey is a Layout's fields without its lists: LayerSplit (a stage's
// layers, which a layer's times do not depend on) and RecomputeModules, which a
// layer reads as recomputeMask. TestLayoutKeyHoldsLayout checks that it holds
// every other field of Layout.
type layoutKey struct {
	TP, PP, DP, CP, EP  int
	ZeRO, MicroBatch    int
	Recompute           Recompute
	RecomputeLayers     int
	recomputeMask       uint8
	SP                  bool
	Schedule            Schedule
	VirtualStages       int
	AccountForEmbedding bool
	AccountForLoss      bool
	RankOrder           string
	OverlapTP           bool
	CPAllToAll          bool
	OverlapEP           bool
	OverlapSharedExpert bool
	ETP                 int
	Offload             Offload
	OffloadActivations  bool
	FP8Params           bool
}

func layoutKeyOf(l *Layout) layoutKey {
	return layoutKey{
		TP: l.TP, PP: l.PP, DP: l.DP, CP: l.CP, EP: l.EP, ZeRO: l.ZeRO, MicroBatch: l.MicroBatch,
		Recompute: l.Recompute, RecomputeLayers: l.RecomputeLayers, recomputeMask: l.recomputeMask(),
		SP: l.SP, Schedule: l.Schedule, VirtualStages: l.VirtualStages,
		AccountForEmbedding: l.AccountForEmbedding, AccountForLoss: l.AccountForLoss, RankOrder: l.RankOrder,
		OverlapTP: l.OverlapTP, CPAllToAll: l.CPAllToAll, OverlapEP: l.OverlapEP, OverlapSharedExpert: l.OverlapSharedExpert,
		ETP: l.ETP, Offload: l.Offload, OffloadActivations: l.OffloadActivations, FP8Params: l.FP8Params,
	}
}

// layerMemoKeyOf is the layerMemoKey of layerComputeAt's inputs.
func layerMemoKeyOf(req *Request, r *gpuRates, tokens, sLocal, s float64, moe bool) layerMemoKey {
	k := layerMemoKey{cl: req.Cluster, rates: *r, model: req.Model, training: req.Training, layout: layoutKeyOf(&req.Layout),
		tokens: math.Float64bits(tokens), sLocal: math.Float64bits(sLocal), s: math.Float64bits(s), moeLayer: moe}
	if m := req.Model.MoE; m != nil {
		k.moe, k.hasMoE, k.model.MoE = *m, true, nil
	}
	if m := req.Model.MLA; m != nil {
		k.mla, k.hasMLA, k.model.MLA = *m, true, nil
	}
	return k
}

// holds tells whether k is the layerMemoKey of these inputs (layerMemoKeyOf),
// compared in place.
func (k *layerMemoKey) holds(req *Request, r *gpuRates, tokens, sLocal, s float64, moe bool) bool {
	a := &req.Model
	if k.cl != req.Cluster || k.tokens != math.Float64bits(tokens) || k.sLocal != math.Float64bits(sLocal) || k.s != math.Float64bits(s) ||
		k.moeLayer != moe || k.hasMoE != (a.MoE != nil) || k.hasMLA != (a.MLA != nil) ||
		a.MoE != nil && *a.MoE != k.moe || a.MLA != nil && *a.MLA != k.mla {
		return false
	}
	m := *a
	m.MoE, m.MLA = nil, nil
	return m == k.model && k.layout == layoutKeyOf(&req.Layout) && k.rates == *r && k.training == req.Training
}

// layerHash folds what tells a search's layers apart — the micro-batch's shape on the GPU, the layout's parallel sizes and switches, the
// model's sizes and the sequence — into one word, as pipeRunKey.hash does (FNV-1a
// word by word). Inputs it leaves out still count: the entry's whole key is
// compared.
func layerHash(req *Request, tokens, sLocal, s float64, moe bool) uint64 {
	const prime = 1099511628211
	l, a := &req.Layout, &req.Model
	f := layerFlags(l.recomputeMask(), l.CPAllToAll, l.SP, l.Recompute == RecomputeOps, moe,
		req.Training.FP8Params, l.OffloadActivations, l.Recompute == RecomputeFull, l.OverlapTP, l.OverlapSharedExpert, a.MoE != nil, a.MLA != nil)
	h := (14695981039346656037 ^ f) * prime
	h = (h ^ math.Float64bits(tokens)) * prime
	h = (h ^ math.Float64bits(sLocal)) * prime
	h = (h ^ math.Float64bits(s)) * prime
	h = (h ^ uint64(l.TP)) * prime
	h = (h ^ uint64(l.CP)<<32 ^ uint64(l.EP)) * prime
	h = (h ^ uint64(l.ETP)<<32 ^ uint64(l.DP)) * prime
	h = (h ^ uint64(a.Hidden)<<32 ^ uint64(a.FFN)) * prime
	h = (h ^ uint64(a.Layers)<<32 ^ uint64(a.Heads)) * prime
	return (h ^ uint64(len(req.Training.Precision))<<32 ^ uint64(a.KVHeads)) * prime
}

// layerMemoised is e.layerComputeAt, kept in the estimator's layer memo: an
// estimate without a BoundsCache times its layers (a few thousand instructions
// of GEMM, attention and host prices) from inputs that repeat from estimate to
// estimate — a service asked about one model and training, a search's layouts
// of one shape. The memo is read under its lock and answers what layerComputeAt
// would, bit for bit: an entry's key holds all it reads.
func (e *Estimator) layerMemoised(req *Request, r *gpuRates, tokens, sLocal, s float64, moe bool) layerTimes {
	h := layerHash(req, tokens, sLocal, s, moe)
	memo := currentGeneration(&e.timedLayers, newBoundedMemo[uint64, *layerEntry])
	if le, ok := memo.get(h); ok && le.key.holds(req, r, tokens, sLocal, s, moe) {
		return le.lt
	}
	le := &layerEntry{key: layerMemoKeyOf(req, r, tokens, sLocal, s, moe), lt: e.layerComputeAt(req, r, tokens, sLocal, s, moe)}
	memo.put(&e.timedLayers, maxLayerMemo, h, le)
	return le.lt
}
