package server

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

func calibrationInput(t *testing.T, name string) *pb.CalibrationInput {
	t.Helper()
	b, err := os.ReadFile("../estimator/calibrate/testdata/p4d-efa/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return &pb.CalibrationInput{Name: name, Content: string(b), Op: "allreduce"}
}

// The RPC answers what stepcost calibrate prints: the p4d EFA outputs move the NIC
// constants, the report names them, and the calibrated cluster is a definition
// the other calls accept.
func TestCalibrateCluster(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	req := &pb.CalibrateClusterRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "aws-p4d"}},
		Inputs: []*pb.CalibrationInput{calibrationInput(t, "awsefaeks-7809f1f-nccl2.8.3.txt"), calibrationInput(t, "awsefaeks-867b482-nccl2.9.9.txt")},
		Name:   "my-p4d"}
	resp, err := c.CalibrateCluster(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetCluster().GetName() != "my-p4d" || resp.GetCluster().GetNics().GetKind() != "efa" {
		t.Errorf("cluster %q, NICs %q", resp.GetCluster().GetName(), resp.GetCluster().GetNics().GetKind())
	}
	fields := map[string]*pb.CalibratedConstant{}
	for _, k := range resp.GetConstants() {
		fields[k.GetField()] = k
	}
	eff := fields["nics.efficiency"]
	if eff == nil || eff.GetFitted() == eff.GetBase() || eff.GetFitted() != resp.GetCluster().GetNics().GetEfficiency() {
		t.Errorf("NIC efficiency: %v, cluster %v", eff, resp.GetCluster().GetNics().GetEfficiency())
	}
	var all *pb.CalibrationErrorRow
	for _, row := range resp.GetErrors() {
		if row.GetGroup() == "all" {
			all = row
		}
	}
	if all == nil || all.GetRows() != 58 || !(all.GetAfterMedian() < all.GetBeforeMedian()) {
		t.Errorf("all inputs: %v", all)
	}
	if len(resp.GetMismatches()) == 0 || !strings.Contains(resp.GetMismatches()[0], "ring") {
		t.Errorf("mismatches: %v", resp.GetMismatches())
	}
	// The calibrated cluster carries the algorithm NCCL ran (the ring, where the
	// model's own cheapest on aws-p4d is the double tree) and prices a collective
	// with it.
	if len(resp.GetCluster().GetAlgorithms()) == 0 {
		t.Fatalf("the calibrated cluster carries no measured algorithms")
	}
	sim := func(cl *pb.ClusterSpec) pb.Algorithm {
		r, err := c.SimulateCollective(ctx, &pb.SimulateCollectiveRequest{Cluster: cl,
			Nodes: 2, GpusPerNode: 8, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 30})
		if err != nil {
			t.Fatalf("SimulateCollective: %v", err)
		}
		return r.GetChosen().GetAlgorithm()
	}
	base := sim(&pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "aws-p4d"}})
	got := sim(&pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: resp.GetCluster()}})
	if base == got || got != pb.Algorithm_ALGORITHM_RING {
		t.Errorf("1 GiB all-reduce on 2 × 8: %s on aws-p4d, %s on the calibrated cluster; want the ring there", base, got)
	}
}

// A definition's measured algorithms are checked by name, each error naming the
// range's field in the request.
func TestDefinitionAlgorithmsRefused(t *testing.T) {
	c := client(t, DefaultLimits())
	for _, tc := range []struct {
		r     *pb.AlgoRange
		field string
	}{
		{&pb.AlgoRange{Op: "allsum", Algo: "ring"}, "cluster.definition.algorithms[0].op"},
		{&pb.AlgoRange{Op: "allgather", Algo: "dbtree"}, "cluster.definition.algorithms[0].algo"},
		{&pb.AlgoRange{Op: "allreduce", Algo: "ring", MinBytes: 1 << 20, MaxBytes: 1024}, "cluster.definition.algorithms[0].max_bytes"},
		{&pb.AlgoRange{Op: "allreduce", Algo: "ring", MinNodes: 8, MaxNodes: 4}, "cluster.definition.algorithms[0].max_nodes"},
		{&pb.AlgoRange{Op: "allreduce", Algo: "ring", Nodes: 4, MinNodes: 3}, "cluster.definition.algorithms[0].nodes"},
	} {
		def := &pb.ClusterDefinition{Base: "aws-p4d", Algorithms: []*pb.AlgoRange{tc.r}}
		_, err := c.SimulateCollective(context.Background(), &pb.SimulateCollectiveRequest{
			Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: def}},
			Nodes:   2, GpusPerNode: 8, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 30})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%v: got %v, want InvalidArgument naming %s", tc.r, err, tc.field)
		}
	}
}

