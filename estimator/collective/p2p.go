package collective

import (
	"math"
	"math/bits"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Point-to-point operations — send/recv and the all-to-all that NCCL runs as one
// group of sends and receives to every peer — do not run the collective kernels'
// protocols, channel counts or fixed costs. NCCL plans them per peer
// (enqueue.cc, addP2pToPlan; NCCL 2.2x):
//
//   - the step (chunk) of a peer's transfer is NCCL_P2P_NET_CHUNKSIZE (128 KiB) on a
//     communicator that spans nodes, NCCL_P2P_NVL_CHUNKSIZE (512 KiB) on one NVLink
//     node and NCCL_P2P_PCI_CHUNKSIZE (128 KiB) over PCIe (init.cc,
//     computeBuffSizes);
//   - a peer's bytes are split over nChannels channels: at least one part per
//     minPartSize (a step/8 on one node, a step/2 across nodes) up to nChannelsMin,
//     doubled while a part exceeds maxPartSize (32 steps on one node, one step
//     across nodes) up to the channels per peer;
//   - nChannelsMin is the channels per peer halved until every rank can have its
//     own (nChannelsMin × ranks ≤ the p2p channels);
//   - the channels per peer are 2 per NVLink's worth of bandwidth on NVLink (more
//     than the p2p channels on NVSwitch), 2 over PCIe, and across nodes (NCCL
//     2.21-2.28, paths.cc ncclTopoGetNchannels) 2, halved while 2 × ranks exceeds
//     4 × the p2p channels, and at least one per NIC of the GPU, or (NCCL 2.29 on,
//     when the cluster states it, and RCCL) one per 14 GB/s of the GPU's NICs
//     (p2pNetChannelsPerPeer);
//   - the protocol is LL while the peer's bytes are at most a threshold, Simple
//     above; LL128 is never used for p2p. The threshold follows the release
//     (p2pLLRule): NCCL_P2P_LL_THRESHOLD (16 KiB) up to 2.21, the peer's channels
//     (p2pnChannelsPerPeer, 32 on an NVSwitch node) × 16 KiB from 2.22 through 2.28
//     — 512 KiB a peer, with its LL parts cut from LL's step — and the channels
//     of its parts × 16 KiB from 2.29.
//
// A p2p transfer is then bound by the links it crosses (with contention, as every
// other pattern), by what its channels can copy — one thread block each, which is
// what caps a 4 MiB send/recv between two NVLink GPUs at 80–180 GB/s on links of
// 370 GB/s — or by what its network channels carry (p2pNetUs), and pays the
// protocol's fixed cost once, not a collective's.
//
// Across nodes NCCL serves a rank's peers node by node: its p2p schedule takes the
// peers in groups of the ranks of one node (8 = NCCL_MAX_DEV_WORK_P2P_PER_BATCH,
// NCCL_P2P_SCHEDULE_GROUP_SIZE; init.cc ncclP2pSchedule), every peer of a group on
// the same channels (channel.h ncclP2pChannelBaseForRound: one base per group,
// enqueue.cc ncclAddWorkBatchToPlan: the group's sends and receives batched on
// each of those channels), and one group's channels apart from another's up to the
// p2p channels. Each channel moves about 14 GB/s to or from the network
// (NCCL_P2P_PER_CHANNEL_NET_BW, NCCL 2.29 paths.cc: "at least 1 channel per NIC,
// and more if needed to meet the bw requirement"), whatever the number of peers it
// serves. So a rank's bytes to the other nodes cross at most channels × 14 GB/s:
// with 2 channels per net peer, 28 GB/s, under a 400 Gb/s NIC when the group
// spans 2 nodes (one remote group) — NCCL 2.29 raised the channels per net peer to
// one per 14 GB/s of the GPU's NICs for that reason ("Improves the default number
// of channels per net peer for all-to-all, send, and recv", its release notes).
// PXN, on by default where a node's GPUs are all on NVLink, routes a send to
// another node through the local GPU on the peer's rail; in p2p it only turns off
// the registration of user buffers with the network (enqueue.cc addP2pToPlan,
// pxnUsed: v2.28.9-1 line 856, v2.29.7-1 line 928), not the channels' count.
// On 3 nodes and more a rank's remote groups have channels enough, and its NIC
// bounds it as the links say. RCCL sizes its net channels by the 14 GB/s rule
// (ROCm/rccl src/graph/paths.cc), so AMD GPUs take that rule.

// p2pStepBytes is NCCL's p2p chunk for the placement (init.cc, computeBuffSizes;
// the three NCCL_PARAM defaults at v2.27.7-1, init.cc lines 625–627).
func p2pStepBytes(p *Placement) float64 {
	switch {
	case p.Domains > 1 && p.Cluster.Spec.NICs.PerNode > 0:
		return 128 << 10 // NCCL_P2P_NET_CHUNKSIZE
	case p.Cluster.Spec.Intra.Kind == topology.PCIe:
		return 128 << 10 // NCCL_P2P_PCI_CHUNKSIZE
	}
	return 512 << 10 // NCCL_P2P_NVL_CHUNKSIZE
}

// p2pLLThreshold is NCCL_P2P_LL_THRESHOLD: a peer's bytes per channel up to which LL
// is used (its default, 16384: enqueue.cc at v2.27.7-1, line 783).
const p2pLLThreshold = 16 << 10

// p2pLLStepBytes is LL's step, the buffer NCCL's LL protocol divides into
// NCCL_STEPS slots: DEFAULT_LL_BUFFSIZE (NCCL_LL_LINES_PER_THREAD 8 ×
// NCCL_LL_MAX_NTHREADS 512 × NCCL_STEPS 8 × a 16-byte ncclLLFifoLine, init.cc
// v2.28.7-1 line 697) over NCCL_STEPS: 64 KiB.
const p2pLLStepBytes = 8 * 512 * 16

// llRule is how the library picks LL for one peer's bytes (enqueue.cc,
// addP2pToPlan).
type llRule int

const (
	// llPerPart: LL while the peer's bytes are at most the channels its parts use
	// × NCCL_P2P_LL_THRESHOLD, the parts cut from Simple's step first (NCCL from
	// v2.29.2-1: "Select protocol (LL vs SIMPLE) used based on payload per
	// channel", v2.29.7-1 lines 885–906). RCCL is priced so too, as before
	// (its enqueue.cc not read).
	llPerPart llRule = iota
	// llPerPeer: LL while the peer's bytes are at most the channels a peer may
	// use (nChannelsMax, p2pnChannelsPerPeer) × NCCL_P2P_LL_THRESHOLD, whatever
	// the channels its parts take; the parts are then cut from the chosen
	// protocol's step, LL's 64 KiB (v2.22.3-1 lines 836–848, v2.27.7-1 lines
	// 822–835, v2.28.7-1 lines 821–902: thresholdLL = nChannelsMax ×
	// ncclParamP2pLLThreshold(), then stepSize = buffSizes[protocol] /
	// NCCL_STEPS). On an NVSwitch node or NVL72 rack (32 channels a peer) a
	// peer's bytes up to 512 KiB go by LL. A cluster that states no release
	// takes this rule, as it takes 2.28's channels per net peer.
	llPerPeer
	// llFlat: LL while the peer's bytes are at most NCCL_P2P_LL_THRESHOLD, the
	// channels as llPerPart (v2.21.5-1 line 529: bytes <= ncclParamP2pLLThreshold()).
	llFlat
)

// LibraryRelease says whose rules price a cluster's calls where collective
// library releases differ (p2pLLRule, the channels per net peer, the NVLS
// channels): RCCL's on AMD GPUs, else the NCCL release the cluster states, or,
// when it states none, NCCL 2.27's (LL up to a peer's channels × 16 KiB, two
// channels per net peer, Blackwell's NVLS channels from 2.27), as
// docs/cluster-file.md documents for an empty nccl. A release newer than the
// newest the model knows is priced by that newest one's rules
// (topology.Spec.NCCLRelease), and says so.
func LibraryRelease(spec topology.Spec) string {
	if a := spec.GPU.Arch; a == hardware.CDNA3 || a == hardware.CDNA4 {
		return "RCCL's rules: an AMD GPU (the cluster's nccl is not used)"
	}
	if topology.NewerNCCLWarning("nccl", spec.NCCL) != "" {
		return "NCCL " + topology.NewestNCCL + "'s rules: the cluster's release, " + spec.NCCL + " (nccl), is newer than the newest stepcost models"
	}
	if spec.NCCL != "" {
		return "NCCL " + spec.NCCL + ", the cluster's release (nccl)"
	}
	return "NCCL 2.27's rules: the cluster states no release (nccl)"
}

// ReleaseWarning is the warning of an answer priced on spec when the NCCL
// release it states is newer than the newest the model knows (whose rules
// then price it: LibraryRelease), "" otherwise and on AMD GPUs (RCCL's rules,
// whatever nccl says).
func ReleaseWarning(spec topology.Spec) string {
	if a := spec.GPU.Arch; a == hardware.CDNA3 || a == hardware.CDNA4 {
		return ""
	}
	return topology.NewerNCCLWarning("nccl", spec.NCCL)
}

// p2pLLRule is the LL rule of the placement's library: RCCL's on AMD GPUs, else
// NCCL's by the release the cluster states (none: 2.22–2.28's).
func p2pLLRule(c *topology.Cluster) llRule {
	if a := c.GPU().Arch; a == hardware.CDNA3 || a == hardware.CDNA4 {
		return llPerPart
	}
	major, minor, ok := c.Spec.NCCLRelease()
	switch {
	case !ok:
		return llPerPeer
	case major > 2 || major == 2 && minor >= 29:
		return llPerPart
	case minor >= 22:
		return llPerPeer
	}
	return llFlat
}

// p2pPerChannelNetGBps is NCCL_P2P_PER_CHANNEL_NET_BW (paths.cc, from v2.29.2-1):
// the bandwidth NCCL assumes one channel drives to the network when it sizes a net
// peer's channels. NCCL 2.21-2.28 have no such figure (their channel count does not
// depend on the NIC's speed); the model prices their channels at the same rate,
// which the measurements bracket: 10-11 GB/s per channel on Vultr's two B200 nodes
// (unscored; docs/calibration.md) and 12-18 GB/s over Slingshot on GH200
// (NVIDIA/nccl#1272: 24.2 GB/s on 2 channels against a 25 GB/s NIC, 18.3 on 1).
const p2pPerChannelNetGBps = 14

// maxP2PChannels is the p2p channels NCCL runs at most on 8-GPU NVSwitch nodes:
// p2pnChannels is the ring channels capped by NCCL_MAX_P2P_NCHANNELS (MAXCHANNELS,
// 64) and rounded to a power of two (graph/paths.cc ncclTopoComputeP2pChannels,
// v2.27.7-1 lines 837–866); 32 is what the INIT logs of such nodes print. Which
// log: not recorded (docs/calibration.md, "Constants without a published source").
const maxP2PChannels = 32

func pow2Up(x int) int {
	if x <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(x-1))
}

