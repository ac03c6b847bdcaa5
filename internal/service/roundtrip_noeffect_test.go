package service

import (
	"context"
	"slices"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A plan's answer, sent back to EstimateStep as its training and layout (the
// documented way to see the plan you pick in full), is the same question: it is
// answered with the plan's estimate and no warning the plan did not carry. The
// answer's training echoes the settings the framework's profile fills in, and
// those came back as fields without effect, though the caller set none of them:
// every plan of llama3-8b under megatron-core warned "training.moe_dispatcher: no
// effect: the model has no MoE layers" (the echo's alltoall) and
// "training.zero3_backward_prefetch: no effect: the layout runs ZeRO 2, not
// ZeRO-3" (the echo's pre); hai-llm's also of moe_permute_fusion, deepspeed-2021's
// of zero3_on_demand_gathers.
func TestPlanSentBackWarnsOfNothingNew(t *testing.T) {
	s := New(Options{})
	for _, fw := range []string{"megatron-core", "nemo", "hai-llm", "deepspeed-2021", "torchtitan", "fsdp"} {
		for _, model := range []string{"llama3-8b", "mixtral-8x7b"} {
			req := plannerRequest()
			req.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: model}}
			req.Cluster.Nodes, req.Gpus, req.TopK = 8, 64, 3
			req.Training.Framework, req.Training.GlobalBatch = fw, 256
			plans, err := s.EstimatePlan(context.Background(), req)
			if err != nil {
				t.Fatalf("%s %s: %v", fw, model, err)
			}
			if len(plans.GetPlans()) == 0 {
				t.Fatalf("%s %s: no plan: %s", fw, model, plans.GetNoPlanReason())
			}
			for _, p := range plans.GetPlans() {
				step, err := s.EstimateStep(context.Background(), &pb.EstimateStepRequest{Model: req.Model, Cluster: req.Cluster,
					Training: p.GetEstimate().GetTraining(), Layout: p.GetEstimate().GetLayout()})
				if err != nil {
					t.Fatalf("%s %s plan %d sent back: %v", fw, model, p.GetRank(), err)
				}
				if got, want := step.GetEstimate().GetStepTimeS(), p.GetEstimate().GetStepTimeS(); got != want {
					t.Errorf("%s %s plan %d sent back: step %v s, the plan's %v s", fw, model, p.GetRank(), got, want)
				}
				for _, w := range step.GetEstimate().GetWarnings() {
					if !slices.Contains(p.GetEstimate().GetWarnings(), w) {
						t.Errorf("%s %s plan %d (zero %d) sent back warns %q", fw, model, p.GetRank(), p.GetLayout().GetZero(), w)
					}
				}
			}
		}
	}
}
