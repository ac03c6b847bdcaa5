package topology_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

func h100() hardware.GPU {
	return hardware.GPU{Name: "H100-SXM", Arch: hardware.Hopper, PeakTFLOPS: map[hardware.DType]float64{hardware.BF16: 989}, MemoryGB: 80, MemoryBandwidthGBps: 3350, NVLinkGBps: 450}
}

func spec() topology.Spec {
	return topology.Spec{
		Name: "test", GPU: h100(), Nodes: 4, GPUsPerNode: 8,
		Intra:   topology.Intra{Kind: topology.NVSwitch, NVLS: true},
		NICs:    topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.InfiniBand},
		Network: topology.Network{RailOptimized: true, NodesPerLeaf: 2},
	}
}

func build(t *testing.T, s topology.Spec) *topology.Cluster {
	t.Helper()
	c, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kinds(c *topology.Cluster, rs []int32) string {
	var out []string
	for _, r := range rs {
		out = append(out, c.Kind(r).String())
	}
	return strings.Join(out, ",")
}

func TestPaths(t *testing.T) {
	c := build(t, spec())
	tests := []struct {
		name     string
		src, dst int
		want     string
		lat      float64
	}{
		{"same node", 0, 5, "gpu-out,gpu-in", topology.NVLinkHopLatencyUs},
		{"same rail, same leaf", 3, 8 + 3, "nic-out,nic-in", topology.NetHopLatencyUs},
		{"cross rail: PXN over NVLink first", 3, 8 + 5, "gpu-out,gpu-in,nic-out,nic-in", topology.NetHopLatencyUs + topology.NVLinkHopLatencyUs},
		{"other leaf: through the spine", 3, 16 + 3, "nic-out,nic-in,leaf-up,leaf-down", topology.NetHopLatencyUs + topology.SpineLatencyUs},
		{"self", 4, 4, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, lat, cross := c.Path(tc.src, tc.dst, nil)
			if got := kinds(c, p); got != tc.want {
				t.Errorf("path %s, want %s", got, tc.want)
			}
			if math.Abs(lat-tc.lat) > 1e-9 { // sums of hop latencies: equal up to rounding
				t.Errorf("latency %v, want %v", lat, tc.lat)
			}
			if want := c.CrossesNetwork(tc.src, tc.dst); cross != want {
				t.Errorf("crosses the network %v, want %v", cross, want)
			}
		})
	}
}

func TestMeshAndDomainPaths(t *testing.T) {
	s := spec()
	s.Intra = topology.Intra{Kind: topology.Mesh, GPUBandwidthGBps: 448}
	c := build(t, s)
	p, _, _ := c.Path(1, 6, nil)
	if kinds(c, p) != "gpu-gpu" {
		t.Errorf("mesh path %s, want one pair link", kinds(c, p))
	}
	if got, want := c.Capacity(p[0]), c.IntraBW/7; got != want {
		t.Errorf("pair link %v B/µs, want a seventh of the GPU's %v", got, c.IntraBW)
	}
	s = spec()
	s.Intra.DomainNodes = 2
	c = build(t, s)
	p, _, _ = c.Path(1, 8+6, nil)
	if kinds(c, p) != "gpu-out,gpu-in" {
		t.Errorf("within an NVLink domain: %s, want NVLink ports", kinds(c, p))
	}
	p, _, _ = c.Path(1, 16+6, nil)
	if !strings.Contains(kinds(c, p), "nic-out") {
		t.Errorf("across NVLink domains: %s, want the network", kinds(c, p))
	}
}

// Capacities: achievable = line rate × efficiency, in bytes per µs.
func TestCapacities(t *testing.T) {
	c := build(t, spec())
	if got, want := c.IntraBW, 450*topology.NVLink4Efficiency*1e3; got != want {
		t.Errorf("NVLink port %v, want %v", got, want)
	}
	if got, want := c.NICBW, 50*topology.InfiniBandEfficiency*1e3; got != want {
		t.Errorf("NIC %v, want %v", got, want)
	}
	s := spec()
	s.Network.Oversubscription = 4
	s.Network.RailOptimized = false
	c = build(t, s)
	// 2 nodes × 8 NICs per leaf, a quarter of it up to the spine.
	if got, want := c.LeafBW, 2*8*c.NICBW/4; got != want {
		t.Errorf("leaf uplink %v, want %v", got, want)
	}
	s = spec()
	s.Intra.Efficiency, s.Intra.LatencyUs = 0.5, 2
	c = build(t, s)
	if c.IntraBW != 450*0.5*1e3 || c.IntraLatUs != 2 {
		t.Errorf("overrides ignored: %v B/µs, %v µs", c.IntraBW, c.IntraLatUs)
	}
}

