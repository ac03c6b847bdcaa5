package server

import (
	"context"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// CalibrateCluster fits the base cluster's constants to the request's measurement
// files (estimator/calibrate) and returns the calibrated cluster with the report.
// It is admitted as a large search: leaving each file out in turn costs up to a
// second of CPU on the largest request the limits allow (wire.MaxCalibrationInputs).
func (s *Service) CalibrateCluster(ctx context.Context, req *pb.CalibrateClusterRequest) (*pb.CalibrateClusterResponse, error) {
	cal, err := wire.ResolveCalibration(req)
	if err != nil {
		return nil, toStatus(err)
	}
	release, err := s.admit.Acquire(ctx, true)
	if err != nil {
		return nil, toStatus(err)
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return nil, toStatus(err)
	}
	rep, err := calibrate.Calibrate(cal.Base, cal.Spec, cal.Inputs)
	if err != nil {
		return nil, toStatus(cal.FileError(err))
	}
	rep.Spec.Name = req.GetName()
	if rep.Spec.Name == "" {
		rep.Spec.Name = cal.Spec.Name + "-calibrated"
	}
	return wire.CalibrationResponse(rep, cal.Inputs), nil
}
