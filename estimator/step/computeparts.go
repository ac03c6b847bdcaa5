package step

import (
	"math"
	"slices"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/topology"
)

// computeParts is the compute of the slowest pipeline stage for one micro-batch.
type computeParts struct {
	lc, lcMoE    layerTimes
	stageLayers  int
	nDense, nMoE float64
	fwd, bwd, rc float64
	bwdW         float64 // the weight-gradient GEMMs inside bwd (zero-bubble schedules defer them)
	// rcShare is the recomputed share of the layers' forward FLOPs.
	rcShare float64
	// weightCast is one fp8 cast of the stage's layer weights (per step under
	// delayed scaling; current scaling's is inside every micro-batch's fwd).
	weightCast float64
	// out is the output layer's forward, backward and weight-gradient times
	// (outputLayer's, before the prediction modules).
	out [3]float64
}

// compute times the layers of the slowest pipeline stage for one micro-batch of
// tokens tokens (sLocal per sequence on this GPU, s in the full sequence).
func (e *Estimator) compute(req Request, rates *gpuRates, tokens, sLocal, s float64) computeParts {
	var cp computeParts
	e.computeInto(&cp, &req, rates, tokens, sLocal, s, nil)
	return cp
}

// computeInto is compute with the layers' times taken from c when it has them (c
// may be nil), written into cp (432 bytes: the bounds of every shape and the
// estimates fill theirs in place rather than copy one out).
func (e *Estimator) computeInto(cp *computeParts, req *Request, rates *gpuRates, tokens, sLocal, s float64, c *BoundsCache) {
	a, l := &req.Model, &req.Layout
	tf := float64(l.TP)
	h := float64(a.Hidden)
	*cp = computeParts{}
	moeEvery := 0
	if a.MoE != nil {
		moeEvery = max(1, a.MoE.Frequency)
	}
	cp.lc = c.layer(e, req, rates, tokens, sLocal, s, false)
	if moeEvery > 0 {
		cp.lcMoE = c.layer(e, req, rates, tokens, sLocal, s, true)
	}
	lc, lcMoE := &cp.lc, &cp.lcMoE // read in place: a layer's times are 256 bytes

	stageLayers := c.stageLayers(a.Layers, l)
	nMoE := float64(min(stageLayers, stageMoELayers(req)))
	nDense := float64(stageLayers) - nMoE
	fwd := nDense*lc.fwd + nMoE*lcMoE.fwd
	bwd := nDense*lc.bwd + nMoE*lcMoE.bwd
	rc, rcFLOPs := 0.0, 0.0
	fwdFLOPs := nDense*lc.fwdFLOPs + nMoE*lcMoE.fwdFLOPs
	switch l.Recompute {
	case RecomputeFull:
		share := l.recomputeShare(stageLayers)
		rc, rcFLOPs = share*fwd, share*fwdFLOPs
	case RecomputeSelective:
		rc, rcFLOPs = nDense*lc.modsFwd+nMoE*lcMoE.modsFwd, nDense*lc.modsFLOPs+nMoE*lcMoE.modsFLOPs
	case RecomputeOps:
		rc, rcFLOPs = nDense*lc.opsFwd+nMoE*lcMoE.opsFwd, nDense*lc.opsFLOPs+nMoE*lcMoE.opsFLOPs
	}
	if fwdFLOPs > 0 {
		cp.rcShare = rcFLOPs / fwdFLOPs
	}
	// The last stage also computes the logits and loss; the first the embedding. The
	// output layer stays in 16 bits under fp8 training.
	logits, logitsBwd, logitsW := c.outputLayer(e, rates, tokens, float64(a.Vocab)/tf, h)
	cp.out = [3]float64{logits, logitsBwd, logitsW}
	// Multi-token prediction (DeepSeek-V3 §2.2): each module on the last stage adds a
	// 2h → h projection, one more transformer layer and one more pass through the
	// shared output layer and loss.
	mtp := float64(a.MTPLayers)
	mtpLayer := lc
	if moeEvery > 0 {
		mtpLayer = lcMoE
	}
	if mtp > 0 {
		pf := e.k.gemmTime(gemm{tokens, h / tf, 2 * h, 1, false}, rates)
		pw := e.k.gemmTime(gemm{2 * h, h / tf, tokens, 1, false}, rates)
		pb := e.k.gemmTime(gemm{tokens, 2 * h, h / tf, 1, false}, rates) + pw
		logits, logitsBwd, logitsW = (1+mtp)*logits+mtp*pf, (1+mtp)*logitsBwd+mtp*pb, (1+mtp)*logitsW+mtp*pw
	}
	// The stage that computes the loss idles after the loss reduction's host sync
	// once a micro-batch (lossSyncGap: NeMo 2.3; the prediction modules' losses are
	// the model's own, not reduced there), counted with its forward.
	logits += e.lossSyncGap(req, c)
	cp.weightCast = nDense*lc.weightCast + nMoE*lcMoE.weightCast
	// The slowest stage: the one with the most layers, or the last, whose output
	// layer and loss may outweigh a layer it holds fewer of (an uneven split that
	// accounts for the loss, Megatron's --account-for-loss-in-pipeline-split).
	lastLayers := stageLayers
	if len(l.LayerSplit) > 0 {
		lastLayers = 0
		for c := 0; c < l.VirtualStages; c++ {
			lastLayers += l.LayerSplit[c*l.PP+l.PP-1]
		}
	}
	bwdW := nDense*lc.bwdW + nMoE*lcMoE.bwdW
	if l.Schedule == DualPipe && l.PP > 1 {
		// dualPipe below counts the prediction modules' layers with the last stage's.
	} else if l.PP == 1 || lastLayers == stageLayers {
		fwd += logits + mtp*mtpLayer.fwd
		bwd += logitsBwd + mtp*mtpLayer.bwd
		bwdW += logitsW + mtp*mtpLayer.bwdW
		if l.PP == 1 {
			// One stage holds the embedding too (with a pipeline the first stage
			// does, whose lookup weighs less than the last stage's output layer).
			emb := embeddingGradTime(req, rates.hbm)
			bwd += emb
			bwdW += emb
		}
	} else if d := float64(stageLayers-lastLayers) - mtp; logits+logitsBwd > d*(lc.fwd+lc.bwd) {
		// The last stage is the slowest: its layers plus the output layer (and the
		// prediction modules).
		frac := float64(lastLayers) / float64(stageLayers)
		fwd, bwd, rc, bwdW = fwd*frac+logits+mtp*mtpLayer.fwd, bwd*frac+logitsBwd+mtp*mtpLayer.bwd, rc*frac, bwdW*frac+logitsW+mtp*mtpLayer.bwdW
	}

	cp.stageLayers, cp.nDense, cp.nMoE = stageLayers, nDense, nMoE
	cp.bwdW = bwdW
	cp.fwd, cp.bwd, cp.rc = fwd, bwd, rc
	if l.Schedule == DualPipe && l.PP > 1 {
		var buf stageKindsBuf
		dl, ml := stageKinds(req, buf[:])
		cp.dualPipe(&req.Layout, dl, ml, logits, logitsBwd, logitsW, embeddingGradTime(req, rates.hbm))
	}
}

