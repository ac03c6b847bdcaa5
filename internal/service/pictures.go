package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/api/httpbody"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/picture"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The pictures (PictureService) draw what the other calls answer: package picture
// renders, this file resolves the request as the call it draws does.

// svgType is the media type of every picture.
const svgType = "image/svg+xml"

func svgBody(fig picture.Figure) *httpbody.HttpBody {
	return &httpbody.HttpBody{ContentType: svgType, Data: fig.SVG()}
}

// DrawSchedule estimates one layout as EstimateStep does and draws its pipeline
// schedule above its breakdown.
func (s *Service) DrawSchedule(ctx context.Context, req *pb.DrawScheduleRequest) (*httpbody.HttpBody, error) {
	fig, err := s.SchedulePicture(ctx, req.GetEstimate())
	if err != nil {
		return nil, err
	}
	return svgBody(fig), nil
}

// SchedulePicture is DrawSchedule's figure.
func (s *Service) SchedulePicture(ctx context.Context, req *pb.EstimateStepRequest) (picture.Figure, error) {
	resp, res, err := s.StepResult(ctx, req)
	if err != nil {
		return picture.Figure{}, err
	}
	title := fmt.Sprintf("%s on %s", resp.GetModel().GetName(), clusterName(req.GetCluster()))
	sched, err := picture.Schedule(res, title)
	if errors.Is(err, picture.ErrTooManyStages) {
		return picture.Figure{}, invalid.Field("layout.pp", "%v", err)
	}
	if err != nil { // a valid estimate has micro-batches and stages
		return picture.Figure{}, err
	}
	return picture.Stack(sched, picture.Breakdown(res, title)), nil
}

// DrawPareto runs (or finds in the cache) the EstimatePlan answer and draws its
// plans: the top plans and the Pareto front.
func (s *Service) DrawPareto(ctx context.Context, in *pb.DrawParetoRequest) (*httpbody.HttpBody, error) {
	req := in.GetPlan()
	resp, err := s.EstimatePlan(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(resp.GetPlans()) == 0 {
		return nil, errorf(FailedPrecondition, "no feasible plan to draw: %s", noPlanText(resp))
	}
	fig, err := picture.Pareto(FrontOf(resp, fmt.Sprintf("%s on %s", resp.GetModel().GetName(), clusterName(req.GetCluster()))))
	if err != nil {
		return nil, err
	}
	return svgBody(fig), nil
}

func noPlanText(resp *pb.EstimatePlanResponse) string {
	if r := resp.GetNoPlanReason(); r != "" {
		// The reason starts as the answer says it; the picture's error says it once.
		return strings.TrimPrefix(r, "no feasible plan: ")
	}
	return "every layout was pruned"
}

// FrontOf is what the Pareto picture draws of an EstimatePlan answer: its top plans
// and its front, merged as picture.Merge merges a search's (one key for both).
func FrontOf(resp *pb.EstimatePlanResponse, title string) picture.Front {
	return picture.Merge(title, int(resp.GetStats().GetEvaluated()), planCandidates(resp.GetPlans()), planCandidates(resp.GetPareto()))
}

func planCandidates(ps []*pb.Plan) []picture.Candidate {
	out := make([]picture.Candidate, len(ps))
	for i, p := range ps {
		label := "?"
		if l, err := wire.LayoutFromProto(p.GetLayout()); err == nil {
			label = picture.LayoutLabel(l)
		}
		e := p.GetEstimate()
		out[i] = picture.Candidate{Label: label, GPUs: int(p.GetGpus()), StepTime: e.GetStepTimeS(),
			MemoryGB: e.GetMemory().GetTotalGb(), CapacityGB: e.GetMemory().GetCapacityGb(), Rank: int(p.GetRank()),
			Dominated: p.GetDominated()}
	}
	return out
}

// clusterName is a cluster's catalog name, or its definition's name.
func clusterName(c *pb.ClusterSpec) string {
	if n := c.GetName(); n != "" {
		return n
	}
	if n := c.GetDefinition().GetName(); n != "" {
		return n
	}
	return "a custom cluster"
}

// DrawCalibration calibrates as CalibrateCluster does and draws the measured bus
// bandwidth of every nccl-tests file over message size with the base's and the
// calibrated prediction.
func (s *Service) DrawCalibration(ctx context.Context, req *pb.DrawCalibrationRequest) (*httpbody.HttpBody, error) {
	cal, rep, err := s.calibrate(ctx, req.GetCalibration())
	if err != nil {
		return nil, err
	}
	if len(cal.Inputs.Sweeps) == 0 {
		return nil, invalid.Field("inputs", "no nccl-tests output to draw (training logs have no bus bandwidth)")
	}
	fig, err := picture.Calibration(rep, cal.Inputs.Sweeps)
	if err != nil {
		return nil, err
	}
	return svgBody(fig), nil
}
