package server

import (
	"context"
	"log/slog"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stepcost/stepcost/cache"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// client starts the service in process over bufconn.
func client(t *testing.T, limits Limits) pb.StepcostServiceClient {
	t.Helper()
	c, err := cache.New(cache.Config{MaxCost: 64 << 20}, func(m proto.Message) int64 { return int64(proto.Size(m)) + 64 })
	if err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(recoverUnary(slog.New(slog.DiscardHandler)), deadlineUnary(30*time.Second)))
	pb.RegisterStepcostServiceServer(gs, NewService(limits, c))
	go gs.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); gs.Stop(); c.Close() })
	return pb.NewStepcostServiceClient(conn)
}

func stepRequest() *pb.EstimateStepRequest {
	return &pb.EstimateStepRequest{
		Model:    &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-70b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 512},
		Layout:   &pb.Layout{Tp: 8, Pp: 2, Dp: 4, MicroBatch: 1, Zero: 1, Sp: true, Recompute: pb.Recompute_RECOMPUTE_SELECTIVE},
	}
}

// violationOf asserts err has code and a field violation naming field.
func violationOf(t *testing.T, err error, code codes.Code, field string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == field {
					return
				}
			}
		}
	}
	t.Fatalf("%v: no violation of %q in %v", code, field, st.Details())
}

