package collective

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Model prices collectives with a set of constants. The zero Model is not usable;
// use NewModel.
type Model struct {
	k Constants
}

// NewModel returns a model with the given constants (Default() for the fitted ones).
func NewModel(k Constants) *Model { return &Model{k: k} }

// Options of one estimate.
type Options struct {
	Algo   Algorithm // Auto chooses the cheapest
	Launch Launch
	// ForceProtocol restricts ring and tree to Protocol (NCCL_PROTO); algorithms
	// that only run Simple ignore it.
	ForceProtocol bool
	Protocol      Protocol
	// MaxCTAs is the communicator's ncclConfig_t.maxCTAs (NCCL 2.17 on; PyTorch's
	// ProcessGroupNCCL.Options().config.max_ctas, which Megatron-Core sets per
	// process group from nccl_communicator_config_path): at most that many thread
	// blocks, and so channels, run one call. 0 leaves NCCL's own count. It bounds
	// send/recv, whose channels each copy at the generation's per-channel rate
	// (p2p.go), and the channels of the rings, trees and NVLS algorithms
	// (Placement.withMaxCTAs): a ring across scale-up domains then crosses the
	// network through as many GPUs' NICs as it has channels.
	MaxCTAs int
	// Reduction is what the call reduces with (Sum by default): NCCL runs a
	// reduction its NVLS kernels do not cover (MaxFloat32) on its rings and
	// trees, even where the communicator has NVLS.
	Reduction Reduction
}

// nvlsRuns says whether the options leave NCCL an NVLS kernel for op.
func (o Options) nvlsRuns(op Op) bool { return o.Reduction.multicast(op) }

// isNVLS says whether a is one of the algorithms that reduce in the switch.
func isNVLS(a Algorithm) bool { return a == NVLS || a == NVLSTree }

// Estimate is the predicted cost of one collective call.
type Estimate struct {
	Op       Op
	Algo     Algorithm
	Protocol Protocol
	Bytes    float64 // nccl-tests size convention
	TimeUs   float64
	// LatencyUs is the part of TimeUs that does not depend on size (launch, per-step
	// software and hardware latency); the rest is data movement.
	LatencyUs float64
	AlgBWGBps float64 // Bytes / time
	BusBWGBps float64 // AlgBW × nccl-tests bus factor
	Steps     int
	Channels  int
	Chunks    int
}

// ErrUnsupported says an algorithm cannot run an operation on a placement.
var ErrUnsupported = errors.New("algorithm not applicable")

// MaxBytes bounds a message: 2^50 bytes (1 PiB) keeps every product finite.
// Estimate refuses a larger one (field "size").
const MaxBytes = 1 << 50

const maxBytes = MaxBytes

