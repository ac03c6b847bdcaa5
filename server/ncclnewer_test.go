package server

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A cluster stating NCCL 2.32, newer than the newest release the model knows
// (2.31), is answered over gRPC and REST, each answer carrying the warning that
// 2.31's rules priced it: EstimateStep's estimate.warnings, SimulateCollective's
// and CalibrateCluster's warnings (an nccl-tests output printing "NCCL version
// 2.32.1" warns naming its file). NCCL 3.0 is refused naming the field, with
// the releases taken.
func TestNewerNCCLReleaseOverTheWire(t *testing.T) {
	d, c := startServing(t)
	ctx := context.Background()
	const warning = "nccl 2.32 is newer than the newest release stepcost models (2.31); priced with 2.31's algorithm and protocol choices"
	const fileWarning = "ar.txt: NCCL 2.32.1 is newer than the newest release stepcost models (2.31); priced with 2.31's algorithm and protocol choices"
	has := func(ws []string, w string) bool {
		return slices.ContainsFunc(ws, func(x string) bool { return strings.HasPrefix(x, w) })
	}
	cluster := func(v string) *pb.ClusterSpec {
		return &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: &pb.ClusterDefinition{Base: "hgx-b200", Nccl: v}}, Nodes: 2}
	}
	lambda, err := os.ReadFile("../estimator/calibrate/testdata/b200-ib/dstack-lambda-allreduce.txt")
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(lambda), "\n")
	sweep := strings.Replace(first, "nccl-headers=22602 nccl-library=22602", "", 1) + "\nnode1:1:1 [0] NCCL INFO NCCL version 2.32.1+cuda12.8\n" + rest

	// gRPC
	step, err := c.EstimateStep(ctx, &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster: cluster("2.32"), Training: &pb.Training{SeqLen: 4096, GlobalBatch: 64}, Layout: &pb.Layout{Tp: 8, Dp: 2, MicroBatch: 1}})
	if err != nil || !has(step.GetEstimate().GetWarnings(), warning) {
		t.Errorf("gRPC EstimateStep: %v, warnings %q", err, step.GetEstimate().GetWarnings())
	}
	sim, err := c.SimulateCollective(ctx, &pb.SimulateCollectiveRequest{Cluster: cluster("2.32"), Nodes: 2,
		Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 30})
	if err != nil || !has(sim.GetWarnings(), warning) {
		t.Errorf("gRPC SimulateCollective: %v, warnings %q", err, sim.GetWarnings())
	}
	cal, err := c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "hgx-b200"}},
		Inputs: []*pb.CalibrationInput{{Name: "ar.txt", Content: sweep, Nodes: 2, GpusPerNode: 8}}})
	if err != nil || !has(cal.GetWarnings(), fileWarning) {
		t.Errorf("gRPC CalibrateCluster: %v, warnings %q", err, cal.GetWarnings())
	}
	_, err = c.SimulateCollective(ctx, &pb.SimulateCollectiveRequest{Cluster: cluster("3.0"), Nodes: 2,
		Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 30})
	violationOf(t, err, codes.InvalidArgument, "cluster.definition.nccl")

	// REST
	base := "http://" + d.httpAddr
	clusterJSON := `{"definition": {"base": "hgx-b200", "nccl": "2.32"}, "nodes": 2}`
	calBody, err := json.Marshal(map[string]any{"cluster": map[string]string{"name": "hgx-b200"},
		"inputs": []map[string]any{{"name": "ar.txt", "content": sweep, "nodes": 2, "gpus_per_node": 8}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		path, body, warning string
		warnings            func(map[string]any) any
	}{
		{"/v1/steps:estimate", `{"model": {"name": "llama3-8b"}, "cluster": ` + clusterJSON + `, "training": {"seq_len": 4096, "global_batch": 64}, "layout": {"tp": 8, "dp": 2, "micro_batch": 1}}`,
			warning, func(m map[string]any) any { e, _ := m["estimate"].(map[string]any); return e["warnings"] }},
		{"/v1/collectives:simulate", `{"cluster": ` + clusterJSON + `, "nodes": 2, "collective": "COLLECTIVE_ALL_REDUCE", "size_bytes": 1073741824}`,
			warning, func(m map[string]any) any { return m["warnings"] }},
		{"/v1/clusters:calibrate", string(calBody), fileWarning, func(m map[string]any) any { return m["warnings"] }},
	} {
		resp, b := post(t, base+r.path, r.body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); resp.StatusCode != 200 || err != nil {
			t.Errorf("%s: HTTP %d %.300s (%v)", r.path, resp.StatusCode, b, err)
			continue
		}
		var ws []string
		list, _ := r.warnings(m).([]any)
		for _, w := range list {
			s, _ := w.(string)
			ws = append(ws, s)
		}
		if !has(ws, r.warning) {
			t.Errorf("%s: warnings %q; want %q", r.path, ws, r.warning)
		}
	}
	resp, b := post(t, base+"/v1/collectives:simulate", `{"cluster": {"definition": {"base": "hgx-b200", "nccl": "3.0"}, "nodes": 2}, "nodes": 2, "collective": "COLLECTIVE_ALL_REDUCE", "size_bytes": 1024}`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "cluster.definition.nccl") || !strings.Contains(string(b), "2.0 through 2.99") {
		t.Errorf("nccl 3.0 over REST: HTTP %d %s; want 400 naming cluster.definition.nccl and the releases taken", resp.StatusCode, b)
	}
}