// dualPipe re-times cp for DualPipe: rank r runs half the micro-batches through
// stage r and half through stage P−1−r, so one micro-batch costs it the mean of
// the two, and the rank with the largest mean paces the pipeline — the outermost
// pair also computes the output layer (and the embedding) for its half. nDense and
// nMoE become that rank's mean layer counts, which the per-layer communication
// follows; the weights' fp8 cast covers both stages.
// dl and ml are the stages' dense and MoE layers (stageKinds).
func (cp *computeParts) dualPipe(l *Layout, dl, ml []int, logits, logitsBwd, logitsW, emb float64) {
	d := cp.dualPipeOf(l, dl, ml, logits, logitsBwd, logitsW, emb)
	cp.fwd, cp.bwd, cp.rc, cp.bwdW = d.fwd, d.bwd, d.rc, d.bwdW
	cp.nDense, cp.nMoE, cp.weightCast = d.nDense, d.nMoE, d.weightCast
}

// dualPipeTimes are what dualPipe sets of computeParts.
type dualPipeTimes struct{ fwd, bwd, rc, bwdW, nDense, nMoE, weightCast float64 }

// dualPipeOf is what dualPipe sets, leaving cp as it is.
func (cp *computeParts) dualPipeOf(l *Layout, dl, ml []int, logits, logitsBwd, logitsW, emb float64) (out dualPipeTimes) {
	return cp.dualPipeOfRanks(l, dl, ml, nil, logits, logitsBwd, logitsW, emb)
}