// Estimate prices op on the placement. A group of one rank costs nothing.
func (m *Model) Estimate(p *Placement, op Op, bytes float64, o Options) (Estimate, error) {
	if op >= numOps {
		return Estimate{}, invalid.Field("op", "unknown operation %d", op)
	}
	if !(bytes >= 0) || bytes > maxBytes {
		return Estimate{}, invalid.Field("size", "must be between 0 and 2^50 bytes (got %v)", bytes)
	}
	if o.Launch >= numLaunch {
		return Estimate{}, invalid.Field("launch", "unknown launch mode %d", o.Launch)
	}
	if o.ForceProtocol && o.Protocol >= numProtos {
		return Estimate{}, invalid.Field("protocol", "unknown protocol %d", o.Protocol)
	}
	if o.Reduction >= numReductions {
		return Estimate{}, invalid.Field("reduction", "unknown reduction %d", o.Reduction)
	}
	if o.MaxCTAs < 0 || o.MaxCTAs > MaxChannels {
		return Estimate{}, invalid.Field("max_ctas", "must be between 0 (NCCL's default) and %d (got %d)", MaxChannels, o.MaxCTAs)
	}
	if p.N() == 1 || bytes == 0 {
		return Estimate{Op: op, Algo: o.Algo, Bytes: bytes, Steps: 0}, nil
	}
	if op == SendRecv && o.MaxCTAs > 0 && (o.Algo == Auto || o.Algo == Direct) {
		// send/recv runs only NCCL's p2p kernel (Direct): its channels capped
		return m.p2pCapped(p, op, bytes, o.Launch, o.MaxCTAs), nil
	}
	p = p.withMaxCTAs(o.MaxCTAs) // the collectives' rings, trees and NVLS channels capped
	nvls := o.nvlsRuns(op)       // NCCL has an NVLS kernel for the call's reduction
	if o.Algo != Auto {
		if err := m.Supports(p, op, o.Algo); err != nil {
			return Estimate{}, err
		}
		if isNVLS(o.Algo) && !nvls {
			return Estimate{}, fmt.Errorf("%w: %s %s: NCCL has no NVLS kernel for the maximum of 32-bit floats", ErrUnsupported, o.Algo, op)
		}
		return m.bestProtocol(p, op, o.Algo, bytes, o), nil
	}
	if len(p.Cluster.Spec.Algorithms) > 0 { // measured choices of a calibrated cluster (measured.go)
		if a, ok := m.measuredChoice(p, op, bytes); ok && (nvls || !isNVLS(a)) {
			return m.bestProtocol(p, op, a, bytes, o), nil
		}
	}
	if !o.ForceProtocol { // AWS's OFI tuner on EFA (efa.go); NCCL_PROTO turns it off
		if a, pr, ok := m.ofiTunerChoice(p, op, bytes); ok && (nvls || !isNVLS(a)) {
			return m.price(p, op, a, pr, bytes, o.Launch), nil
		}
	}
	if !o.ForceProtocol { // NCCL's own tuning model picks (ncclchoice.go)
		if a, pr, ok := m.ncclChoice(p, op, bytes, nvls); ok {
			return m.price(p, op, a, pr, bytes, o.Launch), nil
		}
	}
	best := m.autoBest(p, op, bytes, o) // the fastest algorithm (autobound.go)
	if math.IsInf(best.TimeUs, 1) {
		return Estimate{}, fmt.Errorf("%w: no algorithm can run %s on this group", ErrUnsupported, op)
	}
	return best, nil
}

// AutoRuns says whether Auto has an algorithm to run op on the placement: one it
// considers (AutoChoice) that applies there. Where none does, Estimate under Auto
// refuses op (ErrUnsupported) unless a calibrated cluster's measured choice covers
// the size.
func (m *Model) AutoRuns(p *Placement, op Op) bool {
	for a := Ring; a < numAlgos; a++ {
		if m.autoRuns(p, op, a) {
			return true
		}
	}
	return false
}

// autoRuns says whether Auto may choose a for op on the placement.
func (m *Model) autoRuns(p *Placement, op Op, a Algorithm) bool {
	return AutoChoice(op, a) && m.why(p, op, a) == ""
}

// AutoChoice says whether Auto considers algorithm a for op: the algorithms NCCL
// chooses among by default — ring, the double binary tree, NVLS, the NVLS tree and PAT, and its
// all-at-once send/recv for all-to-all and send/recv. Direct one-shot kernels need
// symmetric registered buffers, and the single tree and the hierarchical scheme are
// not NCCL algorithms; they are priced when forced.
func AutoChoice(op Op, a Algorithm) bool {
	switch a {
	case Ring, DoubleTree, NVLS, NVLSTree, PAT, Pairwise:
		return true
	case Direct:
		return op == AllToAll || op == SendRecv
	}
	return false
}

// ByTime orders estimates fastest first, keeping the algorithm order of ties.
func ByTime(es []Estimate) {
	slices.SortStableFunc(es, func(a, b Estimate) int { return cmp.Compare(a.TimeUs, b.TimeUs) })
}

// Candidates appends the best-protocol estimate of every applicable algorithm.
func (m *Model) Candidates(p *Placement, op Op, bytes float64, o Options, out []Estimate) []Estimate {
	if p.N() == 1 || !(bytes > 0) || bytes > maxBytes || op >= numOps || o.Launch >= numLaunch {
		return out
	}
	for a := Ring; a < numAlgos; a++ {
		if m.why(p, op, a) == "" && (o.nvlsRuns(op) || !isNVLS(a)) {
			out = append(out, m.bestProtocol(p, op, a, bytes, o))
		}
	}
	return out
}

// Supports says whether algo can run op on the placement, and why not.
func (m *Model) Supports(p *Placement, op Op, algo Algorithm) error {
	if algo == Auto || algo >= numAlgos {
		return invalid.Field("algorithm", "unknown algorithm %d", algo)
	}
	if why := m.why(p, op, algo); why != "" {
		return fmt.Errorf("%w: %s %s: %s", ErrUnsupported, algo, op, why)
	}
	return nil
}

