package catalog_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

func TestSystemsBuild(t *testing.T) {
	systems := catalog.Systems()
	if len(systems) < 15 {
		t.Fatalf("catalog has %d systems, want at least 15", len(systems))
	}
	for _, s := range systems {
		t.Run(s.Name, func(t *testing.T) {
			if s.Nodes != 1 {
				t.Errorf("template Nodes = %d, want 1", s.Nodes)
			}
			if s.Source == "" || s.Description == "" || s.GPU.Source == "" {
				t.Errorf("missing source or description: %+v", s)
			}
			// Hardware only: calibrated link constants come from topology.Defaults.
			if s.Intra.Efficiency != 0 || s.Intra.LatencyUs != 0 || s.NICs.Efficiency != 0 || s.NICs.LatencyUs != 0 {
				t.Errorf("template sets fitted link constants: intra %+v nics %+v", s.Intra, s.NICs)
			}
			for _, nodes := range []int{1, 2, 16, 1024} {
				s.Nodes = nodes
				c, err := s.Build()
				if err != nil {
					t.Fatalf("nodes=%d: %v", nodes, err)
				}
				if got, want := c.GPUs(), nodes*s.GPUsPerNode; got != want {
					t.Errorf("nodes=%d: %d GPUs, want %d", nodes, got, want)
				}
			}
		})
	}
	if !slices.IsSortedFunc(systems, func(a, b topology.Spec) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Systems() is not sorted by name")
	}
}

func TestBriefSystemsPresent(t *testing.T) {
	for _, name := range []string{
		"dgx-a100", "dgx-a100-40gb", "dgx-h100", "hgx-h200", "hgx-b200", "aws-p4d", "aws-p5",
		"aws-p6-b200", "azure-nd-h100-v5", "azure-nd-a100-v4", "oci-bm-gpu-a100", "oci-mi300x",
		"gb200-nvl72", "mi355x", "hgx-b300", "gb300-nvl72",
	} {
		s, err := catalog.System(name)
		if err != nil {
			t.Errorf("System(%q): %v", name, err)
			continue
		}
		if s.Name != name {
			t.Errorf("System(%q).Name = %q", name, s.Name)
		}
	}
}

func TestGPUsValidate(t *testing.T) {
	gpus := catalog.GPUs()
	if len(gpus) != 14 {
		t.Errorf("catalog has %d GPUs, want 14", len(gpus))
	}
	for _, g := range gpus {
		t.Run(g.Name, func(t *testing.T) {
			if err := g.Validate("gpu."); err != nil {
				t.Fatal(err)
			}
			if g.Source == "" {
				t.Error("no source")
			}
			for _, d := range []hardware.DType{hardware.FP32, hardware.BF16, hardware.FP16} {
				if _, err := g.Peak(d); err != nil {
					t.Error(err)
				}
			}
			// Dense rates: bf16 is twice tf32 (where present) and half fp8 on every
			// generation in the catalog — as rated; the GB200's are measured, FP8 and
			// BF16 each against the B200's (gpus.go gb200Peak), so its fp8/bf16 is the
			// two measured ratios' quotient, 2 × 1.0533 / 1.0441.
			if tf32, ok := g.PeakTFLOPS[hardware.TF32]; ok && math.Abs(g.PeakTFLOPS[hardware.BF16]/tf32-2) > 0.05 {
				t.Errorf("bf16/tf32 = %v, want 2", g.PeakTFLOPS[hardware.BF16]/tf32)
			}
			wantFP8 := 2.0
			if g.Name == "GB200" {
				wantFP8 = 2 * (3615.6 / 3432.5) / (1822.0 / 1745.0)
			}
			if fp8, ok := g.PeakTFLOPS[hardware.FP8]; ok && math.Abs(fp8/g.PeakTFLOPS[hardware.BF16]-wantFP8) > 0.01 {
				t.Errorf("fp8/bf16 = %v, want %v", fp8/g.PeakTFLOPS[hardware.BF16], wantFP8)
			}
		})
	}
	if !slices.IsSortedFunc(gpus, func(a, b hardware.GPU) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("GPUs() is not sorted by name")
	}
}

