package collective

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Placement is a group of GPUs on a cluster together with the groups that run the
// same collective at the same time (the 8 data-parallel rings of a TP=8 job, say),
// which share NICs and switch uplinks with it. It computes, per communication
// pattern, the contention coefficients the closed form needs the first time a
// pattern is priced (a pipeline's send/recv pairs never need the ring's), so that
// pricing one collective on it is then a handful of arithmetic operations. A
// Placement is immutable after Place returns, but for those coefficients filled in
// once each, and safe for concurrent use.
type Placement struct {
	Cluster *topology.Cluster
	// Ranks are the group's global GPU ids in ring order (by node, then local index).
	Ranks []int
	// Siblings are every concurrent group, this one included, each in ring order and
	// of the same size as Ranks — or, placed by PlaceDomainImages, those of one
	// scale-up domain, whose images in the other domains load those domains alike.
	Siblings [][]int
	// Concurrent is how many groups run at once, this one included.
	Concurrent int
	Shape      Shape

	Domains   int  // scale-up domains (nodes) the group spans
	PerDomain int  // ranks per domain (the largest)
	Uniform   bool // every domain holds PerDomain ranks
	// DomainGPUs is the number of GPUs each scale-up domain has (a single-domain group
	// smaller than its domain cannot use the switch's multicast as a whole node does).
	DomainGPUs int

	// loaded are the sibling groups whose flows the coefficients place: all of them
	// when the groups cross the network (they share NICs and switch uplinks), one per
	// distinct arrangement inside its domain otherwise (see representatives).
	loaded [][]int
	// railImages says the loaded groups are images, on other rails, of those on the
	// first group's rail (railImages): the coefficients place the flows of rep
	// alone, and imageOf[k] is the group of rep whose image loaded[k] is.
	railImages bool
	rep        [][]int
	imageOf    []int32

	coef coefficients
	once [numFamilies]sync.Once
	auto autoState // what Auto's bounds keep (autobound.go)

	// maxCTAs is the communicator's ncclConfig_t.maxCTAs this placement's channels
	// are capped at (0: NCCL's own count); capMu guards capped, the placements of
	// the same groups under each cap asked for (withMaxCTAs).
	maxCTAs int
	capMu   sync.Mutex
	capped  map[int]*Placement
}

// withMaxCTAs is the placement of the same groups on a communicator whose NCCL
// maxCTAs is n: NCCL runs its rings and trees on at most n channels
// (src/graph/connect.cc, ncclTopoPostset: comm->nChannels = min(ncclMaxNchannels(),
// nChannels, comm->config.maxCTAs)) and its NVLS algorithms on at most n
// (src/transport/nvls.cc: nvlsChannels clamped to [minCTAs, maxCTAs]; NVIDIA/nccl
// 5067397), so a ring that crossed the network through one GPU's NIC per channel
// crosses it through n of them. The placement itself where n does not bind. Its
// coefficients are its own, computed on first use like the uncapped ones.
func (p *Placement) withMaxCTAs(n int) *Placement {
	if n <= 0 || p.maxCTAs > 0 || n >= p.coef.channels && n >= p.ncclNVLSChannels() {
		return p
	}
	p.capMu.Lock()
	defer p.capMu.Unlock()
	if q, ok := p.capped[n]; ok {
		return q
	}
	q := &Placement{Cluster: p.Cluster, Ranks: p.Ranks, Siblings: p.Siblings, Concurrent: p.Concurrent,
		Shape: p.Shape, Domains: p.Domains, PerDomain: p.PerDomain, Uniform: p.Uniform, DomainGPUs: p.DomainGPUs,
		loaded: p.loaded, railImages: p.railImages, rep: p.rep, imageOf: p.imageOf, maxCTAs: n}
	q.coef.channels = min(p.coef.channels, n)
	if p.capped == nil {
		p.capped = map[int]*Placement{}
	}
	p.capped[n] = q
	return q
}

