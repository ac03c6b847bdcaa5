package collective_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
)

// Send/recv and all-to-all run NCCL's p2p kernel: LL while a peer's bytes fit 16 KiB
// per channel, Simple above, with the p2p kernel's fixed cost instead of a
// collective protocol's, and a bandwidth bound by the links or by the channels NCCL
// gives the peer.
func TestP2PProtocolsAndCosts(t *testing.T) {
	m := collective.NewModel(collective.Default())
	price := func(system string, nodes, perNode int, op collective.Op, size float64) collective.Estimate {
		t.Helper()
		c := mustCluster(t, system, nodes, nil)
		group, _, err := collective.NodeGroups(c, nodes, perNode, false)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Estimate(mustPlace(t, c, group, nil), op, size, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// 8 B between two NVLink GPUs: LL, one channel, a launch and the p2p kernel's
	// fixed cost — not a Simple collective's 80 µs.
	small := price("dgx-h100", 1, 2, collective.SendRecv, 8)
	if small.Protocol != collective.LL || small.Channels != 1 || small.TimeUs > 15 {
		t.Errorf("8 B send/recv on 2 H100: %s/%s %d channel(s) %.1f µs, want LL on one channel under 15 µs", small.Algo, small.Protocol, small.Channels, small.TimeUs)
	}
	a2a := price("dgx-h100", 1, 8, collective.AllToAll, 8*8)
	if a2a.Protocol != collective.LL || a2a.TimeUs > 15 {
		t.Errorf("8 B per peer all-to-all on 8 H100: %s/%s %.1f µs, want LL under 15 µs", a2a.Algo, a2a.Protocol, a2a.TimeUs)
	}
	// 64 KiB to one peer on one node: one channel (a part per 64 KiB), above its
	// 16 KiB LL threshold: Simple.
	if e := price("dgx-h100", 1, 8, collective.SendRecv, 64<<10); e.Protocol != collective.Simple || e.Channels != 1 {
		t.Errorf("64 KiB send/recv on 8 H100: %s on %d channel(s), want Simple on 1", e.Protocol, e.Channels)
	}
	// 4 MiB between two NVLink GPUs moves at what its channels copy: measured
	// 80–180 GB/s, well under the 370 GB/s of the links.
	if e := price("dgx-h100", 1, 2, collective.SendRecv, 4<<20); e.AlgBWGBps < 80 || e.AlgBWGBps > 370 {
		t.Errorf("4 MiB send/recv on 2 H100: %.0f GB/s, want 80–370", e.AlgBWGBps)
	}
	// Across nodes a peer's step is 128 KiB and its parts at most one step: 1 MiB
	// needs the channels of the GPU's NIC (2 for one 400 Gb/s NIC at 14 GB/s each,
	// rounded to a power of two: 4).
	if e := price("dgx-h100", 2, 1, collective.SendRecv, 1<<20); e.Protocol != collective.Simple || e.Channels != 4 {
		t.Errorf("1 MiB send/recv across 2 H100 nodes: %s on %d channel(s), want Simple on 4", e.Protocol, e.Channels)
	}
	// And the network's latency: a small cross-node send costs more than an
	// NVLink one.
	if cross := price("dgx-h100", 2, 1, collective.SendRecv, 8); cross.TimeUs <= small.TimeUs {
		t.Errorf("8 B send/recv across nodes %.1f µs, within a node %.1f µs", cross.TimeUs, small.TimeUs)
	}
	// EFA without in-order delivery (p4d): Simple across nodes whatever the size.
	if e := price("aws-p4d", 2, 1, collective.SendRecv, 8); e.Protocol != collective.Simple {
		t.Errorf("8 B send/recv across 2 p4d: %s, want Simple (NCCL_PROTO=simple)", e.Protocol)
	}
}
