package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// placements are the placements the search tries for a job of n GPUs in TP groups of
// tp (the package's placements), with the request's degraded nodes: on the other
// nodes' free GPUs when they can host the job, else with the fewest degraded nodes
// back that let them, taken back in each of readmitOrders' orders (readmitted; the
// sets whose parts price differently, the search keeping the placement that scores
// best), else on the free map as given. Each placement records the degraded nodes it
// uses and those it leaves out although they had free GPUs.
func (r *Request) placements(n, tp int) []*Placement {
	if r.avoid == nil {
		return placements(r.Cluster, r.Free, n, tp)
	}
	pls := placements(r.Cluster, r.avoid, n, tp)
	if len(pls) == 0 {
		// A set is priced by the worst part of each kind it holds (whatIfs): one
		// whose parts price as an earlier one's is not placed again (every node
		// degraded, any set holds the worst of each kind).
		var priced [][3]float64
		for _, order := range r.readmitOrders {
			free, back := r.readmitted(n, tp, order)
			var parts [3]float64
			for _, node := range back {
				d := r.DegradedNodes[r.degradedAt[node]]
				parts = [3]float64{slower(parts[0], d.GPUSpeed), slower(parts[1], d.NICSpeed), slower(parts[2], d.LinkSpeed)}
			}
			if slices.Contains(priced, parts) {
				continue
			}
			priced = append(priced, parts)
			for _, pl := range placements(r.Cluster, free, n, tp) {
				if !slices.ContainsFunc(pls, func(q *Placement) bool { return slices.Equal(q.Ranks, pl.Ranks) }) {
					pls = append(pls, pl)
				}
			}
		}
	}
	if len(pls) == 0 {
		pls = placements(r.Cluster, r.Free, n, tp)
	}
	for _, pl := range pls {
		for _, u := range pl.Nodes {
			if r.degradedAt[u.Node] >= 0 {
				pl.DegradedUsed = append(pl.DegradedUsed, u.Node)
			}
		}
		slices.Sort(pl.DegradedUsed)
		pl.DegradedUsed = slices.Compact(pl.DegradedUsed)
		// DegradedNodes are in node order (normalise), as DegradedUsed now is: the
		// nodes avoided are the others with free GPUs, found in one pass over both.
		k := 0
		for _, d := range r.DegradedNodes {
			if k < len(pl.DegradedUsed) && pl.DegradedUsed[k] == d.Node {
				k++
				continue
			}
			if r.Free == nil || len(r.Free[d.Node]) > 0 {
				pl.DegradedAvoided = append(pl.DegradedAvoided, d.Node)
			}
		}
	}
	return pls
}

// readmitted is the free map without the degraded nodes but the fewest of them,
// taken back in order, whose free GPUs can host n GPUs in TP groups of tp: whole
// groups of a node's free GPUs, whole nodes for a group over several (placeBy's
// rule); and the nodes taken back. When all of them cannot, the free map as given.
func (r *Request) readmitted(n, tp int, order []int) (FreeMap, []int) {
	g := r.Cluster.Spec.GPUsPerNode
	usable := func(free int) int {
		switch {
		case tp <= g:
			return free / tp * tp
		case free == g:
			return free
		}
		return 0
	}
	have := 0
	for _, gs := range r.avoid {
		have += usable(len(gs))
	}
	for k, node := range order {
		free := g
		if r.Free != nil {
			free = len(r.Free[node])
		}
		if have += usable(free); have >= n {
			return r.Free.without(r.Cluster, order[k+1:]), slices.Clone(order[:k+1])
		}
	}
	return r.Free, slices.Clone(order)
}

// readmitOrders are the orders in which degraded nodes are taken back: by their
// slowest part's speed, the fastest (the mildest degradation) first; then, for
// each kind of part some node has degraded (GPU, NIC, link), the nodes whose part
// of that kind is healthy or fastest first, by the slowest part after that. The
// step model prices the worst part of each kind a placement holds (whatIfs), and
// which kind costs a layout most depends on the layout: a GPU at half speed paces
// every micro-batch, one GPU's NVLink at 20 % a few collectives. Ordered by the
// slowest part alone, Llama 3 70B on 32 GPUs took back a node with a GPU at 0.5
// over one with an NVLink at 0.2, 116.6 s a step against 64.6 s
// (TestDegradedNodesReadmittedByWhatTheyCost); each order's placements are priced,
// and the search keeps the best (evaluation.prefer). Every order breaks ties by
// node.
func readmitOrders(ds []DegradedNode) [][]int {
	order := func(speed func(DegradedNode) float64) []int {
		ds := slices.Clone(ds)
		slices.SortStableFunc(ds, func(a, b DegradedNode) int {
			for _, f := range []func(DegradedNode) float64{speed, DegradedNode.slowest} {
				if wa, wb := f(a), f(b); wa != wb {
					if wa > wb {
						return -1
					}
					return 1
				}
			}
			return a.Node - b.Node
		})
		out := make([]int, len(ds))
		for i, d := range ds {
			out[i] = d.Node
		}
		return out
	}
	orders := [][]int{order(DegradedNode.slowest)}
	for _, part := range []func(DegradedNode) float64{
		func(d DegradedNode) float64 { return d.GPUSpeed },
		func(d DegradedNode) float64 { return d.NICSpeed },
		func(d DegradedNode) float64 { return d.LinkSpeed },
	} {
		if !slices.ContainsFunc(ds, func(d DegradedNode) bool { return part(d) > 0 }) {
			continue
		}
		orders = append(orders, order(func(d DegradedNode) float64 {
			if v := part(d); v > 0 {
				return v
			}
			return 1 // that part healthy
		}))
	}
	return orders
}

