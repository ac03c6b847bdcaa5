package service

import (
	"context"
	"errors"
	"math"
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
	// The A100's peak (115.84 ÷ 37.13 % = 312), which torchtitan also divides by
	// on a GPU its version did not name: fitted on hgx-b200, with calibration's
	// own note beside the readers'.
	a100 := "step:  1  loss: 12.2611  memory: 27.22GiB(68.05%)  tps: 180  tflops: 10.42  mfu: 3.34%\n" +
		"step: 10  loss: 10.4260  memory: 30.89GiB(77.23%)  tps: 2,000  tflops: 115.84  mfu: 37.13%\n" +
		"step: 20  loss:  8.9482  memory: 30.89GiB(77.23%)  tps: 1,998  tflops: 115.72  mfu: 37.09%\n"
	if resp, err = s.CalibrateCluster(context.Background(), req("hgx-b200", a100)); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(resp.GetNotes(), func(n string) bool { return strings.Contains(n, "bf16.log:2: tflops ÷ mfu = 312 TFLOP/s") }) {
		t.Errorf("hgx-b200: notes %q", resp.GetNotes())
	}
}

// CalibrateCluster prices each nccl-tests output by the NCCL release it ran and
// says so in the response's notes, one per file, as stepcost calibrate does:
// Lambda's B200 pair ran 2.26.2 (nccl-library=22602), priced by its rules on
// hgx-b200, which states no release (2.27's rules), the fitted cluster keeping the base's nccl; the same output
// without its release line is priced by the base's.
func TestCalibrateClusterPricesEachInputByItsRelease(t *testing.T) {
	b, err := os.ReadFile("../../estimator/calibrate/testdata/b200-ib/dstack-lambda-allreduce.txt")
	if err != nil {
		t.Fatal(err)
	}
	none := strings.Replace(string(b), "nccl-headers=22602 nccl-library=22602", "", 1)
	s := New(Options{})
	resp, err := s.CalibrateCluster(context.Background(), &pb.CalibrateClusterRequest{
		Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "hgx-b200"}},
		Inputs: []*pb.CalibrationInput{
			{Name: "lambda.txt", Content: string(b), Nodes: 2, GpusPerNode: 8},
			{Name: "none.txt", Content: none, Nodes: 2, GpusPerNode: 8},
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"lambda.txt ran NCCL 2.26.2 (its output says so): priced by its rules; the fitted cluster file is written for the base's NCCL 2.27's rules: the cluster states no release (nccl)",
		"none.txt states no NCCL release: priced by the base's, NCCL 2.27's rules: the cluster states no release (nccl)",
	} {
		if !slices.Contains(resp.GetNotes(), want) {
			t.Errorf("notes %q; want %q", resp.GetNotes(), want)
		}
	}
}

// CalibrateCluster answers the whole report the command line prints: the base,
// each file as read, and every measurement priced with the base cluster, held
// out and with the calibrated cluster — the held-out figures are those the
// "all inputs" error row summarises. The answer carried constants, error rows
// and strings only, so the command could not print its table from it.
func TestCalibrateClusterAnswersTheWholeReport(t *testing.T) {
	b, err := os.ReadFile("../../estimator/calibrate/testdata/b200-ib/dstack-lambda-allreduce.txt")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := New(Options{}).CalibrateCluster(context.Background(), &pb.CalibrateClusterRequest{
		Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "hgx-b200"}},
		Inputs:  []*pb.CalibrationInput{{Name: "lambda.txt", Content: string(b), Nodes: 2, GpusPerNode: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	// The output's 29 sizes, 8 B–2 GiB (docs/calibrate.md's Lambda pair).
	if f := resp.GetFiles(); resp.GetBase() != "hgx-b200" || len(f) != 1 || f[0].GetFile() != "lambda.txt" || f[0].GetKind() != "collective" ||
		f[0].GetOp() != "allreduce" || f[0].GetNodes() != 2 || f[0].GetGpusPerNode() != 8 || f[0].GetRows() != 29 || f[0].GetNodesFrom() != "given" {
		t.Fatalf("base %q, files %v", resp.GetBase(), f)
	}
	n := int(resp.GetFiles()[0].GetRows())
	if len(resp.GetBefore()) != n || len(resp.GetOutOfSample()) != n || len(resp.GetAfter()) != n {
		t.Fatalf("%d rows, priced %d before, %d held out, %d after", n, len(resp.GetBefore()), len(resp.GetOutOfSample()), len(resp.GetAfter()))
	}
	var all *pb.CalibrationErrorRow
	for _, r := range resp.GetErrors() {
		if r.GetGroup() == "all" {
			all = r
		}
	}
	mean := func(ms []*pb.CalibrationMeasurement) float64 {
		s := 0.0
		for _, m := range ms {
			if m.GetFile() != "lambda.txt" || m.GetLine() <= 0 || m.GetMeasuredUs() <= 0 {
				t.Fatalf("measurement %v", m)
			}
			s += math.Abs(m.GetPredictedUs()-m.GetMeasuredUs()) / m.GetMeasuredUs()
		}
		return s / float64(len(ms))
	}
	if all == nil || math.Abs(mean(resp.GetBefore())-all.GetBeforeMean()) > 1e-12 || math.Abs(mean(resp.GetOutOfSample())-all.GetAfterMean()) > 1e-12 {
		t.Errorf("the measurements' mean |error| %.6g before, %.6g held out; the all row says %v", mean(resp.GetBefore()), mean(resp.GetOutOfSample()), all)
	}
}
