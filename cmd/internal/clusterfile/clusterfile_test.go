package clusterfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/cmd/internal/clusterfile"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

// The shipped examples load, describe the cluster they say they do, and agree with
// each other (the YAML spells everything out, the JSON starts from "base").
func TestExampleFiles(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "deploy", "clusters")
	yamlSpec, err := clusterfile.Load(filepath.Join(dir, "example-cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	jsonSpec, err := clusterfile.Load(filepath.Join(dir, "example-cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(yamlSpec, jsonSpec) {
		t.Errorf("examples differ:\nyaml %+v\njson %+v", yamlSpec, jsonSpec)
	}
	h100, _ := catalog.GPU("H100-SXM")
	s := yamlSpec
	if s.Nodes != 16 || s.GPUsPerNode != 8 || !reflect.DeepEqual(s.GPU, h100) ||
		s.Intra.Kind != topology.NVSwitch || !s.Intra.NVLS ||
		s.NICs.PerNode != 8 || s.NICs.Gbps != 400 || s.NICs.Kind != topology.InfiniBand ||
		!s.Network.RailOptimized || s.Network.NodesPerLeaf != 8 || s.Network.Oversubscription != 2 {
		t.Errorf("example is not the documented 16-node H100 cluster: %+v", s)
	}
	c, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	if c.GPUs() != 128 {
		t.Errorf("example has %d GPUs, want 128", c.GPUs())
	}
}

func TestParse(t *testing.T) {
	dgx, _ := catalog.System("dgx-h100")
	want16 := dgx
	want16.Nodes = 16
	withDEL := want16
	withDEL.Description = "rack\x7f2"
	tests := []struct {
		name, file, content string
		want                topology.Spec
	}{
		{"yaml by extension", "c.yaml", "base: dgx-h100\nnodes: 16\n", want16},
		{"yml by extension", "c.yml", "# comment\nbase: DGX-H100\nnodes: 16\n", want16},
		{"json by extension", "c.json", `{"base": "dgx-h100", "nodes": 16}`, want16},
		{"json by content", "-", "\n  {\"base\": \"dgx-h100\", \"nodes\": 16}", want16},
		{"yaml by content", "stdin", "base: dgx-h100\nnodes: 16", want16},
		{"yaml flow mapping", "c.yaml", "{base: dgx-h100, nodes: 16}", want16},
		{"byte order mark", "c.json", "\uFEFF" + `{"base": "dgx-h100", "nodes": 16}`, want16},
		// YAML parsers refuse DEL, which JSON allows in a string.
		{"json named yaml", "c.yaml", "{\"base\": \"dgx-h100\", \"nodes\": 16, \"description\": \"rack\x7f2\"}", withDEL},
		{"yaml document marker", "c.yaml", "---\nbase: dgx-h100\nnodes: 16\n", want16},
		{
			"yaml full spec", "c.yaml", `
name: lab
gpu: {name: X1, arch: hopper, peak_tflops: {bf16: 900}, memory_gb: 96, memory_bandwidth_gbps: 3000, nvlink_gbps: 400}
gpus_per_node: 4
intra: {kind: mesh}
nics: {per_node: 2, gbps: 200, kind: roce, gpu_nic: [0, 0, 1, 1]}
network: {rail_optimized: false, oversubscription: 1.5}
`,
			topology.Spec{
				Name: "lab", Nodes: 1, GPUsPerNode: 4,
				GPU: hardware.GPU{
					Name: "X1", Arch: hardware.Hopper, PeakTFLOPS: map[hardware.DType]float64{hardware.BF16: 900},
					MemoryGB: 96, MemoryBandwidthGBps: 3000, NVLinkGBps: 400,
				},
				Intra:   topology.Intra{Kind: topology.Mesh},
				NICs:    topology.NICs{PerNode: 2, Gbps: 200, Kind: topology.RoCE, GPUNIC: []int{0, 0, 1, 1}},
				Network: topology.Network{Oversubscription: 1.5},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clusterfile.Parse([]byte(tt.content), tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, file, content string
		field               string // the *invalid.Error expected, if any
		phrase              string
	}{
		{"yaml unknown key", "c.yaml", "base: dgx-h100\nnics:\n  speed: 400\n", "nics.speed", "unknown field"},
		{"yaml key case", "c.yaml", "base: dgx-h100\nNodes: 4\n", "Nodes", `did you mean "nodes"`},
		{"yaml wrong type", "c.yaml", "base: dgx-h100\nnodes: many\n", "nodes", "must be an integer"},
		{"yaml list for object", "c.yaml", "base: dgx-h100\nnetwork: [1, 2]\n", "network", "must be an object"},
		{"yaml invalid value", "c.yaml", "base: dgx-h100\nnics: {gbps: 0}\n", "nics.gbps", "positive"},
		{"yaml unknown gpu", "c.yaml", "base: dgx-h100\ngpu: h900\n", "gpu", "unknown GPU"},
		{"yaml repeated key", "c.yaml", "base: dgx-h100\nnodes: 2\nnodes: 3\n", "", "already set"},
		{"yaml nan", "c.yaml", "base: dgx-h100\nnics: {gbps: .nan}\n", "nics.gbps", "finite"},
		{"yaml inf in a map", "c.yaml", "base: dgx-h100\ngpu: {peak_tflops: {bf16: .inf}}\n", "gpu.peak_tflops.bf16", "finite"},
		{"yaml two documents", "c.yaml", "base: dgx-h100\n---\nnodes: 3\n", "", "more than one YAML document"},
		{"yaml syntax", "c.yaml", "base: dgx-h100\n  nodes: [\n", "", "invalid YAML"},
		{"yaml empty", "c.yaml", "", "", "must be an object"},
		{"yaml scalar", "c.yaml", "dgx-h100\n", "", "must be an object"},
		{"yaml host cpu unknown", "c.yaml", "base: dgx-h100\nhost:\n  cpu: aarch64\n", "host.cpu", `must be "x86" or "grace"`},
		{"yaml host cpu capitalised", "c.yaml", "base: dgx-h100\nhost:\n  cpu: Grace\n", "host.cpu", `(got "Grace")`},
		{"yaml host cpu empty", "c.yaml", "base: gb200-nvl72\nhost:\n  cpu: \"\"\n", "host.cpu", "leave it out"},
		{"yaml host cpu a number", "c.yaml", "base: dgx-h100\nhost:\n  cpu: 86\n", "host.cpu", "must be a string"},
		{"yaml host cpu a list", "c.yaml", "base: dgx-h100\nhost:\n  cpu: [grace]\n", "host.cpu", "must be a string"},
		{"json unknown key", "c.json", `{"base": "dgx-h100", "network": {"rails": 8}}`, "network.rails", "unknown field"},
		{"json trailing data", "c.json", `{"base": "dgx-h100"} {"nodes": 2}`, "", "after the cluster description"},
		{"json syntax", "c.json", `{"base": "dgx-h100",}`, "", "line 1, column 21"},
		{"yaml content in a json file", "c.json", "base: dgx-h100\n", "", "malformed cluster description"},
		{"algorithms unknown op", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allsum, algo: ring}]\n", "algorithms[0].op", "unknown collective"},
		{"algorithms unknown algo", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allreduce, algo: ring}, {op: allreduce, algo: butterfly}]\n", "algorithms[1].algo", "unknown algorithm"},
		{"algorithms auto", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allreduce, algo: auto}]\n", "algorithms[0].algo", "not auto"},
		{"algorithms algo cannot run op", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allgather, algo: dbtree}]\n", "algorithms[0].algo", "dbtree cannot run allgather"},
		{"algorithms missing algo", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allreduce}]\n", "algorithms[0].algo", "must name an algorithm"},
		{"algorithms empty range", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allreduce, algo: ring, min_bytes: 1048576, max_bytes: 1024}]\n", "algorithms[0].max_bytes", "above min_bytes"},
		{"algorithms negative size", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allreduce, algo: ring, min_bytes: -1}]\n", "algorithms[0].min_bytes", "between 0"},
		{"algorithms negative min_nodes", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allreduce, algo: ring, min_nodes: -3}]\n", "algorithms[0].min_nodes", "between 0"},
		{"algorithms max_nodes below min_nodes", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allreduce, algo: ring, min_nodes: 8, max_nodes: 4}]\n", "algorithms[0].max_nodes", "between min_nodes"},
		{"algorithms nodes and a node range", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allreduce, algo: ring, nodes: 4, min_nodes: 3}]\n", "algorithms[0].nodes", "one or the other"},
		{"algorithms negative nodes", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allreduce, algo: ring, nodes: -2}]\n", "algorithms[0].nodes", "between 0"},
		// The collective model reads NCCL 2.0 through 2.99 (topology.ParseNCCLRelease;
		// after 2.31 priced by 2.31's rules, TestNewerNCCLParses).
		{"nccl major 3", "c.yaml", "base: dgx-h100\nnccl: \"3.0\"\n", "nccl", "NCCL 3: no such release"},
		{"nccl major 9", "c.yaml", "base: dgx-h100\nnccl: \"9.99\"\n", "nccl", "2.0 through 2.99"},
		{"nccl minor 100", "c.yaml", "base: dgx-h100\nnccl: \"2.100\"\n", "nccl", "minor 100: past 99"},
		{"nccl minor 999", "c.json", `{"base": "dgx-h100", "nccl": "2.999"}`, "nccl", "2.0 through 2.99"},
		{"nccl negative", "c.json", `{"base": "dgx-h100", "nccl": "2.-32"}`, "nccl", "negative"},
		{"nccl older than 2.0", "c.json", `{"base": "dgx-h100", "nccl": "1.9"}`, "nccl", "older than NCCL 2.0"},
		{"nccl five parts", "c.yaml", "base: dgx-h100\nnccl: 2.28.7.1.2\n", "nccl", "2.0 through 2.99"},
		{"nccl leading space", "c.json", `{"base": "dgx-h100", "nccl": " 2.28"}`, "nccl", "2.0 through 2.99"},
		{"algorithms too many GPUs", "c.yaml", "base: dgx-h100\nalgorithms: [{op: allreduce, algo: ring, gpus_per_node: 9}]\n", "algorithms[0].gpus_per_node", "GPUs of a node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := clusterfile.Parse([]byte(tt.content), tt.file)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tt.file+": ") || !strings.Contains(err.Error(), tt.phrase) {
				t.Errorf("error %q: want it to start with %q and mention %q", err, tt.file, tt.phrase)
			}
			var fe *invalid.Error
			if tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field) {
				t.Errorf("error %q: want a field error for %q", err, tt.field)
			}
		})
	}
}

