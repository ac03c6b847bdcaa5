// Package accuracy compares the collective model with published nccl-tests (and
// rccl-tests, torch.distributed) measurements: it turns every measured row into the
// cluster, group, operation and launch mode it describes, prices it, and reports the
// error. The rows are embedded from testdata/nccl_measured.jsonl and
// testdata/nccl_added.jsonl (see testdata/README.md for their provenance).
package accuracy

import (
	_ "embed"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/internal/jsonl"
	"github.com/stepcost/stepcost/estimator/internal/ncclrow"
	"github.com/stepcost/stepcost/estimator/topology"
)

//go:embed testdata/nccl_measured.jsonl
var measured []byte

//go:embed testdata/nccl_added.jsonl
var added []byte

// Row is one measurement as published, in stepcost's nccl-measurement schema
// (ncclrow.Row, the row calibrate.MeasurementRow reads a user's measurements in);
// the comparison reads the run, the size, the time or bus bandwidth and the
// provenance.
type Row = ncclrow.Row

// Data set sizes: the original calibration set and the multi-node EFA rows added to
// it (testdata/README.md).
const (
	MeasuredRows = 367
	AddedRows    = 545
)

// Rows parses the embedded data sets: nccl_measured.jsonl, then nccl_added.jsonl.
func Rows() ([]Row, error) {
	out, err := jsonl.Decode[Row]("nccl_measured.jsonl", measured)
	if err != nil {
		return nil, err
	}
	more, err := jsonl.Decode[Row]("nccl_added.jsonl", added)
	if err != nil {
		return nil, err
	}
	return append(out, more...), nil
}

// Case is a row turned into a model query.
type Case struct {
	Row     Row
	Spec    topology.Spec
	Ranks   int
	Op      collective.Op
	Bytes   float64
	Options collective.Options
	// MeasuredUs is the measured time of one call (given, or derived from busbw).
	MeasuredUs float64
	// Chosen is the algorithm the source says NCCL picked by itself (Auto), if it says.
	Chosen collective.Algorithm
	// Scored says whether the row counts in the asserted statistics; Why says why not.
	Scored bool
	Why    string
	// Unfitted says why a scored row is kept out of the fit (empty: it is fitted):
	// the row counts in every statistic, in sample and left out, but the shared
	// constants are not bent towards a cost the model does not describe.
	Unfitted string
}

// Cases maps every row; rows that cannot be modelled at all come back with Why set
// and no spec.
func Cases(rows []Row) []Case {
	out := make([]Case, 0, len(rows))
	for _, r := range rows {
		out = append(out, toCase(r))
	}
	return out
}

func toCase(r Row) Case {
	c := Case{Row: r}
	op, err := collective.ParseOp(r.Collective)
	if err != nil {
		c.Why = err.Error()
		return c
	}
	c.Op = op
	if r.Nodes == nil || r.NGPUs == nil {
		c.Why = "node count not stated"
		return c
	}
	if r.SizeBytes == nil {
		c.Why = "message size not stated (peak of a sweep)"
		return c
	}
	c.Bytes = *r.SizeBytes
	c.Ranks = *r.NGPUs
	gpu, err := catalog.GPU(gpuName(r.GPU))
	if err != nil {
		c.Why = err.Error()
		return c
	}
	nodes := *r.Nodes
	perNode := 0
	if r.GPUsPerNode != nil {
		perNode = *r.GPUsPerNode
	}
	if c.Ranks < perNode*nodes {
		perNode = c.Ranks / nodes // a partial node: the GPUs actually used
	}
	c.Spec = specFor(r, gpu, nodes, perNode)
	c.Options = options(r)

	switch {
	case r.TimeUs != nil && *r.TimeUs > 0:
		c.MeasuredUs = *r.TimeUs
	case r.BusBW != nil && *r.BusBW > 0:
		alg := *r.BusBW / op.BusFactor(c.Ranks)
		c.MeasuredUs = c.Bytes / (alg * 1e3)
	default:
		c.Why = "no time or bandwidth"
		return c
	}
	c.Chosen = chosen(r, c.Bytes)
	c.Scored, c.Why = scored(r)
	c.Unfitted = unfitted(r)
	return c
}

