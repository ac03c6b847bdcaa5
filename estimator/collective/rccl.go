package collective

import "github.com/stepcost/stepcost/estimator/hardware"

// RCCL, the library AMD GPUs run, is NCCL's code with AMD's kernels, launch path
// and tuning tables. Its point-to-point calls are planned as NCCL's are (p2p.go):
// an all-to-all is a send and a receive to every rank (RCCL 2.21.5 collectives.cc
// ncclAllToAll groups them itself; the later RCCL, ROCm/rocm-systems
// projects/rccl/src/collectives.cc at 005e1bb, enqueues ncclFuncAlltoAll, which
// enqueue.cc's taskAppend lowers to p2pTaskAppend per peer as NCCL's does; its
// pivot all-to-all is off by default, RCCL_ALL_TO_ALL_PIVOT_ENABLE = 0, and needs
// ≥ 744 KiB per peer), on the same p2p channels, chunk and LL threshold.
// What differs is what a call costs whatever its size. RCCL's tuner charges every
// call a base latency of 12.0 µs with LL and LL128 and 17.0 µs with Simple, where
// NCCL's charges 6.6, 14.0 and 8.4 µs (ring; tuning.cc baseLat: ROCm/rccl 2.21.5,
// develop at 0cbce2a, lines 57–60; the same in the later RCCL of ROCm/rocm-systems,
// projects/rccl/src/graph/tuning.cc at 03a8914, which carries PAT's entries;
// NVIDIA/nccl v2.27.7-1 lines 134–137). In both libraries that figure is the whole fixed
// cost of a call, its launch included: the same call costs RCCL 12.0 / 6.6 = 1.82
// times NCCL's with LL and 17.0 / 8.4 = 2.02 times with Simple.
//
// The model's fixed cost of a p2p call on NVIDIA GPUs — the launch in the call's
// launch mode plus the p2p kernel's base, calibrated on NCCL's sweeps — is
// therefore scaled by that ratio on AMD GPUs, the launch included as RCCL's figure
// includes it. The one ratio prices a single process driving 8 MI355X (eight
// launches in turn, rccl-tests -g 8) and a process per GPU across two nodes alike,
// within 15 % of both sweeps from 256 B to 64 KiB (docs/calibration.md, "RCCL's
// small-message point-to-point"). Nothing is fitted. RCCL's tuner puts 5 µs
// (17.0 − 12.0) between LL and Simple; the one-node MI355X sweep steps by 5.9 µs
// where the model switches protocol (31.6 µs at 128 KiB, 37.5 µs at 256 KiB), and
// the model by 3.1 µs (the ratios 2.02 and 1.82 on the same NCCL fixed cost).
//
// Framework dispatch (Eager) is the framework's and not scaled: only the library's
// own launch within it (PerProcess) is. A graph replay launches nothing.

// rcclBaseLatUs is RCCL's base latency per protocol (tuning.cc baseLat, ring).
var rcclBaseLatUs = [numProtos]float64{Simple: 17.0, LL128: 12.0, LL: 12.0}

// ncclBaseLatUs is NCCL's base latency per protocol (tuning.cc baseLat, ring;
// NVIDIA/nccl v2.27.7-1).
var ncclBaseLatUs = [numProtos]float64{Simple: 8.4, LL128: 14.0, LL: 6.6}

// runsRCCL says whether the placement's GPUs run RCCL: AMD's Instinct GPUs.
func runsRCCL(p *Placement) bool {
	a := p.Cluster.GPU().Arch
	return a == hardware.CDNA3 || a == hardware.CDNA4
}

// rcclP2PExtraUs is what RCCL's fixed costs add to a call of protocol pr that runs
// the p2p kernel (send/recv, all-to-all, and the pairwise exchange's steps) over
// NCCL's: the call's library fixed cost (its launch, without a framework's
// dispatch, and the p2p kernel's base) times RCCL's base latency over NCCL's, less
// that cost. 0 where the GPUs run NCCL.
func (m *Model) rcclP2PExtraUs(p *Placement, op Op, a Algorithm, pr Protocol, launch Launch) float64 {
	if !runsRCCL(p) || !(a == Pairwise || isP2P(op, a)) {
		return 0
	}
	lib := launch
	if launch == Eager {
		lib = PerProcess // the library's own launch inside the framework's call
	}
	fixed := m.launchUs(p, lib) + m.baseUs(op, a, pr)
	return fixed * (rcclBaseLatUs[pr]/ncclBaseLatUs[pr] - 1)
}