// Spot checks against the vendors' datasheets.
func TestDatasheetValues(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		gpu   string
		field string
		got   func(hardware.GPU) float64
		want  float64
	}{
		{"H100-SXM", "bf16 TFLOP/s (dense)", peak(hardware.BF16), 989.4},
		{"H100-SXM", "fp8 TFLOP/s (dense)", peak(hardware.FP8), 1978.9},
		{"H100-SXM", "NVLink GB/s per direction", nvlink, 450},
		{"H100-SXM", "HBM GB/s", hbm, 3350},
		{"A100-80GB", "HBM GB/s", hbm, 2039},
		{"A100-80GB", "HBM bytes", memBytes, 80 * gib},
		{"A100-40GB", "HBM GB/s", hbm, 1555},
		{"A100-80GB", "bf16 TFLOP/s", peak(hardware.BF16), 312},
		{"A100-80GB", "NVLink GB/s per direction", nvlink, 300},
		{"H200", "HBM GB/s", hbm, 4800},
		{"H200", "HBM bytes", memBytes, 141 * gib},
		{"H800", "NVLink GB/s per direction", nvlink, 200},
		{"H20", "bf16 TFLOP/s", peak(hardware.BF16), 148},
		{"H20", "NVLink GB/s per direction", nvlink, 450},
		{"B200", "bf16 TFLOP/s (dense)", peak(hardware.BF16), 2250},
		{"B200", "NVLink GB/s per direction", nvlink, 900},
		// GB200: the B200's rates × the measured matmul ratio (stas00/ml-engineering,
		// "Maximum Achievable Matmul FLOPS": GB200 1822.0 / 3615.6, B200 1745.0 /
		// 3432.5 TFLOP/s BF16 / FP8), not NVIDIA's 2500 / 5000.
		{"GB200", "bf16 TFLOP/s (dense)", peak(hardware.BF16), math.Round(2250*1822.0/1745.0*10) / 10},
		{"GB200", "fp8 TFLOP/s (dense)", peak(hardware.FP8), math.Round(4500*3615.6/3432.5*10) / 10},
		{"GB200", "NVLink GB/s per direction", nvlink, 900},
		// HGX B300: FP8/FP6 72, FP16/BF16 36, TF32 18 PFLOP/s with sparsity per 8 GPUs.
		{"B300", "fp8 TFLOP/s (dense)", peak(hardware.FP8), 72e3 / 2 / 8},
		{"B300", "bf16 TFLOP/s (dense)", peak(hardware.BF16), 36e3 / 2 / 8},
		{"B300", "tf32 TFLOP/s (dense)", peak(hardware.TF32), 18e3 / 2 / 8},
		{"B300", "HBM bytes", memBytes, 270 * gib},
		{"B300", "HBM GB/s", hbm, 8000},
		{"B300", "NVLink GB/s per direction", nvlink, 900},
		// GB300 NVL72: FP8/FP6 720, FP16/BF16 360, TF32 180 PFLOP/s with sparsity
		// per 72 GPUs; HBM3e 576 TB/s per 72 GPUs; NVLink 130 TB/s per 72 GPUs.
		{"GB300", "fp8 TFLOP/s (dense)", peak(hardware.FP8), 720e3 / 2 / 72},
		{"GB300", "bf16 TFLOP/s (dense)", peak(hardware.BF16), 360e3 / 2 / 72},
		{"GB300", "tf32 TFLOP/s (dense)", peak(hardware.TF32), 180e3 / 2 / 72},
		{"GB300", "HBM bytes", memBytes, 288 * gib},
		{"GB300", "HBM GB/s", hbm, 576e3 / 72},
		{"MI300X", "bf16 TFLOP/s (dense)", peak(hardware.BF16), 1307.4},
		{"MI300X", "Infinity Fabric GB/s per direction", nvlink, 7 * 64},
		{"MI300X", "HBM GB/s", hbm, 5300},
		{"MI355X", "Infinity Fabric GB/s per direction", nvlink, 7 * 76.8},
		{"MI355X", "HBM bytes", memBytes, 288 * gib},
	}
	for _, tt := range tests {
		t.Run(tt.gpu+"/"+tt.field, func(t *testing.T) {
			g, err := catalog.GPU(tt.gpu)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.got(g); math.Abs(got-tt.want) > 1e-6*tt.want {
				t.Errorf("%s = %v, want %v", tt.field, got, tt.want)
			}
		})
	}
	a100, _ := catalog.GPU("A100-80GB")
	if _, err := a100.Peak(hardware.FP8); err == nil {
		t.Error("A100 has an fp8 rate; Ampere has no FP8 tensor cores")
	}
}