// nvlsChannels is the NVLS channels the placement's communicator runs: NCCL's
// count for the generation and release (ncclNVLSChannels), at most its maxCTAs.
func (p *Placement) nvlsChannels() int {
	n := p.ncclNVLSChannels()
	if p.maxCTAs > 0 {
		n = min(n, p.maxCTAs)
	}
	return n
}

// ncclNVLSChannels is NCCL's NVLS_NCHANNELS default for the communicator, by the
// cluster's stated release (src/transport/nvls.cc ncclNvlsInit): 16 on every GPU
// up to v2.24 (v2.23.4-1, v2.24.3-1); on compute capability 10, 32 in v2.25 and
// v2.26 (NVLS_NCHANNELS_SM100, v2.25.1-1 to v2.26.6-1) and from v2.27 32 when the
// communicator spans more than one scale-up domain (a host, or an MNNVL clique) and
// NVLS_NCHANNELS_SM100_NVL = 24 inside one (v2.27.3-1 to v2.29.7-1), the rule of
// the newest releases when none is stated. Hopper keeps 16 (NVLS_NCHANNELS_SM90).
func (p *Placement) ncclNVLSChannels() int {
	if p.Cluster.GPU().Arch != hardware.Blackwell {
		return nvlsChannels(p.Cluster.GPU().Arch)
	}
	if major, minor, ok := p.Cluster.Spec.NCCLRelease(); ok && major == 2 {
		switch {
		case minor < 25:
			return 16
		case minor < 27:
			return 32
		}
	}
	if p.Domains > 1 {
		return 32
	}
	return nvlsChannels(hardware.Blackwell)
}

// Place validates a group (global GPU ids, any order, no duplicates) and the groups
// running concurrently with it (which may be nil; they must be disjoint from each
// other, of the same size, and include or exclude group — both work).
func Place(c *topology.Cluster, group []int, concurrent [][]int) (*Placement, error) {
	if c == nil {
		return nil, invalid.Field("cluster", "is required")
	}
	ranks := ringOrder(group)
	if err := checkGroup(c, func() string { return "group" }, group, ranks); err != nil {
		return nil, err
	}
	p := &Placement{Cluster: c, Ranks: ranks}
	// owner[g] is 0 for a free GPU, 1 for the group's, i+2 for concurrent[i]'s (a
	// slice, not a map: a placement on 16 384 GPUs lists all of them), recycled and
	// zeroed again where it was set.
	owner := getOwners(c.GPUs())
	var checking []int // the concurrent group being checked
	defer func() { putOwners(owner, p.Siblings, checking) }()
	for _, g := range p.Ranks {
		owner[g] = 1
	}
	p.Siblings = make([][]int, 1, len(concurrent)+1)
	p.Siblings[0] = p.Ranks
	// The concurrent groups' copies share one array: a data-parallel group of 2 on
	// 100 000 GPUs has 50 000 of them.
	var backing []int
	if len(concurrent) > 0 {
		backing = make([]int, 0, len(concurrent)*len(group))
	}
	for i, g := range concurrent {
		// The field's name only when it is at fault: a placement on thousands of GPUs
		// checks thousands of groups.
		field := func() string { return fmt.Sprintf("concurrent[%d]", i) }
		var o []int
		if len(backing)+len(g) <= cap(backing) {
			start := len(backing)
			backing = append(backing, g...)
			o = backing[start:len(backing):len(backing)]
			if !slices.IsSorted(o) {
				slices.Sort(o)
			}
		} else {
			o = ringOrder(g) // a group of another size: refused below
		}
		if err := checkGroup(c, field, g, o); err != nil {
			return nil, err
		}
		if len(g) != len(group) {
			return nil, invalid.Field(field(), "must have as many ranks as the group (%d), got %d", len(group), len(g))
		}
		if slices.Equal(o, p.Ranks) {
			continue // the group itself
		}
		checking = o
		for _, r := range o {
			switch j := owner[r]; {
			case j == 1:
				return nil, invalid.Field(field(), "shares GPU %d with the group", r)
			case j > 1:
				return nil, invalid.Field(field(), "shares GPU %d with concurrent[%d]", r, j-2)
			}
			owner[r] = int32(i + 2)
		}
		p.Siblings = append(p.Siblings, o)
	}
	p.finish()
	return p, nil
}

