package calibrate

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/descent"
)

// Knobs are the constants calibration fits. Each is a field of the cluster file
// (docs/cluster-file.md), so the fitted cluster loads in every command:
// intra.efficiency, intra.latency_us, nics.efficiency, nics.latency_us, and the
// compute scale, written as gpu.peak_tflops × scale.
type Knobs struct {
	IntraEfficiency float64 `json:"intra_efficiency"`
	IntraLatencyUs  float64 `json:"intra_latency_us"`
	NICEfficiency   float64 `json:"nic_efficiency"`
	NICLatencyUs    float64 `json:"nic_latency_us"`
	// ComputeScale multiplies every dense peak of the GPU: the sustained clock under
	// the cluster's power and cooling relative to the datasheet's boost clock (a
	// power-capped H100 at 500 W sustains (500/700)^(1/3) = 0.89 of it, as the
	// catalog's H100-SXM-HBM2e-500W entry assumes), together with the library
	// build's GEMM efficiency relative to the calibrated one.
	ComputeScale float64 `json:"compute_scale"`
}

// Knob names one constant, with its bounds from physics.
type Knob struct {
	Name, Field string // the report's name and the cluster file field
	Min, Max    float64
	get         func(*Knobs) *float64
	// latency says the knob is fitted from small messages, efficiency from large ones.
	latency bool
	// intra/net/compute: the data that determine it.
	class string
	// lacking says which inputs would determine it, as the report words their
	// absence (determined's rules).
	lacking string
}

// Bounds from physics:
//   - scale-up efficiency 0.5–0.95: NVLink carries data in packets with headers and
//     flow control (NCCL reaches ~80 % of NVLink's line rate, "protocol overhead
//     ~20 %", nccl-tests#212); below half the line rate a link is broken, which
//     calibration must not learn as normal;
//   - NIC efficiency 0.5–0.98: RDMA writes of a 4 KiB MTU carry ~60–70 B of
//     transport headers each (InfiniBand LRH+BTH+RETH+ICRC, RoCE's Ethernet/IP/UDP),
//     so at most ~98 % of the line rate is payload;
//   - hop latencies: 0.1–5 µs through an NVSwitch (NCCL's own NVLink hop figure,
//     tuning.cc, is 0.6–3.4 µs by protocol), 0.5–60 µs NIC to NIC (RDMA write
//     completion is ~1–2 µs on InfiniBand; EFA's SRD with the OFI plugin's
//     progress thread is the slowest at tens of µs), the bounds of the collective
//     model's own fit (estimator/collective/accuracy FitParams);
//   - compute scale 0.5–1.15: clocks sustained between half and the boost clock,
//     with up to 15 % from a library build faster than the calibration's.
func knobs() []Knob {
	return []Knob{
		{"scale-up efficiency", "intra.efficiency", 0.5, 0.95, func(k *Knobs) *float64 { return &k.IntraEfficiency }, false, "intra",
			"no single-node sweep with messages of 64 MiB or more, nor two multi-node rows of 64 MiB or more whose time it sets"},
		{"scale-up hop latency", "intra.latency_us", 0.1, 5, func(k *Knobs) *float64 { return &k.IntraLatencyUs }, true, "intra",
			"no single-node sweep with messages under 1 MiB"},
		{"NIC efficiency", "nics.efficiency", 0.5, 0.98, func(k *Knobs) *float64 { return &k.NICEfficiency }, false, "net",
			"no multi-node sweep with two rows of 64 MiB or more whose time it sets"},
		{"NIC latency", "nics.latency_us", 0.5, 60, func(k *Knobs) *float64 { return &k.NICLatencyUs }, true, "net",
			"no multi-node sweep with messages under 1 MiB"},
		{"compute scale", "gpu.peak_tflops", 0.5, 1.15, func(k *Knobs) *float64 { return &k.ComputeScale }, false, "compute",
			"no training log"},
	}
}

// Of returns a knob's value.
func (kn Knob) Of(k Knobs) float64 { return *kn.get(&k) }

// Start returns the knobs the base cluster uses: its own overrides, or the
// calibrated defaults of its fabric generation (topology.Defaults).
func Start(spec topology.Spec) Knobs {
	d := topology.Defaults(spec.GPU.Arch, spec.Intra.Kind, spec.NICs.Kind, spec.Intra.DomainNodes > 1)
	k := Knobs{d.IntraEfficiency, d.IntraLatencyUs, d.NICEfficiency, d.NICLatencyUs, 1}
	if spec.Intra.Efficiency > 0 {
		k.IntraEfficiency = spec.Intra.Efficiency
	}
	if spec.Intra.LatencyUs > 0 {
		k.IntraLatencyUs = spec.Intra.LatencyUs
	}
	if spec.NICs.Efficiency > 0 {
		k.NICEfficiency = spec.NICs.Efficiency
	}
	if spec.NICs.LatencyUs > 0 {
		k.NICLatencyUs = spec.NICs.LatencyUs
	}
	return k
}

// Apply writes the knobs into a copy of spec.
func Apply(spec topology.Spec, k Knobs) topology.Spec {
	s := spec
	s.Intra.Efficiency, s.Intra.LatencyUs = k.IntraEfficiency, k.IntraLatencyUs
	if s.NICs.PerNode > 0 {
		s.NICs.Efficiency, s.NICs.LatencyUs = k.NICEfficiency, k.NICLatencyUs
	}
	if k.ComputeScale != 1 {
		s.GPU.PeakTFLOPS = make(map[hardware.DType]float64, len(spec.GPU.PeakTFLOPS))
		for d, v := range spec.GPU.PeakTFLOPS {
			s.GPU.PeakTFLOPS[d] = v * k.ComputeScale
		}
	}
	return s
}

// Measured is one priced measurement: a point of a sweep or a training run.
type Measured struct {
	File  string
	Line  int    // the row's line (0 for a training run)
	Op    string // the collective, or "step" for a training run
	Bytes float64
	Nodes int
	// MeasuredUs and PredictedUs are the time of one call (or step), µs.
	MeasuredUs, PredictedUs float64
	Ranks                   int
	Algo                    string
}

// RelErr is (predicted − measured) / measured.
func (m Measured) RelErr() float64 { return (m.PredictedUs - m.MeasuredUs) / m.MeasuredUs }

// pointID names one row of an input file.
type pointID struct {
	file string
	line int
}

// priceSweeps prices every point of the sweeps on spec with knobs k, with the
// model's own choice of algorithm and protocol, or with the one given in forced
// for the rows it names.
func priceSweeps(pc *placer, spec topology.Spec, k Knobs, sweeps []Sweep, forced map[pointID]collective.Options) ([]Measured, error) {
	m := collective.NewModel(collective.Default())
	n := 0
	for _, s := range sweeps {
		n += len(s.Points)
	}
	out := make([]Measured, 0, n)
	ck := pc.clusterKey(spec, k)
	for _, s := range sweeps {
		pl, err := placeSweep(pc, ck, spec, k, s)
		if err != nil {
			return nil, err
		}
		for _, p := range s.Points {
			if err := pc.err(); err != nil {
				return nil, err
			}
			opt, ok := forced[pointID{s.File, p.Line}]
			if !ok {
				opt = collective.Options{Launch: s.Launch, Algo: s.Algo, ForceProtocol: s.ForceProtocol, Protocol: s.Protocol}
			}
			e, err := pl.estimate(m, s.Op, p.Bytes, opt)
			if err != nil {
				return nil, rowErr(pc, s, p, err)
			}
			out = append(out, Measured{File: s.File, Line: p.Line, Op: s.Op.String(), Bytes: p.Bytes, Nodes: s.Nodes, Ranks: s.Ranks,
				MeasuredUs: p.TimeUs, PredictedUs: e.us, Algo: e.algo})
		}
	}
	return out, nil
}