// p2pChannels is the p2p channels of the communicator (NCCL's p2pnChannels: its
// channel count rounded up to a power of two) and the channels each peer may use
// (p2pnChannelsPerPeer). On NVSwitch and xGMI nodes NCCL runs 24 collective
// channels (twice the model's ring channels: its rings are duplicated) and so 32
// p2p channels, 32 per peer ("24 coll channels, … 32 p2p channels, 32 p2p channels
// per peer" in the INIT logs of A100, H100 and p5 nodes); over PCIe 2 and 2.
func p2pChannels(p *Placement) (total, perPeer int) {
	c := p.Cluster
	total = min(maxP2PChannels, pow2Up(2*ringChannels(p)))
	if c.Spec.Intra.Kind == topology.PCIe {
		total = 2
	}
	switch {
	case p.Domains > 1 && c.Spec.NICs.PerNode > 0:
		perPeer = p2pNetChannelsPerPeer(p, total)
	case c.Spec.Intra.Kind == topology.PCIe:
		perPeer = 2
	default:
		perPeer = total // 2 per NVLink's worth: more than the p2p channels on a switch
	}
	return total, min(perPeer, total)
}

// p2pNetChannelsPerPeer is the channels NCCL gives a peer on another node
// (src/graph/paths.cc: ncclTopoGetNchannels for each peer, the least over the
// peers kept by ncclTopoComputeP2pChannels as p2pnChannelsPerPeer). Unless
// NCCL_NCHANNELS_PER_NET_PEER (2.28: the nChannelsPerNetPeer config) sets it:
//
//   - NCCL 2.21 through 2.28 (paths.cc ncclTopoGetNchannels: v2.21.5-1 lines
//     713-726, v2.27.7-1 lines 817-830, v2.28.9-1 lines 836-849, one code): 2
//     ("start from 2 channels per NIC"), halved while 2 × ranks exceeds 4 × the
//     p2p channels ("avoid overloading channels with 8+ operations"), then at least
//     the GPU's NICs counted until they match its PCIe/C2C bandwidth
//     (getLocalNetCountByBw), rounded up to a power of two. A remote peer gets 2
//     channels on 2-16 nodes of 8 GPUs, whatever the NICs' speed.
//   - NCCL 2.29 (v2.29.2-1 paths.cc lines 823, 844-852 and 896, v2.29.7-1 lines
//     832, 853-861 and 905; release notes: "Improves the default number of channels
//     per net peer for all-to-all, send, and recv"): at least one per NIC and one
//     per NCCL_P2P_PER_CHANNEL_NET_BW (14 GB/s) of the GPU's NICs, rounded up to a
//     power of two, halved while a round's groups of 8 ranks (ceil(ranks / 8) ×
//     channels) would not fit the p2p channels.
//   - RCCL (AMD GPUs) sizes them by the same 14 GB/s rule (ROCm/rccl
//     src/graph/paths.cc).
//
// The spec's NCCL release picks the rule; a cluster that states none takes 2.28's.
func p2pNetChannelsPerPeer(p *Placement, total int) int {
	c := p.Cluster
	nics := max(1, c.Spec.NICs.PerNode/max(1, c.Spec.GPUsPerNode))
	if ncclSizesNetChannelsByBandwidth(c) {
		gbps := c.Spec.NICs.Gbps / 8 * float64(nics)
		perPeer := pow2Up(max(nics, int(math.Ceil(gbps/p2pPerChannelNetGBps))))
		for perPeer*((p.N()+7)/8) > total && perPeer > 1 {
			perPeer /= 2
		}
		return perPeer
	}
	perPeer := 2
	for perPeer*p.N() > 4*total && perPeer > 1 {
		perPeer /= 2
	}
	return pow2Up(max(nics, perPeer))
}