// dualPipeOfRanks is dualPipeOf over the rank pairs ranks only (nil: every one),
// in order: each the first of the pairs that hold its dense and MoE layers and
// end the pipeline or not (stagePairs.firsts). A pair's times depend on nothing
// else, and of equal times the first pair's are kept, so these give what every
// pair gives.
func (cp *computeParts) dualPipeOfRanks(l *Layout, dl, ml []int, ranks []int32, logits, logitsBwd, logitsW, emb float64) (out dualPipeTimes) {
	lc, lm := &cp.lc, &cp.lcMoE
	var rcD, rcM float64 // recomputation per layer
	switch l.Recompute {
	case RecomputeFull:
		share := l.recomputeShare(cp.stageLayers)
		rcD, rcM = share*lc.fwd, share*lm.fwd
	case RecomputeSelective:
		rcD, rcM = lc.modsFwd, lm.modsFwd
	case RecomputeOps:
		rcD, rcM = lc.opsFwd, lm.opsFwd
	}
	best := -1.0
	n := l.PP / 2
	if ranks != nil {
		n = len(ranks)
	}
	for i := range n {
		r := i
		if ranks != nil {
			r = int(ranks[i])
		}
		nd, nm, ends := dualPipePair(dl, ml, r)
		d, m := float64(nd)/2, float64(nm)/2
		fwd, bwd := d*lc.fwd+m*lm.fwd, d*lc.bwd+m*lm.bwd
		rc, w := d*rcD+m*rcM, d*lc.bwdW+m*lm.bwdW
		if ends {
			fwd, bwd, w = fwd+logits/2, bwd+logitsBwd/2+emb/2, w+logitsW/2+emb/2
		}
		if t := fwd + bwd + rc; t > best {
			best = t
			out = dualPipeTimes{fwd: fwd, bwd: bwd, rc: rc, bwdW: w, nDense: d, nMoE: m,
				weightCast: float64(nd)*lc.weightCast + float64(nm)*lm.weightCast}
		}
	}
	return out
}

// embeddingGradTime is one micro-batch's weight gradient of the input embedding
// (vocabulary-parallel over TP) on the stage that holds it: the lookup's backward
// produces a dense gradient of the whole table slice — PyTorch's
// embedding_dense_backward allocates at::zeros({num_weights, grad.size(-1)}) and adds
// the tokens' rows into it (aten/src/ATen/native/cuda/Embedding.cu,
// EmbeddingBackwardKernel.cu), and Megatron-Core's VocabParallelEmbedding looks up
// with F.embedding, without gradient-accumulation fusion (core_r0.10.0
// tensor_parallel/layers.py) — and the framework adds it to the gradient kept over
// the step (distributed/distributed_data_parallel.py's backward hook,
// param.main_grad.add_(param.grad.data); autograd's accumulation into .grad
// elsewhere): the 16-bit gradient written and read, the
// step's gradient read and written (embeddingGradBytes per element), at HBM speed.
// The rows of the micro-batch's tokens (tokens × hidden, against vocabulary × hidden
// here) are left out. hbm is the GPU's achievable HBM bandwidth (gpuRates.hbm).
func embeddingGradTime(req *Request, hbm float64) float64 {
	a := &req.Model
	elems := float64(a.Vocab) * float64(a.Hidden) / float64(max(1, req.Layout.TP))
	return elems * embeddingGradBytes(req.Training.Optimizer) / hbm
}

// embeddingGradBytes is the HBM traffic per element of the embedding's weight
// gradient in one micro-batch (embeddingGradTime): the dense 16-bit gradient zeroed
// and read back, and the step's gradient it is added to read and written.
func embeddingGradBytes(o Optimizer) float64 {
	return 2*o.WeightBytes + wgradAccumulationBytes(o.GradBytes)
}

// stageLayerCount is the most layers one pipeline rank holds over its v chunks:
// the slowest stage sets the pace.
func stageLayerCount(layers int, l *Layout) int {
	if len(l.LayerSplit) == 0 {
		return layers / l.PP
	}
	most := 0
	if l.VirtualStages == 1 {
		// One chunk per rank (most layouts a search bounds): the largest entry.
		for _, n := range l.LayerSplit[:l.PP] {
			most = max(most, n)
		}
		return most
	}
	for st := 0; st < l.PP; st++ {
		n := 0
		for c := 0; c < l.VirtualStages; c++ {
			n += l.LayerSplit[c*l.PP+st]
		}
		most = max(most, n)
	}
	return most
}

// stageLayersMemo is the last result of stageLayerCount for an uneven split, with
// what it depends on: the split (by its first element and length), the depth and
// the chunks.
type stageLayersMemo struct {
	split          *int
	n, pp, vs, out int
}