// chosen reads the algorithm NCCL picked by default, where the source states it.
func chosen(r Row, size float64) collective.Algorithm {
	a := deref(r.Algorithm)
	switch {
	case strings.Contains(a, "per author TUNING log"): // "Ring/LL up to 1MiB, NVLS/Simple from 2MiB"
		if size >= 2*MiB {
			return collective.NVLS
		}
		return collective.Ring
	case a == "NVLS (NCCL default choice)", a == "NVLS (default)":
		return collective.NVLS
	case a == "Ring (NCCL default choice)", a == "Ring (default)":
		return collective.Ring
	}
	return collective.Auto
}

// scored excludes rows on a transport the model does not describe, rows whose own
// source says the system was broken, whose time is imprecise, or whose repository
// could not be identified.
func scored(r Row) (bool, string) {
	if r.InterFabric != nil && strings.Contains(strings.ToUpper(*r.InterFabric), "TCPX") {
		// Google's GPUDirect-TCPX/TCPXO carries NCCL over TCP through its own plugin:
		// a transport the cluster model has no description of.
		return false, "a fabric the model does not describe (GPUDirect-TCPX/TCPXO)"
	}
	for _, f := range r.QualityFlags {
		switch {
		case strings.HasPrefix(f, "reported_as_underperforming"):
			return false, "the reporter says the system underperformed"
		case f == "busbw_2dp_rounding_makes_derived_time_imprecise":
			return false, "time derived from a busbw rounded to 2 decimals"
		case f == "repository_not_identified":
			return false, "secondary evidence (source repository not identified)"
		}
	}
	return true, ""
}

