package planner_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/planner"
)

func mustModel(t testing.TB, name string) model.Arch {
	t.Helper()
	a, err := model.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustCluster(t testing.TB, system string, nodes int) *topology.Cluster {
	t.Helper()
	c, err := catalog.Cluster(system, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func llama8bRequest(t testing.TB) planner.Request {
	return planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 4), GPUs: 32,
		Training: step.Training{SeqLen: 8192, GlobalBatch: 256}, TopK: 5}
}

// Same request → same ranked answer, byte for byte, whatever the parallelism.
func TestDeterministic(t *testing.T) {
	req := llama8bRequest(t)
	var prev []byte
	warm := step.New() // the last two searches share one: its caches change nothing
	for i, workers := range []int{1, 2, 5, 3} {
		r := req
		r.Workers = workers
		e := step.New()
		if i >= 2 {
			e = warm
		}
		res, err := planner.Search(context.Background(), e, r)
		if err != nil {
			t.Fatal(err)
		}
		res.Stats.Elapsed = 0
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && string(b) != string(prev) {
			t.Fatalf("workers=%d gave a different answer", workers)
		}
		prev = b
	}
}

func TestRankingAndStats(t *testing.T) {
	res, err := planner.Search(context.Background(), step.New(), llama8bRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Top) != 5 || len(res.Pareto) == 0 {
		t.Fatalf("%d plans, %d on the Pareto front", len(res.Top), len(res.Pareto))
	}
	for i, p := range res.Top {
		if p.Rank != i+1 || p.GPUs != 32 || p.Estimate.StepTime != p.Score || !p.Estimate.Memory.Fits {
			t.Errorf("plan %d: rank %d, %d GPUs, score %v, step %v, fits %v", i, p.Rank, p.GPUs, p.Score, p.Estimate.StepTime, p.Estimate.Memory.Fits)
		}
		if i > 0 && p.Score < res.Top[i-1].Score {
			t.Errorf("plan %d ranked after a slower one", i+1)
		}
		if n := p.Layout.TP * p.Layout.PP * p.Layout.DP * p.Layout.CP; n != 32 {
			t.Errorf("plan %d uses %d GPUs", i+1, n)
		}
	}
	s := res.Stats
	pruned := 0
	for _, v := range s.Pruned {
		pruned += v
	}
	if s.Enumerated == 0 || s.Evaluated == 0 || s.Feasible == 0 || s.Evaluated > s.Enumerated || s.Elapsed <= 0 {
		t.Errorf("stats %+v", s)
	}
	// The best plan is at least as fast as every plan a full evaluation would find
	// (the time bound prunes only layouts that cannot beat the K-th best).
	full := llama8bRequest(t)
	full.TopK = 1000
	all, err := planner.Search(context.Background(), step.New(), full)
	if err != nil {
		t.Fatal(err)
	}
	if all.Top[0].Score != res.Top[0].Score {
		t.Errorf("pruned search best %v, exhaustive best %v", res.Top[0].Score, all.Top[0].Score)
	}
}

func TestConstraintsAndObjectives(t *testing.T) {
	req := llama8bRequest(t)
	req.Constraints = planner.Constraints{TP: []int{2}, ZeRO: []int{1}, Recompute: []step.Recompute{step.RecomputeFull}}
	res, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Top {
		if p.Layout.TP != 2 || p.Layout.ZeRO != 1 || p.Layout.Recompute != step.RecomputeFull {
			t.Errorf("constraint ignored: %+v", p.Layout)
		}
	}
	// Op-level checkpointing is searched when asked for (not by default).
	req.Constraints.Recompute = []step.Recompute{step.RecomputeOps, step.RecomputeNone}
	ops, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[step.Recompute]bool{}
	for _, p := range ops.Top {
		seen[p.Layout.Recompute] = true
	}
	if len(ops.Top) == 0 || len(seen) > 2 || !(seen[step.RecomputeOps] || seen[step.RecomputeNone]) || seen[step.RecomputeFull] || seen[step.RecomputeSelective] {
		t.Errorf("recompute {ops, none}: plans use %v", seen)
	}
	req = llama8bRequest(t)
	req.Objective, req.PricePerGPUHour, req.TokenBudget = planner.Cost, 2.5, 1e12
	cost, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	if p := cost.Top[0]; !(p.CostUSD > 0) || p.Score != p.CostUSD {
		t.Errorf("cost objective: %+v", p.CostUSD)
	}
	req = llama8bRequest(t)
	req.GPUs, req.MaxGPUs = 0, 32
	req.Objective = planner.Throughput
	thr, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(thr.Stats.GPUCounts, []int{1, 2, 4, 8, 16, 24, 32}) {
		t.Errorf("job sizes %v", thr.Stats.GPUCounts)
	}
	for i := 1; i < len(thr.Top); i++ {
		if thr.Top[i].Estimate.Throughput.TokensPerSecPerGPU > thr.Top[i-1].Estimate.Throughput.TokensPerSecPerGPU {
			t.Errorf("throughput ranking out of order at %d", i)
		}
	}
}

// With a free-GPU map, plans use only free GPUs, no TP group straddles nodes, and
// (with a placement tolerance that accepts any slowdown to keep whole nodes free)
// partially free nodes are filled before whole nodes are broken into.
func TestFreeMapPlacement(t *testing.T) {
	req := llama8bRequest(t)
	req.Cluster = mustCluster(t, "dgx-h100", 6)
	req.GPUs = 16
	req.Free = planner.FreeMap{0: {0, 1, 2, 3}, 1: {4, 5, 6, 7}, 2: {0, 1, 2, 3, 4, 5, 6, 7}, 3: {0, 1, 2, 3, 4, 5, 6, 7}, 5: {2, 3}}
	req.Training.GlobalBatch = 64
	req.PlacementTolerance = new(1.0)
	res, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Top {
		used := 0
		for _, u := range p.Placement.Nodes {
			free := map[int]bool{}
			for _, g := range req.Free[u.Node] {
				free[g] = true
			}
			for _, g := range u.GPUs {
				if !free[g] {
					t.Fatalf("plan %d uses busy GPU %d of node %d", p.Rank, g, u.Node)
				}
			}
			if len(u.GPUs)%p.Layout.TP != 0 {
				t.Errorf("plan %d: node %d holds %d GPUs, not whole TP groups of %d", p.Rank, u.Node, len(u.GPUs), p.Layout.TP)
			}
			used += len(u.GPUs)
		}
		if used != 16 {
			t.Errorf("plan %d places %d GPUs", p.Rank, used)
		}
		if p.Layout.TP <= 4 && p.Placement.FreeWholeNodes < 1 {
			t.Errorf("plan %d (tp %d) broke into both whole free nodes: %+v", p.Rank, p.Layout.TP, p.Placement.Nodes)
		}
	}
	// TP 8 fits only on the two whole nodes.
	req.Constraints.TP = []int{8}
	res8, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res8.Top) == 0 || res8.Top[0].Placement.Nodes[0].Node != 2 || res8.Top[0].Placement.Nodes[1].Node != 3 {
		t.Errorf("TP 8: %d plans, nodes %+v", len(res8.Top), res8.Top[0].Placement.Nodes)
	}
	// 24 GPUs at TP 8 cannot be placed.
	req.GPUs = 24
	res24, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res24.Top) != 0 || res24.Stats.Pruned[planner.PrunedPlacement] == 0 {
		t.Errorf("24 GPUs at TP 8 on two whole nodes: %d plans, pruned %v", len(res24.Top), res24.Stats.Pruned)
	}
}

