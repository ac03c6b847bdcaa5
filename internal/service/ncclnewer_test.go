package service

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// newerWarning is the start of the warning of an answer priced on a cluster that
// states NCCL v, newer than 2.31.
func newerWarning(v string) string {
	return "nccl " + v + " is newer than the newest release stepcost models (2.31); priced with 2.31's algorithm and protocol choices"
}

func hasWarning(ws []string, prefix string) bool {
	return slices.ContainsFunc(ws, func(w string) bool { return strings.HasPrefix(w, prefix) })
}

// withoutWarnings is a copy of m with no warnings, no nccl_release and not cached:
// what two answers on clusters of different releases priced by the same rules
// share.
func withoutWarnings[M proto.Message](m M) M {
	m = proto.CloneOf(m)
	switch r := any(m).(type) {
	case *pb.EstimateStepResponse:
		r.Estimate.Warnings, r.NcclRelease, r.Cached = nil, "", false
	case *pb.SimulateCollectiveResponse:
		r.Warnings, r.NcclRelease, r.Cached = nil, "", false
	case *pb.EstimatePlanResponse:
		r.Cached = false
		r.Stats.ElapsedMs = 0
		for _, p := range append(slices.Clone(r.Plans), r.Pareto...) {
			p.Estimate.Warnings = nil
		}
	}
	return m
}

