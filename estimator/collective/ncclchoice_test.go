package collective

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
)

func placeNodes(t *testing.T, system string, nodes, ppn int) *Placement {
	t.Helper()
	cl, err := catalog.Cluster(system, nodes)
	if err != nil {
		t.Fatal(err)
	}
	group, _, err := NodeGroups(cl, nodes, ppn, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Place(cl, group, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// NCCL's tuning model on one node of 8 GPUs switches where its TUNING tables say:
// on 8×H200 (the same NVLink as H100) ring/LL up to 1 MiB and NVLS from 2 MiB, the
// switch NCCL's TUNING log shows on 8×H200 (stas00/ml-engineering network/README.md);
// on 8×A100 ring/LL up to 2 MiB, ring/LL128 from 4 to 16 MiB and ring/Simple from
// 32 MiB (the arg-min of NCCL's table for DGX A100: 12 channels of 20 GB/s, LL capped
// at 87.7 GB/s, LL128 at 0.92 of the bus; Simple pays 8.4 + 14 × 3.4 µs of latency).
// Under Auto the model runs that choice.
func TestNCCLChoiceSingleNodeSwitchPoints(t *testing.T) {
	m := nccltuned()
	const MiB = 1 << 20
	for _, c := range []struct {
		system string
		want   func(size float64) (Algorithm, Protocol)
	}{
		{"hgx-h200", func(s float64) (Algorithm, Protocol) {
			if s <= 1*MiB {
				return Ring, LL
			}
			return NVLS, Simple
		}},
		{"dgx-h100", func(s float64) (Algorithm, Protocol) {
			if s <= 1*MiB {
				return Ring, LL
			}
			return NVLS, Simple
		}},
		{"dgx-a100", func(s float64) (Algorithm, Protocol) {
			switch {
			case s <= 2*MiB:
				return Ring, LL
			case s <= 16*MiB:
				return Ring, LL128
			}
			return Ring, Simple
		}},
	} {
		p := placeNodes(t, c.system, 1, 8)
		for s := 8.0; s <= 4<<30; s *= 2 {
			a, pr, ok := m.ncclChoice(p, AllReduce, s, true)
			wa, wp := c.want(s)
			if !ok || a != wa || pr != wp {
				t.Errorf("%s: %.0f B: NCCL's choice %s/%s (ok %v), want %s/%s", c.system, s, a, pr, ok, wa, wp)
			}
			e, err := m.Estimate(p, AllReduce, s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if e.Algo != wa || e.Protocol != wp {
				t.Errorf("%s: %.0f B: Auto runs %s/%s, want NCCL's %s/%s", c.system, s, e.Algo, e.Protocol, wa, wp)
			}
		}
	}
}

// Across two DGX H100 NCCL's table keeps the double tree with LL and LL128 for small
// and mid-sized all-reduces and takes the NVLS tree for large ones; its LL128 double
// tree is cheaper in its own figures than Simple's at 256 KiB (14 + 2 × (7 × 1.25 +
// 8.5) = 48.5 µs of latency against 8.4 + 2 × (7 × 4 + 14) = 92.4 µs).
// Across 2×p4d (EFA carrying Simple only) every choice is Simple.
func TestNCCLChoiceAcrossNodes(t *testing.T) {
	m := NewModel(Default())
	p := placeNodes(t, "dgx-h100", 2, 8)
	for s, want := range map[float64][2]any{
		8:         {DoubleTree, LL},
		256 << 10: {DoubleTree, LL128},
		1 << 30:   {NVLSTree, Simple},
	} {
		a, pr, ok := m.ncclChoice(p, AllReduce, s, true)
		if !ok || a != want[0] || pr != want[1] {
			t.Errorf("2×8 H100: %.0f B: %s/%s, want %v/%v", s, a, pr, want[0], want[1])
		}
	}
	g, _ := ncclGraphOf(p)
	if lat := g.time(AllReduce, nTree, 1, 0); math.Abs(lat-48.5) > 1e-3 {
		t.Errorf("double tree LL128 latency %.2f µs, NCCL's table 48.5", lat)
	}
	if lat := g.time(AllReduce, nTree, 2, 0); math.Abs(lat-92.4) > 1e-3 {
		t.Errorf("double tree Simple latency %.2f µs, NCCL's table 92.4", lat)
	}
	p4d := placeNodes(t, "aws-p4d", 2, 8)
	for s := 8.0; s <= 1<<30; s *= 4 {
		if _, pr, ok := m.ncclChoice(p4d, AllReduce, s, true); !ok || pr != Simple {
			t.Errorf("2×p4d: %.0f B: protocol %s, want Simple (the only one across EFA v1)", s, pr)
		}
	}
}

// NCCL has no tuning model for send/recv and all-to-all, and AMD GPUs run RCCL's
// tables: there the model keeps its own choice. A forced protocol is honoured.
func TestNCCLChoiceWhereNot(t *testing.T) {
	m := nccltuned()
	p := placeNodes(t, "dgx-h100", 1, 8)
	if _, _, ok := m.ncclChoice(p, AllToAll, 1<<20, true); ok {
		t.Error("all-to-all: NCCL has no tuning model for it")
	}
	amd := placeNodes(t, "oci-mi300x", 1, 8)
	if _, _, ok := m.ncclChoice(amd, AllReduce, 1<<20, true); ok {
		t.Error("MI300X: RCCL's tables are not NCCL's")
	}
	e, err := m.Estimate(p, AllReduce, 8<<20, Options{ForceProtocol: true, Protocol: LL128})
	if err != nil {
		t.Fatal(err)
	}
	if e.Algo != NVLS && e.Protocol != LL128 {
		t.Errorf("NCCL_PROTO=LL128: %s/%s", e.Algo, e.Protocol)
	}
}

func TestLog2i(t *testing.T) {
	for n, want := range map[int]int{0: -1, 1: 0, 2: 1, 3: 1, 4: 2, 1023: 9, 1024: 10} {
		if got := log2i(n); got != want {
			t.Errorf("log2i(%d) = %d, want %d", n, got, want)
		}
	}
}

// nccltuned is the shipped model, which runs NCCL's choice under Auto.
func nccltuned() *Model { return NewModel(Default()) }

// With one GPU per node NCCL's tree search has the plain tree pattern (search.cc
// forces it for ngpus == 1) and its tuning takes 0.85 off the tree's bus bandwidth
// (tuning.cc: maxTreePattern == NCCL_TOPO_PATTERN_TREE). Two DGX H100 nodes, one GPU
// each: the tree's bus is min(NVLink 18 × 20.6 = 370.8, 2 × one 50 GB/s NIC) = 100
// GB/s, × 0.92 = 92 (12 channels × 41.4 GB/s do not bind), × 0.85 = 78.2, × 0.5 =
// 39.1 GB/s of algorithm bandwidth; a 4 GiB call is past the size correction's table.
func TestNCCLPlainTreePattern(t *testing.T) {
	const bytes = 4 << 30
	g, _ := ncclGraphOf(placeNodes(t, "dgx-h100", 2, 1))
	if !g.treePattern {
		t.Fatal("2 nodes × 1 GPU: want NCCL's plain tree pattern")
	}
	_, xfer := g.parts(AllReduce, nTree, 2, bytes)
	if want := bytes / (1000 * 39.1); math.Abs(xfer-want) > 1e-6*want {
		t.Errorf("tree Simple transfer %.1f µs, NCCL's table %.1f µs (39.1 GB/s)", xfer, want)
	}
	if g8, _ := ncclGraphOf(placeNodes(t, "dgx-h100", 2, 8)); g8.treePattern {
		t.Error("2 nodes × 8 GPUs: the search's balanced tree is not forced to the plain pattern")
	}
}

// NCCL's node on GB200 NVL72 is the rack (the MNNVL clique), whose fused topology
// holds every tray's NICs and whose NVLS graph has at most NCCL_MAX_NVLS_ARITY (32)
// heads (src/graph/topo.cc, src/graph/search.cc, src/include/device.h, v2.25.1-1).
// Across two racks of 18 trays (4 GPUs and 4 × 400 Gb/s a tray, NCCL 2.25) its
// search finds 32 NVLS channels at 20 GB/s (32 × 20 + 20 ≤ 720 GB/s of NVLink on
// the heads, the SM100 ladder's 20 the fastest that fits; 72 NICs, one a head) and
// 15 ring channels at 48 GB/s (720 GB/s of NVLink); its table then prices the NVLS
// tree at 32 × 20 × 5/6 = 533 GB/s and the double tree with Simple at 720 × 0.92 / 2
// = 331 GB/s, so it runs the NVLS tree at every size of CoreWeave's two-rack sweep
// (512 MiB–16 GiB, coreweave/nccl-tests#43), whose busbw rises smoothly to 810 GB/s.
// With one tray's 4 NICs a rack (200 GB/s) the NVLS tree came out at 167 GB/s, below
// the model's copy of the double tree (184 GB/s: its ring and tree graphs still see one
// tray's NICs, docs/calibration.md), and the copy took the double tree from 1 GiB.
func TestNCCLGraphMNNVLRack(t *testing.T) {
	cl, err := catalog.Cluster("gb200-nvl72", 36)
	if err != nil {
		t.Fatal(err)
	}
	cl.Spec.NCCL = "2.25.1"
	group, _, err := NodeGroups(cl, 36, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Place(cl, group, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := ncclGraphOf(p)
	if !ok || g.nodes != 2 || g.ppn != 72 {
		t.Fatalf("graph %+v: want 2 nodes of 72 GPUs", g)
	}
	if want := 72 * 400.0 / 8; math.Abs(g.nvlsNIC-want) > 1e-9 {
		t.Errorf("NIC bandwidth of a rack's NVLS graph %.0f GB/s, want %.0f (72 NICs)", g.nvlsNIC, want)
	}
	_, xfer := g.parts(AllReduce, nNVLSTree, 2, 1e9)
	if bw := 1e9 / (1000 * xfer); math.Abs(bw-32*20*5.0/6) > 0.5 {
		t.Errorf("NVLS tree %.1f GB/s of algorithm bandwidth, want 32 heads × 20 GB/s × 5/6 = 533.3", bw)
	}
	m := nccltuned()
	for _, gib := range []float64{0.5, 1, 2, 4, 8, 16} {
		a, pr, ok := m.ncclChoice(p, AllReduce, gib*(1<<30), true)
		if !ok || a != NVLSTree || pr != Simple {
			t.Errorf("%.1f GiB: NCCL's choice %v/%v, want NVLS tree/Simple", gib, a, pr)
		}
	}
}

// NCCL prices NVLS all-reduce at a bus bandwidth per node (tuning.cc v2.28.3-1:
// heads × the search's speed × nvlsEfficiency × (heads − 1)/heads × 2, converted
// by nRanks / nsteps), and on NVLink 5 the model's price never beats it: on a
// GB200 NVL72 rack (32 heads at 20 GB/s, 918 GB/s; CoreWeave's rack plateaus at
// 834–839) a 4 or 8 GiB call runs within 5 % under it, where the links' load alone
// priced it at 990–1 010 GB/s; on 8 B200 (8 heads at 80 GB/s, 829 GB/s) the links'
// own price, below it, stands.
func TestNVLSBusCeilingNVLink5(t *testing.T) {
	m := NewModel(Default())
	for _, tc := range []struct {
		name           string
		system         string
		nodes, perNode int
		ceiling        float64 // GB/s of bus bandwidth
		binds          bool
	}{
		{"one GB200 NVL72 rack", "gb200-nvl72", 18, 4, 32 * 20 * 0.74 * 31 / 32 * 2, true},
		{"8 B200", "dgx-b200", 1, 8, 8 * 80 * 0.74 * 7 / 8 * 2, false},
	} {
		cl, err := catalog.Cluster(tc.system, tc.nodes)
		if err != nil {
			t.Fatal(err)
		}
		group, _, err := NodeGroups(cl, tc.nodes, tc.perNode, false)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Place(cl, group, nil)
		if err != nil {
			t.Fatal(err)
		}
		bus, ok := nvlsBusCeilingGBps(p)
		if !ok || math.Abs(bus-tc.ceiling) > 1e-6 {
			t.Fatalf("%s: NVLS bus ceiling %.1f GB/s (%v), want %.1f", tc.name, bus, ok, tc.ceiling)
		}
		for _, gib := range []float64{4, 8} {
			e, err := m.Estimate(p, AllReduce, gib*(1<<30), Options{Algo: NVLS})
			if err != nil {
				t.Fatal(err)
			}
			if e.BusBWGBps > bus*1.0001 || tc.binds && e.BusBWGBps < 0.95*bus {
				t.Errorf("%s, %.0f GiB: %.0f GB/s of bus bandwidth, want at most %.0f (within 5 %%: %v)", tc.name, gib, e.BusBWGBps, bus, tc.binds)
			}
		}
	}
}

// NCCL's own table leaves Simple for LL when the links slow down: it caps the
// ring's LL bandwidth at llMaxBws (2 × 141 GB/s on one Blackwell node) whatever
// the links, while Simple's scales with them (tuning.cc, v2.27.7-1). A 7 MiB
// all-gather on 4 GPUs of an HGX B200 node (16 channels; NVLink 18 × 40 = 720 GB/s
// in NCCL's figures): LL 6.6 + 3 × 0.6 + 7340032 / (1000 × 282 × 4/3) = 27.92 µs,
// Simple 8.4 + 3 × 3.4 + 7340032 / (1000 × 720 × 4/3) = 26.25 µs, LL128 14 + 3 ×
// 1.9 + 7340032 / (1000 × 662.4 × 4/3) = 28.01 µs: Simple. At 0.8 × the NVLink
// bandwidth (576 GB/s; 560 on the search's speed ladder) Simple takes 28.16 µs
// (28.43), LL still 27.92: LL. The model runs NCCL's pick, so a slower NVLink can
// price such a call on another protocol (docs/step-model.md, "Metamorphic tests").
func TestNCCLChoiceLeavesSimpleOnSlowerNVLink(t *testing.T) {
	m := nccltuned()
	const bytes = 7340032
	for _, c := range []struct {
		scale float64
		want  Protocol
	}{{1, Simple}, {0.8, LL}} {
		p := placeNodes(t, "hgx-b200", 1, 4)
		s := p.Cluster.Spec
		s.GPU.NVLinkGBps *= c.scale
		if s.Intra.GPUBandwidthGBps > 0 {
			s.Intra.GPUBandwidthGBps *= c.scale
		}
		cl, err := s.Build()
		if err != nil {
			t.Fatal(err)
		}
		group, _, err := NodeGroups(cl, 1, 4, false)
		if err != nil {
			t.Fatal(err)
		}
		if p, err = Place(cl, group, nil); err != nil {
			t.Fatal(err)
		}
		a, pr, ok := m.ncclChoice(p, AllGather, bytes, true)
		if !ok || a != Ring || pr != c.want {
			t.Errorf("%.1f × NVLink: NCCL picks %v/%v, want ring/%v", c.scale, a, pr, c.want)
		}
		g, _ := ncclGraphOf(p)
		if ll := g.time(AllGather, nRing, 0, bytes); math.Abs(ll-27.92) > 0.01 {
			t.Errorf("%.1f × NVLink: NCCL's LL estimate %.2f µs, want 27.92", c.scale, ll)
		}
	}
}

// NCCL 2.28 caps a Blackwell ring's LL128 channel at 2 × 36.7 GB/s on one node
// (tuning.cc line 179 at v2.28.7-1: perChMaxRingLL128Bws {2*36.7, 34.6, 2*36.7}), 2.29
// at 40 (v2.29.7-1). On one GB300 tray of 4 GPUs (the model's 16 ring channels on
// 720 GB/s of NVLink, 18 × 40) a 16 MiB all-reduce is, by NCCL's table, LL128 at
// min(0.92 × 720, 16 × 73.4) = 662.4 GB/s of bus bandwidth, 14 + 6 × 1.9 = 25.4 µs +
// 16 MiB / (662.4 × 4/6) = 38.0 µs, against Simple at 720 GB/s, 8.4 + 6 × 3.4 = 28.8 µs
// + 35.0 µs: NCCL 2.28 runs LL128 (63.4 against 63.8 µs), as OCI's GB300 sweep (NCCL
// 2.28.7) measures (75.4 µs, the LL128 price 70.2, Simple's 105.7); 2.29's cap of
// 16 × 40 = 640 GB/s gives LL128 39.3 µs of transfer and Simple is chosen.
func TestNCCL228RingLL128CapBlackwell(t *testing.T) {
	m := nccltuned()
	for _, c := range []struct {
		nccl string
		want Protocol
		cap  float64 // the channels' cap; 0: none binds, 0.92 of the ring's bus
	}{{"2.28.7", LL128, 0}, {"2.29.7", Simple, 16 * 40}} {
		cl, err := catalog.Cluster("gb300-nvl72", 1)
		if err != nil {
			t.Fatal(err)
		}
		cl.Spec.NCCL = c.nccl
		group, _, err := NodeGroups(cl, 1, 4, false)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Place(cl, group, nil)
		if err != nil {
			t.Fatal(err)
		}
		g, ok := ncclGraphOf(p)
		if !ok || g.channels != 16 || math.Abs(g.intra-720) > 2 {
			t.Fatalf("NCCL %s: graph of %v channels on %.1f GB/s, want 16 on 720", c.nccl, g.channels, g.intra)
		}
		S := float64(16 << 20)
		_, xfer := g.parts(AllReduce, nRing, 1, S)
		want := c.cap
		if want == 0 {
			want = 0.92 * g.intra
		}
		if bus := S / (1000 * xfer) * 6 / 4; math.Abs(bus-want) > 0.5 {
			t.Errorf("NCCL %s: ring LL128 bus bandwidth %.1f GB/s, want %.1f", c.nccl, bus, want)
		}
		a, pr, ok := m.ncclChoice(p, AllReduce, S, true)
		if !ok || a != Ring || pr != c.want {
			t.Errorf("NCCL %s, 16 MiB on 4 GB300: NCCL's choice %v/%v, want ring/%v", c.nccl, a, pr, c.want)
		}
	}
}

// From 2.28 NCCL's table prices an NVLS all-reduce with nvlsEfficiency (tuning.cc
// v2.28.7-1 lines 285–300, 348): a head at the search's speed for the NVLink over
// heads + 1, × 0.74 × (heads − 1)/heads × 2 on Blackwell, the heads' sum converted by
// nRanks / nsteps as a ring's. On 8 B200 (8 heads at 80 GB/s) that is 8 × 80 × 0.74 ×
// 7/8 × 2 = 828.8 GB/s of bus bandwidth, 828.8 × 8/14 = 473.6 of algorithm
// bandwidth; on a GB300 NVL72 rack's 64 ranks of one MNNVL node (32 heads at 20 GB/s)
// 32 × 20 × 0.74 × 31/32 × 2 = 917.6, × 64/126 = 466.1. 2.27 priced them at heads ×
// speed × 5/6: 533.3 GB/s on both. The choices of OCI's GB300 sweeps (NCCL 2.28.7) do
// not move: NVLS at every size on 64 ranks (at 512 KiB 25 + 1.1 µs against the LL
// ring's 6.6 + 126 × 0.6 = 82.2 µs of latency), the LL ring up to 2 MiB on 8 and NVLS
// from 4 MiB (25 + 8.9 against the LL ring's 41.0 µs).
func TestNCCL228NVLSBandwidth(t *testing.T) {
	m := nccltuned()
	for _, c := range []struct {
		system       string
		nodes, ranks int
		nccl         string
		want         float64
	}{
		{"hgx-b200", 1, 8, "2.28.7", 8 * 80 * 0.74 * 7 / 8 * 2 * 8 / 14},
		{"hgx-b200", 1, 8, "2.27.7", 8 * 80 * 5.0 / 6},
		{"gb300-nvl72", 16, 64, "2.28.7", 32 * 20 * 0.74 * 31 / 32 * 2 * 64 / 126},
		{"gb300-nvl72", 16, 64, "2.27.7", 32 * 20 * 5.0 / 6},
	} {
		cl, err := catalog.Cluster(c.system, c.nodes)
		if err != nil {
			t.Fatal(err)
		}
		cl.Spec.NCCL = c.nccl
		group, _, err := NodeGroups(cl, c.nodes, c.ranks/c.nodes, false)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Place(cl, group, nil)
		if err != nil {
			t.Fatal(err)
		}
		g, ok := ncclGraphOf(p)
		if !ok || g.nodes != 1 {
			t.Fatalf("%s NCCL %s: graph %+v, want one node", c.system, c.nccl, g)
		}
		_, xfer := g.parts(AllReduce, nNVLS, 2, 1e9)
		if bw := 1e9 / (1000 * xfer); math.Abs(bw-c.want) > 0.5 {
			t.Errorf("%s, %d ranks, NCCL %s: NVLS all-reduce %.1f GB/s of algorithm bandwidth, want %.1f", c.system, c.ranks, c.nccl, bw, c.want)
		}
		if c.ranks != 64 {
			continue
		}
		for _, mib := range []float64{0.5, 16, 1024, 16384} {
			a, pr, ok := m.ncclChoice(p, AllReduce, mib*(1<<20), true)
			if !ok || a != NVLS || pr != Simple {
				t.Errorf("64 ranks, NCCL %s, %.1f MiB: NCCL's choice %v/%v, want NVLS/Simple", c.nccl, mib, a, pr)
			}
		}
	}
}