// ncclSizesNetChannelsByBandwidth says whether the cluster's library sizes a
// network peer's p2p channels by its NICs' bandwidth: RCCL on AMD GPUs, and NCCL
// from 2.29 on.
func ncclSizesNetChannelsByBandwidth(c *topology.Cluster) bool {
	if a := c.GPU().Arch; a == hardware.CDNA3 || a == hardware.CDNA4 {
		return true
	}
	major, minor, ok := c.Spec.NCCLRelease()
	return ok && (major > 2 || major == 2 && minor >= 29)
}

// p2pRemote is the bytes a rank sends to other nodes in one grouped p2p call and
// the channels that carry them. NCCL serves the peers of a node in groups of
// NCCL_MAX_DEV_WORK_P2P_PER_BATCH (8) ranks, or of their greatest common divisor
// with the ranks on every node (init.cc ncclP2pSchedule), each group on nch
// channels of its own, at most the p2p channels. A rank on the emptiest node has
// the most remote peers; a send/recv ring's rank at a node's end sends its whole
// buffer to the next node.
func p2pRemote(p *Placement, op Op, perPeer float64, nch int) (bytes float64, channels int) {
	if p.Domains < 2 || p.Cluster.Spec.NICs.PerNode == 0 {
		return 0, 0
	}
	total, _ := p2pChannels(p)
	if op == SendRecv {
		return perPeer, min(total, nch)
	}
	least, group := p.PerDomain, gcd(8, p.PerDomain)
	if !p.Uniform {
		node := p.Shape.Node
		for i := 0; i < len(node); {
			j := i
			for j < len(node) && node[j] == node[i] {
				j++
			}
			least, group = min(least, j-i), gcd(group, j-i)
			i = j
		}
	}
	remote := p.N() - least
	groups := (remote + group - 1) / group
	return perPeer * float64(remote), min(total, groups*nch)
}

