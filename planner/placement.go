package planner

import (
	"fmt"
	"slices"

	"github.com/stepcost/stepcost/estimator/invalid"
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
