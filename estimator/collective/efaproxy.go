package collective

import (
	"math"

	"github.com/stepcost/stepcost/estimator/topology"
)

// efaProxyOpUs is what one network operation costs the CPU on EFA: NCCL's proxy
// thread of a GPU posts every network send and receive of the GPU's channels and
// polls their completions, one after the other (NCCL src/proxy.cc; the net
// transport's sendProxyProgress and recvProxyProgress, transport/net.cc), and
// through the OFI plugin each is a libfabric call into the EFA provider
// (fi_tsend/fi_trecv, or fi_writedata under the plugin's RDMA protocol) and the
// completion queue reads that retire it. The figure is libfabric's own
// single-endpoint tagged-message benchmark on EFA, not a fit: fi_rdm_tagged_bw
// between two c5n.18xlarge moved 64 B to 4 KiB messages at 1.50–1.78 µs a
// transfer, 0.56–0.67 million a second from one thread (ofiwg/libfabric#5694,
// 2020-03); its 64 B row, where the wire takes no time, is the cost of an
// operation.
const efaProxyOpUs = 1.5

// efaHopOps are the operations of one message across the network, its send and
// its receive: what a network hop's latency (topology's EFA hop, fitted on calls
// that run one channel) already holds.
const efaHopOps = 2

// NCCL's data per network operation of a ring step, by protocol: Simple's is a
// slice, NCCL_BUFFSIZE (4 MiB) ÷ NCCL_STEPS (8) × SLICESTEPS (2); LL's a step of
// its 512 KiB buffer, half of which is flags; LL128's a step of its ~4.7 MiB
// buffer, 120 of each 128 bytes data (NCCL src/include/device.h).
var efaProxyOpBytes = [numProtos]float64{Simple: 1 << 20, LL128: 600 << 10 * 15 / 16, LL: 32 << 10}

// efaProxy returns, for a call of algorithm a over EFA, how many network
// operations the busiest GPU's proxy thread posts in the pipeline's first loop
// (every channel's first chunk, or a ring's first step) and in the whole call;
// (0, 0) where the call does not leave the node or the network is not EFA
// (InfiniBand's and RoCE's verbs post a work request in a fraction of that, and
// the same NVLS tree on two InfiniBand H100 nodes, nccl-tests#309, shows no such
// cost). A connection carries one operation per chunk (trees, the NVLS tree) or
// per slice of a step (rings), sent on one side and received on the other; a
// node's network connections are spread over its GPUs, except the NVLS tree's,
// whose every GPU is a network head of every channel.
func efaProxy(p *Placement, op Op, a Algorithm, pr Protocol, S float64, channels, chunks int) (first, total float64) {
	if p.Domains < 2 || p.Cluster.Spec.NICs.Kind != topology.EFA {
		return 0, 0
	}
	pd := float64(p.PerDomain)
	ch := float64(channels)
	switch a {
	case NVLSTree:
		// A send and a receive a chunk and tree level, on NCCL's own chunk
		// (ncclNVLSTreeChunk), not the model's pipelining unit.
		ops := channels * p.PerDomain
		chunk := ncclNVLSTreeChunk(S, ops, p.Domains)
		loops := math.Max(1, math.Ceil(S/(float64(ops)*chunk)))
		first = ch * 2 * math.Ceil(math.Log2(float64(p.Domains)))
		return first, first * loops
	case Tree, DoubleTree:
		trees := 1.0
		if a == DoubleTree {
			trees = 2
		}
		// A node's tree holds its parent and at most two children per channel and
		// tree (one edge in all on two nodes); a chunk goes up and comes down each.
		// One channel runs one of the two trees.
		ch = ncclCallChannels(a, pr, S, channels, p.N())
		if ch < 2 {
			trees = 1
		}
		edges := math.Min(float64(p.Domains-1), 3)
		first = math.Max(1, ch*trees/pd) * 2 * edges
		return first, first * float64(max(1, chunks))
	case Ring:
		var steps float64
		switch op {
		case AllReduce:
			steps = float64(2 * (p.N() - 1))
		case AllGather, ReduceScatter:
			steps = float64(p.N() - 1)
		default:
			return 0, 0
		}
		// Each channel's ring enters and leaves a node once: a send and a receive
		// a step, in slices of the protocol's operation size.
		ch = ncclCallChannels(a, pr, S, channels, p.N())
		slices := math.Max(1, math.Ceil(S/(float64(p.N())*ch)/efaProxyOpBytes[pr]))
		first = math.Max(1, ch/pd) * 2
		return first, first * steps * slices
	}
	return 0, 0
}

// ncclCallChannels is how many of its channels NCCL runs a ring or tree call of S
// bytes on (enqueue.cc, topoGetAlgoInfo, v2.19 to v2.29): one fewer while S is
// below channels × threads × the protocol's thread threshold (comm.h: LL and
// LL128 8 B, Simple 64 B a thread; ring LL's × the ranks, tuning.cc), the threads
// being the protocol's most (device.h: LL and Simple 512, LL128 640).
func ncclCallChannels(a Algorithm, pr Protocol, S float64, channels, ranks int) float64 {
	nt, thr := 512.0, 64.0
	switch pr {
	case LL:
		thr = 8
		if a == Ring {
			thr *= float64(ranks)
		}
	case LL128:
		nt, thr = 640, 8
	}
	return math.Max(1, math.Min(float64(channels), math.Floor(S/(nt*thr))))
}

// efaProxyUs is what the proxy's operations add to a call on EFA priced at timeUs
// (fixedUs of it its fixed cost): the last channel's first chunk leaves only once
// the proxy has served every channel before it, a stage of the pipeline's fill (the
// one message's send and receive a network hop's latency holds, fitted on calls
// that run one channel, are not counted twice); and the call cannot end before the
// proxy has served all its operations, a bound hidden under the transfer once each
// operation carries enough bytes. The closed form (Model.price) and the schedule
// (PriceSchedule) both add it.
func efaProxyUs(p *Placement, op Op, a Algorithm, pr Protocol, S float64, channels, chunks int, fixedUs, timeUs float64) float64 {
	first, total := efaProxy(p, op, a, pr, S, channels, chunks)
	if total <= 0 {
		return 0
	}
	fill := max(0, first-efaHopOps) * efaProxyOpUs
	return fill + max(0, fixedUs+total*efaProxyOpUs-(timeUs+fill))
}
