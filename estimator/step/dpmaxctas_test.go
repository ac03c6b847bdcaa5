package step_test

import (
	"errors"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// NeMo's MLPerf Training v5.1 Llama 3.1 8B configuration gives the data-parallel
// process groups ("dp", and "dp_cp", which carries the gradients where CP > 1) and
// the tensor-parallel group ("tp") 8 NCCL thread blocks
// (conf/nccl/custom_communicator_cta.yaml, max_ctas: 8). On 512 GB200 at TP 2 ×
// CP 4 × DP 64 the gradient reduce-scatter and the parameter all-gather run over
// 256 ranks, 32 on each of 8 NVL72 racks (the job's segments of 16 trays, as
// MLPerf's 512-GPU runs are allocated): on NCCL's 32 channels every GPU's NIC of
// a rack carries a share, on 8 only 8 of them, and the collectives take longer. The
// TP collectives of that layout move through userbuffers (TP overlap), which the
// TP group's cap does not bound; without TP overlap they are NCCL's, on NVLink
// inside a rack, where 8 channels share the pair's ports as NCCL's 16 do. A count
// out of range is refused naming the field.
func TestDPTPMaxCTAs(t *testing.T) {
	spec, err := catalog.System("gb200-nvl72")
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes, spec.Intra.DomainNodes = 128, 16
	segments, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	req := step.Request{
		Model: arch(t, "llama3-8b"), Cluster: segments,
		Training: step.Training{SeqLen: 8192, GlobalBatch: 64, Precision: step.FP8, FP8Recipe: step.FP8Current,
			Framework: "nemo", CUDAGraphs: true, CPMaxCTAs: 1},
		Layout: step.Layout{TP: 2, PP: 1, DP: 64, CP: 4, ZeRO: 1, MicroBatch: 1, SP: true, OverlapTP: true},
	}
	est := func(r step.Request) step.Result {
		t.Helper()
		res, err := step.New().Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	call := func(res step.Result, kind, op string) step.CommCall {
		t.Helper()
		for _, c := range res.Comms {
			if c.KindName == kind && c.Op == op {
				return c
			}
		}
		t.Fatalf("no %s %s in the communication table", kind, op)
		return step.CommCall{}
	}
	def := est(req)
	capped := req
	capped.Training.DPMaxCTAs, capped.Training.TPMaxCTAs = 8, 8
	eight := est(capped)
	rd, r8 := call(def, "dp", "reducescatter"), call(eight, "dp", "reducescatter")
	t.Logf("%.0f MB gradient reduce-scatter over 256 ranks: %.0f µs on NCCL's channels, %.0f µs on 8; exposed DP %.2f → %.2f ms, step %.2f → %.2f ms",
		rd.Bytes/1e6, rd.TimeUs, r8.TimeUs, 1e3*def.Breakdown.Exposed[step.CommDP], 1e3*eight.Breakdown.Exposed[step.CommDP], 1e3*def.StepTime, 1e3*eight.StepTime)
	if !(r8.TimeUs > 1.3*rd.TimeUs) {
		t.Errorf("gradient reduce-scatter %.0f µs on 8 thread blocks, %.0f µs on NCCL's channels: want the cap to bind", r8.TimeUs, rd.TimeUs)
	}
	if !(eight.StepTime > def.StepTime) {
		t.Errorf("step %.5f s with the caps, %.5f s without: want longer", eight.StepTime, def.StepTime)
	}
	if a, b := call(def, "tp", "allgather"), call(eight, "tp", "allgather"); a.TimeUs != b.TimeUs {
		t.Errorf("TP overlap's all-gather %.2f µs, %.2f µs under the TP group's cap: userbuffers are not NCCL's", a.TimeUs, b.TimeUs)
	}
	// One rack, TP 2 without overlap: the TP collectives on 8 channels cost what
	// they cost on NCCL's (the pair's NVLink ports pace both).
	rack, rackCapped := req, req
	rack.Cluster, rack.Layout.DP, rack.Layout.OverlapTP, rack.Training.GlobalBatch = cluster(t, "gb200-nvl72", 16), 8, false, 8
	rackCapped = rack
	rackCapped.Training.TPMaxCTAs = 8
	if a, b := call(est(rack), "tp", "allgather"), call(est(rackCapped), "tp", "allgather"); b.TimeUs > a.TimeUs*1.01 {
		t.Errorf("TP 2 all-gather in a rack: %.2f µs on NCCL's channels, %.2f µs on 8", a.TimeUs, b.TimeUs)
	}
	for _, bad := range []int{-1, collective.MaxChannels + 1} {
		for field, set := range map[string]func(*step.Training){
			"training.dp_nccl_max_ctas": func(t *step.Training) { t.DPMaxCTAs = bad },
			"training.tp_nccl_max_ctas": func(t *step.Training) { t.TPMaxCTAs = bad },
		} {
			r := req
			set(&r.Training)
			_, err := step.New().Estimate(r)
			var fe *invalid.Error
			if !errors.As(err, &fe) || fe.Field != field {
				t.Errorf("%s %d: error %v, want one naming %s", field, bad, err, field)
			}
		}
	}
}
