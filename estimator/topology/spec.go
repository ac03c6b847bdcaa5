// Package topology describes a GPU cluster — nodes, the scale-up fabric inside a node
// (or NVLink domain), the NICs and the scale-out network — and turns it into links with
// a latency and an achievable bandwidth, so that a transfer between two GPUs can be
// placed on the links it crosses.
package topology

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
)

// IntraKind is the scale-up fabric between the GPUs of a node.
type IntraKind string

const (
	// NVSwitch: every GPU has one fat port into a non-blocking switch (DGX/HGX).
	NVSwitch IntraKind = "nvswitch"
	// Mesh: every GPU pair has a direct link of GPUBandwidth/(GPUs−1) per direction
	// (AMD Infinity Fabric on MI300X, NVLink bridges on older boards).
	Mesh IntraKind = "mesh"
	// PCIe: GPUs talk through PCIe switches and the host; GPUBandwidth is the GPU's PCIe rate.
	PCIe IntraKind = "pcie"
)

// NetKind is the scale-out transport.
type NetKind string

const (
	InfiniBand NetKind = "infiniband"
	RoCE       NetKind = "roce"
	EFA        NetKind = "efa"
)

// Intra is the scale-up fabric.
type Intra struct {
	Kind IntraKind `json:"kind"`
	// GPUBandwidthGBps is one GPU's bandwidth into the fabric per direction, 10^9 B/s.
	// Zero takes the GPU's NVLink bandwidth.
	GPUBandwidthGBps float64 `json:"gpu_bandwidth_gbps,omitempty"`
	// NVLS says the switch can reduce and multicast in the fabric (NVLink SHARP,
	// third-generation NVSwitch and later).
	NVLS bool `json:"nvls,omitempty"`
	// DomainNodes is how many consecutive nodes share one NVLink domain (multi-node
	// NVLink, e.g. 18 trays of a GB200 NVL72). 0 or 1: the domain is one node.
	DomainNodes int `json:"domain_nodes,omitempty"`
	// Efficiency is the achievable fraction of GPUBandwidth for bulk transfers.
	// Zero takes the calibrated default for the fabric and GPU generation.
	Efficiency float64 `json:"efficiency,omitempty"`
	// LatencyUs is the one-hop latency of a transfer, µs. Zero takes the calibrated default.
	LatencyUs float64 `json:"latency_us,omitempty"`
}

// NICs are a node's scale-out network adapters.
type NICs struct {
	PerNode int     `json:"per_node"`
	Gbps    float64 `json:"gbps"` // line rate of one NIC, 10^9 bit/s
	Kind    NetKind `json:"kind"`
	// GPUNIC maps each local GPU to the NIC it uses (PCIe affinity). Empty: GPUs are
	// split evenly, GPU i on NIC i·PerNode/GPUsPerNode.
	GPUNIC []int `json:"gpu_nic,omitempty"`
	// Efficiency is the achievable fraction of the line rate; zero takes the default for Kind.
	Efficiency float64 `json:"efficiency,omitempty"`
	// LatencyUs is the one-way latency NIC→switch→NIC, µs; zero takes the default for Kind.
	LatencyUs float64 `json:"latency_us,omitempty"`
	// SimpleProtocolOnly says the network does not deliver a 128-byte store in
	// order, so NCCL's LL and LL128 protocols (which read a flag inside the data) are
	// unsafe across it and only Simple runs between nodes. AWS's OFI plugin sets
	// NCCL_PROTO=simple on EFA without in-order 128-byte delivery (p4d and p4de;
	// aws-ofi-nccl issue 76, PR 850); p5 and later deliver RDMA writes in order
	// (aws-ofi-nccl PR 280).
	SimpleProtocolOnly bool `json:"simple_protocol_only,omitempty"`
}

