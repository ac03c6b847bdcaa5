package collective_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
)

// A ring broadcast (or reduce) moves the whole buffer across every edge of a chain,
// an all-gather (n−1)/n of it across every edge of a ring: for large messages the
// two cost about the same. With every channel rotated to start at the root, the
// chains cross each node boundary through all of the node's NICs; a single chain
// for all channels would squeeze the message through one NIC and be 8× slower on
// an 8-NIC node. Both run Simple, so that the ratio compares bytes on links and
// not protocols (NCCL's own choice runs LL128 chains at 1 GiB on 4-16 nodes).
func TestBroadcastAcrossNodesUsesEveryNIC(t *testing.T) {
	m := collective.NewModel(collective.Default())
	const size = 1 << 30
	for _, nodes := range []int{2, 4, 8, 16} {
		c := mustCluster(t, "dgx-h100", nodes, nil)
		group, _, err := collective.NodeGroups(c, nodes, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		p := mustPlace(t, c, group, nil)
		ag, err := m.Estimate(p, collective.AllGather, size, collective.Options{Algo: collective.Ring, ForceProtocol: true, Protocol: collective.Simple})
		if err != nil {
			t.Fatal(err)
		}
		n := float64(p.N())
		for _, op := range []collective.Op{collective.Broadcast, collective.Reduce} {
			e, err := m.Estimate(p, op, size, collective.Options{ForceProtocol: true, Protocol: collective.Simple})
			if err != nil {
				t.Fatal(err)
			}
			ratio := e.TimeUs / (ag.TimeUs * n / (n - 1))
			t.Logf("%2d nodes %-9s %8.0f µs, ring all-gather×n/(n−1) %8.0f µs: ratio %.2f", nodes, op, e.TimeUs, ag.TimeUs*n/(n-1), ratio)
			// 1.72× at 16 nodes: a 128-rank chain's fill is 127 chunks of the fitted
			// 493 KiB per channel, close to the one step of NCCL's buffer (512 KiB) that
			// calcCollChunking gives a Simple broadcast (1.35× with the 254 KiB fitted
			// before tree hops had their own cost; docs/calibration.md).
			if ratio < 0.85 || ratio > 1.80 {
				t.Errorf("%d nodes: %s of 1 GiB takes %.0f µs, %.2f× a ring all-gather's bytes", nodes, op, e.TimeUs, ratio)
			}
		}
	}
}

// A streamed chain pays its hop latencies once (the first chunk's way down the
// chain), not once per chunk: the size-independent part of a 1 GiB broadcast is
// that of a small one, and a small broadcast costs about what a small ring
// all-gather does (both walk n−1 hops). The same holds for a double tree's
// all-reduce across nodes.
func TestStreamedChainLatency(t *testing.T) {
	m := collective.NewModel(collective.Default())
	for _, nodes := range []int{1, 4, 16} {
		c := mustCluster(t, "dgx-h100", nodes, nil)
		group, _, err := collective.NodeGroups(c, nodes, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		p := mustPlace(t, c, group, nil)
		estimate := func(op collective.Op, size float64, algo collective.Algorithm) collective.Estimate {
			t.Helper()
			e, err := m.Estimate(p, op, size, collective.Options{Algo: algo, ForceProtocol: true, Protocol: collective.Simple})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		// streamed checks that op's latency part at 2 GiB, in a long pipeline, is that
		// of 4 KiB, and returns the 4 KiB estimate.
		streamed := func(op collective.Op, algo collective.Algorithm) collective.Estimate {
			t.Helper()
			small, large := estimate(op, 4096, algo), estimate(op, 2<<30, algo)
			if large.Chunks < 100 {
				t.Fatalf("%d nodes: 2 GiB %s/%s in %d chunks; the test needs a long pipeline", nodes, op, algo, large.Chunks)
			}
			if large.LatencyUs > 1.05*small.LatencyUs {
				t.Errorf("%d nodes: %s/%s latency part %.0f µs at 2 GiB (%d chunks) vs %.0f µs at 4 KiB: hop latencies paid per chunk",
					nodes, op, algo, large.LatencyUs, large.Chunks, small.LatencyUs) // 2 GiB: 1 GiB is 67 chunks of 493 KiB
			}
			return small
		}
		small := streamed(collective.Broadcast, collective.Ring)
		ag := estimate(collective.AllGather, 4096, collective.Ring)
		if r := small.TimeUs / ag.TimeUs; r < 0.7 || r > 1.4 {
			t.Errorf("%d nodes: 4 KiB broadcast %.1f µs vs ring all-gather %.1f µs (%.2f×)", nodes, small.TimeUs, ag.TimeUs, r)
		}
		if nodes > 1 {
			// The double tree streams too: its 2 GiB all-reduce pays the trees' hop
			// latencies once, as a 4 KiB one does.
			streamed(collective.AllReduce, collective.DoubleTree)
		}
	}
}