func TestValidationAndCancellation(t *testing.T) {
	for field, edit := range map[string]func(*planner.Request){
		"gpus":                func(r *planner.Request) { r.GPUs = 1 << 20 },
		"max_gpus":            func(r *planner.Request) { r.GPUs, r.MaxGPUs = 0, 0 },
		"max_gpus: give gpus": func(r *planner.Request) { r.MaxGPUs = 2 * r.GPUs }, // with gpus: not both
		"min_gpus":            func(r *planner.Request) { r.MinGPUs = 1 },          // with gpus: ignored before
		"token_budget":        func(r *planner.Request) { r.PricePerGPUHour = 2 },  // a price alone priced nothing
		// Constraints that filtered nothing, the search answering as if not given:
		"constraints.overlap_ep: asks for":    func(r *planner.Request) { r.Constraints.OverlapEP = []bool{true} }, // dense model
		"constraints.experts_whole: asks for": func(r *planner.Request) { r.Constraints.ExpertsWhole = []bool{true} },
		"constraints.overlap_ep: asks for the expert-parallel all-to-all overlap, but constraints.ep lists no ep above 1": func(r *planner.Request) {
			r.Model, r.Constraints.OverlapEP, r.Constraints.EP = mustModel(t, "mixtral-8x7b"), []bool{true}, []int{1}
		},
		"constraints.cp_all_to_all: asks for": func(r *planner.Request) {
			r.Constraints.CPAllToAll, r.Constraints.CP = []bool{true}, []int{1}
		},
		"constraints.virtual_stages: are interleaving depths": func(r *planner.Request) { // without interleaving: ignored before
			r.Constraints.VirtualStages, r.Constraints.Schedules = []int{4}, []step.Schedule{step.OneFOneB, step.ZeroBubbleV}
		},
		// A pipeline schedule on jobs without a pipeline (pp 1 runs none), and
		// interleaving with no depth above 1: only pp 1 layouts were answered.
		"constraints.schedules: asks for interleaved, but constraints.pp lists no pp above 1": func(r *planner.Request) {
			r.Constraints.Schedules, r.Constraints.PP = []step.Schedule{step.Interleaved}, []int{1}
		},
		"constraints.virtual_stages: lists no interleaving depth above 1": func(r *planner.Request) {
			r.Constraints.Schedules, r.Constraints.VirtualStages = []step.Schedule{step.Interleaved}, []int{1}
		},
		// An offload no ZeRO stage searched runs: the answer was "no layout to
		// search" listing the ZeRO stages, not the offload.
		"constraints.offload: keeps the parameters in host memory, which needs ZeRO 3, but constraints.zero lists [1]": func(r *planner.Request) {
			r.Constraints.Offload, r.Constraints.ZeRO = step.OffloadParams, []int{1}
		},
		"constraints.offload: keeps the optimizer in host memory, which needs ZeRO 1 or more, but constraints.zero lists [0]": func(r *planner.Request) {
			r.Constraints.Offload, r.Constraints.ZeRO = step.OffloadOptimizer, []int{0}
		},
		"constraints.offload: keeps the parameters in host memory, which needs ZeRO 3, but megatron-lm-2021 runs ZeRO 0": func(r *planner.Request) {
			r.Constraints.Offload, r.Training.Framework = step.OffloadParams, "megatron-lm-2021"
		},
		"degraded_nodes[0]: names no degraded part": func(r *planner.Request) { // at full speed it was avoided as if degraded
			r.DegradedNodes = []planner.DegradedNode{{Node: 1, NICSpeed: 1, GPUSpeed: 1}}
		},
		"degraded_nodes[0].node: node 3 is also exclude_nodes[1]": func(r *planner.Request) { // gone: its degradation changed nothing
			r.ExcludeNodes, r.DegradedNodes = []int{2, 3}, []planner.DegradedNode{{Node: 3, NICSpeed: 0.5}}
		},
		"objective":                   func(r *planner.Request) { r.Objective = "speed" },
		"top_k":                       func(r *planner.Request) { r.TopK = -1 },
		"constraints.tp[0]":           func(r *planner.Request) { r.Constraints.TP = []int{0} },
		"constraints.zero[0]":         func(r *planner.Request) { r.Constraints.ZeRO = []int{4} },
		"constraints.recompute[0]":    func(r *planner.Request) { r.Constraints.Recompute = []step.Recompute{"half"} },
		"free_gpus[9]":                func(r *planner.Request) { r.Free = planner.FreeMap{9: {0}} },
		"constraints.min_headroom_gb": func(r *planner.Request) { r.Constraints.MinHeadroomGB = -1 },
		"constraints.max_micro_batch": func(r *planner.Request) { r.Constraints.MaxMicroBatch = -2 },
	} {
		req := llama8bRequest(t)
		edit(&req)
		_, err := planner.Search(context.Background(), step.New(), req)
		if !invalid.Is(err) || !strings.Contains(err.Error(), strings.SplitN(field, ":", 2)[0]+":") || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: got %v", field, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := planner.Search(ctx, step.New(), llama8bRequest(t)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled search: %v", err)
	}
}

