package server

import (
	"context"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/status"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The most live heap a calibration holds, sampled each millisecond, with the
// daemon's default deadline (30 s), against the heap it is admitted with (the
// slots of 130 MiB its estimated need weighs, calibrate.Heap): the realistic
// requests and largeSweeps' 16 shapes of 1 024–16 384 nodes, on three slots
// (the default two refuse it). A minute or two of both cores, so only on
// demand:
//
//	STEPCOST_MEMORY=1 go test ./server -run TestCalibrationMemory -v
func TestCalibrationMemory(t *testing.T) {
	if os.Getenv("STEPCOST_MEMORY") == "" {
		t.Skip("set STEPCOST_MEMORY=1 to measure")
	}
	limits := DefaultLimits()
	limits.MaxConcurrentSearches = 3
	svc := NewService(limits, nil)
	for _, tc := range []struct {
		name string
		req  *pb.CalibrateClusterRequest
	}{
		{"five OCI A100 sweeps", ociCalibration(t)},
		{"16 OCI full sweeps", fullSweeps(t)},
		{"16 B200 sweeps on 64-1 024 nodes", realisticSweeps(t)},
		{"16 B200 sweeps on 1 024-16 384 nodes", largeSweeps(t)},
	} {
		var err error
		var took time.Duration
		grew := peakHeapGrowth(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			_, err = svc.CalibrateCluster(ctx, tc.req)
			took = time.Since(start)
		})
		cal, rerr := wire.ResolveCalibration(tc.req)
		if rerr != nil {
			t.Fatal(rerr)
		}
		need := calibrate.Heap(cal.Spec, cal.Inputs).Bytes
		t.Logf("%s: %v after %v, peak live heap +%d MiB; needs %d MiB, admitted in %d MiB", tc.name, status.Code(err), took.Round(time.Millisecond),
			grew>>20, need>>20, ((need+searchHeap-1)/searchHeap*searchHeap)>>20)
	}
}