// gpuModelRe finds a GPU's model in a name: nvidia-smi's as nccl-tests prints it
// in its device lines ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"),
// rocm-smi's as rccl-tests does ("AMD Instinct MI300X"), a measurement row's gpu
// field ("H100-SXM-80GB") and the catalog's GPU names ("A100-40GB", "B200-750W").
var gpuModelRe = regexp.MustCompile(`(?i)(?:^|[^a-z0-9])(GB300|GB200|B300|B200|H800|H200|H100|H20|A800|A100|A40|L40S|L40|L4|V100|MI355X|MI350X|MI325X|MI300X|MI300A|MI250X|MI250)(?:$|[^a-z0-9])`)

func gpuModel(name string) string {
	if m := gpuModelRe.FindStringSubmatch(name); m != nil {
		return strings.ToUpper(m[1])
	}
	return ""
}

// sameGPU refuses a sweep whose GPUs (the header's device lines, the rows' gpu)
// are of another model than the base cluster's: the link constants fitted to
// them would be another cluster's. A name whose model is not known (a cluster
// file's own GPU name) is not compared.
func sameGPU(base string, spec topology.Spec, sweeps []Sweep) error {
	want := gpuModel(spec.GPU.Name)
	if want == "" {
		return nil
	}
	for _, s := range sweeps {
		if got := gpuModel(s.Device); got != "" && got != want {
			return fileErr(s.File, 0, "the GPUs measured are %s (%s), the base cluster %s's %s (%s): a cluster's constants are fitted to measurements of its own GPUs; calibrate a base cluster of %s GPUs",
				s.Device, got, base, spec.GPU.Name, want, got)
		}
	}
	return nil
}

// sweepSpec is the base cluster as it prices a sweep: with the NCCL release the
// sweep ran, when it states one (stepcost accuracy prices each row so, by
// collective/accuracy statedNCCL), else the base's own.
func sweepSpec(spec topology.Spec, s Sweep) topology.Spec {
	if s.NCCL != "" {
		spec.NCCL = s.NCCL
	}
	return spec
}

// placer holds the placements one calibration builds, by the cluster a sweep is
// priced on (the base with the knobs tried and the measured ranges of the fold,
// the sweep's release and nodes) and the sweep's GPUs per node. A placement
// depends on nothing else (collective.Place of the cluster and the group
// collective.NodeGroups picks), and the contention coefficients it computes on
// first use are the bulk of a calibration's work: every sweep of one shape
// shares them, and so does every fit that prices the same constants — each
// file's fold and each held-out check starts from the base's constants and
// takes the same first steps, and the checks refit what the full fit fitted.
// Each placement also keeps the estimates made on it (a fresh model of the
// default constants prices a row the same every time). Reusing them is the
// computation they would repeat, so every price is the same to the bit
// (TestCalibrationUnchanged). Safe for the held-out checks' goroutines.
type placer struct {
	// base is the calibration's base cluster without its measured ranges
	// (clusterKey); nil for none.
	base *topology.Spec
	mu   sync.Mutex
	m    map[placeKey]*placement
	// ctx is the calibration's (CalibrateContext); nil for none. Placing a
	// sweep and pricing a row look at it first: the first estimates on a
	// placement of thousands of nodes take seconds, and the folds and solo fits
	// make them in parallel, so a deadline is kept between rows, not only
	// between a fit's evaluations.
	ctx context.Context
	// work bounds the working sets of the placements being built and
	// estimated at once (heap.go); none when its sem is nil.
	work workLimit
	// limit bounds what the cache holds, by the bytes its placements and their
	// estimates keep (placeRetained*, estimateRetained); held is that sum since
	// the cache last started over.
	limit int64
	held  atomic.Int64
}

// err is the calibration's context's error: non-nil once its deadline passed or
// it was cancelled.
func (pc *placer) err() error {
	if pc.ctx == nil {
		return nil
	}
	return pc.ctx.Err()
}

type placeKey struct {
	cluster    string // clusterKey
	nodes, gpn int
	nccl       string
}

// placement is one cached placement, built once (once) by the first caller,
// with the estimates made on it.
type placement struct {
	once sync.Once
	pl   *collective.Placement
	err  error
	mu   sync.Mutex
	est  map[estKey]estimate
	// pc is the placer whose cache holds it, work its working set (placeWork).
	pc   *placer
	work int64
}

type estKey struct {
	op    collective.Op
	bytes float64
	opt   collective.Options
}

type estimate struct {
	us   float64
	algo string
}

// The placer's cache is bounded by bytes (limit): the five OCI A100 sweeps build
// about 7 300 placements of two nodes, 16 full sweeps about as many, largeSweeps'
// shapes of 1 024–16 384 nodes one per set of constants tried; past the bound
// the cache starts over, which costs rebuilding and changes no price. Before,
// it was bounded at 32 768 placements whatever their size.

// newPlacer is a placer without a bound on its working sets, its cache bounded
// at maxPlacementCache.
func newPlacer(base topology.Spec) *placer {
	base.Algorithms = nil
	return &placer{base: &base, m: map[placeKey]*placement{}, limit: maxPlacementCache}
}

// retained is what a cached placement of a sweep keeps (placeRetained*).
func retained(spec topology.Spec, nodes int) int64 {
	return placeRetainedBase + placeRetainedPerGPU*int64(nodes)*int64(max(spec.GPUsPerNode, 1))
}

// clusterKey names the base cluster spec with knobs k for placeSweep: %#v
// writes every field, unexported ones and each float64 exactly, so equal keys
// are equal clusters. Callers make it once per set of knobs, not per sweep.
// Writing the whole spec is itself costly, so a spec that is the placer's base
// but for its measured ranges (reflect.DeepEqual, as every spec of one
// calibration is) is named by the knobs and the ranges alone.
func (pc *placer) clusterKey(spec topology.Spec, k Knobs) string {
	s := spec
	s.Algorithms = nil
	if pc.base != nil && reflect.DeepEqual(s, *pc.base) {
		return fmt.Sprintf("base %#v %#v", k, spec.Algorithms)
	}
	return fmt.Sprintf("%#v", Apply(spec, k))
}

// placeSweep places a sweep's ranks on the base cluster with knobs k (ck their
// clusterKey), once per cluster and shape (placer).
func placeSweep(pc *placer, ck string, spec topology.Spec, k Knobs, s Sweep) (*placement, error) {
	if err := pc.err(); err != nil {
		return nil, err
	}
	key := placeKey{ck, s.Nodes, s.GPUsPerNode, sweepSpec(spec, s).NCCL}
	pc.mu.Lock()
	e, ok := pc.m[key]
	if !ok {
		cost := retained(spec, s.Nodes)
		if len(pc.m) > 0 && pc.held.Load()+cost > pc.limit {
			clear(pc.m)
			pc.held.Store(0)
		}
		e = &placement{est: map[estKey]estimate{}, pc: pc, work: placeWork(spec, s.Nodes)}
		pc.m[key] = e
		pc.held.Add(cost)
	}
	pc.mu.Unlock()
	sp := func() topology.Spec {
		sp := Apply(sweepSpec(spec, s), k)
		sp.Nodes = s.Nodes
		return sp
	}
	e.once.Do(func() {
		release, err := pc.hold(e.work)
		if err != nil {
			e.err = err
			return
		}
		defer release()
		e.pl, e.err = place(spec, sp(), s)
	})
	if e.err != nil {
		if err := pc.err(); err != nil {
			return nil, err // stopped while waiting to place it
		}
		// Said of this sweep's file, not the first one of its shape.
		_, err := place(spec, sp(), s)
		return nil, err
	}
	return e, nil
}