// why is Supports without allocating: the reason algo cannot run op, or "".
func (m *Model) why(p *Placement, op Op, algo Algorithm) string {
	switch algo {
	case Ring:
		if op == Broadcast || op == Reduce {
			p.ensure(famChain)
		}
	case Tree, DoubleTree:
		if op == AllReduce {
			p.ensure(famTrees)
		}
	}
	why := ""
	n := p.N()
	co := &p.coef
	c := p.Cluster
	switch algo {
	case Ring:
		switch {
		case op == AllToAll:
			why = "ring does not do all-to-all (use pairwise or direct)"
		case op == SendRecv:
			why = "send/recv is a single direct transfer (use direct)"
		case (op == Broadcast || op == Reduce) && !co.chain.ok:
			why = "the group is too large for a broadcast/reduce chain (over 513 ranks)"
		}
	case Tree, DoubleTree:
		switch {
		case op != AllReduce:
			why = "trees are used for all-reduce only"
		case algo == Tree && !co.tree.ok, algo == DoubleTree && !co.dtree.ok:
			why = "the tree is deeper than the model's pipeline bound"
		}
	case Hierarchical:
		switch {
		case op != AllReduce:
			why = "hierarchical is an all-reduce algorithm"
		case p.Domains < 2:
			why = "hierarchical needs the group to span at least 2 nodes"
		case !p.Uniform:
			why = "hierarchical needs the same number of ranks on every node"
		case p.PerDomain < 2:
			why = "hierarchical needs at least 2 ranks per node (use ring or tree)"
		}
	case NVLS:
		switch {
		case !c.NVLS():
			why = "the cluster's switch has no in-switch reduction (NVLS)"
		case p.Domains != 1:
			why = "NVLS works inside one NVLink domain"
		case op != AllReduce && op != AllGather && op != ReduceScatter:
			why = "NVLS does all-reduce, all-gather and reduce-scatter"
		case m.nvlsEfficiency(c.GPU().Arch) == 0:
			why = "no NVLS efficiency is calibrated for this GPU generation"
		}
	case Direct:
		switch {
		case op == AllToAll || op == SendRecv:
		case p.Domains != 1:
			why = "direct (one-shot) needs a full-bandwidth switch: the group must sit in one NVLink domain"
		case c.Spec.Intra.Kind == topology.PCIe:
			why = "direct (one-shot) needs NVSwitch or a full mesh, not PCIe"
		}
	case PAT:
		switch {
		case op != AllGather && op != ReduceScatter:
			why = "PAT does all-gather and reduce-scatter"
		case p.PerDomain != 1:
			why = "PAT needs exactly one rank per node"
		case patSteps(n) > maxPATSteps:
			why = "group too large for PAT"
		}
	case Pairwise:
		if op != AllToAll {
			why = "pairwise exchange is an all-to-all algorithm"
		}
	case NVLSTree:
		switch {
		case op != AllReduce:
			why = "the NVLS tree is an all-reduce algorithm"
		case !c.NVLS():
			why = "the cluster's switch has no in-switch reduction (NVLS)"
		case p.Domains < 2:
			why = "the NVLS tree needs the group to span at least 2 nodes (use nvls)"
		case !p.Uniform:
			why = "the NVLS tree needs the same number of ranks on every node"
		case p.PerDomain < 2:
			why = "the NVLS tree needs at least 2 ranks per node (use ring or tree)"
		case m.nvlsEfficiency(c.GPU().Arch) == 0:
			why = "no NVLS efficiency is calibrated for this GPU generation"
		}
	}
	return why
}

func (m *Model) nvlsEfficiency(a hardware.Arch) float64 { return m.k.NVLSEfficiency[a] }

// protocols lists the protocols an algorithm runs with.
func protocols(a Algorithm) []Protocol {
	if a == Ring || a == Tree || a == DoubleTree {
		return allProtocols[:]
	}
	return simpleOnly[:]
}

var (
	allProtocols = [...]Protocol{Simple, LL128, LL}
	simpleOnly   = [...]Protocol{Simple}
)

