package step

import (
	"math"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Bounds are cheap lower bounds on a layout's step time and memory, for pruning a
// search before the full estimate: a layout whose bound is already worse than the
// plans in hand cannot beat them.
type Bounds struct {
	// StepTime ≤ the estimate's step time: the compute of the slowest pipeline
	// stage for every micro-batch plus the pipeline's fill and drain, without any
	// communication.
	StepTime float64
	// StatesGB ≤ the estimate's memory: the GPU's share of weights, gradients and
	// optimizer states, plus the runtime reserve, plus ActivationsGB.
	StatesGB float64
	// ActivationsGB ≤ the activations the first stage holds under any schedule: the
	// micro-batches 1F1B keeps in flight (min(PP, M)), which GPipe, interleaving,
	// the zero-bubble schedules and DualPipe all keep at least.
	ActivationsGB float64
	// LayerActivationsGB ≤ one layer's activations for one micro-batch: with
	// activation offload the GPU keeps at least min(ActivationsGB, 2 ×
	// LayerActivationsGB).
	LayerActivationsGB float64
	// The parts, so that a search can vary the schedule and ZeRO stage without
	// recomputing: StepTime = (M + (P−1)/v) × PerMicroBatch, StatesGB =
	// states(Params, ZeRO) + ReserveGB + ActivationsGB.
	PerMicroBatch float64
	Params        float64 // parameters held per GPU before ZeRO sharding
	ReserveGB     float64
	// exposure is what ExposedBounds needs besides the communication's price.
	exposure exposureInputs
	// Forward, Backward and WeightGrad are the slowest stage's forward and backward
	// passes for one micro-batch and the weight-gradient GEMMs inside the backward,
	// as the estimate computes them: the zero-bubble schedules' bubbles are bounded
	// by the forwards that fill the pipeline (PipelineFillBound).
	Forward, Backward, WeightGrad, Recompute float64
	// Contention is a lower bound of what one micro-batch's hidden communication
	// adds by slowing the compute (TP overlap's), in every micro-batch but not in
	// the bubble: StepTime counts it M times.
	Contention float64
	// DualPipePerMB ≤ PerMicroBatch and DualPipeContention ≤ Contention are
	// their bounds for the layout run with DualPipe: the estimate paces it by the
	// slowest pair of stages a rank holds and prices its TP communication on that
	// pair's mean layer counts (computeParts.dualPipe), which can be fewer than
	// the slowest stage's. Equal to them when the layout cannot run DualPipe.
	DualPipePerMB, DualPipeContention float64
}

// PipelineFillBound is a lower bound of the bubble of the schedules that split the
// weight gradients apart (ZB-H1, ZB-V, DualPipe; SplitsWeightGrad) over pp ranks,
// for a stage whose forward pass of one micro-batch takes at least fwd: the rank
// that starts last cannot start before the forwards of the chunks ahead of it —
// pp − 1 stages for ZB-H1, pp − 1 half-stage chunks down the V for ZB-V, pp/2 − 1
// stages for DualPipe's middle ranks — and then runs as many blocks as every rank.
// The executed tables' spans (PipelineSpan) are never below it. It returns false
// for any other schedule.
func PipelineFillBound(s Schedule, pp int, fwd float64) (float64, bool) {
	pf := float64(pp)
	switch s {
	case ZeroBubble:
		return (pf - 1) * fwd, true
	case DualPipe:
		return max(0, pf/2-1) * fwd, true
	case ZeroBubbleV:
		return (pf - 1) * fwd / 2, true
	}
	return 0, false
}

// LowerBounds computes Bounds without placing any communication. The request must be
// valid (Estimate validates; LowerBounds only guards against division by zero).
func (e *Estimator) LowerBounds(req Request) (Bounds, bool) { return e.LowerBoundsCached(req, nil) }

// LowerBoundsCached is LowerBounds with the layers' compute times kept in c (which
// may be nil) across calls for the same model, training and cluster.
func (e *Estimator) LowerBoundsCached(req Request, c *BoundsCache) (Bounds, bool) {
	c.normalise(&req)
	a, t, l, cl := &req.Model, &req.Training, &req.Layout, req.Cluster
	if cl == nil || l.TP < 1 || l.PP < 1 || l.DP < 1 || l.CP < 1 || l.MicroBatch < 1 || t.SeqLen < 1 {
		return Bounds{}, false
	}
	r, ok := c.rates(e, cl, t.Precision)
	if !ok {
		return Bounds{}, false
	}
	// The step's compute: every micro-batch through the slowest stage, the pipeline's
	// fill and drain; the estimate adds communication and the optimizer on top.
	m := float64(t.GlobalBatch / max(1, l.DP*l.MicroBatch))
	sLocal := float64(t.SeqLen) / float64(l.CP)
	var cp computeParts
	e.computeInto(&cp, &req, &r, float64(l.MicroBatch)*sLocal, sLocal, float64(t.SeqLen), c)
	bwdLB, wUB := cp.bwd, cp.bwdW
	actLayers := float64(cp.stageLayers) * min(float64(l.PP), m)
	// The layer counts the estimate's per-layer TP communication follows: the
	// slowest stage's, and under DualPipe the slowest rank pair's means
	// (computeParts.dualPipe), which the bound also takes when the layout can run
	// DualPipe (dual).
	var dc dualPipeTimes
	dual := false
	if l.PP > 1 && l.PP%2 == 0 && l.VirtualStages <= 1 && (len(l.LayerSplit) == 0 || len(l.LayerSplit) == l.PP) {
		// DualPipe paces a micro-batch by the mean of a rank's two stages, which can
		// be less than the slowest stage: the bound takes the smaller of the two
		// (and the larger weight-gradient share, which shrinks the bubble).
		// (The pairing of DualPipe's stages, with the request's schedule set to
		// it in place and back: a request is 600 bytes.)
		sched := req.Layout.Schedule
		req.Layout.Schedule = DualPipe
		pairs := c.dualPipePairs(&req)
		req.Layout.Schedule = sched
		dc, dual = cp.dualPipeOfRanks(&req.Layout, pairs.dense, pairs.moe, pairs.firsts, cp.out[0], cp.out[1], cp.out[2], embeddingGradTime(&req, r.hbm)), true
		if dc.fwd+dc.bwd+dc.rc < cp.fwd+cp.bwd+cp.rc {
			cp.fwd, cp.bwd, cp.rc = dc.fwd, dc.bwd, dc.rc
		}
		bwdLB, wUB = min(bwdLB, dc.bwd), max(wUB, dc.bwdW)
		least := pairs.least
		actLayers = min(actLayers, least*min(float64(l.PP+1), m))
	}
	perMB := cp.fwd + cp.bwd + cp.rc
	var contention float64
	// tpExposed is the TP communication perMB counts exposed: ZeRO-3's gathers
	// hide under it as under the compute (zero3Overlap).
	var tpExposed float64
	// tpSlackUsed is the host's slack the overlapped TP collectives take
	// (tpOverlapSlack): the ring's sends run in the rest (ring.withSlack).
	var tpSlackUsed [2][2]float64
	// DualPipe's: the same compute, its TP communication on the pair's layer
	// counts (the estimate's under DualPipe), never above the others'.
	dualMB, dualCont := perMB, 0.0
	if l.TP > 1 && !l.OverlapTP {
		// TP communication is on the critical path of every micro-batch; its
		// groups are few and cached, so pricing it here is cheap and tightens the
		// bound a lot for TP layouts.
		fw, fwErr := c.profile(t.Framework)
		tp, err := e.tpCommPerMB(&req, float64(l.MicroBatch)*sLocal, float64(cp.stageLayers), tpFP8AllGathers(fw, fwErr, r.fp8), c)
		if err != nil {
			return Bounds{}, false
		}
		one := tp / ((4 + l.tpRepeats(cp.stageLayers)) * float64(cp.stageLayers)) // one collective pair (or all-reduce) per layer
		// As the estimate: no TP collectives of the dense kind around the
		// experts (the expert-TP gathers are priced by the estimate only), in
		// the share of the stage's layers (of DualPipe's pair under DualPipe).
		// MLA's down-projections on each rank's own tokens do not gather the
		// layer's input (mlaTPCollectives): the estimate prices smaller
		// collectives instead, which the bound leaves out.
		var drop float64
		if d := mlaTPCollectives(&req, cp.stageLayers); d.dropAG+d.dropRS+d.dropAR > 0 {
			drop = one * max(d.dropAG, d.dropRS, d.dropAR) * float64(cp.stageLayers)
		}
		exposed := max(0, tp*tpMoEShare(&req, cp.nDense, cp.nMoE)-drop)
		tpExposed = exposed
		perMB += exposed
		dualMB += exposed
		if dual && (dc.nDense != cp.nDense || dc.nMoE != cp.nMoE) {
			dualMB = cp.fwd + cp.bwd + cp.rc + min(exposed, max(0, tp*tpMoEShare(&req, dc.nDense, dc.nMoE)-drop))
		}
	} else if l.TP > 1 && l.SP {
		// Overlapped: what the GEMMs cannot cover (tpOverlap), bounded per
		// layer half by one all-gather and reduce-scatter pair against both GEMMs
		// (max(0, a) + max(0, b) ≥ max(0, a + b)).
		tokens := float64(l.MicroBatch) * sLocal
		us, agUs, err := c.tpCalls(e, &req, tokens)
		if err != nil {
			return Bounds{}, false
		}
		fw, fwErr := c.profile(t.Framework)
		ub, rsFP8 := tpUserbuffersOf(fw, fwErr)
		in := tpOverlapIn{ag: agUs * 1e-6, rs: (us - agUs) * 1e-6, ag8: agUs * 1e-6, rs8: (us - agUs) * 1e-6, sms: r.sms,
			userbuffers: ub, smShare: commSMsOf(fw, fwErr) / max(1, r.sms),
			agFwdUnfused: fp8AllGatherUnfused(ub, r.fp8, t.FP8Recipe), sharedHalf: newSharedHalf(&req)}
		if ub && r.fp8 {
			// fp8 buffers: half the bytes (the collectives of half the tokens).
			us8, ag8, err := c.tpCalls(e, &req, tokens/2)
			if err != nil {
				return Bounds{}, false
			}
			in.ag8 = ag8 * 1e-6
			if rsFP8 {
				in.rs8 = (us8 - ag8) * 1e-6
			}
		}
		// As the estimate (pricing.tensorParallel): what the overlap exposes and
		// its contention, on the stage's layer counts (the pair's under DualPipe).
		exposed, _, _, cont, used := tpOverlapSlack(l, &cp, in)
		tpSlackUsed = used
		tpExposed = exposed
		perMB += exposed
		dualMB, dualCont = dualMB+exposed, cont
		if dual && (dc.nDense != cp.nDense || dc.nMoE != cp.nMoE) {
			nd, nm := cp.nDense, cp.nMoE
			cp.nDense, cp.nMoE = dc.nDense, dc.nMoE
			e2, _, c2 := tpOverlap(l, &cp, in)
			cp.nDense, cp.nMoE = nd, nm
			dualMB, dualCont = cp.fwd+cp.bwd+cp.rc+min(exposed, e2), min(cont, c2)
		}
		// What the overlap takes of the SMs slows the compute it runs under
		// (pricing.assemble), in every micro-batch but not in the bubble.
		contention = cont
	}
	stepLB := (m+float64(l.PP-1)/float64(max(1, l.VirtualStages)))*perMB + m*contention
	p := c.modelParams(a)
	experts := float64(p.MoELayers) * a.ExpertParamsPerLayer()
	params := (p.Total-experts)/float64(l.TP*l.PP) + experts/float64(l.TP*l.PP*max(1, l.EP))
	o := t.Optimizer
	if t.FP8Params {
		// fp8 weights: at least 1 B per parameter held and gathered.
		o.WeightBytes = fp8ElementBytes
	}
	w, g, s := ModelStateBytes(params, o, l.ZeRO, l.DP*l.CP)
	per := c.activationsPerLayer(&req, cp.stageLayers)
	act := per * actLayers / 1e9
	if l.OffloadActivations {
		act = per * min(actLayers, 2) / 1e9 // the rest is in host memory
	}
	reserve := e.k.RuntimeReserveGB + e.k.Fragmentation*cl.GPU().MemoryGB
	x := exposureInputs{fwd: cp.fwd, bwd: cp.bwd, rc: cp.rc, tp: tpExposed, layers: float64(cp.stageLayers), m: m,
		prefetchPre: t.BackwardPrefetch == PrefetchPre}
	if l.CP > 1 {
		h, tf := float64(a.Hidden), float64(l.TP)
		d := c.modelDims(a)
		if l.CPAllToAll {
			x.ulysses = float64(l.MicroBatch) * sLocal * h * (d.q + d.kv + d.v) / (ulyssesAllToAllsPerPass * tf) * 2
		} else {
			x.ring = ringAttentionOf(l, &cp, float64(l.MicroBatch)*sLocal, h, d.kv, d.qv, tf, r.hbm, c.torchRing(t.Framework))
			x.ring.withSlack(&cp, tpSlackUsed)
		}
	}
	if l.PP > 1 {
		// Each TP rank sends at least its slice of the 16-bit activations.
		x.act = float64(l.MicroBatch) * sLocal * float64(a.Hidden) * 2 / float64(l.TP)
	}
	if l.DP*l.CP > 1 {
		x.params, x.gather, x.scatter = c.stageBytes(&req, p, cp.stageLayers, &o)
	}
	return Bounds{
		exposure:           x,
		StepTime:           stepLB,
		StatesGB:           (w+g+s)/1e9 + reserve + act,
		ActivationsGB:      act,
		LayerActivationsGB: per / 1e9,
		PerMicroBatch:      perMB,
		DualPipePerMB:      dualMB,
		DualPipeContention: dualCont,
		Params:             params,
		ReserveGB:          reserve,
		Contention:         contention,
		Forward:            cp.fwd,
		Backward:           bwdLB,
		WeightGrad:         wUB,
		Recompute:          cp.rc,
	}, true
}

// tpMoEShare is the share of a stage's per-layer TP collectives the estimate
// keeps with nDense dense and nMoE MoE layers (pricing.tensorParallel): under
// the token dispatcher a MoE layer's MLP half runs none of its own, unless its
// shared experts run as a dense MLP half (sharedExpertsTP, without their
// overlap).
func tpMoEShare(req *Request, nDense, nMoE float64) float64 {
	l := &req.Layout
	if !l.moeDispatcher() || nMoE <= 0 || sharedExpertsTP(req) && !l.OverlapSharedExpert {
		return 1
	}
	return (nDense + nMoE/2) / (nDense + nMoE)
}

// sharedExpertsTP tells whether req's MoE layers run TP collectives of their
// own under the token dispatcher: their shared experts. Megatron-Core's
// SharedExpertMLP is an MLP of Transformer Engine's column- and row-parallel
// modules split over the attention's TP group (shared_experts.py,
// gpt_layer_specs.py at core_r0.12.0, 7094270, and core_r0.14.0, 20d73fe): it
// computes on the whole sequence, so with sequence parallelism its input is
// all-gathered and its output reduce-scattered — inside those modules, as a
// dense MLP's, or, with --moe-shared-expert-overlap, by the explicit
// gather_from_sequence_parallel_region and reduce_scatter_to_sequence_parallel_region
// of pre_forward_comm and post_forward_comm on the shared experts' own stream,
// the modules' parallel_mode set to None (their backward the reverse: the
// output gradient gathered, the input gradient reduce-scattered).
func sharedExpertsTP(req *Request) bool {
	a, l := &req.Model, &req.Layout
	return l.TP > 1 && l.SP && a.MoE != nil && a.MoE.SharedExperts > 0
}

// leastRankParams is at most the dense parameters the estimate's slowest pipeline
// rank holds (stageParamsOf of its layers) under any split and schedule of the
// layout's depth: every split puts at least ⌈layers/pp⌉ layers on its busiest rank,
// and a MoE layer's dense part (attention, shared experts) or a dense layer's
// (attention, MLP) each at least the smaller of the two.
func leastRankParams(req Request, p model.Params) float64 {
	a, l := req.Model, req.Layout
	k := float64((a.Layers + l.PP - 1) / l.PP)
	mlp := p.PerLayerDenseMLP
	if a.MoE != nil {
		mlp = min(mlp, p.PerLayerShared)
	}
	dense := k*(p.PerLayerAttention+mlp)/float64(l.TP) + k*p.PerLayerNorm + p.Embedding/float64(l.TP)
	if l.PP == 1 {
		dense += p.Output / float64(l.TP)
	}
	return dense
}

// Transformer Engine's userbuffers defaults for the methods it runs each TP
// collective with, when the framework gives no per-layer configuration
// (transformer_engine/pytorch/module/base.py, initialize_ub, get_default_config, at
// NVIDIA/TransformerEngine fecb10b): "pipeline" (the forward reduce-scatters after
// the output and down projections) splits its GEMM into 4 chunks and reduce-scatters
// each on 16 SMs while the next computes, the GEMM launched on the other SMs
// (set_sm_margin); "bulk" (the backward reduce-scatter of the input gradient, and
// the re-gather of the input for the weight gradient) runs the whole collective on
// 16 SMs beside the whole GEMM; "ring_exchange" (the forward all-gathers and the
// backward all-gathers of the output gradient) sends chunks peer to peer on the
// copy engines (use_ce: common/comm_gemm_overlap/userbuffers/userbuffers.cu
// userbuffers_send issues cudaMemcpyAsync and launches its kernel signal-only, one
// thread), so it takes no SMs from the GEMM.
const (
	ubPipelineSplits = 4
	ubPipelineSMs    = 16
	ubBulkSMs        = 16
	ubRingSMs        = 0
)

// tpOverlapIn is what tpOverlap prices one micro-batch's TP overlap from: the
// time of one all-gather and one reduce-scatter of the activations, ag8 the
// all-gather with fp8 buffers (ag when the buffers are 16-bit), the GPU's SMs, how
// the framework runs it (userbuffers) and the SM share async TP's kernels take.
type tpOverlapIn struct {
	ag, rs, ag8 float64
	// rs8 is the reduce-scatter the pipelined method runs (rs, or with fp8
	// buffers where the framework runs them: framework.Profile.TPPipelinedRSFP8).
	rs8         float64
	sms         float64
	userbuffers bool
	smShare     float64
	// agFwdUnfused: without userbuffers, the forward all-gathers are not fused with
	// their GEMMs (fp8AllGatherUnfused).
	agFwdUnfused bool
	// sharedHalf: a MoE layer's shared experts run as a dense MLP half beside
	// its up and down projections (sharedExpertsTP without their overlap; their
	// modules are the dense MLP's, userbuffers "fc1" and "fc2" included).
	sharedHalf bool
}

// newSharedHalf is tpOverlapIn.sharedHalf of req.
func newSharedHalf(req *Request) bool {
	return sharedExpertsTP(req) && !req.Layout.OverlapSharedExpert
}

// fp8AllGatherUnfused reports whether PyTorch's async TP leaves the forward
// all-gathers of sequence parallelism outside its fused all-gather-matmuls: under
// torchao's rowwise recipe torchtitan keeps the 16-bit all-gather (plain
// ColwiseParallel; Float8ColwiseParallel's fp8 all-gather is tensorwise only:
// models/llama3/parallelize_llama.py at 820504e, enable_float8_tensorwise_tp) and
// the input is quantised after it, while Inductor's micro-pipeline pass fuses an
// all-gather only with the matmuls that take its result itself as their first
// operand (torch/_inductor/fx_passes/micro_pipeline_tp.py, _find_consumer_matmuls:
// aten.mm or aten._scaled_mm, directly or through a reshape). The forward
// reduce-scatters follow their _scaled_mm directly and stay fused.
func fp8AllGatherUnfused(userbuffers, fp8 bool, rec FP8Recipe) bool {
	return !userbuffers && fp8 && rec == FP8Rowwise
}

// tpOverlap is what TP comm-GEMM overlap leaves exposed of one micro-batch
// through the stage, what it hides, and what it slows the compute by (contention).
//
// Every collective sits next to one GEMM split along the tokens. A ring exchange
// (t chunks, one moving while the GEMM computes another: the first chunk computes
// before anything arrives, the last send overlaps the last chunk) exposes
// max(0, C − (t−1)/t·G). With Transformer Engine's userbuffers (in.userbuffers)
// each collective runs its own method (ubPipelineSplits and below):
//   - forward all-gathers: ring exchange, in fp8 under fp8 training (all-gather
//     buffers are fp8: initialize_ub's layers_all_gather_overlap);
//   - forward reduce-scatters: pipelined in n chunks, the last chunk's exposed and
//     each other exposed by what it outlasts the next GEMM chunk, the GEMM slowed
//     to sms − k SMs throughout;
//   - backward all-gathers of the output gradient: ring exchange beside the
//     output projection's data-gradient GEMM (proj_dgrad, fc2_dgrad), in fp8;
//   - backward reduce-scatters of the input gradient: bulk beside the whole
//     weight-gradient GEMM of the input projection (qkv_wgrad, fc1_wgrad);
//   - backward re-gathers of the input projection's input for its weight
//     gradient: bulk beside the whole data-gradient GEMM of the input projection
//     (qkv_dgrad, fc1_dgrad), in fp8 under fp8 (the buffer holds the quantized
//     input: layernorm_linear.py _LayerNormLinear.backward, TransformerEngine v2.2).
//
// The recomputed forward repeats the forward. The data and weight gradients of a
// linear layer are priced at its forward GEMM's time (the same FLOPs). Without
// userbuffers (PyTorch's async TP) every collective, forward and backward, is a
// ring exchange beside the forward GEMM it sits next to, and what it hides takes
// in.smShare of the SMs.
func tpOverlap(l *Layout, cp *computeParts, in tpOverlapIn) (exposed, hidden, contention float64) {
	exposed, _, hidden, contention, _ = tpOverlapSlack(l, cp, in)
	return exposed, hidden, contention
}

// tpOverlapSlack is tpOverlap, and used the host's slack (layerTimes.hostFwd,
// hostBwd) its exposed collectives took, per layer and pass: used[0] a dense
// layer's forward and backward, used[1] a MoE layer's. What is left of it runs
// the other communication exposed on the GPU's stream (ring.withSlack). pass
// are the forward pass's and the recomputed forward's parts of exposed.
func tpOverlapSlack(l *Layout, cp *computeParts, in tpOverlapIn) (exposed float64, pass [2]float64, hidden, contention float64, used [2][2]float64) {
	f := (float64(l.TP) - 1) / float64(l.TP)
	ring := func(c, g float64) (e, h float64) {
		e = max(0, c-f*g)
		return e, c - e
	}
	sms := max(ubPipelineSMs+1, in.sms)
	repeats := l.tpRepeats(cp.stageLayers) / 2 // recomputed forward passes per layer
	// half prices one half of a layer: the all-gather before the GEMM gIn, the
	// reduce-scatter after the GEMM gOut; ef is what one forward pass exposes, eb
	// what the backward pass does.
	half := func(gIn, gOut float64) (ef, eb, h, c float64) {
		if !in.userbuffers {
			ea, ha := ring(in.ag, gIn)
			er, hr := ring(in.rs, gOut)
			k := 2 + repeats // forward, recomputed forward, backward
			h := (ha + hr) * k
			ef = ea + er
			if in.agFwdUnfused {
				// The forward (and recomputed) all-gathers run whole, before their GEMMs.
				ef, h = ef+ha, h-ha*(1+repeats)
			}
			return ef, ea + er, h, h * in.smShare
		}
		// Forward: the all-gather by ring exchange, the reduce-scatter pipelined.
		ea, ha := ring(in.ag8, gIn)
		n := float64(ubPipelineSplits)
		gm := gOut * sms / (sms - ubPipelineSMs) // the GEMM on the SMs left to it
		chunk := in.rs8 / n
		er := min(in.rs8, chunk+(n-1)*max(0, chunk-gm/n))
		fe, fh := ea+er, ha+in.rs8-er
		fc := ha*ubRingSMs/sms + (gm - gOut)
		// Backward: the output gradient's all-gather by ring exchange beside the
		// output projection's data gradient, the input gradient's reduce-scatter in
		// bulk beside the input projection's weight gradient.
		eb, hb := ring(in.ag8, gOut)
		ew := max(0, in.rs-gIn)
		hw := in.rs - ew
		// The input's re-gather for the weight gradient (qkv_dgrad, fc1_dgrad): bulk
		// beside the input projection's data gradient.
		eg := max(0, in.ag8-gIn)
		hg := in.ag8 - eg
		be, bh := eb+ew+eg, hb+hw+hg
		bc := hb*ubRingSMs/sms + (hw+hg)*ubBulkSMs/sms
		k := 1 + repeats
		return fe, be, fh*k + bh, fc*k + bc
	}
	// layer prices a layer whose host issue adds hf and hb to its forward and
	// backward passes beyond the GPU's work (layerTimes.hostFwd, hostBwd): the
	// GPU idles that long between the host's kernels, and the communication the
	// GEMMs leave exposed runs then, on the GPU's stream, before it lengthens the
	// layer, which takes max(host issue, GPU work + exposed communication). A
	// slower GEMM hides more of the collectives beside it and lengthens the GPU's
	// work by as much: priced so, a layer the host binds never gets shorter with
	// it. The recomputed forward is the forward again, its host time too. more
	// are the exposed, hidden and contention of another half in the layer.
	layer := func(g [4]float64, mlp bool, hf, hb float64, more [4]float64) (e, ff, h, c float64, x [2]float64) {
		ef, eb, h, c := half(g[0], g[1])
		if mlp {
			ef2, eb2, h2, c2 := half(g[2], g[3])
			ef, eb, h, c = ef+ef2, eb+eb2, h+h2, c+c2
		}
		ef, eb, h, c = ef+more[0], eb+more[1], h+more[2], c+more[3]
		xf, xb := min(ef, hf), min(eb, hb) // run while the host issues the layer
		return (ef-xf)*(1+repeats) + eb - xb, ef - xf, h + xf*(1+repeats) + xb, c, [2]float64{xf, xb}
	}
	e, ff, h, c, x := layer(cp.lc.tpGEMM, true, cp.lc.hostFwd, cp.lc.hostBwd, [4]float64{})
	used[0] = x
	exposed, hidden, contention = e*cp.nDense, h*cp.nDense, c*cp.nDense
	pass = [2]float64{ff * cp.nDense, ff * repeats * cp.nDense}
	if cp.nMoE > 0 {
		// Under the token dispatcher (sequence parallelism, which the overlap needs)
		// a MoE layer's MLP half runs no TP collective of the dense kind: the
		// dispatcher routes each rank's own tokens, and with expert TP above 1 its
		// expert-TP gathers feed the permutation and are priced apart, exposed. Only
		// the attention half overlaps, and the shared experts' MLP where they run
		// one beside their own GEMMs.
		lm := &cp.lcMoE
		var shared [4]float64
		if in.sharedHalf && l.moeDispatcher() {
			shared[0], shared[1], shared[2], shared[3] = half(lm.sharedTPGEMM[0], lm.sharedTPGEMM[1])
		}
		e, ff, h, c, x := layer(lm.tpGEMM, !l.moeDispatcher(), lm.hostFwd, lm.hostBwd, shared)
		exposed, hidden, contention = exposed+e*cp.nMoE, hidden+h*cp.nMoE, contention+c*cp.nMoE
		pass[0], pass[1] = pass[0]+ff*cp.nMoE, pass[1]+ff*repeats*cp.nMoE
		used[1] = x
	}
	return exposed, pass, hidden, contention, used
}

// tpCommPerMB is the TP communication of the slowest stage for one micro-batch, as
// Estimate prices it: per layer 2 all-reduces forward and 2 backward (+2 with full
// recomputation), each an all-gather and a reduce-scatter with sequence parallelism.
//
// fp8AG: the all-gathers move fp8 (tpFP8AllGathers), as the collectives of half the
// tokens.
func (e *Estimator) tpCommPerMB(req *Request, tokens, layers float64, fp8AG bool, c *BoundsCache) (float64, error) {
	l := &req.Layout
	n := 4 + l.tpRepeats(int(layers))
	us, ag, err := c.tpCalls(e, req, tokens)
	if err != nil {
		return 0, err
	}
	if fp8AG && l.SP {
		_, ag8, err := c.tpCalls(e, req, tokens/2)
		if err != nil {
			return 0, err
		}
		us += ag8 - ag
	}
	return us * 1e-6 * n * layers, nil
}

// tpCalls is the time in µs of one TP all-reduce of a micro-batch's activations
// (an all-gather and a reduce-scatter with SP) and, with sequence parallelism, the
// all-gather's part of it, kept in c (which may be nil). Under the default rank
// order TP is the innermost dimension, so the TP groups are consecutive blocks of
// the ranks: they and their price depend only on the ranks, the job's size, TP, SP
// and the tokens.
func (c *BoundsCache) tpCalls(e *Estimator, req *Request, tokens float64) (float64, float64, error) {
	l := &req.Layout
	var k tpKey
	keep := c != nil && (l.RankOrder == "" || l.RankOrder == DefaultRankOrder)
	if keep {
		// The default order's grid holds TP × CP × DP × PP ranks (newGrid), the
		// grid made only when the price is not kept.
		k = tpKey{ranks: req.Ranks, n: l.TP * l.CP * l.DP * l.PP, tp: l.TP, sp: l.SP, tokens: math.Float64bits(tokens)}
		// A search's shapes come with and without SP in turn for one job size,
		// TP and micro-batch: the last price of each is compared before the map
		// is hashed.
		last := &c.lastTP[b2i(l.SP)]
		if last.ok && last.k == k {
			return last.v[0], last.v[1], nil
		}
		if v, ok := c.tp[k]; ok {
			*last = tpLast{k: k, v: v, ok: true}
			return v[0], v[1], nil
		}
	}
	g, err := newGrid(l)
	if err != nil {
		return 0, 0, err
	}
	p, err := e.placement(req.Cluster, req.Ranks, g, CommTP)
	if err != nil {
		return 0, 0, err
	}
	act := tokens * float64(req.Model.Hidden) * 2
	var us, agUs float64
	if l.SP {
		ag, err := e.collCost(p, collective.AllGather, act)
		if err != nil {
			return 0, 0, err
		}
		rs, err := e.collCost(p, collective.ReduceScatter, act)
		if err != nil {
			return 0, 0, err
		}
		us, agUs = ag.TimeUs+rs.TimeUs, ag.TimeUs
	} else {
		ar, err := e.collCost(p, collective.AllReduce, act)
		if err != nil {
			return 0, 0, err
		}
		us = ar.TimeUs
	}
	if keep {
		if c.tp == nil {
			c.tp = map[tpKey][2]float64{}
		}
		c.tp[k] = [2]float64{us, agUs}
		c.lastTP[b2i(l.SP)] = tpLast{k: k, v: [2]float64{us, agUs}, ok: true}
	}
	return us, agUs, nil
}

// tpLast is the last TP price tpCalls gave, with its key.
type tpLast struct {
	k  tpKey
	v  [2]float64
	ok bool
}

// tpKey is what tpCall's price depends on under the default rank order.
type tpKey struct {
	ranks  *RankMap // the same map of ranks (nil: ranks 0 … n−1)
	n, tp  int
	sp     bool
	tokens uint64 // math.Float64bits, so that the key hashes as one block
}

// Exposure are lower bounds of communication that Bounds leave out, dearer to
// price: a search prices them only for the layouts it comes to.
type Exposure struct {
	// PerMicroBatch ≤ the context-parallel communication a micro-batch exposes on
	// the slowest stage: it adds to Bounds.PerMicroBatch (and so to the bubble).
	PerMicroBatch float64
	// ZeRO3 bounds what flat ZeRO-3 exposes over the step (its gathers and
	// reduce-scatters beyond what the layers' compute and exposed communication
	// hide), for the layout run with ZeRO stage 3 (0 without data or context
	// parallelism, or with on-demand gathers): a ZeRO-3 layout's step time is at
	// least its bound plus this. It is priced against the exposed communication
	// the bounds count (Bounds.PerMicroBatch and PerMicroBatch), not the
	// estimate's, so it bounds the sum, not the estimate's ZeRO-3 part alone.
	ZeRO3 float64
	// ParamGather ≤ what ZeRO stages 1 and 2 expose over the step: the
	// distributed optimizer's all-gather of the stage's updated weights over the
	// data-parallel group, which the next forward waits for (pricing.gradientSync
	// exposes all of it); 0 without data or context parallelism.
	ParamGather float64
	// Send ≤ one pipeline send of a micro-batch's activations (or their
	// gradients) between stages (pricing.pipeline): the estimate exposes 2·c·M of
	// them over the step, c the model chunks a rank holds (VirtualStages for
	// interleaving, 2 for ZB-V, else 1), and each slows the blocks the pipeline
	// runs; 0 without pipeline parallelism.
	Send float64
}

// exposureInputs are the arithmetic of Exposure, known from the compute: the ring
// (or the Ulysses all-to-all's bytes), and the stage's compute with the bytes of one
// layer's dense weight gather and gradient reduce-scatter (expert shards and
// offload copies only add to them).
type exposureInputs struct {
	ring                 ring
	ulysses              float64
	gather, scatter      float64
	params               float64 // bytes the ZeRO 1–2 parameter all-gather moves at least
	act                  float64 // bytes one pipeline send moves at least
	fwd, bwd, rc, layers float64
	// tp is the TP communication PerMicroBatch counts exposed in one
	// micro-batch (at least what the estimate exposes).
	tp          float64
	m           float64
	prefetchPre bool
}

// ExposedBounds prices Exposure for the request b was computed for (LowerBounds),
// its groups on its rank map. What cannot be priced counts 0: the bounds stay
// bounds.
func (e *Estimator) ExposedBounds(req Request, b Bounds) Exposure {
	return e.ExposedBoundsMemo(&req, &b, nil)
}

// ExposureMemo keeps the groups and prices of the last grid ExposedBoundsMemo
// priced on (the cluster, rank map and grid of a layout), for the next request on
// the same grid: a search exposes its shapes in bound order, and shapes that differ
// only in what moves no group (recomputation, micro-batch count, the compute the
// bytes overlap) ask the same collectives of the same groups. What it keeps is what
// placement and collCost (or cutBound) return for the same arguments, so an answer
// with the memo is the answer without it. One memo serves one goroutine at a time.
type ExposureMemo struct {
	cl     *topology.Cluster
	rm     *RankMap
	g      grid
	placed [NumComms]*collective.Placement
	// prices are the collectives priced on the grid, the oldest overwritten.
	prices [exposurePrices]exposurePrice
	n      int // prices filled
	next   int // the entry overwritten next
}

// exposurePrices is how many collectives an ExposureMemo keeps: ExposedBounds
// prices at most six on a grid (the ring's two, a send, the parameter gather,
// ZeRO-3's two), so ten keep one request's and most of the one's before.
const exposurePrices = 10

type exposurePrice struct {
	c     Comm
	op    collective.Op
	bytes uint64 // math.Float64bits
	t     float64
	ok    bool
}

// on makes m the memo of grid g on cl and rm, emptied if it held another's.
func (m *ExposureMemo) on(cl *topology.Cluster, rm *RankMap, g grid) {
	if m.cl == cl && m.rm == rm && m.g == g {
		return
	}
	*m = ExposureMemo{cl: cl, rm: rm, g: g}
}

func (m *ExposureMemo) lookup(c Comm, op collective.Op, bytes uint64) (exposurePrice, bool) {
	for _, p := range m.prices[:m.n] {
		if p.c == c && p.op == op && p.bytes == bytes {
			return p, true
		}
	}
	return exposurePrice{}, false
}

func (m *ExposureMemo) keep(p exposurePrice) {
	m.prices[m.next] = p
	m.next = (m.next + 1) % exposurePrices
	m.n = max(m.n, m.next)
	if m.next == 0 {
		m.n = exposurePrices
	}
}

// ExposedBoundsMemo is ExposedBounds with the groups and prices of the grid it
// priced last kept in m (nil: none kept). It only reads *req and *b (by address: a
// search exposes thousands of shapes, and the two are 900 bytes).
func (e *Estimator) ExposedBoundsMemo(req *Request, b *Bounds, m *ExposureMemo) Exposure {
	l, x := &req.Layout, &b.exposure
	var out Exposure
	g, err := newGrid(l)
	if err != nil {
		return out
	}
	// The ring's and ZeRO-3's groups are priced twice: each placed once.
	if m == nil {
		m = &ExposureMemo{}
	}
	m.on(req.Cluster, req.Ranks, g)
	price := func(c Comm, op collective.Op, bytes float64) (float64, bool) {
		bits := math.Float64bits(bytes)
		if p, ok := m.lookup(c, op, bits); ok {
			return p.t, p.ok
		}
		t, ok := e.exposedPrice(req, g, m, c, op, bytes)
		m.keep(exposurePrice{c: c, op: op, bytes: bits, t: t, ok: ok})
		return t, ok
	}
	switch {
	case x.ulysses > 0:
		if a2a, ok := price(CommCP, collective.AllToAll, x.ulysses); ok {
			out.PerMicroBatch = a2a * ulyssesAllToAllsPerLayer * x.layers
		}
	case x.ring.cp > 1:
		if x.ring.gather {
			ag, ok1 := price(CommCP, collective.AllGather, x.ring.cp*x.ring.block)
			grad, ok2 := price(CommCP, collective.SendRecv, x.ring.gradBlock)
			if ok1 && ok2 {
				out.PerMicroBatch, _, _ = x.ring.perMB(ringPrices{gather: ag, grad: grad})
			}
		} else if p2p, ok := price(CommCP, collective.SendRecv, x.ring.block); ok {
			out.PerMicroBatch, _, _ = x.ring.perMB(ringPrices{p2p: p2p})
		}
	}
	if x.act > 0 {
		if p2p, ok := price(CommPP, collective.SendRecv, x.act); ok {
			out.Send = p2p
		}
	}
	if x.params > 0 {
		if ag, ok := price(CommDP, collective.AllGather, x.params); ok {
			out.ParamGather = ag
		}
	}
	if x.gather > 0 {
		ag, ok1 := price(CommZeRO3, collective.AllGather, x.gather)
		rs, ok2 := price(CommZeRO3, collective.ReduceScatter, x.scatter)
		if ok1 && ok2 {
			// The gathers' windows are widened by the exposed TP and CP
			// communication the bounds count per micro-batch (Bounds.PerMicroBatch,
			// Exposure.PerMicroBatch), w, as the estimate's are by its own. The
			// estimate splits its own, at least w, between the passes (zero3Overlap's
			// xF and xB), a split the bounds do not keep: the bound widens each
			// pass's window by the whole of w, so the two still add to at most the
			// estimate. A pass whose share is below w exposes no more here than
			// there, and one whose share is above it at most m·(share − w) more
			// (the exposure falls by at most m·layers times what a layer's window
			// grows): at most the estimate's communication less w, times m, in all,
			// which the estimate counts beyond the bounds' m·w.
			w := x.tp + out.PerMicroBatch
			out.ZeRO3, _, _ = zero3Overlap(ag, rs, x.fwd, x.bwd, x.rc, w, w, x.layers, x.m, x.prefetchPre)
		}
	}
	return out
}

// exposedPrice is ExposedBounds' price of collective op of bytes over the groups of
// communication c on grid g, in seconds, and whether it could be priced; the
// groups placed are kept in m.
func (e *Estimator) exposedPrice(req *Request, g grid, m *ExposureMemo, c Comm, op collective.Op, bytes float64) (float64, bool) {
	if req.Ranks == nil && g.n > exactExposureGPUs {
		return e.cutBound(req.Cluster, g, c, op, bytes), true
	}
	p := m.placed[c]
	if p == nil {
		var err error
		if p, err = e.placement(req.Cluster, req.Ranks, g, c); err != nil {
			return 0, false
		}
		m.placed[c] = p
	}
	est, err := e.collCost(p, op, bytes)
	if err != nil || c != CommPP {
		return est.TimeUs * 1e-6, err == nil
	}
	// The estimate prices each hop on its own pairs (pricing.hopSends): the
	// cheapest hop bounds every send.
	t := est.TimeUs
	for h := 1; h < g.size[DimPP]; h++ {
		hp, err := e.hopPlacement(req.Cluster, req.Ranks, g, h)
		if err != nil {
			return 0, false
		}
		est, err := e.collCost(hp, op, bytes)
		if err != nil {
			return 0, false
		}
		t = min(t, est.TimeUs)
	}
	return t * 1e-6, true
}

// exactExposureGPUs is the largest job (in GPUs) whose exposure bounds are priced
// on the groups' placements. A search asks for thousands of shapes' exposure and
// prices few of them; placing a stage's groups costs time in proportion to its
// GPUs (every concurrent group's flows on the links), so beyond this size the
// bounds come from the fabric's cuts instead (cutBound), which cost the GPUs of one
// scale-up domain. Smaller jobs keep the tighter placed bound, and their searches
// the answers they had.
const exactExposureGPUs = 4096

// cutBound is collective.Model.CutBound for rank 0's group of communication c and
// the groups that run with it (pipeline stage 0), ranks in grid order on the first
// GPUs, in seconds: the groups with ranks in rank 0's scale-up domain, and how many,
// read off the grid for that domain's GPUs alone.
func (e *Estimator) cutBound(cl *topology.Cluster, g grid, c Comm, op collective.Op, bytes float64) float64 {
	dims := groupDims(c)
	cut := collective.GroupCut{N: 1, OnePerDomain: true}
	domGPUs := cl.DomainGPUs()
	for _, d := range dims {
		cut.N *= g.size[d]
		if g.size[d] > 1 && g.stride[d] < domGPUs {
			cut.OnePerDomain = false // ranks 0 and stride share the domain
		}
	}
	if cut.N < 2 {
		return 0
	}
	index := map[int]int{} // a group's first rank → its entry in InDomain
	for r := range min(domGPUs, g.n) {
		if g.coord(r, DimPP) != 0 {
			continue
		}
		first := r
		for _, d := range dims {
			first -= g.coord(r, d) * g.stride[d]
		}
		i, ok := index[first]
		if !ok {
			i = len(cut.InDomain)
			index[first] = i
			cut.InDomain = append(cut.InDomain, 0)
		}
		cut.InDomain[i]++
	}
	return e.coll.CutBound(cl, op, bytes, cut) * 1e-6
}
