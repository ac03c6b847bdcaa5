package server

import (
	"context"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Wide ranges and the constraints that widen the space make a search large.
func TestLargeSearch(t *testing.T) {
	if !largeSearch(planner.Request{MaxGPUs: 1024}) || largeSearch(planner.Request{GPUs: 1024}) ||
		!largeSearch(planner.Request{GPUs: 8, Constraints: planner.Constraints{UnevenPP: true}}) {
		t.Error("largeSearch")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
	}
}

// While every search slot is taken, cached plans, EstimateStep, SimulateCollective,
// ListCatalog and small RankConfigs calls are answered at once; an uncached search
// waits until its deadline, and once the queue is full searches and large
// RankConfigs calls are refused.
func TestSmallRequestsDoNotWaitForSearches(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxConcurrentSearches, lim.MaxQueuedSearches = 1, 1
	c, err := cache.New(cache.Config{MaxCost: 64 << 20}, cacheCost)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	svc := NewService(lim, c)
	ctx := context.Background()
	if _, err := svc.EstimatePlan(ctx, plannerRequest()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { // the cache stores asynchronously
		r, err := svc.EstimatePlan(ctx, plannerRequest())
		return err == nil && r.GetCached()
	})

	release, err := svc.admit.Acquire(ctx, false) // the only slot
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	coll := &pb.SimulateCollectiveRequest{Cluster: stepRequest().Cluster, Nodes: 2, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 20}
	for name, call := range map[string]func(context.Context) (proto.Message, error){
		"cached plan":        func(ctx context.Context) (proto.Message, error) { return svc.EstimatePlan(ctx, plannerRequest()) },
		"EstimateStep":       func(ctx context.Context) (proto.Message, error) { return svc.EstimateStep(ctx, stepRequest()) },
		"SimulateCollective": func(ctx context.Context) (proto.Message, error) { return svc.SimulateCollective(ctx, coll) },
		"ListCatalog": func(ctx context.Context) (proto.Message, error) {
			return svc.ListCatalog(ctx, &pb.ListCatalogRequest{})
		},
		"small RankConfigs": func(ctx context.Context) (proto.Message, error) {
			return svc.RankConfigs(ctx, &pb.RankConfigsRequest{Configs: []*pb.EstimateStepRequest{stepRequest(), stepRequest()}})
		},
	} {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := call(ctx)
		cancel()
		if err != nil {
			t.Errorf("%s with the search slots taken: %v", name, err)
		}
	}

	uncached := func(batch int64) *pb.EstimatePlanRequest {
		r := plannerRequest()
		r.Training.GlobalBatch = batch
		return r
	}
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := svc.EstimatePlan(dctx, uncached(128)); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("uncached search with the slot taken: %v", err)
	}
	// Its computation leaves the queue on its own (the caller returns first).
	waitFor(t, func() bool { return svc.admit.Waiting() == 0 })

	waiter := make(chan error, 1)
	go func() {
		_, err := svc.EstimatePlan(ctx, uncached(256))
		waiter <- err
	}()
	waitFor(t, func() bool { return svc.admit.Waiting() == 1 })
	// Bounded, so that a wrong admission fails the test instead of hanging it.
	fullCtx, cancelFull := context.WithTimeout(ctx, 10*time.Second)
	defer cancelFull()
	if _, err := svc.EstimatePlan(fullCtx, uncached(512)); status.Code(err) != codes.Unavailable {
		t.Errorf("search with the queue full: %v", err)
	}
	big := make([]*pb.EstimateStepRequest, rankBatchGated+1)
	for i := range big {
		big[i] = stepRequest()
	}
	if _, err := svc.RankConfigs(fullCtx, &pb.RankConfigsRequest{Configs: big}); status.Code(err) != codes.Unavailable {
		t.Errorf("large RankConfigs with the queue full: %v", err)
	}
	release()
	if err := <-waiter; err != nil {
		t.Errorf("queued search: %v", err)
	}
	if n := svc.admit.Running(); n != 0 {
		t.Errorf("%d slots still taken", n)
	}
}

// searchGPUs counts what the planner places: the sizes it reports trying.
func TestSearchGPUsMatchesThePlanner(t *testing.T) {
	svc := NewService(DefaultLimits(), nil)
	for _, r := range []*pb.EstimatePlanRequest{
		{Gpus: 16},
		{MaxGpus: 40},
		{MinGpus: 3, MaxGpus: 24},
	} {
		r.Model, r.Cluster, r.Training, r.TopK = plannerRequest().Model, plannerRequest().Cluster, plannerRequest().Training, 1
		w, err := svc.estimatePlan(r)
		if err != nil {
			t.Fatal(err)
		}
		m, err := w.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for _, n := range m.(*pb.EstimatePlanResponse).GetStats().GetGpuCounts() {
			sum += int(n)
		}
		pr := searchRequestOf(t, svc, r)
		if got := searchGPUs(pr); got != sum {
			t.Errorf("gpus %d, %d–%d: searchGPUs %d, planner placed %d", r.Gpus, r.MinGpus, r.MaxGpus, got, sum)
		}
	}
}

