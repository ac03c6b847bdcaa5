package planner

import (
	"fmt"
	"slices"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

// FreeMap says which GPUs of each node are free: node index → local GPU indices.
// A nil map means the whole cluster is free.
type FreeMap map[int][]int

// validate checks node and GPU indices against the cluster.
func (f FreeMap) validate(c *topology.Cluster) error {
	for _, node := range sortedNodes(f) {
		if node < 0 || node >= c.Spec.Nodes {
			return invalid.Field(fmt.Sprintf("free_gpus[%d]", node), "node %d is not in the cluster's %d nodes", node, c.Spec.Nodes)
		}
		if _, why := CheckNodeGPUs(f[node], c.Spec.GPUsPerNode); why != "" {
			return invalid.Field(fmt.Sprintf("free_gpus[%d]", node), "%s", why)
		}
	}
	return nil
}

// CheckNodeGPUs is the rule of one node's free GPUs: each is a GPU of the node (0
// to gpusPerNode-1), none listed twice. It returns the index of the first entry
// that breaks it and why, or -1 and "".
func CheckNodeGPUs(gpus []int, gpusPerNode int) (int, string) {
	seen := make(map[int]bool, len(gpus))
	for i, g := range gpus {
		if g < 0 || g >= gpusPerNode {
			return i, fmt.Sprintf("must be a GPU of the node, 0 to %d (got %d)", gpusPerNode-1, g)
		}
		if seen[g] {
			return i, fmt.Sprintf("GPU %d is listed twice", g)
		}
		seen[g] = true
	}
	return -1, ""
}

func sortedNodes(f FreeMap) []int {
	out := make([]int, 0, len(f))
	for n := range f {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// NodeUse is one node's part of a placement: the local GPUs the job takes.
type NodeUse struct {
	Node int   `json:"node"`
	GPUs []int `json:"gpus"`
}

// Placement is where a plan's ranks run.
type Placement struct {
	// Nodes is the compact per-node summary a scheduler applies.
	Nodes []NodeUse `json:"nodes"`
	// Ranks[r] is the global GPU id (node × GPUs per node + local) of rank r.
	Ranks []int `json:"-"`
	// WholeNodes is how many nodes the job fills completely; PartialNodes how many it
	// shares; FreeWholeNodes how many whole nodes it leaves free.
	WholeNodes     int `json:"whole_nodes"`
	PartialNodes   int `json:"partial_nodes"`
	FreeWholeNodes int `json:"free_whole_nodes_left"`
	// Leaves is how many leaf-switch groups the job spans: its traffic between them
	// crosses the spine.
	Leaves int `json:"leaves"`
	// DegradedUsed are the request's degraded nodes the job runs on (priced with
	// their degradation); DegradedAvoided those with free GPUs it leaves out.
	DegradedUsed    []int `json:"degraded_nodes_used,omitempty"`
	DegradedAvoided []int `json:"degraded_nodes_avoided,omitempty"`
}

// placements are the placements the search tries for a job of n GPUs: without a
// free map the first nodes; with one, the packing placement of placeBy (partially
// free nodes first, whole nodes kept free) and a compact one that spans the fewest
// leaf switches (the best-fitting leaf group when the job fits in one, whole nodes
// first, so every rail carries the same share), when they differ. Either may win:
// packing keeps the cluster whole for other jobs, compact keeps the job's traffic
// off the spine and its TP groups on whole nodes.
func placements(c *topology.Cluster, free FreeMap, n, tp int) []*Placement {
	pack := placeBy(c, free, n, tp, false)
	if free == nil {
		if pack == nil {
			return nil
		}
		return []*Placement{pack}
	}
	compact := placeBy(c, free, n, tp, true)
	switch {
	case pack == nil && compact == nil:
		return nil
	case pack == nil:
		return []*Placement{compact}
	case compact == nil || slices.Equal(pack.Ranks, compact.Ranks):
		return []*Placement{pack}
	}
	return []*Placement{pack, compact}
}

// placeBy picks n GPUs for a job whose TP groups (tp consecutive ranks) must each sit
// inside one node. Without a free map it takes the first nodes in order. With one,
// only whole TP groups of a node's free GPUs are usable, and the order is either the
// packing one, which keeps fragmentation low (partially free nodes first, the fullest
// first, then whole free nodes in index order), or with compact the fewest-leaves
// one; ranks fill each chosen node in local-GPU order, so TP groups and pipeline
// neighbours stay close. It returns nil if the free GPUs cannot host the job.
func placeBy(c *topology.Cluster, free FreeMap, n, tp int, compact bool) *Placement {
	g := c.Spec.GPUsPerNode
	type cand struct {
		node  int
		gpus  []int
		whole bool
	}
	var cands []cand
	if free == nil {
		all := make([]int, g) // every node's GPUs, shared: read only
		for i := range all {
			all[i] = i
		}
		cands = make([]cand, c.Spec.Nodes)
		for node := range cands {
			cands[node] = cand{node, all, true}
		}
	} else {
		for _, node := range sortedNodes(free) {
			gs := slices.Clone(free[node])
			slices.Sort(gs)
			usable := len(gs)
			if tp <= g {
				usable = len(gs) / tp * tp
			} else if len(gs) != g {
				usable = 0 // a TP group over several nodes needs whole nodes
			}
			if usable == 0 {
				continue
			}
			cands = append(cands, cand{node, gs[:usable], len(gs) == g})
		}
		slices.SortStableFunc(cands, func(a, b cand) int {
			switch {
			case a.whole != b.whole:
				if !a.whole {
					return -1
				}
				return 1
			case len(a.gpus) != len(b.gpus):
				return len(b.gpus) - len(a.gpus)
			}
			return a.node - b.node
		})
		if compact {
			// Leaf groups by usable GPUs: the smallest that hosts the whole job, or
			// else the largest first; whole nodes first inside each.
			usable := map[int]int{}
			for _, cd := range cands {
				usable[c.Leaf(cd.node)] += len(cd.gpus)
			}
			fit := -1
			for leaf, u := range usable {
				if u >= n && (fit < 0 || u < usable[fit] || u == usable[fit] && leaf < fit) {
					fit = leaf
				}
			}
			slices.SortStableFunc(cands, func(a, b cand) int {
				la, lb := c.Leaf(a.node), c.Leaf(b.node)
				switch {
				case la == lb:
				case la == fit:
					return -1
				case lb == fit:
					return 1
				case usable[la] != usable[lb]:
					return usable[lb] - usable[la]
				default:
					return la - lb
				}
				switch {
				case a.whole != b.whole:
					if a.whole {
						return -1
					}
					return 1
				case len(a.gpus) != len(b.gpus):
					return len(b.gpus) - len(a.gpus)
				}
				return a.node - b.node
			})
		}
	}
	p := &Placement{}
	need := n
	gpus := make([]int, 0, n) // every node's list, one array: n entries in all
	for _, cd := range cands {
		if need == 0 {
			break
		}
		take := min(need, len(cd.gpus))
		if tp <= g {
			take = take / tp * tp
		}
		if take == 0 {
			continue
		}
		start := len(gpus)
		gpus = append(gpus, cd.gpus[:take]...)
		p.Nodes = append(p.Nodes, NodeUse{Node: cd.node, GPUs: gpus[start:len(gpus):len(gpus)]})
		need -= take
	}
	if need > 0 {
		return nil
	}
	// Ranks in node order so that pipeline stages land on neighbouring nodes.
	slices.SortFunc(p.Nodes, func(a, b NodeUse) int { return a.Node - b.Node })
	p.Ranks = make([]int, 0, n)
	for _, u := range p.Nodes {
		for _, l := range u.GPUs {
			p.Ranks = append(p.Ranks, u.Node*g+l)
		}
		freeHere := g
		if free != nil {
			freeHere = len(free[u.Node])
		}
		if len(u.GPUs) == g {
			p.WholeNodes++
		} else if len(u.GPUs) < freeHere || freeHere < g {
			p.PartialNodes++
		}
	}
	leaves := map[int]bool{}
	for _, u := range p.Nodes {
		leaves[c.Leaf(u.Node)] = true
	}
	p.Leaves = len(leaves)
	if free == nil {
		p.FreeWholeNodes = c.Spec.Nodes - len(p.Nodes)
	} else {
		used := make(map[int]bool, len(p.Nodes))
		for _, u := range p.Nodes {
			used[u.Node] = true
		}
		for node, gs := range free {
			if len(gs) == g && !used[node] {
				p.FreeWholeNodes++
			}
		}
	}
	return p
}

// without returns the free map (the whole cluster when f is nil) minus the given
// nodes; f is not modified.
func (f FreeMap) without(c *topology.Cluster, nodes []int) FreeMap {
	out := FreeMap{}
	if f == nil {
		all := make([]int, c.Spec.GPUsPerNode)
		for g := range all {
			all[g] = g
		}
		for n := range c.Spec.Nodes {
			out[n] = all
		}
	} else {
		for n, gs := range f {
			out[n] = gs
		}
	}
	for _, n := range nodes {
		delete(out, n)
	}
	return out
}

// busy returns the GPUs other jobs hold under the free map — every GPU it does not
// list — but for the excluded nodes (failed or drained: idle); nil without a map.
func (f FreeMap) busy(c *topology.Cluster, excluded []int) map[int][]int {
	if f == nil {
		return nil
	}
	g := c.Spec.GPUsPerNode
	out := map[int][]int{}
	for node := range c.Spec.Nodes {
		if len(f[node]) == g || slices.Contains(excluded, node) {
			continue
		}
		var gs []int
		for l := range g {
			if !slices.Contains(f[node], l) {
				gs = append(gs, l)
			}
		}
		out[node] = gs
	}
	return out
}

// clusterFor is the cluster a placement is priced on: with other jobs on the free
// map's busy GPUs, a copy whose leaves keep for the job what their traffic leaves
// it. A leaf's uplinks (and the spine's downlinks into it) carry U = its ports' NIC
// bandwidth ÷ the oversubscription; every busy GPU's share of its NIC is taken to
// send across the spine at the NIC's rate b (the neighbours' worst case: an
// all-to-all or a data-parallel ring over leaves), and the uplinks are shared
// max-min fairly between their ports — the rule the collective model applies to
// flows on one link. With B busy and J job ports on the leaf (in NICs), the busy
// ports take min(b, U/(J + B)) each and the job keeps max(U − B·b, U·J/(J + B)).
// Without a free map, NICs or a job across leaves the request's cluster is
// returned; e keeps one loaded cluster per request cluster and shares
// (step.Estimator.LoadedCluster), so that its placements are reused.
func (r *Request) clusterFor(e *step.Estimator, pl *Placement) (*topology.Cluster, error) {
	c := r.Cluster
	nics := c.Spec.NICs.PerNode
	if len(r.busy) == 0 || nics == 0 || pl.Leaves < 2 {
		// A job inside one scalable unit never crosses the spine.
		return c, nil
	}
	g := c.Spec.GPUsPerNode
	perNIC := make([]float64, nics) // local GPUs behind each NIC
	for l := range g {
		perNIC[c.LocalNIC(l)]++
	}
	busy, job := make([]float64, c.Leaves()), make([]float64, c.Leaves())
	for node, gs := range r.busy {
		for _, l := range gs {
			nic := c.LocalNIC(l)
			busy[c.LeafOf(node, nic)] += 1 / perNIC[nic]
		}
	}
	for _, u := range pl.Nodes {
		for _, l := range u.GPUs {
			nic := c.LocalNIC(l)
			job[c.LeafOf(u.Node, nic)] += 1 / perNIC[nic]
		}
	}
	shares := map[int]float64{}
	least, busyPorts := 1.0, 0.0
	for leaf, j := range job {
		b := busy[leaf]
		if j == 0 || b == 0 {
			continue
		}
		up := c.LeafBW
		left := max(up-b*c.NICBW, up*j/(j+b))
		if f := left / up; f < 1 {
			shares[leaf] = f
			least = min(least, f)
			busyPorts += b
		}
	}
	if len(shares) == 0 {
		return c, nil
	}
	return e.LoadedCluster(c, shares, fmt.Sprintf("%.0f busy NICs on the job's %d loaded leaf switches send across the spine at their rate; the job keeps %.0f%% or more of those leaves' uplinks",
		busyPorts, len(shares), 100*least))
}
