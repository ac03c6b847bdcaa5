package collective

import (
	"fmt"
	"strings"

	"github.com/stepcost/stepcost/estimator/hardware"
)

// Launch is how the ranks' collectives are issued, which sets the fixed cost of a
// call: one kernel launch per process, or one per GPU in turn where one process
// drives them all (docs/collective.md, "The cost of a step", per call;
// docs/calibration.md on the single-process launch, "a single-process call now
// costs its per-GPU launch times the node's GPUs").
type Launch uint8

const (
	// PerProcess: one process per GPU issuing NCCL calls (MPI-launched nccl-tests,
	// torchrun-launched training). The default.
	PerProcess Launch = iota
	// SingleProcess: one thread launching the kernel on every GPU in turn
	// (nccl-tests -g N); the launch cost grows with the GPUs per process.
	SingleProcess
	// Eager: one process per GPU through PyTorch eager mode (torch.distributed),
	// which adds Python and dispatcher overhead per call.
	Eager
	// Graph: calls captured in a CUDA graph and replayed (nccl-tests -G, training
	// loops under CUDA graphs): the host launch cost is paid once per graph.
	Graph
	numLaunch
)

var launchNames = [numLaunch]string{"per-process", "single-process", "eager", "graph"}

func (l Launch) String() string {
	if l < numLaunch {
		return launchNames[l]
	}
	return fmt.Sprintf("launch(%d)", uint8(l))
}

// ParseLaunch accepts the names above.
func ParseLaunch(s string) (Launch, error) {
	k := normalise(s)
	for i, n := range launchNames {
		if k == normalise(n) {
			return Launch(i), nil
		}
	}
	switch k {
	case "", "mpi", "process":
		return PerProcess, nil
	case "torch":
		return Eager, nil
	case "cudagraph":
		return Graph, nil
	}
	return 0, fmt.Errorf("unknown launch mode %q (want one of %s)", s, strings.Join(launchNames[:], ", "))
}

