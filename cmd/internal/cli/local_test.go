package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/internal/service"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// In process the command line answers with the daemon's core under the daemon's
// default limits: a search over --max-search-gpus is refused before it runs (it
// had no such bound in process), naming the field and the flag.
func TestLocalRunsTheServiceCore(t *testing.T) {
	l := newLocal()
	if got, want := l.svc.Limits(), service.DefaultLimits(); got != want {
		t.Fatalf("limits %+v, want the daemon's %+v", got, want)
	}
	req := &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 4096, GlobalBatch: 1024}, MaxGpus: 65536}
	_, err := l.EstimatePlan(context.Background(), req)
	var le *wire.LimitError
	if !errors.As(err, &le) || le.Field != "max_gpus" || !strings.Contains(le.Msg, "--max-search-gpus") {
		t.Fatalf("a search of every size up to 65 536 GPUs: %v", err)
	}
	if _, _, err := l.plan(context.Background(), req); !errors.As(err, &le) {
		t.Fatalf("the same search drawn: %v", err)
	}
}
