package step_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Metamorphic tests of the step model: relations between two estimates that hold
// physically whatever the calibration — more work never takes less time, slower
// hardware never makes a step faster, recomputing more never takes less time nor
// more memory — checked on layouts drawn from a fixed seed over catalog models,
// systems, frameworks, precisions, schedules and recompute modes.

// monoSeed fixes the draw; monoBases is how many valid layouts are checked.
const (
	monoSeed  = 20261128
	monoBases = 150
)

// monoHostSeed fixes a second draw, of layouts some of whose layers the host binds
// (monoHostBound): monoHostPerKind of each kind where a mechanism inside a
// host-bound layer once moved under it — a dropless MoE layer (the dispatcher
// sync), CP (the ring's sends), a schedule that splits the weight gradients apart
// — and as many others. The first draw holds few of them.
const (
	monoHostSeed    = 20261129
	monoHostPerKind = 40
)

// monoRel is the relative slack of a relation: the estimates are deterministic,
// so only rounding separates an equal pair.
const monoRel = 1e-9

var (
	monoDense      = []string{"llama3-8b", "llama2-13b", "gemma2-9b", "qwen3-32b"}
	monoMoE        = []string{"mixtral-8x7b", "qwen3-30b-a3b", "llama4-scout", "deepseek-v3"}
	monoFrameworks = []string{"megatron-core", "nemo-25.04", "torchtitan", "deepspeed", "fsdp"}
	monoSystems    = []string{"dgx-h100", "hgx-b200"}
	monoRecompute  = []step.Recompute{step.RecomputeNone, step.RecomputeSelective, step.RecomputeFull, step.RecomputeOps}
)

// monoCase is one drawn request and a name that says what it is.
type monoCase struct {
	name string
	req  step.Request
}

// monoDraw draws a request (not necessarily a valid one) from r.
func monoDraw(t testing.TB, r *rand.Rand) monoCase {
	moe := r.IntN(2) == 1
	names := monoDense
	if moe {
		names = monoMoE
	}
	m := arch(t, names[r.IntN(len(names))])
	if m.Name == "deepseek-v3" || m.Name == "llama4-scout" {
		// Fewer layers keep the draw within 32 GPUs' reach; the relations hold
		// per layer.
		m.Layers = 8
		if m.MoE != nil && m.MoE.FirstDense > 0 {
			m.MoE.FirstDense = 1
		}
	}
	if m.MoE != nil {
		moe := *m.MoE
		m.MoE = &moe
	}
	sys := monoSystems[r.IntN(len(monoSystems))]
	nodes := 1 << r.IntN(3) // 1, 2, 4 nodes of 8 GPUs
	gpus := 8 * nodes
	fw := monoFrameworks[r.IntN(len(monoFrameworks))]
	prec := step.BF16
	if r.IntN(2) == 1 {
		prec = step.FP8
	}
	pick := func(v ...int) int { return v[r.IntN(len(v))] }
	tp := pick(1, 2, 4, 8)
	pp := pick(1, 1, 2, 4)
	cp := pick(1, 1, 1, 2)
	if tp*pp*cp > gpus {
		tp, pp, cp = 1, 1, 1
	}
	dp := gpus / (tp * pp * cp)
	l := step.Layout{TP: tp, PP: pp, DP: dp, CP: cp, MicroBatch: pick(1, 1, 2), ZeRO: pick(0, 1, 1, 2, 3),
		Recompute: monoRecompute[r.IntN(len(monoRecompute))], SP: tp > 1 && r.IntN(4) != 0,
		OverlapTP: tp > 1 && r.IntN(2) == 1}
	if moe {
		l.EP = pick(1, 2, 4, 8)
		for l.EP > 1 && (tp*cp*dp)%l.EP != 0 {
			l.EP /= 2
		}
		l.ETP = pick(0, 1)
		l.OverlapEP = l.EP > 1 && r.IntN(3) == 0
	}
	if pp > 1 {
		switch r.IntN(6) {
		case 0:
			l.Schedule = step.OneFOneB
		case 1:
			l.Schedule, l.VirtualStages = step.Interleaved, 2
		case 2:
			l.Schedule = step.ZeroBubble
		case 3:
			l.Schedule = step.ZeroBubbleV
		case 4:
			l.Schedule = step.DualPipe
		default:
			l.Schedule = step.GPipe
		}
	}
	seq := pick(2048, 4096, 8192)
	tr := step.Training{SeqLen: seq, GlobalBatch: dp * l.MicroBatch * pick(2, 4, 8), Precision: prec, Framework: fw,
		CUDAGraphs: r.IntN(4) == 0}
	c := cluster(t, sys, nodes)
	name := fmt.Sprintf("%s/%s/%s/%s/tp%d-pp%d-cp%d-dp%d-ep%d-z%d-mb%d-%s-%s-seq%d-gbs%d", m.Name, sys, fw, prec,
		tp, pp, cp, dp, l.EP, l.ZeRO, l.MicroBatch, l.Recompute, l.Schedule, seq, tr.GlobalBatch)
	if tr.CUDAGraphs {
		name += "-graphs"
	}
	return monoCase{name: name, req: step.Request{Model: m, Cluster: c, Training: tr, Layout: l}}
}

