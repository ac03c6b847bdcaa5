package step_test

import (
	"errors"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// NeMo's MLPerf Training v5.1 Llama 3.1 8B configuration gives the context-parallel
// process group one NCCL thread block (conf/nccl/custom_communicator_cta.yaml, "cp:
// max_ctas: 1"): each K/V and dK/dV pass of the ring then moves on one channel, at
// one block's copy rate, instead of NCCL's own channels. On Llama 3.1 8B at TP 2 ×
// CP 4 on one GB200 rack (1 024 tokens a GPU, 4 MiB K/V blocks) the passes outlast
// the attention steps they hide under: the exposed ring grows and the step with it.
// The cap changes nothing where there is no ring, and a count out of range is
// refused naming the field.
func TestCPMaxCTAs(t *testing.T) {
	req := step.Request{
		Model: arch(t, "llama3-8b"), Cluster: cluster(t, "gb200-nvl72", 16),
		Training: step.Training{SeqLen: 8192, GlobalBatch: 8, Precision: step.FP8, FP8Recipe: step.FP8Current,
			Framework: "nemo", CUDAGraphs: true},
		Layout: step.Layout{TP: 2, PP: 1, DP: 8, CP: 4, ZeRO: 1, MicroBatch: 1, SP: true},
	}
	est := func(r step.Request) step.Result {
		t.Helper()
		res, err := step.New().Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	pass := func(res step.Result) step.CommCall {
		t.Helper()
		for _, c := range res.Comms {
			if c.KindName == "cp" && c.Op == "sendrecv" {
				return c
			}
		}
		t.Fatal("no CP send/recv in the communication table")
		return step.CommCall{}
	}
	def := est(req)
	capped := req
	capped.Training.CPMaxCTAs = 1
	one := est(capped)
	pd, p1 := pass(def), pass(one)
	rate := collective.Default().P2PChannelGBps[req.Cluster.GPU().Arch]
	t.Logf("%.0f B K/V pass: %.1f µs on NCCL's channels, %.1f µs on one thread block; exposed CP %.2f → %.2f ms, step %.2f → %.2f ms",
		p1.Bytes, pd.TimeUs, p1.TimeUs, 1e3*def.Breakdown.Exposed[step.CommCP], 1e3*one.Breakdown.Exposed[step.CommCP], 1e3*def.StepTime, 1e3*one.StepTime)
	if floor := p1.Bytes / (rate * 1e3); p1.TimeUs < floor {
		t.Errorf("one thread block moves %.0f B in %.1f µs, under one channel's %.1f µs", p1.Bytes, p1.TimeUs, floor)
	}
	if !(p1.TimeUs > 2*pd.TimeUs) {
		t.Errorf("K/V pass %.1f µs on one thread block, %.1f µs on NCCL's channels: want the cap to bind", p1.TimeUs, pd.TimeUs)
	}
	if !(one.Breakdown.Exposed[step.CommCP] > def.Breakdown.Exposed[step.CommCP] && one.StepTime > def.StepTime) {
		t.Errorf("exposed CP %.4f → %.4f s, step %.4f → %.4f s: want both longer with one thread block",
			def.Breakdown.Exposed[step.CommCP], one.Breakdown.Exposed[step.CommCP], def.StepTime, one.StepTime)
	}
	// Without context parallelism the cap has nothing to bound.
	noCP, noCPCapped := req, capped
	noCP.Layout.CP, noCP.Layout.DP = 1, 32
	noCP.Training.GlobalBatch, noCPCapped.Training.GlobalBatch = 32, 32
	noCPCapped.Layout = noCP.Layout
	if a, b := est(noCP).StepTime, est(noCPCapped).StepTime; a != b {
		t.Errorf("CP 1: %.6f s without the cap, %.6f s with it", a, b)
	}
	for _, bad := range []int{-1, collective.MaxChannels + 1} {
		r := req
		r.Training.CPMaxCTAs = bad
		_, err := step.New().Estimate(r)
		var fe *invalid.Error
		if !errors.As(err, &fe) || fe.Field != "training.cp_nccl_max_ctas" {
			t.Errorf("cp_nccl_max_ctas %d: error %v, want one naming training.cp_nccl_max_ctas", bad, err)
		}
	}
}
