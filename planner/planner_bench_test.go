package planner_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// BenchmarkSearch runs whole searches over a grid of models and job sizes on DGX
// H100 nodes, every dimension open, with a warm estimator (the service keeps one per
// process, so placements of communication groups are cached across requests).
// Reported: ns per search, and per search the layouts enumerated and estimated.
func BenchmarkSearch(b *testing.B) {
	grid := []dgxSearch{
		{"llama3-8b", 8, 8192, 64},
		{"llama3-8b", 64, 8192, 256},
		{"llama3-70b", 256, 8192, 512},
		{"gpt3-175b", 1024, 2048, 1536},
		{"llama3-405b", 4096, 8192, 2048},
		{"gpt3-175b", 16384, 2048, 16384},
		{"llama3-70b", 16384, 8192, 16384},
		{"llama3-70b", 100000, 8192, 100000},
	}
	for _, g := range grid {
		req := g.request(b)
		b.Run(g.name(), func(b *testing.B) { benchmarkWarmSearch(b, req) })
	}
}

// dgxSearch is one search of the benchmarks on DGX H100 nodes: the model, the
// job's GPUs, its sequence length and global batch (sequences).
type dgxSearch struct {
	model    string
	gpus     int
	seq, gbs int
}

// request is the search's request, every dimension open.
func (g dgxSearch) request(b *testing.B) planner.Request {
	return planner.Request{Model: mustModel(b, g.model), Cluster: mustCluster(b, "dgx-h100", g.gpus/8), GPUs: g.gpus,
		Training: step.Training{SeqLen: g.seq, GlobalBatch: g.gbs}}
}

// name is the sub-benchmark's name: model=<model>/gpus=<gpus>.
func (g dgxSearch) name() string { return fmt.Sprintf("model=%s/gpus=%d", g.model, g.gpus) }

// benchmarkWarmSearch times req's search with a warm estimator (one search made
// before the timer) and reports per search the layouts enumerated and estimated.
func benchmarkWarmSearch(b *testing.B, req planner.Request) {
	e := step.New()
	first, err := planner.Search(context.Background(), e, req)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := planner.Search(context.Background(), e, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(first.Stats.Enumerated), "layouts/op")
	b.ReportMetric(float64(first.Stats.Evaluated), "estimated/op")
}

// BenchmarkSearchCold is the first search of a process: a fresh estimator, so every
// communication group's placement and contention coefficients and every pipeline
// schedule's table are built during the search. BenchmarkSearchNewCluster is the
// first search on a cluster in a service that has searched before: the schedules'
// tables, which depend on no cluster, are shared (step.Estimator.ShareSchedules).
func BenchmarkSearchCold(b *testing.B) { benchmarkSearchFresh(b, false) }

// BenchmarkSearchNewCluster: see BenchmarkSearchCold.
func BenchmarkSearchNewCluster(b *testing.B) { benchmarkSearchFresh(b, true) }

func benchmarkSearchFresh(b *testing.B, shareSchedules bool) {
	grid := []dgxSearch{
		{"gpt3-175b", 1024, 2048, 1536},
		{"llama3-70b", 4096, 8192, 4096},
		{"llama3-70b", 16384, 8192, 16384},
		{"llama3-70b", 100000, 8192, 100000},
	}
	for _, g := range grid {
		req := g.request(b)
		b.Run(g.name(), func(b *testing.B) {
			var schedules *step.Schedules
			if shareSchedules {
				schedules = step.NewSchedules()
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := planner.Search(context.Background(), step.New().ShareSchedules(schedules), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSearchNoActivationOffload is BenchmarkSearch's llama3-405b search with
// activation offload not searched (Constraints.OffloadActivations = [false]): the
// space of the planner before activation offload, to tell that capability's cost
// from the rest of the search's.
func BenchmarkSearchNoActivationOffload(b *testing.B) {
	g := dgxSearch{"llama3-405b", 4096, 8192, 2048}
	req := g.request(b)
	req.Constraints.OffloadActivations = []bool{false}
	b.Run(g.name(), func(b *testing.B) { benchmarkWarmSearch(b, req) })
}

// BenchmarkSearchColdFP8 is BenchmarkSearchCold's search in fp8 with Transformer
// Engine's delayed scaling (the default recipe): every layout then prices the
// amax reductions, two all-reduces of a few kilobytes per micro-batch and model
// chunk over a pipeline stage's TP × CP × DP ranks (step's fp8AmaxReduce), on a
// group that spans the stage — up to 6 400 nodes on 102 400 GPUs. On DGX H100 the
// NVLS tree wins those calls; on MI300X nodes (a mesh, no NVLS) the double tree.
func BenchmarkSearchColdFP8(b *testing.B) {
	grid := []struct {
		system   string
		model    string
		gpus     int
		seq, gbs int
	}{
		{"dgx-h100", "gpt3-175b", 1024, 2048, 1536},
		{"dgx-h100", "llama3-70b", 102400, 8192, 25600},
		{"oci-mi300x", "llama3-70b", 16384, 8192, 4096},
	}
	for _, g := range grid {
		req := planner.Request{Model: mustModel(b, g.model), Cluster: mustCluster(b, g.system, g.gpus/8), GPUs: g.gpus,
			Training: step.Training{SeqLen: g.seq, GlobalBatch: g.gbs, Precision: step.FP8}}
		b.Run(fmt.Sprintf("system=%s/model=%s/gpus=%d", g.system, g.model, g.gpus), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := planner.Search(context.Background(), step.New(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSearchDegraded is a search on DGX H100 nodes with every node degraded
// (its NICs at half bandwidth) against none: each placement the search tries records
// the degraded nodes it uses and is priced with their what-ifs, so the degraded
// nodes' bookkeeping must grow with the nodes a placement uses, not with their
// square (docs/planner.md "## Speed").
func BenchmarkSearchDegraded(b *testing.B) {
	for _, nodes := range []int{512, 4096, 16384} {
		for _, all := range []bool{false, true} {
			req := planner.Request{Model: mustModel(b, "llama3-70b"), Cluster: mustCluster(b, "dgx-h100", nodes), GPUs: 8 * nodes,
				Training: step.Training{SeqLen: 8192, GlobalBatch: 8 * nodes}}
			name := "none"
			if all {
				name = "all"
				for n := range nodes {
					req.DegradedNodes = append(req.DegradedNodes, planner.DegradedNode{Node: n, NICSpeed: 0.5})
				}
			}
			b.Run(fmt.Sprintf("nodes=%d/degraded=%s", nodes, name), func(b *testing.B) {
				e := step.New()
				if _, err := planner.Search(context.Background(), e, req); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := planner.Search(context.Background(), e, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