func peak(d hardware.DType) func(hardware.GPU) float64 {
	return func(g hardware.GPU) float64 { return g.PeakTFLOPS[d] }
}
func nvlink(g hardware.GPU) float64   { return g.NVLinkGBps }
func hbm(g hardware.GPU) float64      { return g.MemoryBandwidthGBps }
func memBytes(g hardware.GPU) float64 { return g.MemoryGB * 1e9 }

// The host CPUs of the reference systems: GB200's trays carry Grace CPUs (GB200
// datasheet: two Grace CPUs, 72 Arm Neoverse V2 cores each, per tray), the DGX and
// HGX baseboards x86 Xeons and EPYCs (DGX A100: EPYC 7742; DGX H100/H200: Xeon
// Platinum 8480C; DGX B200: Xeon Platinum 8570).
func TestHostCPUs(t *testing.T) {
	for name, want := range map[string]topology.CPUKind{
		"gb200-nvl72": topology.Grace, "dgx-a100": topology.X86, "dgx-h100": topology.X86,
		"hgx-h200": topology.X86, "hgx-b200": topology.X86,
		"gb300-nvl72": topology.Grace, "hgx-b300": topology.X86,
	} {
		s, err := catalog.System(name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Host.CPU != want {
			t.Errorf("%s: host cpu %q, want %q", name, s.Host.CPU, want)
		}
	}
}

func TestLookupNames(t *testing.T) {
	gpus := []struct{ query, want string }{
		{"H100-SXM", "H100-SXM"},
		{"h100", "H100-SXM"},
		{"H100 SXM5", "H100-SXM"},
		{"h100_sxm_80gb", "H100-SXM"},
		{"  H100-80GB-HBM3 ", "H100-SXM"},
		{"a100", "A100-80GB"},
		{"A100-SXM4-80GB", "A100-80GB"},
		{"a100-sxm4-40gb", "A100-40GB"},
		{"h200-sxm-141gb", "H200"},
		{"gb200", "GB200"},
		{"b200", "B200"},
		{"h800", "H800"},
		{"H20", "H20"},
		{"mi300x", "MI300X"},
		{"Instinct MI355X", "MI355X"},
	}
	for _, tt := range gpus {
		g, err := catalog.GPU(tt.query)
		if err != nil || g.Name != tt.want {
			t.Errorf("GPU(%q) = %q, %v; want %q", tt.query, g.Name, err, tt.want)
		}
	}
	systems := []struct{ query, want string }{
		{"DGX-H100", "dgx-h100"},
		{"dgx_a100", "dgx-a100"},
		{"p5.48xlarge", "aws-p5"},
		{"Standard_ND96isr_H100_v5", "azure-nd-h100-v5"},
		{"Standard_ND96asr_v4", "azure-nd-a100-v4"},
		{"BM.GPU4.8", "oci-bm-gpu-a100"},
		{"NVL72", "gb200-nvl72"},
		{"DGX B200", "hgx-b200"},
	}
	for _, tt := range systems {
		s, err := catalog.System(tt.query)
		if err != nil || s.Name != tt.want {
			t.Errorf("System(%q) = %q, %v; want %q", tt.query, s.Name, err, tt.want)
		}
	}
}

func TestUnknownNames(t *testing.T) {
	_, err := catalog.GPU("h9000")
	if !errors.Is(err, catalog.ErrNotFound) || !strings.Contains(err.Error(), "H100-SXM") {
		t.Errorf("GPU(h9000) error = %v; want ErrNotFound listing the known GPUs", err)
	}
	_, err = catalog.System("dgx-h9000")
	if !errors.Is(err, catalog.ErrNotFound) || !strings.Contains(err.Error(), "dgx-h100") {
		t.Errorf("System(dgx-h9000) error = %v; want ErrNotFound listing the known systems", err)
	}
	if _, err := catalog.Cluster("nope", 2); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Cluster(nope) error = %v; want ErrNotFound", err)
	}
	for _, empty := range []string{"", "   "} {
		if _, err := catalog.GPU(empty); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("GPU(%q) error = %v; want ErrNotFound", empty, err)
		}
	}
}

