package server

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// After a flood that fills the 256 MiB cache while maximal searches run, the
// daemon's resident set comes back within the documented budget
// (docs/operating.md: the cache, two maximal searches, the baseline) and stays
// there. Minutes of both cores, so only on demand:
//
//	STEPCOST_MEMORY=1 go test ./server -run TestFloodMemory -v
//
// STEPCOST_FLOOD (default 60s) sets the flood's length, STEPCOST_HEAP_PROFILE a
// file for a heap profile taken when it ends.
func TestFloodMemory(t *testing.T) {
	if os.Getenv("STEPCOST_MEMORY") == "" {
		t.Skip("set STEPCOST_MEMORY=1 to measure")
	}
	flood := time.Minute
	if v := os.Getenv("STEPCOST_FLOOD"); v != "" {
		var err error
		if flood, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	var limit int64 // STEPCOST_FLOOD_LIMIT=-1: without the memory limit, to compare
	if v := os.Getenv("STEPCOST_FLOOD_LIMIT"); v != "" {
		var err error
		if limit, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	d := secureDaemon(t, func(c *Config) { c.WarmUp, c.MemoryLimit = DefaultWarmUp(), limit })
	conn := grpcConn(t, d)
	c := pb.NewStepcostServiceClient(conn)
	report := func(when string) (rss uint64) {
		rss, hwm := residentSet()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}, {Name: "/memory/classes/heap/released:bytes"},
			{Name: "/memory/classes/total:bytes"}, {Name: "/gc/gomemlimit:bytes"}}
		metrics.Read(s)
		t.Logf("%s: resident %d MiB (peak %d), live heap %d MiB, heap goal %d MiB, runtime total %d MiB, released %d MiB, memory limit %d MiB",
			when, rss>>20, hwm>>20, s[0].Value.Uint64()>>20, s[1].Value.Uint64()>>20, s[3].Value.Uint64()>>20, s[2].Value.Uint64()>>20, s[4].Value.Uint64()>>20)
		return rss
	}
	report("started")

	// Distinct questions: plans of 64 GPUs with 50 answers each, steps, and two
	// clients searching the widest range the limits allow.
	cpu := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(cpu)
	gc0, total0 := cpu[0].Value.Float64(), cpu[1].Value.Float64()
	var calls, failed atomic.Int64
	stop := time.Now().Add(flood)
	var wg sync.WaitGroup
	models := []string{"llama3-8b", "llama3-70b", "mixtral-8x7b", "gpt3-175b", "qwen3-32b", "gemma2-9b"}
	var seq atomic.Int64
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				k := seq.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				var err error
				switch w % 3 {
				case 0:
					_, err = c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: models[k%int64(len(models))]}},
						Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
						Training: &pb.Training{SeqLen: 4096, GlobalBatch: 512 + k}, Gpus: 64, TopK: 50})
				case 1:
					_, err = c.EstimateStep(ctx, &pb.EstimateStepRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-70b"}},
						Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
						Training: &pb.Training{SeqLen: 8192, GlobalBatch: 512 * (1 + k)},
						Layout:   &pb.Layout{Tp: 8, Pp: 2, Dp: 4, MicroBatch: 1, Zero: 1, Sp: true}})
				case 2:
					_, err = c.EstimatePlan(ctx, &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
						Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
						Training: &pb.Training{SeqLen: 8192, GlobalBatch: 2048 + k}, MaxGpus: 3992})
				}
				cancel()
				calls.Add(1)
				if err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	metrics.Read(cpu)
	t.Logf("flood of %v: %d calls, %d failed (overload, deadlines); the collector took %.1f%% of the CPU", flood, calls.Load(), failed.Load(),
		100*(cpu[0].Value.Float64()-gc0)/(cpu[1].Value.Float64()-total0))
	_, peak := residentSet()
	after := report("flood over")
	if f := os.Getenv("STEPCOST_HEAP_PROFILE"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		pprof.WriteHeapProfile(out)
		out.Close()
	}
	// Settled: the runtime's periodic collection (every 2 minutes) and the
	// scavenger have had their time.
	for i := 1; i <= 5; i++ {
		time.Sleep(30 * time.Second)
		after = max(after, report(fmt.Sprintf("%ds after", 30*i)))
	}
	// The budget is the soft limit's: the collector keeps the heap under it, and
	// the resident set besides holds the binary's pages and the stacks.
	if peak > floodRSSBudget+floodRSSMargin {
		t.Errorf("resident set peaked at %d MiB during the flood, over the %d MiB budget and %d MiB", peak>>20, floodRSSBudget>>20, floodRSSMargin>>20)
	}
	if after > floodRSSBudget {
		t.Errorf("resident set up to %d MiB in the two and a half minutes after the flood, over the %d MiB budget", after>>20, floodRSSBudget>>20)
	}
	debug.FreeOSMemory()
	report("after FreeOSMemory")
}

// floodRSSBudget is docs/operating.md's memory budget; floodRSSMargin what the
// resident set may hold besides the Go heap at the flood's peak.
const (
	floodRSSBudget = 540 << 20
	floodRSSMargin = 40 << 20
)

// residentSet is the process's resident set and its peak, from /proc.
func residentSet() (rss, hwm uint64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		var kb uint64
		switch {
		case strings.HasPrefix(l, "VmRSS:"):
			fmt.Sscanf(strings.TrimPrefix(l, "VmRSS:"), "%d", &kb)
			rss = kb << 10
		case strings.HasPrefix(l, "VmHWM:"):
			fmt.Sscanf(strings.TrimPrefix(l, "VmHWM:"), "%d", &kb)
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// The daemon runs under its memory budget as Go's soft memory limit (540 MiB
// under the defaults), or under GOMEMLIMIT when that is lower, and gives the
// limit back when it stops.
func TestMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	for _, tc := range []struct {
		name        string
		env, want   int64 // the limit before (as GOMEMLIMIT sets it), the limit while running
		memoryLimit int64
	}{
		{"defaults", math.MaxInt64, 540 << 20, 0},
		{"GOMEMLIMIT lower", 300 << 20, 300 << 20, 0},
		{"GOMEMLIMIT higher", 900 << 20, 540 << 20, 0},
		{"--memory-limit", math.MaxInt64, 1 << 30, 1 << 30},
		{"none", math.MaxInt64, math.MaxInt64, -1},
	} {
		debug.SetMemoryLimit(tc.env)
		d := startDaemon(t, func(c *Config) { c.MemoryLimit = tc.memoryLimit })
		got := debug.SetMemoryLimit(-1)
		if err := d.stop(); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: memory limit %d MiB while running, want %d MiB", tc.name, got>>20, tc.want>>20)
		}
		if after := debug.SetMemoryLimit(-1); after != tc.env {
			t.Errorf("%s: memory limit %d MiB after, want %d MiB back", tc.name, after>>20, tc.env>>20)
		}
	}
	if _, err := ParseFlags([]string{"--memory-limit=1000"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--memory-limit") {
		t.Errorf("--memory-limit=1000: %v", err)
	}
}