// When NVIDIA ships an NCCL newer than the newest release the model knows (2.31),
// a cluster that states it is estimated, not refused: by 2.31's rules (the same
// prices as a cluster stating 2.31, on Hopper and on Blackwell, whose NVLS
// channels follow the release), and every answer says so in its warnings —
// EstimateStep, RankConfigs, EstimatePlan's plans, SimulateCollective — and in
// nccl_release. The warning is the same on every call (the cache's answer and a
// fresh one are equal); a cluster stating 2.31 carries none.
func TestNewerNCCLReleaseIsPricedAndWarned(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	cluster := func(base, v string) *pb.ClusterSpec {
		spec, err := wire.ClusterSpec("cluster", &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: base}})
		if err != nil {
			t.Fatal(err)
		}
		d := wire.SpecToDefinition(spec)
		d.Nccl = v
		return &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: d}, Nodes: 2}
	}
	step := func(base, v string) *pb.EstimateStepResponse {
		t.Helper()
		resp, err := s.EstimateStep(ctx, &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
			Cluster: cluster(base, v), Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1}})
		if err != nil {
			t.Fatalf("EstimateStep on %s, nccl %s: %v", base, v, err)
		}
		return resp
	}
	simulate := func(base, v string, op pb.Collective, size int64, nodes int32) *pb.SimulateCollectiveResponse {
		t.Helper()
		resp, err := s.SimulateCollective(ctx, &pb.SimulateCollectiveRequest{Cluster: cluster(base, v), Nodes: nodes, Collective: op, SizeBytes: size})
		if err != nil {
			t.Fatalf("SimulateCollective on %s, nccl %s: %v", base, v, err)
		}
		return resp
	}
	for _, base := range []string{"dgx-h100", "hgx-b200"} {
		for _, v := range []string{"2.32", "2.32.1", "2.33.1", "2.99.99"} {
			got, known := step(base, v), step(base, "2.31")
			if !hasWarning(got.GetEstimate().GetWarnings(), newerWarning(v)) {
				t.Errorf("EstimateStep on %s, nccl %s: warnings %q; want %q", base, v, got.GetEstimate().GetWarnings(), newerWarning(v))
			}
			if want := "NCCL 2.31's rules: the cluster's release, " + v + " (nccl), is newer than the newest stepcost models"; got.GetNcclRelease() != want {
				t.Errorf("EstimateStep on %s, nccl %s: nccl_release %q, want %q", base, v, got.GetNcclRelease(), want)
			}
			if !proto.Equal(withoutWarnings(got), withoutWarnings(known)) {
				t.Errorf("EstimateStep on %s: nccl %s priced otherwise than 2.31 (step %v s, 2.31's %v s)", base, v, got.GetEstimate().GetStepTimeS(), known.GetEstimate().GetStepTimeS())
			}
			if again := step(base, v); !proto.Equal(withoutWarnings(again), withoutWarnings(got)) || !slices.Equal(again.GetEstimate().GetWarnings(), got.GetEstimate().GetWarnings()) {
				t.Errorf("EstimateStep on %s, nccl %s: a second answer differs: warnings %q, then %q", base, v, got.GetEstimate().GetWarnings(), again.GetEstimate().GetWarnings())
			}
			for _, c := range []struct {
				op    pb.Collective
				size  int64
				nodes int32
			}{
				{pb.Collective_COLLECTIVE_ALL_REDUCE, 1 << 30, 1}, // NVLS inside a node (Blackwell's channels by release)
				{pb.Collective_COLLECTIVE_ALL_REDUCE, 1 << 20, 2},
				{pb.Collective_COLLECTIVE_SEND_RECV, 256 << 10, 2}, // p2p LL threshold by release
				{pb.Collective_COLLECTIVE_ALL_TO_ALL, 1 << 30, 2},  // channels per net peer by release
			} {
				got, known := simulate(base, v, c.op, c.size, c.nodes), simulate(base, "2.31", c.op, c.size, c.nodes)
				if !hasWarning(got.GetWarnings(), newerWarning(v)) {
					t.Errorf("SimulateCollective %s on %d %s nodes, nccl %s: warnings %q", c.op, c.nodes, base, v, got.GetWarnings())
				}
				if !proto.Equal(withoutWarnings(got), withoutWarnings(known)) {
					t.Errorf("SimulateCollective %s of %d B on %d %s nodes: nccl %s priced otherwise than 2.31 (%v µs, 2.31's %v µs)",
						c.op, c.size, c.nodes, base, v, got.GetChosen().GetTimeUs(), known.GetChosen().GetTimeUs())
				}
			}
		}
		for _, v := range []string{"2.31", "2.31.2", "2.28.9", ""} {
			if ws := step(base, v).GetEstimate().GetWarnings(); hasWarning(ws, "nccl ") {
				t.Errorf("EstimateStep on %s, nccl %q: warnings %q; want no release warning", base, v, ws)
			}
			if ws := simulate(base, v, pb.Collective_COLLECTIVE_ALL_REDUCE, 1<<30, 2).GetWarnings(); hasWarning(ws, "nccl ") {
				t.Errorf("SimulateCollective on %s, nccl %q: warnings %q; want no release warning", base, v, ws)
			}
		}
	}

	// RankConfigs' items and EstimatePlan's plans carry it too.
	req := &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster: cluster("dgx-h100", "2.32"), Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1}}
	rank, err := s.RankConfigs(ctx, &pb.RankConfigsRequest{Configs: []*pb.EstimateStepRequest{req}})
	if err != nil || len(rank.GetResults()) != 1 || !hasWarning(rank.GetResults()[0].GetEstimate().GetWarnings(), newerWarning("2.32")) {
		t.Errorf("RankConfigs, nccl 2.32: %v, %v", err, rank)
	}
	planReq := func(v string) *pb.EstimatePlanRequest {
		return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
			Cluster: cluster("dgx-h100", v), Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Gpus: 16, TopK: 3}
	}
	plan, err := s.EstimatePlan(ctx, planReq("2.32"))
	if err != nil || len(plan.GetPlans()) == 0 {
		t.Fatalf("EstimatePlan, nccl 2.32: %v, %v", err, plan)
	}
	for _, p := range plan.GetPlans() {
		if !hasWarning(p.GetEstimate().GetWarnings(), newerWarning("2.32")) {
			t.Errorf("EstimatePlan, nccl 2.32: plan %d's warnings %q", p.GetRank(), p.GetEstimate().GetWarnings())
		}
	}
	known, err := s.EstimatePlan(ctx, planReq("2.31"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range known.GetPlans() {
		if hasWarning(p.GetEstimate().GetWarnings(), "nccl ") {
			t.Errorf("EstimatePlan, nccl 2.31: plan %d's warnings %q; want no release warning", p.GetRank(), p.GetEstimate().GetWarnings())
		}
	}
	if !proto.Equal(withoutWarnings(plan), withoutWarnings(known)) {
		t.Errorf("EstimatePlan: nccl 2.32's plans are not 2.31's")
	}
}

// A calibration whose base states a newer NCCL, or whose input's output or rows
// state one (nccl-tests' "NCCL version 2.32.1" line, its header's
// nccl-library=23201, a row's library_version "2.32.1 …"), fits as it would with
// 2.31 — the same constants, errors and calibrated cluster but for its nccl —
// and the response's warnings name each (the base's nccl, the file's release).
func TestNewerNCCLReleaseCalibrates(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	lambda, err := os.ReadFile("../../estimator/calibrate/testdata/b200-ib/dstack-lambda-allreduce.txt")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := os.ReadFile("../../estimator/calibrate/testdata/rows/p4d-efa/skypilot-hyperpod-p4d-2n-allreduce.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	definition := func(base, v string) *pb.ClusterSpec {
		spec, err := wire.ClusterSpec("cluster", &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: base}})
		if err != nil {
			t.Fatal(err)
		}
		d := wire.SpecToDefinition(spec)
		d.Nccl = v
		return &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: d}}
	}
	calibrate := func(cluster *pb.ClusterSpec, content string, nodes, gpn int32) *pb.CalibrateClusterResponse {
		t.Helper()
		resp, err := s.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: cluster,
			Inputs: []*pb.CalibrationInput{{Name: "f.txt", Content: content, Nodes: nodes, GpusPerNode: gpn}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	named := func(n string) *pb.ClusterSpec { return &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: n}} }
	first, rest, _ := strings.Cut(string(lambda), "\n")
	versionLine := func(v string) string {
		return strings.Replace(first, "nccl-headers=22602 nccl-library=22602", "", 1) + "\nnode1:1:1 [0] NCCL INFO NCCL version " + v + "+cuda12.8\n" + rest
	}
	library := func(code string) string {
		return strings.Replace(string(lambda), "nccl-library=22602", "nccl-library="+code, 1)
	}
	row := func(v string) string {
		return strings.ReplaceAll(string(rows), `"library_version": null`, `"library_version": "`+v+` (NCCL version printed)"`)
	}
	fileWarning := "f.txt: NCCL 2.32.1 is newer than the newest release stepcost models (2.31); priced with 2.31's algorithm and protocol choices"
	for _, c := range []struct {
		name           string
		newer, known   func() *pb.CalibrateClusterResponse
		warning        string
		clusterRelease string
	}{
		{"base nccl 2.32",
			func() *pb.CalibrateClusterResponse {
				return calibrate(definition("hgx-b200", "2.32"), string(lambda), 2, 8)
			},
			func() *pb.CalibrateClusterResponse {
				return calibrate(definition("hgx-b200", "2.31"), string(lambda), 2, 8)
			},
			newerWarning("2.32"), "2.32"},
		{"NCCL version 2.32.1",
			func() *pb.CalibrateClusterResponse { return calibrate(named("hgx-b200"), versionLine("2.32.1"), 2, 8) },
			func() *pb.CalibrateClusterResponse { return calibrate(named("hgx-b200"), versionLine("2.31.2"), 2, 8) },
			fileWarning, ""},
		{"nccl-library=23201",
			func() *pb.CalibrateClusterResponse { return calibrate(named("hgx-b200"), library("23201"), 2, 8) },
			func() *pb.CalibrateClusterResponse { return calibrate(named("hgx-b200"), library("23102"), 2, 8) },
			fileWarning, ""},
		{"library_version 2.32.1",
			func() *pb.CalibrateClusterResponse { return calibrate(named("aws-p4d"), row("2.32.1"), 0, 0) },
			func() *pb.CalibrateClusterResponse { return calibrate(named("aws-p4d"), row("2.31.2"), 0, 0) },
			fileWarning, ""},
	} {
		newer, known := c.newer(), c.known()
		if !hasWarning(newer.GetWarnings(), c.warning) {
			t.Errorf("%s: warnings %q; want %q", c.name, newer.GetWarnings(), c.warning)
		}
		if len(known.GetWarnings()) != 0 {
			t.Errorf("%s: 2.31's calibration warns %q", c.name, known.GetWarnings())
		}
		if got := newer.GetCluster().GetNccl(); got != c.clusterRelease {
			t.Errorf("%s: the calibrated cluster states nccl %q, want the base's %q", c.name, got, c.clusterRelease)
		}
		strip := func(r *pb.CalibrateClusterResponse) *pb.CalibrateClusterResponse {
			r = proto.CloneOf(r)
			r.Warnings, r.Notes, r.Files, r.Cluster.Nccl = nil, nil, nil, ""
			return r
		}
		if !proto.Equal(strip(newer), strip(known)) {
			t.Errorf("%s: fitted otherwise than with 2.31 (constants %v, 2.31's %v)", c.name, newer.GetConstants(), known.GetConstants())
		}
		if again := c.newer(); !proto.Equal(again, newer) {
			t.Errorf("%s: a second calibration answers otherwise", c.name)
		}
	}
}