// slowest is the lowest speed the node's degraded parts run at.
func (d DegradedNode) slowest() float64 {
	s := 1.0
	for _, v := range []float64{d.GPUSpeed, d.NICSpeed, d.LinkSpeed} {
		if v > 0 {
			s = min(s, v)
		}
	}
	return s
}

// whatIfs are the slow-GPU, degraded-NIC and degraded-link speeds a placement is
// priced with: the request's (the job's own what-ifs), and those of each degraded
// node it uses. The step estimate prices one degraded part of each kind, placed in
// every group it prices (rank 0's node and GPU), so where in the job the node sits
// does not change the price; when several apply, the slowest paces the step.
func (r *Request) whatIfs(pl *Placement) (slow, nic, link float64) {
	slow, nic, link = r.SlowGPUSpeed, r.DegradedNICSpeed, r.DegradedLinkSpeed
	for _, node := range pl.DegradedUsed {
		d := r.DegradedNodes[r.degradedAt[node]]
		slow, nic, link = slower(slow, d.GPUSpeed), slower(nic, d.NICSpeed), slower(link, d.LinkSpeed)
	}
	return slow, nic, link
}

// slower is the slower of two what-if speeds, 0 meaning none.
func slower(a, b float64) float64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// degradedNote says, for a plan's assumptions, which degraded nodes the placement
// used and which it left out; "" without degraded nodes.
func (r *Request) degradedNote(pl *Placement) string {
	var parts []string
	if len(pl.DegradedUsed) > 0 {
		// In node order (DegradedUsed's, DegradedNodes'); nodes degraded alike share
		// the text of their parts (the last node's, else looked up).
		var used strings.Builder
		named := map[DegradedNode]string{}
		var last DegradedNode
		what := ""
		for i, node := range pl.DegradedUsed {
			d := r.DegradedNodes[r.degradedAt[node]]
			if key := (DegradedNode{GPUSpeed: d.GPUSpeed, NICSpeed: d.NICSpeed, LinkSpeed: d.LinkSpeed}); i == 0 || key != last {
				var ok bool
				if what, ok = named[key]; !ok {
					what = d.parts()
					named[key] = what
				}
				last = key
				if i == 0 {
					used.Grow(len(pl.DegradedUsed) * (len("node 00000 (), ") + len(what)))
				}
			}
			if i > 0 {
				used.WriteString(", ")
			}
			used.WriteString("node ")
			used.WriteString(strconv.Itoa(node))
			used.WriteString(" (")
			used.WriteString(what)
			used.WriteString(")")
		}
		parts = append(parts, fmt.Sprintf("what-if: degraded %s used: the free GPUs of the other nodes cannot host the job; priced with the degradation in the job, in every group the estimate prices",
			used.String()))
	}
	if len(pl.DegradedAvoided) > 0 {
		parts = append(parts, fmt.Sprintf("what-if: degraded node%s %s avoided: the job runs on other nodes' free GPUs at full speed",
			plural(len(pl.DegradedAvoided), "", "s"), joinInts(pl.DegradedAvoided)))
	}
	return strings.Join(parts, "; ")
}

// parts names a degraded node's parts and their speeds.
func (d DegradedNode) parts() string {
	var out []string
	if d.GPUSpeed > 0 {
		out = append(out, fmt.Sprintf("a GPU at %.3g%% of its speed", 100*d.GPUSpeed))
	}
	if d.NICSpeed > 0 {
		out = append(out, fmt.Sprintf("NICs at %.3g%% of their bandwidth", 100*d.NICSpeed))
	}
	if d.LinkSpeed > 0 {
		out = append(out, fmt.Sprintf("a GPU's scale-up link at %.3g%% of its bandwidth", 100*d.LinkSpeed))
	}
	return strings.Join(out, ", ")
}

// inOrder is a copy of nodes in increasing order; nil for none.
func inOrder(nodes []int) []int {
	if len(nodes) == 0 {
		return nil
	}
	out := slices.Clone(nodes)
	slices.Sort(out)
	return out
}

// sortedDegraded is a copy of degraded nodes in node order; nil for none.
func sortedDegraded(ds []DegradedNode) []DegradedNode {
	if len(ds) == 0 {
		return nil
	}
	out := slices.Clone(ds)
	slices.SortFunc(out, func(a, b DegradedNode) int { return a.Node - b.Node })
	return out
}
