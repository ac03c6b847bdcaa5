package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// Constraints that leave nothing to search are named with their values and the
// job they had to divide: "the constraints leave no layout to search" alone does
// not say that tp 3 cannot split 64 heads or that ep needs experts.
func TestNoPlanNamesTheConstraints(t *testing.T) {
	e := step.New()
	for _, tc := range []struct {
		cons      planner.Constraints
		framework string
		want      []string
	}{
		{planner.Constraints{TP: []int{3}}, "", []string{"constraints.tp [3]", "64 GPUs", "64 heads", "80 layers", "global batch 1024"}},
		{planner.Constraints{EP: []int{2}, MicroBatch: []int{3}}, "", []string{"constraints.ep [2]", "constraints.micro_batch [3]", "the model has no experts, so ep can only be 1"}},
		// DualPipe is HAI-LLM's (megatron-core refuses the constraint itself).
		{planner.Constraints{PP: []int{7}, Schedules: []step.Schedule{step.DualPipe}}, "hai-llm", []string{"constraints.pp [7]", "constraints.schedules [dualpipe]"}},
	} {
		req := planner.Request{Model: mustModel(t, "llama3-70b"), Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 64, TopK: 3,
			Training: step.Training{SeqLen: 8192, GlobalBatch: 1024, Framework: tc.framework}, Constraints: tc.cons}
		res, err := planner.Search(context.Background(), e, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Top) > 0 || res.Stats.Enumerated > 0 {
			t.Errorf("%+v: %d plans of %d layouts, want none", tc.cons, len(res.Top), res.Stats.Enumerated)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(res.NoPlan, w) {
				t.Errorf("%+v: no plan because %q; want it to say %q", tc.cons, res.NoPlan, w)
			}
		}
	}
}

// One excluded node is "node 3 excluded", several "nodes 3, 7 excluded".
func TestNoPlanExcludedNodes(t *testing.T) {
	e := step.New()
	for _, tc := range []struct {
		exclude []int
		want    string
	}{{[]int{3}, "(node 3 excluded)"}, {[]int{7, 3}, "(nodes 3, 7 excluded)"}} {
		req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 64, TopK: 3,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64}, ExcludeNodes: tc.exclude}
		res, err := planner.Search(context.Background(), e, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Top) > 0 || !strings.Contains(res.NoPlan, tc.want) {
			t.Errorf("exclude %v: %d plans, no plan because %q; want %q", tc.exclude, len(res.Top), res.NoPlan, tc.want)
		}
	}
}

// A node excluded twice is refused by its second entry (the answer said "nodes 3,
// 3 excluded" and counted one node).
func TestExcludedTwiceRefused(t *testing.T) {
	req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 32, TopK: 3,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 64}, ExcludeNodes: []int{3, 5, 3}}
	_, err := planner.Search(context.Background(), step.New(), req)
	if err == nil || !strings.Contains(err.Error(), "exclude_nodes[2]: node 3 is also exclude_nodes[0]") {
		t.Errorf("got %v, want exclude_nodes[2] refused", err)
	}
}

// Layouts that do not fit say what of the request left no room: the memory kept
// free (min_headroom_gb), and an offload is suggested only where one is left to
// ask for. "More GPUs … or offload (constraints.offload) would make room" was said
// with min_headroom_gb 85 of an 85.9 GB GPU, and with the offload already asked.
func TestNoPlanMemoryNamesWhatLeftNoRoom(t *testing.T) {
	e := step.New()
	for _, tc := range []struct {
		model   string
		cons    planner.Constraints
		want    []string
		notWant []string
	}{
		{"llama3-8b", planner.Constraints{MinHeadroomGB: 85}, []string{"constraints.min_headroom_gb 85 GB kept free of each GPU's 85.9 GB"}, nil},
		{"llama3-405b", planner.Constraints{Offload: step.OffloadOptimizer}, []string{"offloading the parameters too (constraints.offload params)"}, []string{"or offload (constraints.offload)"}},
		{"llama3-405b", planner.Constraints{Offload: step.OffloadParams, ZeRO: []int{3}}, []string{"do not fit"}, []string{"offload"}},
		{"llama3-405b", planner.Constraints{}, []string{"or offload (constraints.offload) would make room"}, []string{"min_headroom_gb"}},
	} {
		req := planner.Request{Model: mustModel(t, tc.model), Cluster: mustCluster(t, "dgx-h100", 1), GPUs: 8, TopK: 3,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64}, Constraints: tc.cons}
		res, err := planner.Search(context.Background(), e, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Top) > 0 {
			t.Errorf("%s %+v: %d plans, want none", tc.model, tc.cons, len(res.Top))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(res.NoPlan, w) {
				t.Errorf("%s %+v: no plan because %q; want it to say %q", tc.model, tc.cons, res.NoPlan, w)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(res.NoPlan, w) {
				t.Errorf("%s %+v: no plan because %q; want it not to say %q", tc.model, tc.cons, res.NoPlan, w)
			}
		}
	}
}

