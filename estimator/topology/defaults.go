package topology

import "github.com/stepcost/stepcost/estimator/hardware"

// LinkDefaults are the achievable fraction of line rate and the hop latencies used
// when a spec does not override them. They are physical properties of a fabric
// generation, fitted once against the nccl-tests measurements in
// estimator/collective/testdata (see docs/calibration.md), never per system.
type LinkDefaults struct {
	IntraEfficiency float64 // achieved ÷ line rate for bulk copies over the scale-up fabric
	IntraLatencyUs  float64 // one scale-up hop, µs
	NICEfficiency   float64 // achieved ÷ line rate of one NIC
	NICLatencyUs    float64 // NIC → leaf switch → NIC, µs
	SpineLatencyUs  float64 // extra for leaf → spine → leaf, µs
}

// Scale-up efficiencies: large-message ring all-reduce busbw ÷ NVLink line rate per
// direction, measured on 8-GPU NVSwitch nodes (nccl-tests, shared data rows
// azure-aibench-nda100v4, stas00-mlengineering-a100-nccltests: 231–235 of 300 GB/s;
// stas00-mlengineering-h200-16GiB-collectives: 361–368 of 450 GB/s;
// stas00-mlengineering-nvls-ramp-b200, azure-aibench-ndgb200v6: 673–682 of 900 GB/s).
const (
	NVLink3Efficiency = 0.78  // A100, NVLink 3 (12 links × 25 GB/s)
	NVLink4Efficiency = 0.815 // H100/H200, NVLink 4 (18 links × 25 GB/s)
	NVLink5Efficiency = 0.757 // B200/GB200, NVLink 5 (18 links × 50 GB/s)
	// InfinityFabricEfficiency: MI355X single-node RCCL all-reduce 408 GB/s of the
	// mesh's aggregate (oci-quickstart-mi355x rows), applied to MI300X too.
	InfinityFabricEfficiency = 0.76
	// PCIeEfficiency: PCIe 4/5 x16 DMA reaches ~80 % of the raw rate after TLP overhead
	// (128 B payload + 24 B header ≈ 84 %, minus flow control).
	PCIeEfficiency = 0.80
)

// Scale-out efficiencies (achieved per-NIC ÷ line rate).
const (
	// InfiniBandEfficiency: DGX A100 8×HDR 200G ring all-reduce 192 GB/s per node
	// (NVIDIA, nccl#812) = 0.96; NDR 400G 46–49 GB/s per NIC (nccl-tests#267, #290).
	InfiniBandEfficiency = 0.96
	// RoCEEfficiency: OCI A100 16×100G RoCE ring all-reduce 186–190 GB/s of 200 GB/s
	// (oci-oke-a100-2node-nccl2.25/2.29 rows).
	RoCEEfficiency = 0.95
	// EFAEfficiency: AWS EFA sustains less per NIC than IB and varies by NCCL/OFI
	// version (docs/collective.md, "AWS EFA": the plugin's protocols, tuner regions
	// and proxy cost by platform and release); no multi-node EFA sweep is in the calibration set,
	// so this is the conservative value used by AWS's own sizing guidance of
	// ~85 % of line rate. No document is cited for that guidance and the value is
	// not fitted: docs/calibration.md, "Constants without a published source".
	EFAEfficiency = 0.85
)

// Latencies, µs. NCCL's own per-hop figures (tuning.cc hwLat, Simple protocol) are
// NVLink 3.4 (ring) and network 14 including the proxy; ours are the fitted one-way
// hardware parts (docs/calibration.md, "The fitted constants", gives each fit's
// rows), the software per-step cost lives with the collective protocols.
const (
	NVLinkHopLatencyUs = 0.299 // NVSwitch hop on an HGX/DGX baseboard
	// NVLinkRackHopLatencyUs: rack-scale NVLink (GB200 NVL72) reaches the NVSwitch
	// trays over the cable spine, even between GPUs of one compute tray.
	NVLinkRackHopLatencyUs = 1.01
	// MeshHopLatencyUs (an xGMI hop) and PCIeHopLatencyUs (through the PCIe
	// switch; NCCL's hwLat PCI row is above its NVLink row) are not fitted and have
	// no published source: docs/calibration.md, "Constants without a published
	// source".
	MeshHopLatencyUs = 1.0
	PCIeHopLatencyUs = 1.5
	// NetHopLatencyUs: NIC → leaf → NIC, with the proxy thread and RDMA completion:
	// what a step of NCCL's Simple protocol pays to cross the network (fitted). The
	// other protocols' network step costs (collective.Constants.NetStepUs) are what
	// they pay on top of it; Simple's is 0 by this definition, since a measurement
	// only ever sees the hop and a protocol's network step cost added together
	// (TestNetworkHopGauge in estimator/collective/accuracy).
	NetHopLatencyUs = 11.29
	EFAHopLatencyUs = 13.75 // SRD over the AWS fabric
	// SpineLatencyUs: leaf → spine → leaf, two more switch traversals of about
	// 0.5 µs each; not fitted, no published source for the traversal time
	// (docs/calibration.md, "Constants without a published source").
	SpineLatencyUs = 1.0
)

// Defaults returns the calibrated link defaults for a GPU generation, scale-up
// fabric and NIC kind.
// rackScale says the NVLink domain spans several nodes (switch trays outside the node).
func Defaults(arch hardware.Arch, intra IntraKind, net NetKind, rackScale bool) LinkDefaults {
	d := LinkDefaults{
		IntraEfficiency: NVLink4Efficiency,
		IntraLatencyUs:  NVLinkHopLatencyUs,
		NICEfficiency:   InfiniBandEfficiency,
		NICLatencyUs:    NetHopLatencyUs,
		SpineLatencyUs:  SpineLatencyUs,
	}
	switch intra {
	case PCIe:
		d.IntraEfficiency, d.IntraLatencyUs = PCIeEfficiency, PCIeHopLatencyUs
	case Mesh:
		d.IntraEfficiency, d.IntraLatencyUs = InfinityFabricEfficiency, MeshHopLatencyUs
	default:
		if rackScale {
			d.IntraLatencyUs = NVLinkRackHopLatencyUs
		}
		switch arch {
		case hardware.Ampere:
			d.IntraEfficiency = NVLink3Efficiency
		case hardware.Blackwell:
			d.IntraEfficiency = NVLink5Efficiency
		case hardware.CDNA3, hardware.CDNA4:
			d.IntraEfficiency = InfinityFabricEfficiency
		}
	}
	switch net {
	case RoCE:
		d.NICEfficiency = RoCEEfficiency
	case EFA:
		d.NICEfficiency, d.NICLatencyUs = EFAEfficiency, EFAHopLatencyUs
	}
	return d
}