// estimate is m.Estimate on the placement, made once per row and options.
func (e *placement) estimate(m *collective.Model, op collective.Op, bytes float64, opt collective.Options) (estimate, error) {
	key := estKey{op, bytes, opt}
	e.mu.Lock()
	r, ok := e.est[key]
	e.mu.Unlock()
	if ok {
		return r, nil
	}
	est, err := e.price(m, op, bytes, opt)
	if err != nil {
		return estimate{}, err
	}
	r = estimate{est.TimeUs, est.Algo.String() + "/" + est.Protocol.String()}
	e.mu.Lock()
	if _, ok := e.est[key]; !ok {
		e.est[key] = r
		e.pc.held.Add(estimateRetained)
	}
	e.mu.Unlock()
	return r, nil
}

// price is m.Estimate on the placement, its working set held from the
// placer's budget while it runs (the first estimates of each algorithm compute
// the placement's coefficients).
func (e *placement) price(m *collective.Model, op collective.Op, bytes float64, opt collective.Options) (collective.Estimate, error) {
	release, err := e.pc.hold(e.work)
	if err != nil {
		return collective.Estimate{}, err
	}
	defer release()
	return m.Estimate(e.pl, op, bytes, opt)
}

// rowErr is the error of pricing row p of sweep s: the calibration's own when
// it was stopped (while the row waited for the placer's budget, say), else
// said of the row's file and line.
func rowErr(pc *placer, s Sweep, p Point, err error) error {
	if e := pc.err(); e != nil {
		return e
	}
	return fileErr(s.File, p.Line, "%v", err)
}

// place builds the cluster sp (spec with the sweep's release and the knobs) and
// places the sweep's ranks on it.
func place(spec, sp topology.Spec, s Sweep) (*collective.Placement, error) {
	if s.GPUsPerNode > sp.GPUsPerNode {
		return nil, fileErr(s.File, 0, "%d GPUs per node, but the base cluster %s has %d", s.GPUsPerNode, spec.Name, spec.GPUsPerNode)
	}
	cl, err := sp.Build()
	if err != nil {
		return nil, fmt.Errorf("%s: the base cluster with %d nodes: %w", s.File, s.Nodes, err)
	}
	group, _, err := collective.NodeGroups(cl, s.Nodes, s.GPUsPerNode, false)
	if err != nil {
		return nil, fileErr(s.File, 0, "%d node(s) × %d GPUs on %s: %v", s.Nodes, s.GPUsPerNode, spec.Name, err)
	}
	pl, err := collective.Place(cl, group, nil)
	if err != nil {
		return nil, fileErr(s.File, 0, "%v", err)
	}
	return pl, nil
}

// Mismatch is a measured row that NCCL evidently ran with another algorithm than
// the model picks: the model's choice misses it by more than
// mismatchErr, and another of the model's algorithms prices it within half that
// error. Link constants fitted on such a row would absorb the choice into the
// link (a 2-node all-reduce that NCCL runs as a ring, priced as the double tree,
// pulls the NIC efficiency down to half the line rate and then misprices every
// other size), so the fit prices these rows with the algorithm they show, and the
// report names them; runs of them become the calibrated cluster's measured algorithm
// ranges (choices.go).
type Mismatch struct {
	File     string  `json:"file"`
	Line     int     `json:"line"`
	Bytes    float64 `json:"bytes"`
	Model    string  `json:"model"`    // the model's choice, "dbtree/simple"
	Measured string  `json:"measured"` // the choice the row shows, "ring/simple"
	// ModelErr and MatchErr are the relative errors of the two choices with the
	// base cluster's constants.
	ModelErr float64 `json:"model_err"`
	MatchErr float64 `json:"match_err"`
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s:%d (%s): measured as %s (%+.0f %%), the model picks %s (%+.0f %%)",
		m.File, m.Line, FormatBytes(m.Bytes), m.Measured, 100*m.MatchErr, m.Model, 100*m.ModelErr)
}

// mismatchErr is the error beyond which a row's algorithm choice is questioned:
// 15 %, one and a half times the collective model's own out-of-sample median on
// multi-node rows of 1 MiB and more (9.7 %, docs/calibration.md), so rows the model
// prices as well as it prices anything are never questioned.
const mismatchErr = 0.15

// matchChoices finds the mismatched rows of the sweeps with knobs k (the base's):
// each row on its own, so a file's rows are judged by nothing but themselves.
func matchChoices(pc *placer, spec topology.Spec, k Knobs, sweeps []Sweep) (map[pointID]collective.Options, []Mismatch, error) {
	m := collective.NewModel(collective.Default())
	forced := map[pointID]collective.Options{}
	var out []Mismatch
	ck := pc.clusterKey(spec, k)
	for _, s := range sweeps {
		if s.Algo != collective.Auto || s.ForceProtocol {
			continue // the run forced its algorithm or protocol: nothing to question
		}
		pl, err := placeSweep(pc, ck, spec, k, s)
		if err != nil {
			return nil, nil, err
		}
		for _, p := range s.Points {
			if err := pc.err(); err != nil {
				return nil, nil, err
			}
			auto, err := pl.price(m, s.Op, p.Bytes, collective.Options{Launch: s.Launch})
			if err != nil {
				return nil, nil, rowErr(pc, s, p, err)
			}
			autoErr := math.Abs(math.Log(auto.TimeUs / p.TimeUs))
			if autoErr <= math.Log1p(mismatchErr) {
				continue
			}
			best, bestErr := collective.Options{}, math.Inf(1)
			var bestEst collective.Estimate
			for _, a := range collective.Algorithms() {
				if !collective.AutoChoice(s.Op, a) || a == auto.Algo {
					continue // not an algorithm NCCL runs by itself, or the model's own
				}
				// Each algorithm with the protocol the model picks for it at this
				// size: a protocol is not questioned on its own, since with a slow
				// network the slowest protocol would match any large message.
				o := collective.Options{Algo: a, Launch: s.Launch}
				e, err := pl.price(m, s.Op, p.Bytes, o)
				if err != nil || !(e.TimeUs > 0) {
					continue // not applicable to this operation or placement
				}
				if d := math.Abs(math.Log(e.TimeUs / p.TimeUs)); d < bestErr {
					best, bestErr, bestEst = o, d, e
				}
			}
			if bestErr < autoErr/2 {
				forced[pointID{s.File, p.Line}] = best
				out = append(out, Mismatch{File: s.File, Line: p.Line, Bytes: p.Bytes,
					Model: auto.Algo.String() + "/" + auto.Protocol.String(), Measured: bestEst.Algo.String() + "/" + bestEst.Protocol.String(),
					ModelErr: auto.TimeUs/p.TimeUs - 1, MatchErr: bestEst.TimeUs/p.TimeUs - 1})
			}
		}
	}
	return forced, out, nil
}

// logLoss is the mean |ln(predicted/measured)|: symmetric in over- and
// under-prediction, so no size or file dominates by its magnitude.
func logLoss(ms []Measured) float64 {
	if len(ms) == 0 {
		return 0
	}
	var s float64
	for _, m := range ms {
		if !(m.PredictedUs > 0) {
			return math.Inf(1)
		}
		s += math.Abs(math.Log(m.PredictedUs / m.MeasuredUs))
	}
	return s / float64(len(ms))
}

// Inputs are the parsed measurements of one cluster.
type Inputs struct {
	Sweeps []Sweep
	Runs   []Run
	// contents names the file each content read came from, by its SHA-256.
	contents map[[sha256.Size]byte]string
}

// files lists the inputs' file names in order.
func (in Inputs) files() []string {
	var out []string
	for _, s := range in.Sweeps {
		out = append(out, s.File)
	}
	for _, r := range in.Runs {
		out = append(out, r.File)
	}
	return out
}

// without returns the inputs less one file.
func (in Inputs) without(file string) Inputs {
	var o Inputs
	for _, s := range in.Sweeps {
		if s.File != file {
			o.Sweeps = append(o.Sweeps, s)
		}
	}
	for _, r := range in.Runs {
		if r.File != file {
			o.Runs = append(o.Runs, r)
		}
	}
	return o
}

