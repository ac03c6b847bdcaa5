package catalog

import (
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/topology"
)

// System templates describe one node of a system (Nodes = 1) and the network its
// vendor reference architecture or cloud documentation gives. They describe hardware
// only: link efficiencies and latencies are left zero so the calibrated defaults of
// package topology apply.
//
// NICs.GPUNIC maps each GPU to a single NIC, so where a shape gives a GPU several
// physical ports that NCCL drives together, the template models them as one NIC of
// their summed line rate (AWS p5: 32 × 100 Gb/s EFA = 8 × 400 Gb/s; OCI BM.GPU4.8:
// 16 × 100 Gb/s RoCE = 8 × 200 Gb/s). Modelling them one port per GPU would leave
// half (or three quarters) of the node's network bandwidth unused.

// DGX SuperPOD reference architectures: rail-optimised, non-blocking fat trees. A
// DGX A100 scalable unit is 20 nodes (40-port HDR leaves); DGX H100/H200/B200 units
// are 32 nodes (64-port NDR leaves).
const (
	superPODA100NodesPerLeaf = 20
	superPODNodesPerLeaf     = 32
)

// Hosts of the NVIDIA reference systems, for offloading. Memory bandwidth is the
// sockets' DDR channels × transfer rate × 8 B; the GPU link is PCIe x16 (Gen4
// 31.5 GB/s, Gen5 63 GB/s per direction) or NVLink-C2C (450 GB/s per direction).
// On DGX/HGX baseboards two GPUs sit behind each PCIe switch's x16 uplink to a CPU;
// on GB200 two Blackwell GPUs share one Grace's C2C.
var (
	// DGX A100 (System Architecture whitepaper): 2× AMD EPYC 7742, 8 channels of
	// DDR4-3200 each, 1 TB (2 TB option), PCIe Gen4 switches.
	hostDGXA100 = topology.Host{CPU: topology.X86, MemoryGB: 1024, MemoryBandwidthGBps: 2 * 8 * 25.6, LinkGBps: 31.5, GPUsPerLink: 2}
	// DGX H100/H200 (datasheets): 2× Xeon Platinum 8480C, 8 channels of DDR5-4800
	// each, 2 TB, PCIe Gen5 switches.
	hostDGXH100 = topology.Host{CPU: topology.X86, MemoryGB: 2048, MemoryBandwidthGBps: 2 * 8 * 38.4, LinkGBps: 63, GPUsPerLink: 2}
	// DGX B200 (datasheet): 2× Xeon Platinum 8570, 8 channels of DDR5-5600 each,
	// 2 TB (4 TB option), PCIe Gen5 switches.
	hostDGXB200 = topology.Host{CPU: topology.X86, MemoryGB: 2048, MemoryBandwidthGBps: 2 * 8 * 44.8, LinkGBps: 63, GPUsPerLink: 2}
	// GB200 NVL72 compute tray (GB200 datasheet): 2 Grace CPUs, each up to 480 GB
	// LPDDR5X at up to 512 GB/s and NVLink-C2C of 900 GB/s (both directions) to
	// its two Blackwell GPUs.
	hostGB200Tray = topology.Host{CPU: topology.Grace, MemoryGB: 2 * 480, MemoryBandwidthGBps: 2 * 512, LinkGBps: 450, GPUsPerLink: 2}
	// DGX B300 (datasheet, 2025): 2× Intel Xeon 6776P, 2 TB (4 TB option); the
	// Xeon 6776P has 8 channels of DDR5-6400 and PCIe 5.0 (Intel ARK). The GPUs'
	// path to the CPUs is taken as the DGX B200's: two GPUs per Gen5 x16 uplink.
	hostDGXB300 = topology.Host{CPU: topology.X86, MemoryGB: 2048, MemoryBandwidthGBps: 2 * 8 * 51.2, LinkGBps: 63, GPUsPerLink: 2}
	// GB300 NVL72 compute tray: the same two Grace CPUs (72 Arm Neoverse V2 cores
	// each: the rack's 2,592 cores over 36 CPUs, GB300 NVL72 specifications) on
	// NVLink-C2C to their four GPUs; memory as the GB200 tray's.
	hostGB300Tray = hostGB200Tray
)

