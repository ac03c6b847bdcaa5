package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/stepcost/stepcost/estimator/collective"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// SimulateCollective with steps returns the chosen algorithm's schedule over gRPC:
// verified, priced next to the closed form, with rows covering every step.
func TestSimulateCollectiveSteps(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	req := &pb.SimulateCollectiveRequest{Cluster: stepRequest().Cluster, Nodes: 3, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE,
		SizeBytes: 100_000_007, Algorithm: pb.Algorithm_ALGORITHM_RING, Steps: true}
	resp, err := c.SimulateCollective(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	s := resp.GetSchedule()
	v := s.GetVerification()
	if !v.GetVerified() || !strings.Contains(v.GetResult(), "sum of all 24 ranks") || v.GetError() != "" || v.GetElements() <= 0 {
		t.Fatalf("verification %v", v)
	}
	ch := resp.GetChosen()
	if s.GetAlgorithm() != ch.GetAlgorithm() || s.GetProtocol() != ch.GetProtocol() || s.GetChannels() != ch.GetChannels() ||
		s.GetSteps() != 46 || s.GetAnalyticalTimeUs() != ch.GetTimeUs() || s.GetTransfers() <= 0 {
		t.Fatalf("schedule %v for %v", s, ch)
	}
	if d := s.GetDifferencePct(); d < -1 || d > 1 || !strings.Contains(s.GetDifference(), "agree within") {
		t.Errorf("schedule %.3f µs vs %.3f µs: %s", s.GetTimeUs(), ch.GetTimeUs(), s.GetDifference())
	}
	rows := s.GetRows()
	if len(rows) != 2 || rows[0].GetPhase() != "reduce-scatter" || rows[1].GetFirstStep() != 23 || rows[1].GetStepCount() != 23 || s.GetOmittedRows() != 0 {
		t.Fatalf("rows %v", rows)
	}
	f := rows[0].GetFlows()[0]
	if f.GetKind() != pb.TransferKind_TRANSFER_KIND_ADD || f.GetPairs() <= 0 || f.GetRoute() == "" || len(f.GetExamples()) == 0 ||
		rows[0].GetBottleneck() == "" || !(rows[0].GetBottleneckGbps() > 0) || !(rows[0].GetTimeUs() > rows[0].GetLatencyUs()) {
		t.Errorf("row 0 %v", rows[0])
	}

	// The same request again is a cache hit with the same schedule; without steps
	// the answer has none (and is cached apart).
	// The cache admits entries asynchronously: ask until the answer comes from it.
	again := fromCache(t, "again", func() (*pb.SimulateCollectiveResponse, error) { return c.SimulateCollective(ctx, req) })
	if again.GetSchedule().GetTimeUs() != s.GetTimeUs() {
		t.Errorf("again: schedule %.3f µs, first %.3f µs", again.GetSchedule().GetTimeUs(), s.GetTimeUs())
	}
	req.Steps = false
	plain, err := c.SimulateCollective(ctx, req)
	if err != nil || plain.GetSchedule() != nil || plain.GetCached() {
		t.Errorf("without steps: schedule %v, cached %v, %v", plain.GetSchedule(), plain.GetCached(), err)
	}

	// max_step_rows truncates: pairwise all-to-all on 24 ranks has 23 different steps.
	rowsReq := &pb.SimulateCollectiveRequest{Cluster: stepRequest().Cluster, Nodes: 3, Collective: pb.Collective_COLLECTIVE_ALL_TO_ALL,
		SizeBytes: 1 << 20, Algorithm: pb.Algorithm_ALGORITHM_PAIRWISE, Steps: true, MaxStepRows: 4}
	r, err := c.SimulateCollective(ctx, rowsReq)
	if err != nil || len(r.GetSchedule().GetRows()) != 4 || r.GetSchedule().GetOmittedRows() != 19 || !r.GetSchedule().GetVerification().GetVerified() {
		t.Errorf("max_step_rows 4: %v %v", r.GetSchedule(), err)
	}
}

func TestSimulateCollectiveStepsErrors(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	base := func() *pb.SimulateCollectiveRequest {
		return &pb.SimulateCollectiveRequest{Cluster: stepRequest().Cluster, Nodes: 2, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE,
			SizeBytes: 1 << 20, Algorithm: pb.Algorithm_ALGORITHM_RING, Steps: true}
	}
	for name, tc := range map[string]struct {
		edit  func(*pb.SimulateCollectiveRequest)
		field string
	}{
		"rows without steps": {func(r *pb.SimulateCollectiveRequest) { r.Steps, r.MaxStepRows = false, 10 }, "max_step_rows"},
		"negative rows":      {func(r *pb.SimulateCollectiveRequest) { r.MaxStepRows = -1 }, "max_step_rows"},
		"too many rows":      {func(r *pb.SimulateCollectiveRequest) { r.MaxStepRows = collective.MaxReplayRows + 1 }, "max_step_rows"},
		// 512 ranks: a ring all-reduce of about 8 million transfers.
		"schedule too large": {func(r *pb.SimulateCollectiveRequest) { r.Nodes = 64 }, "steps"},
	} {
		t.Run(name, func(t *testing.T) {
			req := base()
			tc.edit(req)
			_, err := c.SimulateCollective(ctx, req)
			violationOf(t, err, codes.InvalidArgument, tc.field)
		})
	}
}

// The REST gateway accepts the new request fields and returns the schedule with
// the API's JSON names.
func TestSimulateCollectiveStepsREST(t *testing.T) {
	d := startDaemon(t, nil)
	defer func() {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
	}()
	body := `{"cluster": {"name": "dgx-h100"}, "nodes": 1, "collective": "COLLECTIVE_ALL_GATHER", "size_bytes": 1048576,
		"algorithm": "ALGORITHM_NVLS", "steps": true, "max_step_rows": 8}`
	resp, err := http.Post("http://"+d.httpAddr+"/v1/collectives:simulate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d: %s", resp.StatusCode, b)
	}
	var out struct {
		Schedule struct {
			Verification struct {
				Verified bool
				Result   string
			}
			Rows []struct {
				Phase string
				Flows []struct {
					Kind     string
					Examples []struct{ Src, Dst int32 }
				}
			}
		}
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	s := out.Schedule
	if !s.Verification.Verified || len(s.Rows) != 1 || s.Rows[0].Phase != "multicast" ||
		s.Rows[0].Flows[0].Kind != "TRANSFER_KIND_MULTICAST" || s.Rows[0].Flows[0].Examples[0].Dst != -1 {
		t.Errorf("schedule %s", b)
	}
}
