package service

import (
	"context"
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// RankConfigs under OBJECTIVE_COST refuses, in each config's item, a token budget
// below that config's step (global_batch × seq_len tokens): 1e-300 tokens ranked
// the configs by the cost of 1e-300 tokens, about 1e-307 dollars. A budget of many
// steps ranks them.
func TestRankTokenBudgetBelowOneStep(t *testing.T) {
	cfg := &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 64}, Layout: &pb.Layout{Tp: 8, Pp: 1, Dp: 1, MicroBatch: 1}}
	s := New(Options{})
	for _, c := range []struct {
		budget  float64
		refused bool
	}{{1e-300, true}, {8192*64 - 1, true}, {8192 * 64, false}, {1e12, false}} {
		resp, err := s.RankConfigs(context.Background(), &pb.RankConfigsRequest{Configs: []*pb.EstimateStepRequest{cfg},
			Objective: pb.Objective_OBJECTIVE_COST, PricePerGpuHour: 2, TokenBudget: c.budget})
		if err != nil {
			t.Fatalf("%v: %v", c.budget, err)
		}
		r := resp.GetResults()[0]
		vs := r.GetError().GetViolations()
		got := len(vs) == 1 && vs[0].GetField() == "token_budget" && strings.Contains(vs[0].GetDescription(), "524288") && r.GetScore() == 0
		if got != c.refused || (!c.refused && (r.GetError() != nil || !(r.GetScore() > 0))) {
			t.Errorf("token_budget %v: %v (score %v), want refused %v", c.budget, r.GetError(), r.GetScore(), c.refused)
		}
	}
}