// p2pNetUs is how long the network channels of a grouped p2p call take to carry a
// rank's bytes to the other nodes, at NCCL_P2P_PER_CHANNEL_NET_BW each (LL at its
// bandwidth factor of it).
func (m *Model) p2pNetUs(p *Placement, op Op, perPeer float64, nch int, pr Protocol) float64 {
	bytes, channels := p2pRemote(p, op, perPeer, nch)
	if channels == 0 || !(bytes > 0) {
		return 0
	}
	return bytes / (float64(channels) * p2pPerChannelNetGBps * m.k.BWFactor[pr] * 1e3)
}

// pairwiseNetUs is the least the n − 1 exchange steps of a pairwise all-to-all take
// to carry their bytes across nodes: each step is a send/recv to one peer on that
// peer's net channels (p2pNetUs), and on a group spanning nodes every step has a
// rank whose peer is on another node (a node's ranks are one run of the ring order,
// which no shift by 1 … n − 1 maps onto itself). It is a floor on the call's
// transfer time, so that the pairwise exchange does not escape the channels that
// bound a direct one.
func (m *Model) pairwiseNetUs(p *Placement, perPeer float64, pr Protocol) float64 {
	if p.Domains < 2 {
		return 0
	}
	nch, _ := p2pPlan(p, perPeer)
	return float64(p.N()-1) * m.p2pNetUs(p, SendRecv, perPeer, nch, pr)
}