// unfitted says why a scored row stays out of the fit. The three 2-node EFA sweeps
// flagged efa_mid_size_cost_not_modelled (a p4d ring on NCCL 2.9.9, a p5 NVLS tree, a
// p4d tree on NCCL 2.23.4 from AWS's DLAMI guide) are priced too fast at 1–64 MiB (the
// p4d ring by 40–50 %, the p4d tree by 15–68 %, the p5 tree, with EFA's proxy cost,
// −25…+6 %): p4d's per-call cost is not priced (docs/calibration.md, "EFA on p4d at
// 1–64 MiB" and "A third p4d sweep"). Fitted, they bend the shared constants instead —
// the NVLS step cost falls to its bound of 0 in seven of the folds — so they are scored
// (their error counts in every figure) but not fitted.
//
// CoreWeave's all-reduce over one whole GB200 NVL72 rack (72 ranks on 18 trays, NVLS
// on, NCCL 2.25.1; coreweave/nccl-tests#43), flagged nvls_whole_rack_cost_not_modelled,
// is priced 15–24 % fast at 512 MiB–8 GiB, where OCI's two-tray NVLS sweep is priced
// right: the rack takes 1.12–1.37× the two trays' time, the model 0.87–1.09×. That
// cost of NVLS over a whole rack is not priced; fitted, the rows move the folds'
// shared constants (testdata/README.md), so they too are scored but not fitted. The
// same pull request's two-rack run (144 ranks on 36 trays, two 18-tray NVLink domains
// joined by InfiniBand) carries the same flag: priced as the NVLS tree, which NCCL's
// choice runs at every size (its NVLS graph has 32 heads with a NIC each, ncclchoice.go),
// it is 7–23 % fast in sample, the one rack's shortfall in each rack's NVLS stage, and
// fitted it moved every left-out class over its bound. Held to NCCL's NVLS bus
// bandwidth on NVLink 5 (ncclchoice.go nvlsBusCeilingGBps) the two racks come within
// −11 … +7 % and the rack within −24 … −8 %; fitted then, the two racks' 1–8 GiB rows
// put the NVLS step cost on its bound of 0 in the fold without dstack and 1–64 MiB
// over its bound (11.8 → 14.3 % left out), so the flag stays.
//
// A DGX A100's one-channel LL ring all-reduce at 8–128 B on 2–8 GPUs from one process
// (NVIDIA/nccl-tests#123, NCCL_ALGO=Ring NCCL_MAX_NCHANNELS=1, -g N), flagged
// one_channel_ring_latency_not_modelled, pays 5.6 µs plus 1.98 µs a ring step by a
// least-squares line, where the model prices 1.28 µs a step with its one-process launch
// and NCCL's own tuning 0.6 (tuning.cc hwLat, NVLink ring LL): 28–34 % fast at every GPU
// count. Fitted, the seven rows bent the LL and launch constants the other rows share and
// moved every left-out class over its bound (< 1 MiB 21.3 → 26.3 %, 1–64 MiB 10.4 → 11.6 %,
// ≥ 64 MiB 3.25 → 3.4 %, all sizes 8.9 → 9.4 %), so they are scored, not fitted.
//
// OCI's GB300 all-reduce sweeps (oci-gpu-quickstarts 2631bee, NCCL 2.28.7, 512 KiB–16 GiB
// on 4, 8 and 64 ranks of a rack; testdata/README.md) are scored, not fitted. Their
// NCCL_BUFFSIZE of 16 MiB does not change what they run up to 64 MiB: a ring's Simple
// chunk is a channel's bytes over the ranks while they are fewer than ranks × the
// chunk (all_reduce.h runRing at v2.28.7-1: chunkCount = remCount / nranks when
// remCount < loopCount), under the default buffer's 2 MiB chunk (calcCollChunking:
// NCCL_BUFFSIZE / NCCL_STEPS × ALLREDUCE_CHUNKSTEPS) on 16–24 channels up to 64 MiB,
// and NVLS's chunk is NCCL_NVLS_CHUNKSIZE's, whatever the buffer. The model misses them: one tray +17 … +20 % at
// 32–64 MiB (16 MiB +40 → −7 % with NCCL 2.28's ring LL128 cap), two trays −18 … −28 % at 4–64 MiB, sixteen trays (NVLS over the rack, the
// cost CoreWeave's rack rows show, nvls_whole_rack_cost_not_modelled) −17 … −59 % up
// to 64 MiB. Fitted, all of them put BaseUs.simple on its bound of 80 µs in 11 folds;
// without the sixteen trays' NVLSStepUs went to 0 in one; without the two trays' too,
// RackLatencyUs to its floor in the fold without oci-hpc-oke.
//
// One GKE A4 node's 8-GPU B200 all-reduce (yangwhale/gpu-tpu-pedia d382ada; 8 MiB–1 GiB)
// ran under Google's gIB tuner plugin (NCCL_TUNER_CONFIG_PATH=…/tuner_config_a4.txtpb,
// flagged nccl_tuner_plugin_choice_not_modelled). A tuner plugin can set the
// algorithm, protocol and channels of every call (NCCL's ncclTuner getCollInfo), and
// this one's configuration is not published, so the model's copy of NCCL's own
// choice may not be what ran. The rows measure 5–7 % more than the eunomia-bpf B300
// node at 8–32 MiB, on the same channels and rates. Fitted, they moved every left-out
// class over its bound (1–64 MiB 12.03 → 12.7 %, all sizes 9.08 → 9.7 %, multi-node
// ≥ 1 MiB 7.2 → 7.8 %) and put two folds on a bound (BaseUs.simple at 80 µs without
// dstack#3865, RackLatencyUs at 0.05 µs without oci-hpc-oke), so they are scored, not
// fitted (testdata/README.md).
func unfitted(r Row) string {
	switch {
	case slices.Contains(r.QualityFlags, "one_channel_ring_latency_not_modelled"):
		return "a one-channel ring's per-step latency the model does not describe: scored, not fitted"
	case slices.Contains(r.QualityFlags, "efa_mid_size_cost_not_modelled"):
		return "an EFA mid-size cost the model does not describe: scored, not fitted"
	case slices.Contains(r.QualityFlags, "nvls_whole_rack_cost_not_modelled"):
		return "a cost of NVLS over a whole NVL72 rack the model does not describe: scored, not fitted"
	case slices.Contains(r.QualityFlags, "nvl72_tray_allreduce_mid_size_not_modelled"):
		return "a mid-size all-reduce cost on NVL72 trays the model does not describe: scored, not fitted"
	case slices.Contains(r.QualityFlags, "nccl_tuner_plugin_choice_not_modelled"):
		return "choices of a tuner plugin the model does not describe: scored, not fitted"
	}
	return ""
}

// gpuName maps the data's GPU labels to catalog names.
func gpuName(s string) string {
	switch s {
	case "A100", "A100-SXM4", "A100-SXM-80GB", "A100-SXM4-80GB":
		return "A100-80GB"
	case "A100-SXM4-40GB":
		return "A100-40GB"
	case "A100-SXM-64GB":
		// Leonardo's A100 64 GB: the A100 SXM's SMs, clocks and NVLink 3 with 64 GB
		// of HBM2e; its only row is a latency-bound send/recv.
		return "A100-80GB"
	case "H100", "H100-SXM-80GB":
		return "H100-SXM"
	case "H200-SXM-141GB":
		return "H200"
	}
	return s
}