// monoCases are monoBases valid requests drawn from monoSeed, with their estimates.
func monoCases(t *testing.T) ([]monoCase, []step.Result) {
	t.Helper()
	r := rand.New(rand.NewPCG(monoSeed, 1))
	var cases []monoCase
	var results []step.Result
	e := step.New()
	for tries := 0; len(cases) < monoBases && tries < 40*monoBases; tries++ {
		c := monoDraw(t, r)
		res, err := e.Estimate(c.req)
		if err != nil {
			continue
		}
		cases = append(cases, c)
		results = append(results, res)
	}
	if len(cases) < monoBases {
		t.Fatalf("only %d valid layouts of %d wanted", len(cases), monoBases)
	}
	// The draw covers every framework, precision, kind of model, schedule and
	// recompute mode, and context and expert parallelism.
	seen := map[string]bool{}
	for _, c := range cases {
		l := c.req.Layout
		seen[c.req.Training.Framework], seen[string(c.req.Training.Precision)] = true, true
		seen[string(l.Schedule)], seen[string(l.Recompute)] = true, true
		seen["moe"] = seen["moe"] || c.req.Model.MoE != nil
		seen["dense"] = seen["dense"] || c.req.Model.MoE == nil
		seen["cp"] = seen["cp"] || l.CP > 1
		seen["ep"] = seen["ep"] || l.EP > 1
	}
	want := append(slices.Clone(monoFrameworks), "bf16", "fp8", "moe", "dense", "cp", "ep", "1f1b", "interleaved", "zb-h1", "zb-v", "dualpipe", "gpipe")
	for _, rc := range monoRecompute {
		want = append(want, string(rc))
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no valid layout drawn with %s", w)
		}
	}
	return cases, results
}

// monoHostBound are valid requests drawn from monoHostSeed some of whose layers
// the default estimator prices at their host's issue (hostBinds),
// monoHostPerKind of each kind (monoHostKind).
func monoHostBound(t *testing.T) []monoCase {
	t.Helper()
	r := rand.New(rand.NewPCG(monoHostSeed, 1))
	m := monoEstimators()[0]
	var cases []monoCase
	kinds := map[string]int{}
	full := func() bool {
		for _, k := range monoHostKinds {
			if kinds[k] < monoHostPerKind {
				return false
			}
		}
		return true
	}
	for tries := 0; !full() && tries < 20000; tries++ {
		c := monoDraw(t, r)
		k := monoHostKind(c.req)
		if kinds[k] >= monoHostPerKind {
			continue
		}
		if _, ok := m.estimate(c.req); !ok || !m.hostBinds(c.req) {
			continue
		}
		kinds[k]++
		cases = append(cases, c)
	}
	if !full() {
		t.Fatalf("host-bound layouts drawn by kind: %v, %d of each wanted", kinds, monoHostPerKind)
	}
	return cases
}

// monoHostKinds are the kinds of monoHostBound's layouts.
var monoHostKinds = []string{"split weight gradients", "cp", "ep overlap", "dropless moe", "other"}

// monoHostKind is the kind of req in monoHostBound's draw: its schedule splits
// the weight gradients apart (ZB-H1, ZB-V, DualPipe), else it runs CP, else EP
// overlap, else a dropless MoE layer, else other.
func monoHostKind(req step.Request) string {
	switch {
	case step.SplitsWeightGrad(req.Layout.Schedule):
		return "split weight gradients"
	case req.Layout.CP > 1:
		return "cp"
	case req.Layout.OverlapEP:
		return "ep overlap"
	case req.Model.MoE != nil && !req.Training.MoEPadToCapacity:
		return "dropless moe"
	}
	return "other"
}

// notFaster reports whether the step of more work (or slower hardware), more, takes
// at least as long as base's.
func notFaster(base, more float64) bool { return more >= base*(1-monoRel) }

// monoEstimator is an estimator and the constants it prices with.
type monoEstimator struct {
	name string
	e    *step.Estimator
	k    step.Constants
}