// searchRequestOf rebuilds the planner request the service makes of r.
func searchRequestOf(t *testing.T, svc *Service, r *pb.EstimatePlanRequest) (pr planner.Request) {
	t.Helper()
	ce, err := svc.sizedCluster(r.GetCluster(), max(int(r.GetGpus()), int(r.GetMaxGpus())), -1)
	if err != nil {
		t.Fatal(err)
	}
	pr.Cluster, pr.GPUs, pr.MinGPUs, pr.MaxGPUs = ce.Cluster, int(r.GetGpus()), int(r.GetMinGpus()), int(r.GetMaxGpus())
	return pr
}

// A range search over --max-search-gpus is refused before it runs, naming the flag;
// a fixed size up to --max-gpus is not.
func TestSearchSizeLimit(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxSearchGPUs = 1000
	svc := NewService(lim, nil)
	r := plannerRequest()
	r.Gpus, r.MaxGpus = 0, 256 // 8 + 16 + … + 256 = 4 224 (+ 1, 2, 4)
	r.Cluster.Nodes = 0
	_, err := svc.EstimatePlan(context.Background(), r)
	violationOf(t, err, codes.InvalidArgument, "max_gpus")
	if !strings.Contains(err.Error(), "--max-search-gpus") || !strings.Contains(err.Error(), "4231") {
		t.Errorf("message: %v", err)
	}
	r.MinGpus = 200 // 208 + … + 256 = 1 392
	if _, err := svc.EstimatePlan(context.Background(), r); status.Code(err) != codes.InvalidArgument {
		t.Errorf("1 392 GPUs: %v", err)
	}
	r.MinGpus = 240 // 240 + 248 + 256
	if _, err := svc.EstimatePlan(context.Background(), r); err != nil {
		t.Errorf("744 GPUs: %v", err)
	}
}

// A scheduler sends a different free map with every search. Their placements must
// not pile up in the cluster's shared estimator (they did, 150 KB a search of 16 GPUs,
// 3 MB of 1 024, so that an admission loop ran the daemon out of memory).
func TestFreeMapSearchesDoNotAccumulate(t *testing.T) {
	svc := NewService(DefaultLimits(), nil)
	svc.scratch.budget = 64 // a new scratch estimator every 4 searches
	search := func(i int) {
		free := make([]*pb.NodeFreeGPUs, 8)
		for n := range free {
			k := 4 + (i+n)%5 // 4–8 free GPUs, a different map each time
			free[n] = &pb.NodeFreeGPUs{Node: int32(n), Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}[:k]}
		}
		r := &pb.EstimatePlanRequest{Model: plannerRequest().Model, Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 8, FreeGpus: free},
			Training: &pb.Training{SeqLen: 8192, GlobalBatch: 64}, Gpus: 16, TopK: 1}
		if _, err := svc.EstimatePlan(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for i := range 5 {
		search(i)
	}
	before := heap()
	const n = 30
	for i := range n {
		search(5 + i)
	}
	if grew := int64(heap()) - int64(before); grew > 1<<20 {
		t.Errorf("the heap grew %d KB over %d searches with free maps", grew>>10, n)
	}
}