// p2pPlan is NCCL's split of one peer's b bytes: the channels it uses and the
// protocol (addP2pToPlan).
func p2pPlan(p *Placement, b float64) (nch int, pr Protocol) {
	return p2pPlanCapped(p, b, 0)
}

// p2pPlanCapped is p2pPlan on a communicator whose maxCTAs is maxCTAs (0: NCCL's
// default): its p2p channels, and so the channels per peer, are at most maxCTAs
// (init.cc: nChannels and p2pnChannels bounded by comm->config.maxCTAs).
func p2pPlanCapped(p *Placement, b float64, maxCTAs int) (nch int, pr Protocol) {
	total, perPeer := p2pChannels(p)
	if maxCTAs > 0 {
		total = min(total, maxCTAs)
		perPeer = min(perPeer, total)
	}
	minCh := perPeer
	for minCh*p.N() > total && minCh > 1 {
		minCh /= 2
	}
	simpleOnly := p.Domains > 1 && p.Cluster.Spec.NICs.SimpleProtocolOnly
	rule := p2pLLRule(p.Cluster)
	if rule == llPerPeer && b <= float64(perPeer)*p2pLLThreshold && !simpleOnly {
		return p2pParts(p, b, p2pLLStepBytes, minCh, perPeer), LL
	}
	nch = p2pParts(p, b, p2pStepBytes(p), minCh, perPeer)
	pr = Simple
	switch {
	case simpleOnly || rule == llPerPeer:
	case rule == llFlat && b <= p2pLLThreshold, rule == llPerPart && b <= float64(nch)*p2pLLThreshold:
		pr = LL
	}
	return nch, pr
}

// p2pParts is the channels NCCL splits a peer's b bytes over (addP2pToPlan): one
// part per step/8 (one node) or step/2 (nodes) up to minCh, doubled while a part
// exceeds 32 steps (one node) or one step (nodes), up to perPeer.
func p2pParts(p *Placement, b, step float64, minCh, perPeer int) int {
	minPart, maxPart := step/8, step*32
	if p.Domains > 1 && p.Cluster.Spec.NICs.PerNode > 0 {
		minPart, maxPart = step/2, step
	}
	nch := max(1, min(minCh, int(math.Ceil(b/minPart))))
	part := max(minPart, b/float64(nch))
	for part > maxPart && nch <= perPeer/2 {
		nch *= 2
		part = b / float64(nch)
	}
	return nch
}

