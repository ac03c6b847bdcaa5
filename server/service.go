package server

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	"github.com/stepcost/stepcost/internal/buildinfo"
	"github.com/stepcost/stepcost/internal/service"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server/admission"
)

// EstimatorVersion identifies the models behind the answers (buildinfo.EstimatorVersion).
const EstimatorVersion = buildinfo.EstimatorVersion

// Version is the one-line answer to --version of the stepcost binaries.
func Version(program string) string { return buildinfo.Version(program) }

// Limits bound what one request may ask for (service.Limits).
type Limits = service.Limits

// DefaultLimits are safe for a shared service.
func DefaultLimits() Limits { return service.DefaultLimits() }

// Service registers the service core (internal/service) with gRPC: every call goes
// to the core, and its typed errors come back as gRPC status (toStatus). The core
// takes its search slots from the daemon's admission control.
type Service struct {
	pb.UnimplementedStepcostServiceServer
	pb.UnimplementedPictureServiceServer
	core *service.Service
	// admit bounds the searches running at once (package admission; the core
	// decides which calls take a slot).
	admit *admission.Control
}

// NewService builds a service; c may be nil for no cache.
func NewService(limits Limits, c *cache.Cache[proto.Message]) *Service {
	return newService(limits, c, nil)
}

func newService(limits Limits, c *cache.Cache[proto.Message], tracer trace.Tracer) *Service {
	admit := admission.New(limits.MaxConcurrentSearches, limits.MaxQueuedSearches, searchHeap)
	return &Service{admit: admit, core: service.New(service.Options{Limits: &limits, Cache: c, Gate: admit, Tracer: tracer, APISpelling: true})}
}

// answer is a call's answer with its error as a gRPC status.
func answer[T any](ctx context.Context, resp T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, toStatus(ctx, err)
	}
	return resp, nil
}

// answerAsWritten is answer for the calls whose fields take the domain's own
// spellings as strings (a calibration run's schedule "1f1b"): their refusals
// name the values as the caller wrote them (asWritten).
func answerAsWritten[T any](ctx context.Context, resp T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, asWritten(ctx, err)
	}
	return resp, nil
}

// EstimateStep estimates one layout.
func (s *Service) EstimateStep(ctx context.Context, req *pb.EstimateStepRequest) (*pb.EstimateStepResponse, error) {
	resp, err := s.core.EstimateStep(ctx, req)
	return answer(ctx, resp, err)
}

// EstimatePlan searches and ranks the plans of a job.
func (s *Service) EstimatePlan(ctx context.Context, req *pb.EstimatePlanRequest) (*pb.EstimatePlanResponse, error) {
	resp, err := s.core.EstimatePlan(ctx, req)
	return answer(ctx, resp, err)
}

// RankConfigs estimates and ranks a batch; each failing item carries its own
// error, bounded as every error answer is.
func (s *Service) RankConfigs(ctx context.Context, req *pb.RankConfigsRequest) (*pb.RankConfigsResponse, error) {
	resp, err := s.core.RankConfigs(ctx, req)
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	for _, r := range resp.GetResults() {
		if r.GetError() != nil {
			r.Error = boundItem(r.GetError())
		}
	}
	return resp, nil
}

// SimulateCollective prices one collective.
func (s *Service) SimulateCollective(ctx context.Context, req *pb.SimulateCollectiveRequest) (*pb.SimulateCollectiveResponse, error) {
	resp, err := s.core.SimulateCollective(ctx, req)
	return answer(ctx, resp, err)
}

// ListCatalog lists the embedded catalog.
func (s *Service) ListCatalog(ctx context.Context, req *pb.ListCatalogRequest) (*pb.ListCatalogResponse, error) {
	resp, err := s.core.ListCatalog(ctx, req)
	return answer(ctx, resp, err)
}

// CalibrateCluster fits a base cluster to the request's measurement files.
func (s *Service) CalibrateCluster(ctx context.Context, req *pb.CalibrateClusterRequest) (*pb.CalibrateClusterResponse, error) {
	resp, err := s.core.CalibrateCluster(ctx, req)
	return answerAsWritten(ctx, resp, err)
}

// DrawSchedule draws one layout's schedule and breakdown (SVG).
func (s *Service) DrawSchedule(ctx context.Context, req *pb.DrawScheduleRequest) (*httpbody.HttpBody, error) {
	resp, err := s.core.DrawSchedule(ctx, req)
	return answer(ctx, resp, err)
}

// DrawPareto draws a search's plans and Pareto front (SVG).
func (s *Service) DrawPareto(ctx context.Context, req *pb.DrawParetoRequest) (*httpbody.HttpBody, error) {
	resp, err := s.core.DrawPareto(ctx, req)
	return answer(ctx, resp, err)
}

// DrawCalibration draws a calibration's measured and predicted bus bandwidths (SVG).
func (s *Service) DrawCalibration(ctx context.Context, req *pb.DrawCalibrationRequest) (*httpbody.HttpBody, error) {
	resp, err := s.core.DrawCalibration(ctx, req)
	return answerAsWritten(ctx, resp, err)
}