// Constants are the fitted parameters of the collective model that are not link
// properties (those live in topology.Defaults). Each is a property of the
// communication library's protocols or of how calls are launched, fitted once to
// the nccl-tests data in testdata/ (docs/calibration.md shows the fit and its
// residuals), never per system.
type Constants struct {
	// StepUs is the software cost of one algorithm step per protocol (flag polling,
	// fences, proxy hand-off), added to the hardware path latency of the step.
	// NCCL's own per-hop figures (tuning.cc hwLat, NVLink ring) are 0.6 / 1.9 / 3.4 µs
	// for LL / LL128 / Simple including the hardware.
	StepUs [numProtos]float64
	// BaseUs is the fixed cost of a collective per protocol (NCCL baseLat ring:
	// 6.6 / 14 / 8.4 µs for LL / LL128 / Simple).
	BaseUs [numProtos]float64
	// NetStepUs is what a step whose transfers leave the node costs a protocol on
	// top of the network hop's latency (topology.NetHopLatencyUs, EFAHopLatencyUs).
	// The hop is defined as what a Simple step pays, so Simple's entry is 0 by
	// definition and not fitted: every measurement sees a hop and a protocol's
	// network step cost only as their sum (TestNetworkHopGauge), and fitting both
	// slid them along it until Simple's sat at its bound of 0. LL and LL128 keep
	// the difference of their network steps from Simple's, which may be negative
	// (NCCL's own network hop figures, tuning.cc hwLatencies NET ring, are LL 2.7,
	// LL128 4.0, Simple 14 µs).
	NetStepUs [numProtos]float64
	// P2PChannelGBps is what one p2p channel — one thread block copying through the
	// peer's FIFO with Simple — moves, GB/s, by GPU generation: NCCL's own per-channel
	// Simple ceiling on one node (tuning.cc perChMaxTreeBws, N1: Ampere 24.0, Hopper
	// 38.7, Blackwell 70.0). LL moves half as much (its BWFactor). A p2p transfer is
	// bound by its links or by its channels × this, whichever is slower.
	P2PChannelGBps map[hardware.Arch]float64
	// P2PBaseUs is the fixed cost of NCCL's p2p kernel (send/recv, all-to-all, the
	// pairwise exchange's steps) beyond the launch: the kernel starting its p2p
	// channels, one flag handshake with each peer's and its return. NCCL's tuning
	// gives p2p no figure (it prices collectives only), so this one is fitted on the
	// published send/recv and all-to-all sweeps of 64 KiB and less, where it is most
	// of a call, after every other constant (accuracy.Fit).
	P2PBaseUs float64
	// BWFactor is the fraction of link bandwidth a protocol delivers: LL sends 8 bytes
	// of data per 16-byte line (0.5), LL128 120 of 128 bytes (NCCL applies 0.92).
	BWFactor [numProtos]float64
	// ChunkBytes is the pipelining unit of trees and chains per channel.
	ChunkBytes float64
	// NVLSChunkBytes is the pipelining unit of NVLS per channel: the switch reduce of
	// one piece overlaps the multicast of the previous one (NCCL_NVLS_CHUNKSIZE,
	// 128 KiB by default in NCCL).
	NVLSChunkBytes float64
	// MaxChunks bounds the pipeline depth the model (and a schedule) uses.
	MaxChunks int
	// NVLSEfficiency is the fraction of port bandwidth the NVSwitch delivers for
	// in-switch reduction and multicast (NCCL nvlsEfficiency: Hopper 0.85,
	// Blackwell 0.74; fitted here to 8×H100/H200 and 8×B200 measurements).
	NVLSEfficiency map[hardware.Arch]float64
	// NVLSStepUs is the cost of one NVLS step (multimem synchronisation across the
	// switch); NCCL models the whole call at 25 µs on NVLink.
	NVLSStepUs float64
	// NVLSBaseUs is the fixed cost of an NVLS call (multicast object barrier); NCCL
	// charges NVLS 25 µs on NVLink and no ring base latency.
	NVLSBaseUs float64
	// LaunchUs is the fixed cost of issuing one collective, by launch mode; for
	// SingleProcess it is per GPU driven by the process, on every host alike (an A100
	// host factor once fitted on top was not identified by the rows: every fold that
	// did not need it left it on its bound; docs/calibration.md, "The NVLS tree's fill
	// below its ceiling").
	LaunchUs [numLaunch]float64
}

// Default returns the fitted constants. The returned value is a fresh copy. Each
// value, its fit and NCCL's own figure beside it are in docs/calibration.md, "The
// fitted constants"; BWFactor and P2PChannelGBps are NCCL's (tuning.cc), not
// fitted, MaxChunks an implementation bound and LaunchUs[Graph] 0 by definition.
func Default() Constants {
	return Constants{
		StepUs:    [numProtos]float64{Simple: 4.72, LL128: 2.827, LL: 0.238},
		BaseUs:    [numProtos]float64{Simple: 28.41, LL128: 0.997, LL: 2.89},
		NetStepUs: [numProtos]float64{Simple: 0, LL128: 1.091, LL: 5.559},
		P2PChannelGBps: map[hardware.Arch]float64{
			hardware.Ampere:    24.0,
			hardware.Hopper:    38.7,
			hardware.Blackwell: 70.0,
		},
		P2PBaseUs:      3.293,
		BWFactor:       [numProtos]float64{Simple: 1.0, LL128: 0.92, LL: 0.5},
		ChunkBytes:     493 * 1024,
		NVLSChunkBytes: 126 * 1024,
		MaxChunks:      4096,
		NVLSEfficiency: map[hardware.Arch]float64{
			hardware.Hopper:    0.85,
			hardware.Blackwell: 0.79,
		},
		NVLSStepUs: 2.284,
		NVLSBaseUs: 12.4,
		LaunchUs:   [numLaunch]float64{PerProcess: 7.014, SingleProcess: 1.5, Eager: 27.5, Graph: 0},
	}
}