// only returns the inputs of one file.
func (in Inputs) only(file string) Inputs {
	var o Inputs
	for _, s := range in.Sweeps {
		if s.File == file {
			o.Sweeps = append(o.Sweeps, s)
		}
	}
	for _, r := range in.Runs {
		if r.File == file {
			o.Runs = append(o.Runs, r)
		}
	}
	return o
}

// determined lists the knobs the inputs constrain: scale-up constants need sweeps
// of several GPUs inside one node (or, the efficiency, at least minBoundRows large
// multi-node rows whose priced time it sets, boundBy), network constants sweeps
// across nodes; efficiencies
// need messages of 64 MiB or more (where bandwidth, not latency, sets the time),
// latencies messages under 1 MiB; the compute scale needs training runs.
func determined(pc *placer, spec topology.Spec, in Inputs, forced map[pointID]collective.Options) []Knob {
	has := map[string]bool{}
	bound := map[string]int{}
	for _, s := range in.Sweeps {
		// Across nodes, the scale-up efficiency from the large rows it sets
		// (NVLink SHARP's NVLS tree on two nodes).
		if s.GPUsPerNode > 1 && s.Nodes > 1 {
			intra, _ := boundBy(pc, spec, Start(spec), s, forced)
			for _, set := range intra {
				if set {
					bound["intra"]++
				}
			}
		}
		for _, p := range s.Points {
			// Scale-up constants from single-node sweeps; across nodes the NICs
			// set the time of most rows, and a fit of NVLink constants on those
			// would absorb whatever the network model lacks.
			if s.GPUsPerNode > 1 && s.Nodes == 1 {
				has["intra/"+bandOf(p.Bytes)] = true
			}
			if s.Nodes > 1 && spec.NICs.PerNode > 0 && spec.Intra.DomainNodes < s.Nodes {
				has["net/"+bandOf(p.Bytes)] = true
			}
		}
	}
	// A multi-node efficiency from the large rows whose priced time it sets: two
	// rows or more (one may be a stall).
	for class, n := range bound {
		if n >= minBoundRows {
			has[class+"/"+BandLarge] = true
		}
	}
	var out []Knob
	for _, kn := range knobs() {
		switch {
		case kn.class == "compute":
			if len(in.Runs) > 0 {
				out = append(out, kn)
			}
		case kn.latency && has[kn.class+"/"+BandSmall]:
			out = append(out, kn)
		case !kn.latency && has[kn.class+"/"+BandLarge]:
			out = append(out, kn)
		}
	}
	return out
}

// boundShare: a row whose priced time moves by at least this share of a change
// of an efficiency is set by that efficiency.
const boundShare = 0.5

// minBoundRows is the fewest large multi-node rows an efficiency must set for
// them to determine it.
const minBoundRows = 2

// boundBy says which efficiencies set the priced time of each large row (by
// line) of multi-node sweep s, with knobs k and the algorithm it is fitted with (the
// model's own, the sweep's NCCL_ALGO, or the one a mismatched row shows): the scale-up efficiency, the NIC efficiency, either or both. A
// 2-node all-reduce that NCCL runs as a ring or tree is set by its NICs; as
// NVLink SHARP's NVLS tree it is set by the in-switch reduction, and the NICs
// barely matter. An efficiency is fitted only from rows it sets: a row it does
// not set cannot tell its value, and a fit would absorb into it whatever else
// the model lacks at those sizes (a protocol's constants at 8–32 MiB).
func boundBy(pc *placer, spec topology.Spec, k Knobs, s Sweep, forced map[pointID]collective.Options) (intra, nic map[int]bool) {
	m := collective.NewModel(collective.Default())
	const step = 0.9
	ki, kn := k, k
	ki.IntraEfficiency *= step
	kn.NICEfficiency *= step
	var pls [3]*placement
	for i, kk := range []Knobs{k, ki, kn} {
		pl, err := placeSweep(pc, pc.clusterKey(spec, kk), spec, kk, s)
		if err != nil {
			return nil, nil
		}
		pls[i] = pl
	}
	full := 1/step - 1
	intra, nic = map[int]bool{}, map[int]bool{}
	for _, p := range s.Points {
		if bandOf(p.Bytes) != BandLarge {
			continue
		}
		if pc.err() != nil {
			// Stopped: no row is said to be set (the fit ends with the
			// context's error at its next evaluation).
			return nil, nil
		}
		opt, ok := forced[pointID{s.File, p.Line}]
		if !ok {
			opt = collective.Options{Launch: s.Launch, Algo: s.Algo, ForceProtocol: s.ForceProtocol, Protocol: s.Protocol}
		}
		var t [3]float64
		for i, pl := range pls {
			e, err := pl.price(m, s.Op, p.Bytes, opt)
			if err != nil || !(e.TimeUs > 0) {
				t[0] = math.NaN()
				break
			}
			t[i] = e.TimeUs
		}
		intra[p.Line] = t[1]/t[0]-1 >= boundShare*full
		nic[p.Line] = t[2]/t[0]-1 >= boundShare*full
	}
	return intra, nic
}

// Size bands of the report.
const (
	BandSmall  = "< 1 MiB"
	BandMedium = "1–64 MiB"
	BandLarge  = "≥ 64 MiB"
)

// Band names the size band of a message of b bytes.
func Band(b float64) string { return bandOf(b) }

func bandOf(b float64) string {
	switch {
	case b < 1<<20:
		return BandSmall
	case b < 64<<20:
		return BandMedium
	}
	return BandLarge
}

// fitRounds bounds the coordinate descent (each round tries every knob at every step).
const fitRounds = 25

// bandLoss is the mean over the groups of rows (collective × size band) of each
// group's mean |ln(predicted/measured)|: every group counts the same whatever its
// number of rows, so the many small sizes of a full sweep, or a few GiB spot checks
// repeated over files, do not decide the constants for the mid sizes alone.
func bandLoss(ms []Measured) float64 {
	sum := map[string]float64{}
	n := map[string]int{}
	for _, m := range ms {
		if !(m.PredictedUs > 0) {
			return math.Inf(1)
		}
		g := m.Op + " " + bandOf(m.Bytes)
		sum[g] += math.Abs(math.Log(m.PredictedUs / m.MeasuredUs))
		n[g]++
	}
	if len(n) == 0 {
		return 0
	}
	var s float64
	for g, v := range sum {
		s += v / float64(n[g])
	}
	return s / float64(len(n))
}

// minBandRows is the fewest rows a group (collective × size band) needs for the
// guard to judge it: five rows are five sizes of a ×2 sweep (a band spans 6 to 20
// doublings) or spot sizes repeated over files, enough that one row's noise — the
// one-off stalls nccl-tests rows show, up to 3× (nccltests.go) — cannot decide the
// group's mean alone. Smaller groups are reported but not guarded.
const minBandRows = 5

// guardTol is how much a group's mean |ln error| may grow before the guard calls it
// worse: 0.005, half the descent's finest step (1 %), which moves a group's error by
// about that much without any change in what the constants mean.
const guardTol = 0.005

// Declined is a constant the inputs determine but the fit left at the base's value,
// because moving it priced a group of rows worse than the base does.
type Declined struct {
	Knob, Field string
	// Base is the base's value, Wanted the value the fit over all constants chose.
	Base, Wanted float64
	// Group is the collective and size band that got worse, with its mean
	// |error| with the base's constants and with the wanted ones.
	Group         string
	Before, After float64
	// Max is set for an efficiency the fit drove onto its physical upper bound
	// (upperBound): the bound it reached, Group then empty.
	Max float64
	// Folds is set for a constant (or a measured range) that did not improve the
	// rows held out of its fit (validate): the number of held-out parts, Before and
	// After then the held-out mean |error| with the constant at the base's value
	// (without the range) and fitted (with it).
	Folds int
	// Range is set for a measured algorithm range declined (FormatRange), Knob and
	// Field then "measured range" and "algorithms".
	Range string
	// key is what fit holds at the base: the knob's name, or the range's rangeKey.
	key string
}

