package collective_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
)

// On EFA every network send and receive is posted and retired by the GPU's proxy
// thread through libfabric, about 1.5 µs each (efaproxy.go). On two p5 nodes the
// NVLS tree's 16 channels make 32 of them a GPU for a call of 1–8 MiB (one chunk
// per channel up and down), 30 more than the one message a network hop's latency
// holds: ~45 µs, what the same tree on two InfiniBand H100 nodes (nccl-tests#309)
// is faster by at 1–8 MiB (47–70 µs). From 1 GiB the operations hide under the
// transfer, and on InfiniBand nothing changes.
func TestEFAProxyCost(t *testing.T) {
	m := collective.NewModel(collective.Default())
	price := func(kind topology.NetKind, bytes float64, o collective.Options) collective.Estimate {
		t.Helper()
		c := mustCluster(t, "aws-p5", 2, func(s *topology.Spec) { s.NICs.Kind = kind })
		group, _, err := collective.NodeGroups(c, 2, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Estimate(mustPlace(t, c, group, nil), collective.AllReduce, bytes, o)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	tree := collective.Options{Algo: collective.NVLSTree}
	for _, mib := range []float64{1, 2, 4} {
		efa, ib := price(topology.EFA, mib*(1<<20), tree), price(topology.InfiniBand, mib*(1<<20), tree)
		// The hops' latencies differ by kind too; the proxy's share is the 45 µs.
		if d := efa.TimeUs - ib.TimeUs; d < 40 || d > 70 {
			t.Errorf("%.0f MiB NVLS tree all-reduce: EFA %.1f µs, InfiniBand %.1f µs (+%.1f µs), want 40–70 µs more on EFA", mib, efa.TimeUs, ib.TimeUs, d)
		}
	}
	efa, ib := price(topology.EFA, 16<<30, tree), price(topology.InfiniBand, 16<<30, tree)
	if r := efa.TimeUs/ib.TimeUs - 1; r < -1e-3 || r > 0.01 {
		t.Errorf("16 GiB NVLS tree all-reduce: EFA %.0f µs, InfiniBand %.0f µs (%+.2f %%), want within 1 %%: the operations hide under the transfer", efa.TimeUs, ib.TimeUs, 100*r)
	}
	// A small call runs NCCL's tree on one channel (its thread threshold): one
	// message a hop, which the hop's latency already holds, so no proxy cost.
	small := collective.Options{Algo: collective.DoubleTree, ForceProtocol: true, Protocol: collective.LL}
	efaS, ibS := price(topology.EFA, 64, small), price(topology.InfiniBand, 64, small)
	efaS2, ibS2 := price(topology.EFA, 4096, small), price(topology.InfiniBand, 4096, small)
	if d1, d2 := efaS.TimeUs-ibS.TimeUs, efaS2.TimeUs-ibS2.TimeUs; d2-d1 > 0.01 {
		t.Errorf("small double-tree calls: EFA's excess over InfiniBand %.2f µs at 64 B, %.2f µs at 4 KiB; want no proxy cost on one channel", d1, d2)
	}
}
