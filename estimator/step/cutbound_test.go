package step

import (
	"fmt"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
)

// The cut bound never exceeds the collective model's price on the placed groups,
// for the operations the exposure bounds ask (ZeRO-3's gathers and reduce-scatters,
// ring attention's transfers, Ulysses' all-to-alls), over grids that put groups
// inside a node, across nodes, across NVLink domains and on shared NICs, from
// latency-bound to bandwidth-bound sizes; and it is not vacuous: on bandwidth-bound
// sizes it comes within a factor of the price.
func TestCutBoundHolds(t *testing.T) {
	e := New()
	layouts := []Layout{
		{TP: 8, CP: 1, DP: 16, PP: 2},
		{TP: 1, CP: 1, DP: 64, PP: 2},
		{TP: 2, CP: 4, DP: 8, PP: 2},
		{TP: 4, CP: 2, DP: 4, PP: 4},
		{TP: 1, CP: 16, DP: 4, PP: 2},
		{TP: 2, CP: 2, DP: 2, PP: 8},
		{TP: 8, CP: 8, DP: 1, PP: 2},
		{TP: 1, CP: 2, DP: 32, PP: 2},
	}
	ops := []struct {
		c  Comm
		op collective.Op
	}{{CommZeRO3, collective.AllGather}, {CommZeRO3, collective.ReduceScatter}, {CommCP, collective.SendRecv}, {CommCP, collective.AllToAll}}
	for _, system := range []string{"dgx-h100", "aws-p4d", "gb200-nvl72", "oci-mi300x", "azure-nd-a100-v4"} {
		for _, l := range layouts {
			g, err := newGrid(&l)
			if err != nil {
				t.Fatal(err)
			}
			cl, err := catalog.Cluster(system, (g.n+catalogGPUsPerNode(t, system)-1)/catalogGPUsPerNode(t, system))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range ops {
				p, err := e.placement(cl, nil, g, o.c)
				if err != nil {
					t.Fatal(err)
				}
				if p.N() < 2 {
					continue
				}
				for _, bytes := range []float64{1 << 10, 1 << 20, 64 << 20, 1 << 30} {
					name := fmt.Sprintf("%s/%s/%v/%v/%g", system, g, o.c, o.op, bytes)
					est, err := e.collCost(p, o.op, bytes)
					if err != nil {
						continue // not offered on this placement
					}
					lb := e.cutBound(cl, g, o.c, o.op, bytes)
					if !(lb <= est.TimeUs*1e-6) {
						t.Errorf("%s: cut bound %.4g s > price %.4g s", name, lb, est.TimeUs*1e-6)
					}
					if bytes == 1<<30 && !(lb > 0.3*est.TimeUs*1e-6) {
						t.Errorf("%s: cut bound %.4g s is under 30%% of the price %.4g s", name, lb, est.TimeUs*1e-6)
					}
				}
			}
		}
	}
}

func catalogGPUsPerNode(t *testing.T, system string) int {
	t.Helper()
	cl, err := catalog.Cluster(system, 1)
	if err != nil {
		t.Fatal(err)
	}
	return cl.Spec.GPUsPerNode
}
