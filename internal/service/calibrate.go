package service

import (
	"context"
	"fmt"

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
// wire.MaxCalibrationInputs), or as many slots as the live heap it needs weighs
// (calibrate.Heap: sweeps of thousands of nodes), runs within the heap of the
// slots it took and stops at the call's deadline. One that needs more heap than
// all the gate's slots is refused, naming the input that asks for it.
func (s *Service) calibrate(ctx context.Context, req *pb.CalibrateClusterRequest) (*wire.Calibration, *calibrate.Report, error) {
	cal, err := wire.ResolveCalibration(positiveZeros(req))
	if err != nil {
		return nil, nil, err
	}
	heap := int64(0) // 0: calibrate.DefaultHeap, or what the inputs need
	release := func() {}
	if s.gate != nil {
		need := calibrate.Heap(cal.Spec, cal.Inputs)
		if all := s.gate.Heap(); all > 0 && need.Bytes > all {
			return nil, nil, heapLimit(req, need, all, s.limits.MaxConcurrentSearches)
		}
		if release, heap, err = s.gate.AcquireHeap(ctx, true, need.Bytes); err != nil {
			return nil, nil, err
		}
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	rep, err := calibrate.CalibrateWithin(ctx, cal.Base, cal.Spec, cal.Inputs, heap)
	if err != nil {
		return nil, nil, cal.FileError(err)
	}
	rep.Spec.Name = req.GetName()
	if rep.Spec.Name == "" {
		rep.Spec.Name = cal.Spec.Name + "-calibrated"
	}
	return cal, rep, nil
}

// heapLimit refuses a calibration that needs more live heap than all of the
// gate's slots (all bytes, in slots of them), on the field of the input whose
// placement asks for it: its nodes when the request states them, else its
// content (the device lines of its header).
func heapLimit(req *pb.CalibrateClusterRequest, need calibrate.HeapNeed, all int64, slots int) error {
	field := "inputs"
	for i, in := range req.GetInputs() {
		if need.Largest.File != "" && in.GetName() == need.Largest.File {
			field = fmt.Sprintf("inputs[%d].content", i)
			if in.GetNodes() > 0 {
				field = fmt.Sprintf("inputs[%d].nodes", i)
			}
			break
		}
	}
	return wire.Limit(field, fmt.Sprintf("a calibration of %d node(s) × %d GPUs needs about %s; the server's calibrations and searches hold at most %d MiB (%d search slots of %d MiB, flag --max-concurrent-searches): calibrate on fewer nodes or ask a server with more slots",
		need.Largest.Nodes, need.Largest.GPUsPerNode, need, (all+1<<20-1)>>20, slots, (all/int64(max(slots, 1))+1<<20-1)>>20))
}