// Bad input is InvalidArgument naming the field: the file and line of a row cut
// short, a duplicate name, too many files, a file too large, no base.
func TestCalibrateClusterRefuses(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	base := &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "aws-p4d"}}
	good := calibrationInput(t, "awsefaeks-867b482-nccl2.9.9.txt")

	cut := calibrationInput(t, "awsefaeks-7809f1f-nccl2.8.3.txt")
	i := strings.Index(cut.Content, "   16777216 ")
	cut.Content = cut.Content[:i+40]
	_, err := c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: base, Inputs: []*pb.CalibrationInput{good, cut}})
	violationOf(t, err, codes.InvalidArgument, "inputs[1].content")
	if !strings.Contains(status.Convert(err).Message(), "awsefaeks-7809f1f-nccl2.8.3.txt:") {
		t.Errorf("the error does not name the file and line: %v", err)
	}

	_, err = c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: base, Inputs: []*pb.CalibrationInput{good, good}})
	violationOf(t, err, codes.InvalidArgument, "inputs[1].name")

	_, err = c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: base})
	violationOf(t, err, codes.InvalidArgument, "inputs")

	many := make([]*pb.CalibrationInput, wire.MaxCalibrationInputs+1)
	for i := range many {
		many[i] = &pb.CalibrationInput{Name: strings.Repeat("x", i+1), Content: "x"}
	}
	_, err = c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: base, Inputs: many})
	violationOf(t, err, codes.InvalidArgument, "inputs")

	big := &pb.CalibrationInput{Name: "big.txt", Content: strings.Repeat("#\n", wire.MaxCalibrationInputBytes/2+1)}
	_, err = c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: base, Inputs: []*pb.CalibrationInput{big}})
	if status.Code(err) != codes.InvalidArgument && status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a file over the limit: %v", err)
	}

	_, err = c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Inputs: []*pb.CalibrationInput{good}})
	violationOf(t, err, codes.InvalidArgument, "cluster")

	// A negative count is refused by its own field.
	for field, in := range map[string]*pb.CalibrationInput{
		"inputs[0].nodes":         {Name: "n.txt", Content: good.Content, Nodes: -1},
		"inputs[0].gpus_per_node": {Name: "g.txt", Content: good.Content, GpusPerNode: -8},
	} {
		_, err = c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: base, Inputs: []*pb.CalibrationInput{in}})
		violationOf(t, err, codes.InvalidArgument, field)
	}

	foreign := &pb.CalibrationInput{Name: "notes.txt", Content: "hello\nworld\n"}
	_, err = c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: base, Inputs: []*pb.CalibrationInput{foreign}})
	violationOf(t, err, codes.InvalidArgument, "inputs[0].content")
}

// The daemon answers CalibrateCluster over REST, and draws the calibration: one
// bus-bandwidth picture per nccl-tests file; bad input is the gateway's JSON error
// naming the field, and a request of training logs only has nothing to draw.
func TestCalibrateClusterREST(t *testing.T) {
	d := startDaemon(t, nil)
	defer d.stop()
	base := "http://" + d.httpAddr
	in := calibrationInput(t, "awsefaeks-867b482-nccl2.9.9.txt")
	body, err := json.Marshal(map[string]any{"cluster": map[string]string{"name": "aws-p4d"},
		"inputs": []map[string]string{{"name": in.Name, "content": in.Content, "op": "allreduce"}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, answer := post(t, base+"/v1/clusters:calibrate", string(body))
	if resp.StatusCode != 200 || !bytes.Contains(answer, []byte(`"nics.latency_us"`)) {
		t.Fatalf("/v1/clusters:calibrate: %d %s", resp.StatusCode, answer)
	}
	resp, svg := post(t, base+"/v1/pictures:calibration", string(body))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || !bytes.Contains(svg, []byte("awsefaeks-867b482-nccl2.9.9.txt")) {
		t.Fatalf("/v1/pictures:calibration: %d %v\n%.300s", resp.StatusCode, resp.Header, svg)
	}
	decodesAsXML(t, svg)
	for _, c := range []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"unknown field", "/v1/clusters:calibrate", `{"cluster": {"name": "aws-p4d"}, "input": []}`, 400, "input"},
		{"foreign file", "/v1/pictures:calibration", `{"cluster": {"name": "aws-p4d"}, "inputs": [{"name": "a.txt", "content": "hello"}]}`, 400, "inputs[0].content"},
		{"unknown base", "/v1/clusters:calibrate", strings.Replace(string(body), "aws-p4d", "nope", 1), 404, "cluster.name"},
	} {
		resp, b := post(t, base+c.path, c.body)
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want %d naming %q", c.name, resp.StatusCode, b, c.code, c.want)
		}
	}
}

