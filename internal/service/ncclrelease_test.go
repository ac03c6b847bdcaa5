package service

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// An NCCL release is read at five places: a cluster's nccl (in a cluster file or
// a request's definition: EstimateStep, SimulateCollective, a calibration's base),
// an nccl-tests output's "NCCL version" line, its header's nccl-library code, and
// a measurement row's library_version. Each reads it with topology's one parser
// and takes NCCL 2.0 through 2.99 (minor and patch at most 99, as nccl.h's
// version code holds them; after 2.31, the newest the model knows, priced by
// 2.31's rules: TestNewerNCCLReleaseIsPricedAndWarned): "9.99", "2.999", "0.1",
// "2.28.7.1.2", " 2.28", "3.0", "2.100" or "2.-1" are refused naming the field or
// file and stating the range taken — never priced by a rule chosen for a release
// that cannot exist, nor read as another ("2.28.7.1.2" as 2.28.7).
func TestImplausibleNCCLReleaseIsRefusedEverywhere(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	definition := func(v string) *pb.ClusterSpec {
		spec, err := wire.ClusterSpec("cluster", &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}})
		if err != nil {
			t.Fatal(err)
		}
		d := wire.SpecToDefinition(spec)
		d.Nccl = v
		return &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: d}, Nodes: 2}
	}
	lambda, err := os.ReadFile("../../estimator/calibrate/testdata/b200-ib/dstack-lambda-allreduce.txt")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := os.ReadFile("../../estimator/calibrate/testdata/rows/p4d-efa/skypilot-hyperpod-p4d-2n-allreduce.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	calibrateFile := func(base, content string, nodes, gpn int32) error {
		_, err := s.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: base}},
			Inputs: []*pb.CalibrationInput{{Name: "f.txt", Content: content, Nodes: nodes, GpusPerNode: gpn}}})
		return err
	}
	entries := []struct {
		name, field string
		call        func(v string) error
	}{
		{"EstimateStep", "cluster.definition.nccl", func(v string) error {
			_, err := s.EstimateStep(ctx, &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
				Cluster: definition(v), Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1}})
			return err
		}},
		{"SimulateCollective", "cluster.definition.nccl", func(v string) error {
			_, err := s.SimulateCollective(ctx, &pb.SimulateCollectiveRequest{Cluster: definition(v), Nodes: 2,
				Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 30})
			return err
		}},
		{"CalibrateCluster base", "cluster.definition.nccl", func(v string) error {
			_, err := s.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: definition(v),
				Inputs: []*pb.CalibrationInput{{Name: "f.txt", Content: string(lambda), Nodes: 2, GpusPerNode: 8}}})
			return err
		}},
		{"nccl-tests NCCL version line", "f.txt", func(v string) error {
			first, rest, _ := strings.Cut(string(lambda), "\n")
			first = strings.Replace(first, "nccl-headers=22602 nccl-library=22602", "", 1)
			return calibrateFile("hgx-b200", first+"\nnode1:1:1 [0] NCCL INFO NCCL version "+v+"+cuda12.8\n"+rest, 2, 8)
		}},
		{"measurement row library_version", "library_version", func(v string) error {
			return calibrateFile("aws-p4d", strings.ReplaceAll(string(rows), `"library_version": null`, `"library_version": "`+v+` (NCCL version printed)"`), 0, 0)
		}},
	}
	for _, e := range entries {
		for _, v := range []string{"2.0", "2.9.9", "2.28.9", "2.31", "2.31.2", "2.32", "2.32.1", "2.99.99"} {
			if strings.HasPrefix(e.name, "nccl-tests") && strings.Count(v, ".") != 2 {
				continue // NCCL prints major.minor.patch
			}
			if err := e.call(v); err != nil {
				t.Errorf("%s, release %q: %v", e.name, v, err)
			}
		}
		for _, v := range []string{"9.99", "2.999", "0.1", "2.28.7.1.2", " 2.28", "3.0", "1.3.4", "2.28.100", "9.99.1", "2.999.1", "2.100", "2.100.1", "3.0.1", "2.-1", "2.28.-1"} {
			if strings.HasPrefix(e.name, "nccl-tests") && (strings.Count(v, ".") < 2 || v[0] == ' ') {
				continue
			}
			err := e.call(v)
			if code, _ := CodeOf(err); code != InvalidArgument || !strings.Contains(err.Error(), e.field) || !strings.Contains(err.Error(), "2.0 through 2.99") {
				t.Errorf("%s, release %q: %v; want INVALID_ARGUMENT naming %s and the releases taken, 2.0 through 2.99", e.name, v, err, e.field)
			}
		}
	}
	// nccl-tests 2.14 on print ncclGetVersion's code (X*10000 + Y*100 + Z):
	// 99999 reads 9.99.99 and 30000 3.0.0.
	for _, code := range []string{"99999", "30000"} {
		content := strings.Replace(string(lambda), "nccl-library=22602", "nccl-library="+code, 1)
		if err := calibrateFile("hgx-b200", content, 2, 8); err == nil || !strings.Contains(err.Error(), "f.txt") || !strings.Contains(err.Error(), "2.0 through 2.99") {
			t.Errorf("nccl-library=%s: %v; want a refusal naming f.txt and the releases taken", code, err)
		}
	}
}
