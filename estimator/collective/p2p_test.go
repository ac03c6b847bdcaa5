package collective_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Send/recv and all-to-all run NCCL's p2p kernel: LL while a peer's bytes fit the
// release's threshold (p2pLLRule), Simple above, with the p2p kernel's fixed cost instead of a
// collective protocol's, and a bandwidth bound by the links or by the channels NCCL
// gives the peer.
func TestP2PProtocolsAndCosts(t *testing.T) {
	price := func(system string, nodes, perNode int, op collective.Op, size float64) collective.Estimate {
		return priceOnNodes(t, system, nil, nodes, perNode, op, size)
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
	// 64 KiB to one peer on one node. NCCL 2.22–2.28 (and a cluster that states no
	// release) run LL up to the peer's 32 channels × 16 KiB, 512 KiB, in parts cut
	// from LL's 64 KiB step: 4 channels, the most each of 8 ranks may have. NCCL 2.29
	// cuts the parts first (one per 64 KiB of Simple's step) and runs LL up to 16 KiB
	// a part: Simple on one. NCCL 2.21 runs LL up to 16 KiB a peer.
	for _, tc := range []struct {
		nccl string
		pr   collective.Protocol
		nch  int
	}{{"", collective.LL, 4}, {"2.28.7", collective.LL, 4}, {"2.22.3", collective.LL, 4}, {"2.29.7", collective.Simple, 1}, {"2.21.5", collective.Simple, 1}} {
		e := priceOnNodes(t, "dgx-h100", func(s *topology.Spec) { s.NCCL = tc.nccl }, 1, 8, collective.SendRecv, 64<<10)
		if e.Protocol != tc.pr || e.Channels != tc.nch {
			t.Errorf("64 KiB send/recv on 8 H100, NCCL %q: %s on %d channel(s), want %s on %d", tc.nccl, e.Protocol, e.Channels, tc.pr, tc.nch)
		}
	}
	// OCI's 64-rank all-to-all over 16 trays of a GB300 rack (NCCL 2.28.7): 32 MiB is
	// 512 KiB a peer, LL on one channel each (63 peers on 32 channels), 64 MiB Simple
	// — the switch its sweep shows, 236 µs at 32 MiB against 162 µs at 64 MiB
	// (testdata/README.md). NCCL 2.29 would run 32 MiB by Simple.
	for _, tc := range []struct {
		nccl string
		size float64
		pr   collective.Protocol
	}{{"2.28.7", 32 << 20, collective.LL}, {"2.28.7", 64 << 20, collective.Simple}, {"2.29.7", 32 << 20, collective.Simple}} {
		e := priceOnNodes(t, "gb300-nvl72", func(s *topology.Spec) { s.NCCL = tc.nccl }, 16, 4, collective.AllToAll, tc.size)
		if e.Protocol != tc.pr || (tc.pr == collective.LL && e.Channels != 1) {
			t.Errorf("%.0f MiB all-to-all on 16 GB300 trays, NCCL %s: %s on %d channel(s), want %s", tc.size/(1<<20), tc.nccl, e.Protocol, e.Channels, tc.pr)
		}
	}
	// A peer's bytes above 512 KiB go by Simple under every release.
	if e := price("dgx-h100", 1, 8, collective.SendRecv, 1<<20); e.Protocol != collective.Simple {
		t.Errorf("1 MiB send/recv on 8 H100: %s, want Simple", e.Protocol)
	}
	// 4 MiB between two NVLink GPUs moves at what its channels copy: measured
	// 80–180 GB/s, well under the 370 GB/s of the links.
	if e := price("dgx-h100", 1, 2, collective.SendRecv, 4<<20); e.AlgBWGBps < 80 || e.AlgBWGBps > 370 {
		t.Errorf("4 MiB send/recv on 2 H100: %.0f GB/s, want 80–370", e.AlgBWGBps)
	}
	// Across nodes a peer's step is 128 KiB and its parts at most one step: 1 MiB
	// takes every channel of a net peer (NCCL through 2.28: 2).
	if e := price("dgx-h100", 2, 1, collective.SendRecv, 1<<20); e.Protocol != collective.Simple || e.Channels != 2 {
		t.Errorf("1 MiB send/recv across 2 H100 nodes: %s on %d channel(s), want Simple on 2", e.Protocol, e.Channels)
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

// Across nodes a rank's bytes for the other nodes cross on the channels of its
// remote peers' groups, 14 GB/s each (NCCL_P2P_PER_CHANNEL_NET_BW): on 2 nodes of 8
// GPUs the 8 remote peers share one group's 2 channels, 28 GB/s under the GPU's
// 400 Gb/s NIC; from 3 nodes on the groups' channels outrun the NIC, which bounds
// the call as before; RCCL gives a net peer a channel per 14 GB/s of the NIC.
func TestP2PNetChannels(t *testing.T) {
	price := func(system string, nodes, perNode int, op collective.Op, size float64) collective.Estimate {
		return priceOnNodes(t, system, nil, nodes, perNode, op, size)
	}
	const gib = 1 << 30
	// 2 nodes: half of each rank's 1 GiB leaves the node, at 2 × 14 GB/s.
	two := price("dgx-h100", 2, 8, collective.AllToAll, gib)
	if want := gib / 2 / 28e3; two.TimeUs < want || two.TimeUs > 1.02*want+50 {
		t.Errorf("1 GiB all-to-all on 2×8 H100: %.0f µs, want the 2 net channels' %.0f µs", two.TimeUs, want)
	}
	// One peer on another node: its 2 channels.
	if e := price("dgx-h100", 2, 1, collective.SendRecv, gib); e.AlgBWGBps > 28 || e.AlgBWGBps < 26 {
		t.Errorf("1 GiB send/recv across 2 H100 nodes: %.1f GB/s, want about 28 (2 channels at 14)", e.AlgBWGBps)
	}
	// 4 nodes: 3 remote groups on 6 channels (84 GB/s) outrun the 400 Gb/s NIC.
	four := price("dgx-h100", 4, 8, collective.AllToAll, gib)
	nic := gib * 3.0 / 4 / four.TimeUs / 1e3 // GB/s leaving each GPU
	if nic < 40 || nic > 50 {
		t.Errorf("1 GiB all-to-all on 4×8 H100: %.1f GB/s per NIC, want the NIC's 40–50", nic)
	}
	// RCCL: 4 channels per net peer on 400 Gb/s (56 GB/s): the NIC bounds 2 nodes.
	amd := price("mi355x", 2, 8, collective.AllToAll, gib)
	if v := gib / 2 / amd.TimeUs / 1e3; v < 40 {
		t.Errorf("1 GiB all-to-all on 2×8 MI355X: %.1f GB/s per NIC, want the NIC's (RCCL's net channels)", v)
	}
	// 8 ranks on one node and 4 on the other: NCCL groups a node's peers by 4 (the
	// greatest common divisor of 8 and every node's ranks), so a rank of the smaller
	// node reaches its 8 remote peers on 2 groups' 4 channels, 56 GB/s, and its NIC
	// bounds it rather than one group's 28 GB/s.
	c := mustCluster(t, "dgx-h100", 2, nil)
	uneven := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	e, err := collective.NewModel(collective.Default()).Estimate(mustPlace(t, c, uneven, nil), collective.AllToAll, 12<<20*100, collective.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if oneGroup := 8.0 / 12 * (12 << 20 * 100) / 28e3; e.TimeUs >= oneGroup {
		t.Errorf("1.2 GB all-to-all over 8 + 4 H100: %.0f µs, want under one group's %.0f µs", e.TimeUs, oneGroup)
	}
	// The pairwise exchange does not escape the net channels: each of its n − 1
	// steps is a send/recv to one peer on that peer's 2 channels. Two ranks on two
	// nodes move at 28 GB/s whichever Auto picks, and forced on 2×8 the 15 steps
	// take at least 15 × S/16 at 28 GB/s.
	if e := price("dgx-h100", 2, 1, collective.AllToAll, gib); e.AlgBWGBps/2 > 28.5 {
		t.Errorf("1 GiB all-to-all on 2×1 H100 (%s): %.1f GB/s leaving each GPU, want at most 28", e.Algo, e.AlgBWGBps/2)
	}
	g2, _, err := collective.NodeGroups(c, 2, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := collective.NewModel(collective.Default()).Estimate(mustPlace(t, c, g2, nil), collective.AllToAll, gib, collective.Options{Algo: collective.Pairwise})
	if err != nil {
		t.Fatal(err)
	}
	if floor := 15 * gib / 16 / 28e3; pw.TimeUs < floor {
		t.Errorf("1 GiB pairwise all-to-all on 2×8 H100: %.0f µs, under its steps' net channels' %.0f µs", pw.TimeUs, floor)
	}
	// The 4-node call is faster per byte leaving a node than the 2-node one.
	if two.TimeUs/(gib/2) <= four.TimeUs/(gib*3.0/4) {
		t.Errorf("2 nodes %.3g µs per remote byte, 4 nodes %.3g: want 2 nodes channel-bound, slower", two.TimeUs/(gib/2), four.TimeUs/(gib*3.0/4))
	}
}

// The channels NCCL gives a peer on another node follow the cluster's NCCL release
// (paths.cc ncclTopoGetNchannels): through 2.28 two, whatever the NIC, so a 1 GiB
// send/recv between two H100 nodes crosses at 2 × 14 GB/s; from 2.29 one per
// 14 GB/s of the GPU's 400 Gb/s NIC, four, and the NIC bounds it. On 16 nodes of
// 8 (128 ranks) 2.28 halves the two to one (2 × 128 > 4 × 32 p2p channels) and
// 2.29 halves its four to two (4 × 16 groups of 8 > 32). A cluster that states no
// release takes 2.28's rule.
func TestP2PNetChannelsPerNCCLRelease(t *testing.T) {
	price := func(release string, nodes, perNode int, op collective.Op, size float64) collective.Estimate {
		return priceOnNodes(t, "dgx-h100", func(s *topology.Spec) { s.NCCL = release }, nodes, perNode, op, size)
	}
	const gib = 1 << 30
	for _, tc := range []struct {
		release       string
		bySpeed       bool
		manyNodePeers int
	}{
		{"", false, 1},
		{"2.21.5", false, 1},
		{"2.27.7", false, 1},
		{"2.28.9", false, 1},
		{"2.29", true, 2},
		{"2.29.7", true, 2},
		{"2.31.2", true, 2},
	} {
		sr := price(tc.release, 2, 1, collective.SendRecv, gib)
		a2a := price(tc.release, 2, 8, collective.AllToAll, gib)
		remote := gib / 2 / a2a.TimeUs / 1e3 // GB/s leaving each GPU
		if !tc.bySpeed {
			if sr.Channels != 2 || sr.AlgBWGBps > 28 || sr.AlgBWGBps < 26 {
				t.Errorf("NCCL %q: 1 GiB send/recv across 2 H100 nodes on %d channels at %.1f GB/s, want 2 at about 28", tc.release, sr.Channels, sr.AlgBWGBps)
			}
			if remote > 28 || remote < 26 {
				t.Errorf("NCCL %q: 1 GiB all-to-all on 2×8 H100 moves %.1f GB/s off each GPU, want one group's 2 channels' 28", tc.release, remote)
			}
		} else {
			if sr.Channels != 4 || sr.AlgBWGBps < 40 || sr.AlgBWGBps > 50 {
				t.Errorf("NCCL %q: 1 GiB send/recv across 2 H100 nodes on %d channels at %.1f GB/s, want 4 and the NIC's 40–50", tc.release, sr.Channels, sr.AlgBWGBps)
			}
			if remote < 40 || remote > 50 {
				t.Errorf("NCCL %q: 1 GiB all-to-all on 2×8 H100 moves %.1f GB/s off each GPU, want the NIC's 40–50", tc.release, remote)
			}
		}
		if many := price(tc.release, 16, 8, collective.SendRecv, gib); many.Channels != tc.manyNodePeers {
			t.Errorf("NCCL %q: 1 GiB send/recv ring over 16×8 H100 on %d channels per peer, want %d", tc.release, many.Channels, tc.manyNodePeers)
		}
	}
}

// priceOnNodes prices op of size bytes with the shipped constants on one group of
// perNode GPUs on each of nodes nodes of a catalog system (edit, if any, applied to
// its spec).
func priceOnNodes(t *testing.T, system string, edit func(*topology.Spec), nodes, perNode int, op collective.Op, size float64) collective.Estimate {
	t.Helper()
	c := mustCluster(t, system, nodes, edit)
	group, _, err := collective.NodeGroups(c, nodes, perNode, false)
	if err != nil {
		t.Fatal(err)
	}
	e, err := collective.NewModel(collective.Default()).Estimate(mustPlace(t, c, group, nil), op, size, collective.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
