package step_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Optimizer offload (ZeRO-Offload) on one DGX H100: the optimizer states leave
// the GPU for host memory, and the step pays the CPU's Adam over the rank's shard
// at its share of the node's DDR5 bandwidth plus the copies over its PCIe link.
func TestOptimizerOffload(t *testing.T) {
	req := step.Request{
		Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 32},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1, ZeRO: 1, Recompute: step.RecomputeFull},
	}
	on, off := req, req
	off.Layout.Offload = step.OffloadOptimizer
	a, err := step.New().Estimate(on)
	if err != nil {
		t.Fatal(err)
	}
	b, err := step.New().Estimate(off)
	if err != nil {
		t.Fatal(err)
	}
	// The rank's shard of 8.03 B parameters; DGX H100: 2 sockets × 8 channels of
	// DDR5-4800 (614.4 GB/s) for 8 GPUs at 70 % streaming efficiency; PCIe Gen5
	// x16 (63 GB/s) at 80 %, two GPUs per switch uplink.
	owned := 8.03e9 / 8
	adam := owned * 36 / (614.4e9 * 0.7 / 8)
	link := 63e9 * 0.8 / 2
	lo, hi := adam+owned*2/link, adam+2*owned*2/link
	t.Logf("optimizer %.3f s on the GPU, %.3f s offloaded (CPU Adam %.3f s, copies up to %.3f s); memory %.1f → %.1f GB, host %.1f of %.1f GB",
		a.Breakdown.Optimizer, b.Breakdown.Optimizer, adam, hi-adam, a.Memory.Total, b.Memory.Total, b.Memory.Host, b.Memory.HostCapacity)
	if got := b.Breakdown.Optimizer; !(got >= lo*0.97 && got <= hi*1.03) {
		t.Errorf("offloaded optimizer step %.3f s, want %.3f–%.3f s", got, lo, hi)
	}
	if b.Memory.Optimizer != 0 || math.Abs(a.Memory.Total-b.Memory.Total-a.Memory.Optimizer) > 1e-6 {
		t.Errorf("GPU memory %.2f → %.2f GB, optimizer states %.2f → %.2f GB", a.Memory.Total, b.Memory.Total, a.Memory.Optimizer, b.Memory.Optimizer)
	}
	if want := owned * 18 / 1e9; math.Abs(b.Memory.Host/want-1) > 0.01 || b.Memory.HostCapacity != 2048*0.85/8 {
		t.Errorf("host %.2f GB of %.2f, want %.2f of %.2f", b.Memory.Host, b.Memory.HostCapacity, want, 2048*0.85/8)
	}
	if !strings.Contains(strings.Join(b.Assumptions, "\n"), "offload") {
		t.Error("the assumptions do not state the offload")
	}
	if !(b.StepTime > a.StepTime) {
		t.Errorf("offloaded step %.3f s not longer than %.3f s", b.StepTime, a.StepTime)
	}
}

// Parameter offload lets a model whose sharded states do not fit run on one node,
// more slowly; a model too big for the host memory does not fit either way.
func TestParamOffload(t *testing.T) {
	run := func(model string, off step.Offload) step.Result {
		r, err := step.New().Estimate(step.Request{
			Model: arch(t, model), Cluster: cluster(t, "dgx-h100", 1),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 16},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1, ZeRO: 3, Recompute: step.RecomputeFull, Offload: off},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	gpu, opt, par := run("llama3-70b", ""), run("llama3-70b", step.OffloadOptimizer), run("llama3-70b", step.OffloadParams)
	t.Logf("70B ZeRO-3 on 8 H100: GPU %.0f GB (fits %v) %.2f s; optimizer offload %.0f GB (fits %v) %.2f s; params too %.0f GB (fits %v, host %.0f of %.0f GB) %.2f s",
		gpu.Memory.Total, gpu.Memory.Fits, gpu.StepTime, opt.Memory.Total, opt.Memory.Fits, opt.StepTime, par.Memory.Total, par.Memory.Fits, par.Memory.Host, par.Memory.HostCapacity, par.StepTime)
	if gpu.Memory.Fits || !opt.Memory.Fits || !par.Memory.Fits {
		t.Errorf("fits: on the GPU %v, optimizer offloaded %v, parameters too %v; want false, true, true", gpu.Memory.Fits, opt.Memory.Fits, par.Memory.Fits)
	}
	if !(par.Memory.Total < opt.Memory.Total && opt.Memory.Total < gpu.Memory.Total) || par.Memory.Weights != 0 {
		t.Errorf("GPU memory %.1f, %.1f, %.1f GB (weights %.1f with parameters offloaded)", gpu.Memory.Total, opt.Memory.Total, par.Memory.Total, par.Memory.Weights)
	}
	if !(par.StepTime > gpu.StepTime) {
		t.Errorf("parameter offload %.2f s not slower than none %.2f s", par.StepTime, gpu.StepTime)
	}
	big := run("llama3-405b", step.OffloadParams)
	if big.Memory.Fits || !(big.Memory.Host > big.Memory.HostCapacity) || !strings.Contains(strings.Join(big.Warnings, "\n"), "host memory") {
		t.Errorf("405B on one node: host %.0f of %.0f GB, fits %v, warnings %q", big.Memory.Host, big.Memory.HostCapacity, big.Memory.Fits, big.Warnings)
	}
}

func TestOffloadErrors(t *testing.T) {
	for _, c := range []struct {
		system string
		zero   int
		off    step.Offload
		want   string
	}{
		{"dgx-h100", 0, step.OffloadOptimizer, "layout.offload"},
		{"dgx-h100", 2, step.OffloadParams, "layout.offload"},
		{"dgx-h100", 1, "cpu", "layout.offload"},
		{"aws-p5", 1, step.OffloadOptimizer, "cluster.host"},
	} {
		_, err := step.New().Estimate(step.Request{
			Model: arch(t, "llama3-8b"), Cluster: cluster(t, c.system, 1),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 8},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 8, MicroBatch: 1, ZeRO: c.zero, Offload: c.off},
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s zero %d offload %q: %v, want an error naming %s", c.system, c.zero, c.off, err, c.want)
		}
	}
}