var systemTable = []systemEntry{
	{
		spec: topology.Spec{
			Name:        "dgx-a100",
			Description: "NVIDIA DGX A100 640GB: 8× A100 80GB on NVSwitch (NVLink 3), 8× HDR 200 Gb/s InfiniBand, DGX SuperPOD rail-optimised fabric",
			Source:      "NVIDIA DGX A100 datasheet and System Architecture whitepaper (2020): 6 NVSwitch, 8 ConnectX-6 HDR 200 Gb/s compute ports; NVIDIA DGX SuperPOD reference architecture with DGX A100 (2020–2021): rail-optimised HDR fat tree, 20-node scalable units",
			GPU:         gpuNamed("A100-80GB"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch},
			NICs:        topology.NICs{PerNode: 8, Gbps: 200, Kind: topology.InfiniBand},
			Network:     topology.Network{RailOptimized: true, NodesPerLeaf: superPODA100NodesPerLeaf, Oversubscription: 1},
			Host:        hostDGXA100,
		},
		aliases: []string{"dgx-a100-80gb", "dgx-a100-640gb", "hgx-a100", "hgx-a100-80gb"},
	},
	{
		spec: topology.Spec{
			Name:        "dgx-a100-40gb",
			Description: "NVIDIA DGX A100 320GB: 8× A100 40GB on NVSwitch (NVLink 3), 8× HDR 200 Gb/s InfiniBand, DGX SuperPOD rail-optimised fabric",
			Source:      "NVIDIA DGX A100 datasheet and System Architecture whitepaper (2020): 6 NVSwitch, 8 ConnectX-6 HDR 200 Gb/s compute ports; NVIDIA DGX SuperPOD reference architecture with DGX A100 (2020): rail-optimised HDR fat tree, 20-node scalable units",
			GPU:         gpuNamed("A100-40GB"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch},
			NICs:        topology.NICs{PerNode: 8, Gbps: 200, Kind: topology.InfiniBand},
			Network:     topology.Network{RailOptimized: true, NodesPerLeaf: superPODA100NodesPerLeaf, Oversubscription: 1},
			Host:        hostDGXA100,
		},
		aliases: []string{"dgx-a100-320gb", "hgx-a100-40gb"},
	},
	{
		spec: topology.Spec{
			Name:        "dgx-h100",
			Description: "NVIDIA DGX H100: 8× H100 SXM 80GB on NVSwitch (NVLink 4, NVLS), 8× NDR 400 Gb/s InfiniBand, DGX SuperPOD rail-optimised fabric",
			Source:      "NVIDIA DGX H100 datasheet (2023): 4 third-generation NVSwitch, 8 ConnectX-7 400 Gb/s compute ports; NVIDIA DGX SuperPOD reference architecture with DGX H100 (2023): rail-optimised NDR fat tree, 32-node scalable units",
			GPU:         gpuNamed("H100-SXM"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true},
			NICs:        topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.InfiniBand},
			Network:     topology.Network{RailOptimized: true, NodesPerLeaf: superPODNodesPerLeaf, Oversubscription: 1},
			Host:        hostDGXH100,
		},
		aliases: []string{"hgx-h100", "dgx-h100-80gb"},
	},
	{
		spec: topology.Spec{
			Name:        "hgx-h800",
			Description: "8× H800 SXM 80GB on NVSwitch (NVLink 400 GB/s, NVLS), 8× 400 Gb/s InfiniBand: the export variant of HGX H100 that DeepSeek-V3 was trained on",
			Source:      "NVIDIA H800 datasheet (2023): NVLink 400 GB/s; DeepSeek-V3 Technical Report §3.1 (arXiv:2412.19437): 8 GPUs per node on NVLink and NVSwitch, InfiniBand across nodes (50 GB/s per GPU, 400 Gb/s)",
			GPU:         gpuNamed("H800"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true},
			NICs:        topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.InfiniBand},
			Network:     topology.Network{RailOptimized: true, NodesPerLeaf: superPODNodesPerLeaf, Oversubscription: 1},
			Host:        hostDGXH100,
		},
		aliases: []string{"h800", "deepseek-h800"},
	},
	{
		spec: topology.Spec{
			Name:        "hgx-h200",
			Description: "NVIDIA HGX/DGX H200: 8× H200 141GB on NVSwitch (NVLink 4, NVLS), 8× NDR 400 Gb/s InfiniBand, DGX SuperPOD rail-optimised fabric",
			Source:      "NVIDIA DGX H200 datasheet (2024) and HGX H200 specifications (2024): 8× H200 SXM, NVSwitch 900 GB/s per GPU, 8 ConnectX-7 400 Gb/s compute ports; NVIDIA DGX SuperPOD reference architecture (2023–2024): rail-optimised NDR fat tree, 32-node scalable units",
			GPU:         gpuNamed("H200"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true},
			NICs:        topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.InfiniBand},
			Network:     topology.Network{RailOptimized: true, NodesPerLeaf: superPODNodesPerLeaf, Oversubscription: 1},
			Host:        hostDGXH100,
		},
		aliases: []string{"dgx-h200"},
	},
	{
		spec: topology.Spec{
			Name:        "hgx-b200",
			Description: "NVIDIA HGX/DGX B200: 8× B200 on NVSwitch (NVLink 5, NVLS), 8× NDR 400 Gb/s InfiniBand, DGX SuperPOD rail-optimised fabric",
			Source:      "NVIDIA DGX B200 datasheet (2024): 8× B200, 2 fifth-generation NVSwitch, NVLink 1.8 TB/s per GPU, 8 ConnectX-7 400 Gb/s compute ports; NVIDIA DGX SuperPOD reference architecture with DGX B200 (2024): rail-optimised NDR fat tree, 32-node scalable units",
			GPU:         gpuNamed("B200"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true},
			NICs:        topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.InfiniBand},
			Network:     topology.Network{RailOptimized: true, NodesPerLeaf: superPODNodesPerLeaf, Oversubscription: 1},
			Host:        hostDGXB200,
		},
		aliases: []string{"dgx-b200"},
	},
	{
		spec: topology.Spec{
			Name:        "gb200-nvl72",
			Description: "NVIDIA GB200 NVL72: compute trays of 4 Blackwell GPUs, 18 trays (72 GPUs) in one NVLink domain (NVLS), 4× 400 Gb/s InfiniBand per tray",
			Source:      "NVIDIA GB200 NVL72 specifications (2024): 18 compute trays × 2 GB200 superchips (4 GPUs), NVLink Switch System 1.8 TB/s per GPU; NVIDIA DGX SuperPOD reference architecture with DGX GB200 (2024–2025): 4 ConnectX-7 400 Gb/s compute ports per tray, rail-optimised compute fabric",
			GPU:         gpuNamed("GB200"),
			Nodes:       1,
			GPUsPerNode: 4,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true, DomainNodes: 18},
			NICs:        topology.NICs{PerNode: 4, Gbps: 400, Kind: topology.InfiniBand},
			Network:     topology.Network{RailOptimized: true, Oversubscription: 1},
			Host:        hostGB200Tray,
		},
		aliases: []string{"nvl72", "dgx-gb200"},
	},
	{
		spec: topology.Spec{
			Name:        "hgx-b300",
			Description: "NVIDIA HGX/DGX B300: 8× B300 on NVSwitch (NVLink 5, NVLS), 8× ConnectX-8 800 Gb/s InfiniBand, rail-optimised fabric",
			Source:      "NVIDIA HGX specifications (nvidia.com/en-us/data-center/hgx, read 2026-11-27): HGX B300, 8× Blackwell Ultra, NVLink 5 Switch 1.8 TB/s per GPU (14.4 TB/s total), networking 1.6 TB/s (8 × 800 Gb/s ConnectX-8 SuperNICs); NVIDIA DGX B300 datasheet (2025): 8 ConnectX-8 800 Gb/s compute ports, 2× Xeon 6776P; NVIDIA DGX SuperPOD reference architecture: rail-optimised compute fabric, 32-node scalable units",
			GPU:         gpuNamed("B300"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true},
			NICs:        topology.NICs{PerNode: 8, Gbps: 800, Kind: topology.InfiniBand},
			Network:     topology.Network{RailOptimized: true, NodesPerLeaf: superPODNodesPerLeaf, Oversubscription: 1},
			Host:        hostDGXB300,
		},
		aliases: []string{"dgx-b300"},
	},
	{
		spec: topology.Spec{
			Name:        "gb300-nvl72",
			Description: "NVIDIA GB300 NVL72: compute trays of 4 Blackwell Ultra GPUs, 18 trays (72 GPUs) in one NVLink domain (NVLS), 4× 800 Gb/s ConnectX-8 InfiniBand per tray",
			Source:      "NVIDIA GB300 NVL72 specifications (nvidia.com/en-us/data-center/gb300-nvl72, read 2026-11-27): 72 Blackwell Ultra GPUs and 36 Grace CPUs, 18 compute trays, NVLink Switch 130 TB/s (1.8 TB/s per GPU), one ConnectX-8 SuperNIC of 800 Gb/s per GPU (72 per rack); MLPerf Training v5.1 system descriptions of GB300 NVL72 trays (NVIDIA theia, Lambda): 4× ConnectX-8 IB XDR 800 Gb/s per tray",
			GPU:         gpuNamed("GB300"),
			Nodes:       1,
			GPUsPerNode: 4,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true, DomainNodes: 18},
			NICs:        topology.NICs{PerNode: 4, Gbps: 800, Kind: topology.InfiniBand},
			Network:     topology.Network{RailOptimized: true, Oversubscription: 1},
			Host:        hostGB300Tray,
		},
		aliases: []string{"dgx-gb300", "nvl72-gb300"},
	},
	{
		spec: topology.Spec{
			Name:        "aws-p4d",
			Description: "AWS p4d.24xlarge: 8× A100 40GB on NVSwitch, 4× 100 Gb/s EFA",
			Source:      "AWS Amazon EC2 P4d instance documentation (2020): p4d.24xlarge, 8× A100 40GB, NVSwitch 600 GB/s, 400 Gbps EFA (4 × 100 Gbps)",
			GPU:         gpuNamed("A100-40GB"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch},
			NICs:        topology.NICs{PerNode: 4, Gbps: 100, Kind: topology.EFA, SimpleProtocolOnly: true},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"p4d", "p4d.24xlarge"},
	},
	{
		spec: topology.Spec{
			Name:        "aws-p4de",
			Description: "AWS p4de.24xlarge: 8× A100 80GB on NVSwitch, 4× 100 Gb/s EFA",
			Source:      "AWS Amazon EC2 P4de instance documentation (2022): p4de.24xlarge, 8× A100 80GB, NVSwitch 600 GB/s, 400 Gbps EFA (4 × 100 Gbps)",
			GPU:         gpuNamed("A100-80GB"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch},
			NICs:        topology.NICs{PerNode: 4, Gbps: 100, Kind: topology.EFA, SimpleProtocolOnly: true},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"p4de", "p4de.24xlarge"},
	},
	{
		spec: topology.Spec{
			Name:        "aws-p5",
			Description: "AWS p5.48xlarge: 8× H100 80GB on NVSwitch (NVLS), 3200 Gb/s EFA modelled as 8× 400 Gb/s (one per GPU)",
			Source:      "AWS Amazon EC2 P5 instance documentation (2023): p5.48xlarge, 8× H100 80GB, NVSwitch 900 GB/s, 3200 Gbps EFAv2 over 32 × 100 Gbps network cards (4 per GPU)",
			GPU:         gpuNamed("H100-SXM"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true},
			NICs:        topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.EFA},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"p5", "p5.48xlarge"},
	},
	{
		spec: topology.Spec{
			Name:        "aws-p6-b200",
			Description: "AWS p6-b200.48xlarge: 8× B200 on NVSwitch (NVLS), 8× 400 Gb/s EFAv4",
			Source:      "AWS Amazon EC2 P6-B200 instance documentation (2025): p6-b200.48xlarge, 8× B200 (1,440 GB HBM3e), NVLink 1.8 TB/s per GPU, 3.2 Tbps EFAv4 (8 × 400 Gbps)",
			GPU:         gpuNamed("B200"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true},
			NICs:        topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.EFA},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"p6-b200", "p6-b200.48xlarge"},
	},
	{
		spec: topology.Spec{
			Name:        "azure-nd-a100-v4",
			Description: "Azure ND96asr_v4 (ND A100 v4): 8× A100 40GB on NVSwitch, 8× HDR 200 Gb/s InfiniBand",
			Source:      "Microsoft Azure ND A100 v4-series documentation (2021): Standard_ND96asr_v4, 8× A100 40GB SXM4 with NVLink 3, 200 Gb/s HDR InfiniBand per GPU (1.6 Tb/s per VM)",
			GPU:         gpuNamed("A100-40GB"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch},
			NICs:        topology.NICs{PerNode: 8, Gbps: 200, Kind: topology.InfiniBand},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"Standard_ND96asr_v4", "nd96asr-v4"},
	},
	{
		spec: topology.Spec{
			Name:        "azure-ndm-a100-v4",
			Description: "Azure ND96amsr_A100_v4 (NDm A100 v4): 8× A100 80GB on NVSwitch, 8× HDR 200 Gb/s InfiniBand",
			Source:      "Microsoft Azure NDm A100 v4-series documentation (2021): Standard_ND96amsr_A100_v4, 8× A100 80GB SXM4 with NVLink 3, 200 Gb/s HDR InfiniBand per GPU (1.6 Tb/s per VM)",
			GPU:         gpuNamed("A100-80GB"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch},
			NICs:        topology.NICs{PerNode: 8, Gbps: 200, Kind: topology.InfiniBand},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"Standard_ND96amsr_A100_v4", "nd96amsr-a100-v4"},
	},
	{
		spec: topology.Spec{
			Name:        "azure-nd-h100-v5",
			Description: "Azure ND96isr_H100_v5 (ND H100 v5): 8× H100 80GB on NVSwitch (NVLS), 8× NDR 400 Gb/s InfiniBand",
			Source:      "Microsoft Azure ND H100 v5-series documentation (2023): Standard_ND96isr_H100_v5, 8× H100 80GB SXM with NVLink 4, 400 Gb/s Quantum-2 CX7 InfiniBand per GPU (3.2 Tb/s per VM)",
			GPU:         gpuNamed("H100-SXM"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true},
			NICs:        topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.InfiniBand},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"Standard_ND96isr_H100_v5", "nd96isr-h100-v5"},
	},
	{
		spec: topology.Spec{
			Name:        "azure-nd-h200-v5",
			Description: "Azure ND96isr_H200_v5 (ND H200 v5): 8× H200 141GB on NVSwitch (NVLS), 8× NDR 400 Gb/s InfiniBand",
			Source:      "Microsoft Azure ND H200 v5-series documentation (2024): Standard_ND96isr_H200_v5, 8× H200 141GB with NVLink 4, 400 Gb/s Quantum-2 CX7 InfiniBand per GPU (3.2 Tb/s per VM)",
			GPU:         gpuNamed("H200"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch, NVLS: true},
			NICs:        topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.InfiniBand},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"Standard_ND96isr_H200_v5", "nd96isr-h200-v5"},
	},
	{
		spec: topology.Spec{
			Name:        "oci-bm-gpu-a100",
			Description: "OCI BM.GPU4.8: 8× A100 40GB on NVSwitch, 16× 100 Gb/s RoCE modelled as 8× 200 Gb/s (two ports per GPU)",
			Source:      "Oracle Cloud Infrastructure BM.GPU4.8 shape documentation (2020): 8× A100 40GB SXM4 with NVSwitch, 1.6 Tb/s RDMA cluster network over RoCE v2 (16 × 100 Gb/s, two ports per GPU)",
			GPU:         gpuNamed("A100-40GB"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.NVSwitch},
			NICs:        topology.NICs{PerNode: 8, Gbps: 200, Kind: topology.RoCE},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"BM.GPU4.8", "oci-bm-gpu4.8"},
	},
	{
		spec: topology.Spec{
			Name:        "oci-mi300x",
			Description: "OCI BM.GPU.MI300X.8: 8× AMD MI300X on a fully connected Infinity Fabric mesh, 8× 400 Gb/s RoCE",
			Source:      "Oracle Cloud Infrastructure BM.GPU.MI300X.8 shape documentation (2024): 8× MI300X, 3.2 Tb/s RDMA cluster network over RoCE v2 (8 × 400 Gb/s); AMD Instinct MI300X platform (2023): 8 OAMs, every pair linked by Infinity Fabric",
			GPU:         gpuNamed("MI300X"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.Mesh},
			NICs:        topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.RoCE},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"BM.GPU.MI300X.8", "oci-bm-gpu-mi300x"},
	},
	{
		spec: topology.Spec{
			Name:        "mi355x",
			Description: "8× AMD MI355X on a fully connected Infinity Fabric mesh, 8× 400 Gb/s RoCE (AMD Pollara 400), as in OCI's MI355X shape",
			Source:      "AMD Instinct MI355X platform (2025): 8 OAMs, every pair linked by Infinity Fabric; Oracle Cloud Infrastructure MI355X bare-metal shape (2025): 8 × AMD Pensando Pollara 400 Gb/s RoCE NICs per node",
			GPU:         gpuNamed("MI355X"),
			Nodes:       1,
			GPUsPerNode: 8,
			Intra:       topology.Intra{Kind: topology.Mesh},
			NICs:        topology.NICs{PerNode: 8, Gbps: 400, Kind: topology.RoCE},
			Network:     topology.Network{Oversubscription: 1},
		},
		aliases: []string{"oci-mi355x"},
	},
}

// gpuNamed returns the catalog GPU with that canonical name. An unknown name yields a
// zero GPU, which fails validation (the tests Build every system).
func gpuNamed(name string) hardware.GPU {
	for _, e := range gpuTable {
		if e.gpu.Name == name {
			return e.gpu
		}
	}
	return hardware.GPU{}
}