// PlaceGroups is Place for groups the caller vouches for and hands over: groups[0]
// is the group and the others run at once with it, all disjoint and of one size.
// Their arrays become the placement's — each put in ring order in place if it is
// not — and are neither copied nor checked for shared GPUs: a search places the
// groups of its own rank grids, up to 50 000 of them a placement on 100 000 GPUs.
// The caller must not change them afterwards.
func PlaceGroups(c *topology.Cluster, groups [][]int) (*Placement, error) {
	if c == nil {
		return nil, invalid.Field("cluster", "is required")
	}
	if len(groups) == 0 || len(groups[0]) == 0 {
		return nil, invalid.Field("group", "must list at least one GPU")
	}
	n := len(groups[0])
	field := func(i int) string {
		if i == 0 {
			return "group"
		}
		return fmt.Sprintf("concurrent[%d]", i-1)
	}
	for i, g := range groups {
		if len(g) != n {
			return nil, invalid.Field(field(i), "must have as many ranks as the group (%d), got %d", n, len(g))
		}
		if !slices.IsSorted(g) {
			slices.Sort(g)
		}
		if g[0] < 0 || g[n-1] >= c.GPUs() {
			return nil, invalid.Field(field(i), "GPUs %d to %d reach outside the cluster's %d GPUs", g[0], g[n-1], c.GPUs())
		}
	}
	p := &Placement{Cluster: c, Ranks: groups[0], Siblings: groups}
	p.finish()
	return p, nil
}

// finish derives what the coefficients need from the ranks and siblings.
func (p *Placement) finish() {
	c := p.Cluster
	p.Shape = shapeOf(c, p.Ranks)
	p.DomainGPUs = c.DomainGPUs()
	// Ranks in ring order number their domains in runs (shapeOf).
	p.Uniform = true
	for i := 0; i < len(p.Shape.Node); {
		j := i
		for j < len(p.Shape.Node) && p.Shape.Node[j] == p.Shape.Node[i] {
			j++
		}
		if p.Domains > 0 && j-i != p.PerDomain {
			p.Uniform = false
		}
		p.Domains++
		p.PerDomain = max(p.PerDomain, j-i)
		i = j
	}
	p.Concurrent = len(p.Siblings)
	p.loaded = representatives(c, p.Siblings, p.Domains)
	p.rep, p.imageOf = railImages(c, p.loaded)
	p.railImages = p.rep != nil
	p.coef.channels = ringChannels(p)
}

// PlaceDomainImages is Place for groups that each stay inside one scale-up domain
// and repeat from domain to domain: concurrent lists the groups of the group's own
// domain, and every other group running at once — total in all, the group
// included — is the image of one of them in another domain (the same local GPUs).
// A group inside a domain loads only its own GPUs' ports (or mesh links), so the
// images load their domains exactly as the listed groups load theirs, and the
// contention coefficients — the most loaded link — are those of the listed groups:
// a TP group of a 100 000-GPU job is placed with the 8 GPUs of its node, not all
// of them. The caller vouches for the images; the listed groups must each stay in
// one domain.
func PlaceDomainImages(c *topology.Cluster, group []int, concurrent [][]int, total int) (*Placement, error) {
	p, err := Place(c, group, concurrent)
	if err != nil {
		return nil, err
	}
	for _, g := range p.Siblings {
		if !c.SameDomain(c.Node(g[0]), c.Node(g[len(g)-1])) {
			return nil, invalid.Field("concurrent", "a group spans scale-up domains: its images would not load their domains alike")
		}
	}
	if total < len(p.Siblings) {
		return nil, invalid.Field("total", "must count at least the %d groups listed (got %d)", len(p.Siblings), total)
	}
	p.Concurrent = total
	return p, nil
}

// ownersPool recycles Place's per-GPU owner arrays (400 KB on 100 000 GPUs, for
// every group a search places).
var ownersPool sync.Pool

