package topology_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/topology"
)

// A range of node counts (min_nodes … max_nodes) covers exactly those counts,
// with the other conditions of the range; nodes names one count.
func TestAlgoRangeCoversNodeRange(t *testing.T) {
	for _, tc := range []struct {
		r       topology.AlgoRange
		nodes   int
		perNode int
		bytes   float64
		want    bool
	}{
		{topology.AlgoRange{MinNodes: 3, GPUsPerNode: 8, MinBytes: 1 << 30}, 3, 8, 1 << 30, true},
		{topology.AlgoRange{MinNodes: 3, GPUsPerNode: 8, MinBytes: 1 << 30}, 64, 8, 8 << 30, true},
		{topology.AlgoRange{MinNodes: 3, GPUsPerNode: 8, MinBytes: 1 << 30}, 2, 8, 1 << 30, false},
		{topology.AlgoRange{MinNodes: 3, GPUsPerNode: 8, MinBytes: 1 << 30}, 4, 4, 1 << 30, false},
		{topology.AlgoRange{MinNodes: 3, GPUsPerNode: 8, MinBytes: 1 << 30}, 4, 8, 512 << 20, false},
		{topology.AlgoRange{MinNodes: 3, MaxNodes: 8}, 8, 8, 1, true},
		{topology.AlgoRange{MinNodes: 3, MaxNodes: 8}, 9, 8, 1, false},
		{topology.AlgoRange{MaxNodes: 2}, 1, 8, 1, true},
		{topology.AlgoRange{Nodes: 4}, 4, 8, 1, true},
		{topology.AlgoRange{Nodes: 4}, 8, 8, 1, false},
	} {
		if got := tc.r.Covers(tc.nodes, tc.perNode, tc.bytes); got != tc.want {
			t.Errorf("%+v covers %d × %d, %g B: %v, want %v", tc.r, tc.nodes, tc.perNode, tc.bytes, got, tc.want)
		}
	}
}
