package server

import (
	"context"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/status"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// The most live heap a calibration holds, sampled each millisecond, on the
// daemon's default limits with its default deadline (30 s): the realistic
// requests and largeSweeps' 16 shapes of 1 024–16 384 nodes. Tens of seconds of
// both cores, so only on demand:
//
//	STEPCOST_MEMORY=1 go test ./server -run TestCalibrationMemory -v
func TestCalibrationMemory(t *testing.T) {
	if os.Getenv("STEPCOST_MEMORY") == "" {
		t.Skip("set STEPCOST_MEMORY=1 to measure")
	}
	svc := NewService(DefaultLimits(), nil)
	for _, tc := range []struct {
		name string
		req  *pb.CalibrateClusterRequest
	}{
		{"five OCI A100 sweeps", ociCalibration(t)},
		{"16 OCI full sweeps", fullSweeps(t)},
		{"16 B200 sweeps on 64-1 024 nodes", realisticSweeps(t)},
		{"16 B200 sweeps on 1 024-16 384 nodes", largeSweeps(t)},
	} {
		runtime.GC()
		base := liveHeap()
		var peak atomic.Uint64
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Millisecond):
					if l := liveHeap(); l > peak.Load() {
						peak.Store(l)
					}
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		_, err := svc.CalibrateCluster(ctx, tc.req)
		took := time.Since(start)
		cancel()
		close(done)
		t.Logf("%s: %v after %v, peak live heap +%d MiB", tc.name, status.Code(err), took.Round(time.Millisecond), (int64(peak.Load())-int64(base))>>20)
	}
}