// monoEstimators are the default estimator and one whose eager operators and
// kernel launches cost the host nothing (Constants.EagerOpHostUs and
// KernelLaunchUs 0), so that fewer layers are bound by their host's issue.
func monoEstimators() []monoEstimator {
	k := step.DefaultConstants()
	light := k
	light.EagerOpHostUs, light.KernelLaunchUs = 0, 0
	return []monoEstimator{{"default", step.New(), k}, {"light host", step.New().WithConstants(light), light}}
}

// estimate estimates req, reporting whether it is valid.
func (m monoEstimator) estimate(req step.Request) (step.Result, bool) {
	res, err := m.e.Estimate(req)
	return res, err == nil
}

// hostBinds reports whether some layer of req is priced at its host's issue
// rather than its GPU work: the step moves when every eager operator and kernel
// launch costs the host 0.01 µs more.
func (m monoEstimator) hostBinds(req step.Request) bool {
	k := m.k
	k.EagerOpHostUs += 0.01
	k.KernelLaunchUs += 0.01
	a, errA := m.e.Estimate(req)
	b, errB := m.e.WithConstants(k).Estimate(req)
	return errA == nil && errB == nil && a.StepTime != b.StepTime
}

// The breakdown adds up to the step time and no part of it, nor of the memory, is
// negative or NaN.
func TestMetamorphicBreakdownAddsUp(t *testing.T) {
	cases, results := monoCases(t)
	for i, c := range cases {
		res := results[i]
		b := res.Breakdown
		if s := b.Sum(); math.Abs(s-res.StepTime) > monoRel*res.StepTime {
			t.Errorf("%s: breakdown sums to %.12g s, step %.12g s", c.name, s, res.StepTime)
		}
		parts := map[string]float64{"step": res.StepTime, "forward": b.Forward, "backward": b.Backward, "recompute": b.Recompute,
			"bubble": b.Bubble, "optimizer": b.Optimizer, "contention": b.Contention,
			"weights": res.Memory.Weights, "gradients": res.Memory.Gradients, "optimizer states": res.Memory.Optimizer,
			"gathered": res.Memory.Gathered, "fp8 weights": res.Memory.FP8Weights, "activations": res.Memory.Activations,
			"logits": res.Memory.Logits, "buffers": res.Memory.Buffers, "total memory": res.Memory.Total}
		for k := range step.NumComms {
			parts["exposed "+k.String()] = b.Exposed[k]
			parts["hidden "+k.String()] = b.Hidden[k]
		}
		for n, v := range parts {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("%s: %s is %g", c.name, n, v)
			}
		}
		if !(res.StepTime > 0) {
			t.Errorf("%s: step %g s", c.name, res.StepTime)
		}
	}
}

// monoEdit is a change that gives the step more work or slower hardware.
type monoEdit struct {
	name string
	// edit changes req; false: it does not apply to req.
	edit func(t *testing.T, req *step.Request) bool
}

// monoWork are the edits that add work to a step.
var monoWork = []monoEdit{
	{"more layers", func(_ *testing.T, r *step.Request) bool {
		// One more layer per model chunk keeps the split even.
		r.Model.Layers += r.Layout.PP * max(1, r.Layout.VirtualStages)
		return true
	}},
	{"longer sequence", func(_ *testing.T, r *step.Request) bool { r.Training.SeqLen *= 2; return true }},
	{"larger global batch", func(_ *testing.T, r *step.Request) bool {
		r.Training.GlobalBatch += r.Layout.DP * r.Layout.MicroBatch
		return true
	}},
	{"top-k up", func(_ *testing.T, r *step.Request) bool {
		if r.Model.MoE == nil || r.Model.MoE.TopK >= r.Model.MoE.Experts {
			return false
		}
		m := *r.Model.MoE
		m.TopK++
		r.Model.MoE = &m
		return true
	}},
	{"larger FFN", func(_ *testing.T, r *step.Request) bool {
		r.Model.FFN += 512
		if r.Model.MoE != nil && r.Model.MoE.ExpertFFN > 0 {
			m := *r.Model.MoE
			m.ExpertFFN += 512
			r.Model.MoE = &m
		}
		return true
	}},
	{"larger hidden", func(_ *testing.T, r *step.Request) bool {
		// Wider heads: the hidden size grows by 64 per head (head_dim × heads stays
		// the hidden size unless the model states a head size).
		if r.Model.MLA != nil {
			return false
		}
		if r.Model.HeadSize == 0 {
			r.Model.HeadSize = r.Model.Hidden / r.Model.Heads
		}
		r.Model.Hidden += 64 * r.Model.Heads
		return true
	}},
}