func (d Declined) String() string {
	if d.Range != "" {
		return fmt.Sprintf("measured range %s not written: fitted without each of %d parts of the inputs in turn (%s) it prices the part held out no better than the model's own choice (mean |err| %.1f %% → %.1f %%), so the inputs do not show it",
			d.Range, d.Folds, d.Group, 100*d.Before, 100*d.After)
	}
	if d.Folds > 0 {
		return fmt.Sprintf("%s (%s) left at the base's %.3g: fitted without each of %d parts of the inputs in turn (%s) it prices the part held out no better than the base's value (mean |err| %.1f %% → %.1f %%), so the inputs do not show it",
			d.Knob, d.Field, d.Base, d.Folds, d.Group, 100*d.Before, 100*d.After)
	}
	if d.Max > 0 && d.Field == "gpu.peak_tflops" {
		return fmt.Sprintf("%s (%s) left at the base's %.3g: the fit drove it to %.3g, the physical upper bound %.3g (a GPU does not run faster than its boost clock and a faster library build allow), so the runs want something other than faster compute — a layout or setting the model prices differently",
			d.Knob, d.Field, d.Base, d.Wanted, d.Max)
	}
	if d.Max > 0 {
		return fmt.Sprintf("%s (%s) left at the base's %.3g: the fit drove it to %.3g, the physical upper bound %.3g (a link does not carry more than its line rate less its headers), so the rows want something other than a faster link — most often another algorithm or protocol than the model prices for some of them",
			d.Knob, d.Field, d.Base, d.Wanted, d.Max)
	}
	return fmt.Sprintf("%s (%s) left at the base's %.3g: the fit wanted %.3g, which prices %s worse (mean |err| %.1f %% → %.1f %%); the rows disagree on it (most often NCCL runs another algorithm or protocol than the model picks for some of them)",
		d.Knob, d.Field, d.Base, d.Wanted, d.Group, 100*d.Before, 100*d.After)
}

// worseGroup returns the first group (collective × size band, in order) with at
// least minBandRows rows whose mean |ln error| grows by more than guardTol from
// before to after (both priced on the same rows in the same order).
func worseGroup(before, after []Measured) (group string, b, a float64, worse bool) {
	type acc struct {
		b, a float64
		n    int
	}
	sums := map[string]*acc{}
	var order []string
	for i := range before {
		g := before[i].Op + " " + bandOf(before[i].Bytes)
		s, ok := sums[g]
		if !ok {
			s = &acc{}
			sums[g] = s
			order = append(order, g)
		}
		s.b += math.Abs(math.Log(before[i].PredictedUs / before[i].MeasuredUs))
		s.a += math.Abs(math.Log(after[i].PredictedUs / after[i].MeasuredUs))
		s.n++
	}
	for _, g := range order {
		s := sums[g]
		if s.n < minBandRows {
			continue
		}
		mb, ma := s.b/float64(s.n), s.a/float64(s.n)
		if ma > mb+guardTol {
			return g, math.Expm1(mb), math.Expm1(ma), true
		}
	}
	return "", 0, 0, false
}

// fitted is the outcome of one fit.
type fitted struct {
	k        Knobs
	choices  []topology.AlgoRange // the measured algorithm ranges (choices.go)
	det      []Knob               // the knobs fitted (determined and not declined)
	declined []Declined
}

// fit fits the knobs the inputs determine, starting from start: first the link
// constants on the sweeps (the rows in forced priced with the algorithm they
// show), then the compute scale on the runs with those links. A link constant
// whose fitted value prices a group of rows worse than the base (the model's own
// choices, as plan and estimate will use them) is declined: the fit is redone
// over the largest set of constants that worsens no group, and the declined
// ones keep the base's value.
func fit(ctx context.Context, pc *placer, spec topology.Spec, start Knobs, in Inputs, forced map[pointID]collective.Options, frozen map[string]bool) (fitted, error) {
	// An efficiency fitted from multi-node rows must set them at its fitted
	// value: where it sets fewer than minBoundRows large rows there, the rows did
	// not determine it (the fit moved it for the sizes it barely touches, to a
	// bound as often as not), and it is kept at the base's value and the rest
	// refitted. The scale-up efficiency is judged first, and is also not taken
	// from multi-node rows when the fit leaves it or the NIC efficiency at a
	// bound (unsetEfficiency): NVLink is the same part in every H100 system, and
	// rows that would need it at half its line rate are a network's
	// (nccl-tests#290's degraded pair).
	fz := maps.Clone(frozen)
	if fz == nil {
		fz = map[string]bool{}
	}
	var declined []Declined
	for {
		f, err := fitOnce(ctx, pc, spec, start, in, forced, fz)
		if err != nil {
			return f, err
		}
		if kn, ok := upperBound(start, f); ok {
			fz[kn.Name] = true
			declined = append(declined, Declined{Knob: kn.Name, Field: kn.Field, Base: kn.Of(start), Wanted: kn.Of(f.k), Max: kn.Max})
			continue
		}
		name := unsetEfficiency(pc, spec, in, forced, f)
		if name == "" {
			f.declined = append(declined, f.declined...)
			return f, nil
		}
		fz[name] = true
	}
}

// upperBound returns the first efficiency of fit f (the link efficiencies, the
// compute scale) that moved from start onto its upper bound, within the 2 % the
// report counts as at it (Report.AtBound). No link carries more than its line
// rate less its headers and no GPU runs faster than its boost clock allows, so
// rows that want more are not telling the constant's value: the model prices them
// with something they did not run (on nccl-tests#309's 8-node and Lambda's B200
// rows, NCCL's algorithm; docs/calibration.md), and a constant fitted onto the
// bound carries that mistake to every other size and node count. It is kept at
// the base's value and the rest refitted. A lower bound is not declined: a link
// at half its line rate can be a degraded one (nccl-tests#290), which the
// cluster file must then say.
func upperBound(start Knobs, f fitted) (Knob, bool) {
	for _, kn := range f.det {
		if kn.latency {
			continue
		}
		if v := kn.Of(f.k); v != kn.Of(start) && v >= kn.Max/1.02 && v > kn.Of(start) {
			return kn, true
		}
	}
	return Knob{}, false
}

// unsetEfficiency names the efficiency of fit f that the multi-node rows did not
// determine (fit), the scale-up one first; "" if none.
func unsetEfficiency(pc *placer, spec topology.Spec, in Inputs, forced map[pointID]collective.Options, f fitted) string {
	sp := withChoices(spec, f.choices)
	if !hasSingleNode(in) {
		for _, kn := range f.det {
			if v := kn.Of(f.k); kn.class == "intra" && !kn.latency && (v <= kn.Min || v >= kn.Max) {
				return kn.Name
			}
		}
	}
	var unset []Knob
	for _, kn := range f.det {
		if kn.latency || kn.class == "compute" || kn.class == "intra" && hasSingleNode(in) {
			continue
		}
		n := 0
		for _, s := range in.Sweeps {
			if s.Nodes < 2 {
				continue
			}
			intra, nic := boundBy(pc, sp, f.k, s, forced)
			set := nic
			if kn.class == "intra" {
				set = intra
			}
			for _, b := range set {
				if b {
					n++
				}
			}
		}
		if n < minBoundRows {
			unset = append(unset, kn)
		}
	}
	for _, kn := range unset {
		if kn.class == "intra" {
			return kn.Name
		}
	}
	if len(unset) > 0 {
		return unset[0].Name
	}
	// A scale-up efficiency from multi-node rows is the weaker reading of them:
	// when the fit leaves any efficiency at a bound, the rows are not explained
	// by the two together, and the scale-up one goes first.
	if !hasSingleNode(in) {
		atBound, intra := false, ""
		for _, kn := range f.det {
			if kn.latency || kn.class == "compute" {
				continue
			}
			if v := kn.Of(f.k); v <= kn.Min || v >= kn.Max {
				atBound = true
			}
			if kn.class == "intra" {
				intra = kn.Name
			}
		}
		if atBound && intra != "" {
			return intra
		}
	}
	return ""
}