// stageLayers is stageLayerCount, remembered in c (which may be nil) for the last
// uneven split: a search bounds a depth's shapes one after the other, all with the
// depth's one split array (as dualPipePairs), and an uneven split of a deep
// pipeline is a loop over every stage.
func (c *BoundsCache) stageLayers(layers int, l *Layout) int {
	if c == nil || len(l.LayerSplit) == 0 {
		return stageLayerCount(layers, l)
	}
	k := stageLayersMemo{split: &l.LayerSplit[0], n: len(l.LayerSplit), pp: l.PP, vs: l.VirtualStages}
	if m := c.most; m.split != nil && m.split == k.split && m.n == k.n && m.pp == k.pp && m.vs == k.vs {
		return m.out
	}
	k.out = stageLayerCount(layers, l)
	c.most = k
	return k.out
}

// stageMoELayers is the most MoE layers one pipeline rank holds over its model
// chunks (chunk c of rank s is split entry c·pp + s, in model order), counting the
// dense first layers and the MoE frequency of the model.
func stageMoELayers(req *Request) int {
	a, l := &req.Model, &req.Layout
	if a.MoE == nil {
		return 0
	}
	stages := l.PP * max(1, l.VirtualStages)
	split := l.LayerSplit
	if len(split) != stages {
		split = EvenSplit(a.Layers, stages)
	}
	counts := make([]int, l.PP)
	layer := 0
	for i, n := range split {
		for range n {
			if a.IsMoELayer(layer) {
				rank := i % l.PP
				if l.Schedule == ZeroBubbleV && i >= l.PP {
					rank = 2*l.PP - 1 - i // the V: stage i on rank 2P−1−i
				}
				counts[rank]++
			}
			layer++
		}
	}
	return slices.Max(counts)
}

// BoundsCache keeps the per-layer compute times of the layouts one search bounds
// for the same model, training and cluster: layouts that differ in pipeline depth,
// data parallelism or ZeRO stage run their layers alike, so a search part that
// bounds a hundred such layouts times each kind of layer once. Between resets
// (Reset, ResetFor) the requests given with it must be of one model, training and
// cluster: what it keeps is keyed by layout only. Not safe for concurrent use: one
// per goroutine.
type BoundsCache struct {
	layers map[layerKey]layerTimes
	// layersOf is the search the layers' times are of (ResetFor).
	layersOf layersOf
	// The training normalised (normalise).
	trained  bool
	trainOut Training
	spWithTP bool
	// The output layer's GEMM times by tokens and vocabulary slice.
	logits map[[2]uint64][3]float64
	// One TP collective's price (tpCall).
	tp map[tpKey][2]float64 // the pair's time and its all-gather's
	// The model's parameter counts and attention widths (the cache is for one
	// model).
	params    model.Params
	hasParams bool
	dims      attnDims
	hasDims   bool
	// The activations one layer saves (activationsPerLayer), by what they depend
	// on of the layout: a search's shapes repeat a few micro-batch, CP, TP, SP and
	// recomputation settings over many depths and data-parallel sizes.
	acts map[actKey]float64
	// The GPU's rates of the last estimator, cluster and precision asked (rates).
	ratesOf struct {
		e    *Estimator
		cl   *topology.Cluster
		prec Precision
	}
	lastRates   gpuRates
	lastRatesOK bool
	// The DualPipe pairing of the last depth and split asked (dualPipePairs).
	pairs stagePairs
	// The most layers a rank holds under the last uneven split asked
	// (stageLayers).
	most stageLayersMemo
	// The last TP price without and with SP (tpCalls), and the last output layer's
	// times (outputLayer).
	lastTP     [2]tpLast
	lastLogits struct {
		k  [2]uint64
		v  [3]float64
		ok bool
	}
	// The last stage's exposure bytes (stageBytes).
	stage stageBytesMemo
	// The profile of framework fwName (framework.Get's, read only), looked up
	// once for the requests of one framework (profile).
	fwName string
	fwOK   bool
	fw     *framework.Profile
	fwErr  error
}

// stageBytesMemo is the last result of stageBytes with what it depends on.
type stageBytesMemo struct {
	tp, pp, vs, ep, etp, layers, nsplit int
	split                               *int // the split's first element (nil: even)
	weight, grad                        float64
	onDemand                            bool
	params, gather, scatter             float64
	ok                                  bool
}