// monoSlower are the edits that slow the hardware down.
var monoSlower = []monoEdit{
	{"lower peak FLOP/s", func(t *testing.T, r *step.Request) bool {
		return respec(t, r, func(s *topology.Spec) {
			for d, v := range s.GPU.PeakTFLOPS {
				s.GPU.PeakTFLOPS[d] = 0.8 * v
			}
		})
	}},
	{"lower HBM bandwidth", func(t *testing.T, r *step.Request) bool {
		return respec(t, r, func(s *topology.Spec) { s.GPU.MemoryBandwidthGBps *= 0.8 })
	}},
	{"lower NVLink bandwidth", func(t *testing.T, r *step.Request) bool {
		return respec(t, r, func(s *topology.Spec) {
			s.GPU.NVLinkGBps *= 0.8
			if s.Intra.GPUBandwidthGBps > 0 {
				s.Intra.GPUBandwidthGBps *= 0.8
			}
		})
	}},
	{"lower NIC bandwidth", func(t *testing.T, r *step.Request) bool {
		return respec(t, r, func(s *topology.Spec) { s.NICs.Gbps *= 0.8 })
	}},
	{"higher latencies", func(t *testing.T, r *step.Request) bool {
		c := r.Cluster
		return respec(t, r, func(s *topology.Spec) {
			s.Intra.LatencyUs = 1.5 * c.IntraLatUs
			s.NICs.LatencyUs = 1.5 * c.NetLatUs
			s.Network.SpineLatencyUs = 1.5 * c.SpineLatUs
		})
	}},
}

// respec rebuilds r's cluster from its spec as edit changes it.
func respec(t *testing.T, r *step.Request, edit func(*topology.Spec)) bool {
	t.Helper()
	s := r.Cluster.Spec
	s.GPU.PeakTFLOPS = maps.Clone(s.GPU.PeakTFLOPS)
	s.NICs.GPUNIC = slices.Clone(s.NICs.GPUNIC)
	edit(&s)
	c, err := s.Build()
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	r.Cluster = c
	return true
}

// monoPadded are cases and, for each MoE case, the same with every expert's
// tokens padded to a capacity of 1.25 × the mean (training.moe_pad_to_capacity):
// the dispatcher then needs no device-to-host sync (moeHost), whose stall the
// host charges to every dropless MoE layer.
func monoPadded(cases []monoCase) []monoCase {
	out := slices.Clone(cases)
	for _, c := range cases {
		if c.req.Model.MoE == nil {
			continue
		}
		c.name += "/padded-1.25"
		c.req.Training.MoECapacityFactor, c.req.Training.MoEPadToCapacity = 1.25, true
		out = append(out, c)
	}
	return out
}

// More work never makes a step faster, and slower hardware never does either:
// checked with the default estimator and with one whose host costs nothing, on
// the layouts drawn (monoCases, with the host-bound draw monoHostBound) and their
// MoE layouts padded to capacity, every pair. Where the host binds a layer, it is
// priced as the longer of its GPU work and its host's issue, and GPU quantities
// inside it must not move without moving the layer (docs/step-model.md,
// "Metamorphic tests"): the TP communication exposed against a GEMM and the CP
// ring's sends exposed against the attention run in the host's slack (tpOverlap,
// ring.withSlack), a dropless MoE layer's forward is ordered around its
// dispatcher's sync as the host issues it (syncedForward), under a schedule that
// splits the weight gradients apart each of the backward's blocks takes the longer
// of its GPU work and its own host issue (layerCompute), and EP overlap hides the
// all-to-alls under the layers' length, host issue included (expertParallel).
// Slower hardware can move NCCL's own choice of a call's algorithm or protocol:
// its tuning table caps LL's bandwidth whatever the links (tuning.cc llMaxBws), so
// slower links can make it leave Simple for LL where LL runs faster
// (ncclChoiceMoved; docs/step-model.md, "Metamorphic tests"): those pairs are
// counted and skipped.
func TestMetamorphicMoreWorkSlowerHardware(t *testing.T) {
	cases, _ := monoCases(t)
	cases = append(cases, monoHostBound(t)...)
	for _, m := range monoEstimators() {
		for si, set := range [][]monoEdit{monoWork, monoSlower} {
			slower := si == 1
			for _, ed := range set {
				checked, moved, choiceMoved := 0, 0, 0
				for _, c := range monoPadded(cases) {
					req := c.req
					if !ed.edit(t, &req) {
						continue
					}
					base, ok1 := m.estimate(c.req)
					more, ok2 := m.estimate(req)
					if !ok1 || !ok2 {
						continue
					}
					if slower && ncclChoiceMoved(base, more) {
						choiceMoved++
						continue
					}
					checked++
					if !notFaster(base.StepTime, more.StepTime) {
						t.Errorf("%s, %s: %s: %.6f → %.6f s", m.name, ed.name, c.name, base.StepTime, more.StepTime)
					}
					if more.StepTime > base.StepTime*(1+monoRel) {
						moved++
					}
				}
				t.Logf("%s, %s: %d pairs checked (%d slower), %d with NCCL's choice moved", m.name, ed.name, checked, moved, choiceMoved)
				// The edit must reach the estimate: a relation between equal
				// steps checks nothing.
				if checked < monoBases/10 || moved < checked/4 {
					t.Errorf("%s, %s: only %d of %d layouts checked, %d of them slower", m.name, ed.name, checked, len(cases), moved)
				}
			}
		}
	}
}