// A release newer than the newest the model knows (2.31) is a cluster file's
// nccl like any other: kept as stated (the answers priced on it say 2.31's rules
// priced it).
func TestNewerNCCLParses(t *testing.T) {
	for _, v := range []string{"2.32", "2.32.1", "2.99.99"} {
		spec, err := clusterfile.Parse([]byte("base: dgx-h100\nnccl: \""+v+"\"\n"), "c.yaml")
		if err != nil || spec.NCCL != v {
			t.Errorf("nccl %s: %v, nccl %q", v, err, spec.NCCL)
		}
	}
}

func TestSizeLimit(t *testing.T) {
	big := []byte("base: dgx-h100\n" + strings.Repeat("# padding\n", clusterfile.MaxSize/10+1))
	if _, err := clusterfile.Parse(big, "big.yaml"); !errors.Is(err, clusterfile.ErrTooLarge) {
		t.Errorf("Parse of %d bytes: %v; want ErrTooLarge", len(big), err)
	}
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := clusterfile.Load(path); !errors.Is(err, clusterfile.ErrTooLarge) || !strings.Contains(err.Error(), path) {
		t.Errorf("Load of %d bytes: %v; want ErrTooLarge naming the file", len(big), err)
	}
	// Exactly at the limit is fine.
	atLimit := big[:clusterfile.MaxSize]
	if _, err := clusterfile.Parse(atLimit, "ok.yaml"); err != nil && errors.Is(err, clusterfile.ErrTooLarge) {
		t.Errorf("Parse of exactly MaxSize bytes: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := clusterfile.Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing file: %v; want fs.ErrNotExist", err)
	}
}

