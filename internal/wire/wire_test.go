package wire_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

func TestCode(t *testing.T) {
	for name, c := range map[string]struct {
		err   error
		code  string
		field string
	}{
		"field":       {invalid.Field("layout.tp", "must be ≥ 1"), "INVALID_ARGUMENT", "layout.tp"},
		"joined":      {errors.Join(errors.New("x"), invalid.Field("training.seq_len", "bad")), "INVALID_ARGUMENT", "training.seq_len"},
		"not found":   {wire.NotFound("model.name", errors.New("unknown model")), "NOT_FOUND", "model.name"},
		"limit":       {wire.Limit("gpus", "too many"), "INVALID_ARGUMENT", "gpus"},
		"deadline":    {fmt.Errorf("search: %w", context.DeadlineExceeded), "DEADLINE_EXCEEDED", ""},
		"canceled":    {context.Canceled, "CANCELLED", ""},
		"other error": {errors.New("boom"), "INTERNAL", ""},
	} {
		t.Run(name, func(t *testing.T) {
			e := wire.ItemError(c.err)
			if e.GetCode() != c.code || e.GetMessage() != c.err.Error() {
				t.Fatalf("got %v, want code %s", e, c.code)
			}
			if got := len(e.GetViolations()); (c.field == "") != (got == 0) || (got > 0 && e.GetViolations()[0].GetField() != c.field) {
				t.Fatalf("violations %v, want field %q", e.GetViolations(), c.field)
			}
		})
	}
}

// The ranking score is the planner's: the cost of a budget is steps × step time ×
// GPUs × price.
func TestScore(t *testing.T) {
	e := &pb.StepEstimate{StepTimeS: 2, Gpus: 8, Training: &pb.Training{GlobalBatch: 4, SeqLen: 1000},
		Throughput: &pb.Throughput{TokensPerSPerGpu: 250}}
	req := &pb.RankConfigsRequest{PricePerGpuHour: 3.6, TokenBudget: 4e6}
	for obj, want := range map[planner.Objective]float64{planner.FastestStep: 2, planner.Throughput: -250, planner.Cost: 1000 * 2 * 8 * 3.6 / 3600} {
		if got := wire.Score(obj, req, e); got != want {
			t.Errorf("%s: score %v, want %v", obj, got, want)
		}
	}
}

func TestRankObjective(t *testing.T) {
	cfg := []*pb.EstimateStepRequest{{}}
	if _, err := wire.RankObjective(&pb.RankConfigsRequest{Configs: cfg, Objective: pb.Objective_OBJECTIVE_COST}, 10); err == nil {
		t.Fatal("cost without a price: want an error")
	}
	if _, err := wire.RankObjective(&pb.RankConfigsRequest{Configs: append(cfg, cfg...)}, 1); wire.ItemError(err).GetViolations()[0].GetField() != "configs" {
		t.Fatalf("over the limit: %v", err)
	}
	if obj, err := wire.RankObjective(&pb.RankConfigsRequest{Configs: cfg}, 1); err != nil || obj != planner.FastestStep {
		t.Fatalf("got %v, %v", obj, err)
	}
}

// A measured range over node counts (min_nodes, max_nodes) survives the round
// trip through a ClusterDefinition, as CalibrateCluster returns it.
func TestAlgoRangeNodeRangeRoundTrip(t *testing.T) {
	spec, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	spec.Algorithms = []topology.AlgoRange{
		{Op: "allreduce", MinNodes: 3, GPUsPerNode: 8, MinBytes: 1 << 30, Algo: "nvlstree"},
		{Op: "allreduce", MinNodes: 2, MaxNodes: 4, MinBytes: 1 << 20, MaxBytes: 8 << 20, Algo: "ring"},
	}
	back, err := wire.DefinitionToSpec("cluster.definition", wire.SpecToDefinition(spec))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Algorithms, spec.Algorithms) {
		t.Errorf("round trip: %+v, want %+v", back.Algorithms, spec.Algorithms)
	}
}