var monoOverlap = []monoEdit{
	{"TP overlap", func(_ *testing.T, r *step.Request) bool {
		if r.Layout.TP < 2 || r.Layout.OverlapTP {
			return false
		}
		r.Layout.OverlapTP = true
		return true
	}},
	{"EP overlap", func(_ *testing.T, r *step.Request) bool {
		if r.Model.MoE == nil || r.Layout.EP < 2 || r.Layout.OverlapEP {
			return false
		}
		r.Layout.OverlapEP = true
		return true
	}},
	{"shared-expert overlap", func(_ *testing.T, r *step.Request) bool {
		if r.Model.MoE == nil || r.Model.MoE.SharedExperts == 0 || r.Layout.OverlapSharedExpert {
			return false
		}
		r.Layout.OverlapSharedExpert = true
		return true
	}},
	{"parameter gather overlap", func(_ *testing.T, r *step.Request) bool {
		if r.Layout.ZeRO < 1 || r.Layout.ZeRO > 2 || r.Training.ParamGather == step.ParamGatherOverlapped {
			return false
		}
		r.Training.ParamGather = step.ParamGatherOverlapped
		return true
	}},
	{"gradient reduction under the backward", func(_ *testing.T, r *step.Request) bool {
		if !r.Training.DPReduceAfterBackward {
			return false
		}
		r.Training.DPReduceAfterBackward = false
		return true
	}},
}

// Switching an overlap on never makes a step slower than with it off by more than

// commSeconds is the time of r's communication calls whose description holds
// when, over the step.
func commSeconds(r step.Result, when string) float64 {
	var s float64
	for _, c := range r.Comms {
		if strings.Contains(c.When, when) {
			s += c.TimeUs * 1e-6 * c.PerStep
		}
	}
	return s
}

// overlapBound is the longest step the overlap's documented pricing allows with
// it on, given the step off: the step off plus the contention it adds, and:
//   - the shared-expert overlap moves the shared experts' TP collectives out of
//     their modules (and out of Transformer Engine's userbuffers overlap) onto
//     their own stream, where only the all-to-alls hide them (docs/step-model.md,
//     "The shared experts' TP collectives"): up to their whole time more;
//   - the parameter gather overlapped runs bucket by bucket, one call a bucket,
//     where off it is priced as one call a buffer after the optimizer
//     (docs/step-model.md, "ZeRO-1's parameter all-gather, overlapped"): up to the
//     bucket calls' time in place of the one call's.
//
// What a micro-batch's blocks add, the pipeline's fill and drain add too: at most
// (M + P − 1)/M times it over M micro-batches on P stages (GPipe's and 1F1B's
// bubble of P − 1 blocks; interleaved and zero-bubble schedules have less).
func overlapBound(name string, off, on step.Result) float64 {
	b := off.StepTime + max(0, on.Breakdown.Contention-off.Breakdown.Contention)
	m := float64(max(1, on.MicroBatches))
	pipe := (m + float64(max(1, on.Layout.PP)) - 1) / m
	switch name {
	case "TP overlap":
		// Under Transformer Engine's userbuffers the backward re-gathers the input
		// projections' inputs for their weight gradients, which the layouts
		// without overlap do not price (docs/step-model.md, TP overlap:
		// ub_bulk_dgrad).
		b += pipe * (commSeconds(on, "gathered again for their weight gradients") - commSeconds(off, "gathered again for their weight gradients"))
	case "shared-expert overlap":
		b += pipe * commSeconds(on, "overlapped shared experts'")
	case "parameter gather overlap":
		b += commSeconds(on, "bucket by bucket (overlap_param_gather)") - commSeconds(off, "after the optimizer")
	}
	return b
}