func TestGPUNICMapping(t *testing.T) {
	s := spec()
	s.NICs.PerNode = 4
	c := build(t, s)
	for g, want := range []int{0, 0, 1, 1, 2, 2, 3, 3} {
		if got := c.NIC(g); got != want {
			t.Errorf("GPU %d on NIC %d, want %d (two GPUs per NIC)", g, got, want)
		}
	}
	if got := c.NIC(8 + 7); got != 4+3 {
		t.Errorf("node 1 GPU 7 on NIC %d, want node-global 7", got)
	}
}

func TestValidateNamesFields(t *testing.T) {
	tests := []struct {
		field string
		edit  func(*topology.Spec)
	}{
		{"name", func(s *topology.Spec) { s.Name = "" }},
		{"nodes", func(s *topology.Spec) { s.Nodes = 0 }},
		{"gpus_per_node", func(s *topology.Spec) { s.GPUsPerNode = 1000 }},
		{"intra.kind", func(s *topology.Spec) { s.Intra.Kind = "infiniband" }},
		{"intra.nvls", func(s *topology.Spec) { s.Intra.Kind = topology.PCIe }},
		{"intra.efficiency", func(s *topology.Spec) { s.Intra.Efficiency = 1.5 }},
		{"intra.gpu_bandwidth_gbps", func(s *topology.Spec) { s.Intra.GPUBandwidthGBps = -1 }},
		{"nics.per_node", func(s *topology.Spec) { s.NICs.PerNode = 0 }},
		{"nics.gbps", func(s *topology.Spec) { s.NICs.Gbps = 0 }},
		{"nics.kind", func(s *topology.Spec) { s.NICs.Kind = "ethernet" }},
		{"nics.gpu_nic", func(s *topology.Spec) { s.NICs.GPUNIC = []int{0, 1} }},
		{"network.oversubscription", func(s *topology.Spec) { s.Network.Oversubscription = 0.5 }},
		{"gpu.memory_gb", func(s *topology.Spec) { s.GPU.MemoryGB = 0 }},
		{"gpu.arch", func(s *topology.Spec) { s.GPU.Arch = "volta" }},
		{"host.cpu", func(s *topology.Spec) { s.Host.CPU = "arm" }},
		{"host.memory_gb", func(s *topology.Spec) { s.Host = topology.Host{CPU: topology.Grace, LinkGBps: 450} }},
		{"nccl", func(s *topology.Spec) { s.NCCL = "2.29.x" }},
		{"nccl", func(s *topology.Spec) { s.NCCL = "2" }},
		{"nccl", func(s *topology.Spec) { s.NCCL = "v2.28.9-1" }},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			s := spec()
			tc.edit(&s)
			err := s.Validate()
			var fe *invalid.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a field error", err)
			}
			if !strings.Contains(err.Error(), tc.field+":") {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
			if _, err := s.Build(); err == nil {
				t.Error("Build accepted an invalid spec")
			}
		})
	}
	if err := spec().Validate(); err != nil {
		t.Errorf("valid spec rejected: %v", err)
	}
	// The host's CPU may be given alone: it prices the host's dispatch, and
	// offloading (which needs the host's memory and links) is checked where asked.
	for _, cpu := range []topology.CPUKind{"", topology.X86, topology.Grace} {
		s := spec()
		s.Host = topology.Host{CPU: cpu}
		if err := s.Validate(); err != nil {
			t.Errorf("host.cpu %q alone rejected: %v", cpu, err)
		}
	}
}

// A scale-up domain holds one node's GPUs, or a multi-node domain's, but never more
// than the cluster has.
func TestDomainGPUs(t *testing.T) {
	for _, c := range []struct{ domainNodes, nodes, want int }{{0, 4, 8}, {1, 4, 8}, {2, 4, 16}, {18, 4, 32}} {
		s := spec()
		s.Nodes, s.Intra.DomainNodes = c.nodes, c.domainNodes
		if got := build(t, s).DomainGPUs(); got != c.want {
			t.Errorf("%d-node domains on %d nodes: %d GPUs, want %d", c.domainNodes, c.nodes, got, c.want)
		}
	}
}

