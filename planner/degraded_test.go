package planner_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// degradedRequest is a 64-GPU job on a catalog cluster of nodes nodes.
func degradedRequest(t *testing.T, nodes int) planner.Request {
	return planner.Request{Model: mustModel(t, "llama3-70b"), Cluster: mustCluster(t, "dgx-h100", nodes), GPUs: 64,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 256}, TopK: 3}
}

func usesNode(p planner.Plan, node int) bool {
	return slices.ContainsFunc(p.Placement.Nodes, func(u planner.NodeUse) bool { return u.Node == node })
}

// With one node more than the job needs, a node with degraded NICs is left out:
// every plan runs on the other eight at full speed, as with the node excluded, and
// says it avoided the node. With exactly the nodes the job needs, the plans use it
// and are priced as the unlocated what-if prices them.
func TestDegradedNodeAvoidedOrUsed(t *testing.T) {
	e := step.New()
	ctx := context.Background()
	bad := []planner.DegradedNode{{Node: 3, NICSpeed: 0.25}}

	spare := degradedRequest(t, 9)
	spare.DegradedNodes = bad
	avoided, err := planner.Search(ctx, e, spare)
	if err != nil {
		t.Fatal(err)
	}
	spare.DegradedNodes, spare.ExcludeNodes = nil, []int{3}
	excluded, err := planner.Search(ctx, e, spare)
	if err != nil {
		t.Fatal(err)
	}
	if len(avoided.Top) == 0 || len(avoided.Top) != len(excluded.Top) {
		t.Fatalf("%d plans avoiding node 3, %d with it excluded", len(avoided.Top), len(excluded.Top))
	}
	for i, p := range avoided.Top {
		if usesNode(p, 3) || len(p.Placement.DegradedUsed) > 0 || !slices.Equal(p.Placement.DegradedAvoided, []int{3}) {
			t.Errorf("plan %d on 9 nodes: nodes %v, degraded used %v, avoided %v; want node 3 avoided", p.Rank, p.Placement.Nodes, p.Placement.DegradedUsed, p.Placement.DegradedAvoided)
		}
		if x := excluded.Top[i]; p.Estimate.StepTime != x.Estimate.StepTime || !reflect.DeepEqual(p.Layout, x.Layout) {
			t.Errorf("plan %d avoiding node 3: %+v %.6f s; with node 3 excluded: %+v %.6f s", p.Rank, p.Layout, p.Estimate.StepTime, x.Layout, x.Estimate.StepTime)
		}
		if !slices.ContainsFunc(p.Estimate.Assumptions, func(a string) bool { return strings.Contains(a, "degraded node 3 avoided") }) {
			t.Errorf("plan %d: no assumption says node 3 was avoided: %q", p.Rank, p.Estimate.Assumptions)
		}
	}

	exact := degradedRequest(t, 8)
	exact.DegradedNodes = bad
	used, err := planner.Search(ctx, e, exact)
	if err != nil {
		t.Fatal(err)
	}
	exact.DegradedNodes, exact.DegradedNICSpeed = nil, 0.25
	unlocated, err := planner.Search(ctx, e, exact)
	if err != nil {
		t.Fatal(err)
	}
	exact.DegradedNICSpeed = 0
	healthy, err := planner.Search(ctx, e, exact)
	if err != nil {
		t.Fatal(err)
	}
	if len(used.Top) == 0 || len(used.Top) != len(unlocated.Top) {
		t.Fatalf("%d plans using node 3, %d with the unlocated what-if", len(used.Top), len(unlocated.Top))
	}
	for i, p := range used.Top {
		if !usesNode(p, 3) || !slices.Equal(p.Placement.DegradedUsed, []int{3}) || len(p.Placement.DegradedAvoided) > 0 {
			t.Errorf("plan %d on 8 nodes: nodes %v, degraded used %v, avoided %v; want node 3 used", p.Rank, p.Placement.Nodes, p.Placement.DegradedUsed, p.Placement.DegradedAvoided)
		}
		if u := unlocated.Top[i]; p.Estimate.StepTime != u.Estimate.StepTime || !reflect.DeepEqual(p.Layout, u.Layout) {
			t.Errorf("plan %d using node 3: %+v %.6f s; unlocated what-if: %+v %.6f s", p.Rank, p.Layout, p.Estimate.StepTime, u.Layout, u.Estimate.StepTime)
		}
	}
	t.Logf("9 nodes, node 3 avoided: %.4f s; 8 nodes, node 3 used: %.4f s (healthy %.4f s)",
		avoided.Top[0].Estimate.StepTime, used.Top[0].Estimate.StepTime, healthy.Top[0].Estimate.StepTime)
	if !(used.Top[0].Estimate.StepTime > healthy.Top[0].Estimate.StepTime) {
		t.Errorf("using the degraded node %.4f s is not slower than the healthy cluster's %.4f s", used.Top[0].Estimate.StepTime, healthy.Top[0].Estimate.StepTime)
	}
}

