package collective

import "github.com/stepcost/stepcost/estimator/hardware"

// NCCL's per-call channel and thread cut. A communicator sets up its channels once
// (ringChannels), but each ring or tree call runs on as many of them, and with as
// many threads per channel, as its size warrants: NCCL (src/enqueue.cc,
// getChannnelThreadInfo in v2.21.5-1, topoGetAlgoInfo in v2.27.7-1 and v2.29.2-1,
// the same loops since 2.18) takes one channel off while the call's bytes are below
// channels × threads × the protocol's per-thread threshold, down to one channel,
// then halves the threads (while a multiple of 128) under the same test. nBytes is
// the whole buffer (ncclFuncMaxSendRecvCount: ranks × count for all-gather and
// reduce-scatter), the size the model prices.
const (
	// Per-thread thresholds, bytes (src/include/comm.h NCCL_LL_THREAD_THRESHOLD,
	// NCCL_LL128_THREAD_THRESHOLD, NCCL_SIMPLE_THREAD_THRESHOLD); tuning.cc
	// multiplies the ring's LL threshold by the ranks. NCCL's INIT log on 16 ranks
	// prints them as "threadThresholds 8/8/64 | 128/8/64" (tree | ring; nccl#527).
	llThreadThreshold     = 8
	ll128ThreadThreshold  = 8
	simpleThreadThreshold = 64
	// Threads per channel before the cut (tuning.cc ncclTopoTuneModel:
	// NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS 640,
	// NCCL_SIMPLE_MAX_NTHREADS 512; a ring with Simple gets 256 only when one ring's
	// intra-node bandwidth × the channels is at most PCI_BW, 12 GB/s — a PCIe Gen3
	// node without NVLink, which no cluster kind here is).
	llMaxThreads     = 512
	ll128MaxThreads  = 640
	simpleMaxThreads = 512
)

// callChannels is the channels and threads per channel NCCL gives one call of
// `bytes` with algorithm a and protocol pr on a communicator of `ranks` ranks set
// up with nChannels channels. Only rings and trees are cut; every other algorithm
// keeps nChannels (NVLS and CollNet have their own rules, the p2p kernel and the
// model's direct, PAT and pairwise forms their own channel counts). The threads are
// those the cut leaves, before NCCL adds Simple's synchronisation warps; the model
// prices the channels (which links and NICs a call's rings and trees reach, and
// the bytes per channel), not the threads, which are only cut once a call is on
// one channel, where its latency dominates.
func callChannels(nChannels, ranks int, a Algorithm, pr Protocol, bytes float64) (nc, nt int) {
	nc = nChannels
	if a != Ring && a != Tree && a != DoubleTree {
		return nc, 0
	}
	var thr int
	switch pr {
	case LL:
		nt, thr = llMaxThreads, llThreadThreshold
		if a == Ring {
			thr *= ranks
		}
	case LL128:
		nt, thr = ll128MaxThreads, ll128ThreadThreshold
	default:
		nt, thr = simpleMaxThreads, simpleThreadThreshold
	}
	for nc >= 2 && bytes < float64(nc*nt*thr) {
		nc--
	}
	for nt%128 == 0 && bytes < float64(nc*nt*thr) {
		nt /= 2
	}
	return nc, nt
}

// cutsChannels says whether NCCL's channel cut applies on the placement's GPUs:
// NVIDIA's NCCL. RCCL (AMD) is priced with its communicator's channels at every
// size, as before.
func cutsChannels(p *Placement) bool {
	switch p.Cluster.GPU().Arch {
	case hardware.CDNA3, hardware.CDNA4:
		return false
	}
	return true
}

// forCall returns the placement to price a call of `bytes` with a and pr on: p
// itself when NCCL runs the call on all of p's channels, otherwise the same group
// with the channels NCCL keeps (callChannels), its coefficients computed on first
// use and kept with p.
func (p *Placement) forCall(a Algorithm, pr Protocol, bytes float64) *Placement {
	if !cutsChannels(p) {
		return p
	}
	nc, _ := callChannels(p.coef.channels, p.N(), a, pr, bytes)
	if nc == p.coef.channels {
		return p
	}
	p.byChMu.Lock()
	defer p.byChMu.Unlock()
	if q := p.byChannels[nc]; q != nil {
		return q
	}
	q := &Placement{
		Cluster: p.Cluster, Ranks: p.Ranks, Siblings: p.Siblings, Concurrent: p.Concurrent,
		Shape: p.Shape, Domains: p.Domains, PerDomain: p.PerDomain, Uniform: p.Uniform,
		DomainGPUs: p.DomainGPUs, loaded: p.loaded, railImages: p.railImages, rep: p.rep,
		imageOf: p.imageOf,
	}
	q.coef.channels = nc
	if p.byChannels == nil {
		p.byChannels = make(map[int]*Placement)
	}
	p.byChannels[nc] = q
	return q
}
