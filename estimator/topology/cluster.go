package topology

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"

	"github.com/stepcost/stepcost/estimator/hardware"
)

// Link kinds. Every resource of a cluster is one direction of one of these.
type LinkKind uint8

const (
	GPUPortOut LinkKind = iota // a GPU's port into its NVSwitch (or PCIe) fabric, sending
	GPUPortIn                  // the same port, receiving
	PairLink                   // one direction of a direct GPU↔GPU link in a mesh
	NICOut                     // a NIC sending
	NICIn                      // a NIC receiving
	LeafUp                     // a leaf switch's uplinks towards the spine
	LeafDown                   // the spine's downlinks into a leaf
)

func (k LinkKind) String() string {
	switch k {
	case GPUPortOut:
		return "gpu-out"
	case GPUPortIn:
		return "gpu-in"
	case PairLink:
		return "gpu-gpu"
	case NICOut:
		return "nic-out"
	case NICIn:
		return "nic-in"
	case LeafUp:
		return "leaf-up"
	case LeafDown:
		return "leaf-down"
	}
	return "unknown"
}

// Cluster is a validated Spec compiled into links. It is immutable and safe for
// concurrent use.
type Cluster struct {
	Spec Spec

	gpus        int     // total GPUs
	domainNodes int     // nodes per NVLink domain (≥ 1)
	nodesLeaf   int     // nodes per leaf switch (≥ 1)
	leaves      int     // leaf switches (per rail when rail-optimised)
	gpuNIC      []int   // local GPU → NIC index
	railProxy   [][]int // [local GPU][rail] → local GPU attached to that rail (PXN)
	// log2 of GPUsPerNode, domainNodes and nodesLeaf where each is a power of two,
	// else -1: Path, which places every flow of every contention coefficient
	// (millions in the first search on 100 000 GPUs), divides by them with a shift.
	gpuShift, domainShift, leafShift int8
	mesh                             bool // Spec.Intra.Kind == Mesh, a string compared once

	// Achievable bandwidths in bytes per µs, and latencies in µs.
	IntraBW    float64 // one GPU port (NVSwitch/PCIe) per direction
	PairBW     float64 // one directed mesh link
	NICBW      float64 // one NIC per direction
	LeafBW     float64 // one leaf's uplink (or downlink) capacity
	IntraLatUs float64 // one scale-up hop
	NetLatUs   float64 // NIC → leaf → NIC
	SpineLatUs float64 // extra for crossing the spine

	// Resource index layout: [gpu ports out | gpu ports in | pair links | nic out | nic in | leaf up | leaf down]
	offPortIn, offPair, offNICOut, offNICIn, offLeafUp, offLeafDown, nRes int

	// scaled lowers the capacity of some resources (the degraded-link what-ifs);
	// empty for a healthy cluster.
	scaled []scaledRange
	// Degraded describes the what-ifs applied, empty for a healthy cluster.
	Degraded string
	// Loaded describes the other jobs' traffic on its links (WithLeafShares), empty
	// for a cluster the job has to itself.
	Loaded string
	base   *Cluster // the healthy cluster a degraded copy was made from
}

// Base is the healthy cluster this one was degraded from (itself if healthy).
func (c *Cluster) Base() *Cluster {
	if c.base != nil {
		return c.base
	}
	return c
}

// scaledRange multiplies the capacity of resources [lo, hi) by f.
type scaledRange struct {
	lo, hi int32
	f      float64
}