// stageBytes is what Bounds' exposure inputs need of the stage's parameters for a
// layout with data or context parallelism: the bytes of the ZeRO 1–2 parameter
// all-gather at least (leastRankParams), and of one layer's dense weight gather and
// gradient reduce-scatter (none with on-demand gathers), for a stage of stageLayers
// layers and a 1F1B request. It is remembered in c (which may be nil) for the last
// layout parts it depends on: a search's shapes differ in recomputation, SP and
// overlap many times for each of them.
func (c *BoundsCache) stageBytes(req *Request, p *model.Params, stageLayers int, o *Optimizer) (params, gather, scatter float64) {
	l := &req.Layout
	var m stageBytesMemo
	if c != nil {
		m = stageBytesMemo{tp: l.TP, pp: l.PP, vs: l.VirtualStages, ep: l.EP, etp: l.etp(), layers: stageLayers, nsplit: len(l.LayerSplit),
			weight: o.WeightBytes, grad: o.GradBytes, onDemand: req.Training.OnDemandGathers, ok: true}
		if len(l.LayerSplit) > 0 {
			m.split = &l.LayerSplit[0]
		}
		last := c.stage
		last.params, last.gather, last.scatter = 0, 0, 0
		if last == m && l.Schedule != DualPipe && l.Schedule != ZeroBubbleV {
			return c.stage.params, c.stage.gather, c.stage.scatter
		}
	}
	dense, _ := stageParamsOf(req, p, stageLayers)
	params = leastRankParams(*req, *p) * o.WeightBytes
	if !req.Training.OnDemandGathers {
		layers := float64(stageLayers)
		gather, scatter = dense/layers*o.WeightBytes, dense/layers*o.GradBytes
	}
	if c != nil && l.Schedule != DualPipe && l.Schedule != ZeroBubbleV {
		m.params, m.gather, m.scatter = params, gather, scatter
		c.stage = m
	}
	return params, gather, scatter
}

// torchRing tells whether framework fw runs PyTorch's ring attention
// (framework.Profile.TorchRingAttention), remembered in c (which may be nil) for
// the last framework asked.
func (c *BoundsCache) torchRing(fw string) bool {
	p, err := c.profile(fw)
	return err == nil && p.TorchRingAttention
}

// profile is framework.Get(name), kept for the next request of the same
// framework (c nil: looked up every time). The profile is shared: read only.
func (c *BoundsCache) profile(name string) (*framework.Profile, error) {
	if c == nil {
		return framework.Get(name)
	}
	if !c.fwOK || c.fwName != name {
		c.fw, c.fwErr = framework.Get(name)
		c.fwName, c.fwOK = name, true
	}
	return c.fw, c.fwErr
}

// stagePairs are the dense and MoE layers of each stage of a depth and split
// (stageKinds) and the fewest layers a DualPipe rank's pair of stages holds, on
// average over the two.
type stagePairs struct {
	pp         int
	split      *int // the split's first element (nil: even)
	nsplit     int
	buf        stageKindsBuf
	dense, moe []int
	least      float64
	ok         bool
	// firsts are the rank pairs that are the first to hold their dense and MoE
	// layers and to end the pipeline or not, in order (nil: more than
	// maxPairKinds kinds); firstsBuf holds them.
	firsts    []int32
	firstsBuf [maxPairKinds]int32
}

// maxPairKinds is the most kinds of DualPipe rank pair stagePairs lists: an even
// split has two (the outermost pair, the others), an uneven one a few more.
const maxPairKinds = 16

// dualPipePairs is the stage pairing of req's depth and split, remembered in c
// (when c is not nil) for the last depth and split asked: a search's shapes come
// depth by depth, and the split is one array per depth.
func (c *BoundsCache) dualPipePairs(req *Request) *stagePairs {
	l := &req.Layout
	var first *int
	if len(l.LayerSplit) > 0 {
		first = &l.LayerSplit[0]
	}
	var p *stagePairs
	if c == nil {
		p = new(stagePairs)
	} else {
		p = &c.pairs
		if p.ok && p.pp == l.PP && p.split == first && p.nsplit == len(l.LayerSplit) {
			return p
		}
	}
	p.pp, p.split, p.nsplit, p.ok = l.PP, first, len(l.LayerSplit), true
	p.dense, p.moe = stageKinds(req, p.buf[:])
	p.least = math.Inf(1)
	p.firsts = p.firstsBuf[:0]
	for r := 0; r < l.PP/2; r++ {
		nd, nm, ends := dualPipePair(p.dense, p.moe, r)
		p.least = min(p.least, float64(nd+nm)/2)
		if p.firsts == nil {
			continue
		}
		seen := false
		for _, q := range p.firsts {
			qd, qm, qe := dualPipePair(p.dense, p.moe, int(q))
			seen = seen || qd == nd && qm == nm && qe == ends
		}
		switch {
		case seen:
		case len(p.firsts) == maxPairKinds:
			p.firsts = nil // too many kinds: every pair
		default:
			p.firsts = append(p.firsts, int32(r))
		}
	}
	return p
}

