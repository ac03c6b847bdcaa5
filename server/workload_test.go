package server

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The fine-grained MoE inputs reach the estimator over gRPC and act as their physics
// says: top-2 routing doubles the expert-parallel all-to-all bytes, a shared expert
// adds parameters, a busier router rank slows the step, a capacity factor caps that,
// multi-head latent attention and sliding windows change the model, and DualPipe and
// ZB-V shrink the 1F1B bubble. Micro-batches of 4 sequences keep the layers' GPU work
// ahead of the host's (with one, this small model's eager MoE layer is host-bound and a
// window changes nothing the step shows).
func TestMoEWorkloadOverTheWire(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	base := func() *pb.EstimateStepRequest {
		return &pb.EstimateStepRequest{
			Model: &pb.ModelSpec{Source: &pb.ModelSpec_Architecture{Architecture: &pb.Architecture{
				Name: "moe-test", Layers: 16, Hidden: 2048, Heads: 16, KvHeads: 4, Ffn: 8192, GatedMlp: true, Vocab: 32000,
				Moe: &pb.MoE{Experts: 64, TopK: 1, ExpertFfn: 1024}}}},
			Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 2},
			Training: &pb.Training{SeqLen: 4096, GlobalBatch: 128},
			Layout:   &pb.Layout{Tp: 1, Pp: 2, Dp: 8, Ep: 8, MicroBatch: 4, Zero: 1},
		}
	}
	estimate := func(name string, r *pb.EstimateStepRequest) (*pb.StepEstimate, *pb.Architecture) {
		t.Helper()
		resp, err := c.EstimateStep(ctx, r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return resp.GetEstimate(), resp.GetModel()
	}
	epBytes := func(e *pb.StepEstimate) float64 {
		for _, call := range e.GetCommunication() {
			if call.GetKind() == "ep" {
				return call.GetBytes()
			}
		}
		t.Fatal("no expert-parallel call in the communication table")
		return 0
	}
	b, _ := estimate("base", base())

	top2 := base()
	top2.Model.GetArchitecture().Moe.TopK = 2
	e2, _ := estimate("top-2", top2)
	if r := epBytes(e2) / epBytes(b); r < 1.999 || r > 2.001 {
		t.Errorf("top-2 all-to-all bytes are %.3f× top-1's, want 2×", r)
	}

	shared := base()
	shared.Model.GetArchitecture().Moe.SharedExperts = 1
	shared.Model.GetArchitecture().Moe.FirstDense = 1
	es, arch := estimate("shared", shared)
	if arch.GetMoe().GetSharedExperts() != 1 || arch.GetMoe().GetFirstDense() != 1 {
		t.Errorf("the answer's model lost the shared expert or the dense first layer: %v", arch.GetMoe())
	}
	if !(es.GetBreakdown().GetForwardS() > b.GetBreakdown().GetForwardS()) || !(es.GetMemory().GetWeightsGb() > b.GetMemory().GetWeightsGb()) {
		t.Errorf("a shared expert: forward %v s, weights %v GB; without %v s, %v GB", es.GetBreakdown().GetForwardS(),
			es.GetMemory().GetWeightsGb(), b.GetBreakdown().GetForwardS(), b.GetMemory().GetWeightsGb())
	}

	busy := base()
	busy.Training.MoeImbalance = 1.5
	eb, _ := estimate("imbalance", busy)
	capped := proto.Clone(busy).(*pb.EstimateStepRequest)
	capped.Training.MoeCapacityFactor = 1.25
	ec, _ := estimate("capacity", capped)
	if r := epBytes(eb) / epBytes(b); r < 1.499 || r > 1.501 {
		t.Errorf("imbalance 1.5: all-to-all bytes %.3f× balanced", r)
	}
	if r := epBytes(ec) / epBytes(b); r < 1.249 || r > 1.251 {
		t.Errorf("imbalance 1.5 capped at 1.25: all-to-all bytes %.3f× balanced", r)
	}
	if !(eb.GetStepTimeS() > ec.GetStepTimeS() && ec.GetStepTimeS() > b.GetStepTimeS()) {
		t.Errorf("step: balanced %v, capped %v, imbalanced %v s", b.GetStepTimeS(), ec.GetStepTimeS(), eb.GetStepTimeS())
	}

	mla := base()
	mla.Model.GetArchitecture().Mla = &pb.MLA{QLoraRank: 768, KvLoraRank: 256, QkNopeHeadDim: 64, QkRopeHeadDim: 32, VHeadDim: 64}
	win := base()
	win.Model.GetArchitecture().SlidingWindow, win.Model.GetArchitecture().GlobalEvery = 1024, 2
	em, am := estimate("mla", mla)
	ew, _ := estimate("window", win)
	if am.GetMla().GetKvLoraRank() != 256 || em.GetStepTimeS() == b.GetStepTimeS() {
		t.Errorf("MLA did not reach the model: %v, step %v s", am.GetMla(), em.GetStepTimeS())
	}
	if !(ew.GetBreakdown().GetForwardS() < b.GetBreakdown().GetForwardS()) {
		t.Errorf("a 1024-token window at 4096 tokens: forward %v s, full attention %v s", ew.GetBreakdown().GetForwardS(), b.GetBreakdown().GetForwardS())
	}

	// The zero-bubble schedules and DualPipe, which megatron-core (the default) does
	// not run, under fsdp, whose profile states no limit, against its 1F1B.
	fsdp := func(r *pb.EstimateStepRequest) *pb.EstimateStepRequest { r.Training.Framework = "fsdp"; return r }
	f1, _ := estimate("fsdp 1f1b", fsdp(base()))
	for _, s := range []pb.Schedule{pb.Schedule_SCHEDULE_ZERO_BUBBLE, pb.Schedule_SCHEDULE_DUALPIPE, pb.Schedule_SCHEDULE_ZB_V} {
		r := fsdp(base())
		r.Layout.Schedule = s
		e, _ := estimate(s.String(), r)
		if !(e.GetBreakdown().GetBubbleS() < 0.75*f1.GetBreakdown().GetBubbleS()) {
			t.Errorf("%s: bubble %v s, 1F1B %v s", s, e.GetBreakdown().GetBubbleS(), f1.GetBreakdown().GetBubbleS())
		}
	}
}