// The NCCL release parses as major.minor[.patch]; none stated is not ok. A
// release newer than the newest the model knows (2.31) is taken, up to 2.99, and
// priced by 2.31's rules: NCCLRelease gives 2.31.
func TestNCCLRelease(t *testing.T) {
	for _, tc := range []struct {
		in           string
		major, minor int
		ok           bool
	}{
		{"2.28.9", 2, 28, true},
		{"2.29", 2, 29, true},
		{"2.9.9", 2, 9, true},
		{"", 0, 0, false},
		{"2.28.9.1", 0, 0, false},
		{"2.-1", 0, 0, false},
		{"2.028", 0, 0, false},
		{"2.0", 2, 0, true},
		{"2.31.2", 2, 31, true},
		{"2.32", 2, 31, true}, // newer than the model knows: 2.31's rules
		{"2.33.1", 2, 31, true},
		{"2.99.99", 2, 31, true},
		{"2.100", 0, 0, false},
		{"9.99", 0, 0, false},
		{"3.0", 0, 0, false},
		{"1.3.4", 0, 0, false},
		{"2.999", 0, 0, false},
		{"2.28.100", 0, 0, false},
		{" 2.28", 0, 0, false},
		{"0.1", 0, 0, false},
	} {
		s := spec()
		s.NCCL = tc.in
		major, minor, ok := s.NCCLRelease()
		if major != tc.major || minor != tc.minor || ok != tc.ok {
			t.Errorf("NCCLRelease(%q) = %d, %d, %v; want %d, %d, %v", tc.in, major, minor, ok, tc.major, tc.minor, tc.ok)
		}
		if err := s.Validate(); tc.ok && err != nil {
			t.Errorf("release %q: %v", tc.in, err)
		}
	}
}

// ParseNCCLRelease takes NCCL 2.0 through 2.99 and returns the release stated
// (2.32 is 2.32: Spec.NCCLRelease is what prices it by 2.31's rules); what it
// refuses, it refuses saying why and stating the releases taken.
func TestParseNCCLRelease(t *testing.T) {
	for _, tc := range []struct {
		in           string
		major, minor int
	}{{"2.0", 2, 0}, {"2.31.2", 2, 31}, {"2.32", 2, 32}, {"2.33.1", 2, 33}, {"2.99.99", 2, 99}} {
		if major, minor, err := topology.ParseNCCLRelease(tc.in); err != nil || major != tc.major || minor != tc.minor {
			t.Errorf("ParseNCCLRelease(%q) = %d, %d, %v; want %d, %d", tc.in, major, minor, err, tc.major, tc.minor)
		}
	}
	for _, tc := range []struct{ in, why string }{
		{"", "must be an NCCL release"},
		{"2", "must be an NCCL release"},
		{"2.x", "must be an NCCL release"},
		{"2.28.7.1.2", "must be an NCCL release"},
		{" 2.28", "must be an NCCL release"},
		{"2.028", "must be an NCCL release"},
		{"+2.28", "must be an NCCL release"},
		{"2.-1", "negative"},
		{"-2.28", "negative"},
		{"2.28.-3", "negative"},
		{"3.0", "NCCL 3: no such release"},
		{"9.99.1", "NCCL 9: no such release"},
		{"1.3.4", "older than NCCL 2.0"},
		{"0.1", "older than NCCL 2.0"},
		{"2.100", "minor 100: past 99"},
		{"2.999.1", "minor 999: past 99"},
		{"2.28.100", "patch 100: past 99"},
		{"2.99999999999999999999", "must be an NCCL release"},
	} {
		_, _, err := topology.ParseNCCLRelease(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "2.0 through 2.99") ||
			!strings.Contains(err.Error(), fmt.Sprintf("(got %q)", tc.in)) {
			t.Errorf("ParseNCCLRelease(%q): %v; want a refusal saying %q, the releases taken (2.0 through 2.99) and the value", tc.in, err, tc.why)
		}
	}
}

// A release newer than 2.31 warns that 2.31's rules priced it, naming where it
// was stated and the release; 2.31 and older, none and a refused one do not.
func TestNewerNCCLWarning(t *testing.T) {
	want := "nccl 2.33.1 is newer than the newest release stepcost models (2.31); priced with 2.31's algorithm and protocol choices"
	if got := topology.NewerNCCLWarning("nccl", "2.33.1"); !strings.HasPrefix(got, want) {
		t.Errorf("NewerNCCLWarning(nccl, 2.33.1) = %q, want it to start with %q", got, want)
	}
	if got := topology.NewerNCCLWarning("ar.txt: NCCL", "2.32"); !strings.HasPrefix(got, "ar.txt: NCCL 2.32 is newer than the newest release stepcost models (2.31)") {
		t.Errorf("NewerNCCLWarning(ar.txt: NCCL, 2.32) = %q", got)
	}
	for _, v := range []string{"", "2.0", "2.28.9", "2.31", "2.31.99", "3.0", "2.100", "x"} {
		if got := topology.NewerNCCLWarning("nccl", v); got != "" {
			t.Errorf("NewerNCCLWarning(nccl, %q) = %q, want none", v, got)
		}
	}
}
