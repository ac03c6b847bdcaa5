package service

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/invalid"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// CalibrateCluster refuses a training log of another GPU than the base
// cluster's as the rest of calibrate refuses a file (docs/calibration.md):
// INVALID_ARGUMENT on the input's content, the message naming the file, the line
// and both GPUs. A log that states no MFU is fitted, and the response's notes say
// the check could not be made.
func TestCalibrateClusterTrainingLogOfAnotherGPU(t *testing.T) {
	b, err := os.ReadFile("../../estimator/calibrate/testdata/trainlogs/torchao-pretraining-bf16.log")
	if err != nil {
		t.Fatal(err)
	}
	run := &pb.CalibrationRun{Model: "llama3-8b", Gpus: 8, Zero: 3, MicroBatch: 1, GlobalBatch: 8, SeqLen: 8192, Recompute: "ops"}
	req := func(system, content string) *pb.CalibrateClusterRequest {
		return &pb.CalibrateClusterRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: system}},
			Inputs: []*pb.CalibrationInput{{Name: "bf16.log", Content: content, Run: run}}}
	}
	s := New(Options{})
	_, err = s.CalibrateCluster(context.Background(), req("dgx-a100", string(b)))
	var fe *invalid.Error
	if !errors.As(err, &fe) || codeOf(err) != InvalidArgument || fe.Field != "inputs[0].content" ||
		!strings.Contains(fe.Rule, "bf16.log:2: tflops ÷ mfu = 367.39 ÷ 37.15 % = 988.9 TFLOP/s") || !strings.Contains(fe.Rule, "H100") || !strings.Contains(fe.Rule, "dgx-a100's A100-80GB") {
		t.Errorf("the H100 log on dgx-a100: %v", err)
	}
	na := regexp.MustCompile(`mfu: [0-9.]+%`).ReplaceAllString(string(b), "mfu: N/A")
	resp, err := s.CalibrateCluster(context.Background(), req("dgx-a100", na))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(resp.GetNotes(), func(n string) bool {
		return strings.HasPrefix(n, "bf16.log: the GPU the run ran on could not be checked against the base cluster's")
	}) {
		t.Errorf("notes %q", resp.GetNotes())
	}
}