// Switching an overlap on never makes a step slower than with it off by more than
// the contention it adds, beyond what the overlap's pricing documents
// (overlapBound).
func TestMetamorphicOverlapOn(t *testing.T) {
	cases, _ := monoCases(t)
	for _, ed := range monoOverlap {
		checked, hostBound := 0, 0
		for _, m := range monoEstimators() {
			for _, c := range monoPadded(cases) {
				off := c.req
				// The drawn layouts may have the overlap on already: compare against it off.
				switch ed.name {
				case "TP overlap":
					off.Layout.OverlapTP = false
				case "EP overlap":
					off.Layout.OverlapEP = false
				case "gradient reduction under the backward":
					off.Training.DPReduceAfterBackward = true
				}
				on := off
				if !ed.edit(t, &on) {
					continue
				}
				ro, ok1 := m.estimate(off)
				rn, ok2 := m.estimate(on)
				if !ok1 || !ok2 {
					continue
				}
				if m.hostBinds(off) || m.hostBinds(on) {
					// The host issues what the overlap adds (the shared experts'
					// collectives on their stream, the buckets' gathers) whatever it
					// hides: see TestMetamorphicMoreWorkSlowerHardware.
					hostBound++
					continue
				}
				checked++
				if bound := overlapBound(ed.name, ro, rn); rn.StepTime > bound*(1+monoRel) {
					t.Errorf("%s, %s: %s: off %.6f s, on %.6f s, bound %.6f s (contention %.6f → %.6f s)", m.name, ed.name, c.name, ro.StepTime, rn.StepTime,
						bound, ro.Breakdown.Contention, rn.Breakdown.Contention)
				}
			}
		}
		t.Logf("%s: %d layouts, %d host-bound", ed.name, checked, hostBound)
		if checked < monoBases/20 {
			t.Errorf("%s: only %d of %d layouts checked", ed.name, checked, len(cases))
		}
	}
}

// Recomputing more never takes less time nor more memory: none ≤ selective ≤
// full in time, ≥ in memory.
func TestMetamorphicRecompute(t *testing.T) {
	cases, _ := monoCases(t)
	m := monoEstimators()[0]
	checked := 0
	for _, c := range cases {
		var res []step.Result
		for _, rc := range []step.Recompute{step.RecomputeNone, step.RecomputeSelective, step.RecomputeFull} {
			req := c.req
			req.Layout.Recompute, req.Layout.RecomputeModules, req.Layout.RecomputeLayers = rc, nil, 0
			r, ok := m.estimate(req)
			if !ok {
				break
			}
			res = append(res, r)
		}
		if len(res) < 3 {
			continue
		}
		checked++
		for i := 1; i < 3; i++ {
			if !notFaster(res[i-1].StepTime, res[i].StepTime) || res[i].Memory.Total > res[i-1].Memory.Total*(1+monoRel) ||
				res[i].Memory.Activations > res[i-1].Memory.Activations*(1+monoRel) {
				t.Errorf("%s: none / selective / full: %.6f / %.6f / %.6f s, %.3f / %.3f / %.3f GB (activations %.3f / %.3f / %.3f)", c.name,
					res[0].StepTime, res[1].StepTime, res[2].StepTime, res[0].Memory.Total, res[1].Memory.Total, res[2].Memory.Total,
					res[0].Memory.Activations, res[1].Memory.Activations, res[2].Memory.Activations)
				break
			}
		}
	}
	if checked < monoBases/4 {
		t.Errorf("only %d of %d layouts checked", checked, len(cases))
	}
}

// monoMemory are the edits that never lower the peak memory of a GPU.
var monoMemory = []monoEdit{
	{"larger micro-batch", func(_ *testing.T, r *step.Request) bool {
		r.Layout.MicroBatch *= 2
		r.Training.GlobalBatch *= 2
		return true
	}},
	{"longer sequence", func(_ *testing.T, r *step.Request) bool { r.Training.SeqLen *= 2; return true }},
	{"fewer pipeline stages", func(t *testing.T, r *step.Request) bool {
		// Half the stages on half the nodes, the same data-parallel ranks: each
		// GPU holds twice the layers, its share of them sharded as before. Not
		// for interleaving, whose in-flight micro-batches (1 + (P−1)/(P·v))·P
		// shrink with P (docs/step-model.md, "Memory"), nor where the pipeline
		// goes: GPipe holds all M micro-batches in flight, one stage one.
		l := &r.Layout
		nodes := r.Cluster.Spec.Nodes
		if l.PP < 2 || nodes < 2 || l.Schedule == step.Interleaved || (l.Schedule == step.GPipe && l.PP == 2) {
			return false
		}
		l.PP /= 2
		if l.PP == 1 {
			l.Schedule, l.VirtualStages = "", 0
		}
		r.Cluster = cluster(t, r.Cluster.Spec.Name, nodes/2)
		return true
	}},
}