// specFor describes the measured system. Only what the row states (or the system's
// public specification) is used; link efficiencies and latencies are the calibrated
// defaults.
func specFor(r Row, gpu hardware.GPU, nodes, perNode int) topology.Spec {
	s := topology.Spec{
		Name:        r.SourceID,
		GPU:         gpu,
		Nodes:       nodes,
		GPUsPerNode: perNode,
		Intra:       topology.Intra{Kind: topology.NVSwitch},
		NCCL:        statedNCCL(r),
	}
	switch gpu.Arch {
	case hardware.Hopper, hardware.Blackwell:
		s.Intra.NVLS = true
	case hardware.CDNA3, hardware.CDNA4:
		s.Intra.Kind = topology.Mesh
	}
	if nvlsOff(r) {
		// NCCL_NVLS_ENABLE=0 with NCCL's own choice of the rest: no NVLS nor NVLS
		// tree, ring or tree as NCCL picks them.
		s.Intra.NVLS = false
	}
	sys := strings.ToLower(r.System + " " + deref(r.InterFabric))
	if r.GPU == "GB200" || r.GPU == "GB300" {
		// Every GB200 and GB300 system here is (a partition of) an NVL72 rack: its
		// NVLink goes through the rack's switch trays.
		s.Intra.DomainNodes = 18
		if n := hostsPerRack(sys); n > 0 {
			s.Intra.DomainNodes = n // racks filled to n trays each, joined by the network
		} else if !strings.Contains(sys, "mnnvl") && nodes > 1 {
			s.Intra.DomainNodes = 0 // partitions on different racks talk over IB
		}
	}
	if nodes > 1 && s.Intra.DomainNodes < nodes {
		s.NICs = topology.NICs{PerNode: perNode, Gbps: 400, Kind: topology.InfiniBand}
		switch {
		case strings.Contains(sys, "roce"):
			s.NICs.Kind = topology.RoCE
		case strings.Contains(sys, "efa"):
			s.NICs.Kind = topology.EFA
			// EFA before p5 (p4d/p4de, A100) lacks in-order 128-byte delivery.
			s.NICs.SimpleProtocolOnly = gpu.Arch == hardware.Ampere
		}
		if r.GPU == "A100-SXM4" || strings.Contains(sys, "hdr") {
			s.NICs.Gbps = 200 // DGX A100: 8× HDR 200 Gb/s
		}
		if r.NICsPerNode != nil && r.NICGbps != nil && *r.NICsPerNode > 0 {
			// Total node bandwidth as stated, spread over one NIC per GPU where the
			// node has more ports than GPUs (OCI's 16×100 G = 2 ports per GPU).
			total := float64(*r.NICsPerNode) * *r.NICGbps
			k := min(*r.NICsPerNode, perNode)
			s.NICs.PerNode, s.NICs.Gbps = k, total/float64(k)
		} else if r.NICsPerNode != nil && *r.NICsPerNode > 0 {
			// Speed not stated (OCI BM.GPU.MI300X.8): the shape's documented 400 Gb/s ports.
			s.NICs.PerNode, s.NICs.Gbps = min(*r.NICsPerNode, perNode), 400
		}
		if strings.Contains(sys, "4x 400 gb/s roce") || strings.Contains(sys, "4x400") {
			s.NICs.PerNode, s.NICs.Gbps, s.NICs.Kind = 4, 400, topology.RoCE
		}
		s.Network.RailOptimized = true
	}
	return s
}

// nvlsOff says the row ran with NVLS disabled (NCCL_NVLS_ENABLE=0) and left the
// algorithm to NCCL ("NCCL's choice"), rather than disabling NVLS to force a ring on
// one node.
func nvlsOff(r Row) bool {
	a := strings.ToLower(deref(r.Algorithm))
	return strings.Contains(a, "nvls_enable=0") && strings.Contains(a, "nccl's choice")
}

// statedNCCL is the NCCL release a row states ("2.28.7 (NCCL version
// 2.28.7+cuda13.0 printed)" gives 2.28.7), or "" when it states none: a row that
// only names the release of its page's other tables takes the model's default.
func statedNCCL(r Row) string {
	if r.Library != "NCCL" || r.LibraryVersion == nil {
		return ""
	}
	v, _, _ := strings.Cut(*r.LibraryVersion, " ")
	if _, _, ok := (topology.Spec{NCCL: v}).NCCLRelease(); ok {
		return v
	}
	return ""
}

