package service

import (
	"context"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// CalibrateCluster fits the base cluster's constants to the request's measurement
// files (estimator/calibrate) and returns the calibrated cluster with the report.
func (s *Service) CalibrateCluster(ctx context.Context, req *pb.CalibrateClusterRequest) (*pb.CalibrateClusterResponse, error) {
	cal, rep, err := s.calibrate(ctx, req)
	if err != nil {
		return nil, err
	}
	return wire.CalibrationResponse(rep, cal.Inputs), nil
}

// calibrate resolves and runs one calibration. It takes a large slot of the gate
// (up to seconds of CPU on the largest request the limits allow, see
// wire.MaxCalibrationInputs) and stops at the call's deadline.
func (s *Service) calibrate(ctx context.Context, req *pb.CalibrateClusterRequest) (*wire.Calibration, *calibrate.Report, error) {
	cal, err := wire.ResolveCalibration(positiveZeros(req))
	if err != nil {
		return nil, nil, err
	}
	release, err := s.acquire(ctx, true)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	rep, err := calibrate.CalibrateContext(ctx, cal.Base, cal.Spec, cal.Inputs)
	if err != nil {
		return nil, nil, cal.FileError(err)
	}
	rep.Spec.Name = req.GetName()
	if rep.Spec.Name == "" {
		rep.Spec.Name = cal.Spec.Name + "-calibrated"
	}
	return cal, rep, nil
}