func TestReturnsCopies(t *testing.T) {
	g, _ := catalog.GPU("h100")
	g.PeakTFLOPS[hardware.BF16] = 1
	g.NVLinkGBps = 1
	s, _ := catalog.System("dgx-h100")
	s.GPU.PeakTFLOPS[hardware.FP8] = 1
	s.NICs.GPUNIC = append(s.NICs.GPUNIC, 3)
	s.NICs.Gbps = 1
	for _, g := range catalog.GPUs() {
		g.PeakTFLOPS[hardware.BF16] = 2
	}
	for _, s := range catalog.Systems() {
		s.GPU.PeakTFLOPS[hardware.BF16] = 2
	}
	spec, err := catalog.DecodeSpec([]byte(`{"base": "dgx-h100", "nics": {"gpu_nic": [0,1,2,3,4,5,6,7]}}`))
	if err != nil {
		t.Fatal(err)
	}
	spec.GPU.PeakTFLOPS[hardware.BF16] = 3
	spec.NICs.GPUNIC[0] = 7

	g2, _ := catalog.GPU("H100-SXM")
	if g2.PeakTFLOPS[hardware.BF16] != 989.4 || g2.NVLinkGBps != 450 {
		t.Errorf("catalog GPU changed through a returned copy: %+v", g2)
	}
	s2, _ := catalog.System("dgx-h100")
	if s2.GPU.PeakTFLOPS[hardware.FP8] != 1978.9 || s2.GPU.PeakTFLOPS[hardware.BF16] != 989.4 ||
		s2.NICs.Gbps != 400 || len(s2.NICs.GPUNIC) != 0 {
		t.Errorf("catalog system changed through a returned copy: %+v", s2)
	}
	// Systems sharing a GPU share nothing mutable with each other.
	p5, _ := catalog.System("aws-p5")
	if p5.GPU.PeakTFLOPS[hardware.BF16] != 989.4 {
		t.Errorf("aws-p5 GPU changed: %v", p5.GPU.PeakTFLOPS)
	}
}

func TestCluster(t *testing.T) {
	c, err := catalog.Cluster("dgx-h100", 4)
	if err != nil {
		t.Fatal(err)
	}
	if c.GPUs() != 32 || !c.NVLS() || c.Spec.Nodes != 4 {
		t.Errorf("dgx-h100 ×4: %d GPUs, NVLS %v, %d nodes", c.GPUs(), c.NVLS(), c.Spec.Nodes)
	}
	nvl, err := catalog.Cluster("gb200-nvl72", 36)
	if err != nil {
		t.Fatal(err)
	}
	if nvl.GPUs() != 144 || !nvl.SameDomain(0, 17) || nvl.SameDomain(17, 18) {
		t.Errorf("gb200-nvl72 ×36: %d GPUs; want 144 in two 72-GPU NVLink domains", nvl.GPUs())
	}
	// GB300 NVL72 keeps the rack: 18 trays of 4 GPUs in one NVLink domain.
	u, err := catalog.Cluster("gb300-nvl72", 36)
	if err != nil {
		t.Fatal(err)
	}
	if u.GPUs() != 144 || !u.SameDomain(0, 17) || u.SameDomain(17, 18) || !u.NVLS() {
		t.Errorf("gb300-nvl72 ×36: %d GPUs; want 144 in two 72-GPU NVLink domains with NVLS", u.GPUs())
	}
	if _, err := catalog.Cluster("dgx-h100", 0); !invalid.Is(err) {
		t.Errorf("Cluster(dgx-h100, 0) error = %v; want a field error", err)
	}
}