// Measurement rows (JSON lines) are an input like nccl-tests output: the p5 EFA
// rows move the NIC latency above the catalog's, and a row whose busbw contradicts
// its size and time is InvalidArgument naming the file, line and field.
func TestCalibrateClusterRows(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	b, err := os.ReadFile("../estimator/calibrate/testdata/rows/p5-efa/awsk8s585-p5-2n-allreduce.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	base := &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "aws-p5"}}
	resp, err := c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: base,
		Inputs: []*pb.CalibrationInput{{Name: "p5.jsonl", Content: string(b)}}})
	if err != nil {
		t.Fatal(err)
	}
	moved := false
	for _, k := range resp.GetConstants() {
		if k.GetField() == "nics.latency_us" && k.GetFitted() > k.GetBase() {
			moved = true
		}
	}
	if !moved {
		t.Errorf("the p5 rows (69 µs at 16–128 B, the catalog 57 µs) do not raise the NIC latency: %v", resp.GetConstants())
	}
	lines := strings.Split(string(b), "\n")
	edited := strings.Replace(lines[2], `"busbw_GBps": 0.0017`, `"busbw_GBps": 0.5`, 1)
	if edited == lines[2] {
		t.Fatal("line 3 of the p5 rows has no busbw 0.0017")
	}
	lines[2] = edited
	_, err = c.CalibrateCluster(ctx, &pb.CalibrateClusterRequest{Cluster: base,
		Inputs: []*pb.CalibrationInput{{Name: "p5.jsonl", Content: strings.Join(lines, "\n")}}})
	violationOf(t, err, codes.InvalidArgument, "inputs[0].content")
	if !strings.Contains(status.Convert(err).Message(), "p5.jsonl:3: busbw_GBps") {
		t.Errorf("the error does not name the file, line and field: %v", err)
	}
}

// A training log's run that the reader refuses is named by the run's field
// (inputs[i].run.tp, run.model, run.dp), not by the file's content, which is not
// at fault: the message said "layout tp" and the violation inputs[0].content.
func TestCalibrateRunLayoutNamesItsField(t *testing.T) {
	c := client(t, DefaultLimits())
	b, err := os.ReadFile("../estimator/calibrate/testdata/trainlogs/torchao-pretraining-bf16.log")
	if err != nil {
		t.Fatal(err)
	}
	run := func(edit func(*pb.CalibrationRun)) *pb.CalibrationRun {
		r := &pb.CalibrationRun{Model: "llama3-8b", Gpus: 8, Zero: 3, MicroBatch: 1, GlobalBatch: 8, SeqLen: 8192, Recompute: "ops"}
		edit(r)
		return r
	}
	base := &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}
	for field, r := range map[string]*pb.CalibrationRun{
		"inputs[0].run.tp":           run(func(r *pb.CalibrationRun) { r.Tp = -2 }),
		"inputs[0].run.model":        run(func(r *pb.CalibrationRun) { r.Model = "" }),
		"inputs[0].run.dp":           run(func(r *pb.CalibrationRun) { r.Dp = 3 }),
		"inputs[0].run.gpus":         run(func(r *pb.CalibrationRun) { r.Gpus = 0 }),
		"inputs[0].run.seq_len":      run(func(r *pb.CalibrationRun) { r.SeqLen = 0 }),
		"inputs[0].run.framework":    run(func(r *pb.CalibrationRun) { r.Framework = "nope" }),
		"inputs[0].run.global_batch": run(func(r *pb.CalibrationRun) { r.GlobalBatch = 0 }),
		// A negative gpus_per_node of the run was dropped for the input's.
		"inputs[0].run.gpus_per_node": run(func(r *pb.CalibrationRun) { r.GpusPerNode = -4 }),
	} {
		_, err := c.CalibrateCluster(context.Background(), &pb.CalibrateClusterRequest{Cluster: base,
			Inputs: []*pb.CalibrationInput{{Name: "run.log", Content: string(b), Run: r}}})
		violationOf(t, err, codes.InvalidArgument, field)
	}
}
