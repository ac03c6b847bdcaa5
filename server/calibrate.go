package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/picture"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server/gateway"
)

// CalibrateCluster fits the base cluster's constants to the request's measurement
// files (estimator/calibrate) and returns the calibrated cluster with the report.
func (s *Service) CalibrateCluster(ctx context.Context, req *pb.CalibrateClusterRequest) (*pb.CalibrateClusterResponse, error) {
	cal, rep, err := s.calibrate(ctx, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return wire.CalibrationResponse(rep, cal.Inputs), nil
}

// calibrate resolves and runs one calibration. It is admitted as a large search
// (up to seconds of CPU on the largest request the limits allow, see
// wire.MaxCalibrationInputs) and stops at the call's deadline.
func (s *Service) calibrate(ctx context.Context, req *pb.CalibrateClusterRequest) (*wire.Calibration, *calibrate.Report, error) {
	cal, err := wire.ResolveCalibration(req)
	if err != nil {
		return nil, nil, err
	}
	release, err := s.admit.Acquire(ctx, true)
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

// calibrationPicture serves POST /v1/pictures:calibration: a CalibrateCluster
// request in, the measured bus bandwidth of every nccl-tests file over message
// size with the base's and the calibrated prediction out (SVG).
func calibrationPicture(svc *Service, deadline time.Duration, log *slog.Logger) http.Handler {
	return pictureEndpoint(deadline, log, func(ctx context.Context, body []byte) (picture.Figure, error) {
		req := &pb.CalibrateClusterRequest{}
		if err := gateway.DecodeStrict(body, req); err != nil {
			return picture.Figure{}, err
		}
		cal, rep, err := svc.calibrate(ctx, req)
		if err != nil {
			return picture.Figure{}, err
		}
		if len(cal.Inputs.Sweeps) == 0 {
			return picture.Figure{}, invalid.Field("inputs", "no nccl-tests output to draw (training logs have no bus bandwidth)")
		}
		return picture.Calibration(rep, cal.Inputs.Sweeps)
	})
}