func TestEstimateStep(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	r1, err := c.EstimateStep(ctx, stepRequest())
	if err != nil {
		t.Fatal(err)
	}
	e := r1.GetEstimate()
	if e.GetStepTimeS() <= 0 || e.GetBreakdown().GetTotalS() != e.GetStepTimeS() || len(e.GetCommunication()) == 0 ||
		!e.GetMemory().GetFits() || r1.GetCached() || r1.GetEstimatorVersion() != EstimatorVersion || r1.GetModel().GetLayers() != 80 {
		t.Fatalf("unexpected %v", r1)
	}
	r2 := fromCache(t, "second call", func() (*pb.EstimateStepResponse, error) { return c.EstimateStep(ctx, stepRequest()) })
	if r2.GetEstimate().GetStepTimeS() != e.GetStepTimeS() {
		t.Fatalf("second call from the cache: %v s, first %v s", r2.GetEstimate().GetStepTimeS(), e.GetStepTimeS())
	}
	// An architecture and a parameter count work too.
	req := stepRequest()
	req.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Params{Params: 13e9}}
	req.Layout = &pb.Layout{Dp: 64, MicroBatch: 1, Zero: 3}
	r3, err := c.EstimateStep(ctx, req)
	if err != nil || !strings.Contains(strings.Join(r3.GetEstimate().GetAssumptions(), " "), "derived") {
		t.Fatalf("params: %v", err)
	}
	// FSDP's backward prefetch travels both ways and costs time.
	req = stepRequest()
	req.Layout = &pb.Layout{Dp: 64, MicroBatch: 1, Zero: 3, Recompute: pb.Recompute_RECOMPUTE_FULL}
	pre, err := c.EstimateStep(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Training.Zero3BackwardPrefetch = pb.BackwardPrefetch_BACKWARD_PREFETCH_POST
	post, err := c.EstimateStep(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if post.GetEstimate().GetTraining().GetZero3BackwardPrefetch() != pb.BackwardPrefetch_BACKWARD_PREFETCH_POST ||
		pre.GetEstimate().GetTraining().GetZero3BackwardPrefetch() != pb.BackwardPrefetch_BACKWARD_PREFETCH_PRE ||
		!(post.GetEstimate().GetStepTimeS() > pre.GetEstimate().GetStepTimeS()) {
		t.Errorf("backward prefetch: pre %v (%v s), post %v (%v s)", pre.GetEstimate().GetTraining().GetZero3BackwardPrefetch(), pre.GetEstimate().GetStepTimeS(),
			post.GetEstimate().GetTraining().GetZero3BackwardPrefetch(), post.GetEstimate().GetStepTimeS())
	}
	// The recomputation policies travel both ways: op-level, and full over some layers.
	for _, l := range []*pb.Layout{
		{Tp: 8, Pp: 2, Dp: 4, MicroBatch: 1, Zero: 1, Sp: true, Recompute: pb.Recompute_RECOMPUTE_OPS},
		{Tp: 8, Pp: 2, Dp: 4, MicroBatch: 1, Zero: 1, Sp: true, Recompute: pb.Recompute_RECOMPUTE_FULL, RecomputeLayers: 10},
	} {
		req := stepRequest()
		req.Layout = l
		r, err := c.EstimateStep(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got := r.GetEstimate().GetLayout()
		if got.GetRecompute() != l.GetRecompute() || got.GetRecomputeLayers() != l.GetRecomputeLayers() || !(r.GetEstimate().GetBreakdown().GetRecomputeS() > 0) {
			t.Errorf("sent %v/%d, estimated %v/%d with %v s recomputing", l.GetRecompute(), l.GetRecomputeLayers(), got.GetRecompute(), got.GetRecomputeLayers(), r.GetEstimate().GetBreakdown().GetRecomputeS())
		}
	}
}

func TestErrors(t *testing.T) {
	c := client(t, Limits{MaxGPUs: 4096, MaxRankConfigs: 3})
	ctx := context.Background()
	bad := func(edit func(*pb.EstimateStepRequest)) *pb.EstimateStepRequest {
		r := stepRequest()
		edit(r)
		return r
	}
	tests := []struct {
		name  string
		req   *pb.EstimateStepRequest
		code  codes.Code
		field string
	}{
		{"tp not dividing heads", bad(func(r *pb.EstimateStepRequest) { r.Layout.Tp = 7 }), codes.InvalidArgument, "layout.tp"},
		{"unknown model", bad(func(r *pb.EstimateStepRequest) { r.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "gpt-9"}} }), codes.NotFound, "model.name"},
		{"unknown cluster", bad(func(r *pb.EstimateStepRequest) {
			r.Cluster = &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-z"}}
		}), codes.NotFound, "cluster.name"},
		{"no model", bad(func(r *pb.EstimateStepRequest) { r.Model = nil }), codes.InvalidArgument, "model"},
		{"no training", bad(func(r *pb.EstimateStepRequest) { r.Training = nil }), codes.InvalidArgument, "training"},
		{"bad seq", bad(func(r *pb.EstimateStepRequest) { r.Training.SeqLen = -1 }), codes.InvalidArgument, "training.seq_len"},
		{"bad batch", bad(func(r *pb.EstimateStepRequest) { r.Training.GlobalBatch = 99 }), codes.InvalidArgument, "training.global_batch"},
		{"recompute layers without full", bad(func(r *pb.EstimateStepRequest) { r.Layout.RecomputeLayers = 4 }), codes.InvalidArgument, "layout.recompute_layers"},
		{"unknown backward prefetch", bad(func(r *pb.EstimateStepRequest) { r.Training.Zero3BackwardPrefetch = 9 }), codes.InvalidArgument, "training.zero3_backward_prefetch"},
		{"bad arch", bad(func(r *pb.EstimateStepRequest) {
			r.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Architecture{Architecture: &pb.Architecture{Layers: 2, Hidden: 100, Heads: 3}}}
		}), codes.InvalidArgument, "model.architecture.heads"},
		{"too many GPUs", bad(func(r *pb.EstimateStepRequest) { r.Layout.Dp = 4096 }), codes.InvalidArgument, "layout"},
		{"bad definition", bad(func(r *pb.EstimateStepRequest) {
			r.Cluster = &pb.ClusterSpec{Source: &pb.ClusterSpec_Definition{Definition: &pb.ClusterDefinition{Base: "dgx-h100", Nics: &pb.NICs{Kind: "smoke"}}}}
		}), codes.InvalidArgument, "cluster.definition.nics.kind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.EstimateStep(ctx, tc.req)
			violationOf(t, err, tc.code, tc.field)
		})
	}
	_, err := c.SimulateCollective(ctx, &pb.SimulateCollectiveRequest{Cluster: stepRequest().Cluster, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE})
	violationOf(t, err, codes.InvalidArgument, "size_bytes")
	_, err = c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: stepRequest().Model, Cluster: stepRequest().Cluster,
		Training: stepRequest().Training, Gpus: 64, Objective: pb.Objective_OBJECTIVE_COST})
	violationOf(t, err, codes.InvalidArgument, "objective")
	_, err = c.RankConfigs(ctx, &pb.RankConfigsRequest{Configs: []*pb.EstimateStepRequest{stepRequest(), stepRequest(), stepRequest(), stepRequest()}})
	violationOf(t, err, codes.InvalidArgument, "configs")
}

