package cli

import (
	"context"

	"google.golang.org/grpc"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/internal/buildinfo"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Limits of the in-process answers: the daemon's defaults, so that a request the
// daemon takes is taken here too.
const (
	localMaxGPUs       = 131072
	localMaxCandidates = 2_000_000
	localMaxConfigs    = rankBatch
)

// local answers in process: the planner and the estimator behind the API's
// messages, resolved and converted as the daemon does it (without its cache,
// admission control or telemetry).
type local struct {
	clusters *wire.Clusters
	coll     *collective.Model
}

func newLocal() local {
	return local{clusters: wire.NewClusters(64), coll: collective.NewModel(collective.Default())}
}

func (l local) EstimateStep(ctx context.Context, in *pb.EstimateStepRequest, _ ...grpc.CallOption) (*pb.EstimateStepResponse, error) {
	s, err := wire.ResolveStep(l.clusters, in, localMaxGPUs)
	if err != nil {
		return nil, err
	}
	return s.Estimate(ctx)
}

func (l local) EstimatePlan(ctx context.Context, in *pb.EstimatePlanRequest, _ ...grpc.CallOption) (*pb.EstimatePlanResponse, error) {
	resp, _, err := l.plan(ctx, in)
	return resp, err
}

// plan answers an EstimatePlan request, with the planner's result for pictures.
func (l local) plan(ctx context.Context, in *pb.EstimatePlanRequest) (*pb.EstimatePlanResponse, planner.Result, error) {
	p, err := wire.ResolvePlan(l.clusters, in, localMaxGPUs, localMaxCandidates)
	if err != nil {
		return nil, planner.Result{}, err
	}
	res, err := wire.SearchResult(ctx, p.Cluster.Est, p.Request)
	if err != nil {
		return nil, res, err
	}
	return wire.PlanResponse(p.Request, res), res, nil
}

// step answers an EstimateStep request, with the estimator's result for pictures.
func (l local) step(ctx context.Context, in *pb.EstimateStepRequest) (*pb.EstimateStepResponse, step.Result, error) {
	s, err := wire.ResolveStep(l.clusters, in, localMaxGPUs)
	if err != nil {
		return nil, step.Result{}, err
	}
	res, err := s.Result(ctx)
	if err != nil {
		return nil, res, err
	}
	return s.Response(res), res, nil
}

func (l local) SimulateCollective(ctx context.Context, in *pb.SimulateCollectiveRequest, _ ...grpc.CallOption) (*pb.SimulateCollectiveResponse, error) {
	c, err := wire.ResolveCollective(l.clusters, l.coll, in, localMaxGPUs)
	if err != nil {
		return nil, err
	}
	return c.Simulate(ctx)
}

// RankConfigs estimates and ranks a batch; each failing item carries its own error.
func (l local) RankConfigs(ctx context.Context, in *pb.RankConfigsRequest, _ ...grpc.CallOption) (*pb.RankConfigsResponse, error) {
	obj, err := wire.RankObjective(in, localMaxConfigs)
	if err != nil {
		return nil, err
	}
	out := &pb.RankConfigsResponse{EstimatorVersion: buildinfo.EstimatorVersion, Results: make([]*pb.RankedConfig, len(in.GetConfigs()))}
	for i, c := range in.GetConfigs() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := &pb.RankedConfig{Index: int32(i)}
		resp, err := l.EstimateStep(ctx, c)
		if err != nil {
			r.Error = wire.ItemError(err)
		} else {
			r.Estimate = resp.GetEstimate()
			r.Score = wire.Score(obj, in, resp.GetEstimate())
		}
		out.Results[i] = r
	}
	wire.RankResults(out.Results)
	return out, nil
}