// The cloud shapes whose GPUs have several ports are modelled as one NIC per GPU
// carrying the ports' total, so the node's full network bandwidth is usable.
func TestNodeNetworkBandwidth(t *testing.T) {
	tests := map[string]float64{ // Gb/s per node
		"dgx-a100":         1600,
		"dgx-h100":         3200,
		"aws-p4d":          400,
		"aws-p5":           3200,
		"aws-p6-b200":      3200,
		"azure-nd-a100-v4": 1600,
		"oci-bm-gpu-a100":  1600,
		"oci-mi300x":       3200,
		"gb200-nvl72":      1600,
		"gb300-nvl72":      3200, // 4 ConnectX-8 × 800 Gb/s per tray
		"hgx-b300":         6400, // 8 ConnectX-8 × 800 Gb/s (HGX B300: 1.6 TB/s both ways)
	}
	for name, want := range tests {
		s, err := catalog.System(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(s.NICs.PerNode) * s.NICs.Gbps; got != want {
			t.Errorf("%s: %v Gb/s per node, want %v", name, got, want)
		}
	}
}

// docs/cluster-file.md lists every catalog entry, so the table does not fall behind.
func TestDocsListEveryEntry(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cluster-file.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range catalog.GPUs() {
		if !strings.Contains(string(doc), "| "+g.Name+" |") {
			t.Errorf("docs/cluster-file.md has no table row for GPU %s", g.Name)
		}
	}
	for _, s := range catalog.Systems() {
		if !strings.Contains(string(doc), "| `"+s.Name+"` |") {
			t.Errorf("docs/cluster-file.md has no table row for system %s", s.Name)
		}
	}
}

// The 750 W B200 (Meta's B200 hosts) is the 1000 W part at a power limit: its
// tensor rates sit on NVIDIA's own ratings of the same GPU at 700 W (HGX B100: 1.75
// PFLOP/s dense BF16, 3.5 FP8) and 1000 W (HGX B200: 2.25, 4.5), interpolated in log
// power and log rate (NVIDIA Blackwell datasheet), every format by the same
// fraction; its memory and links are the B200's.
func TestB200At750W(t *testing.T) {
	full, err := catalog.GPU("B200")
	if err != nil {
		t.Fatal(err)
	}
	capped, err := catalog.GPU("b200-750w")
	if err != nil {
		t.Fatal(err)
	}
	// The slope from the B100's rating to the 750 W one equals the slope from the
	// B100's to the B200's, on a log-log plot, for BF16 and FP8 alike.
	b100 := map[hardware.DType]float64{hardware.BF16: 1750, hardware.FP8: 3500}
	for d, r700 := range b100 {
		r750, r1000 := capped.PeakTFLOPS[d], full.PeakTFLOPS[d]
		if !(r700 < r750 && r750 < r1000) {
			t.Fatalf("%v: %.1f TFLOP/s at 750 W, want between the B100's %.0f and the B200's %.0f", d, r750, r700, r1000)
		}
		left := math.Log(r750/r700) / math.Log(750.0/700)
		whole := math.Log(r1000/r700) / math.Log(1000.0/700)
		if math.Abs(left-whole) > 0.002 {
			t.Errorf("%v: log-log slope 700→750 W %.4f, 700→1000 W %.4f: the 750 W rate is off NVIDIA's ratings", d, left, whole)
		}
	}
	f := capped.PeakTFLOPS[hardware.BF16] / full.PeakTFLOPS[hardware.BF16]
	for d, v := range full.PeakTFLOPS {
		if got := capped.PeakTFLOPS[d]; math.Abs(got-v*f) > 0.05+v*1e-4 {
			t.Errorf("%v: %.1f TFLOP/s at 750 W, want the B200's %.1f × %.4f (BF16's fraction)", d, got, v, f)
		}
	}
	if capped.Arch != full.Arch || capped.MemoryGB != full.MemoryGB || capped.MemoryBandwidthGBps != full.MemoryBandwidthGBps ||
		capped.NVLinkGBps != full.NVLinkGBps || capped.SMs != full.SMs {
		t.Errorf("B200-750W %+v: want the B200's architecture, memory, links and SMs (%+v)", capped, full)
	}
}
