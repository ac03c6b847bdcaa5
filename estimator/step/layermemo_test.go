package step_test

import (
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
)

// An estimator's layer memo answers each request as a new estimator does, however
// many requests it has seen and in whatever order: requests that share the layer
// memo's hash word (another framework, global batch, rank order, vocabulary,
// schedule, ZeRO stage; CUDA graphs, flash-attn 2) or differ in its words (the
// data-parallel size that torchtitan's DTensor collectives read, the micro-batch's
// shape, the precision, the layout's switches) alike, with other workers pricing
// on it at the same time.
func TestLayerMemoAnswersAsNewEstimator(t *testing.T) {
	base := gpt3Request(t)
	variants := map[string]func(*step.Request){
		"as is":      func(*step.Request) {},
		"torchtitan": func(r *step.Request) { r.Training.Framework, r.Layout.Recompute = "torchtitan", step.RecomputeFull },
		"torchtitan dp 8": func(r *step.Request) {
			r.Training.Framework, r.Layout.Recompute, r.Layout.DP, r.Training.GlobalBatch = "torchtitan", step.RecomputeFull, 8, 768
		},
		"global batch":      func(r *step.Request) { r.Training.GlobalBatch = 768 },
		"rank order":        func(r *step.Request) { r.Layout.RankOrder = "tp-cp-ep-pp-dp" },
		"vocabulary":        func(r *step.Request) { r.Model.Vocab += 128 },
		"unfused attention": func(r *step.Request) { r.Training.UnfusedAttention = true },
		"fp8":               func(r *step.Request) { r.Training.Precision = step.FP8 },
		"recompute mlp":     func(r *step.Request) { r.Layout.RecomputeModules = []string{"mlp"} },
		"offload":           func(r *step.Request) { r.Layout.OffloadActivations = true },
		"micro-batch 2":     func(r *step.Request) { r.Layout.MicroBatch = 2 },
		"no sp":             func(r *step.Request) { r.Layout.SP = false },
		"other cluster":     func(r *step.Request) { r.Cluster = cluster(t, "dgx-a100", 128) },
		"cuda graphs":       func(r *step.Request) { r.Training.CUDAGraphs = true },
		"flash attention 2": func(r *step.Request) { r.Training.FlashAttention2 = true },
		"sequence 4096":     func(r *step.Request) { r.Training.SeqLen = 4096 },
		"interleaved 2":     func(r *step.Request) { r.Layout.VirtualStages = 2 },
		"one f one b":       func(r *step.Request) { r.Layout.Schedule, r.Layout.VirtualStages = step.OneFOneB, 1 },
		"overlap tp":        func(r *step.Request) { r.Layout.OverlapTP = true },
		"tp 4 pp 16":        func(r *step.Request) { r.Layout.TP, r.Layout.PP, r.Layout.VirtualStages = 4, 16, 2 },
		"cp 2":              func(r *step.Request) { r.Layout.CP, r.Layout.DP = 2, 8 },
		"full recompute":    func(r *step.Request) { r.Layout.Recompute = step.RecomputeFull },
		"ops recompute":     func(r *step.Request) { r.Layout.Recompute = step.RecomputeOps },
		"zero 0 no overlap": func(r *step.Request) { r.Layout.ZeRO = 0 },
		"megatron-deepspeed": func(r *step.Request) {
			r.Training.Framework, r.Layout.Schedule, r.Layout.VirtualStages = "megatron-deepspeed", step.OneFOneB, 1
		},
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range variants {
			if !yield(n) {
				return
			}
		}
	})
	want := map[string]step.Result{}
	reqs := map[string]step.Request{}
	for _, n := range names {
		r := base
		variants[n](&r)
		res, err := step.New().Estimate(r)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		reqs[n], want[n] = r, res
	}
	// Four workers share the estimator (its memos are read and filled
	// concurrently; go test -race checks their locks), each in its own order.
	shared := step.New()
	var wg sync.WaitGroup
	for w := range 4 {
		order := append(slices.Clone(names), names...)
		slices.Reverse(order[len(names):])
		order = append(order[w*len(order)/4:], order[:w*len(order)/4]...)
		wg.Go(func() {
			for _, n := range order {
				got, err := shared.Estimate(reqs[n])
				if err != nil {
					t.Errorf("%s: %v", n, err)
					return
				}
				if !reflect.DeepEqual(got, want[n]) {
					t.Errorf("%s: step %.9g s after other requests, %.9g s from a new estimator", n, got.StepTime, want[n].StepTime)
				}
			}
		})
	}
	wg.Wait()
}