func TestRankConfigsPerItemErrors(t *testing.T) {
	c := client(t, DefaultLimits())
	fast := stepRequest()
	slow := stepRequest()
	slow.Layout.Recompute = pb.Recompute_RECOMPUTE_FULL
	broken := stepRequest()
	broken.Layout.Tp = 3
	r, err := c.RankConfigs(context.Background(), &pb.RankConfigsRequest{Configs: []*pb.EstimateStepRequest{slow, broken, fast}})
	if err != nil {
		t.Fatal(err)
	}
	res := r.GetResults()
	if len(res) != 3 || res[1].GetError() == nil || res[1].GetError().GetCode() != "INVALID_ARGUMENT" || res[1].GetRank() != 0 {
		t.Fatalf("broken item: %v", res[1])
	}
	if res[1].GetError().GetViolations()[0].GetField() != "layout.tp" {
		t.Errorf("violation %v", res[1].GetError().GetViolations())
	}
	if res[2].GetRank() != 1 || res[0].GetRank() != 2 {
		t.Errorf("ranks: slow %d, fast %d", res[0].GetRank(), res[2].GetRank())
	}
}

// A config that does not fit ranks after every one that fits, however fast, and is
// flagged; one as slow as another on as many GPUs with less headroom is flagged
// dominated.
func TestRankConfigsInfeasibleLastAndDominated(t *testing.T) {
	c := client(t, DefaultLimits())
	fits := stepRequest()
	oom := stepRequest() // no recomputation, micro-batch 8: far over 80 GB
	oom.Layout.Recompute, oom.Layout.MicroBatch = pb.Recompute_RECOMPUTE_NONE, 8
	oom.Layout.Dp, oom.Layout.Pp = 2, 4
	more := stepRequest() // selective recomputation without sequence parallelism: slower, more memory
	more.Layout.Sp = false
	r, err := c.RankConfigs(context.Background(), &pb.RankConfigsRequest{Configs: []*pb.EstimateStepRequest{oom, fits, more}})
	if err != nil {
		t.Fatal(err)
	}
	res := r.GetResults()
	if res[0].GetEstimate().GetMemory().GetFits() {
		t.Fatalf("the out-of-memory config fits (%.1f GB)", res[0].GetEstimate().GetMemory().GetTotalGb())
	}
	if !res[0].GetInfeasible() || res[0].GetRank() < 2 {
		t.Errorf("out of memory: rank %d, infeasible %v; want after the config that fits, flagged", res[0].GetRank(), res[0].GetInfeasible())
	}
	if res[1].GetInfeasible() || res[1].GetRank() != 1 || res[1].GetDominated() {
		t.Errorf("fits: rank %d, infeasible %v, dominated %v", res[1].GetRank(), res[1].GetInfeasible(), res[1].GetDominated())
	}
	e1, e2 := res[1].GetEstimate(), res[2].GetEstimate()
	t.Logf("with SP %.4f s %.1f GB free; without %.4f s %.1f GB free", e1.GetStepTimeS(), e1.GetMemory().GetHeadroomGb(), e2.GetStepTimeS(), e2.GetMemory().GetHeadroomGb())
	if !(e2.GetStepTimeS() >= e1.GetStepTimeS() && e2.GetMemory().GetHeadroomGb() < e1.GetMemory().GetHeadroomGb()) {
		t.Fatal("the test needs the config without SP to be no faster and hold more memory")
	}
	if !res[2].GetDominated() || res[2].GetRank() < 2 {
		t.Errorf("without SP: rank %d, dominated %v; want after the config with SP, flagged", res[2].GetRank(), res[2].GetDominated())
	}
}

func TestEstimatePlanAndCollectiveAndCatalog(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	p, err := c.EstimatePlan(ctx, &pb.EstimatePlanRequest{
		Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}}, Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"},
			FreeGpus: []*pb.NodeFreeGPUs{{Node: 0, Gpus: []int32{0, 1, 2, 3}}, {Node: 3, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}}, {Node: 4, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}}}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 64}, Gpus: 16, TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.GetPlans()) != 3 || len(p.GetPareto()) == 0 || p.GetStats().GetEnumerated() == 0 {
		t.Fatalf("plans %d, pareto %d, stats %v", len(p.GetPlans()), len(p.GetPareto()), p.GetStats())
	}
	for _, pl := range p.GetPlans() {
		for _, u := range pl.GetPlacement().GetNodes() {
			if u.GetNode() != 0 && u.GetNode() != 3 && u.GetNode() != 4 {
				t.Errorf("plan placed on busy node %d", u.GetNode())
			}
		}
	}
	sc, err := c.SimulateCollective(ctx, &pb.SimulateCollectiveRequest{Cluster: stepRequest().Cluster, Nodes: 2,
		Collective: pb.Collective_COLLECTIVE_ALL_GATHER, SizeBytes: 1 << 28, Algorithm: pb.Algorithm_ALGORITHM_RING})
	if err != nil || sc.GetChosen().GetAlgorithm() != pb.Algorithm_ALGORITHM_RING || sc.GetRanks() != 16 || len(sc.GetNotApplicable()) == 0 {
		t.Fatalf("collective %v %v", sc, err)
	}
	_, err = c.SimulateCollective(ctx, &pb.SimulateCollectiveRequest{Cluster: stepRequest().Cluster, Nodes: 2,
		Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 20, Algorithm: pb.Algorithm_ALGORITHM_NVLS})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("NVLS across nodes: %v", err)
	}
	cat, err := c.ListCatalog(ctx, &pb.ListCatalogRequest{})
	if err != nil || len(cat.GetGpus()) < 6 || len(cat.GetSystems()) < 5 || len(cat.GetModels()) < 15 {
		t.Fatalf("catalog %d GPUs %d systems %d models, %v", len(cat.GetGpus()), len(cat.GetSystems()), len(cat.GetModels()), err)
	}
}