func (m *Model) bestProtocol(p *Placement, op Op, a Algorithm, bytes float64, o Options) Estimate {
	if !o.ForceProtocol && len(protocols(a)) > 1 { // NCCL's tuning picks (ncclchoice.go)
		if pr, ok := m.ncclProtocol(p, op, a, bytes); ok {
			return m.price(p, op, a, pr, bytes, o.Launch)
		}
	}
	best := Estimate{TimeUs: math.Inf(1)}
	simpleOnly := p.Domains > 1 && p.Cluster.Spec.NICs.SimpleProtocolOnly
	for _, pr := range protocols(a) {
		if o.ForceProtocol && pr != o.Protocol && len(protocols(a)) > 1 && !simpleOnly {
			continue
		}
		if simpleOnly && pr != Simple {
			continue // the OFI plugin overrides NCCL_PROTO to simple on such a network
		}
		if e := m.price(p, op, a, pr, bytes, o.Launch); e.TimeUs < best.TimeUs {
			best = e
		}
	}
	return best
}

// baseUs is the fixed software cost of a call of algorithm a with protocol pr:
// NVLS has its own, and so has NCCL's p2p kernel, which runs send/recv and
// all-to-all (also in pairwise steps) whatever protocol its peers use (P2PBaseUs).
// (It had been the LL collective kernel's fixed cost, BaseUs[LL], fitted on the
// collectives: a split of fixed and per-step cost the collectives do not pin, and
// out of sample it priced 8 B send/recv 28 % slow; docs/calibration.md.)
func (m *Model) baseUs(op Op, a Algorithm, pr Protocol) float64 {
	switch {
	case a == NVLS || a == NVLSTree:
		return m.k.NVLSBaseUs
	case a == Pairwise || isP2P(op, a):
		return m.k.P2PBaseUs
	}
	return m.k.BaseUs[pr]
}

// fixedUs is what a call costs whatever its size: issuing it and the protocol's
// (or the p2p kernel's) fixed cost; RCCL's p2p kernel's on AMD GPUs (rccl.go).
func (m *Model) fixedUs(p *Placement, op Op, a Algorithm, pr Protocol, launch Launch) float64 {
	return m.launchUs(p, launch) + m.baseUs(op, a, pr) + m.rcclP2PExtraUs(p, op, a, pr, launch)
}

// launchUs is the fixed cost of issuing one call.
func (m *Model) launchUs(p *Placement, l Launch) float64 {
	if l == SingleProcess {
		// one thread launches on every GPU of its node in turn
		return m.k.LaunchUs[l] * float64(p.Cluster.Spec.GPUsPerNode)
	}
	return m.k.LaunchUs[l]
}

// chunks is the pipeline depth for perChannel bytes in pieces of chunk bytes.
func (m *Model) chunks(perChannel, chunk float64) int {
	k := int(math.Ceil(perChannel / chunk))
	return max(1, min(k, m.k.MaxChunks))
}

// term accumulates the latency and transfer parts of a price.
type term struct{ lat, xfer float64 }

// steps adds n identical steps moving `unit` bytes per flow unit of coefficient co.
func (m *Model) steps(t *term, n float64, co coef, unit float64, pr Protocol, stepUs, bwf float64) {
	t.lat += n * (stepUs + co.lat + co.net*m.k.NetStepUs[pr])
	t.xfer += n * unit * co.m / bwf
}

