package step

import (
	"github.com/stepcost/stepcost/estimator/invalid"
)

// ScheduleRule is what the framework that runs a pipeline schedule requires of a
// layout, as its source checks it: a layout that breaks a rule does not start (the
// framework raises or asserts), so Estimate refuses it and a search never lists it.
type ScheduleRule struct {
	Schedule Schedule `json:"schedule"`
	// Source is the framework and the check the rule transcribes.
	Source string `json:"source"`
	// MinPP is the fewest pipeline ranks the schedule runs on; EvenPP asks for an
	// even number of them.
	MinPP  int  `json:"min_pp"`
	EvenPP bool `json:"even_pp,omitempty"`
	// Chunks is the model chunks per pipeline rank the schedule runs (0: any number
	// from MinChunks, the interleaving depth).
	Chunks    int `json:"chunks,omitempty"`
	MinChunks int `json:"min_chunks,omitempty"`
	// The micro-batches per replica (M): a multiple of pp, even, at least
	// MinMicroBatchesPerPP × pp.
	MicroBatchesMultipleOfPP bool `json:"micro_batches_multiple_of_pp,omitempty"`
	EvenMicroBatches         bool `json:"even_micro_batches,omitempty"`
	MinMicroBatchesPerPP     int  `json:"min_micro_batches_per_pp,omitempty"`
	// EvenChunkSplit: the layers split evenly over pp × chunks, no layer_split and
	// no accounting for the embedding or loss.
	EvenChunkSplit bool `json:"even_chunk_split,omitempty"`
	// ModelCopies is how many copies of a stage's parameters each rank holds.
	ModelCopies int `json:"model_copies"`
}

// scheduleRules are the schedules' rules, in the order of Schedules.
var scheduleRules = [...]ScheduleRule{
	{Schedule: GPipe, Source: "GPipe (Huang et al. 2019); torch.distributed.pipelining ScheduleGPipe",
		MinPP: 1, Chunks: 1, ModelCopies: 1},
	{Schedule: OneFOneB, Source: "Megatron-LM core/pipeline_parallel/schedules.py forward_backward_pipelining_without_interleaving",
		MinPP: 1, Chunks: 1, ModelCopies: 1},
	// forward_backward_pipelining_with_interleaving raises "number of microbatches
	// is not divisible by pipeline-model-parallel-size when using interleaved
	// schedule"; its model chunks are the virtual pipeline stages (≥ 2, else the
	// plain schedule runs).
	{Schedule: Interleaved, Source: "Megatron-LM core/pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving",
		MinPP: 2, MinChunks: 2, MicroBatchesMultipleOfPP: true, ModelCopies: 1},
	// --enable-zero-bubble without the V: one chunk per rank.
	{Schedule: ZeroBubble, Source: "sail-sg/zero-bubble-pipeline-parallelism --enable-zero-bubble (ZB-H1)",
		MinPP: 1, Chunks: 1, ModelCopies: 1},
	// --zero-bubble-v-schedule asserts virtual_pipeline_model_parallel_size == 2;
	// the V places chunk k on rank k and chunk 2P−1−k, layers evenly.
	{Schedule: ZeroBubbleV, Source: "sail-sg/zero-bubble-pipeline-parallelism --zero-bubble-v-schedule (asserts virtual pipeline size 2)",
		MinPP: 2, Chunks: 2, EvenChunkSplit: true, ModelCopies: 1},
	// DualPipe.step asserts num_ranks % 2 == 0 and num_chunks % 2 == 0 and
	// num_chunks >= num_ranks * 2; each rank holds stages s and P−1−s.
	{Schedule: DualPipe, Source: "deepseek-ai/DualPipe dualpipe.py DualPipe.step",
		MinPP: 2, EvenPP: true, Chunks: 1, EvenMicroBatches: true, MinMicroBatchesPerPP: 2, ModelCopies: 2},
}

// ScheduleRules lists every pipeline schedule's rules.
func ScheduleRules() []ScheduleRule { return scheduleRules[:] }

