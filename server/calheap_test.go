package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A daemon of one search slot (130 MiB of heap for its searches and
// calibrations) refuses largeSweeps, whose 16 384-node sweep takes about 256
// MiB to place, as a request over its limit naming the input's nodes and the
// budget — before, it admitted it in one slot and the calibration's live heap
// passed 350 MiB — while it admits the five OCI sweeps (and answers them) and
// the B200 sweep stated on 64–1 024 nodes (stopped by its short deadline here,
// so admitted: not refused).
func TestCalibrationRefusedOverTheHeapBudget(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxConcurrentSearches = 1
	svc := NewService(limits, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := svc.CalibrateCluster(ctx, largeSweeps(t))
	st := status.Convert(err)
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	if st.Code() != codes.InvalidArgument || len(fields) != 1 || fields[0] != "inputs[15].nodes" ||
		!strings.Contains(st.Message(), "16384 node(s)") || !strings.Contains(st.Message(), "at most 130 MiB") || !strings.Contains(st.Message(), "--max-concurrent-searches") {
		t.Errorf("largeSweeps on one slot: %v (fields %v); want INVALID_ARGUMENT on inputs[15].nodes naming its nodes and the 130 MiB budget", err, fields)
	}
	if _, err := svc.CalibrateCluster(context.Background(), ociCalibration(t)); err != nil {
		t.Errorf("the five OCI sweeps on one slot: %v", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancelShort()
	if _, err := svc.CalibrateCluster(short, realisticSweeps(t)); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("B200 sweeps on 64–1 024 nodes on one slot: %v; want admitted, then stopped by the deadline", err)
	}
}

// A calibration takes as many slots as its heap weighs: largeSweeps (about 280
// MiB) takes all three slots of a daemon of three, so a search sent while it
// runs finds none free and, with no queue, is refused as overloaded — as any
// search is when the slots are taken. Before, a calibration took one slot and
// the search ran beside it.
func TestCalibrationTakesTheSlotsItsHeapWeighs(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxConcurrentSearches, limits.MaxQueuedSearches = 3, 0
	svc := NewService(limits, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := svc.CalibrateCluster(ctx, largeSweeps(t))
		done <- err
	}()
	waitFor(t, func() bool { return svc.admit.Running() == 1 && svc.admit.SlotsHeld() == 3 })
	_, err := svc.EstimatePlan(context.Background(), plannerRequest())
	cancel()
	if cerr := <-done; status.Code(cerr) != codes.Canceled {
		t.Errorf("the calibration, cancelled: %v", cerr)
	}
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "overloaded") {
		t.Errorf("a search while largeSweeps runs on 3 slots: %v; want UNAVAILABLE, overloaded", err)
	}
}