// price is the closed form of algorithm a with protocol pr.
func (m *Model) price(p *Placement, op Op, a Algorithm, pr Protocol, S float64, launch Launch) Estimate {
	if isP2P(op, a) {
		return m.p2p(p, op, S, launch)
	}
	switch a {
	case Ring:
		if op == Broadcast || op == Reduce {
			p.ensure(famChain)
		} else {
			p.ensure(famBase)
		}
	case Tree, DoubleTree:
		p.ensure(famTrees)
	case NVLS, NVLSTree:
		p.ensure(famNVLS)
	case Direct:
		if op == SendRecv {
			p.ensure(famNeighbor)
		} else {
			p.ensure(famDirect)
		}
	case Hierarchical:
		p.ensure(famHier)
	case PAT:
		p.ensure(famPAT)
	case Pairwise:
		p.ensure(famPairwise)
	}
	co := &p.coef
	n := float64(p.N())
	nch := float64(co.channels)
	bwf := m.k.BWFactor[pr]
	step := m.k.StepUs[pr]
	e := Estimate{Op: op, Algo: a, Protocol: pr, Bytes: S, Channels: co.channels}
	switch a {
	case NVLS, NVLSTree:
		e.Channels = p.nvlsChannels()
	case Direct, PAT, Pairwise:
		e.Channels = 1
	}
	t := term{lat: m.fixedUs(p, op, a, pr, launch)}
	fixed := t.lat
	switch a {
	case Ring:
		switch op {
		case AllReduce:
			e.Steps = 2 * (p.N() - 1)
			m.steps(&t, float64(e.Steps), co.ring, S/n, pr, step, bwf)
		case AllGather, ReduceScatter:
			e.Steps = p.N() - 1
			m.steps(&t, float64(e.Steps), co.ring, S/n, pr, step, bwf)
		case Broadcast, Reduce:
			k := m.chunks(S/nch, m.k.ChunkBytes)
			e.Chunks = k
			chain := &co.chain
			if op == Reduce {
				chain = &co.rchain
			}
			e.Steps = chain.steps(k)
			m.stream(&t, chain, k, S/float64(k), pr, step, bwf)
		}
	case Tree, DoubleTree:
		trees := 1.0
		pp := &co.tree
		if a == DoubleTree {
			trees, pp = 2, &co.dtree
		}
		perCh := S / (nch * trees)
		k := m.chunks(perCh, m.k.ChunkBytes)
		e.Chunks, e.Steps = k, pp.steps(k)
		m.stream(&t, pp, k, perCh/float64(k), pr, m.treeStepUs(pr), bwf)
		if pr == LL128 {
			if capGBps, ok := treeLL128CeilingGBps(p); ok {
				t.xfer = max(t.xfer, S/(capGBps*1e3))
			}
		}
	case Hierarchical:
		pd := float64(p.PerDomain)
		doms := float64(p.Domains)
		e.Steps = 2*(p.PerDomain-1) + 2*(p.Domains-1)
		m.steps(&t, 2*(pd-1), co.intra, S/pd, pr, step, bwf)
		m.steps(&t, 2*(doms-1), co.rail, S/(pd*doms), pr, step, bwf)
	case NVLS:
		eff := m.nvlsEfficiency(p.Cluster.GPU().Arch)
		nvch := float64(e.Channels)
		k := m.chunks(S/(n*nvch), m.k.NVLSChunkBytes)
		e.Chunks = k
		unit := S / (n * float64(k)) // one block-chunk, all channels
		switch op {
		case AllReduce:
			e.Steps = co.nvlsAR.steps(k)
			m.pipe(&t, &co.nvlsAR, k, unit, pr, m.k.NVLSStepUs, bwf*eff)
			// At most NCCL's NVLS bus bandwidth (nvlsBusCeilingGBps), the chunks'
			// steps included, as the NVLS tree's ceiling below.
			if bus, ok := nvlsBusCeilingGBps(p); ok {
				t.xfer = max(t.xfer, S*2*(n-1)/n/(bus*1e3)-(t.lat-fixed))
			}
		// A single-stage NVLS operation has nothing to overlap: one step moves it all.
		case ReduceScatter:
			e.Steps, e.Chunks = 1, 1
			m.steps(&t, 1, co.nvlsRed, S/n, pr, m.k.NVLSStepUs, bwf*eff)
		case AllGather:
			e.Steps, e.Chunks = 1, 1
			m.steps(&t, 1, co.nvlsMC, S/n, pr, m.k.NVLSStepUs, bwf*eff)
		}
	case NVLSTree:
		// The switch stages run on NVLink, the tree on the NICs: pipelined over the
		// same chunks, the slower side sets the pace, and the fill is the first chunk
		// of the other side and of every further tree hop. A chunk climbs the tree and
		// comes back down, one network step per level each way (NCCL's NVLS_TREE
		// latency: 2·log2(nodes) network hops, tuning.cc).
		eff := m.nvlsEfficiency(p.Cluster.GPU().Arch)
		pd := float64(p.PerDomain)
		chunk := m.k.NVLSChunkBytes
		if p.Domains >= 4 {
			chunk = min(chunk, nvlsTreeMaxChunk4Nodes)
		}
		k := m.chunks(S/(pd*float64(e.Channels)), chunk)
		e.Chunks = k
		var intra term
		m.pipe(&intra, &co.nvlsTreeIntra, k, S/(pd*float64(k)), pr, m.k.NVLSStepUs, bwf*eff)
		net := S / pd * co.nvlsTreeNet.m / bwf
		hops := 2 * math.Ceil(math.Log2(float64(p.Domains)))
		e.Steps = co.nvlsTreeIntra.steps(k) + int(hops)
		t.lat += intra.lat + hops*(step+co.nvlsTreeNet.lat+co.nvlsTreeNet.net*m.k.NetStepUs[pr])
		t.xfer += max(intra.xfer, net) + (min(intra.xfer, net)+(hops-1)*net)/float64(k)
		// Every stage of the pipeline (the switch reduce, each network hop up and
		// down, the multicast) moves one loop of chunks — NCCL's chunk on each
		// channel and NVLS head — per period of the pipeline's pace, so the first
		// loop fills the stages and the last drains them: (stages − 1) loops more
		// than the bytes (nvlsTreeFillBytes). The pace is the slower side's steady
		// one (the switch stages on NVLink, the network), held to NCCL's
		// per-channel ceiling where it has one; the chunks' steps (t.lat beyond the
		// fixed cost) are part of that time. The loop follows NCCL's chunk by call
		// size, so a call that crosses its step (96 MiB on two B200 nodes, 64 MiB
		// on two H100) fills with twice the bytes.
		usPerByte := max(co.nvlsTreeIntra.full.m/(bwf*eff), co.nvlsTreeNet.m/bwf) / pd
		if capGBps, ok := nvlsTreeCeilingGBps(p); ok {
			usPerByte = max(usPerByte, 1/(capGBps*1e3))
		}
		// and each domain's NVLS stage at most at NCCL's NVLS bus bandwidth, converted
		// over all the call's ranks as NCCL converts the NVLS tree's (tuning.cc
		// v2.28.3-1: bw = min(intraBw, interBw, perChMaxNVLSTreeBw), ratio nRanks /
		// nsteps).
		if bus, ok := nvlsBusCeilingGBps(p); ok {
			usPerByte = max(usPerByte, 2*(n-1)/n/(bus*1e3))
		}
		fill := nvlsTreeFillBytes(S, float64(co.nvlsTreeIntra.D)+hops, e.Channels*p.PerDomain, p.Domains)
		t.xfer = max(t.xfer, (S+fill)*usPerByte-(t.lat-fixed))
	case Direct:
		switch op {
		case AllReduce:
			e.Steps = 2
			m.steps(&t, 2, co.allPairs, S/n, pr, step, bwf)
		case AllGather, ReduceScatter, AllToAll:
			e.Steps = 1
			m.steps(&t, 1, co.allPairs, S/n, pr, step, bwf)
		case Broadcast:
			e.Steps = 1
			m.steps(&t, 1, co.fromRoot, S, pr, step, bwf)
		case Reduce:
			e.Steps = 1
			m.steps(&t, 1, co.toRoot, S, pr, step, bwf)
		case SendRecv:
			e.Steps = 1
			m.steps(&t, 1, co.neighbor, S, pr, step, bwf)
		}
	case PAT:
		e.Steps = patSteps(p.N())
		for k := range e.Steps {
			m.steps(&t, 1, co.pat[k], S/n, pr, step, bwf)
		}
	case Pairwise:
		e.Steps = p.N() - 1
		// co.pairwise sums the steps' coefficients, so one "step" call adds them all;
		// only the per-step software cost needs the count.
		t.lat += float64(e.Steps-1) * step
		m.steps(&t, 1, co.pairwise, S/n, pr, step, bwf)
		t.xfer = max(t.xfer, m.pairwiseNetUs(p, S/n, pr))
	}
	// On EFA a GPU's proxy thread posts and retires the call's network operations
	// one at a time (efaproxy.go): the last channel's first chunk leaves only once
	// the proxy has served every channel before it, a stage of the pipeline's fill
	// (the one message's send and receive a network hop's latency holds, fitted on
	// one-channel calls, are not counted twice), and the call cannot end before the
	// proxy has served them all, a bound hidden under the transfer once each
	// operation carries enough bytes.
	t.xfer += efaProxyUs(p, op, a, pr, S, e.Channels, e.Chunks, fixed, t.lat+t.xfer)
	e.TimeUs = t.lat + t.xfer
	e.LatencyUs = t.lat
	if e.TimeUs > 0 {
		e.AlgBWGBps = S / e.TimeUs / 1e3
		e.BusBWGBps = e.AlgBWGBps * op.BusFactor(p.N())
	}
	return e
}