// getOwners returns an all-zero owner array of n entries.
func getOwners(n int) []int32 {
	if o, ok := ownersPool.Get().(*[]int32); ok && cap(*o) >= n {
		return (*o)[:n]
	}
	return make([]int32, n)
}

// putOwners zeroes the entries Place set — the GPUs of the groups placed, and of
// the one it was checking when it failed — and recycles the array.
func putOwners(owner []int32, placed [][]int, checking []int) {
	for _, g := range placed {
		for _, r := range g {
			owner[r] = 0
		}
	}
	for _, r := range checking {
		owner[r] = 0
	}
	ownersPool.Put(&owner)
}

// representatives returns the sibling groups whose flows decide the contention
// coefficients. Groups that each stay inside one scale-up domain use only their own
// GPUs' switch ports (or mesh links), which no other group touches, so the most
// loaded link of all of them is the most loaded link of one group of each
// arrangement — the same local GPUs of a domain give the same loads: a TP group of
// 8 on 2048 nodes is placed once, not 2048 times. Groups that cross the network
// share NICs and leaf links, and are all placed.
func representatives(c *topology.Cluster, siblings [][]int, domains int) [][]int {
	if domains != 1 {
		return siblings
	}
	dom := c.DomainGPUs()
	seen := map[string]bool{}
	var out [][]int
	key := make([]byte, 0, 64)
	for _, g := range siblings {
		if !c.SameDomain(c.Node(g[0]), c.Node(g[len(g)-1])) {
			return siblings // a sibling crosses domains: no shortcut
		}
		key = key[:0]
		for _, r := range g {
			key = binary.AppendUvarint(key, uint64(r%dom))
		}
		if !seen[string(key)] {
			seen[string(key)] = true
			out = append(out, g)
		}
	}
	return out
}

// railImages tells whether groups are images of one another on disjoint rails:
// those whose first rank has the same local index form a class, and the groups of
// each class, in order, lie on the same nodes rank by rank as those of the first
// class, their local GPU indices mapped one to one by one map per class onto
// indices no other class uses — the data-parallel groups of a job with TP = GPUs
// per node, one per rail, or the pairs of a pipeline or context-parallel exchange
// between nodes, thousands per rail, or the data-parallel groups of TP 4, two GPUs
// of a node each. Where every index used has a rail of its own
// (topology.DisjointRails) and, for groups of several indices, is the only GPU on
// its NIC (so that a transfer to another rail's GPU goes through that GPU, PXN),
// a class's flows load its own GPUs' ports and its own rails' NICs and leaves and no
// other class's, by the same amounts in the same order as the first class's flows
// load the first class's, with the same latencies. The most loaded link, the
// slowest hop and whether a flow leaves the domain are then those of the first
// class's flows alone, and a ring's byte-weighted sums are their terms added again
// in the order of every group (loads.repeat). It returns the first class's groups
// (rep) and, for each group, which of them it is the image of; nil if the groups
// are not such images.
func railImages(c *topology.Cluster, groups [][]int) (rep [][]int, imageOf []int32) {
	g := c.Spec.GPUsPerNode
	if len(groups) < 2 {
		return nil, nil
	}
	class := make([]int, g) // a first rank's local index → its class + 1
	var count []int32       // groups of each class so far
	imageOf = make([]int32, len(groups))
	for k, grp := range groups {
		loc := c.Local(grp[0])
		if class[loc] == 0 {
			count = append(count, 0)
			class[loc] = len(count)
		}
		ci := class[loc] - 1
		imageOf[k] = count[ci]
		count[ci]++
	}
	if len(count) < 2 {
		return nil, nil
	}
	for _, n := range count {
		if n != count[0] {
			return nil, nil
		}
	}
	first := c.Local(groups[0][0])
	rep = make([][]int, 0, count[0])
	for _, grp := range groups {
		if c.Local(grp[0]) == first {
			rep = append(rep, grp)
		}
	}
	owner, several, ok := shiftImages(c, groups, rep, imageOf, class)
	if !ok {
		if owner, several, ok = mappedImages(c, groups, rep, imageOf, class, len(count)); !ok {
			return nil, nil
		}
	}
	for a := range g {
		if owner[a] == 0 {
			continue
		}
		for b := range g {
			if b == a {
				continue
			}
			if owner[b] != 0 && !c.DisjointRails(a, b) {
				return nil, nil
			}
			if several && c.LocalNIC(b) == c.LocalNIC(a) {
				return nil, nil // a proxy for a's rail might be another GPU
			}
		}
	}
	return rep, imageOf
}