func TestDeadlineAndCancel(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.EstimateStep(ctx, stepRequest()); status.Code(err) != codes.Canceled {
		t.Errorf("cancelled: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	if _, err := c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: stepRequest().Model, Cluster: stepRequest().Cluster,
		Training: stepRequest().Training, Gpus: 64}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("deadline: %v", err)
	}
}

func plannerRequest() *pb.EstimatePlanRequest {
	return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 4},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 64}, Gpus: 32, TopK: 2}
}

// With tracing on, a search leaves one span per planner phase, each with its count;
// the front's plans come without their communication tables, the top plans with.
func TestPlannerSpansAndParetoTrim(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	svc := newService(DefaultLimits(), nil, tp.Tracer("test"))
	resp, err := svc.EstimatePlan(context.Background(), plannerRequest())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	items := map[string]int64{}
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
		for _, a := range s.Attributes() {
			if a.Key == "stepcost.planner.items" {
				items[s.Name()] = a.Value.AsInt64()
			}
		}
	}
	want := []string{"planner.enumerate", "planner.evaluate", "planner.rank", "planner.pareto"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("spans %v, want %v", names, want)
	}
	if items["planner.evaluate"] != resp.GetStats().GetEvaluated() || items["planner.rank"] != 2 || items["planner.pareto"] != int64(len(resp.GetPareto())) {
		t.Errorf("span counts %v, stats %v, %d on the front", items, resp.GetStats(), len(resp.GetPareto()))
	}
	if len(resp.GetPlans()[0].GetEstimate().GetCommunication()) == 0 {
		t.Error("top plan lost its communication table")
	}
	for _, p := range resp.GetPareto() {
		if len(p.GetEstimate().GetCommunication()) != 0 || p.GetEstimate().GetStepTimeS() <= 0 {
			t.Errorf("front plan: %d comm calls, step %v", len(p.GetEstimate().GetCommunication()), p.GetEstimate().GetStepTimeS())
		}
	}
	// Every kind of the breakdown adds up to the communication table's calls.
	top := resp.GetPlans()[0].GetEstimate()
	sum := func(c *pb.CommTimes) float64 {
		return c.GetTp() + c.GetCp() + c.GetEp() + c.GetPp() + c.GetDp() + c.GetZero3() + c.GetEmbedding()
	}
	calls := 0.0
	for _, c := range top.GetCommunication() {
		calls += c.GetTimeUs() * 1e-6 * c.GetCallsPerStep()
	}
	if b := top.GetBreakdown(); math.Abs(sum(b.GetExposedCommS())+sum(b.GetHiddenCommS())-calls) > 1e-6*calls || calls == 0 {
		t.Errorf("exposed+hidden %v s, calls %v s: %v", sum(b.GetExposedCommS())+sum(b.GetHiddenCommS()), calls, b)
	}
}

// A search wider than --max-candidates is refused, naming the limit, before it
// allocates its candidates.
func TestPlanLayoutLimit(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxCandidates = 100
	_, err := client(t, lim).EstimatePlan(context.Background(), plannerRequest())
	violationOf(t, err, codes.InvalidArgument, "gpus")
	if !strings.Contains(status.Convert(err).Message(), "--max-candidates") {
		t.Errorf("message %q does not name the flag", status.Convert(err).Message())
	}
	// A sweep of sizes is narrowed by max_gpus (or min_gpus): that is the field
	// named, not gpus, which the request did not give.
	sweep := plannerRequest()
	sweep.Gpus, sweep.MaxGpus, sweep.Cluster.Nodes = 0, 64, 8
	_, err = client(t, lim).EstimatePlan(context.Background(), sweep)
	violationOf(t, err, codes.InvalidArgument, "max_gpus")
}