// p2pShape is what one grouped p2p call moves: bytes per peer, peers per rank, and
// the pattern coefficient of its flows.
func (p *Placement) p2pShape(op Op, S float64) (perPeer float64, peers int, co coef) {
	if op == SendRecv {
		p.ensure(famNeighbor)
		return S, 1, p.coef.neighbor
	}
	p.ensure(famDirect)
	return S / float64(p.N()), p.N() - 1, p.coef.allPairs
}

// p2pCost is the time of one grouped p2p call moving perPeer bytes to each of peers
// peers over a pattern whose most loaded link takes linkUs (µs, contention included,
// at the protocol's bandwidth factor) with path latency lat and network crossing net.
// It returns the latency and transfer parts.
func (m *Model) p2pCost(p *Placement, op Op, perPeer float64, peers, nch int, pr Protocol, linkUs, lat, net float64, launch Launch) (latUs, xferUs float64) {
	latUs = m.fixedUs(p, SendRecv, Direct, pr, launch) + lat + net*m.k.NetStepUs[pr]
	return latUs, max(linkUs, m.p2pChannelUs(p, op, perPeer, peers, nch, pr))
}

// p2pChannelUs is how long the call's channels take to move its bytes: to copy
// them, peers × nch channels at most the p2p channels, each at the generation's
// per-channel rate (LL at its bandwidth factor of it; a generation NCCL gives no
// figure for, AMD's under RCCL, takes Hopper's), and to carry the bytes bound for
// other nodes over the network channels (p2pNetUs), whichever is longer.
func (m *Model) p2pChannelUs(p *Placement, op Op, perPeer float64, peers, nch int, pr Protocol) float64 {
	return max(m.p2pCopyUs(p, perPeer, peers, nch, pr), m.p2pNetUs(p, op, perPeer, nch, pr))
}

// p2pCopyUs is how long the call's channels take to copy its bytes. On NVIDIA GPUs
// an LL channel moves at most what its receiving warps read (p2pLLChannelGBps).
func (m *Model) p2pCopyUs(p *Placement, perPeer float64, peers, nch int, pr Protocol) float64 {
	total, _ := p2pChannels(p)
	active := min(total, peers*nch)
	arch := p.Cluster.GPU().Arch
	rate, ok := m.k.P2PChannelGBps[arch]
	if !ok {
		rate = m.k.P2PChannelGBps[hardware.Hopper]
	}
	rate *= m.k.BWFactor[pr]
	if pr == LL {
		if ll, ok := p2pLLChannelGBps(arch, p2pWorksPerChannel(peers, nch, total)); ok {
			rate = min(rate, ll)
		}
	}
	if !(rate > 0) {
		return 0
	}
	return perPeer * float64(peers) / (float64(active) * rate * 1e3)
}

// NCCL's p2p kernel (src/device/sendrecv.h at v2.28.7-1, RunWorkBatch<ncclFuncSendRecv>)
// runs a channel's batch of works on one block of NCCL_MAX_NTHREADS (640) threads, 20
// warps (enqueue.cc scheduleP2pTasksToPlan: threadPerBlock = NCCL_MAX_NTHREADS). The
// warps are shared out evenly among the batch's works (nWarpPerWork = nWarps / nWorks)
// and each work's are split between its receive and its send: nRecvWarpPerWork =
// nWarpPerWork/2 up to 4 warps, (nWarpPerWork − 1)/2 above, the send one more. A batch
// holds at most NCCL_MAX_DEV_WORK_P2P_PER_BATCH (8) works, all of one epoch of 8
// rounds (enqueue.cc addWorkBatchToPlan), each round's parts on channels of its own
// base (channel.h ncclP2pChannelBaseForRound: the round, bit-reversed, on one node).
const (
	p2pKernelWarps      = 640 / 32 // NCCL_MAX_NTHREADS / WARP_SIZE (device.h)
	p2pWorksPerBatch    = 8        // NCCL_MAX_DEV_WORK_P2P_PER_BATCH (device.h)
	llCollectiveWarps   = 512 / 32 // NCCL_LL_MAX_NTHREADS / WARP_SIZE (device.h): an LL collective's block
	collChannelsPerRing = 2        // NCCL's collective channels: its ring graphs' channels duplicated ("24 coll channels" on A100/H100 NVSwitch nodes)
)

