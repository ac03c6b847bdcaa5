package planner

import (
	"fmt"
	"slices"
	"strings"
)

// placements are the placements the search tries for a job of n GPUs in TP groups of
// tp (the package's placements), with the request's degraded nodes: on the other
// nodes' free GPUs when they can host the job, else on the free map as given, the
// degraded nodes included. Each placement records the degraded nodes it uses and
// those it leaves out although they had free GPUs.
func (r *Request) placements(n, tp int) []*Placement {
	if r.avoid == nil {
		return placements(r.Cluster, r.Free, n, tp)
	}
	pls := placements(r.Cluster, r.avoid, n, tp)
	if len(pls) == 0 {
		pls = placements(r.Cluster, r.Free, n, tp)
	}
	for _, pl := range pls {
		used := make(map[int]bool, len(pl.Nodes))
		for _, u := range pl.Nodes {
			used[u.Node] = true
		}
		for _, d := range r.DegradedNodes {
			switch {
			case used[d.Node]:
				pl.DegradedUsed = append(pl.DegradedUsed, d.Node)
			case r.Free == nil || len(r.Free[d.Node]) > 0:
				pl.DegradedAvoided = append(pl.DegradedAvoided, d.Node)
			}
		}
		slices.Sort(pl.DegradedUsed)
		slices.Sort(pl.DegradedAvoided)
	}
	return pls
}

// whatIfs are the slow-GPU, degraded-NIC and degraded-link speeds a placement is
// priced with: the request's (the job's own what-ifs), and those of each degraded
// node it uses. The step estimate prices one degraded part of each kind, placed in
// every group it prices (rank 0's node and GPU), so where in the job the node sits
// does not change the price; when several apply, the slowest paces the step.
func (r *Request) whatIfs(pl *Placement) (slow, nic, link float64) {
	slow, nic, link = r.SlowGPUSpeed, r.DegradedNICSpeed, r.DegradedLinkSpeed
	for _, d := range r.DegradedNodes {
		if slices.Contains(pl.DegradedUsed, d.Node) {
			slow, nic, link = slower(slow, d.GPUSpeed), slower(nic, d.NICSpeed), slower(link, d.LinkSpeed)
		}
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
		var used []string
		for _, d := range r.DegradedNodes {
			if slices.Contains(pl.DegradedUsed, d.Node) {
				used = append(used, fmt.Sprintf("node %d (%s)", d.Node, d.parts()))
			}
		}
		parts = append(parts, fmt.Sprintf("what-if: degraded %s used: the free GPUs of the other nodes cannot host the job; priced with the degradation in the job, in every group the estimate prices",
			strings.Join(used, ", ")))
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