// Equivalent requests share a cache entry: constraint lists in another order or with
// repeats, free GPUs listed in another order, the default top K spelled out.
func TestCacheKeyIsTheResolvedRequest(t *testing.T) {
	c := client(t, DefaultLimits())
	ctx := context.Background()
	base := func() *pb.EstimatePlanRequest {
		r := plannerRequest()
		r.TopK = 0
		r.Cluster.FreeGpus = []*pb.NodeFreeGPUs{{Node: 1, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}}, {Node: 2, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}}}
		r.Gpus = 16
		r.Constraints = &pb.Constraints{Tp: []int32{1, 2, 4}, Zero: []int32{1, 3}, Recompute: []pb.Recompute{pb.Recompute_RECOMPUTE_NONE, pb.Recompute_RECOMPUTE_FULL}}
		return r
	}
	first, err := c.EstimatePlan(ctx, base())
	if err != nil || first.GetCached() {
		t.Fatalf("first: cached %v, %v", first.GetCached(), err)
	}
	same := base()
	same.TopK = 10
	same.Cluster.FreeGpus = []*pb.NodeFreeGPUs{{Node: 2, Gpus: []int32{7, 6, 5, 4, 3, 2, 1, 0}}, {Node: 1, Gpus: []int32{3, 2, 1, 0, 4, 5, 6, 7}}}
	same.Constraints = &pb.Constraints{Tp: []int32{4, 2, 1, 2}, Zero: []int32{3, 1}, Recompute: []pb.Recompute{pb.Recompute_RECOMPUTE_FULL, pb.Recompute_RECOMPUTE_NONE}}
	// A different key would never be answered from the cache.
	second := fromCache(t, "equivalent request", func() (*pb.EstimatePlanResponse, error) { return c.EstimatePlan(ctx, same) })
	// The cache admits entries asynchronously and may drop one under load: the
	// entry answered may then be a second computation's, whose search took
	// another time. Only cached and stats.elapsed_ms describe the call
	// (TestEstimatePlanAnswersAreByteIdentical).
	second.Cached = false
	first.Stats.ElapsedMs, second.Stats.ElapsedMs = 0, 0
	if !proto.Equal(first, second) {
		t.Error("equivalent request got a different answer")
	}
	other := base()
	other.Constraints.Zero = []int32{1}
	if r, err := c.EstimatePlan(ctx, other); err != nil || r.GetCached() {
		t.Errorf("different constraints: cached %v, %v", r.GetCached(), err)
	}
	// Without the cache the same two requests give the same answer too (the planner
	// itself treats the lists as sets).
	svc := NewService(DefaultLimits(), nil)
	a, errA := svc.EstimatePlan(ctx, base())
	b, errB := svc.EstimatePlan(ctx, same)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	a.Stats.ElapsedMs, b.Stats.ElapsedMs = 0, 0
	if !proto.Equal(a, b) {
		t.Error("uncached: equivalent requests answered differently")
	}
	// A step estimate: the cluster's size left to the layout (64 GPUs: 8 nodes) or
	// spelled out.
	s2 := stepRequest()
	s2.Cluster.Nodes = 8
	r1, err1 := c.EstimateStep(ctx, stepRequest())
	if err1 != nil || r1.GetCached() {
		t.Fatalf("step: %v, cached %v", err1, r1.GetCached())
	}
	fromCache(t, "step with the cluster size spelled out", func() (*pb.EstimateStepResponse, error) { return c.EstimateStep(ctx, s2) })
	s2.Cluster.Nodes = 9 // a bigger cluster is another question
	if r, err := c.EstimateStep(ctx, s2); err != nil || r.GetCached() {
		t.Errorf("step on 9 nodes: cached %v, %v", r.GetCached(), err)
	}
}

// fromCache calls until the answer comes from the response cache and returns it,
// failing the test after about five seconds: the cache admits entries
// asynchronously, so a set may land a moment after the answer that made it (longer
// on a loaded machine).
func fromCache[R interface{ GetCached() bool }](t testing.TB, what string, call func() (R, error)) R {
	t.Helper()
	var r R
	for range 500 {
		var err error
		if r, err = call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r.GetCached() {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: never answered from the cache", what)
	return r
}