// hostsPerRack reads "N hosts per rack" from a system's description: the trays of
// each NVL72 rack a multi-rack run used (0 when not stated).
func hostsPerRack(sys string) int {
	i := strings.Index(sys, " hosts per rack")
	if i < 0 {
		return 0
	}
	j := i
	for j > 0 && sys[j-1] >= '0' && sys[j-1] <= '9' {
		j--
	}
	n, err := strconv.Atoi(sys[j:i])
	if err != nil {
		return 0
	}
	return n
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// options reads the algorithm, protocol and launch mode the row was measured with.
func options(r Row) collective.Options {
	var o collective.Options
	algo := strings.ToLower(deref(r.Algorithm))
	switch {
	case nvlsOff(r): // NCCL's choice without NVLS (specFor): Auto
	case strings.Contains(algo, "nvls_enable=0"), strings.HasPrefix(algo, "ring (ncclalgo"),
		strings.Contains(algo, "ncclalgo=ring"), strings.Contains(algo, "nccl_algo=ring"),
		strings.Contains(algo, "ring/ll128 (forced)"):
		o.Algo = collective.Ring
	case strings.HasPrefix(algo, "nvlstree"):
		o.Algo = collective.NVLSTree
	case strings.HasPrefix(algo, "tree"):
		o.Algo = collective.DoubleTree // NCCL's tree is the double binary tree
	case strings.HasPrefix(algo, "nvls (nccl_algo=nvls"):
		if r.GPU != "A100-SXM4-80GB" { // the A100 script sets NVLS, which A100 lacks
			o.Algo = collective.NVLS
		}
	}
	if deref(r.Protocol) == "LL128" {
		o.ForceProtocol, o.Protocol = true, collective.LL128
	}
	notes := deref(r.Notes)
	switch {
	case strings.Contains(r.Benchmark, "torch"):
		o.Launch = collective.Eager
	case strings.Contains(notes, "-G "):
		o.Launch = collective.Graph
	case strings.Contains(notes, "single process"), strings.Contains(notes, " -g "):
		o.Launch = collective.SingleProcess
	}
	return o
}

// Result is one priced case.
type Result struct {
	Case
	Predicted collective.Estimate
	Err       error
	// RelErr is (predicted − measured) / measured.
	RelErr float64
}

// Prepared is a case with its placement built (placements do not depend on the
// model's constants, so a fit builds them once).
type Prepared struct {
	Case
	Placement *collective.Placement
	Err       error
}

// Prepare builds the cluster and placement of every case.
func Prepare(cases []Case) []Prepared { return PrepareWith(cases, Links{}) }

// Links overrides the calibrated link latencies of every case's cluster (zero keeps
// the default); the fit uses it to adjust them.
type Links struct{ IntraLatencyUs, RackLatencyUs, NetLatencyUs, EFALatencyUs float64 }

// PrepareWith is Prepare with link overrides.
func PrepareWith(cases []Case, lk Links) []Prepared { return prepareCached(cases, lk, placements{}) }

// placements holds the placements built for one set of link latencies, by system and
// the latencies its links take (placeKey): every row of a sweep shares its system's
// placement (the placement caches geometry only, never a model's constants), and a
// fit that changes one hop latency rebuilds only the systems that have that hop.
type placements map[placeKey]placed

type placeKey struct {
	system             string
	nodes, gpusPerNode int
	intraUs, netUs     float64
}

type placed struct {
	p   *collective.Placement
	err error
}

func prepareCached(cases []Case, lk Links, cache placements) []Prepared {
	out := make([]Prepared, 0, len(cases))
	for _, c := range cases {
		pc := Prepared{Case: c}
		if c.Spec.Name == "" {
			out = append(out, pc)
			continue
		}
		spec := c.Spec
		// The scale-up hop fitted is NVSwitch's (topology.NVLinkHopLatencyUs): an AMD
		// GPU's Infinity Fabric hop and a PCIe switch's keep their own.
		if lk.IntraLatencyUs > 0 && spec.Intra.DomainNodes <= 1 && spec.Intra.Kind == topology.NVSwitch {
			spec.Intra.LatencyUs = lk.IntraLatencyUs
		}
		if lk.RackLatencyUs > 0 && spec.Intra.DomainNodes > 1 {
			spec.Intra.LatencyUs = lk.RackLatencyUs
		}
		if lk.NetLatencyUs > 0 && spec.NICs.PerNode > 0 && spec.NICs.Kind != topology.EFA {
			spec.NICs.LatencyUs = lk.NetLatencyUs
		}
		if lk.EFALatencyUs > 0 && spec.NICs.Kind == topology.EFA {
			spec.NICs.LatencyUs = lk.EFALatencyUs
		}
		key := placeKey{c.Spec.Name, c.Spec.Nodes, c.Spec.GPUsPerNode, spec.Intra.LatencyUs, spec.NICs.LatencyUs}
		pl, ok := cache[key]
		if !ok {
			cl, err := spec.Build()
			if err == nil {
				var group []int
				if group, _, err = collective.NodeGroups(cl, c.Spec.Nodes, c.Spec.GPUsPerNode, false); err == nil {
					pl.p, err = collective.Place(cl, group, nil)
				}
			}
			pl.err = err
			cache[key] = pl
		}
		pc.Placement, pc.Err = pl.p, pl.err
		if pl.err != nil {
			pc.Placement = nil
		}
		out = append(out, pc)
	}
	return out
}

// Evaluate prices every case with the model.
func Evaluate(m *collective.Model, cases []Case) []Result {
	return Price(m, Prepare(cases))
}

// Price prices prepared cases.
func Price(m *collective.Model, ps []Prepared) []Result {
	out := make([]Result, 0, len(ps))
	for _, pc := range ps {
		res := Result{Case: pc.Case, Err: pc.Err}
		if pc.Placement != nil && pc.Err == nil {
			res.Predicted, res.Err = m.Estimate(pc.Placement, pc.Op, pc.Bytes, pc.Options)
			if res.Err == nil && pc.MeasuredUs > 0 {
				res.RelErr = (res.Predicted.TimeUs - pc.MeasuredUs) / pc.MeasuredUs
			}
		}
		out = append(out, res)
	}
	return out
}

// Size buckets of the accuracy targets.
const (
	MiB = 1 << 20
)

// Summary is the error statistics of a set of results.
type Summary struct {
	Label     string  `json:"label"`
	N         int     `json:"rows"`
	MedianAbs float64 `json:"median_abs_err"`
	MeanAbs   float64 `json:"mean_abs_err"`
	P90Abs    float64 `json:"p90_abs_err"`
	MaxAbs    float64 `json:"max_abs_err"`
	Bias      float64 `json:"bias"`
}

// Summarise computes |error| statistics over the scored results that keep(r) accepts.
func Summarise(label string, rs []Result, keep func(Result) bool) Summary {
	var errs []float64
	bias := 0.0
	for _, r := range rs {
		if !r.Scored || r.Err != nil || !keep(r) {
			continue
		}
		errs = append(errs, math.Abs(r.RelErr))
		bias += r.RelErr
	}
	s := Summary{Label: label, N: len(errs)}
	if len(errs) == 0 {
		return s
	}
	slices.Sort(errs)
	s.MedianAbs = median(errs)
	for _, e := range errs {
		s.MeanAbs += e
	}
	s.MeanAbs /= float64(len(errs))
	s.P90Abs = errs[int(math.Ceil(0.9*float64(len(errs))))-1]
	s.MaxAbs = errs[len(errs)-1]
	s.Bias = bias / float64(len(errs))
	return s
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// Buckets are the size classes the targets are stated for.
func Buckets() []struct {
	Label string
	Keep  func(Result) bool
} {
	return []struct {
		Label string
		Keep  func(Result) bool
	}{
		{"< 1 MiB", func(r Result) bool { return r.Bytes < MiB }},
		{"1–64 MiB", func(r Result) bool { return r.Bytes >= MiB && r.Bytes < 64*MiB }},
		{"≥ 64 MiB", func(r Result) bool { return r.Bytes >= 64*MiB }},
		{"all sizes", func(Result) bool { return true }},
	}
}

// BySystem groups the scored results by source (one measured system each).
func BySystem(rs []Result) []Summary {
	keys := map[string]bool{}
	for _, r := range rs {
		if r.Scored && r.Err == nil {
			keys[r.Row.SourceID] = true
		}
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]Summary, 0, len(names))
	for _, k := range names {
		out = append(out, Summarise(k, rs, func(r Result) bool { return r.Row.SourceID == k }))
	}
	return out
}
