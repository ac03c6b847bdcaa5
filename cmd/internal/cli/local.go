package cli

import (
	"context"

	"google.golang.org/grpc"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/internal/service"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// local answers in process with the daemon's own service core (internal/service)
// under the daemon's default limits: the same resolution, validation, checks and
// answers, without its cache (one process asks once), admission control or
// telemetry.
type local struct{ svc *service.Service }

// newLocal is the service in process. It names enum values in a no-plan reason
// and a ranked config's refusal as the API does (SCHEDULE_INTERLEAVED), as a
// daemon does: --json is the same answer with --server or without, and rank's
// rows say a refusal in the words of the file's requests. What the command says
// in the flags' words (a no-plan reason on standard error) it spells back
// (wire.CommandLineSpelling).
func newLocal() local { return local{svc: service.New(service.Options{APISpelling: true})} }

func (l local) EstimateStep(ctx context.Context, in *pb.EstimateStepRequest, _ ...grpc.CallOption) (*pb.EstimateStepResponse, error) {
	return l.svc.EstimateStep(ctx, in)
}

func (l local) EstimatePlan(ctx context.Context, in *pb.EstimatePlanRequest, _ ...grpc.CallOption) (*pb.EstimatePlanResponse, error) {
	return l.svc.EstimatePlan(ctx, in)
}

// plan answers an EstimatePlan request, with the planner's result for pictures.
func (l local) plan(ctx context.Context, in *pb.EstimatePlanRequest) (*pb.EstimatePlanResponse, planner.Result, error) {
	return l.svc.PlanResult(ctx, in)
}

// step answers an EstimateStep request, with the estimator's result for pictures.
func (l local) step(ctx context.Context, in *pb.EstimateStepRequest) (*pb.EstimateStepResponse, step.Result, error) {
	return l.svc.StepResult(ctx, in)
}

func (l local) SimulateCollective(ctx context.Context, in *pb.SimulateCollectiveRequest, _ ...grpc.CallOption) (*pb.SimulateCollectiveResponse, error) {
	return l.svc.SimulateCollective(ctx, in)
}

func (l local) CalibrateCluster(ctx context.Context, in *pb.CalibrateClusterRequest, _ ...grpc.CallOption) (*pb.CalibrateClusterResponse, error) {
	return l.svc.CalibrateCluster(ctx, in)
}

// RankConfigs estimates and ranks a batch; each failing item carries its own error.
func (l local) RankConfigs(ctx context.Context, in *pb.RankConfigsRequest, _ ...grpc.CallOption) (*pb.RankConfigsResponse, error) {
	return l.svc.RankConfigs(ctx, in)
}