// Network is the switch fabric between nodes.
type Network struct {
	// RailOptimized: NIC k of every node plugs into rail switch k, so same-rail traffic
	// stays on one switch layer and cross-rail traffic is first moved over the scale-up
	// fabric to the GPU on the right rail (NCCL's PXN).
	RailOptimized bool `json:"rail_optimized"`
	// NodesPerLeaf is how many nodes hang under one leaf switch (per rail when rail
	// optimised). Traffic between leaves crosses the spine. Zero: 32 (a DGX SuperPOD
	// scalable unit).
	NodesPerLeaf int `json:"nodes_per_leaf,omitempty"`
	// Oversubscription is leaf downlink ÷ uplink capacity; 1 (or 0) is non-blocking.
	Oversubscription float64 `json:"oversubscription,omitempty"`
	// SpineLatencyUs is the extra one-way latency of crossing the spine, µs.
	// Zero takes the default.
	SpineLatencyUs float64 `json:"spine_latency_us,omitempty"`
}

// Spec is a cluster as a user or the catalog describes it.
type Spec struct {
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	Source      string       `json:"source,omitempty"`
	GPU         hardware.GPU `json:"gpu"`
	Nodes       int          `json:"nodes"`
	GPUsPerNode int          `json:"gpus_per_node"`
	Intra       Intra        `json:"intra"`
	NICs        NICs         `json:"nics"`
	Network     Network      `json:"network"`
	// Host is the CPU side of a node, used when optimizer states or parameters are
	// offloaded to host memory. Optional: offloading needs it.
	Host Host `json:"host,omitempty"`
	// Algorithms are the algorithms the cluster's NCCL is measured to run where
	// they differ from the collective model's own choice (a calibrated cluster
	// file writes them; see AlgoRange). The first range that covers a call wins.
	Algorithms []AlgoRange `json:"algorithms,omitempty"`
	// NCCL is the NCCL release the cluster runs, "major.minor" or
	// "major.minor.patch" (e.g. "2.29" or "2.28.9"). The collective model follows it
	// where releases plan a call differently: the channels a send/recv or all-to-all
	// gives a peer on another node (NCCL 2.29 sizes them by the GPU's NIC bandwidth;
	// see collective.p2pNetChannelsPerPeer; empty: the rule of NCCL 2.21 through
	// 2.28) and the NVLS channels on Blackwell (16 up to 2.24, 32 in 2.25 and 2.26,
	// from 2.27 32 across nodes and 24 inside one; empty: the newest rule). A
	// release newer than the newest the model knows (NewestNCCLMinor) is priced by
	// that newest one's rules, and the answers say so (NewerNCCLWarning).
	NCCL string `json:"nccl,omitempty"`
}

// NCCLRelease is the NCCL release whose rules price the spec's calls, as major
// and minor numbers: the one the spec states, or, when it states one newer than
// the newest the collective model knows (NewestNCCLMinor), that newest one, whose
// rules a newer release is priced by (NewerNCCLWarning says so in the answer).
// ok is false when none is stated (or it is not one ParseNCCLRelease takes,
// which Validate reports).
func (s Spec) NCCLRelease() (major, minor int, ok bool) {
	if s.NCCL == "" {
		return 0, 0, false
	}
	major, minor, err := ParseNCCLRelease(s.NCCL)
	if err != nil {
		return 0, 0, false
	}
	return major, min(minor, NewestNCCLMinor), true
}

// The NCCL releases the collective model reads: NCCL 2 (NCCL 1 ran inside one
// node only; there is no NCCL 3), from 2.0 to 2.99, with a patch of at most 99.
// Its rules are known up to 2.31, the newest release a measurement the model is
// scored on states (collective/accuracy/testdata/nccl_measured.jsonl: 2.31.2;
// the rules are read from NCCL's source through v2.30.7-1, docs/collective.md).
// A release after 2.31 is priced by 2.31's rules (Spec.NCCLRelease), the nearest
// the model knows, and every answer priced with it says so (NewerNCCLWarning):
// a scheduler on a cluster that upgraded NCCL gets an answer that states its
// basis rather than none. 2.99 is the last minor nccl.h's version code
// can hold (NCCL_VERSION(X,Y,Z): X * 10000 + Y * 100 + Z, so 2.100.0 would read
// as 3.0.0), as 99 is the last patch; at the pace of NCCL 2's releases (2.18 in
// 2023, 2.28 in 2025: about four minors a year) it is more than a decade away,
// so a minor past it is a typing error, not a release.
const (
	NCCLMajor       = 2
	NewestNCCLMinor = 31
	maxNCCLMinor    = 99
	maxNCCLPatch    = 99
)

