package catalog_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

const fullSpec = `{
  "name": "lab",
  "description": "four nodes",
  "source": "our rack",
  "gpu": {
    "name": "X1", "arch": "hopper",
    "peak_tflops": {"bf16": 900, "fp8": 1800},
    "memory_gb": 96, "memory_bandwidth_gbps": 3000, "nvlink_gbps": 400, "source": "ours"
  },
  "nodes": 4,
  "gpus_per_node": 8,
  "intra": {"kind": "nvswitch", "gpu_bandwidth_gbps": 380, "nvls": true, "domain_nodes": 1, "efficiency": 0.8, "latency_us": 0.9},
  "nics": {"per_node": 4, "gbps": 400, "kind": "roce", "gpu_nic": [0, 0, 1, 1, 2, 2, 3, 3], "efficiency": 0.9, "latency_us": 4},
  "network": {"rail_optimized": false, "nodes_per_leaf": 16, "oversubscription": 2, "spine_latency_us": 1.5}
}`

func TestDecodeSpecFull(t *testing.T) {
	got, err := catalog.DecodeSpec([]byte(fullSpec))
	if err != nil {
		t.Fatal(err)
	}
	want := topology.Spec{
		Name: "lab", Description: "four nodes", Source: "our rack",
		GPU: hardware.GPU{
			Name: "X1", Arch: hardware.Hopper,
			PeakTFLOPS: map[hardware.DType]float64{hardware.BF16: 900, hardware.FP8: 1800},
			MemoryGB:   96, MemoryBandwidthGBps: 3000, NVLinkGBps: 400, Source: "ours",
		},
		Nodes:       4,
		GPUsPerNode: 8,
		Intra:       topology.Intra{Kind: topology.NVSwitch, GPUBandwidthGBps: 380, NVLS: true, DomainNodes: 1, Efficiency: 0.8, LatencyUs: 0.9},
		NICs:        topology.NICs{PerNode: 4, Gbps: 400, Kind: topology.RoCE, GPUNIC: []int{0, 0, 1, 1, 2, 2, 3, 3}, Efficiency: 0.9, LatencyUs: 4},
		Network:     topology.Network{NodesPerLeaf: 16, Oversubscription: 2, SpineLatencyUs: 1.5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeSpec:\n got %+v\nwant %+v", got, want)
	}
}

// Every catalog system survives its own JSON form.
func TestDecodeSpecRoundTrip(t *testing.T) {
	for _, s := range catalog.Systems() {
		s.Nodes = 8
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := catalog.DecodeSpec(data)
		if err != nil {
			t.Errorf("%s: %v\n%s", s.Name, err, data)
			continue
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("%s: round trip changed the spec:\n got %+v\nwant %+v", s.Name, got, s)
		}
	}
}

func TestDecodeSpecConveniences(t *testing.T) {
	h100, _ := catalog.GPU("H100-SXM")
	dgx, _ := catalog.System("dgx-h100")
	tests := []struct {
		name  string
		in    string
		check func(t *testing.T, s topology.Spec)
	}{
		{
			name: "gpu by name, nodes default to 1",
			in: `{"name": "mine", "gpu": "h100", "gpus_per_node": 8, "intra": {"kind": "nvswitch", "nvls": true},
			      "nics": {"per_node": 8, "gbps": 400, "kind": "infiniband"}, "network": {"rail_optimized": true}}`,
			check: func(t *testing.T, s topology.Spec) {
				if !reflect.DeepEqual(s.GPU, h100) || s.Nodes != 1 {
					t.Errorf("gpu %+v nodes %d; want the catalog H100 and 1 node", s.GPU, s.Nodes)
				}
			},
		},
		{
			name: "base alone",
			in:   `{"base": "DGX-H100"}`,
			check: func(t *testing.T, s topology.Spec) {
				if !reflect.DeepEqual(s, dgx) {
					t.Errorf("got %+v, want the catalog dgx-h100", s)
				}
			},
		},
		{
			name: "base with overrides merges objects field by field",
			in:   `{"base": "dgx-h100", "name": "pod", "nodes": 16, "network": {"oversubscription": 2}, "nics": {"gbps": 200}}`,
			check: func(t *testing.T, s topology.Spec) {
				want := dgx
				want.Name, want.Nodes, want.Network.Oversubscription, want.NICs.Gbps = "pod", 16, 2, 200
				if !reflect.DeepEqual(s, want) {
					t.Errorf("got %+v\nwant %+v", s, want)
				}
			},
		},
		{
			name: "base order does not matter",
			in:   `{"nodes": 2, "base": "dgx-h100"}`,
			check: func(t *testing.T, s topology.Spec) {
				if s.Nodes != 2 || s.Name != "dgx-h100" {
					t.Errorf("got %s with %d nodes", s.Name, s.Nodes)
				}
			},
		},
		{
			name: "gpu object merges over the base GPU",
			in:   `{"base": "dgx-h100", "gpu": {"name": "H100-96GB", "memory_gb": 103, "peak_tflops": {"bf16": 900}}}`,
			check: func(t *testing.T, s topology.Spec) {
				if s.GPU.Name != "H100-96GB" || s.GPU.MemoryGB != 103 || s.GPU.NVLinkGBps != 450 ||
					s.GPU.PeakTFLOPS[hardware.BF16] != 900 || s.GPU.PeakTFLOPS[hardware.FP8] != 1978.9 {
					t.Errorf("gpu = %+v", s.GPU)
				}
			},
		},
		{
			name: "gpu name replaces the base GPU",
			in:   `{"base": "dgx-h100", "gpu": "H200"}`,
			check: func(t *testing.T, s topology.Spec) {
				if s.GPU.Name != "H200" || s.NICs.Gbps != 400 {
					t.Errorf("gpu %s, nics %+v", s.GPU.Name, s.NICs)
				}
			},
		},
		{
			name: "explicit zero and false override the base",
			in:   `{"base": "gb200-nvl72", "intra": {"domain_nodes": 0, "nvls": false}, "network": {"rail_optimized": false}}`,
			check: func(t *testing.T, s topology.Spec) {
				if s.Intra.DomainNodes != 0 || s.Intra.NVLS || s.Network.RailOptimized || s.GPUsPerNode != 4 {
					t.Errorf("intra %+v network %+v", s.Intra, s.Network)
				}
			},
		},
		{
			name: "null leaves a field as it was",
			in:   `{"base": "dgx-h100", "gpu": null, "nics": null, "name": null}`,
			check: func(t *testing.T, s topology.Spec) {
				if !reflect.DeepEqual(s, dgx) {
					t.Errorf("got %+v, want the catalog dgx-h100", s)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := catalog.DecodeSpec([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

// A host's CPU may be given alone over a base system, which keeps the base's memory
// and links; the host's other fields given alone keep the base's CPU; null is as
// if the field were left out.
func TestDecodeSpecHostCPU(t *testing.T) {
	tests := []struct {
		in   string
		want topology.CPUKind
		mem  float64
	}{
		{`{"base": "dgx-h100", "host": {"cpu": "grace"}}`, topology.Grace, 2048},
		{`{"base": "dgx-h100", "host": {"cpu": "x86"}}`, topology.X86, 2048},
		{`{"base": "dgx-h100"}`, topology.X86, 2048},
		{`{"base": "gb200-nvl72", "host": {"cpu": "x86"}}`, topology.X86, 960},
		{`{"base": "gb200-nvl72", "host": {"memory_gb": 500}}`, topology.Grace, 500},
		{`{"base": "gb200-nvl72", "host": {"cpu": null}}`, topology.Grace, 960},
	}
	for _, tt := range tests {
		s, err := catalog.DecodeSpec([]byte(tt.in))
		if err != nil || s.Host.CPU != tt.want || s.Host.MemoryGB != tt.mem {
			t.Errorf("%s: host %+v, %v; want cpu %q, memory_gb %v", tt.in, s.Host, err, tt.want, tt.mem)
		}
	}
}

func TestDecodeSpecErrors(t *testing.T) {
	const base = `"base": "dgx-h100"`
	tests := []struct {
		name   string
		in     string
		field  string // an *invalid.Error with this field is expected; "" means ErrSyntax
		phrase string // the message contains this
	}{
		{"unknown top-level field", `{` + base + `, "gpus": 8}`, "gpus", "unknown field"},
		{"unknown nested field", `{` + base + `, "nics": {"speed": 400}}`, "nics.speed", "per_node, gbps"},
		{"unknown gpu field", `{` + base + `, "gpu": {"memory": 80}}`, "gpu.memory", "memory_gb"},
		{"keys are case-sensitive", `{` + base + `, "intra": {"Kind": "mesh"}}`, "intra.Kind", `did you mean "kind"`},
		{"repeated key", `{` + base + `, "nodes": 2, "nodes": 3}`, "nodes", "more than once"},
		{"trailing object", `{` + base + `} {}`, "", "after the cluster description"},
		{"trailing garbage", `{` + base + "}\n]", "", "line 2, column 1"},
		{"malformed", `{` + base + `,}`, "", "byte offset"},
		{"truncated", `{` + base, "", "unexpected end"},
		{"empty", ``, "", "empty"},
		{"blank", " \n\t", "", "empty"},
		{"array", `[1]`, "", "must be an object"},
		{"null document", `null`, "", "must be an object"},
		{"nodes as string", `{` + base + `, "nodes": "4"}`, "nodes", "must be an integer"},
		{"fractional nodes", `{` + base + `, "nodes": 2.5}`, "nodes", "number 2.5"},
		{"gbps as string", `{` + base + `, "nics": {"gbps": "400"}}`, "nics.gbps", "must be a number"},
		{"bool as string", `{` + base + `, "network": {"rail_optimized": "yes"}}`, "network.rail_optimized", "true or false"},
		{"intra as array", `{` + base + `, "intra": []}`, "intra", "must be an object"},
		{"gpu_nic as string", `{` + base + `, "nics": {"gpu_nic": "0,1"}}`, "nics.gpu_nic", "must be an array"},
		{"gpu as number", `{` + base + `, "gpu": 5}`, "gpu", "GPU name or an object"},
		{"gpu peak as string", `{` + base + `, "gpu": {"peak_tflops": {"bf16": "fast"}}}`, "gpu.peak_tflops", "must be a number"},
		{"base as number", `{"base": 5}`, "base", "must be a string"},
		{"unknown base", `{"base": "dgx-h900"}`, "base", "dgx-h100"},
		{"unknown gpu name", `{` + base + `, "gpu": "h900"}`, "gpu", "H100-SXM"},
		{"negative gbps", `{` + base + `, "nics": {"gbps": -400}}`, "nics.gbps", "positive"},
		{"zero nodes", `{` + base + `, "nodes": 0}`, "nodes", "between 1"},
		{"unknown intra kind", `{` + base + `, "intra": {"kind": "torus"}}`, "intra.kind", "nvswitch, mesh or pcie"},
		{"nvls on a mesh", `{"base": "oci-mi300x", "intra": {"nvls": true}}`, "intra.nvls", "nvswitch"},
		{"oversubscription below 1", `{` + base + `, "network": {"oversubscription": 0.5}}`, "network.oversubscription", "between 1"},
		{"unknown dtype", `{` + base + `, "gpu": {"peak_tflops": {"fp4": 9000}}}`, "gpu.peak_tflops.fp4", "unknown dtype"},
		{"gpu_nic out of range", `{` + base + `, "nics": {"gpu_nic": [0,1,2,3,4,5,6,8]}}`, "nics.gpu_nic", "entry 7"},
		{"missing fields without base", `{"gpu": "h100"}`, "name", "must not be empty"},
		// host.cpu is a lower-case name, like intra.kind and nics.kind.
		{"host cpu unknown", `{` + base + `, "host": {"cpu": "arm"}}`, "host.cpu", `must be "x86" or "grace" (got "arm")`},
		{"host cpu capitalised", `{` + base + `, "host": {"cpu": "Grace"}}`, "host.cpu", `(got "Grace")`},
		{"host cpu empty", `{"base": "gb200-nvl72", "host": {"cpu": ""}}`, "host.cpu", "leave it out"},
		{"host cpu empty without a base", `{"gpu": "h100", "host": {"cpu": ""}}`, "host.cpu", "leave it out"},
		{"host cpu a number", `{` + base + `, "host": {"cpu": 86}}`, "host.cpu", "must be a string"},
		{"host cpu an array", `{` + base + `, "host": {"cpu": ["grace"]}}`, "host.cpu", "must be a string"},
		{"host cpu with half a host", `{"gpu": "h100", "gpus_per_node": 8, "name": "x", "host": {"cpu": "grace", "link_gbps": 450}}`, "host.memory_gb", "positive"},
		{"multi-node without NICs", `{` + base + `, "nodes": 2, "nics": {"per_node": 0}}`, "nics.per_node", "at least one NIC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := catalog.DecodeSpec([]byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.phrase) {
				t.Errorf("error %q does not mention %q", err, tt.phrase)
			}
			if tt.field == "" {
				if !errors.Is(err, catalog.ErrSyntax) || invalid.Is(err) {
					t.Errorf("error %q: want ErrSyntax", err)
				}
				return
			}
			if fields := fieldsOf(err); !slices.Contains(fields, tt.field) {
				t.Errorf("error %q names fields %q, want %q", err, fields, tt.field)
			}
		})
	}
}

// fieldsOf lists the fields of every *invalid.Error in err's tree.
func fieldsOf(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		var fe *invalid.Error
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		default:
			if errors.As(err, &fe) {
				out = append(out, fe.Field)
			}
		}
	}
	walk(err)
	return out
}

func FuzzDecodeSpec(f *testing.F) {
	f.Add([]byte(fullSpec))
	f.Add([]byte(`{"base": "dgx-h100", "nodes": 16, "network": {"oversubscription": 2}}`))
	f.Add([]byte(`{"base": "gb200-nvl72", "nodes": 36, "gpu": "b200"}`))
	f.Add([]byte(`{"base": "oci-mi300x", "gpu": {"peak_tflops": {"fp8": 1}}, "nics": {"gpu_nic": [0,0,0,0,1,1,1,1]}}`))
	f.Add([]byte(`{"name": "x", "gpu": "a100", "gpus_per_node": 1, "intra": {"kind": "pcie"}}`))
	f.Add([]byte(`{"base": "dgx-h100"} {}`))
	f.Add([]byte(`{"nodes": 1e400, "gpu": {"a": [[[{}]]]}}`))
	f.Add([]byte(`[{"base": null}]`))
	f.Add([]byte(`{"base": "dgx-h100", "host": {"cpu": "grace"}}`))
	f.Add([]byte(`{"base": "gb200-nvl72", "host": {"cpu": "", "memory_gb": 1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := catalog.DecodeSpec(data)
		if err != nil {
			if !errors.Is(err, catalog.ErrSyntax) && !invalid.Is(err) {
				t.Fatalf("error is neither ErrSyntax nor a field error: %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted spec does not validate: %v", err)
		}
		if _, err := s.Build(); err != nil {
			t.Fatalf("accepted spec does not build: %v", err)
		}
	})
}

// A cluster file's peak_tflops keys are read in any case, as the API reads them
// (wire.GPUFromProto): "BF16" is bf16, over a base GPU too; two keys naming one
// type are refused by field.
func TestDecodeSpecPeakKeysAnyCase(t *testing.T) {
	const gpu = `"gpu":{"name":"g","arch":"hopper","peak_tflops":{%s},"memory_gb":80,"memory_bandwidth_gbps":3350,"nvlink_gbps":450}`
	spec, err := catalog.DecodeSpec([]byte(`{"name":"x",` + fmt.Sprintf(gpu, `"BF16":900,"Fp8":1800`) + `,"gpus_per_node":8,"intra":{"kind":"nvswitch"},"nodes":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if spec.GPU.PeakTFLOPS[hardware.BF16] != 900 || spec.GPU.PeakTFLOPS[hardware.FP8] != 1800 || len(spec.GPU.PeakTFLOPS) != 2 {
		t.Errorf("peaks %v, want bf16 900 and fp8 1800 only", spec.GPU.PeakTFLOPS)
	}
	over, err := catalog.DecodeSpec([]byte(`{"base":"dgx-h100","gpu":{"peak_tflops":{"BF16":500}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if over.GPU.PeakTFLOPS[hardware.BF16] != 500 {
		t.Errorf("over dgx-h100: bf16 %v, want the file's 500", over.GPU.PeakTFLOPS[hardware.BF16])
	}
	_, err = catalog.DecodeSpec([]byte(`{"name":"x",` + fmt.Sprintf(gpu, `"BF16":900,"bf16":800`) + `,"gpus_per_node":8,"intra":{"kind":"nvswitch"},"nodes":1}`))
	if err == nil || !strings.Contains(err.Error(), "gpu.peak_tflops") {
		t.Errorf("two keys for bf16: %v, want an error naming gpu.peak_tflops", err)
	}
}