// p2pWorksPerChannel is how many p2p works one channel runs at once: an epoch's rounds
// (at most 8; a send/recv is one round, an all-to-all one round a peer and one for the
// rank itself) times the channels of each, spread over the p2p channels.
func p2pWorksPerChannel(peers, nch, total int) int {
	rounds := min(p2pWorksPerBatch, peers+1)
	if peers == 1 {
		rounds = 1
	}
	w := (rounds*nch + total - 1) / max(1, total)
	return max(1, min(p2pWorksPerBatch, w))
}

// p2pLLRecvWarps is the warps that receive one work's bytes when w works share a
// channel (sendrecv.h: nWarpPerWork, nRecvWarpPerWork).
func p2pLLRecvWarps(w int) int {
	per := p2pKernelWarps / max(1, w)
	if per <= 4 {
		return per / 2
	}
	return (per - 1) / 2
}

// p2pLLChannelGBps is what one channel of NCCL's p2p kernel moves by LL when w works
// share it. LL moves one 8-byte element a thread a trip — one 16-byte line of data and
// flag, one load then one store or one flag-polled read (prims_ll.h LLGenericOp) — so
// a warp moves a fixed rate whatever it serves; a work moves at its receiving warps'
// (the fewer: the send has one more). The rate of a warp is NCCL's own ceiling on LL
// over one node, llMaxBws (tuning.cc v2.28.7-1: Ampere 87.7, Hopper 141.0, Blackwell
// 2 × 141.0 GB/s of bus bandwidth for a ring LL collective), over the blocks that
// collective runs on — its collective channels (twice the ring graph's, searchChannels)
// of NCCL_LL_MAX_NTHREADS (16 warps) each: Hopper 0.367, Blackwell 0.551 GB/s a warp,
// so a channel of one work (9 receiving warps) 3.3 and 5.0 GB/s where Simple's
// per-channel ceiling at LL's half had priced 19.4 and 35. Nothing is fitted. RCCL's
// kernel (AMD GPUs) is not this one: ok is false there.
func p2pLLChannelGBps(a hardware.Arch, w int) (gbps float64, ok bool) {
	llMax, ok := ncclLLMaxBw1[a]
	if !ok {
		return 0, false
	}
	perWarp := llMax / float64(collChannelsPerRing*searchChannels(a)*llCollectiveWarps)
	return float64(w*p2pLLRecvWarps(w)) * perWarp, true
}

// p2p prices send/recv and all-to-all as NCCL's grouped sends and receives.
func (m *Model) p2p(p *Placement, op Op, S float64, launch Launch) Estimate {
	return m.p2pCapped(p, op, S, launch, 0)
}

// p2pCapped is p2p on a communicator of at most maxCTAs channels (0: NCCL's
// default). Only send/recv is capped here: its one peer's channels are all the call
// runs, so the capped split bounds both its copy and its network channels.
func (m *Model) p2pCapped(p *Placement, op Op, S float64, launch Launch, maxCTAs int) Estimate {
	perPeer, peers, co := p.p2pShape(op, S)
	nch, pr := p2pPlanCapped(p, perPeer, maxCTAs)
	linkUs := perPeer * co.m / m.k.BWFactor[pr]
	lat, xfer := m.p2pCost(p, op, perPeer, peers, nch, pr, linkUs, co.lat, co.net, launch)
	e := Estimate{Op: op, Algo: Direct, Protocol: pr, Bytes: S, Steps: 1, Channels: nch,
		TimeUs: lat + xfer, LatencyUs: lat}
	if e.TimeUs > 0 {
		e.AlgBWGBps = S / e.TimeUs / 1e3
		e.BusBWGBps = e.AlgBWGBps * op.BusFactor(p.N())
	}
	return e
}

// isP2P says whether algorithm a runs op as NCCL's grouped point-to-point calls.
func isP2P(op Op, a Algorithm) bool {
	return a == Direct && (op == SendRecv || op == AllToAll)
}