var (
	// NCCLReleases names the releases ParseNCCLRelease takes.
	NCCLReleases = fmt.Sprintf("%d.0 through %d.%d", NCCLMajor, NCCLMajor, maxNCCLMinor)
	// NewestNCCL is the newest release the collective model knows the rules of.
	NewestNCCL = fmt.Sprintf("%d.%d", NCCLMajor, NewestNCCLMinor)
)

// ParseNCCLRelease reads an NCCL release, "major.minor" or "major.minor.patch"
// (e.g. "2.29" or "2.28.9"), one of NCCLReleases, and returns the major and minor
// it states: every place a release is read (a cluster's nccl, an nccl-tests
// output, a measurement row) reads it here. A release newer than the newest the
// model knows is taken (Spec.NCCLRelease prices it by the newest's rules); the
// error states the rule broken, the releases taken and the value.
func ParseNCCLRelease(v string) (major, minor int, err error) {
	accepted := fmt.Sprintf("an NCCL release %s, as major.minor or major.minor.patch, e.g. 2.28.9 (a release after %s, the newest stepcost models, is priced by %s's rules)",
		NCCLReleases, NewestNCCL, NewestNCCL)
	parts := strings.Split(v, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, fmt.Errorf("must be %s (got %q)", accepted, v)
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		switch {
		case err != nil || p != strconv.Itoa(x):
			return 0, 0, fmt.Errorf("must be %s (got %q)", accepted, v)
		case x < 0:
			return 0, 0, fmt.Errorf("has a negative number (%d): must be %s (got %q)", x, accepted, v)
		}
		n[i] = x
	}
	switch {
	case n[0] > NCCLMajor:
		return 0, 0, fmt.Errorf("NCCL %d: no such release (NCCL %d is the newest major); must be %s (got %q)", n[0], NCCLMajor, accepted, v)
	case n[0] < NCCLMajor:
		return 0, 0, fmt.Errorf("older than NCCL %d.0 (NCCL 1 ran inside one node only); must be %s (got %q)", NCCLMajor, accepted, v)
	case n[1] > maxNCCLMinor:
		return 0, 0, fmt.Errorf("minor %d: past %d, the last minor nccl.h's version code holds (X * 10000 + Y * 100 + Z); must be %s (got %q)", n[1], maxNCCLMinor, accepted, v)
	case n[2] > maxNCCLPatch:
		return 0, 0, fmt.Errorf("patch %d: past %d, the last patch nccl.h's version code holds (X * 10000 + Y * 100 + Z); must be %s (got %q)", n[2], maxNCCLPatch, accepted, v)
	}
	return n[0], n[1], nil
}

// NewerNCCLWarning is the warning of an answer priced with release v when v is
// newer than the newest release the collective model knows (which then priced
// it), "" otherwise (an older release, none, or one ParseNCCLRelease refuses).
// what names where v was stated: "nccl" for a cluster's field, "ar.txt: NCCL"
// for an input file's release.
func NewerNCCLWarning(what, v string) string {
	if _, minor, err := ParseNCCLRelease(v); err != nil || minor <= NewestNCCLMinor {
		return ""
	}
	return fmt.Sprintf("%s %s is newer than the newest release stepcost models (%s); priced with %s's algorithm and protocol choices (tuning tables, channels, NVLS and p2p rules)",
		what, v, NewestNCCL, NewestNCCL)
}

// CPUKind is the instruction-set family of a node's host CPU, which sets how fast
// it dispatches a framework's operators to its GPUs.
type CPUKind string

const (
	// X86: x86-64 server CPUs (Xeon, EPYC) — the hosts of DGX/HGX baseboards and of
	// the step model's host constants. Also what an unstated CPU is taken to be.
	X86 CPUKind = "x86"
	// Grace: NVIDIA's Arm Neoverse V2 CPU of the GH200 and GB200 superchips.
	Grace CPUKind = "grace"
)