// pipe adds a pipelined algorithm with k chunks moving unit bytes per flow unit.
func (m *Model) pipe(t *term, pp *pipe, k int, unit float64, pr Protocol, stepUs, bwf float64) {
	w := pp.sums(k)
	t.lat += float64(pp.steps(k))*stepUs + w.lat + w.net*m.k.NetStepUs[pr]
	t.xfer += unit * w.m / bwf
}

// streams says whether the closed form streams op's chunks under algorithm a
// (Model.stream): ring broadcast and reduce (chains) and the trees.
func streams(op Op, a Algorithm) bool {
	return a == Tree || a == DoubleTree || a == Ring && (op == Broadcast || op == Reduce)
}

// streamShape names what a streamed algorithm's chunks pass through.
func streamShape(a Algorithm) string {
	if a == Ring {
		return "chain"
	}
	return "tree"
}

// stream adds a chain or tree that streams k chunks: unlike the step-synchronous
// pipe, a chunk does not wait for the slowest hop of the whole pipeline before the
// next one leaves, because NCCL keeps NCCL_STEPS (8) slots in flight per channel and
// connection. The hop latencies and per-step costs are therefore paid once, by the
// first chunk on its way through the stages (NCCL's own model charges a ring
// broadcast nsteps × the hop latency and a tree 2 × (its intra-node hops + log2
// nodes network hops), never per chunk); after it the chunks follow at the pace of
// the most loaded link. Paying them per chunk instead priced a 1 GiB double-tree
// all-reduce on two DGX H100 at 28 ms of latency in 69 ms.
func (m *Model) stream(t *term, pp *pipe, k int, unit float64, pr Protocol, stepUs, bwf float64) {
	w := pp.sums(k)
	t.lat += float64(pp.D)*stepUs + pp.path.lat + pp.path.net*m.k.NetStepUs[pr]
	t.xfer += unit * w.m / bwf
}