// rates is e.k.rates of the cluster's GPU, remembered in c (when c is not nil) for
// the last estimator, cluster and precision: a search asks for one cluster's most
// of the time, and comparing three words is cheaper than the rates.
func (c *BoundsCache) rates(e *Estimator, cl *topology.Cluster, p Precision) (gpuRates, bool) {
	if c == nil {
		return e.k.rates(cl.GPU(), p)
	}
	if c.ratesOf.e != e || c.ratesOf.cl != cl || c.ratesOf.prec != p {
		c.lastRates, c.lastRatesOK = e.k.rates(cl.GPU(), p)
		c.ratesOf.e, c.ratesOf.cl, c.ratesOf.prec = e, cl, p
	}
	return c.lastRates, c.lastRatesOK
}

// Reset empties the cache for another model or training, keeping its maps' room.
func (c *BoundsCache) Reset() {
	layers, logits, tp, acts := c.layers, c.logits, c.tp, c.acts
	clear(layers)
	clear(logits)
	clear(tp)
	clear(acts)
	*c = BoundsCache{layers: layers, logits: logits, tp: tp, acts: acts}
}

// layersOf is what the layers' compute times depend on beyond their layerKey: the
// estimator (its constants), the model, the training and the cluster (its GPU's
// rates).
type layersOf struct {
	e        *Estimator
	model    model.Arch
	moe      model.MoE
	mla      model.MLA
	training Training
	cl       *topology.Cluster
	ok       bool
}

func newLayersOf(e *Estimator, a model.Arch, t Training, cl *topology.Cluster) layersOf {
	o := layersOf{e: e, model: a, training: t, cl: cl, ok: true}
	// The model's parts compared by value, not by address.
	if a.MoE != nil {
		o.moe, o.model.MoE = *a.MoE, &o.moe
	}
	if a.MLA != nil {
		o.mla, o.model.MLA = *a.MLA, &o.mla
	}
	return o
}

func (o *layersOf) same(p *layersOf) bool {
	a, b := o.model, p.model
	if (a.MoE == nil) != (b.MoE == nil) || (a.MLA == nil) != (b.MLA == nil) || a.MoE != nil && *a.MoE != *b.MoE || a.MLA != nil && *a.MLA != *b.MLA {
		return false
	}
	a.MoE, a.MLA, b.MoE, b.MLA = nil, nil, nil, nil
	return o.ok && p.ok && o.e == p.e && o.cl == p.cl && o.training == p.training && a == b
}

// ResetFor empties the cache for a search of model a and training t on cluster cl
// with e, as Reset, but keeps the layers' compute times when the cache's last
// search was of the same: they depend on nothing else, so a process that searches
// a model again (other GPU counts, constraints or free nodes) times each kind of
// layer once.
func (c *BoundsCache) ResetFor(e *Estimator, a model.Arch, t Training, cl *topology.Cluster) {
	of := newLayersOf(e, a, t, cl)
	if !of.same(&c.layersOf) {
		c.Reset()
	} else {
		layers := c.layers
		c.layers = nil
		c.Reset()
		c.layers = layers
	}
	c.layersOf = of
}

// holdsLayersOf tells whether the layers' times c holds are of e and of req's
// model, training and cluster (ResetFor's last search): then every time it holds
// under a layerKey is the one layerCompute gives req's layouts.
func (c *BoundsCache) holdsLayersOf(e *Estimator, req *Request) bool {
	of := newLayersOf(e, req.Model, req.Training, req.Cluster)
	return of.same(&c.layersOf)
}

// attnDims are a model's attention widths over its hidden size, as the bounds'
// exposure inputs take them: the query and attention output widths apart (q, v),
// the keys and values saved (kv), and the query and output together (qv).
type attnDims struct{ q, v, kv, qv float64 }

// modelDims is the model's attnDims, computed once per cache (c may be nil).
func (c *BoundsCache) modelDims(a *model.Arch) attnDims {
	if c != nil && c.hasDims {
		return c.dims
	}
	h := float64(a.Hidden)
	d := attnDims{q: float64(a.QDim()) / h, v: float64(a.VOutDim()) / h, kv: float64(a.KVSavedDim()) / h, qv: float64(a.QDim()+a.VOutDim()) / h}
	if c != nil {
		c.dims, c.hasDims = d, true
	}
	return d
}