// Searching job sizes up to the whole cluster, the sizes the other nodes can host
// avoid the degraded node and the whole cluster uses it: the ranking chooses
// between fewer GPUs at full speed and all of them at the degraded speed.
func TestDegradedNodeBySize(t *testing.T) {
	req := degradedRequest(t, 8)
	req.GPUs, req.MaxGPUs, req.TopK = 0, 64, 20
	req.IncludeDominated = true
	req.DegradedNodes = []planner.DegradedNode{{Node: 7, GPUSpeed: 0.5}}
	res, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[bool]bool{}
	for _, p := range append(res.Top, res.Pareto...) {
		uses := usesNode(p, 7)
		sizes[uses] = true
		if uses != (p.GPUs > 56) || uses != slices.Equal(p.Placement.DegradedUsed, []int{7}) {
			t.Errorf("plan of %d GPUs on nodes %v: degraded used %v, avoided %v", p.GPUs, p.Placement.Nodes, p.Placement.DegradedUsed, p.Placement.DegradedAvoided)
		}
		if uses && p.Estimate.PerMicroBatch.SlowGPUSpeed != 0.5 {
			t.Errorf("plan of %d GPUs uses node 7 but is priced with slow GPU speed %v", p.GPUs, p.Estimate.PerMicroBatch.SlowGPUSpeed)
		}
	}
	if !sizes[true] || !sizes[false] {
		t.Errorf("plans using node 7: %v; want both kinds among top and front", sizes)
	}
}

// Each degraded node is checked by its entry: the node in the cluster and listed
// once, a part named, each speed in the what-ifs' range.
func TestDegradedNodesRefused(t *testing.T) {
	for _, tc := range []struct {
		nodes []planner.DegradedNode
		field string
	}{
		{[]planner.DegradedNode{{Node: 8, NICSpeed: 0.5}}, "degraded_nodes[0].node"},
		{[]planner.DegradedNode{{Node: -1, NICSpeed: 0.5}}, "degraded_nodes[0].node"},
		{[]planner.DegradedNode{{Node: 2, NICSpeed: 0.5}, {Node: 2, GPUSpeed: 0.5}}, "degraded_nodes[1].node"},
		{[]planner.DegradedNode{{Node: 2}}, "degraded_nodes[0]:"},
		{[]planner.DegradedNode{{Node: 1, GPUSpeed: 0.5}, {Node: 2, NICSpeed: 1.5}}, "degraded_nodes[1].nic_speed"},
		{[]planner.DegradedNode{{Node: 2, GPUSpeed: 0.001}}, "degraded_nodes[0].gpu_speed"},
		{[]planner.DegradedNode{{Node: 2, LinkSpeed: -0.5}}, "degraded_nodes[0].link_speed"},
	} {
		req := degradedRequest(t, 8)
		req.DegradedNodes = tc.nodes
		_, err := planner.Search(context.Background(), step.New(), req)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v; want an error naming %s", tc.nodes, err, tc.field)
		}
	}
}

