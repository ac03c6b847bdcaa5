package step_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/step"
)

// PyTorch's context_parallel (torchtitan) moves the ring's K/V as one all-gather per
// attention call, with the K/V heads already repeated to the queries' (torchtitan's
// Llama calls scaled_dot_product_attention after repeat_kv), and its dK/dV partial
// sums in fp32, one block per step; Megatron-Core's ring sends the K/V heads
// themselves, block by block. On Llama 3 8B (32 query heads, 8 K/V heads) the
// gathered buffer is CP × 4 × the 16-bit block of 8 K/V heads, and the dK/dV send
// twice the repeated block.
func TestTorchRingGathersRepeatedKV(t *testing.T) {
	a := arch(t, "llama3-8b")
	const cp, seq = 8, 131072
	tokens := float64(seq / cp)
	est := func(fw string) step.Result {
		req := step.Request{
			Model: a, Cluster: cluster(t, "dgx-h100", 2),
			Training: step.Training{SeqLen: seq, GlobalBatch: 2, Framework: fw},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 2, CP: cp, ZeRO: 3, MicroBatch: 1},
		}
		res, err := step.New().Estimate(req)
		if err != nil {
			t.Fatalf("%s: %v", fw, err)
		}
		return res
	}
	cpCalls := func(res step.Result) map[string]float64 {
		out := map[string]float64{}
		for _, c := range res.Comms {
			if c.KindName == "cp" {
				out[c.Op] = c.Bytes
			}
		}
		return out
	}
	kvHeads := tokens * float64(a.KVSavedDim()) * 2
	repeated := tokens * float64(a.QDim()+a.VOutDim()) * 2
	if !(repeated == 4*kvHeads) {
		t.Fatalf("llama3-8b: repeated K/V %.4g B not 4 × the K/V heads' %.4g B", repeated, kvHeads)
	}
	tt := cpCalls(est("torchtitan"))
	if got := tt[collective.AllGather.String()]; math.Abs(got-cp*repeated) > 1 {
		t.Errorf("torchtitan: all-gather of %.4g B, want CP × repeated block = %.4g", got, cp*repeated)
	}
	if got := tt[collective.SendRecv.String()]; math.Abs(got-2*repeated) > 1 {
		t.Errorf("torchtitan: dK/dV send of %.4g B, want the fp32 repeated block %.4g", got, 2*repeated)
	}
	mc := cpCalls(est("megatron-core"))
	if _, ok := mc[collective.AllGather.String()]; ok {
		t.Errorf("megatron-core: the ring all-gathers its K/V")
	}
	if got := mc[collective.SendRecv.String()]; math.Abs(got-kvHeads) > 1 {
		t.Errorf("megatron-core: K/V send of %.4g B, want the K/V heads' block %.4g", got, kvHeads)
	}
}
