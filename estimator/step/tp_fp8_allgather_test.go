package step_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// Without TP overlap, Transformer Engine's sequence-parallel all-gathers move fp8
// under fp8 training (the quantized norm output forward, the quantized output
// gradient backward: 1 B per element), the reduce-scatters 16 bits; bf16 training
// and frameworks without Transformer Engine's linear layers gather 16 bits.
// Llama 3.1 405B at TP 4 on 32 B200 nodes, as MLPerf v5.1's University of Florida run.
func TestTPAllGathersInFP8(t *testing.T) {
	req := func(fw string, p step.Precision) step.Request {
		return step.Request{Model: arch(t, "llama3-405b"), Cluster: cluster(t, "hgx-b200", 32),
			Training: step.Training{SeqLen: 8192, GlobalBatch: 576, Precision: p, Framework: fw},
			Layout: step.Layout{TP: 4, PP: 8, DP: 4, CP: 2, SP: true, ZeRO: 1, MicroBatch: 1, VirtualStages: 8,
				Schedule: step.Interleaved}}
	}
	bytes := func(r step.Result, op string) float64 {
		for _, c := range r.Comms {
			if c.KindName == "tp" && c.Op == op {
				return c.Bytes
			}
		}
		t.Fatalf("no TP %s in %v", op, r.Comms)
		return 0
	}
	act := 1.0 * 4096 * 16384 * 2 // one micro-batch's 4096 tokens on a rank (CP 2), 16 bits
	for _, c := range []struct {
		fw     string
		p      step.Precision
		agWant float64
	}{
		{"nemo", step.FP8, act / 2},
		{"megatron-core", step.FP8, act / 2},
		{"nemo", step.BF16, act},
		{"torchtitan", step.FP8, act},
	} {
		r := mustEstimate(t, req(c.fw, c.p))
		if ag, rs := bytes(r, "allgather"), bytes(r, "reducescatter"); ag != c.agWant || rs != act {
			t.Errorf("%s %v: all-gather %.0f B, reduce-scatter %.0f B; want %.0f and %.0f", c.fw, c.p, ag, rs, c.agWant, act)
		}
	}
	fp8, bf := mustEstimate(t, req("nemo", step.FP8)), mustEstimate(t, req("torchtitan", step.FP8))
	if !(fp8.Breakdown.Exposed[step.CommTP] < bf.Breakdown.Exposed[step.CommTP]) {
		t.Errorf("exposed TP: fp8 gathers %.2f s, 16-bit %.2f s; want less", fp8.Breakdown.Exposed[step.CommTP], bf.Breakdown.Exposed[step.CommTP])
	}
}