// hasSingleNode says whether the inputs have a single-node sweep of several GPUs.
func hasSingleNode(in Inputs) bool {
	for _, s := range in.Sweeps {
		if s.Nodes == 1 && s.GPUsPerNode > 1 {
			return true
		}
	}
	return false
}

// fitOnce is one fit of the determined knobs not frozen (fit).
func fitOnce(ctx context.Context, pc *placer, spec topology.Spec, start Knobs, in Inputs, forced map[pointID]collective.Options, frozen map[string]bool) (fitted, error) {
	det := determined(pc, spec, in, forced)
	var link, comp []Knob
	for _, kn := range det {
		if frozen[kn.Name] {
			continue
		}
		if kn.class == "compute" {
			comp = append(comp, kn)
		} else {
			link = append(link, kn)
		}
	}
	choices, err := fitChoices(pc, spec, start, in.Sweeps, forced)
	if err != nil {
		return fitted{}, err
	}
	choices = slices.DeleteFunc(choices, func(r topology.AlgoRange) bool { return frozen[rangeKey(r)] })
	spec = withChoices(spec, choices)
	out := fitted{k: start, choices: choices}
	if len(link) > 0 {
		base, err := priceSweeps(pc, spec, start, in.Sweeps, nil)
		if err != nil {
			return fitted{}, err
		}
		try := func(ks []Knob) (Knobs, float64, error) {
			var ferr error
			k, loss := descent.Minimise(start, func(k Knobs) Knobs { return k }, params(ks), fitSteps, fitRounds, func(k Knobs) float64 {
				if err := ctx.Err(); err != nil {
					ferr = err
					return math.Inf(1)
				}
				ms, err := priceSweeps(pc, spec, k, in.Sweeps, forced)
				if err != nil {
					ferr = err
					return math.Inf(1)
				}
				return bandLoss(ms)
			})
			return k, loss, ferr
		}
		guard := func(k Knobs) (string, float64, float64, bool, error) {
			ms, err := priceSweeps(pc, spec, k, in.Sweeps, nil)
			if err != nil {
				return "", 0, 0, false, err
			}
			g, b, a, worse := worseGroup(base, ms)
			return g, b, a, worse, nil
		}
		full, _, err := try(link)
		if err != nil {
			return fitted{}, err
		}
		g, b, a, worse, err := guard(full)
		if err != nil {
			return fitted{}, err
		}
		if !worse {
			out.k, out.det = full, link
		} else {
			// The largest subsets first; among equals the lowest loss.
			bestLoss, bestN := math.Inf(1), -1
			for mask := 1; mask < 1<<len(link); mask++ {
				var ks []Knob
				for i, kn := range link {
					if mask&(1<<i) != 0 {
						ks = append(ks, kn)
					}
				}
				k, loss, err := try(ks)
				if err != nil {
					return fitted{}, err
				}
				_, _, _, w, err := guard(k)
				if err != nil {
					return fitted{}, err
				}
				if w || len(ks) < bestN || (len(ks) == bestN && loss >= bestLoss) {
					continue
				}
				out.k, out.det, bestLoss, bestN = k, ks, loss, len(ks)
			}
			for _, kn := range link {
				if slices.ContainsFunc(out.det, func(o Knob) bool { return o.Name == kn.Name }) {
					continue
				}
				out.declined = append(out.declined, Declined{Knob: kn.Name, Field: kn.Field, Base: kn.Of(start), Wanted: kn.Of(full),
					Group: g, Before: b, After: a})
			}
		}
	}
	if len(comp) > 0 {
		var ferr error
		out.k, _ = descent.Minimise(out.k, func(k Knobs) Knobs { return k }, params(comp), fitSteps, fitRounds, func(k Knobs) float64 {
			if err := ctx.Err(); err != nil {
				ferr = err
				return math.Inf(1)
			}
			ms, err := priceRuns(spec, k, in.Runs)
			if err != nil {
				ferr = err
				return math.Inf(1)
			}
			return logLoss(ms)
		})
		if ferr != nil {
			return fitted{}, ferr
		}
		out.det = append(out.det, comp...)
	}
	return out, nil
}

// fitSteps are the descent's multiplicative steps, coarse to fine.
var fitSteps = []float64{2, 1.3, 1.1, 1.03, 1.01, 1 / 1.01, 1 / 1.03, 1 / 1.1, 1 / 1.3, 0.5}

func params(ks []Knob) []descent.Param[Knobs] {
	out := make([]descent.Param[Knobs], len(ks))
	for i, kn := range ks {
		out[i] = descent.Param[Knobs]{Name: kn.Name, Min: kn.Min, Max: kn.Max,
			Get: func(k *Knobs) float64 { return *kn.get(k) },
			Set: func(k *Knobs, v float64) { *kn.get(k) = v }}
	}
	return out
}

// price prices every input with the knobs.
func price(pc *placer, spec topology.Spec, k Knobs, in Inputs) ([]Measured, error) {
	ms, err := priceSweeps(pc, spec, k, in.Sweeps, nil)
	if err != nil {
		return nil, err
	}
	rs, err := priceRuns(spec, k, in.Runs)
	if err != nil {
		return nil, err
	}
	return append(ms, rs...), nil
}

// ErrNoInputs is returned when there is nothing to calibrate on.
var ErrNoInputs = errors.New("no measurements: give nccl-tests output files or training logs")

// releaseNotes says, for each collective input, the NCCL release whose rules
// priced it: the one its output states, or the base's when it states none. A
// release whose rules are not the base's is priced by its own; the fitted
// cluster keeps the base's nccl, whose rules price the plans made on it (the
// constants fitted are its links', not a release's: docs/calibrate.md).
func releaseNotes(spec topology.Spec, sweeps []Sweep) []string {
	if len(sweeps) == 0 {
		return nil
	}
	base := collective.LibraryRelease(spec)
	if a := spec.GPU.Arch; a == hardware.CDNA3 || a == hardware.CDNA4 {
		return []string{"collective measurements priced by " + base}
	}
	bMaj, bMin, bOK := spec.NCCLRelease()
	var notes []string
	seen := map[string]bool{}
	for _, s := range sweeps {
		if seen[s.File] {
			continue
		}
		seen[s.File] = true
		if s.NCCL == "" {
			notes = append(notes, s.File+" states no NCCL release: priced by the base's, "+base)
			continue
		}
		n := s.File + " ran NCCL " + s.NCCL + " (its output says so): priced by its rules"
		if topology.NewerNCCLWarning("NCCL", s.NCCL) != "" {
			n = s.File + " ran NCCL " + s.NCCL + " (its output says so): priced by NCCL " + topology.NewestNCCL + "'s rules, the newest stepcost models"
		}
		if maj, min, _ := sweepSpec(spec, s).NCCLRelease(); !bOK || maj != bMaj || min != bMin {
			n += "; the fitted cluster file is written for the base's " + base
		}
		notes = append(notes, n)
	}
	return notes
}