// The measured algorithm ranges a calibration writes read back as written, and
// Format's read-back check passes with them.
func TestAlgorithmsRoundTrip(t *testing.T) {
	spec, err := clusterfile.Parse([]byte("base: oci-bm-gpu-a100\nnodes: 2\nalgorithms:\n"+
		"  - {op: all-reduce, nodes: 2, gpus_per_node: 8, min_bytes: 67108864, algo: ring}\n"+
		"  - {op: allgather, min_bytes: 1024, max_bytes: 1048576, algo: pat}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []topology.AlgoRange{
		{Op: "all-reduce", Nodes: 2, GPUsPerNode: 8, MinBytes: 64 << 20, Algo: "ring"},
		{Op: "allgather", MinBytes: 1024, MaxBytes: 1 << 20, Algo: "pat"},
	}
	if !reflect.DeepEqual(spec.Algorithms, want) {
		t.Errorf("algorithms %+v, want %+v", spec.Algorithms, want)
	}
	out, err := clusterfile.Format(spec, []string{"calibrated"})
	if err != nil {
		t.Fatal(err)
	}
	back, err := clusterfile.Parse(out, "back.yaml")
	if err != nil || !reflect.DeepEqual(back.Algorithms, want) {
		t.Errorf("read back %+v (%v), want %+v", back.Algorithms, err, want)
	}
}