// Host is a node's CPU and its memory, and the links from its GPUs to it.
type Host struct {
	// CPU is the host CPU's kind; empty: x86.
	CPU CPUKind `json:"cpu,omitempty"`
	// MemoryGB is the node's CPU memory, 10^9 B.
	MemoryGB float64 `json:"memory_gb,omitempty"`
	// MemoryBandwidthGBps is the node's peak CPU memory bandwidth over all sockets,
	// 10^9 B/s (channels × transfer rate × 8 B).
	MemoryBandwidthGBps float64 `json:"memory_bandwidth_gbps,omitempty"`
	// LinkGBps is one GPU's link to host memory per direction, 10^9 B/s: PCIe x16
	// (Gen4 31.5, Gen5 63) or NVLink-C2C (450).
	LinkGBps float64 `json:"link_gbps,omitempty"`
	// GPUsPerLink is how many GPUs share one such link to the CPU (two GPUs behind
	// one PCIe switch uplink on DGX baseboards, two Blackwell GPUs on one Grace's
	// C2C in GB200); 0 or 1: each GPU has its own.
	GPUsPerLink int `json:"gpus_per_link,omitempty"`
}

// Described says whether the host is given (offloading needs it).
func (h Host) Described() bool { return h.MemoryGB > 0 && h.MemoryBandwidthGBps > 0 && h.LinkGBps > 0 }

// Limits on sizes a spec may declare; they keep every derived table small.
const (
	MaxNodes       = 1 << 16
	MaxGPUsPerNode = 72
	MaxNICsPerNode = 64
)

// Bounds of a spec's latencies (µs) and efficiencies: far outside anything real, so
// that every time computed from them stays finite and positive (rates are bounded
// by hardware.MinRate and MaxRate).
const (
	MaxLatencyUs  = 1e6
	MinEfficiency = 1e-3
)

// CheckGPUsPerNode is the rule of gpus_per_node, 1 to MaxGPUsPerNode: part of
// Validate, and checked on its own by a caller that sizes a cluster by it first.
func (s Spec) CheckGPUsPerNode() *invalid.Error {
	if s.GPUsPerNode < 1 || s.GPUsPerNode > MaxGPUsPerNode {
		return invalid.Field("gpus_per_node", "must be between 1 and %d (got %d)", MaxGPUsPerNode, s.GPUsPerNode)
	}
	return nil
}