// With two degraded nodes and one node to spare, the job takes back only the
// milder one and is priced as its degradation alone.
func TestDegradedNodesFewestUsed(t *testing.T) {
	e := step.New()
	req := degradedRequest(t, 9)
	req.DegradedNodes = []planner.DegradedNode{{Node: 3, NICSpeed: 0.25}, {Node: 7, NICSpeed: 0.5}}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	req.DegradedNodes, req.Cluster, req.DegradedNICSpeed = nil, mustCluster(t, "dgx-h100", 8), 0.5
	unlocated, err := planner.Search(context.Background(), e, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Top) == 0 || len(res.Top) != len(unlocated.Top) {
		t.Fatalf("%d plans, %d with the unlocated what-if", len(res.Top), len(unlocated.Top))
	}
	for i, p := range res.Top {
		if !slices.Equal(p.Placement.DegradedUsed, []int{7}) || !slices.Equal(p.Placement.DegradedAvoided, []int{3}) || usesNode(p, 3) {
			t.Errorf("plan %d on nodes %v: degraded used %v, avoided %v; want 7 used, 3 avoided", p.Rank, p.Placement.Nodes, p.Placement.DegradedUsed, p.Placement.DegradedAvoided)
		}
		if u := unlocated.Top[i]; p.Estimate.StepTime != u.Estimate.StepTime {
			t.Errorf("plan %d: %.6f s; with one node's NICs at 50%%: %.6f s", p.Rank, p.Estimate.StepTime, u.Estimate.StepTime)
		}
	}
}

// The degraded nodes taken back are the ones whose degradation costs the plan
// least, not the ones whose slowest part is fastest: the step model prices the
// worst part of each kind a placement holds, and a GPU at half speed paces every
// micro-batch while one GPU's NVLink at 20 % slows a few collectives. Llama 3 70B
// on 32 GPUs of 6 nodes, node 1 gone, node 0 with a GPU at 0.5, node 2 with NICs at
// 0.9, node 3 with an NVLink at 0.2: the job needs two of the three. Ordered by
// their slowest part alone (0.9, 0.5, 0.2) the plans took nodes 0 and 2, 116.6 s a
// step, where nodes 2 and 3 run it in 64.6 s. The best plan is now the best of the
// choices, as fast as with node 0 excluded.
func TestDegradedNodesReadmittedByWhatTheyCost(t *testing.T) {
	e := step.New()
	req := degradedRequest(t, 6)
	req.GPUs = 32
	req.Training.SeqLen, req.Training.GlobalBatch = 8192, 256
	req.ExcludeNodes = []int{1}
	req.DegradedNodes = []planner.DegradedNode{{Node: 0, GPUSpeed: 0.5}, {Node: 2, NICSpeed: 0.9}, {Node: 3, LinkSpeed: 0.2}}
	res, err := planner.Search(context.Background(), e, req)
	if err != nil || len(res.Top) == 0 {
		t.Fatalf("%v (%s)", err, res.NoPlan)
	}
	forced := req
	forced.ExcludeNodes, forced.DegradedNodes = []int{0, 1}, []planner.DegradedNode{{Node: 2, NICSpeed: 0.9}, {Node: 3, LinkSpeed: 0.2}}
	best, err := planner.Search(context.Background(), e, forced)
	if err != nil || len(best.Top) == 0 {
		t.Fatalf("nodes 0 and 1 excluded: %v (%s)", err, best.NoPlan)
	}
	p := res.Top[0]
	t.Logf("best plan on nodes %v: %.3f s; with node 0 excluded %.3f s", p.Placement.Nodes, p.Estimate.StepTime, best.Top[0].Estimate.StepTime)
	if !slices.Equal(p.Placement.DegradedUsed, []int{2, 3}) || !slices.Equal(p.Placement.DegradedAvoided, []int{0}) {
		t.Errorf("best plan: degraded used %v, avoided %v; want 2 and 3 used, 0 avoided", p.Placement.DegradedUsed, p.Placement.DegradedAvoided)
	}
	if got, want := p.Estimate.StepTime, best.Top[0].Estimate.StepTime; got > want*(1+1e-9) {
		t.Errorf("best plan %.3f s, with node 0 excluded %.3f s", got, want)
	}
}