// treeStepUs is the software cost of one hop of a tree (the double binary tree's
// and the single tree's stages: the chain inside each node and the heads' tree
// across nodes): a protocol's step cost (StepUs, fitted mostly where rings run)
// scaled by what NCCL's own tuning measures a tree hop to cost against a ring step
// over NVLink (tuning.cc hwLat, v2.27.7-1: tree 0.6 / 1.25 / 4.0 µs against ring
// 0.6 / 1.9 / 3.4 µs for LL / LL128 / Simple; ncclHwLat). An LL128 tree hop costs
// two thirds of an LL128 ring step, a Simple one 18 % more. Fitted apart, the
// leave-one-source-out folds put the tree's LL128 step at 0.53–0.68 of the ring's
// and LL's at 0.9–1.5, NCCL's ratios; but the one source with deep chains (OCI's
// 64-GPU racks) is then the only one pinning it, and its fold slid it to 0.2 µs
// (docs/calibration.md, "A tree hop's cost").
func (m *Model) treeStepUs(pr Protocol) float64 {
	return m.k.StepUs[pr] * treeHopRatio[pr]
}

// treeHopRatio is NCCL's tree hop latency over its ring step latency on NVLink
// (tuning.cc hwLat), by protocol.
var treeHopRatio = func() (r [numProtos]float64) {
	for pi, pr := range ncclProtos {
		r[pr] = ncclHwLat[hwNVLink][nTree][pi] / ncclHwLat[hwNVLink][nRing][pi]
	}
	return r
}()

// ringChannels is how many rings (and trees) a placement uses: NCCL's channel count
// for the GPU generation, rounded up to a multiple of the ranks per node so that
// every GPU's NIC carries an equal share of the inter-node traffic.
func ringChannels(p *Placement) int {
	base := searchChannels(p.Cluster.GPU().Arch)
	unit := 1
	switch {
	case p.Cluster.Spec.Intra.Kind == topology.Mesh && p.PerDomain > 2:
		unit = len(meshCycles(p.PerDomain)) // every mesh ring equally used…
		if p.Domains > 1 {
			unit = lcm(unit, p.PerDomain) // …and every GPU an entry equally often
		}
	case p.Domains > 1:
		unit = p.PerDomain // every GPU (and its NIC) enters the node equally often
	}
	return (base + unit - 1) / unit * unit
}

