package step

import (
	"fmt"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Offload is what of the model state lives in host (CPU) memory.
type Offload string

const (
	// OffloadNone keeps everything on the GPU.
	OffloadNone Offload = "none"
	// OffloadOptimizer is ZeRO-Offload (Ren et al., USENIX ATC 2021; DeepSpeed's
	// offload_optimizer): each rank's shard of the fp32 master weights and Adam
	// moments lives in host memory and the optimizer step runs on the CPU. The
	// rank's reduced gradient shard is copied to the host under the last backward,
	// the CPU updates it, and the new 16-bit weights are copied back before the
	// parameter all-gather. Needs ZeRO ≥ 1 (the rank updates only its shard).
	OffloadOptimizer Offload = "optimizer"
	// OffloadParams also keeps the 16-bit weight shards in host memory (DeepSpeed
	// ZeRO-Infinity's offload_param, PyTorch FSDP's CPUOffload(offload_params=True)):
	// every gather of a layer first copies the rank's shard to the GPU and every
	// gradient reduce-scatter is followed by a copy of the shard back, per layer and
	// micro-batch, on the copy engines and prefetched like the gathers. Needs ZeRO-3.
	OffloadParams Offload = "params"
)

// Host-side constants of offloading.
const (
	// HostAdamBytesPerParam is the host memory traffic of one parameter's CPU Adam
	// step (DeepSpeed's cpu_adam, the AVX kernel ZeRO-Offload introduced): read the
	// fp32 weight, gradient, momentum and variance (16 B), write the weight and both
	// moments (12 B) and the 16-bit weight the GPU copies back (2 B), plus the
	// gradient's upcast from the 16-bit copy the GPU sent (read 2 B, write 4 B): 36
	// B. The kernel does about a dozen flops a parameter, so it is bound by memory
	// bandwidth, not by the cores.
	HostAdamBytesPerParam = 36
	// HostMemoryEfficiency is the share of the peak DRAM bandwidth a streaming
	// kernel reaches on a two-socket server: STREAM triad reaches 70–80 % of the
	// channels' peak on Xeon and EPYC (and on Grace's LPDDR5X), the lower end for
	// a kernel that reads four streams and writes four. No single published
	// measurement is behind the 0.70: docs/step-model.md, "Constants without a
	// published source".
	HostMemoryEfficiency = 0.70
	// HostLinkEfficiency is the achievable share of a GPU's host link for bulk
	// copies from pinned memory: the PCIe DMA efficiency of package topology (TLP
	// overhead, flow control), also used for NVLink-C2C for want of a measurement.
	HostLinkEfficiency = topology.PCIeEfficiency
	// HostBytesPerParam is what an offloaded parameter's shard takes in host
	// memory: the fp32 master weight and Adam moments (12 B), the fp32 gradient the
	// optimizer reads (4 B) and the pinned 16-bit weight exchanged with the GPU
	// (2 B).
	HostBytesPerParam = 18
	// HostMemoryUsable is the share of a node's memory a job's pinned buffers can
	// take: the operating system, the data loaders and the page cache keep the rest.
	// No published source: docs/step-model.md, "Constants without a published
	// source".
	HostMemoryUsable = 0.85
)

// hostRates are the per-GPU bandwidths of offloading, in bytes per second: the
// node's host memory bandwidth shared by its GPUs, and the GPU's link to the host
// shared by the GPUs behind one uplink.
func hostRates(cl *topology.Cluster) (mem, link float64) {
	h := cl.Spec.Host
	mem = h.MemoryBandwidthGBps * 1e9 * HostMemoryEfficiency / float64(cl.Spec.GPUsPerNode)
	link = h.LinkGBps * 1e9 * HostLinkEfficiency / float64(max(1, h.GPUsPerLink))
	return mem, link
}

// validateOffload checks the offload setting against the layout and the cluster.
func validateOffload(c *invalid.Collector, l *Layout, cl *topology.Cluster) {
	switch l.Offload {
	case "", OffloadNone:
		return
	case OffloadOptimizer:
		if l.ZeRO < 1 {
			c.Add("layout.offload", "optimizer offload updates each rank's shard of the optimizer states on the host: needs zero ≥ 1 (got %d)", l.ZeRO)
		}
	case OffloadParams:
		if l.ZeRO != 3 {
			c.Add("layout.offload", "parameter offload gathers each layer's weight shards from the host: needs zero 3 (got %d)", l.ZeRO)
		}
	default:
		c.Add("layout.offload", "must be none, optimizer or params (got %q)", l.Offload)
		return
	}
	if cl != nil && !cl.Spec.Host.Described() {
		c.Add("cluster.host", "offloading needs the node's host memory_gb, memory_bandwidth_gbps and link_gbps; %q does not give them", cl.Spec.Name)
	}
}

// ActivationOffloadSchedule tells whether Megatron-Core's fine-grained activation
// offloading runs with a pipeline schedule over pp ranks: without a pipeline, 1F1B
// and the interleaved schedule (its documentation: "PP=1/PP/Interleaved PP").
func ActivationOffloadSchedule(s Schedule, pp int) bool {
	return pp == 1 || s == OneFOneB || s == Interleaved
}

// validateActivationOffload checks Layout.OffloadActivations and Layout.FP8Params.
func validateActivationOffload(c *invalid.Collector, l *Layout, t *Training, cl *topology.Cluster) {
	if l.FP8Params && t.Precision != FP8 {
		c.Add("layout.fp8_params", "stores the matmul weights in fp8: needs precision %s (precision is %s)", FP8, t.Precision)
	}
	if !l.OffloadActivations {
		return
	}
	if !ActivationOffloadSchedule(l.Schedule, l.PP) {
		c.Add("layout.offload_activations", "Megatron-Core offloads activations with %s pipelines (schedule %s)", framework.Or([]Schedule{OneFOneB, Interleaved}), l.Schedule)
	}
	if cl != nil && !cl.Spec.Host.Described() {
		c.Add("cluster.host", "activation offload copies over the host link into host memory: needs the node's host memory_gb, memory_bandwidth_gbps and link_gbps; %q does not give them", cl.Spec.Name)
	}
}

// activationCopy is the time one layer's saved activations, bytes of them, take
// over the GPU's host link (hostRates), each way.
func activationCopy(cl *topology.Cluster, bytes float64) float64 {
	_, link := hostRates(cl)
	return bytes / link
}

// OffloadWaitBound is a lower bound of what activation offload adds to one
// micro-batch through a stage of a dense model, from the stage's bounds b without
// it: its L layers' copies, each of at least LayerActivationsGB, against the
// stage's forward and backward passes — Σ max(0, c − fₗ) ≥ max(0, L·c − Σ fₗ), and
// the passes' times are the estimate's. 0 for an MoE model, whose stages' layers
// save different amounts, or without a described host.
func OffloadWaitBound(cl *topology.Cluster, a model.Arch, b Bounds) float64 {
	if a.MoE != nil || cl == nil || !cl.Spec.Host.Described() {
		return 0
	}
	c := b.exposure.layers * activationCopy(cl, b.LayerActivationsGB*1e9)
	return max(0, c-b.exposure.fwd) + max(0, c-b.exposure.bwd)
}

// activationOffloadNote describes the activation offload for the assumptions list.
func activationOffloadNote(cl *topology.Cluster, perLayer float64) string {
	_, link := hostRates(cl)
	return fmt.Sprintf("activation offload: each layer's saved activations (%.0f MB a micro-batch on average) go to host memory in the forward pass and come back before its backward at %.0f GB/s per GPU (%.1f ms each way), under the layer's compute; the GPU keeps two layers' worth",
		perLayer/1e6, link/1e9, perLayer/link*1e3)
}

// offloadNote describes the offload for the assumptions list.
func offloadNote(l Layout, cl *topology.Cluster) string {
	mem, link := hostRates(cl)
	what := "optimizer states"
	if l.Offload == OffloadParams {
		what = "optimizer states and weight shards"
	}
	return fmt.Sprintf("offload: %s in host memory; CPU Adam at %.0f GB/s of host memory bandwidth per GPU (%d B a parameter), host copies at %.0f GB/s per GPU",
		what, mem/1e9, HostAdamBytesPerParam, link/1e9)
}