// RuleOf is the schedule's rules, false for an unknown schedule.
func RuleOf(s Schedule) (ScheduleRule, bool) {
	if r := ruleOf(s); r != nil {
		return *r, true
	}
	return ScheduleRule{}, false
}

// ruleOf is RuleOf by address (nil: unknown), without copying each rule it
// passes (every estimate validates its schedule).
func ruleOf(s Schedule) *ScheduleRule {
	for i := range scheduleRules {
		if scheduleRules[i].Schedule == s {
			return &scheduleRules[i]
		}
	}
	return nil
}

// Allows says the schedule's framework runs pp ranks of v chunks each with m
// micro-batches per replica over layers layers split evenly (split false) or by a
// layer split; a pipeline of one rank runs any schedule as plain forward and
// backward passes.
func (r ScheduleRule) Allows(pp, v, m, layers int, split bool) bool {
	return r.check(nil, pp, v, m, layers, split)
}

// check tests the rule, adding each broken one to c (when not nil) under the
// field it concerns.
func (r *ScheduleRule) check(c *invalid.Collector, pp, v, m, layers int, split bool) bool {
	ok := true
	bad := func(field, format string, args ...any) {
		ok = false
		if c != nil {
			c.Add(field, format+" (%s)", append(args, r.Source)...)
		}
	}
	switch {
	case pp < r.MinPP:
		bad("layout.schedule", "%s needs pp ≥ %d (got pp %d)", r.Schedule, r.MinPP, pp)
	case r.EvenPP && pp%2 != 0:
		bad("layout.pp", "%s needs an even pp (got %d)", r.Schedule, pp)
	}
	switch {
	case r.Chunks > 0 && v != r.Chunks && r.Chunks == 1:
		bad("layout.virtual_stages", "%s runs one chunk per pipeline rank (got %d); interleaving needs schedule %s", r.Schedule, v, Interleaved)
	case r.Chunks > 0 && v != r.Chunks:
		bad("layout.virtual_stages", "%s runs %d chunks per pipeline rank (got %d)", r.Schedule, r.Chunks, v)
	case v < r.MinChunks:
		bad("layout.virtual_stages", "%s needs at least %d chunks per pipeline rank (got %d)", r.Schedule, r.MinChunks, v)
	}
	if pp >= 2 && m >= 1 {
		switch {
		case r.MicroBatchesMultipleOfPP && m%pp != 0:
			bad("layout.micro_batch", "%s needs the %d micro-batches per replica to be a multiple of pp %d", r.Schedule, m, pp)
		case r.EvenMicroBatches && m%2 != 0:
			bad("layout.micro_batch", "%s needs an even number of micro-batches per replica (got %d)", r.Schedule, m)
		case m < r.MinMicroBatchesPerPP*pp:
			bad("layout.micro_batch", "%s needs at least %d × pp = %d micro-batches per replica (got %d)", r.Schedule, r.MinMicroBatchesPerPP, r.MinMicroBatchesPerPP*pp, m)
		}
	}
	if r.EvenChunkSplit && pp >= 2 {
		switch {
		case split:
			bad("layout.layer_split", "%s splits the layers evenly over its %d × pp chunks (the first rank holds the embedding and the loss)", r.Schedule, max(1, r.Chunks))
		case layers%(max(1, r.Chunks)*pp) != 0:
			bad("layout.schedule", "%s splits the %d layers evenly over %d × pp = %d chunks, which must divide them", r.Schedule, layers, max(1, r.Chunks), max(1, r.Chunks)*pp)
		}
	}
	return ok
}

// validateSchedule checks the layout against its schedule's framework rules;
// m is the micro-batches per replica (0 when the batch does not divide, which
// validate reports on its own).
func validateSchedule(c *invalid.Collector, l *Layout, m, layers int) {
	r := ruleOf(l.Schedule)
	if r == nil {
		c.Add("layout.schedule", "must be gpipe, 1f1b, interleaved, zb-h1, zb-v or dualpipe (got %q)", l.Schedule)
		return
	}
	split := len(l.LayerSplit) > 0 || l.AccountForEmbedding || l.AccountForLoss
	r.check(c, l.PP, l.VirtualStages, m, layers, split)
}
