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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	"github.com/stepcost/stepcost/internal/service"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

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
	big := make([]*pb.EstimateStepRequest, service.RankBatchGated+1)
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

// running, waiting and how admissions ended.
func TestAdmissionFlagsAndMetrics(t *testing.T) {
	for flag, edit := range map[string]func(*Config){
		"--max-concurrent-searches": func(c *Config) { c.Limits.MaxConcurrentSearches = -1 },
		"--max-queued-searches":     func(c *Config) { c.Limits.MaxQueuedSearches = -1 },
		"--max-search-gpus":         func(c *Config) { c.Limits.MaxSearchGPUs = -1 },
		"--max-answer-gpus":         func(c *Config) { c.Limits.MaxAnswerGPUs = -1 },
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
	conn := grpcConn(t, d)
	if _, err := pb.NewStepcostServiceClient(conn).EstimatePlan(context.Background(), plannerRequest()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + d.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"stepcost_searches_running{", `size="large"} 0`, "stepcost_searches_waiting{", "stepcost_search_slots_held{", `outcome="admitted"} 1`, `outcome="refused"} 0`,
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
		var resp *pb.EstimatePlanResponse
		var err error
		var took time.Duration
		grew := peakHeapGrowth(func() {
			start := time.Now()
			resp, err = svc.EstimatePlan(context.Background(), tc.req)
			took = time.Since(start)
		})
		t.Logf("%s: %v, peak live heap +%d MiB, layouts %d (%v)", tc.name, took.Round(time.Millisecond), grew>>20,
			resp.GetStats().GetEnumerated(), status.Code(err))
		if grew > budget {
			t.Errorf("%s: %d MiB of live heap, over %d MiB", tc.name, grew>>20, budget>>20)
		}
	}
}

// peakHeapGrowth runs run and returns the most the live heap grew over what was
// live before it (after a collection), sampled each millisecond while it ran.
func peakHeapGrowth(run func()) int64 {
	runtime.GC()
	base := liveHeap()
	var peak atomic.Uint64
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
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
	run()
	close(done)
	<-sampled
	return int64(peak.Load()) - int64(base)
}

// liveHeap is the heap marked live by the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
