package collective

import (
	"math"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/topology"
)

// NCCL chooses a collective's algorithm and protocol by its own cost model, not by
// what the candidates take: ncclTopoTuneModel (src/graph/tuning.cc) fills a table
// of latency and algorithm bandwidth per (collective, algorithm, protocol) from the
// topology search's graphs, and ncclTopoGetAlgoTime prices a call as
// latency + bytes / bandwidth, with the tree's size correction and the ring's
// "plateau"; the call runs the arg-min (enqueue.cc, topoGetAlgoInfo). Its figures
// charge Simple far more latency than LL and LL128 and cap LL and LL128 per
// channel, so it keeps LL128 up to tens of MiB where Simple would be as fast.
//
// The model makes the same choice under Auto (no algorithm or protocol forced, no
// measured choice of a calibrated cluster, no AWS tuner region): ncclChoice below
// evaluates NCCL's table for the placement and returns its arg-min, which the
// calibrated physics (Model.price) then prices; an algorithm forced or measured
// gets the protocol NCCL's table picks for it (ncclProtocol). Where NCCL has no
// model (send/recv, all-to-all, AMD GPUs) the model runs the cheapest of its own
// prices (autoBest). With NCCL's choice and without the start-up ramp the old
// model needed to keep Simple off small calls, the collectives'
// leave-one-source-out figures improved in every asserted class
// (docs/calibration.md, "NCCL's choice with the ramp retired").
//
// The tables are NVIDIA/nccl v2.27.7-1's (src/graph/tuning.cc lines 134–190 and
// ncclTopoTuneModel, ncclTopoGetAlgoTime; src/graph/topo.h for the NVLink
// per-link figures). What stands in for NCCL's topology search: the channel count
// is the model's ring channels (ringChannels, NCCL's 12 on one A100/H100 node),
// their summed speed the GPU's NVLink bandwidth at NCCL's per-link figure
// (ncclLinkRatio) and, across nodes, the NICs the group's GPUs use; the NVLS graph
// has one channel per local GPU (its heads; at most NCCL_MAX_NVLS_ARITY, 32), each at
// the NVLink bandwidth over heads + 1 (the head's path carries two) taken down to the
// search's speed ladder. A scale-up domain that spans hosts (MNNVL) is one NCCL node,
// whose NVLS graph reaches every host's NICs (its ring and tree graphs do too in NCCL;
// here they keep one host's, docs/calibration.md "What NCCL's graphs see of an NVL72
// rack"). Hosts are taken as Intel (llMaxBws row 0,
// a network post overhead of 1 µs) and the net plugin's extra latency as 0 (NCCL's
// IB transport reports none). Collectives NCCL has no model for (send/recv,
// all-to-all) and AMD GPUs (RCCL's tables differ) keep the model's own choice.

// NCCL's algorithm rows used below.
const (
	nTree     = iota // NCCL_ALGO_TREE: the double binary tree
	nRing            // NCCL_ALGO_RING
	nNVLS            // NCCL_ALGO_NVLS
	nNVLSTree        // NCCL_ALGO_NVLS_TREE
	nPAT             // NCCL_ALGO_PAT
	nNCCLAlgos
)

// ncclAlgo maps NCCL's rows to the model's algorithms.
var ncclAlgo = [nNCCLAlgos]Algorithm{nTree: DoubleTree, nRing: Ring, nNVLS: NVLS, nNVLSTree: NVLSTree, nPAT: PAT}

// NCCL's protocol index order (LL, LL128, Simple) to the model's protocols.
var ncclProtos = [3]Protocol{LL, LL128, Simple}

// ncclBaseLat is tuning.cc's baseLat (µs) for tree and ring, LL / LL128 / Simple;
// NVLS, the NVLS tree and PAT have none (PAT's 8 µs is its own formula).
var ncclBaseLat = [2][3]float64{
	nTree: {6.8, 14.0, 8.4},
	nRing: {6.6, 14.0, 8.4},
}

// ncclHwLat is tuning.cc's hwLat (µs) by link (NVLink, PCI, network), algorithm
// and protocol (LL / LL128 / Simple).
var ncclHwLat = [3][nNCCLAlgos][3]float64{
	{ // NVLink
		nTree: {.6, 1.25, 4.0}, nRing: {.6, 1.9, 3.4}, nNVLS: {0, 0, 25}, nNVLSTree: {0, 0, 25}, nPAT: {0, 0, 0},
	},
	{ // PCI
		nTree: {1.0, 1.9, 4.0}, nRing: {1.0, 2.5, 5.7},
	},
	{ // network
		nTree: {5.0, 8.5, 14}, nRing: {2.7, 4.0, 14.0}, nNVLS: {0, 0, 18}, nNVLSTree: {0, 0, 14},
	},
}