// Build validates the spec and compiles it.
func (s Spec) Build() (*Cluster, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := &Cluster{Spec: s}
	g := s.GPUsPerNode
	c.gpus = s.Nodes * g
	c.domainNodes = max(1, s.Intra.DomainNodes)
	c.nodesLeaf = s.Network.NodesPerLeaf
	if c.nodesLeaf == 0 {
		c.nodesLeaf = DefaultNodesPerLeaf
	}
	c.gpuShift, c.domainShift, c.leafShift = log2(g), log2(c.domainNodes), log2(c.nodesLeaf)
	c.mesh = s.Intra.Kind == Mesh
	nics := s.NICs.PerNode
	groups := (s.Nodes + c.nodesLeaf - 1) / c.nodesLeaf
	c.leaves = groups
	if s.Network.RailOptimized && nics > 0 {
		c.leaves = groups * nics
	}

	c.gpuNIC = make([]int, g)
	for i := range g {
		switch {
		case len(s.NICs.GPUNIC) == g:
			c.gpuNIC[i] = s.NICs.GPUNIC[i]
		case nics > 0:
			c.gpuNIC[i] = i * nics / g
		}
	}
	c.railProxy = make([][]int, g)
	for i := range g {
		c.railProxy[i] = make([]int, nics)
		for r := range nics {
			c.railProxy[i][r] = -1
			if c.gpuNIC[i] == r {
				c.railProxy[i][r] = i
				continue
			}
			for j := range g { // nearest GPU (by index distance) on rail r
				if c.gpuNIC[j] == r && (c.railProxy[i][r] < 0 || abs(j-i) < abs(c.railProxy[i][r]-i)) {
					c.railProxy[i][r] = j
				}
			}
		}
	}

	d := Defaults(s.GPU.Arch, s.Intra.Kind, s.NICs.Kind, s.Intra.DomainNodes > 1)
	intraBW := s.Intra.GPUBandwidthGBps
	if intraBW == 0 {
		intraBW = s.GPU.NVLinkGBps
	}
	eff := orDefault(s.Intra.Efficiency, d.IntraEfficiency)
	c.IntraBW = intraBW * eff * 1e3 // GB/s → B/µs
	if g > 1 {
		c.PairBW = c.IntraBW / float64(g-1)
	}
	c.IntraLatUs = orDefault(s.Intra.LatencyUs, d.IntraLatencyUs)
	c.NICBW = s.NICs.Gbps / 8 * orDefault(s.NICs.Efficiency, d.NICEfficiency) * 1e3
	c.NetLatUs = orDefault(s.NICs.LatencyUs, d.NICLatencyUs)
	c.SpineLatUs = orDefault(s.Network.SpineLatencyUs, d.SpineLatencyUs)
	over := s.Network.Oversubscription
	if over == 0 {
		over = 1
	}
	nicsPerLeafPerNode := nics
	if s.Network.RailOptimized {
		nicsPerLeafPerNode = 1
	}
	c.LeafBW = float64(c.nodesLeaf*nicsPerLeafPerNode) * c.NICBW / over

	c.offPortIn = c.gpus
	c.offPair = 2 * c.gpus
	pairs := 0
	if s.Intra.Kind == Mesh {
		pairs = s.Nodes * g * g
	}
	c.offNICOut = c.offPair + pairs
	c.offNICIn = c.offNICOut + s.Nodes*nics
	c.offLeafUp = c.offNICIn + s.Nodes*nics
	c.offLeafDown = c.offLeafUp + c.leaves
	c.nRes = c.offLeafDown + c.leaves
	return c, nil
}

// DefaultNodesPerLeaf is the size of a DGX SuperPOD scalable unit (32 nodes per leaf
// group), NVIDIA DGX SuperPOD reference architecture.
const DefaultNodesPerLeaf = 32