// Validate checks the spec and names every bad field.
func (s Spec) Validate() error {
	c := invalid.Collector{}
	if s.Name == "" {
		c.Add("name", "must not be empty")
	}
	c.Join(s.GPU.Validate("gpu."))
	if s.Nodes < 1 || s.Nodes > MaxNodes {
		c.Add("nodes", "must be between 1 and %d (got %d)", MaxNodes, s.Nodes)
	}
	if e := s.CheckGPUsPerNode(); e != nil {
		c.Join(e)
	}
	switch s.Intra.Kind {
	case NVSwitch, Mesh, PCIe:
	default:
		c.Add("intra.kind", "must be nvswitch, mesh or pcie (got %q)", s.Intra.Kind)
	}
	if s.Intra.GPUBandwidthGBps != 0 {
		c.PositiveWithin("intra.gpu_bandwidth_gbps", s.Intra.GPUBandwidthGBps, hardware.MinRate, hardware.MaxRate)
	}
	if s.Intra.NVLS && s.Intra.Kind != NVSwitch {
		c.Add("intra.nvls", "in-switch reduction needs intra.kind nvswitch (got %q)", s.Intra.Kind)
	}
	if s.Intra.DomainNodes < 0 || s.Intra.DomainNodes > MaxNodes {
		c.Add("intra.domain_nodes", "must be between 0 and %d (got %d)", MaxNodes, s.Intra.DomainNodes)
	}
	if s.Intra.DomainNodes > 1 && s.Intra.Kind != NVSwitch {
		c.Add("intra.domain_nodes", "a multi-node NVLink domain needs intra.kind nvswitch (got %q)", s.Intra.Kind)
	}
	fraction(&c, "intra.efficiency", s.Intra.Efficiency)
	c.NonNegativeWithin("intra.latency_us", s.Intra.LatencyUs, MaxLatencyUs)

	multiNode := s.Nodes > 1 && s.Intra.DomainNodes < s.Nodes
	if s.NICs.PerNode < 0 || s.NICs.PerNode > MaxNICsPerNode {
		c.Add("nics.per_node", "must be between 0 and %d (got %d)", MaxNICsPerNode, s.NICs.PerNode)
	} else if multiNode && s.NICs.PerNode == 0 {
		c.Add("nics.per_node", "a cluster of %d nodes needs at least one NIC per node", s.Nodes)
	}
	if s.NICs.PerNode > 0 {
		c.PositiveWithin("nics.gbps", s.NICs.Gbps, hardware.MinRate, hardware.MaxRate)
		switch s.NICs.Kind {
		case InfiniBand, RoCE, EFA:
		default:
			c.Add("nics.kind", "must be infiniband, roce or efa (got %q)", s.NICs.Kind)
		}
		if len(s.NICs.GPUNIC) != 0 && len(s.NICs.GPUNIC) != s.GPUsPerNode {
			c.Add("nics.gpu_nic", "must list one NIC per GPU: %d entries for %d GPUs", len(s.NICs.GPUNIC), s.GPUsPerNode)
		}
		for i, k := range s.NICs.GPUNIC {
			if k < 0 || k >= s.NICs.PerNode {
				c.Add("nics.gpu_nic", "entry %d is NIC %d, must be in [0, %d)", i, k, s.NICs.PerNode)
			}
		}
		fraction(&c, "nics.efficiency", s.NICs.Efficiency)
		c.NonNegativeWithin("nics.latency_us", s.NICs.LatencyUs, MaxLatencyUs)
	}
	if s.NCCL != "" {
		if _, _, err := ParseNCCLRelease(s.NCCL); err != nil {
			c.Add("nccl", "%v", err)
		}
	}
	if s.Network.NodesPerLeaf < 0 {
		c.Add("network.nodes_per_leaf", "must be ≥ 0 (got %d)", s.Network.NodesPerLeaf)
	}
	if o := s.Network.Oversubscription; o != 0 && (!(o >= 1) || o > 1e3) {
		c.Add("network.oversubscription", "must be between 1 (non-blocking) and 1000 (got %v)", o)
	}
	c.NonNegativeWithin("network.spine_latency_us", s.Network.SpineLatencyUs, MaxLatencyUs)
	if h := s.Host; h != (Host{CPU: h.CPU}) {
		c.PositiveWithin("host.memory_gb", h.MemoryGB, hardware.MinRate, hardware.MaxRate)
		c.PositiveWithin("host.memory_bandwidth_gbps", h.MemoryBandwidthGBps, hardware.MinRate, hardware.MaxRate)
		c.PositiveWithin("host.link_gbps", h.LinkGBps, hardware.MinRate, hardware.MaxRate)
		if h.GPUsPerLink < 0 || h.GPUsPerLink > s.GPUsPerNode {
			c.Add("host.gpus_per_link", "must be between 0 and the GPUs per node, %d (got %d)", s.GPUsPerNode, h.GPUsPerLink)
		}
	}
	switch s.Host.CPU {
	case "", X86, Grace:
	default:
		c.Add("host.cpu", "must be %q or %q (got %q)", X86, Grace, s.Host.CPU)
	}
	validateAlgorithms(&c, s)
	return c.Err()
}

// fraction accepts 0 (use the default) or a value in [MinEfficiency, 1].
func fraction(c *invalid.Collector, field string, v float64) {
	if v != 0 && !(v >= MinEfficiency && v <= 1) {
		c.Add(field, "must be in (0, 1] (at least %g), or 0 for the calibrated default (got %v)", MinEfficiency, v)
	}
}