// releaseWarnings warns, once for the base and once for each collective input,
// of a stated NCCL release newer than the newest the model knows, whose rules
// then price it (topology.Spec.NCCLRelease): the base's prices the training
// logs and the inputs that state none, an input's its own rows. None on AMD
// GPUs (RCCL's rules).
func releaseWarnings(spec topology.Spec, sweeps []Sweep) []string {
	if a := spec.GPU.Arch; a == hardware.CDNA3 || a == hardware.CDNA4 {
		return nil
	}
	var out []string
	if w := collective.ReleaseWarning(spec); w != "" {
		out = append(out, w)
	}
	seen := map[string]bool{}
	for _, s := range sweeps {
		if seen[s.File] {
			continue
		}
		seen[s.File] = true
		if w := topology.NewerNCCLWarning(s.File+": NCCL", s.NCCL); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// Calibrate fits the base cluster to the inputs and scores the fit by leaving each
// input file out in turn. base names the base (a catalog system or a file) for the
// report.
func Calibrate(base string, spec topology.Spec, in Inputs) (*Report, error) {
	return CalibrateContext(context.Background(), base, spec, in)
}

// CalibrateContext is Calibrate that stops with ctx's error when ctx is done:
// leaving each file out costs fits that grow with the square of the file count.
// It runs within DefaultHeap, or the least its inputs need (CalibrateWithin).
func CalibrateContext(ctx context.Context, base string, spec topology.Spec, in Inputs) (*Report, error) {
	return CalibrateWithin(ctx, base, spec, in, 0)
}

// calibrate is CalibrateWithin, heap at least Heap's need.
func calibrate(ctx context.Context, base string, spec topology.Spec, in Inputs, heap int64) (*Report, error) {
	files := in.files()
	if len(files) == 0 {
		return nil, ErrNoInputs
	}
	if dup := duplicate(files); dup != "" {
		return nil, fmt.Errorf("%s: given twice", dup)
	}
	if err := sameGPU(base, spec, in.Sweeps); err != nil {
		return nil, err
	}
	notes, err := sameGPURuns(base, spec, in.Runs)
	if err != nil {
		return nil, err
	}
	// The release decides the p2p LL threshold and channels per net peer and
	// Blackwell's NVLS channels (collective.LibraryRelease): each sweep is
	// priced by the one it ran, and the report says which, file by file.
	notes = append(notes, releaseNotes(spec, in.Sweeps)...)
	start := Start(spec)
	r := &Report{Base: base, Catalog: start, Notes: notes, Warnings: releaseWarnings(spec, in.Sweeps)}
	pc := newPlacer(spec)
	pc.ctx = ctx
	work, cache := budget(heap, Heap(spec, in))
	pc.work, pc.limit = workLimit{semaphore.NewWeighted(work), work}, cache

	if r.Before, err = price(pc, spec, start, in); err != nil {
		return nil, err
	}
	forced, mism, err := matchChoices(pc, spec, start, in.Sweeps)
	if err != nil {
		return nil, err
	}
	r.Mismatches = mism

	// Leave each file out: fit on the others, score it. A constant whose fit on
	// the other files prices a group of held-out rows worse than the base does is
	// frozen at the base's value (the one that helps that group most first), until
	// no group with minBandRows rows or more is priced worse out of sample.
	frozen := map[string]bool{}
	others := map[string]fitted{}
	for {
		var oos []Measured
		if oos, err = leaveOneOut(ctx, pc, spec, start, in, files, forced, frozen, others); err != nil {
			return nil, err
		}
		g, b, a, worse := worseGroup(r.Before, oos)
		if !worse {
			r.OutOfSample = oos
			break
		}
		var cands []Knob
		for _, kn := range knobs() {
			if frozen[kn.Name] {
				continue
			}
			for _, f := range files {
				if kn.Of(others[f].k) != kn.Of(start) {
					cands = append(cands, kn)
					break
				}
			}
		}
		if len(cands) == 0 { // cannot happen: with every constant at the base's, out of sample is before
			r.OutOfSample = oos
			break
		}
		best, bestErr := cands[0], math.Inf(1)
		for _, kn := range cands {
			try := maps.Clone(frozen)
			try[kn.Name] = true
			o, err := leaveOneOut(ctx, pc, spec, start, in, files, forced, try, map[string]fitted{})
			if err != nil {
				return nil, err
			}
			if e := groupErr(o, g); e < bestErr {
				best, bestErr = kn, e
			}
		}
		frozen[best.Name] = true
		wanted := 0.0
		for _, f := range files {
			if v := best.Of(others[f].k); v != best.Of(start) {
				wanted = v
				break
			}
		}
		r.Declined = append(r.Declined, Declined{Knob: best.Name, Field: best.Field, Base: best.Of(start), Wanted: wanted,
			Group: g + " (held out)", Before: b, After: a})
	}
	solo := map[string]fitted{}
	{
		// Each file alone, fitted in parallel.
		fs := make([]fitted, len(files))
		errs := make([]error, len(files))
		var wg sync.WaitGroup
		for i, f := range files {
			wg.Go(func() { fs[i], errs[i] = fit(ctx, pc, spec, start, in.only(f), forced, frozen) })
		}
		wg.Wait()
		for i, f := range files {
			if errs[i] != nil {
				return nil, errs[i]
			}
			solo[f] = fs[i]
		}
	}

	// Contradictions: a file that, fitted alone, wants a constant far from what the
	// other files want.
	excluded := map[string]bool{}
	for _, f := range files {
		for _, kn := range solo[f].det {
			if !slices.ContainsFunc(others[f].det, func(o Knob) bool { return o.Name == kn.Name }) {
				continue
			}
			a, b := kn.Of(solo[f].k), kn.Of(others[f].k)
			tol := 1.2 // efficiencies and the compute scale: 20 %
			if kn.latency {
				tol = 2 // latencies: a factor of 2
			}
			if a > b*tol || b > a*tol {
				c := Contradiction{File: f, Knob: kn.Name, Field: kn.Field, Alone: a, Others: b}
				r.Contradictions = append(r.Contradictions, c)
				excluded[f] = true
			}
		}
	}
	// Fit on everything not contradicting the rest, as long as that leaves a
	// majority; otherwise the files disagree among themselves and the fit over all
	// of them is a compromise the report says it is.
	kept := in
	if n := len(excluded); n > 0 && 2*n < len(files) {
		for f := range excluded {
			kept = kept.without(f)
			r.Excluded = append(r.Excluded, f)
		}
		slices.Sort(r.Excluded)
	} else if n > 0 {
		r.Compromise = true
	}
	all, err := fit(ctx, pc, spec, start, kept, forced, frozen)
	if err != nil {
		return nil, err
	}
	for {
		d, ok, err := validate(ctx, pc, spec, start, kept, forced, frozen, all)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		frozen[d.key] = true
		r.Declined = append(r.Declined, d)
		if all, err = fit(ctx, pc, spec, start, kept, forced, frozen); err != nil {
			return nil, err
		}
	}
	r.Fitted, r.Determined, r.Choices = all.k, all.det, all.choices
	r.Declined = append(r.Declined, all.declined...)
	// A constant the inputs determine but the fit declined is said as declined,
	// not as one the inputs lack (a training log's compute scale at its bound was
	// "kept at the base's 1: the inputs have no training log").
	for _, kn := range knobs() {
		if kn.class == "net" && spec.NICs.PerNode == 0 || slices.ContainsFunc(r.Determined, func(d Knob) bool { return d.Field == kn.Field }) ||
			slices.ContainsFunc(r.Declined, func(d Declined) bool { return d.Field == kn.Field }) {
			continue
		}
		r.Undetermined = append(r.Undetermined, fmt.Sprintf("%s (%s) kept at the base's %.4g: the inputs have %s", kn.Name, kn.Field, kn.Of(r.Catalog), kn.lacking))
	}
	if r.After, err = price(pc, withChoices(spec, all.choices), r.Fitted, in); err != nil {
		return nil, err
	}
	r.Spec = Apply(withChoices(spec, all.choices), r.Fitted)
	r.Files = files
	r.finish()
	// A fit stopped between rows may have judged a constant on what it had
	// priced so far: a calibration is answered only if nothing was stopped.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// leaveOneOut prices every file with constants fitted on the other files (the
// frozen ones kept at the base's), recording each fit in others.
func leaveOneOut(ctx context.Context, pc *placer, spec topology.Spec, start Knobs, in Inputs, files []string, forced map[pointID]collective.Options, frozen map[string]bool, others map[string]fitted) ([]Measured, error) {
	// The folds are independent: fitted in parallel, gathered in the files' order.
	fs := make([]fitted, len(files))
	priced := make([][]Measured, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			o, err := fit(ctx, pc, spec, start, in.without(f), forced, frozen)
			if err == nil {
				fs[i] = o
				priced[i], err = price(pc, withChoices(spec, o.choices), o.k, in.only(f))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var out []Measured
	for i, f := range files {
		if errs[i] != nil {
			return nil, errs[i]
		}
		others[f] = fs[i]
		out = append(out, priced[i]...)
	}
	return out, nil
}

// groupErr is the mean |ln error| of one group (collective × size band) of rows.
func groupErr(ms []Measured, group string) float64 {
	var s float64
	n := 0
	for _, m := range ms {
		if m.Op+" "+bandOf(m.Bytes) == group {
			s += math.Abs(math.Log(m.PredictedUs / m.MeasuredUs))
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

func duplicate(files []string) string {
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f] {
			return f
		}
		seen[f] = true
	}
	return ""
}

// holdOuts splits the inputs into parts for validate, each as (the rest, the
// part): every file is a part when there are two or more (files in at most
// maxFileParts groups), and the sizes of the
// sweeps taken alternately (the 1st, 3rd, … against the 2nd, 4th, …) are two
// more. Files alone cannot judge a constant that one file determines (a file of
// large messages sets an efficiency, a file of small ones holds nothing it moves);
// alternate sizes judge it on that file's other sizes. Training runs stay with
// the rest: only link constants are validated.
func holdOuts(in Inputs) (parts [][2]Inputs, how string) {
	var files []string
	for _, s := range in.Sweeps {
		if !slices.Contains(files, s.File) {
			files = append(files, s.File)
		}
	}
	if len(files) >= 2 {
		k := min(len(files), maxFileParts)
		for i := range k {
			var rest, part Inputs
			for j, s := range in.Sweeps {
				if slices.Index(files, s.File)%k == i {
					part.Sweeps = append(part.Sweeps, in.Sweeps[j])
				} else {
					rest.Sweeps = append(rest.Sweeps, in.Sweeps[j])
				}
			}
			rest.Runs = in.Runs
			parts = append(parts, [2]Inputs{rest, part})
		}
		how = "each file, and alternate sizes"
		if k < len(files) {
			how = fmt.Sprintf("the files in %d groups, and alternate sizes", k)
		}
	} else {
		how = "alternate sizes"
	}
	var a, b Inputs
	for _, s := range in.Sweeps {
		sa, sb := s, s
		sa.Points, sb.Points = nil, nil
		for i, p := range s.Points {
			if i%2 == 0 {
				sa.Points = append(sa.Points, p)
			} else {
				sb.Points = append(sb.Points, p)
			}
		}
		if len(sa.Points) > 0 {
			a.Sweeps = append(a.Sweeps, sa)
		}
		if len(sb.Points) > 0 {
			b.Sweeps = append(b.Sweeps, sb)
		}
	}
	if len(a.Sweeps) > 0 && len(b.Sweeps) > 0 {
		a.Runs, b.Runs = in.Runs, in.Runs
		parts = append(parts, [2]Inputs{a, b}, [2]Inputs{b, a})
	}
	return parts, how
}

// maxFileParts bounds the parts files are held out in (the k of a k-fold split):
// every held-out check fits once per part, and with more files than this they are
// held out in groups (the 1st, 5th, … file together), so a calibration on the 16
// files the service takes costs 6 fits per check, not 18.
const maxFileParts = 4

// heldOut is the band loss (bandLoss) of every part of parts priced with the
// constants and ranges fitted on the rest, the frozen constants kept at start.
// The parts are fitted concurrently (each fit reads forced and frozen only).
func heldOut(ctx context.Context, pc *placer, spec topology.Spec, start Knobs, parts [][2]Inputs, forced map[pointID]collective.Options, frozen map[string]bool) (float64, error) {
	priced := make([][]Measured, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := fit(ctx, pc, spec, start, p[0], forced, frozen)
			if err == nil {
				priced[i], err = priceSweeps(pc, withChoices(spec, o.choices), o.k, p[1].Sweeps, nil)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	var all []Measured
	for i := range parts {
		if errs[i] != nil {
			return 0, errs[i]
		}
		all = append(all, priced[i]...)
	}
	return bandLoss(all), nil
}

// validate checks each link constant fit f moved from start, and each measured
// range it wrote, against the rows held out of its fit: the inputs are split into
// parts (holdOuts), each part is priced with the constants and ranges fitted on
// the rest, once as fitted and once with the constant kept at start (the range
// not written). One that does not lower the held-out loss is not shown by the
// inputs: fitted on part of them it does not price the rest better, so it would
// not price the cluster's other calls better either — on p6-b200's three smallest
// sizes the EFA latency follows the 8 B row, which the other two do not bear out
// (docs/calibration.md). Where no part's fit moves the constant or writes the
// range (the loss is the same to the bit: a range of two rows, say, which no half
// of them shows), the check has nothing to judge it by and it stands. validate
// returns the one whose keeping costs the most (ok false when all earn their
// place).
func validate(ctx context.Context, pc *placer, spec topology.Spec, start Knobs, in Inputs, forced map[pointID]collective.Options, frozen map[string]bool, f fitted) (Declined, bool, error) {
	var moved []Knob
	for _, kn := range f.det {
		if kn.class != "compute" && kn.Of(f.k) != kn.Of(start) {
			moved = append(moved, kn)
		}
	}
	if len(moved) == 0 && len(f.choices) == 0 {
		return Declined{}, false, nil
	}
	parts, how := holdOuts(in)
	if len(parts) == 0 {
		return Declined{}, false, nil
	}
	with, err := heldOut(ctx, pc, spec, start, parts, forced, frozen)
	if err != nil {
		return Declined{}, false, err
	}
	var worst Declined
	gain := math.Inf(-1)
	for _, kn := range moved {
		fz := maps.Clone(frozen)
		fz[kn.Name] = true
		without, err := heldOut(ctx, pc, spec, start, parts, forced, fz)
		if err != nil {
			return Declined{}, false, err
		}
		if g := with - without; with != without && g >= -validateTol && g > gain {
			gain = g
			worst = Declined{Knob: kn.Name, Field: kn.Field, Base: kn.Of(start), Wanted: kn.Of(f.k),
				Group: how, Before: math.Expm1(without), After: math.Expm1(with), Folds: len(parts), key: kn.Name}
		}
	}
	// The measured ranges, each as a whole: held out without it (the parts' fits
	// may find it or not; without, none of them writes it).
	for _, r := range f.choices {
		fz := maps.Clone(frozen)
		fz[rangeKey(r)] = true
		without, err := heldOut(ctx, pc, spec, start, parts, forced, fz)
		if err != nil {
			return Declined{}, false, err
		}
		if g := with - without; with != without && g >= -validateTol && g > gain {
			gain = g
			worst = Declined{Knob: "measured range", Field: "algorithms", Range: FormatRange(r),
				Group: how, Before: math.Expm1(without), After: math.Expm1(with), Folds: len(parts), key: rangeKey(r)}
		}
	}
	return worst, !math.IsInf(gain, -1), nil
}

// rangeKey names a measured range by what it says — its collective, group shape
// and algorithm, not its sizes, which the parts of validate fit differently — for
// the set of things fit holds at the base: a declined range is not written.
func rangeKey(r topology.AlgoRange) string {
	return fmt.Sprintf("range %s nodes %d min %d max %d ×%d: %s", r.Op, r.Nodes, r.MinNodes, r.MaxNodes, r.GPUsPerNode, r.Algo)
}

// validateTol is the least a constant must lower the held-out band loss by to be
// kept: 0.001, a tenth of a per cent of error, below which its improvement is
// the descent's rounding (its finest step is 1 %).
const validateTol = 0.001
