package calibrate

import (
	"errors"
	"fmt"
	"math"
	"slices"

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
		{"scale-up efficiency", "intra.efficiency", 0.5, 0.95, func(k *Knobs) *float64 { return &k.IntraEfficiency }, false, "intra"},
		{"scale-up hop latency", "intra.latency_us", 0.1, 5, func(k *Knobs) *float64 { return &k.IntraLatencyUs }, true, "intra"},
		{"NIC efficiency", "nics.efficiency", 0.5, 0.98, func(k *Knobs) *float64 { return &k.NICEfficiency }, false, "net"},
		{"NIC latency", "nics.latency_us", 0.5, 60, func(k *Knobs) *float64 { return &k.NICLatencyUs }, true, "net"},
		{"compute scale", "gpu.peak_tflops", 0.5, 1.15, func(k *Knobs) *float64 { return &k.ComputeScale }, false, "compute"},
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

// priceSweeps prices every point of the sweeps on spec with knobs k.
func priceSweeps(spec topology.Spec, k Knobs, sweeps []Sweep) ([]Measured, error) {
	m := collective.NewModel(collective.Default())
	var out []Measured
	built := map[[2]int]*topology.Cluster{}
	for _, s := range sweeps {
		sp := Apply(spec, k)
		key := [2]int{s.Nodes, s.GPUsPerNode}
		cl, ok := built[key]
		if !ok {
			sp.Nodes = s.Nodes
			if s.GPUsPerNode > sp.GPUsPerNode {
				return nil, fileErr(s.File, 0, "%d GPUs per node, but the base cluster %s has %d", s.GPUsPerNode, spec.Name, spec.GPUsPerNode)
			}
			var err error
			if cl, err = sp.Build(); err != nil {
				return nil, fmt.Errorf("%s: the base cluster with %d nodes: %w", s.File, s.Nodes, err)
			}
			built[key] = cl
		}
		group, _, err := collective.NodeGroups(cl, s.Nodes, s.GPUsPerNode, false)
		if err != nil {
			return nil, fileErr(s.File, 0, "%d node(s) × %d GPUs on %s: %v", s.Nodes, s.GPUsPerNode, spec.Name, err)
		}
		pl, err := collective.Place(cl, group, nil)
		if err != nil {
			return nil, fileErr(s.File, 0, "%v", err)
		}
		for _, p := range s.Points {
			e, err := m.Estimate(pl, s.Op, p.Bytes, collective.Options{Launch: s.Launch})
			if err != nil {
				return nil, fileErr(s.File, p.Line, "%v", err)
			}
			out = append(out, Measured{File: s.File, Op: s.Op.String(), Bytes: p.Bytes, Nodes: s.Nodes, Ranks: s.Ranks,
				MeasuredUs: p.TimeUs, PredictedUs: e.TimeUs, Algo: e.Algo.String() + "/" + e.Protocol.String()})
		}
	}
	return out, nil
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
// of several GPUs inside one node, network constants sweeps across nodes; efficiencies
// need messages of 64 MiB or more (where bandwidth, not latency, sets the time),
// latencies messages under 1 MiB; the compute scale needs training runs.
func determined(spec topology.Spec, in Inputs) []Knob {
	has := map[string]bool{}
	for _, s := range in.Sweeps {
		for _, p := range s.Points {
			// Scale-up constants only from single-node sweeps: across nodes the NICs
			// set the time, and a fit of NVLink constants there would absorb whatever
			// the network model lacks.
			if s.GPUsPerNode > 1 && s.Nodes == 1 {
				has["intra/"+bandOf(p.Bytes)] = true
			}
			if s.Nodes > 1 && spec.NICs.PerNode > 0 && spec.Intra.DomainNodes < s.Nodes {
				has["net/"+bandOf(p.Bytes)] = true
			}
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

// Size bands of the report.
const (
	BandSmall  = "< 1 MiB"
	BandMedium = "1–64 MiB"
	BandLarge  = "≥ 64 MiB"
)

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

// fit fits the knobs the inputs determine, starting from start: first the link
// constants on the sweeps, then the compute scale on the runs with those links.
func fit(spec topology.Spec, start Knobs, in Inputs) (Knobs, []Knob, error) {
	det := determined(spec, in)
	var link, comp []descent.Param[Knobs]
	for _, kn := range det {
		p := descent.Param[Knobs]{Name: kn.Name, Min: kn.Min, Max: kn.Max,
			Get: func(k *Knobs) float64 { return *kn.get(k) },
			Set: func(k *Knobs, v float64) { *kn.get(k) = v }}
		if kn.class == "compute" {
			comp = append(comp, p)
		} else {
			link = append(link, p)
		}
	}
	steps := []float64{2, 1.3, 1.1, 1.03, 1.01, 1 / 1.01, 1 / 1.03, 1 / 1.1, 1 / 1.3, 0.5}
	k := start
	var ferr error
	if len(link) > 0 {
		k, _ = descent.Minimise(k, func(k Knobs) Knobs { return k }, link, steps, fitRounds, func(k Knobs) float64 {
			ms, err := priceSweeps(spec, k, in.Sweeps)
			if err != nil {
				ferr = err
				return math.Inf(1)
			}
			return logLoss(ms)
		})
	}
	if ferr != nil {
		return start, nil, ferr
	}
	if len(comp) > 0 {
		k, _ = descent.Minimise(k, func(k Knobs) Knobs { return k }, comp, steps, fitRounds, func(k Knobs) float64 {
			ms, err := priceRuns(spec, k, in.Runs)
			if err != nil {
				ferr = err
				return math.Inf(1)
			}
			return logLoss(ms)
		})
	}
	if ferr != nil {
		return start, nil, ferr
	}
	return k, det, nil
}

// price prices every input with the knobs.
func price(spec topology.Spec, k Knobs, in Inputs) ([]Measured, error) {
	ms, err := priceSweeps(spec, k, in.Sweeps)
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

// Calibrate fits the base cluster to the inputs and scores the fit by leaving each
// input file out in turn. base names the base (a catalog system or a file) for the
// report.
func Calibrate(base string, spec topology.Spec, in Inputs) (*Report, error) {
	files := in.files()
	if len(files) == 0 {
		return nil, ErrNoInputs
	}
	if dup := duplicate(files); dup != "" {
		return nil, fmt.Errorf("%s: given twice", dup)
	}
	start := Start(spec)
	r := &Report{Base: base, Catalog: start}

	var err error
	if r.Before, err = price(spec, start, in); err != nil {
		return nil, err
	}

	// Leave each file out: fit on the others, score it.
	solo := map[string]Knobs{}
	soloDet := map[string][]Knob{}
	others := map[string]Knobs{}
	othersDet := map[string][]Knob{}
	for _, f := range files {
		rest := in.without(f)
		k, det, err := fit(spec, start, rest)
		if err != nil {
			return nil, err
		}
		others[f], othersDet[f] = k, det
		ms, err := price(spec, k, in.only(f))
		if err != nil {
			return nil, err
		}
		r.OutOfSample = append(r.OutOfSample, ms...)
		sk, sdet, err := fit(spec, start, in.only(f))
		if err != nil {
			return nil, err
		}
		solo[f], soloDet[f] = sk, sdet
	}

	// Contradictions: a file that, fitted alone, wants a constant far from what the
	// other files want.
	excluded := map[string]bool{}
	for _, f := range files {
		for _, kn := range soloDet[f] {
			if !slices.ContainsFunc(othersDet[f], func(o Knob) bool { return o.Name == kn.Name }) {
				continue
			}
			a, b := kn.Of(solo[f]), kn.Of(others[f])
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
	r.Fitted, r.Determined, err = fit(spec, start, kept)
	if err != nil {
		return nil, err
	}
	if r.After, err = price(spec, r.Fitted, in); err != nil {
		return nil, err
	}
	r.Spec = Apply(spec, r.Fitted)
	r.Files = files
	r.finish()
	return r, nil
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
