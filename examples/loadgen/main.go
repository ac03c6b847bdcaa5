// Command loadgen loads a running stepcostd as a scheduler's admission loop would,
// over gRPC and REST at once, and reports latency by kind of call and outcome, the
// daemon's goroutines (its /metrics, so run it with --metrics) before, at the peak
// and after, and its resident set (with --pid, from /proc):
//
//	stepcostd --metrics --warm-up none &
//	go run ./examples/loadgen --pid $! --d 30s
//
// Three kinds of client, each half over gRPC and half over REST: small calls
// (EstimateStep, a cached EstimatePlan; 5 s deadline), new searches (llama3-8b,
// llama3-70b or mixtral-8x7b on 64 to 1 024 GPUs, a batch never asked before; 10 s)
// and very expensive ones (llama3-405b on 98 304 GPUs with tp_across_nodes,
// uneven_pp and max_micro_batch 64: a new price for its token budget each time, so
// never cached; 20 s).
// More search clients than --max-concurrent-searches + --max-queued-searches
// (default 2 + 32) see the overload answer, UNAVAILABLE (HTTP 503).
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

var (
	grpcAddr = flag.String("grpc", "127.0.0.1:8081", "the daemon's gRPC address")
	httpAddr = flag.String("http", "127.0.0.1:8080", "the daemon's HTTP address")
	pid      = flag.Int("pid", 0, "the daemon's process id, to read its resident set (0: not read)")
	dur      = flag.Duration("d", 30*time.Second, "how long to send calls")
	small    = flag.Int("small", 16, "small clients (half REST)")
	searches = flag.Int("searches", 6, "new-search clients (half REST)")
	huge     = flag.Int("huge", 4, "expensive-search clients (half REST)")
)

type rec struct {
	class, via, code string
	took             time.Duration
}

var (
	mu   sync.Mutex
	recs []rec
)

func record(class, via, code string, took time.Duration) {
	mu.Lock()
	recs = append(recs, rec{class, via, code, took})
	mu.Unlock()
}

// rss prints the daemon's resident set now and at its peak.
func rss() {
	if *pid == 0 {
		return
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", *pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS") || strings.HasPrefix(l, "VmHWM") {
			fmt.Print(strings.Join(strings.Fields(l), " "), " ")
		}
	}
}

// goroutines is the daemon's go_goroutines, -1 if /metrics does not answer.
func goroutines() int {
	resp, err := http.Get("http://" + *httpAddr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "go_goroutines") {
			f := strings.Fields(sc.Text())
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return int(n)
		}
	}
	return -1
}