// actKey is what activationsPerLayer depends on of a request besides the model
// and the training's other fields, which a cache holds one of. Its small fields are
// packed into one word (actFlags): a key without padding hashes and compares as
// one block of memory.
type actKey struct {
	mbs, cp, tp, seq int
	share            uint64 // the recomputed share's bits
	flags            uint64 // actFlags
}

// actFlags packs the recomputation's code and modules and the switches of an
// actKey.
func actFlags(rc, mods uint8, sp, unfused, fp8, noDropout bool) uint64 {
	f := uint64(rc) | uint64(mods)<<8
	for i, b := range [4]bool{sp, unfused, fp8, noDropout} {
		if b {
			f |= 1 << (16 + i)
		}
	}
	return f
}

// recomputeCode numbers the recomputation settings for actKey (0: another,
// not kept).
func recomputeCode(r Recompute) uint8 {
	switch r {
	case RecomputeNone:
		return 1
	case RecomputeSelective:
		return 2
	case RecomputeFull:
		return 3
	case RecomputeOps:
		return 4
	}
	return 0
}

// activationsPerLayer is activationsPerLayer(req, stageLayers), kept in c (which
// may be nil).
func (c *BoundsCache) activationsPerLayer(req *Request, stageLayers int) float64 {
	l, t := &req.Layout, &req.Training
	rc := recomputeCode(l.Recompute)
	if c == nil || rc == 0 {
		return activationsPerLayer(req, stageLayers)
	}
	k := actKey{mbs: l.MicroBatch, cp: l.CP, tp: l.TP, seq: t.SeqLen, share: math.Float64bits(l.recomputeShare(stageLayers)),
		flags: actFlags(rc, l.recomputeMask(), l.SP, t.UnfusedAttention, t.FP8Activations, t.NoDropout)}
	if v, ok := c.acts[k]; ok {
		return v
	}
	if c.acts == nil {
		c.acts = make(map[actKey]float64)
	}
	v := activationsPerLayer(req, stageLayers)
	c.acts[k] = v
	return v
}

// modelParams is a.Params(), computed once per cache (c may be nil).
func (c *BoundsCache) modelParams(a *model.Arch) *model.Params {
	if c == nil {
		p := a.Params()
		return &p
	}
	if !c.hasParams {
		c.params, c.hasParams = a.Params(), true
	}
	return &c.params
}

// normalise sets *req to normalise(*req), the training's part normalised once per
// cache (when c is not nil): a cache is for one model, training and cluster until
// Reset or ResetFor, as its layers' times, parameter counts and attention widths
// already are, so the first request's training is every request's. (Comparing each
// request's training with it, 240 bytes with seven strings, was about 1 % of a warm
// search: once for each of its thousands of shapes.)
func (c *BoundsCache) normalise(req *Request) {
	if c == nil {
		*req = normalise(*req)
		return
	}
	if !c.trained {
		c.trained = true
		c.trainOut = req.Training.Normalise()
		c.spWithTP = sequenceParallelWithTP(c.trainOut)
	}
	req.Training = c.trainOut
	normaliseLayout(req, c.spWithTP) // in place: a Request is 600 bytes
}

// outputLayer is the output layer's forward, backward and weight-gradient GEMM
// times for tokens tokens and a vocabulary slice of vocab (16 bits under fp8 too),
// kept in c by (tokens, vocab) when c is not nil.
func (c *BoundsCache) outputLayer(e *Estimator, rates *gpuRates, tokens, vocab, h float64) (fwd, bwd, w float64) {
	k := [2]uint64{math.Float64bits(tokens), math.Float64bits(vocab)} // bits: hashed whole (float64 keys hash per field)
	if c != nil {
		// A search's shapes come in runs of one micro-batch and TP: the last
		// times are compared before the map is hashed.
		if c.lastLogits.ok && c.lastLogits.k == k {
			t := c.lastLogits.v
			return t[0], t[1], t[2]
		}
		if t, ok := c.logits[k]; ok {
			c.lastLogits.k, c.lastLogits.v, c.lastLogits.ok = k, t, true
			return t[0], t[1], t[2]
		}
	}
	r16 := rates.bf16()
	fwd = e.k.gemmTime(gemm{tokens, vocab, h, 1, false}, &r16)
	w = e.k.gemmTime(gemm{h, vocab, tokens, 1, false}, &r16)
	bwd = e.k.gemmTime(gemm{tokens, h, vocab, 1, false}, &r16) + w
	if c != nil {
		if c.logits == nil {
			c.logits = map[[2]uint64][3]float64{}
		}
		c.logits[k] = [3]float64{fwd, bwd, w}
		c.lastLogits.k, c.lastLogits.v, c.lastLogits.ok = k, [3]float64{fwd, bwd, w}, true
	}
	return fwd, bwd, w
}