const (
	hwNVLink = 0
	hwPCI    = 1
	hwNet    = 2
)

// NCCL's per-channel caps (tuning.cc), by GPU generation and node count (1, 2, more):
// llMaxBws (row by GPU on one node, by host CPU vendor across nodes: Intel's row),
// perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws.
var (
	ncclLLMaxBw1 = map[hardware.Arch]float64{hardware.Ampere: 87.7, hardware.Hopper: 141.0, hardware.Blackwell: 2 * 141.0}
	// Intel hosts across nodes: the Volta row of the table, {39.0, 39.0, 20.4}.
	ncclLLMaxBwIntel   = [3]float64{39.0, 39.0, 20.4}
	ncclRingLL128PerCh = map[hardware.Arch][3]float64{
		hardware.Ampere: {20, 20, 20}, hardware.Hopper: {36.7, 36.7, 36.7}, hardware.Blackwell: {2 * 36.7, 2 * 36.7, 2 * 36.7},
	}
	ncclTreeLL128PerCh = map[hardware.Arch][3]float64{
		hardware.Ampere: {20, 20, 20}, hardware.Hopper: {36.7, 36.7, 29.0}, hardware.Blackwell: {2 * 36.7, 2 * 36.7, 2 * 29.0},
	}
	ncclTreePerCh = map[hardware.Arch][3]float64{
		hardware.Ampere: {24.0, 23.6, 17.8}, hardware.Hopper: {38.7, 41.4, 36.0}, hardware.Blackwell: {2 * 38.7, 2 * 41.4, 2 * 36.0},
	}
)