func main() {
	flag.Parse()
	conn, err := grpc.NewClient(*grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := pb.NewStepcostServiceClient(conn)
	hc := &http.Client{}
	fmt.Printf("before: goroutines %d ", goroutines())
	rss()
	fmt.Println()

	plan := func(class string, i int, req *pb.EstimatePlanRequest, deadline time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		start := time.Now()
		if i%2 == 0 {
			_, err := c.EstimatePlan(ctx, req)
			record(class, "grpc", status.Code(err).String(), time.Since(start))
			return
		}
		body, _ := protojson.Marshal(req)
		// The gateway takes the deadline from Grpc-Timeout; the client's own
		// context is a little longer, so that the daemon's answer is seen.
		hctx, hcancel := context.WithTimeout(context.Background(), deadline+time.Second)
		defer hcancel()
		hr, _ := http.NewRequestWithContext(hctx, "POST", "http://"+*httpAddr+"/v1/plans:estimate", bytes.NewReader(body))
		hr.Header.Set("Grpc-Timeout", fmt.Sprintf("%dm", deadline.Milliseconds()))
		resp, err := hc.Do(hr)
		if err != nil {
			record(class, "rest", "conn-error", time.Since(start))
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		record(class, "rest", strconv.Itoa(resp.StatusCode), time.Since(start))
	}
	step, cachedPlan := smallRequests()
	stepBody, _ := protojson.Marshal(step)

	end := time.Now().Add(*dur)
	var wg sync.WaitGroup
	for i := range *small {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; time.Now().Before(end); k++ {
				if k%2 == 0 {
					plan("small", i, cachedPlan, 5*time.Second)
					continue
				}
				start := time.Now()
				if i%2 == 0 {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, err := c.EstimateStep(ctx, step)
					cancel()
					record("small", "grpc", status.Code(err).String(), time.Since(start))
				} else {
					resp, err := hc.Post("http://"+*httpAddr+"/v1/steps:estimate", "application/json", bytes.NewReader(stepBody))
					if err != nil {
						record("small", "rest", "conn-error", time.Since(start))
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					record("small", "rest", strconv.Itoa(resp.StatusCode), time.Since(start))
				}
			}
		}()
	}
	for i := range *searches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(i)))
			for time.Now().Before(end) {
				plan("search", i, newSearch(r), 10*time.Second)
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	for i := range *huge {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(100 + i)))
			for time.Now().Before(end) {
				plan("huge", i, expensiveSearch(r), 20*time.Second)
			}
		}()
	}
	peakG := 0
	stop := make(chan bool)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
				if g := goroutines(); g > peakG {
					peakG = g
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	fmt.Printf("during: peak goroutines %d ", peakG)
	rss()
	fmt.Println()
	// Latency by kind of call, transport and outcome.
	type key struct{ class, via, code string }
	groups := map[key][]time.Duration{}
	for _, r := range recs {
		k := key{r.class, r.via, r.code}
		groups[k] = append(groups[k], r.took)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	for _, k := range keys {
		d := groups[k]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		q := func(p float64) time.Duration {
			return d[min(len(d)-1, int(p*float64(len(d))))].Round(100 * time.Microsecond)
		}
		fmt.Printf("%-7s %-5s %-18s n=%6d p50 %v p90 %v p99 %v max %v\n", k.class, k.via, k.code, len(d), q(0.5), q(0.9), q(0.99), d[len(d)-1].Round(time.Millisecond))
	}
	for _, w := range []int{2, 10} {
		time.Sleep(time.Duration(w) * time.Second)
		fmt.Printf("after %ds: goroutines %d ", w, goroutines())
		rss()
		fmt.Println()
	}
}

// smallRequests are the small clients' calls: an EstimateStep and an EstimatePlan
// that the cache answers after its first time.
func smallRequests() (*pb.EstimateStepRequest, *pb.EstimatePlanRequest) {
	step := &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-70b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 512},
		Layout:   &pb.Layout{Tp: 8, Pp: 2, Dp: 4, MicroBatch: 1, Zero: 1, Sp: true, Recompute: pb.Recompute_RECOMPUTE_SELECTIVE}}
	cachedPlan := &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Training: &pb.Training{SeqLen: 8192, GlobalBatch: 256}, Gpus: 32, TopK: 3}
	return step, cachedPlan
}

// newSearch is a search clients' call: llama3-8b, llama3-70b or mixtral-8x7b on 64
// to 1 024 GPUs with a batch never asked before.
func newSearch(r *rand.Rand) *pb.EstimatePlanRequest {
	_, req := smallRequests()
	req.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: []string{"llama3-8b", "llama3-70b", "mixtral-8x7b"}[r.Intn(3)]}}
	req.Gpus = int32(64 << r.Intn(5))
	req.Training.GlobalBatch = int64(512 + 8*r.Intn(1000))
	req.TopK = 10
	return req
}

// expensiveSearch is an expensive clients' call: llama3-405b on 98 304 GPUs with
// TP across nodes, uneven pipelines, micro-batches up to 64 and every recompute,
// SP, TP overlap and activation offload choice, ranked by the cost of a token
// budget at a new price each time, so that the cache never answers it (a price
// alone, without the budget, prices nothing and is refused naming token_budget).
func expensiveSearch(r *rand.Rand) *pb.EstimatePlanRequest {
	return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-405b"}},
		Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Training: &pb.Training{SeqLen: 8192, GlobalBatch: 4096},
		Gpus: 98304, TopK: 10, PricePerGpuHour: 1 + r.Float64(), TokenBudget: 15e12,
		Constraints: &pb.Constraints{TpAcrossNodes: true, UnevenPp: true, MaxMicroBatch: 64,
			Recompute: []pb.Recompute{pb.Recompute_RECOMPUTE_NONE, pb.Recompute_RECOMPUTE_SELECTIVE, pb.Recompute_RECOMPUTE_FULL},
			Sp:        []bool{true, false}, OverlapTp: []bool{true, false}, OffloadActivations: []bool{true, false}}}
}