// The lists the framework filled in are told apart from those the request gave:
// megatron-lm-2021's cp [1], zero [0] and recompute [none full] were listed as if
// asked for, and its rule that left nothing (interleaving over more than 2
// stages) was not said.
func TestNoPlanTellsTheFrameworksLists(t *testing.T) {
	req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 2), GPUs: 16, TopK: 3,
		Training:    step.Training{SeqLen: 4096, GlobalBatch: 64, Framework: "megatron-lm-2021"},
		Constraints: planner.Constraints{PP: []int{2}, Schedules: []step.Schedule{step.Interleaved}}}
	res, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"constraints.pp [2], ", "constraints.schedules [interleaved], ", "constraints.zero [0] (megatron-lm-2021's)",
		"constraints.recompute [none full] (megatron-lm-2021's)", "megatron-lm-2021 interleaves only pipelines of more than 2 stages"} {
		if len(res.Top) > 0 || !strings.Contains(res.NoPlan, w) {
			t.Errorf("%d plans, no plan because %q; want it to say %q", len(res.Top), res.NoPlan, w)
		}
	}
	if strings.Contains(res.NoPlan, "constraints.pp [2] (") || strings.Contains(res.NoPlan, "constraints.schedules [interleaved] (") {
		t.Errorf("no plan because %q: lists given are the request's", res.NoPlan)
	}
}

// Layouts that do not fit name the pins that kept room out of reach, and do not
// suggest what the search already tried: Llama 3 70B on 16 H100 with zero [0] and
// recompute [none] was told "more GPUs, ZeRO, recomputation or offload
// (constraints.offload) would make room", naming neither pin, and with nothing
// pinned the same, though ZeRO-3 and full recomputation had been searched.
func TestNoPlanMemoryNamesThePins(t *testing.T) {
	e := step.New()
	for _, tc := range []struct {
		cons    planner.Constraints
		want    []string
		notWant []string
	}{
		{planner.Constraints{ZeRO: []int{0}, Recompute: []step.Recompute{step.RecomputeNone}},
			[]string{"a higher ZeRO stage than constraints.zero [0]", "full recomputation (constraints.recompute [none])"}, nil},
		{planner.Constraints{ZeRO: []int{1, 2}}, []string{"a higher ZeRO stage than constraints.zero [1 2]"}, []string{"recomputation"}},
		{planner.Constraints{}, []string{"more GPUs or offload (constraints.offload) would make room"}, []string{"ZeRO", "recomputation"}},
	} {
		req := planner.Request{Model: mustModel(t, "llama3-70b"), Cluster: mustCluster(t, "dgx-h100", 2), GPUs: 16, TopK: 1,
			Training: step.Training{SeqLen: 8192, GlobalBatch: 256}, Constraints: tc.cons}
		res, err := planner.Search(context.Background(), e, req)
		if err != nil || len(res.Top) > 0 {
			t.Fatalf("%+v: %d plans, %v; want none", tc.cons, len(res.Top), err)
		}
		for _, w := range tc.want {
			if !strings.Contains(res.NoPlan, w) {
				t.Errorf("%+v: no plan because %q; want it to say %q", tc.cons, res.NoPlan, w)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(res.NoPlan, w) {
				t.Errorf("%+v: no plan because %q; want it not to say %q", tc.cons, res.NoPlan, w)
			}
		}
	}
}

// When the pipeline schedules searched refuse every pipeline the job divides into,
// the answer says which rule and with what micro-batches, not that no parallel
// degrees divide the job: Llama 3 8B on 32 GPUs with global batch 9, pp [4] and
// interleaved only (tp 8 × pp 4 × dp 1 divides it; the 9 micro-batches are not a
// multiple of pp 4) was told "no parallel degrees divide the job … the global
// batch 9, the 32 layers and the GPU count must share divisors". The rules are
// those estimate states for the same layouts (step.ScheduleRule).
func TestNoPlanNamesTheScheduleRule(t *testing.T) {
	e := step.New()
	for _, tc := range []struct {
		name      string
		model     string
		gpus, gbs int
		framework string
		cons      planner.Constraints
		want      []string
	}{
		{"interleaved-m9", "llama3-8b", 32, 9, "", planner.Constraints{PP: []int{4}, MicroBatch: []int{1}, Schedules: []step.Schedule{step.Interleaved}},
			[]string{"constraints.schedules [interleaved]", "pp 4", "9 micro-batches", "constraints.schedules [interleaved] needs them a multiple of pp 4"}},
		{"dualpipe-m6", "llama3-8b", 32, 6, "hai-llm", planner.Constraints{PP: []int{4}, MicroBatch: []int{1}, Schedules: []step.Schedule{step.DualPipe}},
			[]string{"constraints.schedules [dualpipe]", "6 micro-batches", "constraints.schedules [dualpipe] needs at least 2 × pp = 8"}},
		{"dualpipe-m9", "llama3-8b", 32, 9, "hai-llm", planner.Constraints{PP: []int{4}, MicroBatch: []int{1}, Schedules: []step.Schedule{step.DualPipe}},
			[]string{"9 micro-batches", "constraints.schedules [dualpipe] needs an even number of them"}},
		{"dualpipe-pp3", "llama3-8b", 24, 24, "hai-llm", planner.Constraints{PP: []int{3}, Schedules: []step.Schedule{step.DualPipe}},
			[]string{"constraints.pp [3]", "constraints.schedules [dualpipe] needs an even pp"}},
		{"zb-v-pp3", "llama3-8b", 24, 24, "torchtitan", planner.Constraints{PP: []int{3}, Schedules: []step.Schedule{step.ZeroBubbleV}},
			[]string{"constraints.schedules [zb-v] splits the 32 layers evenly over 2 × pp = 6 chunks"}},
		{"interleaved-v4-pp16", "llama3-8b", 32, 64, "", planner.Constraints{PP: []int{16}, VirtualStages: []int{4}, Schedules: []step.Schedule{step.Interleaved}},
			[]string{"constraints.schedules [interleaved] needs constraints.virtual_stages [4]", "pp 16", "32 layers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := planner.Request{Model: mustModel(t, tc.model), Cluster: mustCluster(t, "dgx-h100", tc.gpus/8), GPUs: tc.gpus, TopK: 3,
				Training: step.Training{SeqLen: 4096, GlobalBatch: tc.gbs, Framework: tc.framework}, Constraints: tc.cons}
			res, err := planner.Search(context.Background(), e, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Top) > 0 {
				t.Fatalf("%d plans, want none", len(res.Top))
			}
			for _, w := range tc.want {
				if !strings.Contains(res.NoPlan, w) {
					t.Errorf("no plan because %q; want it to say %q", res.NoPlan, w)
				}
			}
			if strings.Contains(res.NoPlan, "no parallel degrees divide the job") {
				t.Errorf("no plan because %q: the degrees divide the job, the schedules refuse it", res.NoPlan)
			}
		})
	}
}