// The admission flags are checked at start-up, and /metrics reports the searches
// running, waiting and how admissions ended.
func TestAdmissionFlagsAndMetrics(t *testing.T) {
	for flag, edit := range map[string]func(*Config){
		"--max-concurrent-searches": func(c *Config) { c.Limits.MaxConcurrentSearches = -1 },
		"--max-queued-searches":     func(c *Config) { c.Limits.MaxQueuedSearches = -1 },
		"--max-search-gpus":         func(c *Config) { c.Limits.MaxSearchGPUs = -1 },
	} {
		cfg := DefaultConfig()
		cfg.WarmUp = nil // tests start at once
		edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), flag+":") {
			t.Errorf("%s: %v", flag, err)
		}
	}
	cfg, err := ParseFlags([]string{"--max-concurrent-searches", "3", "--max-queued-searches", "0", "--max-search-gpus", "5"}, io.Discard)
	if err != nil || cfg.Limits.MaxConcurrentSearches != 3 || cfg.Limits.MaxQueuedSearches != 0 || cfg.Limits.MaxSearchGPUs != 5 {
		t.Errorf("flags: %+v %v", cfg.Limits, err)
	}

	d := startDaemon(t, func(c *Config) { c.Telemetry.Metrics = true })
	defer d.stop()
	conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := pb.NewStepcostServiceClient(conn).EstimatePlan(context.Background(), plannerRequest()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + d.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"stepcost_searches_running{", `size="large"} 0`, "stepcost_searches_waiting{", `outcome="admitted"} 1`, `outcome="refused"} 0`,
		// the Go runtime, the process, and which build serves
		"go_goroutines ", "go_memstats_heap_alloc_bytes ", "process_resident_memory_bytes ", "process_cpu_seconds_total ",
		`stepcost_build_info{commit=`, `estimator_version="` + EstimatorVersion + `"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// The largest searches the default limits allow, one at a time: how long each takes
// and the most live heap it holds (sampled after every collection), against the
// ~130 MB per search that --max-concurrent-searches and the Kubernetes memory limit
// are sized for. Seconds of CPU each, so only on demand:
//
//	STEPCOST_MEMORY=1 go test ./server -run TestMaximalSearchMemory -v
func TestMaximalSearchMemory(t *testing.T) {
	if os.Getenv("STEPCOST_MEMORY") == "" {
		t.Skip("set STEPCOST_MEMORY=1 to measure")
	}
	const budget = 200 << 20
	svc := NewService(DefaultLimits(), nil)
	for _, tc := range []struct {
		name string
		req  *pb.EstimatePlanRequest
	}{
		{"widest range under --max-search-gpus (up to 3992 GPUs)", &pb.EstimatePlanRequest{Model: plannerRequest().Model,
			Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Training: &pb.Training{SeqLen: 8192, GlobalBatch: 2048}, MaxGpus: 3992}},
		{"most layouts (MoE range, uneven pipelines: stops at --max-candidates)", &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "mixtral-8x7b"}},
			Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Training: &pb.Training{SeqLen: 8192, GlobalBatch: 4096}, MaxGpus: 2048,
			Constraints: &pb.Constraints{UnevenPp: true, MaxMicroBatch: 64}}},
		{"largest single job, space widened (llama3-8b on 4096 GPUs)", &pb.EstimatePlanRequest{Model: plannerRequest().Model,
			Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Training: &pb.Training{SeqLen: 8192, GlobalBatch: 65536}, Gpus: 4096,
			Constraints: &pb.Constraints{UnevenPp: true, TpAcrossNodes: true, MaxMicroBatch: 4096}}},
		{"gpt3-175b on 1024 GPUs (the planner's benchmark)", &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "gpt3-175b"}},
			Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Training: &pb.Training{SeqLen: 2048, GlobalBatch: 1536}, Gpus: 1024}},
	} {
		runtime.GC()
		base := liveHeap()
		var peak atomic.Uint64
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Millisecond):
					if l := liveHeap(); l > peak.Load() {
						peak.Store(l)
					}
				}
			}
		}()
		start := time.Now()
		resp, err := svc.EstimatePlan(context.Background(), tc.req)
		took := time.Since(start)
		close(done)
		grew := int64(peak.Load()) - int64(base)
		t.Logf("%s: %v, peak live heap +%d MiB, layouts %d (%v)", tc.name, took.Round(time.Millisecond), grew>>20,
			resp.GetStats().GetEnumerated(), status.Code(err))
		if grew > budget {
			t.Errorf("%s: %d MiB of live heap, over %d MiB", tc.name, grew>>20, budget>>20)
		}
	}
}

// liveHeap is the heap marked live by the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Searches whose free map leaves ranks on the first GPUs in order share the
// cluster's estimator (and its placements); others share a scratch one, replaced
// when it has served its budget.
func TestEstimatorFor(t *testing.T) {
	svc := NewService(DefaultLimits(), nil)
	svc.scratch.budget = 48
	ce, err := svc.sizedCluster(plannerRequest().Cluster, 32, -1)
	if err != nil {
		t.Fatal(err)
	}
	full := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, free := range []planner.FreeMap{nil, {0: full}, {0: full, 1: full, 2: full}} {
		if svc.estimatorFor(ce, planner.Request{Cluster: ce.Cluster, GPUs: 16, Free: free}) != ce.Est {
			t.Errorf("%v: not the cluster's estimator", free)
		}
	}
	var got []*step.Estimator
	for _, free := range []planner.FreeMap{{1: full}, {0: full[:4]}, {0: full, 2: full}, {0: full[:7]}} {
		got = append(got, svc.estimatorFor(ce, planner.Request{Cluster: ce.Cluster, GPUs: 16, Free: free}))
	}
	if got[0] == ce.Est || got[0] != got[1] || got[1] != got[2] || got[3] == got[2] {
		t.Errorf("scratch estimators: %p %p %p %p (cluster's %p)", got[0], got[1], got[2], got[3], ce.Est)
	}
}