// More micro-batch, a longer sequence and fewer pipeline stages for the same model
// never lower the peak memory of a GPU; a higher ZeRO stage never raises its model
// states.
func TestMetamorphicMemory(t *testing.T) {
	cases, results := monoCases(t)
	m := monoEstimators()[0]
	for _, ed := range monoMemory {
		checked := 0
		for i, c := range cases {
			req := c.req
			if !ed.edit(t, &req) {
				continue
			}
			more, ok := m.estimate(req)
			if !ok {
				continue
			}
			checked++
			if more.Memory.Total < results[i].Memory.Total*(1-monoRel) {
				t.Errorf("%s: %s: %.4f → %.4f GB", ed.name, c.name, results[i].Memory.Total, more.Memory.Total)
			}
		}
		t.Logf("%s: %d layouts", ed.name, checked)
		if checked < monoBases/20 {
			t.Errorf("%s: only %d of %d layouts checked", ed.name, checked, len(cases))
		}
	}
	states := func(m step.Memory) float64 { return m.Weights + m.Gradients + m.Optimizer }
	checked := 0
	for _, c := range cases {
		var prev step.Result
		for z := range 4 {
			req := c.req
			req.Layout.ZeRO = z
			r, ok := m.estimate(req)
			if !ok {
				prev = step.Result{}
				continue
			}
			if prev.GPUs > 0 {
				checked++
				if states(r.Memory) > states(prev.Memory)*(1+monoRel) {
					t.Errorf("ZeRO %d → %d: %s: model states %.4f → %.4f GB", z-1, z, c.name, states(prev.Memory), states(r.Memory))
				}
			}
			prev = r
		}
	}
	if checked < monoBases {
		t.Errorf("ZeRO stages: only %d pairs checked", checked)
	}
}

// Where the host binds a layer, the TP communication a GEMM leaves exposed
// (tpOverlap) runs while the GPU waits for the host's next kernel: a slower GEMM
// hides more of it and lengthens the GPU's work by as much, and the layer, the
// longer of the host's issue and the GPU's work with that communication, never gets
// shorter (docs/step-model.md, "Metamorphic tests"). A host-bound layout of the
// metamorphic draw's kind (drawn from another seed) that priced faster before
// (0.2641 → 0.2611 s at 0.8× the peak).
func TestHostBoundTPOverlapNotFaster(t *testing.T) {
	peak := func(t *testing.T, r *step.Request) bool {
		return respec(t, r, func(s *topology.Spec) {
			for d, v := range s.GPU.PeakTFLOPS {
				s.GPU.PeakTFLOPS[d] = 0.8 * v
			}
		})
	}
	for _, c := range []struct {
		name  string
		req   step.Request
		slows func(*testing.T, *step.Request) bool
	}{
		{"gemma2-9b/nemo-25.04/fp8/tp8-dp4-z1, 0.8× the peak", step.Request{Model: arch(t, "gemma2-9b"), Cluster: cluster(t, "hgx-b200", 4),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 16, Precision: step.FP8, Framework: "nemo-25.04"},
			Layout:   step.Layout{TP: 8, PP: 1, DP: 4, CP: 1, MicroBatch: 1, ZeRO: 1, Recompute: step.RecomputeNone, SP: true, OverlapTP: true}}, peak},
	} {
		m := monoEstimators()[0]
		more := c.req
		if !c.slows(t, &more) {
			t.Fatalf("%s: not edited", c.name)
		}
		a, ok1 := m.estimate(c.req)
		b, ok2 := m.estimate(more)
		if !ok1 || !ok2 {
			t.Fatalf("%s: not priced", c.name)
		}
		if !m.hostBinds(c.req) {
			t.Errorf("%s: its layers are not bound by their host", c.name)
		}
		if !notFaster(a.StepTime, b.StepTime) {
			t.Errorf("%s: %.6f → %.6f s", c.name, a.StepTime, b.StepTime)
		}
		t.Logf("%s: %.6f → %.6f s", c.name, a.StepTime, b.StepTime)
	}
}

// ncclChoiceMoved reports whether some communication call of base runs another
// algorithm or protocol in more than in base: NCCL chose otherwise on the slower
// hardware (collective.Model.ncclChoice runs NCCL's own tuning table).
func ncclChoiceMoved(base, more step.Result) bool {
	if len(base.Comms) != len(more.Comms) {
		return true
	}
	for i, c := range base.Comms {
		d := more.Comms[i]
		if c.Op != d.Op || c.Algorithm != d.Algorithm || c.Protocol != d.Protocol {
			return true
		}
	}
	return false
}