// searchChannels is the channel count of NCCL's ring and tree graphs (the count its
// tuning multiplies its per-channel figures by) for the GPU generation.
func searchChannels(a hardware.Arch) int {
	switch a {
	case hardware.Blackwell:
		// 721.8 GB/s NVLink: one node's search lands at 8 × 90 GB/s, duplicated; across
		// NVL72 racks (SM100 network ladder from the 48 GB/s NIC path) at 16 × 45.1 GB/s,
		// every channel passing every GPU of the rack (src/graph/search.cc, v2.29.2-1)
		return 16
	case hardware.CDNA3, hardware.CDNA4:
		// RCCL on MI300X / MI355X: no published source for 16 (docs/calibration.md,
		// "Constants without a published source").
		return 16
	}
	// NCCL on A100/H100 NVSwitch: 6 rings × 2 after channel duplication, derived
	// from search.cc's rules (ncclTopoCompute, v2.27.7-1: 6 channels at 40 / 60
	// GB/s, sm90SpeedArrayIntra and speedArrayIntra; duplicated at half the speed,
	// dupChannels), not read from a log.
	return 12
}

// nvlsTreeMaxChunk4Nodes is the NVLS tree's largest chunk on 4 nodes or more: NCCL
// takes NCCL_NVLSTREE_MAX_CHUNKSIZE, whose default (-2) means 64 KiB from 4 nodes on
// and NCCL_NVLS_CHUNKSIZE below (enqueue.cc calcCollChunking, v2.27.7-1).
const nvlsTreeMaxChunk4Nodes = 64 << 10

// nvlsChannels: NCCL's nvlsChannels inside one scale-up domain in its newest
// releases, 16 on SM90 and 24 on SM100 (src/transport/nvls.cc at v2.27.7-1,
// NVLS_NCHANNELS_SM90 and NVLS_NCHANNELS_SM100_NVL). The count by release and by the
// domains a communicator spans (32 on SM100 across domains) is
// Placement.ncclNVLSChannels.
func nvlsChannels(a hardware.Arch) int {
	if a == hardware.Blackwell {
		return 24
	}
	return 16
}

func lcm(a, b int) int { return a / gcd(a, b) * b }

// nvlsTreeFillBytes is what the fill and drain of an NVLS tree's pipeline cost at
// its pace (its per-channel ceiling or, below it, its slower side's), in bytes at
// that pace: (stages − 1) loops of ops concurrent chunks (NCCL's NVLS channels ×
// NVLS heads, one chunk each per loop: enqueue.cc ncclPatternNvlsTree), a call
// smaller than one loop filling them with what it has. On two nodes of 8 H100 (16
// channels × 8 heads, 128 KiB chunks, two switch stages and a network hop each way)
// that is 3 × 16 MiB, 205 µs at the 246 GB/s ceiling: nccl-tests#309's XE9680 and
// dstack's Nebius sweeps take 198–252 µs more than the bytes at their largest
// calls' pace (251 and 252 GB/s) from 64 MiB to 1 GiB. On two nodes of 8 B200 (24
// channels × 8 heads, bound by the NICs at 384 GB/s) the loop is 12 MiB below
// 96 MiB and 24 MiB from there: the step dstack's Lambda and GCP A4 sweeps show at
// 128 MiB.
func nvlsTreeFillBytes(S, stages float64, ops, nodes int) float64 {
	loop := min(S, float64(ops)*ncclNVLSTreeChunk(S, ops, nodes))
	return (stages - 1) * loop
}

// ncclNVLSTreeChunk is the chunk NCCL's NVLS tree runs a call of S bytes with, ops
// being its channels × NVLS heads (enqueue.cc calcCollChunking, the same rule from
// v2.19.3-1 to v2.29.2-1): NCCL_NVLS_CHUNKSIZE (128 KiB, transport/nvls.cc), at
// most 64 KiB from 4 nodes on (NCCL_NVLSTREE_MAX_CHUNKSIZE's default), cut to
// 64 KiB below 4 × ops × the chunk and to 32 KiB below 1 × ops × the chunk.
func ncclNVLSTreeChunk(S float64, ops, nodes int) float64 {
	chunk := 128.0 * 1024
	if nodes >= 4 {
		chunk = nvlsTreeMaxChunk4Nodes
	}
	o := float64(ops)
	if S < 4*o*chunk && chunk > 64*1024 {
		chunk = 64 * 1024
	}
	if S < o*chunk && chunk > 32*1024 {
		chunk = 32 * 1024
	}
	return chunk
}