// The free GPUs are counted on the nodes that have some: a free map listing every
// node with no GPU free was told "0 are free on 4 of the cluster's 4 nodes".
func TestNoPlanCountsNodesWithFreeGPUs(t *testing.T) {
	for _, tc := range []struct {
		free planner.FreeMap
		want string
	}{
		{planner.FreeMap{0: {}, 1: {}, 2: {}, 3: {}}, "0 are free on 0 of the cluster's 4 nodes"},
		{planner.FreeMap{0: {0, 1, 2, 3}, 1: {}, 2: {4, 5}, 3: {}}, "6 are free on 2 of the cluster's 4 nodes"},
	} {
		req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 4), GPUs: 32, TopK: 3,
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64}, Free: tc.free}
		res, err := planner.Search(context.Background(), step.New(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Top) > 0 || !strings.Contains(res.NoPlan, tc.want) {
			t.Errorf("free %v: %d plans, no plan because %q; want %q", tc.free, len(res.Top), res.NoPlan, tc.want)
		}
	}
}

// Ulysses pinned where tp × cp does not divide the heads leaves nothing, and the
// answer names the pin: Llama 3 8B (32 heads) on 64 GPUs with tp [8], cp [8] and
// cp_all_to_all [true] was told the constraints tp [8] and cp [8] left no layout,
// though ring attention runs them.
func TestNoPlanNamesTheUlyssesPin(t *testing.T) {
	req := planner.Request{Model: mustModel(t, "llama3-8b"), Cluster: mustCluster(t, "dgx-h100", 8), GPUs: 64, TopK: 3,
		Training:    step.Training{SeqLen: 32768, GlobalBatch: 64},
		Constraints: planner.Constraints{TP: []int{8}, CP: []int{8}, CPAllToAll: []bool{true}}}
	res, err := planner.Search(context.Background(), step.New(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"constraints.cp_all_to_all asks only for Ulysses", "tp × cp to divide the 32 heads"} {
		if len(res.Top) > 0 || !strings.Contains(res.NoPlan, w) {
			t.Errorf("%d plans, no plan because %q; want it to say %q", len(res.Top), res.NoPlan, w)
		}
	}
	// With ring attention too, the same pins plan.
	req.Constraints.CPAllToAll = []bool{false, true}
	if res, err := planner.Search(context.Background(), step.New(), req); err != nil || len(res.Top) == 0 {
		t.Errorf("ring or Ulysses: %v, no plan: %s", err, res.NoPlan)
	}
}