// shiftImages is railImages' check where every group is its image shifted by the
// same local offset as its class's first group (r = its image's rank + δ, rank by
// rank): one comparison a rank. It returns 1 + the class using each local index,
// and whether a group holds several; ok false if the groups are not such shifts.
func shiftImages(c *topology.Cluster, groups, rep [][]int, imageOf []int32, class []int) (owner []int, several, ok bool) {
	g := c.Spec.GPUsPerNode
	delta := make([]int, g) // by class; set from each class's first group
	set := make([]bool, g)
	for k, grp := range groups {
		ci := class[c.Local(grp[0])] - 1
		first := rep[imageOf[k]]
		if !set[ci] {
			delta[ci], set[ci] = grp[0]-first[0], true
		}
		d := delta[ci]
		for i, r := range grp {
			if r != first[i]+d {
				return nil, false, false
			}
		}
	}
	// The first class's local indices, each class's shifted onto the same nodes
	// (inside 0…g−1) and onto indices of its own.
	var locals []int
	seen := make([]bool, g)
	for _, grp := range rep {
		for _, r := range grp {
			if l := c.Local(r); !seen[l] {
				seen[l] = true
				locals = append(locals, l)
			}
		}
	}
	owner = make([]int, g)
	for ci := range g {
		if !set[ci] {
			continue
		}
		for _, l := range locals {
			m := l + delta[ci]
			if m < 0 || m >= g || owner[m] != 0 {
				return nil, false, false
			}
			owner[m] = ci + 1
		}
	}
	return owner, len(locals) > 1, true
}

// mappedImages is railImages' check for any one-to-one map of local indices per
// class, rank by rank on the same nodes.
func mappedImages(c *topology.Cluster, groups, rep [][]int, imageOf []int32, class []int, classes int) (owner []int, several, ok bool) {
	g := c.Spec.GPUsPerNode
	// phi[ci·g + a] is 1 + the local index class ci puts where the first class has
	// a; owner[b] is 1 + the class that uses local index b.
	phi := make([]int, classes*g)
	owner = make([]int, g)
	for k, grp := range groups {
		ci := class[grp[0]%g] - 1
		m := phi[ci*g : (ci+1)*g]
		for i, r := range grp {
			a := rep[imageOf[k]][i]
			if a/g != r/g {
				return nil, false, false
			}
			la, lb := a%g, r%g
			switch {
			case m[la] == 0:
				if owner[lb] != 0 {
					return nil, false, false
				}
				m[la], owner[lb] = lb+1, ci+1
			case m[la] != lb+1:
				return nil, false, false
			}
			several = several || r%g != grp[0]%g
		}
	}
	return owner, several, true
}

// placed returns the groups whose flows the coefficients place.
func (p *Placement) placed() [][]int {
	if p.railImages {
		return p.rep
	}
	return p.loaded
}

// checkGroup checks group g, whose ids in ring order are o, naming field() at fault.
func checkGroup(c *topology.Cluster, field func() string, g, o []int) error {
	if len(g) == 0 {
		return invalid.Field(field(), "must list at least one GPU")
	}
	if o[0] < 0 || o[len(o)-1] >= c.GPUs() {
		for i, r := range g {
			if r < 0 || r >= c.GPUs() {
				return invalid.Field(fmt.Sprintf("%s[%d]", field(), i), "GPU %d is outside the cluster's %d GPUs", r, c.GPUs())
			}
		}
	}
	// Repeats, found in ring order (sorted) rather than with a set per group.
	for k := 1; k < len(o); k++ {
		if o[k] == o[k-1] {
			i := len(g) - 1
			for g[i] != o[k] { // its last listing
				i--
			}
			return invalid.Field(fmt.Sprintf("%s[%d]", field(), i), "GPU %d is listed twice", o[k])
		}
	}
	return nil
}

