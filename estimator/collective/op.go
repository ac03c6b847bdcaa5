// Package collective prices collective communication (all-reduce, all-gather, …) on a
// placed group of GPUs of a cluster. Every algorithm exists at two levels that must
// agree: an explicit schedule of per-step transfers, which an executor runs on real
// vectors to prove it correct and which can be priced link by link with contention,
// and a closed form used on the hot path.
package collective

import (
	"fmt"
	"strings"
)

// Op is a collective operation.
type Op uint8

const (
	AllReduce Op = iota
	AllGather
	ReduceScatter
	AllToAll
	Broadcast
	Reduce
	SendRecv
	numOps
)

var opNames = [numOps]string{"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce", "sendrecv"}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Ops lists every operation.
func Ops() []Op {
	return []Op{AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, SendRecv}
}

// ParseOp accepts the names above, with or without '-' or '_' ("all-reduce", "all_gather").
func ParseOp(s string) (Op, error) {
	k := normalise(s)
	for i, n := range opNames {
		if k == n {
			return Op(i), nil
		}
	}
	return 0, fmt.Errorf("unknown collective %q (want one of %s)", s, strings.Join(opNames[:], ", "))
}

// Reduction is what an all-reduce, reduce or reduce-scatter reduces with — its
// operator and element type — as far as NCCL's choice of algorithm depends on it.
// NCCL's NVLS and NVLS-tree kernels reduce in the switch (multimem.ld_reduce), and
// NCCL builds them only for sums of 16-, 32- and 64-bit floats and of 32- and
// 64-bit integers, and for the minimum and maximum of 16-bit floats and integers:
// not for the minimum or maximum of 32- or 64-bit floats (src/include/device.h
// ncclNvlsSupported, src/device/generate.py func_valid; the same rule from
// NVIDIA/nccl v2.19.3-1 to v2.29.7-1). A call it has no NVLS kernel for runs
// without NVLS whatever the communicator supports (src/enqueue.cc: nvlsSupport =
// comm->nvlsSupport && (ncclNvlsSupported(op, datatype) || all-gather), and
// updateCollCostTable skips NVLS and the NVLS tree where it is not 1; v2.25.1-1 lines
// 356 and 1607).
type Reduction uint8

const (
	// Sum is a sum, of any type NCCL's NVLS reduces (16-, 32- and 64-bit floats,
	// integers): gradients and activations. The default.
	Sum Reduction = iota
	// MaxFloat32 is the maximum (or minimum) of 32-bit floats: Transformer
	// Engine's amax all-reduces (torch.distributed.ReduceOp.MAX on its fp32
	// amaxes), which NCCL runs on its rings and trees only.
	MaxFloat32
	numReductions
)

// multicast says whether NCCL has an NVLS kernel for op under reduction r: every
// all-gather and every operation that does not reduce, and the reductions
// ncclNvlsSupported admits.
func (r Reduction) multicast(op Op) bool {
	switch op {
	case AllReduce, ReduceScatter, Reduce:
		return r == Sum
	}
	return true
}

// BusFactor is nccl-tests' busbw ÷ algbw for n ranks (nccl-tests doc/PERFORMANCE.md).
func (o Op) BusFactor(n int) float64 {
	if n <= 1 {
		return 1
	}
	f := float64(n-1) / float64(n)
	switch o {
	case AllReduce:
		return 2 * f
	case AllGather, ReduceScatter, AllToAll:
		return f
	}
	return 1
}

// Algorithm is a way of carrying out a collective.
type Algorithm uint8

const (
	Auto         Algorithm = iota // choose the cheapest, as NCCL does
	Ring                          // ring, several channels
	Tree                          // one pipelined tree: chains inside nodes, binary tree across nodes
	DoubleTree                    // two complementary binary trees, half the data each (NCCL's tree)
	Hierarchical                  // intra-node reduce-scatter → inter-node all-reduce of the shard on its rail → intra-node all-gather
	NVLS                          // NVSwitch in-switch reduction and multicast (NVLink SHARP)
	Direct                        // one-shot: every rank exchanges with every other in one step
	PAT                           // Bruck-style log-step exchange, one GPU per node (NCCL PAT)
	Pairwise                      // n−1 steps, step k pairs rank i with i+k (all-to-all)
	NVLSTree                      // NVLS reduce inside each node, a tree across nodes on each rail, NVLS multicast back (NCCL NVLS_TREE)
	numAlgos
)

var algoNames = [numAlgos]string{"auto", "ring", "tree", "dbtree", "hierarchical", "nvls", "direct", "pat", "pairwise", "nvlstree"}

func (a Algorithm) String() string {
	if a < numAlgos {
		return algoNames[a]
	}
	return fmt.Sprintf("algorithm(%d)", uint8(a))
}

// Algorithms lists every concrete algorithm (not Auto).
func Algorithms() []Algorithm {
	return []Algorithm{Ring, Tree, DoubleTree, Hierarchical, NVLS, Direct, PAT, Pairwise, NVLSTree}
}

// ParseAlgorithm accepts the names above ("double-tree" and "double_binary_tree" for dbtree too).
func ParseAlgorithm(s string) (Algorithm, error) {
	k := normalise(s)
	switch k {
	case "doubletree", "doublebinarytree", "dbt":
		return DoubleTree, nil
	case "oneshot":
		return Direct, nil
	case "":
		return Auto, nil
	}
	for i, n := range algoNames {
		if k == n {
			return Algorithm(i), nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %q (want one of %s)", s, strings.Join(algoNames[:], ", "))
}

// Protocol is NCCL's wire protocol: LL (8-byte flag+data stores, lowest latency, half
// the bandwidth), LL128 (128-byte lines with one flag word) and Simple (bulk copies
// with fences, highest bandwidth and latency).
type Protocol uint8

const (
	Simple Protocol = iota
	LL128
	LL
	numProtos
)

var protoNames = [numProtos]string{"simple", "ll128", "ll"}

func (p Protocol) String() string {
	if p < numProtos {
		return protoNames[p]
	}
	return fmt.Sprintf("protocol(%d)", uint8(p))
}

func normalise(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	// strings.Map, not a strings.Replacer made per call: building one was a
	// tenth of the time to read a short nccl-tests output.
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == ' ' {
			return -1
		}
		return r
	}, s)
}

// ParseProtocol accepts simple, ll128 and ll.
func ParseProtocol(s string) (Protocol, error) {
	k := normalise(s)
	for i, n := range protoNames {
		if k == n {
			return Protocol(i), nil
		}
	}
	return 0, fmt.Errorf("unknown protocol %q (want one of %s)", s, strings.Join(protoNames[:], ", "))
}