// The torchtitan ranking set: interleaved 1F1B beats plain 1F1B for Llama 3.1 405B on
// 512 H100 (TP 8, PP 8, DP 8).
func TestPrefersInterleaving(t *testing.T) {
	req := planner.Request{Model: mustModel(t, "llama3-405b"), Cluster: mustCluster(t, "dgx-h100", 64), GPUs: 512,
		Training: step.Training{SeqLen: 8192, GlobalBatch: 256, Precision: step.FP8},
		Constraints: planner.Constraints{TP: []int{8}, PP: []int{8}, ZeRO: []int{3}, Recompute: []step.Recompute{step.RecomputeFull},
			SP: []bool{true}, UnevenPP: true}, TopK: 50}
	res, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Top) == 0 || res.Top[0].Layout.Schedule != step.Interleaved {
		for _, p := range res.Top[:min(3, len(res.Top))] {
			t.Logf("%d: %+v %.2f s", p.Rank, p.Layout, p.Estimate.StepTime)
		}
		t.Fatal("interleaving not preferred")
	}
}

// Trace hears each phase once, in order, with the counts the result reports; a
// search over the layout limit fails with ErrTooManyLayouts and still ends its phase.
func TestTraceAndLayoutLimit(t *testing.T) {
	type phase struct {
		name  string
		items int
	}
	var got []phase
	open := ""
	req := llama8bRequest(t)
	req.Trace = func(name string) func(int) {
		if open != "" {
			t.Errorf("phase %s began while %s was running", name, open)
		}
		open = name
		return func(n int) { open = ""; got = append(got, phase{name, n}) }
	}
	res, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	kept := res.Stats.Enumerated - res.Stats.Pruned[planner.PrunedMemoryBound] - res.Stats.Pruned[planner.PrunedDivisibility] - res.Stats.Pruned[planner.PrunedPlacement]
	want := []phase{{planner.PhaseEnumerate, kept}, {planner.PhaseEvaluate, res.Stats.Evaluated},
		{planner.PhaseRank, len(res.Top)}, {planner.PhasePareto, len(res.Pareto)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("phases %v, want %v (stats %+v)", got, want, res.Stats)
	}

	got, open = nil, ""
	req.MaxLayouts = res.Stats.Enumerated / 2
	if _, err := planner.Search(context.Background(), step.New(), req); !errors.Is(err, planner.ErrTooManyLayouts) {
		t.Errorf("half the layouts allowed: %v", err)
	}
	if len(got) != 1 || got[0].name != planner.PhaseEnumerate || open != "" {
		t.Errorf("failed search phases %v (open %q)", got, open)
	}
	req.MaxLayouts = res.Stats.Enumerated
	if _, err := planner.Search(context.Background(), step.New(), req); err != nil {
		t.Errorf("exactly the layouts allowed: %v", err)
	}
}

// Constraint lists are sets: order and repeats change nothing, not even tie-breaks.
func TestConstraintListsAreSets(t *testing.T) {
	a := llama8bRequest(t)
	a.Constraints = planner.Constraints{TP: []int{1, 2, 4}, ZeRO: []int{0, 1, 3}, Recompute: []step.Recompute{step.RecomputeNone, step.RecomputeFull}, SP: []bool{false, true}}
	b := llama8bRequest(t)
	b.Constraints = planner.Constraints{TP: []int{4, 1, 2, 4}, ZeRO: []int{3, 1, 0}, Recompute: []step.Recompute{step.RecomputeFull, step.RecomputeNone, step.RecomputeFull}, SP: []bool{true, false}}
	if !reflect.DeepEqual(a.Constraints.Canonical(), b.Constraints.Canonical()) {
		t.Fatalf("canonical forms differ: %+v vs %+v", a.Constraints.Canonical(), b.Constraints.Canonical())
	}
	if b.Constraints.TP[0] != 4 {
		t.Error("Canonical changed its receiver")
	}
	ra, err := planner.Search(context.Background(), step.New(), a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := planner.Search(context.Background(), step.New(), b)
	if err != nil {
		t.Fatal(err)
	}
	ra.Stats.Elapsed, rb.Stats.Elapsed = 0, 0
	ja, _ := json.Marshal(ra)
	jb, _ := json.Marshal(rb)
	if string(ja) != string(jb) {
		t.Error("the same sets in another order gave another answer")
	}
	// An invalid value is still reported at its index in the list as given.
	b.Constraints.ZeRO = []int{3, 1, 7}
	if _, err := planner.Search(context.Background(), step.New(), b); !invalid.Is(err) || !strings.Contains(err.Error(), "constraints.zero[2]:") {
		t.Errorf("invalid ZeRO stage: %v", err)
	}
}

// Ring attention's per-step costs keep the planner from splitting an 8K sequence eight
// ways for a 70B model (1K-token blocks leave too little attention per step to hide the
// K/V exchange under): no plan of the top 5 uses CP 8.
func TestNoEightWayContextParallelAt8K(t *testing.T) {
	req := planner.Request{Model: mustModel(t, "llama3-70b"), Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 64,
		Training: step.Training{SeqLen: 8192, GlobalBatch: 512}, TopK: 5}
	res, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Top) == 0 {
		t.Fatal("no plan")
	}
	for _, p := range res.Top {
		if p.Layout.CP >= 8 {
			t.Errorf("plan %d uses CP %d at 8K tokens: %+v, %.3f s", p.Rank, p.Layout.CP, p.Layout, p.Estimate.StepTime)
		}
	}
}

// Dominated plans (as fast or slower on as many GPUs, with no more headroom) stay out
// of the top K unless asked for; asked for, they are flagged. The best plan is the
// same either way.
func TestDominatedPlansLeftOut(t *testing.T) {
	with := llama8bRequest(t)
	with.TopK, with.IncludeDominated = 20, true
	all, err := planner.Search(context.Background(), step.New(), with)
	if err != nil {
		t.Fatal(err)
	}
	flagged := 0
	for _, p := range all.Top {
		if p.Dominated {
			flagged++
		}
	}
	if flagged == 0 {
		t.Fatal("no dominated plan among the 20 best: the test needs one (e.g. a ZeRO stage that saves memory at no cost)")
	}
	without := llama8bRequest(t)
	without.TopK = 20
	res, err := planner.Search(context.Background(), step.New(), without)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Dominated == 0 || len(res.Top) != 20 {
		t.Errorf("%d plans, %d left out as dominated", len(res.Top), res.Stats.Dominated)
	}
	if res.Top[0].Score != all.Top[0].Score {
		t.Errorf("best plan %v without dominated ones, %v with", res.Top[0].Score, all.Top[0].Score)
	}
	for i, a := range res.Top {
		if a.Dominated {
			t.Errorf("plan %d flagged dominated without IncludeDominated", i+1)
		}
		for j, b := range res.Top {
			if i != j && a.GPUs == b.GPUs && planner.Dominates(b.Estimate.StepTime, b.Estimate.Memory.Headroom, a.Estimate.StepTime, a.Estimate.Memory.Headroom) {
				t.Errorf("plan %d (%.4f s, %.1f GB free) dominated by plan %d (%.4f s, %.1f GB free)", i+1,
					a.Estimate.StepTime, a.Estimate.Memory.Headroom, j+1, b.Estimate.StepTime, b.Estimate.Memory.Headroom)
			}
		}
	}
}

// The planner offers pipelines that divide the layers only when the embedding and
// loss count as layers (126 layers of Llama 3 405B on 16 stages × 4 chunks) without
// uneven_pp.
func TestPlannerCountsEmbeddingAndLoss(t *testing.T) {
	req := planner.Request{Model: mustModel(t, "llama3-405b"), Cluster: mustCluster(t, "dgx-h100", 128), GPUs: 1024,
		Training: step.Training{SeqLen: 8192, GlobalBatch: 512}, TopK: 3,
		Constraints: planner.Constraints{TP: []int{8}, PP: []int{16}, VirtualStages: []int{4}, Schedules: []step.Schedule{step.Interleaved}}}
	res, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Top) == 0 {
		t.Fatalf("no plan with pp 16 × 4 chunks for 126 layers (pruned: %v)", res.Stats.Pruned)
	}
	for _, p := range res.Top {
		s := p.Layout.LayerSplit
		if p.Layout.PP != 16 || p.Layout.VirtualStages != 4 || len(s) != 64 || s[0] != 1 || s[63] != 1 || s[1] != 2 {
			t.Errorf("plan %d: pp %d × %d, split %v", p.Rank, p.Layout.PP, p.Layout.VirtualStages, s)
		}
	}
}

