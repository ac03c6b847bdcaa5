package service

import (
	"context"
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A refusal over --max-gpus quotes the layout as the service read it: it quoted
// "tp 8, pp 0, dp 16385, cp 0" for a layout whose unset pp and cp are 1 (a
// product of 0 GPUs, refused as too many).
func TestLayoutGPUsLimitQuotesTheLayoutAsRead(t *testing.T) {
	ctx := context.Background()
	model := &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}}
	cluster := &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}
	training := &pb.Training{SeqLen: 4096, GlobalBatch: 512}
	_, err := New(Options{}).EstimateStep(ctx, &pb.EstimateStepRequest{Model: model, Cluster: cluster, Training: training,
		Layout: &pb.Layout{Tp: 8, Dp: 16385, MicroBatch: 1}})
	if err == nil || !strings.HasPrefix(err.Error(), "layout: ") || !strings.Contains(err.Error(), "got tp 8, pp 1, dp 16385, cp 1: 131080 GPUs") {
		t.Errorf("tp 8 × dp 16385 over --max-gpus: %v; want the layout's GPUs as read, pp and cp 1", err)
	}
}