// ZeRO-3's gathers hide under each pass's own length, its own exposed TP, CP and EP
// communication included (zero3Overlap): the forward's under the forward's, the
// backward's gathers and reduce-scatters under the backward's. Shared between the
// passes in proportion to their compute, that communication gave the backward's
// window more of it as the backward grew alone, the window grew by more than its
// compute, and the step got faster (docs/step-model.md, "Metamorphic tests"). Two
// layouts of the metamorphic draw's kind, drawn from monoHostSeed: Qwen3-30B-A3B
// with EP overlap and CUDA graphs, host free, 0.440592 → 0.439556 s at 0.8× the
// HBM bandwidth before; Llama 2 13B under ZB-V with full recomputation, whose
// ZeRO-3 exposed time fell by more than its compute rose at 0.8× the peak (0.0254
// → 0.0212 s for 0.0036 s more) and its step 0.301695 → 0.300898 s.
func TestZeRO3WindowPerPass(t *testing.T) {
	hbm := func(t *testing.T, r *step.Request) bool {
		return respec(t, r, func(s *topology.Spec) { s.GPU.MemoryBandwidthGBps *= 0.8 })
	}
	peak := func(t *testing.T, r *step.Request) bool {
		return respec(t, r, func(s *topology.Spec) {
			for d, v := range s.GPU.PeakTFLOPS {
				s.GPU.PeakTFLOPS[d] = 0.8 * v
			}
		})
	}
	qwen := arch(t, "qwen3-30b-a3b")
	moe := *qwen.MoE
	qwen.MoE = &moe
	// layers is the layers' compute and exposed TP, CP and EP time over the step.
	layers := func(r step.Result) float64 {
		b := r.Breakdown
		return b.Forward + b.Backward + b.Recompute + b.Exposed[step.CommTP] + b.Exposed[step.CommCP] + b.Exposed[step.CommEP]
	}
	for _, c := range []struct {
		name  string
		m     monoEstimator
		req   step.Request
		slows func(*testing.T, *step.Request) bool
		// step: the step must not get faster; else ZeRO-3's exposed time must not
		// fall by more than the layers' time rises.
		step bool
	}{
		{"qwen3-30b-a3b/dgx-h100/megatron-core/bf16/tp8-dp4-ep2-z3, EP overlap, CUDA graphs, host free, 0.8× the HBM bandwidth", monoEstimators()[1],
			step.Request{Model: qwen, Cluster: cluster(t, "dgx-h100", 4),
				Training: step.Training{SeqLen: 4096, GlobalBatch: 8, Precision: step.BF16, Framework: "megatron-core", CUDAGraphs: true},
				Layout: step.Layout{TP: 8, PP: 1, DP: 4, CP: 1, EP: 2, ZeRO: 3, MicroBatch: 1, Recompute: step.RecomputeSelective, SP: true,
					OverlapTP: true, OverlapEP: true}}, hbm, true},
		{"llama2-13b/hgx-b200/megatron-core/fp8/tp8-pp2-dp2-z3-mb2-full-zb-v, 0.8× the peak", monoEstimators()[0],
			step.Request{Model: arch(t, "llama2-13b"), Cluster: cluster(t, "hgx-b200", 4),
				Training: step.Training{SeqLen: 2048, GlobalBatch: 16, Precision: step.FP8, Framework: "fsdp"}, // megatron-core runs no ZB-V
				Layout: step.Layout{TP: 8, PP: 2, DP: 2, CP: 1, ZeRO: 3, MicroBatch: 2, Recompute: step.RecomputeFull,
					Schedule: step.ZeroBubbleV}}, peak, false},
	} {
		more := c.req
		if !c.slows(t, &more) {
			t.Fatalf("%s: not edited", c.name)
		}
		a, ok1 := c.m.estimate(c.req)
		b, ok2 := c.m.estimate(more)
		if !ok1 || !ok2 {
			t.Fatalf("%s: not priced", c.name)
		}
		za, zb := a.Breakdown.Exposed[step.CommZeRO3], b.Breakdown.Exposed[step.CommZeRO3]
		if za <= 0 {
			t.Errorf("%s: no ZeRO-3 time exposed", c.name)
		}
		if c.step && !notFaster(a.StepTime, b.StepTime) {
			t.Errorf("%s: %.6f → %.6f s", c.name, a.StepTime, b.StepTime)
		}
		if !c.step && !notFaster(za+layers(a), zb+layers(b)) {
			t.Errorf("%s: ZeRO-3 exposed %.6f → %.6f s for the layers' %.6f → %.6f s", c.name, za, zb, layers(a), layers(b))
		}
		t.Logf("%s: %.6f → %.6f s, ZeRO-3 exposed %.6f → %.6f s, the layers %.6f → %.6f s", c.name, a.StepTime, b.StepTime, za, zb, layers(a), layers(b))
	}
}