// A range of job sizes holding none the search considers (whole nodes, or sizes
// that divide one) is refused naming max_gpus and the nearest sizes, rather than
// answered with no plan and "the constraints leave no layout to search"
// (9 to 15 GPUs on 8-GPU nodes).
func TestSizeRangeWithoutAJobSizeRefused(t *testing.T) {
	r := llama8bRequest(t)
	r.GPUs, r.MinGPUs, r.MaxGPUs = 0, 9, 15
	_, err := planner.Search(context.Background(), step.New(), r)
	if !invalid.Is(err) || !strings.Contains(err.Error(), "max_gpus:") || !strings.Contains(err.Error(), "8 below") || !strings.Contains(err.Error(), "16 above") {
		t.Errorf("9 to 15 GPUs: %v", err)
	}
	r.MinGPUs, r.MaxGPUs = 3, 3
	if _, err := planner.Search(context.Background(), step.New(), r); !invalid.Is(err) || !strings.Contains(err.Error(), "2 below, 4 above") {
		t.Errorf("3 GPUs: %v", err)
	}
	// 3 to 7 holds 4, which divides a node: searched.
	r.MinGPUs, r.MaxGPUs = 3, 7
	if res, err := planner.Search(context.Background(), step.New(), r); err != nil || len(res.Top) == 0 {
		t.Errorf("3 to 7 GPUs: %v, %d plans", err, len(res.Top))
	}
}