// layerKey is what a layer's times depend on besides the request's model, training
// and GPU.
type layerKey struct {
	tokens, sLocal, s uint64 // math.Float64bits
	tp, ep, etp, cp   int
	// flags packs the switches (layerFlags) into one word: a key without padding
	// hashes and compares as one block of memory, which a search's hundreds of
	// thousands of lookups (one a shape) notice.
	flags uint64
}

// layerFlags packs a layerKey's switches: mods (the recomputed modules) in the
// low byte, then Layout.CPAllToAll and SP, whether the layout recomputes chosen
// operators, whether the layer is an MoE layer, Layout.FP8Params (in the training
// once normalised) and Layout.OffloadActivations, which a search varies per
// layout, and with the offload whether it runs under full recomputation (only
// each layer's input is saved), then Layout.OverlapTP and
// Layout.OverlapSharedExpert, which set the collectives a layer issues from the
// host (layerCollectiveCalls), and whether the schedule runs the weight gradients
// as blocks of their own (SplitsWeightGrad: each block at its own host issue,
// layerCompute).
func layerFlags(mods uint8, switches ...bool) uint64 {
	f := uint64(mods)
	for i, b := range switches {
		if b {
			f |= 1 << (8 + i)
		}
	}
	return f
}

// layer is e.layerCompute, remembered in c (when c is not nil).
func (c *BoundsCache) layer(e *Estimator, req *Request, r *gpuRates, tokens, sLocal, s float64, moe bool) layerTimes {
	if c == nil {
		return e.layerMemoised(req, r, tokens, sLocal, s, moe)
	}
	l := &req.Layout
	k := layerKey{math.Float64bits(tokens), math.Float64bits(sLocal), math.Float64bits(s), l.TP, l.EP, l.etp(), l.CP,
		layerFlags(l.recomputeMask(), l.CPAllToAll, l.SP, l.Recompute == RecomputeOps, moe,
			req.Training.FP8Params, l.OffloadActivations, l.OffloadActivations && l.Recompute == RecomputeFull, l.OverlapTP, l.OverlapSharedExpert,
			SplitsWeightGrad(l.Schedule))}
	if lt, ok := c.layers[k]; ok {
		return lt
	}
	if c.layers == nil {
		c.layers = map[layerKey]layerTimes{}
	}
	lt := e.layerComputeAt(req, r, tokens, sLocal, s, moe)
	c.layers[k] = lt
	return lt
}

// stageKinds returns the dense and MoE layers of each pipeline stage (one chunk
// per rank: the schedules that pair stages, DualPipe, run one), in buf when it
// holds 2 × PP entries (so that a caller's array can keep them off the heap).
func stageKinds(req *Request, buf []int) (dense, moe []int) {
	a, l := &req.Model, &req.Layout
	if len(buf) < 2*l.PP {
		buf = make([]int, 2*l.PP)
	}
	dense, moe = buf[:l.PP:l.PP], buf[l.PP:2*l.PP]
	split := l.LayerSplit
	even := len(split) != l.PP
	lo := 0
	for st := range l.PP {
		n := 0
		if even {
			// EvenSplit's counts: the first layers % pp stages take one more.
			n = a.Layers / l.PP
			if st < a.Layers%l.PP {
				n++
			}
		} else {
			n = split[st]
		}
		m := a.MoELayersBefore(lo+n) - a.MoELayersBefore(lo)
		dense[st], moe[st] = n-m, m
		lo += n
	}
	// The multi-token-prediction modules' layers run on the last stage.
	if a.MoE != nil {
		moe[l.PP-1] += a.MTPLayers
	} else {
		dense[l.PP-1] += a.MTPLayers
	}
	return dense, moe
}

// stageKindsBuf is room for stageKinds' counts of up to 64 stages.
type stageKindsBuf [128]int

// dualPipePair is, under DualPipe, the layers a pipeline rank r holds — stage r
// and stage P−1−r (DeepSeek-V3 report §3.2.1; deepseek-ai/DualPipe: each rank
// builds the modules of both, so rank 0 (and P−1) holds the embedding and the
// output layer): dense and MoE layers of the two stages together, and whether the
// pair is the outermost one.
func dualPipePair(dense, moe []int, r int) (nDense, nMoE int, ends bool) {
	p := len(dense)
	o := p - 1 - r
	return dense[r] + dense[o], moe[r] + moe[o], r == 0 || o == 0
}