func orDefault(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

// log2 is the base-2 logarithm of n if n is a power of two, else -1.
func log2(n int) int8 {
	if n <= 0 || n&(n-1) != 0 {
		return -1
	}
	return int8(bits.TrailingZeros(uint(n)))
}

// quo is x / n for x ≥ 0, by a shift where n = 2^shift (shift ≥ 0).
func quo(x, n int, shift int8) int {
	if shift >= 0 {
		return x >> (uint(shift) & 63) // the mask: one shift instruction, no range check
	}
	return x / n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Leaf is the leaf-switch group (scalable unit) of node: nodes of one group reach
// each other without crossing the spine (on every rail, when rail-optimised).
func (c *Cluster) Leaf(node int) int { return node / c.nodesLeaf }

// GPUs is the number of GPUs in the cluster.
func (c *Cluster) GPUs() int { return c.gpus }

// Resources is the number of link directions; resource ids are in [0, Resources()).
func (c *Cluster) Resources() int { return c.nRes }

// Node of global GPU rank g.
func (c *Cluster) Node(g int) int {
	if g >= 0 {
		return quo(g, c.Spec.GPUsPerNode, c.gpuShift)
	}
	return g / c.Spec.GPUsPerNode
}

// Local is the index of global GPU rank g ≥ 0 inside its node (g mod GPUsPerNode).
func (c *Cluster) Local(g int) int {
	if c.gpuShift >= 0 {
		return g & (c.Spec.GPUsPerNode - 1)
	}
	return g % c.Spec.GPUsPerNode
}

// DomainGPUs is how many GPUs one scale-up (NVLink) domain holds: a node's, or a
// multi-node domain's, at most the cluster's.
func (c *Cluster) DomainGPUs() int { return c.Spec.GPUsPerNode * min(c.domainNodes, c.Spec.Nodes) }

// SameDomain reports whether two nodes share an NVLink domain.
func (c *Cluster) SameDomain(a, b int) bool {
	return quo(a, c.domainNodes, c.domainShift) == quo(b, c.domainNodes, c.domainShift)
}

// NVLS reports whether the scale-up fabric reduces in the switch.
func (c *Cluster) NVLS() bool { return c.Spec.Intra.NVLS }

// GPU is the accelerator model.
func (c *Cluster) GPU() hardware.GPU { return c.Spec.GPU }

// NIC returns the node-global NIC index used by GPU g, or -1 without NICs.
func (c *Cluster) NIC(g int) int {
	if c.Spec.NICs.PerNode == 0 {
		return -1
	}
	return c.Node(g)*c.Spec.NICs.PerNode + c.gpuNIC[g%c.Spec.GPUsPerNode]
}

// MaxUtilisation is the largest load[r] / Capacity(r) over the resources r of
// touched, 0 for none. On a cluster with no degraded resource each kind of resource
// has one capacity, and the largest load of a kind over it is the largest of that
// kind's quotients: a correctly rounded division by a positive number keeps the
// order of what it divides, so the answer is the same number, with one division a
// kind instead of one a resource.
func (c *Cluster) MaxUtilisation(load []float64, touched []int32) float64 {
	m := 0.0
	if len(c.scaled) > 0 {
		for _, r := range touched {
			m = max(m, load[r]/c.Capacity(r))
		}
		return m
	}
	// The largest of each kind by comparison, not max: loads are sums of flows'
	// bytes, finite and positive (no NaN or −0 to order).
	var port, pair, nic, leaf float64
	var kinds uint8
	for _, r := range touched {
		v := load[r]
		switch i := int(r); {
		case i < c.offPair:
			kinds |= 1
			if v > port {
				port = v
			}
		case i < c.offNICOut:
			kinds |= 2
			if v > pair {
				pair = v
			}
		case i < c.offLeafUp:
			kinds |= 4
			if v > nic {
				nic = v
			}
		default:
			kinds |= 8
			if v > leaf {
				leaf = v
			}
		}
	}
	if kinds&1 != 0 {
		m = max(m, port/c.IntraBW)
	}
	if kinds&2 != 0 {
		m = max(m, pair/c.PairBW)
	}
	if kinds&4 != 0 {
		m = max(m, nic/c.NICBW)
	}
	if kinds&8 != 0 {
		m = max(m, leaf/c.LeafBW)
	}
	return m
}

// Capacity of resource r in bytes per µs.
func (c *Cluster) Capacity(r int32) float64 {
	var v float64
	switch i := int(r); {
	case i < c.offPair:
		v = c.IntraBW
	case i < c.offNICOut:
		v = c.PairBW
	case i < c.offLeafUp:
		v = c.NICBW
	default:
		v = c.LeafBW
	}
	for _, s := range c.scaled {
		if r >= s.lo && r < s.hi {
			v *= s.f
		}
	}
	return v
}

// WithDegradedNICs returns a copy of the cluster whose node runs its NICs at speed
// (a fraction in (0, 1]) of their bandwidth in both directions: a NIC that trained
// down to a lower rate, a flapping link, a congested port. Rings, trees and
// all-to-alls through that node run at its pace.
func (c *Cluster) WithDegradedNICs(node int, speed float64) (*Cluster, error) {
	nics := c.Spec.NICs.PerNode
	switch {
	case nics == 0:
		return nil, fmt.Errorf("the cluster has no NICs to degrade")
	case node < 0 || node >= c.Spec.Nodes:
		return nil, fmt.Errorf("node %d is not in the cluster's %d nodes", node, c.Spec.Nodes)
	case !(speed > 0 && speed <= 1):
		return nil, fmt.Errorf("speed must be in (0, 1] (got %v)", speed)
	}
	d := c.degrade(fmt.Sprintf("node %d's NICs at %.0f%%", node, 100*speed))
	lo := int32(node * nics)
	d.scaled = append(d.scaled,
		scaledRange{int32(c.offNICOut) + lo, int32(c.offNICOut) + lo + int32(nics), speed},
		scaledRange{int32(c.offNICIn) + lo, int32(c.offNICIn) + lo + int32(nics), speed})
	return d, nil
}

// WithDegradedGPULink returns a copy of the cluster whose GPU gpu reaches the
// scale-up fabric at speed (a fraction in (0, 1]) of its bandwidth in both
// directions: NVLink lanes down, a PCIe link trained to a lower width.
func (c *Cluster) WithDegradedGPULink(gpu int, speed float64) (*Cluster, error) {
	switch {
	case gpu < 0 || gpu >= c.gpus:
		return nil, fmt.Errorf("GPU %d is not in the cluster's %d GPUs", gpu, c.gpus)
	case !(speed > 0 && speed <= 1):
		return nil, fmt.Errorf("speed must be in (0, 1] (got %v)", speed)
	}
	d := c.degrade(fmt.Sprintf("GPU %d scale-up link at %.0f%%", gpu, 100*speed))
	g := int32(gpu)
	d.scaled = append(d.scaled, scaledRange{g, g + 1, speed}, scaledRange{int32(c.offPortIn) + g, int32(c.offPortIn) + g + 1, speed})
	if c.Spec.Intra.Kind == Mesh {
		// The GPU's own mesh links: out of it and into it.
		n := int32(c.Spec.GPUsPerNode)
		base := int32(c.offPair) + int32(c.Node(gpu))*n*n
		local := g % n
		d.scaled = append(d.scaled, scaledRange{base + local*n, base + local*n + n, speed})
		for j := range n {
			r := base + j*n + local
			d.scaled = append(d.scaled, scaledRange{r, r + 1, speed})
		}
	}
	return d, nil
}

// LeafOf is the index of the leaf resource (a leaf switch's uplinks, and the
// spine's downlinks into it) that node's NIC nic (0 ≤ nic < NICs per node) reaches:
// its scalable unit's, and on a rail-optimised network that unit's switch of the
// NIC's rail. Leaves is how many there are.
func (c *Cluster) LeafOf(node, nic int) int { return c.leaf(node, nic) }

// Leaves is the number of leaf resources (LeafOf).
func (c *Cluster) Leaves() int { return c.leaves }

// LocalNIC is the node-local NIC that local GPU g of a node uses (-1 without NICs).
func (c *Cluster) LocalNIC(g int) int {
	if c.Spec.NICs.PerNode == 0 {
		return -1
	}
	return c.gpuNIC[g]
}

// WithLeafShares returns a copy of the cluster whose leaf resources (LeafOf) run at
// the given fractions (in (0, 1]) of their capacity in both directions, uplinks and
// the spine's downlinks: what other jobs' traffic leaves to one job. Leaves not
// listed keep theirs. The copy prices like its base for everything else, and rank
// maps of the base hold for it.
func (c *Cluster) WithLeafShares(shares map[int]float64, what string) (*Cluster, error) {
	d := *c
	d.base = c.Base()
	d.scaled = slices.Clip(c.scaled)
	for _, leaf := range slices.Sorted(maps.Keys(shares)) {
		f := shares[leaf]
		if leaf < 0 || leaf >= c.leaves {
			return nil, fmt.Errorf("leaf %d is not one of the cluster's %d", leaf, c.leaves)
		}
		if !(f > 0 && f <= 1) {
			return nil, fmt.Errorf("leaf %d: share must be in (0, 1] (got %v)", leaf, f)
		}
		up, down := int32(c.offLeafUp+leaf), int32(c.offLeafDown+leaf)
		d.scaled = append(d.scaled, scaledRange{up, up + 1, f}, scaledRange{down, down + 1, f})
	}
	if d.Loaded != "" && what != "" {
		what = d.Loaded + "; " + what
	}
	d.Loaded = what
	return &d, nil
}

// degrade copies the cluster and records the what-if.
func (c *Cluster) degrade(what string) *Cluster {
	d := *c
	d.base = c.Base()
	d.scaled = slices.Clip(c.scaled)
	if d.Degraded != "" {
		what = d.Degraded + "; " + what
	}
	d.Degraded = what
	return &d
}

// Kind of resource r.
func (c *Cluster) Kind(r int32) LinkKind {
	switch i := int(r); {
	case i < c.offPortIn:
		return GPUPortOut
	case i < c.offPair:
		return GPUPortIn
	case i < c.offNICOut:
		return PairLink
	case i < c.offNICIn:
		return NICOut
	case i < c.offLeafUp:
		return NICIn
	case i < c.offLeafDown:
		return LeafUp
	default:
		return LeafDown
	}
}

// Path appends to buf the resources a transfer from GPU src to GPU dst crosses and
// returns them with the transfer's one-way hardware latency in µs and whether it
// leaves the NVLink domain (CrossesNetwork). src == dst crosses nothing.
func (c *Cluster) Path(src, dst int, buf []int32) ([]int32, float64, bool) {
	if src == dst {
		return buf, 0, false
	}
	g := c.Spec.GPUsPerNode
	sn, dn := quo(src, g, c.gpuShift), quo(dst, g, c.gpuShift)
	if sn == dn || quo(sn, c.domainNodes, c.domainShift) == quo(dn, c.domainNodes, c.domainShift) {
		return c.intraHop(src, dst, buf), c.IntraLatUs, false
	}
	nics := c.Spec.NICs.PerNode
	lat := c.NetLatUs
	sLoc, dLoc := src-sn*g, dst-dn*g
	srcNIC, dstNIC := c.gpuNIC[sLoc], c.gpuNIC[dLoc]
	if c.Spec.Network.RailOptimized && srcNIC != dstNIC {
		// PXN: move the data over NVLink to the GPU on the destination's rail first.
		proxy := sn*g + c.railProxy[sLoc][dstNIC]
		buf = c.intraHop(src, proxy, buf)
		lat += c.IntraLatUs
		srcNIC = dstNIC
	}
	buf = append(buf, int32(c.offNICOut+sn*nics+srcNIC), int32(c.offNICIn+dn*nics+dstNIC))
	sl, dl := c.leaf(sn, srcNIC), c.leaf(dn, dstNIC)
	if sl != dl {
		buf = append(buf, int32(c.offLeafUp+sl), int32(c.offLeafDown+dl))
		lat += c.SpineLatUs
	}
	return buf, lat, true
}

// DisjointRails reports whether the transfers between the GPUs of local index a of
// some nodes and those between the same nodes' GPUs of local index b cross
// disjoint resources of equal capacity, with equal latencies: each GPU's own
// scale-up ports, and NICs and leaves of two different rails of a rail-optimised
// network (no PXN hop, as source and destination share a rail), on a cluster with
// no degraded link. Groups of one local index each, on the same nodes, then load
// the cluster as translations of one another.
func (c *Cluster) DisjointRails(a, b int) bool {
	g := c.Spec.GPUsPerNode
	return a != b && a >= 0 && b >= 0 && a < g && b < g && len(c.scaled) == 0 &&
		c.Spec.Network.RailOptimized && c.Spec.NICs.PerNode > 0 && c.gpuNIC[a] != c.gpuNIC[b]
}

// CrossesNetwork reports whether a transfer between the two GPUs leaves the NVLink domain.
func (c *Cluster) CrossesNetwork(src, dst int) bool {
	g := c.Spec.GPUsPerNode
	return !c.SameDomain(src/g, dst/g)
}

// intraHop is the hop between two GPUs of one scale-up domain, src ≠ dst (Path's
// callers: a flow between two GPUs, or a GPU and its PXN proxy on another rail).
func (c *Cluster) intraHop(src, dst int, buf []int32) []int32 {
	if c.mesh {
		return c.meshHop(src, dst, buf)
	}
	return append(buf, int32(src), int32(c.offPortIn+dst))
}

// meshHop is intraHop on a mesh: the pair link of two GPUs of one node, else the
// GPUs' ports. Not inlined, so that intraHop, the hop of every other scale-up
// fabric, is.
//
//go:noinline
func (c *Cluster) meshHop(src, dst int, buf []int32) []int32 {
	g := c.Spec.GPUsPerNode
	if node := quo(src, g, c.gpuShift); node == quo(dst, g, c.gpuShift) {
		return append(buf, int32(c.offPair+src*g+dst-node*g))
	}
	return append(buf, int32(src), int32(c.offPortIn+dst))
}

// SwitchOut and SwitchIn are the GPU port resources used to talk to the NVSwitch
// itself (in-switch reduction and multicast).
func (c *Cluster) SwitchOut(gpu int) int32 { return int32(gpu) }
func (c *Cluster) SwitchIn(gpu int) int32  { return int32(c.offPortIn + gpu) }

func (c *Cluster) leaf(node, nic int) int {
	grp := quo(node, c.nodesLeaf, c.leafShift)
	if c.Spec.Network.RailOptimized {
		return grp*c.Spec.NICs.PerNode + nic
	}
	return grp
}

// Describe names resource r for explanations ("node 3 nic 1 out").
func (c *Cluster) Describe(r int32) string {
	i := int(r)
	g := c.Spec.GPUsPerNode
	nics := max(1, c.Spec.NICs.PerNode)
	switch c.Kind(r) {
	case GPUPortOut:
		return fmt.Sprintf("node %d gpu %d port out", i/g, i%g)
	case GPUPortIn:
		i -= c.offPortIn
		return fmt.Sprintf("node %d gpu %d port in", i/g, i%g)
	case PairLink:
		i -= c.offPair
		return fmt.Sprintf("node %d link gpu %d→%d", i/(g*g), (i/g)%g, i%g)
	case NICOut:
		i -= c.offNICOut
		return fmt.Sprintf("node %d nic %d out", i/nics, i%nics)
	case NICIn:
		i -= c.offNICIn
		return fmt.Sprintf("node %d nic %d in", i/nics, i%nics)
	case LeafUp:
		return fmt.Sprintf("leaf %d uplink", i-c.offLeafUp)
	default:
		return fmt.Sprintf("leaf %d downlink", i-c.offLeafDown)
	}
}

// Hop is Path's latency and network crossing alone, for a transfer from GPU src
// to GPU dst: the same sums in the same order, without the resources.
func (c *Cluster) Hop(src, dst int) (float64, bool) {
	if src == dst {
		return 0, false
	}
	g := c.Spec.GPUsPerNode
	sn, dn := quo(src, g, c.gpuShift), quo(dst, g, c.gpuShift)
	if sn == dn || quo(sn, c.domainNodes, c.domainShift) == quo(dn, c.domainNodes, c.domainShift) {
		return c.IntraLatUs, false
	}
	lat := c.NetLatUs
	srcNIC, dstNIC := c.gpuNIC[src-sn*g], c.gpuNIC[dst-dn*g]
	if c.Spec.Network.RailOptimized && srcNIC != dstNIC {
		lat += c.IntraLatUs
		srcNIC = dstNIC
	}
	if c.leaf(sn, srcNIC) != c.leaf(dn, dstNIC) {
		lat += c.SpineLatUs
	}
	return lat, true
}

// UnitGPUs is the GPUs of a translation unit: lcm(nodes per leaf, nodes per
// domain) consecutive nodes, 0 where none holds. A unit holds whole leaf groups,
// scale-up domains and nodes, and every resource belongs to one unit (a GPU's
// ports and mesh links and a NIC to its node's, a leaf's up- and downlinks to its
// leaf group's). Moving both ends of a transfer by a whole number of units moves
// every resource Path returns by as many units — the same local GPUs, NICs, rail
// and proxy, the same domain and leaf relations — with the same latency; on a
// cluster with no degraded or shared resource the moved resources have the same
// capacities. Two units whose transfers are the same, relative to each unit and
// in the same order, then carry the same loads bit for bit. 0 on a degraded or
// loaded cluster (capacities differ resource by resource) and on one without NICs
// (its transfers between nodes share one resource index).
func (c *Cluster) UnitGPUs() int {
	if len(c.scaled) > 0 || c.Spec.NICs.PerNode == 0 {
		return 0
	}
	a, b := c.nodesLeaf, c.domainNodes
	for x, y := a, b; ; {
		if y == 0 {
			return a / x * b * c.Spec.GPUsPerNode
		}
		x, y = y, x%y
	}
}