// ncclTreeCorrection is tuning.cc's treeCorrectionFactor, by protocol (LL, LL128,
// Simple) and log2(bytes / 64), 64 B to 256 MiB; 1 outside.
var ncclTreeCorrection = [3][23]float64{
	{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
	{1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
	{.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}

// ncclLinkRatio is NCCL's bandwidth of one NVLink (topo.h: SM80_NVLINK_BW 20,
// SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40) over the link's line rate per direction
// (25 GB/s for NVLink 3 and 4, 50 for NVLink 5): the catalog's GPU bandwidth is
// line rate, NCCL's graphs use its own figure. PCIe (Gen4 x16: NCCL 24 GB/s of
// 31.5) is close to Ampere's ratio.
var ncclLinkRatio = map[hardware.Arch]float64{hardware.Ampere: 20.0 / 25, hardware.Hopper: 20.6 / 25, hardware.Blackwell: 40.0 / 50}

// ncclPlainTreeFactor is what NCCL's tuning takes off a tree's bus bandwidth when
// its tree graph has the plain tree pattern (tuning.cc ncclTopoTuneModel:
// maxTreePattern == NCCL_TOPO_PATTERN_TREE, × .85; v2.27.7-1 to v2.29.2-1).
const ncclPlainTreeFactor = 0.85

// ncclNetOverheadUs is getNetOverhead on Intel hosts (1 µs; 2 on AMD).
const ncclNetOverheadUs = 1.0

// The refinements ncclTopoTuneModel and ncclTopoGetAlgoTime apply to the tables
// above (src/graph/tuning.cc at v2.27.7-1, the line of each in brackets; the same
// at v2.29.7-1 but for the NVLS ratio, which is nRanks / nsteps there).
const (
	// ncclNVLSGatherInterFactor: an NVLS all-gather or reduce-scatter takes 0.9 of
	// bwInter (bw = min(bwIntra·(ppn−1)/ppn, bwInter·0.9f) [272]).
	ncclNVLSGatherInterFactor = 0.9
	// ncclRingLLFactor: the ring with LL moves half of the bus bandwidth [279].
	ncclRingLLFactor = 0.5
	// ncclLL128Factor: the ring with LL128, and any tree all-reduce, take 0.92 of
	// it ("0.92 /*120.0/128.0*/" [280], "busBw*.92" [281]).
	ncclLL128Factor = 0.92
	// ncclTreeLLDivisor: the tree with LL moves a 3.8th (busBw*1.0/3.8 [282]).
	ncclTreeLLDivisor = 3.8
	// ncclTreeLL128Factor and ncclTreeLL128FactorOneNode: the tree with LL128,
	// 120/128 across nodes and 7/9 on one ([283]).
	ncclTreeLL128Factor        = 120.0 / 128
	ncclTreeLL128FactorOneNode = 7.0 / 9
	// ncclPATFactor: PAT's bus bandwidth × .75 [285].
	ncclPATFactor = 0.75
	// ncclNVLSRatio and ncclTreeRatio: bus to algorithm bandwidth for NVLS and the
	// NVLS tree (5.0/6.0; from 2.28 nRanks / nsteps, ncclNVLSChannel228) and for the
	// other non-ring algorithms (.5) [324–325].
	ncclNVLSRatio = 5.0 / 6
	ncclTreeRatio = 0.5
	// ncclSimpleNetOverheadScale: Simple pays the network overhead three times
	// (netOverhead *= 3 [351]).
	ncclSimpleNetOverheadScale = 3
	// ncclPATBaseUs, ncclPATLogDivisor, ncclPATRankUs: PAT's latency, 8 + log2(nodes)
	// × interLat/3.5 + ranks × 2.8 µs [374–376].
	ncclPATBaseUs     = 8
	ncclPATLogDivisor = 3.5
	ncclPATRankUs     = 2.8
	// ncclRingPlateau: a Simple ring all-reduce across nodes of 64 B a rank and
	// channel or more runs at 1.4 × its latency on sm80 and later ("Plateau effect
	// of ring" [572]; 1.9 before sm80).
	ncclRingPlateau = 1.4
	// ncclNVLSOneNodeInterRatio: on one node the NVLS graph's bwInter is a speed
	// step above bwIntra — the search's second pass raises it (search.cc
	// ncclTopoCompute at v2.27.7-1, lines 1121–1139): 60 GB/s against 40 on H100
	// (sm90SpeedArrayIntra).
	ncclNVLSOneNodeInterRatio = 1.5
)

// Blackwell's per-channel caps and the NVLS tree's network hop from NCCL 2.28 on
// (ncclGraph.since228 gives the releases each first appears in):
// perChMaxRingLL128Bws, perChMaxTreeBws and hwLatencies[NET][NVLSTree][Simple] of
// tuning.cc ncclTunerConstantsDefaults at v2.29.7-1.
var (
	ncclRingLL128PerCh228Blackwell = [3]float64{40, 40, 40}
	// ncclRingLL128PerCh228OnlyBlackwell is perChMaxRingLL128Bws for Blackwell in
	// NCCL 2.28 (tuning.cc line 179 at v2.28.7-1 and v2.28.9-1: {2*36.7, 34.6,
	// 2*36.7}; v2.28.3-1 has 2*36.7 on two nodes too): one node keeps 2.27's 73.4
	// GB/s a channel, above what 0.92 of a Blackwell ring's NVLink leaves a channel,
	// so the LL128 ring of one node is not capped there. 2.29's 40 would cap it.
	ncclRingLL128PerCh228OnlyBlackwell = [3]float64{2 * 36.7, 34.6, 2 * 36.7}
	ncclTreePerCh228Blackwell          = [3]float64{70.0, 42.8, 24.0}
)

const ncclNVLSTreeNetLat228 = 20.9

// ncclGraph is what ncclTopoTuneModel reads from the placement.
type ncclGraph struct {
	arch     hardware.Arch
	nodes    int
	ranks    int
	ppn      float64
	channels float64 // ring and tree channels
	intra    float64 // summed NVLink (or PCIe) bandwidth of one GPU, NCCL's figures, GB/s
	nic      float64 // summed NIC bandwidth the group's GPUs of one node use, GB/s
	// nvlsNIC is the NIC bandwidth NCCL's NVLS graph sees on a node: the NICs of
	// every host of an MNNVL clique (nic where a node is one host), GB/s.
	nvlsNIC    float64
	intraHw    int
	ll128      bool // NCCL enables LL128 on this path
	simpleOnly bool // the network carries Simple only (AWS's plugin sets NCCL_PROTO)
	// treePattern: the tree graph has NCCL's plain tree pattern (all of a node's NIC
	// traffic through one GPU), which its search forces with one GPU per node
	// (search.cc ncclTopoCompute: ngpus == 1, v2.27.7-1 to v2.29.2-1).
	treePattern bool
	// since228: the cluster states NCCL 2.28 or later, whose tables differ: NVLS and
	// the NVLS tree priced with nvlsEfficiency (ncclNVLSChannel228), the NVLS
	// tree's network hop 20.9 µs (14 before) and Blackwell's per-channel caps (ring
	// LL128 40, tree LL128 55.6 / 31.67 / 20.0, tree 70.0 / 42.8 / 24.0 GB/s;
	// twice Hopper's before), tuning.cc ncclTunerConstantsDefaults: the tree caps
	// from v2.28.3-1 on, the hop from v2.28.9-1 on (v2.28.3-1 and v2.28.7-1 keep
	// 14), the ring LL128 cap of 40 at v2.29.7-1 (v2.29.2-1 and v2.29.3-1 {34.5,
	// 34.6, 34.5}). One set stands for every release from 2.28 on
	// (ncclRingLL128PerCh228Blackwell and the others) but the ring LL128 cap of 2.28
	// (is228).
	since228 bool
	// is228: the cluster states NCCL 2.28, whose ring LL128 cap on Blackwell is
	// ncclRingLL128PerCh228OnlyBlackwell, not 2.29's.
	is228 bool
}

func ncclGraphOf(p *Placement) (ncclGraph, bool) {
	c := p.Cluster
	s := &c.Spec
	arch := c.GPU().Arch
	ratio, ok := ncclLinkRatio[arch]
	if !ok {
		return ncclGraph{}, false // RCCL on AMD GPUs: other tables
	}
	g := ncclGraph{arch: arch, nodes: p.Domains, ranks: p.N()}
	g.ppn = float64(g.ranks) / float64(g.nodes)
	g.channels = float64(p.coef.channels) // ringChannels, at most the communicator's maxCTAs
	intra := s.Intra.GPUBandwidthGBps
	if intra == 0 {
		intra = c.GPU().NVLinkGBps
	}
	g.intra = intra * ratio
	g.intraHw = hwNVLink
	if s.Intra.Kind == topology.PCIe {
		g.intraHw = hwPCI
	}
	if g.nodes > 1 {
		nics := float64(s.NICs.PerNode) * min(1, g.ppn/float64(s.GPUsPerNode))
		g.nic = max(1, nics) * s.NICs.Gbps / 8
		// NCCL's node is the scale-up domain: with MNNVL, the clique of hosts whose
		// GPUs share an NVLink domain (an NVL72 rack of 18 trays), whose topologies
		// ncclTopoGetSystem fuses into one system with every host's NICs
		// (src/graph/topo.cc, comm->MNNVL: ncclTopoFuseXml over the clique's ranks;
		// src/init.cc counts nodes by the ring graph's first ranks; v2.25.1-1 to
		// v2.29.2-1). The NVLS graph's search pairs each head with a NIC of its own
		// (search.cc ncclTopoSearchRecNet: "NVLS search only tries to find NIC:GPU
		// combinations to compute the heads"), so on a rack of 18 trays of 4 × 400
		// Gb/s its 32 heads have 32 of the 72 NICs, not one tray's 4 between them.
		// NCCL's ring and tree graphs reach them too (15 channels at 48 GB/s, one NIC
		// each); given them, the copy moves OCI's two-rack sweep (NVLS off) to the ring
		// from 2 GiB and the folds refit every protocol's costs around a 128-rank ring
		// (1–64 MiB left out 11.8 → 13.2 %, two folds on a bound), so nic stays one
		// host's (docs/calibration.md, "What NCCL's graphs see of an NVL72 rack").
		g.nvlsNIC = g.nic
		if g.ppn > float64(s.GPUsPerNode) {
			g.nvlsNIC = float64(s.NICs.PerNode) * g.ppn / float64(s.GPUsPerNode) * s.NICs.Gbps / 8
		}
	}
	// LL128 (tuning.cc, v2.27.7-1): on NVLink paths only, and across nodes only where
	// the NIC is reached through PCIe switches or PXN, which the NVSwitch systems'
	// NICs are; and never where the network carries Simple only.
	g.ll128 = g.intraHw == hwNVLink
	g.simpleOnly = g.nodes > 1 && s.NICs.SimpleProtocolOnly
	g.treePattern = g.nodes > 1 && p.PerDomain == 1
	if major, minor, ok := s.NCCLRelease(); ok && (major > 2 || major == 2 && minor >= 28) {
		g.since228 = true
		g.is228 = major == 2 && minor == 28
	}
	return g, true
}

// time is NCCL's predicted time (µs) of op on bytes under its algorithm row a
// and protocol index pi (LL, LL128, Simple), or -1 where NCCL does not run it.
func (g *ncclGraph) time(op Op, a, pi int, bytes float64) float64 {
	lat, xfer := g.parts(op, a, pi, bytes)
	if lat < 0 {
		return -1
	}
	return lat + xfer
}

// parts is time's two terms: NCCL's latency and its transfer (bytes over the
// algorithm bandwidth), µs; -1, -1 where NCCL does not run it.
func (g *ncclGraph) parts(op Op, a, pi int, bytes float64) (lat, xfer float64) {
	if g.simpleOnly && pi != 2 || pi == 1 && !g.ll128 {
		return -1, -1
	}
	if (a == nNVLS || a == nNVLSTree || a == nPAT) && pi != 2 {
		return -1, -1
	}
	n := float64(g.ranks)
	idx2 := min(g.nodes, 3) - 1
	var nsteps float64
	switch op {
	case AllReduce:
		nsteps = 2 * (n - 1)
	case AllGather, ReduceScatter:
		nsteps = n - 1
	default:
		nsteps = n
	}
	// the graph's summed speed (nChannels × bw)
	ringBus := g.intra
	if g.nodes > 1 {
		ringBus = min(g.intra, g.nic)
	}
	var bus float64
	switch a {
	case nRing:
		bus = ringBus
	case nTree:
		bus = ringBus
		if g.nodes == 2 {
			bus = min(g.intra, 2*g.nic) // the tree search raises bwIntra up to 2 × bwInter
		}
	case nPAT:
		bus = ringBus
	case nNVLS, nNVLSTree:
		heads := nvlsHeads(g.ppn)
		chIntra := ncclSpeed(g.arch, g.intra/(heads+1))
		chInter := ncclNVLSOneNodeInterRatio * chIntra
		if g.nodes > 1 {
			chInter = g.nvlsNIC / heads
		}
		switch {
		case g.since228:
			bus = heads * ncclNVLSChannel228(g, a, op, heads, chIntra, chInter)
		case a == nNVLSTree && g.nodes > 2:
			bus = heads * min(chIntra, chInter/2)
		case a == nNVLSTree:
			bus = heads * min(chIntra, chInter)
		case op == AllReduce:
			bus = heads * min(chIntra, chInter)
		default:
			bus = heads * min(chIntra*(g.ppn-1)/g.ppn, chInter*ncclNVLSGatherInterFactor)
		}
	}
	ch := g.channels
	ringLL128, treeLL128, tree := ncclRingLL128PerCh[g.arch], ncclTreeLL128PerCh[g.arch], ncclTreePerCh[g.arch]
	if g.since228 && g.arch == hardware.Blackwell {
		ringLL128, treeLL128, tree = ncclRingLL128PerCh228Blackwell, ncclTreeLL128PerCh228Blackwell, ncclTreePerCh228Blackwell
		if g.is228 {
			ringLL128 = ncclRingLL128PerCh228OnlyBlackwell
		}
	}
	llMax := ncclLLMaxBwIntel[idx2]
	if g.nodes == 1 {
		llMax = ncclLLMaxBw1[g.arch]
	}
	switch {
	case a == nRing && pi == 0:
		bus = min(llMax, bus*ncclRingLLFactor)
	case a == nRing && pi == 1:
		bus = min(bus*ncclLL128Factor, ch*ringLL128[idx2])
	}
	if a == nTree {
		bus = min(bus*ncclLL128Factor, ch*tree[idx2])
		switch pi {
		case 0:
			bus = min(bus/ncclTreeLLDivisor, llMax)
		case 1:
			f := ncclTreeLL128Factor
			if g.nodes == 1 {
				f = ncclTreeLL128FactorOneNode
			}
			bus = min(bus*f, ch*treeLL128[idx2])
		}
	}
	if a == nTree && g.treePattern {
		bus *= ncclPlainTreeFactor
	}
	if a == nPAT {
		bus *= ncclPATFactor
	}
	// bus bandwidth to algorithm bandwidth
	if !(a != nRing && (op == AllGather || op == ReduceScatter)) {
		switch a {
		case nRing:
			bus *= n / nsteps
		case nNVLS, nNVLSTree:
			if g.since228 {
				bus *= n / nsteps // as a ring's, from v2.28.3-1 (ncclNVLSChannel228)
			} else {
				bus *= ncclNVLSRatio
			}
		default:
			bus *= ncclTreeRatio
		}
	}
	if !(bus > 0) {
		return -1, -1
	}
	intraLat := ncclHwLat[g.intraHw][a][pi]
	interLat := ncclHwLat[hwNet][a][pi]
	if a == nNVLSTree && g.since228 {
		interLat = ncclNVLSTreeNetLat228
	}
	if g.ppn == 1 {
		interLat = ncclHwLat[hwNet][nTree][pi] // latencies fully exposed: the tree's
	}
	switch a {
	case nRing:
		lat = ncclBaseLat[nRing][pi]
		hw := g.intraHw
		if g.nodes > 1 {
			hw = hwNet
		}
		if op == Broadcast || op == Reduce {
			// channels differ between nodes unless one node: nsteps × the hop, Simple
			// with the tree's figure
			l := ncclHwLat[hw][nRing][pi]
			if g.nodes == 1 {
				lat += l
			} else {
				if pi == 2 {
					l = ncclHwLat[hw][nTree][pi]
				}
				lat += nsteps * l
			}
			break
		}
		if g.nodes > 1 {
			ov := ncclNetOverheadUs
			if pi == 2 {
				ov *= ncclSimpleNetOverheadScale
			}
			intraLat = max(intraLat, ov)
		}
		inter := 0.0
		if g.nodes > 1 {
			inter = float64(g.nodes - 1)
			if op == AllReduce {
				inter *= 2
			}
		}
		lat += (nsteps-inter)*intraLat + inter*interLat
	case nTree:
		lat = ncclBaseLat[nTree][pi] + 2*(math.Floor(g.ppn-1)*intraLat+float64(log2i(g.nodes))*interLat)
	case nNVLS:
		lat = intraLat
		if g.nodes > 1 {
			lat += interLat
		}
	case nNVLSTree:
		lat = intraLat + 2*float64(log2i(g.nodes))*interLat
	case nPAT:
		lat = ncclPATBaseUs + float64(log2i(g.nodes))*interLat/ncclPATLogDivisor + n*ncclPATRankUs
	}
	if a == nTree && op == AllReduce {
		if ls := log2i(int(bytes) >> 6); ls >= 0 && ls < len(ncclTreeCorrection[pi]) {
			bus *= ncclTreeCorrection[pi][ls]
		}
	}
	if a == nRing && pi == 2 && g.nodes > 1 && op == AllReduce && bytes/(ch*n) >= 64 {
		lat *= ncclRingPlateau
	}
	return lat, bytes / (1000 * bus)
}

// ncclMaxNVLSArity is NCCL_MAX_NVLS_ARITY (src/include/device.h, 32 in v2.25.1-1 to
// v2.29.2-1): the most heads an NVLS graph has. ncclTopoCompute caps the NVLS
// search's channels, one head each, at min(NCCL_MAX_NVLS_ARITY, the node's GPUs)
// (src/graph/search.cc), so a 72-GPU NVL72 rack has 32 heads, not 72.
const ncclMaxNVLSArity = 32

// nvlsHeads is the NVLS graph's heads (its channels) on a node of ppn GPUs.
func nvlsHeads(ppn float64) float64 { return min(ppn, ncclMaxNVLSArity) }

// ncclIntraSpeeds are the per-channel speeds (GB/s) NCCL's topology search tries
// inside a node, fastest first (src/graph/search.cc, speedArrayIntra and
// sm90SpeedArrayIntra, sm100SpeedArrayIntra at v2.27.7-1).
var ncclIntraSpeeds = map[hardware.Arch][]float64{
	hardware.Ampere:    {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0},
	hardware.Hopper:    {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0},
	hardware.Blackwell: {90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0},
}

// ncclSpeed is the fastest speed of the search's ladder at or below x: what a
// channel gets where the links allow x.
func ncclSpeed(a hardware.Arch, x float64) float64 {
	l := ncclIntraSpeeds[a]
	for _, v := range l {
		if v <= x {
			return v
		}
	}
	return l[len(l)-1]
}

// log2i is NCCL's log2i: floor(log2(n)) for n ≥ 1, -1 for n ≤ 0.
func log2i(n int) int {
	l := -1
	for n > 0 {
		n >>= 1
		l++
	}
	return l
}

// ncclEligible says whether NCCL considers its algorithm row a for op on g.
func (g *ncclGraph) eligible(op Op, a int) bool {
	switch op {
	case Broadcast, Reduce:
		return a == nRing
	case AllGather, ReduceScatter:
		return a == nRing || a == nPAT && g.nodes == g.ranks || a == nNVLS && g.nodes == 1
	case AllReduce:
		switch a {
		case nNVLS:
			return g.nodes == 1
		case nNVLSTree:
			return g.nodes > 1
		case nPAT:
			return false
		}
		return true
	}
	return false
}

// ncclChoice is the algorithm and protocol NCCL's tuning model picks for op on the
// placement among those the model can run there, NVLS and the NVLS tree only where
// nvls says NCCL has a kernel for the call's reduction (Reduction); ok is false
// where NCCL has no model for op or the GPUs are not NVIDIA's.
func (m *Model) ncclChoice(p *Placement, op Op, bytes float64, nvls bool) (Algorithm, Protocol, bool) {
	if op != AllReduce && op != AllGather && op != ReduceScatter && op != Broadcast && op != Reduce {
		return Auto, 0, false
	}
	g, ok := ncclGraphOf(p)
	if !ok {
		return Auto, 0, false
	}
	best, ba, bp := math.Inf(1), Auto, Protocol(0)
	for a := range nNCCLAlgos {
		if !g.eligible(op, a) || !nvls && isNVLS(ncclAlgo[a]) || !m.autoRuns(p, op, ncclAlgo[a]) {
			continue
		}
		for pi, pr := range ncclProtos {
			if t := g.time(op, a, pi, bytes); t >= 0 && t < best {
				best, ba, bp = t, ncclAlgo[a], pr
			}
		}
	}
	if ba == Auto {
		return Auto, 0, false
	}
	return ba, bp, true
}

// ncclProtocol is the protocol NCCL's tuning model picks for op under algorithm a
// (NCCL_ALGO set, or a measured choice of a calibrated cluster): the cheapest of
// a's protocols in NCCL's table. ok is false where NCCL has no row for a or no
// model for op.
func (m *Model) ncclProtocol(p *Placement, op Op, a Algorithm, bytes float64) (Protocol, bool) {
	row := -1
	for r, alg := range ncclAlgo {
		if alg == a {
			row = r
		}
	}
	if row < 0 || op != AllReduce && op != AllGather && op != ReduceScatter && op != Broadcast && op != Reduce {
		return 0, false
	}
	g, ok := ncclGraphOf(p)
	if !ok || !g.eligible(op, row) {
		return 0, false
	}
	best, bp := math.Inf(1), Protocol(0)
	for pi, pr := range ncclProtos {
		if t := g.time(op, row, pi, bytes); t >= 0 && t < best {
			best, bp = t, pr
		}
	}
	return bp, !math.IsInf(best, 1)
}

// treeLL128CeilingGBps is the fastest a tree all-reduce with LL128 runs on NVIDIA
// GPUs, as algorithm bandwidth (GB/s): NCCL's per-channel LL128 tree ceiling
// (tuning.cc perChMaxTreeLL128Bws, by node count: 1, 2, more) times its tree
// graph's channels (searchChannels), halved as NCCL converts a tree's bus bandwidth
// (ratio 0.5). It is what one channel of the LL128 tree kernel moves, whatever its
// links could carry: on a 64-GPU NVL72 rack the chain's links are not what bounds
// it (16 channels × 31.67 GB/s / 2 = 253 GB/s across two racks with NCCL 2.28 or
// later; OCI's two-rack sweep adds 242 GB/s from 64 to 512 MiB).
func treeLL128CeilingGBps(p *Placement) (float64, bool) {
	arch := p.Cluster.GPU().Arch
	perCh, ok := ncclTreeLL128PerCh[arch]
	if !ok {
		return 0, false // RCCL: other tables
	}
	if arch == hardware.Blackwell {
		if major, minor, ok := p.Cluster.Spec.NCCLRelease(); ok && (major > 2 || major == 2 && minor >= 28) {
			perCh = ncclTreeLL128PerCh228Blackwell
		}
	}
	idx := min(p.Domains, 3) - 1
	return float64(searchChannels(arch)) * perCh[idx] * 0.5, true
}

// ncclTreeLL128PerCh228Blackwell is perChMaxTreeLL128Bws for Blackwell from NCCL
// 2.28 on (tuning.cc ncclTunerConstantsDefaults, v2.28.3-1 to v2.29.2-1).
var ncclTreeLL128PerCh228Blackwell = [3]float64{55.6, 31.67, 20.0}

// nvlsTreeCeilingGBps is the fastest an NVLS-tree all-reduce across nodes runs, as
// algorithm bandwidth (GB/s): NCCL's per-channel NVLS tree ceiling (tuning.cc
// perChMaxNVLSTreeBws, by node count: 2, more) times its NVLS graph's channels (one
// head per GPU of a node, at most 32), over the ring's bus factor 2(n-1)/n, as NCCL converts
// the NVLS tree's bus bandwidth (ncclTopoTuneModel's ratio nRanks / nsteps). On two
// nodes of 8 H100 that is 8 × 57.7 × 16/30 = 246 GB/s; nccl-tests#309's and
// dstack's 2-node H100 sweeps run at 239–250 GB/s from 1 to 16 GiB.
func nvlsTreeCeilingGBps(p *Placement) (float64, bool) {
	perCh, ok := ncclNVLSTreePerCh[p.Cluster.GPU().Arch]
	if !ok || p.Domains < 2 {
		return 0, false
	}
	n := float64(p.N())
	return nvlsHeads(float64(p.PerDomain)) * perCh[min(p.Domains, 3)-2] * n / (2 * (n - 1)), true
}

// nvlsBusCeilingGBps is the fastest an NVLS all-reduce runs, as bus bandwidth
// (GB/s): NCCL's own price of the NVLS kernels (tuning.cc ncclTopoTuneModel, from
// v2.28.3-1 to v2.30.7-1), its NVLS graph's heads, each at the search's speed for
// the NVLink over heads + 1 (the head's link carries its channel twice), times
// nvlsEfficiency × (heads − 1)/heads, twice for the all-reduce's two pipelined
// operations. NCCL converts it to algorithm bandwidth by nRanks / nsteps, 2(n − 1)
// steps, as a ring's: a bus bandwidth per node whatever the rank count, so a call
// over 72 ranks takes 2·71/72 ÷ (2·7/8) = 1.13× the time of one over 8 at the same
// bus bandwidth, where the links' load per byte, S (1 + 1/n) each way, would make it
// faster. On 8 B200 (720 GB/s of NVLink in NCCL's figures, 8 heads at 80 GB/s)
// that is 8 × 80 × 0.74 × 7/8 × 2 = 829 GB/s: stas00's and OCI's 8-GPU NVLink 5
// sweeps plateau at 838–847 GB/s from 8 GiB; on an NVL72 rack (32 heads at 20 GB/s)
// 918 GB/s, where CoreWeave's rack plateaus at 834–839 GB/s. Like the NVLS tree's
// per-channel ceiling it is applied whatever NCCL a cluster states: the kernel, not
// the table, sets the pace.
func nvlsBusCeilingGBps(p *Placement) (float64, bool) {
	eff, ok := ncclNVLSEfficiency[p.Cluster.GPU().Arch]
	if !ok {
		return 0, false
	}
	g, ok := ncclGraphOf(p)
	if !ok {
		return 0, false
	}
	heads := nvlsHeads(g.ppn)
	if heads < 2 {
		return 0, false
	}
	return heads * ncclSpeed(g.arch, g.intra/(heads+1)) * eff * (heads - 1) / heads * 2, true
}

// ncclNVLSEfficiency is nvlsEfficiency (tuning.cc, v2.28.3-1 to v2.30.7-1): NVIDIA's
// fraction of the NVLS graph's bandwidth the NVLS kernels reach, by generation.
//
// Held on NVLink 5 only. On Hopper the same price (8 H100: 8 heads at 40 GB/s, 476
// GB/s) sits on the links' own (0.85 of 450 GB/s each way), and given it the folds
// trade the NVLS step cost for it (three folds on a bound, NVLSStepUs at 0 and
// Simple's fixed cost at 80 µs; docs/calibration.md, "NCCL's NVLS bus bandwidth on
// NVLink 5").
var ncclNVLSEfficiency = map[hardware.Arch]float64{
	hardware.Blackwell: 0.74,
}

// ncclNVLSTreePerCh is perChMaxNVLSTreeBws (GB/s per channel; 2 nodes, more),
// tuning.cc ncclTunerConstantsDefaults at v2.29.2-1 (the table first appears in
// v2.28.3-1, with Blackwell's 4-node figure 43.1). It is NVIDIA's measurement of
// what one channel of the NVLS tree kernel moves, applied whatever NCCL a cluster
// states: the kernel, not the table, sets the pace.
var ncclNVLSTreePerCh = map[hardware.Arch][2]float64{
	hardware.Hopper:    {57.7, 45.5},
	hardware.Blackwell: {96.0, 43.8},
}

// ncclNVLSChannel228 is what NCCL 2.28 and later price a channel (one head) of its
// NVLS graph at, as bus bandwidth (GB/s; tuning.cc ncclTopoTuneModel, v2.28.3-1 to
// v2.30.7-1, lines 285–300 at v2.28.7-1): the head's speed inside the node (chIntra)
// × nvlsEfficiency × (heads − 1)/heads, twice for an all-reduce ("AllReduce
// pipelines two operations") and × (ppn − 1)/ppn for an all-gather or
// reduce-scatter; at most its speed across nodes (chInter, twice on two nodes for
// the NVLS tree) and, for the NVLS tree, perChMaxNVLSTreeBws. The table then takes
// the heads' sum and converts an all-reduce's by nRanks / nsteps as a ring's, where
// 2.27 took min(bwIntra, bwInter) × 5/6 (ncclNVLSRatio). An NVLS graph of fewer than
// two heads is not priced ("NVLS/NVLStree needs at least 2 channels").
func ncclNVLSChannel228(g *ncclGraph, a int, op Op, heads, chIntra, chInter float64) float64 {
	eff, ok := ncclNVLSEfficiencyTable[g.arch]
	if !ok || heads < 2 {
		return 0
	}
	intra := chIntra * eff * (heads - 1) / heads
	if op == AllReduce {
		intra *= 2
	} else {
		intra *= (g.ppn - 1) / g.ppn
	}
	inter := chInter
	if a == nNVLSTree && g.nodes <= 2 {
		inter *= 2
	}
	bw := min(intra, inter)
	if perCh, ok := ncclNVLSTreePerCh[g.arch]; ok && a == nNVLSTree && g.nodes >= 2 {
		bw = min(bw, perCh[min(g.nodes, 3)-2])
	}
	return bw
}

// ncclNVLSEfficiencyTable is tuning.cc's nvlsEfficiency as NCCL's table takes it
// (v2.28.3-1 to v2.30.7-1: Hopper 0.85, Blackwell 0.74); the price holds only
// Blackwell's (ncclNVLSEfficiency).
var ncclNVLSEfficiencyTable = map[hardware.Arch]float64{hardware.Hopper: 0.85, hardware.Blackwell: 0.74}