// ringOrder sorts global ids: by node then local index, which is also the order in
// which NCCL connects a ring (one entry and one exit per node).
func ringOrder(g []int) []int {
	o := slices.Clone(g)
	if !slices.IsSorted(o) {
		slices.Sort(o)
	}
	return o
}

// shapeOf numbers the scale-up domains of ranks 0, 1, 2, … in order of appearance.
func shapeOf(c *topology.Cluster, ranks []int) Shape {
	sh := Shape{Node: make([]int32, len(ranks))}
	dom := int32(-1)
	prevNode := -1
	for i, g := range ranks {
		n := c.Node(g)
		if prevNode < 0 || !c.SameDomain(prevNode, n) {
			dom++
		}
		prevNode = n
		sh.Node[i] = dom
	}
	return sh
}

// N is the group size.
func (p *Placement) N() int { return len(p.Ranks) }

// CheckNodeGroup is the rule of the group NodeGroups builds on nodes of
// gpusPerNode GPUs, apart from its fit in a cluster: at least one node (field
// "nodes"), and perNode GPUs of each that divide the node's (field
// "gpus_per_node"). A caller that sizes a cluster by nodes checks it first.
func CheckNodeGroup(nodes, perNode, gpusPerNode int) error {
	if err := checkNodes(nodes); err != nil {
		return err
	}
	if perNode < 1 || perNode > gpusPerNode || gpusPerNode%perNode != 0 {
		return invalid.Field("gpus_per_node", "must divide the %d GPUs of a node (got %d)", gpusPerNode, perNode)
	}
	return nil
}

func checkNodes(nodes int) error {
	if nodes < 1 {
		return invalid.Field("nodes", "must be at least 1 (got %d)", nodes)
	}
	return nil
}

// fitNodes refuses more nodes than the cluster has.
func fitNodes(c *topology.Cluster, nodes int) error {
	if nodes > c.Spec.Nodes {
		return invalid.Field("nodes", "must be at most the cluster's %d nodes (got %d)", c.Spec.Nodes, nodes)
	}
	return nil
}

// NodeGroups returns, for a cluster, the group made of the first perNode GPUs of each
// of the first nodes nodes, and the concurrent groups that fill the rest of those
// nodes' GPUs the same way (local GPU offsets shifted by perNode): the usual shape of
// TP-then-DP layouts. perNode must divide the GPUs per node.
func NodeGroups(c *topology.Cluster, nodes, perNode int, concurrent bool) (group []int, siblings [][]int, err error) {
	g := c.Spec.GPUsPerNode
	if err := CheckNodeGroup(nodes, perNode, g); err != nil {
		return nil, nil, err
	}
	if err := fitNodes(c, nodes); err != nil {
		return nil, nil, err
	}
	build := func(off int) []int {
		out := make([]int, 0, nodes*perNode)
		for n := range nodes {
			for l := range perNode {
				out = append(out, n*g+off+l)
			}
		}
		return out
	}
	group = build(0)
	if concurrent {
		for off := perNode; off < g; off += perNode {
			siblings = append(siblings, build(off))
		}
	}
	return group, siblings, nil
}

// RailGroups returns groups of one GPU per node: group l holds local GPU l of every
// node, the data-parallel groups of a job with TP = GPUs per node.
func RailGroups(c *topology.Cluster, nodes int) ([][]int, error) {
	if err := checkNodes(nodes); err != nil {
		return nil, err
	}
	if err := fitNodes(c, nodes); err != nil {
		return nil, err
	}
	g := c.Spec.GPUsPerNode
	out := make([][]int, g)
	for l := range g {
		for n := range nodes {
			out[l] = append(out[l], n*g+l)
		}
	}
	return out, nil
}
