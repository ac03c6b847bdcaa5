// Package planner searches the ways to run a training job on a cluster — every
// tensor, pipeline, context, expert and data-parallel split, ZeRO stage, micro-batch,
// recomputation, sequence-parallel and schedule choice, and the GPU count — places
// each on the cluster's free GPUs, prices it with the step-cost model and ranks the
// plans by the requested objective.
package planner

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Objective is what the ranking minimises.
type Objective string

const (
	FastestStep Objective = "step_time"  // shortest step
	Throughput  Objective = "throughput" // most tokens per second per GPU
	Cost        Objective = "cost"       // cheapest to train TokenBudget tokens at PricePerGPUHour
)

// Constraints narrow the search. Empty lists allow every valid value; a list is a
// set (order and repeats do not matter: see Canonical).
type Constraints struct {
	TP            []int            `json:"tp,omitempty"`
	PP            []int            `json:"pp,omitempty"`
	CP            []int            `json:"cp,omitempty"`
	EP            []int            `json:"ep,omitempty"`
	ZeRO          []int            `json:"zero,omitempty"`
	MicroBatch    []int            `json:"micro_batch,omitempty"`
	VirtualStages []int            `json:"virtual_stages,omitempty"`
	Recompute     []step.Recompute `json:"recompute,omitempty"`
	SP            []bool           `json:"sp,omitempty"`
	Schedules     []step.Schedule  `json:"schedules,omitempty"`
	// OverlapTP lists whether TP communication overlaps the GEMMs (step.Layout's
	// OverlapTP, with TP and SP only); empty: both searched.
	OverlapTP []bool `json:"overlap_tp,omitempty"`
	// OverlapEP says whether MoE layouts overlap the expert-parallel all-to-alls
	// (step.Layout's OverlapEP) where the framework runs it (ep > 1, no pipeline or
	// the interleaved schedule, no full recomputation): empty or listing true, on
	// there (never slower, the same memory); [false]: off.
	OverlapEP []bool `json:"overlap_ep,omitempty"`
	// CPAllToAll lists the context-parallel variants to search (step.Layout's
	// CPAllToAll): false ring attention, true Ulysses all-to-alls (where tp × cp
	// divides the heads); empty: ring only.
	CPAllToAll []bool `json:"cp_all_to_all,omitempty"`
	// ExpertsWhole lists whether MoE layouts with TP and SP hold each expert whole
	// on every TP rank (step.Layout's ETP 1: Megatron-Core's MoE parallel folding,
	// --expert-tensor-parallel-size, from Megatron-Core 0.10) or split it like the
	// dense MLP (ETP = TP); empty: both. [false] is a framework without the
	// setting: NeMo 24.12 (NeMo 2.1) passes no expert tensor-parallel size to
	// Megatron-Core (megatron_init.py, initialize_model_parallel_for_nemo; its
	// strategies' initialize_model_parallel calls), which then takes TP's.
	ExpertsWhole []bool `json:"experts_whole,omitempty"`
	// FP8Params lists whether the matmul weights are stored in fp8 (step.Layout's
	// FP8Params, with precision fp8 only); empty: on where the framework stores
	// them (Megatron-Core, NeMo), else off.
	FP8Params []bool `json:"fp8_params,omitempty"`
	// OffloadActivations lists whether the saved activations go to host memory
	// (step.Layout's OffloadActivations, with 1F1B or interleaved pipelines);
	// empty: tried where the framework runs it (Megatron-Core, NeMo) for layouts
	// that fit in memory no other way.
	OffloadActivations []bool `json:"offload_activations,omitempty"`
	// TPAcrossNodes allows TP groups larger than a node.
	TPAcrossNodes bool `json:"tp_across_nodes,omitempty"`
	// UnevenPP allows pipeline splits that do not divide the layers evenly.
	UnevenPP bool `json:"uneven_pp,omitempty"`
	// EvenSplit keeps to layouts whose pipeline stages, and the model chunks of an
	// interleaved one, hold the same number of layers: a framework that splits no
	// other way (Megatron-LM of 2021: megatron/model/transformer.py asserts
	// num_layers % pipeline_model_parallel_size == 0, and arguments.py a whole
	// number of layers per virtual stage).
	EvenSplit bool `json:"even_split,omitempty"`
	// MinHeadroomGB is the memory each GPU must keep free.
	MinHeadroomGB float64 `json:"min_headroom_gb,omitempty"`
	// MaxMicroBatch bounds micro-batch sizes when MicroBatch is empty (default 16).
	MaxMicroBatch int `json:"max_micro_batch,omitempty"`
	// interleaveOver2 keeps interleaving to pipelines of more than 2 stages: set
	// by the search for a framework that interleaves no others
	// (framework.Runs.EvenLayerSplit, Megatron-LM of 2021).
	interleaveOver2 bool
	// zeroWithPipeline, when not empty, are the ZeRO stages searched with a
	// pipeline: set by the search for a framework that runs fewer there
	// (framework.Runs.ZeROWithPipeline, DeepSpeed's pipeline engine).
	zeroWithPipeline []int
	// oneMicroBatch keeps layouts without a pipeline to one micro-batch a step
	// (the micro-batch the local batch): set by the search for a framework
	// without gradient accumulation (framework.Runs.NoGradAccumulation).
	oneMicroBatch bool
	// zeroWithoutPipeline, when not empty, are the ZeRO stages searched without a
	// pipeline, where a framework runs other stages with one
	// (framework.Runs.ZeRO beside ZeROWithPipeline); ddpAlone keeps ZeRO 0 with
	// data parallelism to layouts without TP, PP or CP (framework.Runs.DDPAlone).
	zeroWithoutPipeline []int
	ddpAlone            bool
	// fp8Sharded keeps layouts with fp8 weights to ZeRO 1 and more
	// (framework.Runs.FP8ParamsSharded).
	fp8Sharded bool
	// Offload searches layouts that keep this state in host memory (step.Layout's
	// Offload): optimizer (ZeRO 1–3 only) or params (ZeRO-3 only); empty or none:
	// no offload.
	Offload step.Offload `json:"offload,omitempty"`
}

// Canonical returns the constraints with each list sorted (in the order the search
// enumerates: ascending numbers, none < selective < ops < full recomputation, gpipe < 1f1b
// < interleaved, SP off < on) and without repeats, so that equal sets give the same
// search, tie-breaks included, and the same cache key. The receiver is not changed.
func (c Constraints) Canonical() Constraints {
	c.TP, c.PP, c.CP, c.EP = sortedSet(c.TP), sortedSet(c.PP), sortedSet(c.CP), sortedSet(c.EP)
	c.ZeRO, c.MicroBatch, c.VirtualStages = sortedSet(c.ZeRO), sortedSet(c.MicroBatch), sortedSet(c.VirtualStages)
	c.Recompute = orderedSet(c.Recompute, []step.Recompute{step.RecomputeNone, step.RecomputeSelective, step.RecomputeOps, step.RecomputeFull})
	c.Schedules = orderedSet(c.Schedules, []step.Schedule{step.GPipe, step.OneFOneB, step.Interleaved, step.ZeroBubble, step.ZeroBubbleV, step.DualPipe})
	c.SP = orderedSet(c.SP, []bool{false, true})
	c.OverlapTP = orderedSet(c.OverlapTP, []bool{false, true})
	c.OverlapEP = orderedSet(c.OverlapEP, []bool{false, true})
	c.CPAllToAll = orderedSet(c.CPAllToAll, []bool{false, true})
	c.ExpertsWhole = orderedSet(c.ExpertsWhole, []bool{false, true})
	c.FP8Params = orderedSet(c.FP8Params, []bool{false, true})
	c.OffloadActivations = orderedSet(c.OffloadActivations, []bool{false, true})
	return c
}

func sortedSet(v []int) []int {
	if len(v) == 0 {
		return nil
	}
	out := slices.Clone(v)
	slices.Sort(out)
	return slices.Compact(out)
}

// orderedSet keeps the values of v that appear in order, in that order, then any
// others (invalid ones, left for validation to report) as given.
func orderedSet[T comparable](v, order []T) []T {
	if len(v) == 0 {
		return nil
	}
	out := make([]T, 0, len(v))
	for _, o := range order {
		if slices.Contains(v, o) {
			out = append(out, o)
		}
	}
	for _, x := range v {
		if !slices.Contains(order, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// DegradedNode is one node with a degraded part, where a scheduler knows it to be:
// its GPU that computes slower (GPUSpeed, as Request.SlowGPUSpeed), its NICs
// (NICSpeed, as DegradedNICSpeed) or one of its GPUs' scale-up links (LinkSpeed,
// as DegradedLinkSpeed), each a fraction of its speed, 0 for none.
type DegradedNode struct {
	Node      int     `json:"node"`
	GPUSpeed  float64 `json:"gpu_speed,omitempty"`
	NICSpeed  float64 `json:"nic_speed,omitempty"`
	LinkSpeed float64 `json:"link_speed,omitempty"`
}

// Request is one search.
type Request struct {
	Model    model.Arch
	Training step.Training
	Cluster  *topology.Cluster
	// GPUs is the job size; or give MinGPUs..MaxGPUs ("up to MaxGPUs" with MinGPUs 0)
	// and the planner also chooses the size.
	GPUs, MinGPUs, MaxGPUs int
	// Free lists the free GPUs per node; nil: the whole cluster is free.
	Free        FreeMap
	Constraints Constraints
	Objective   Objective
	// PricePerGPUHour and TokenBudget define the Cost objective (and the cost
	// reported with every plan when set).
	PricePerGPUHour float64
	TokenBudget     float64
	// TopK is how many plans to return (default 10).
	TopK int
	// IncludeDominated keeps dominated plans in the top K (flagged): plans another
	// evaluated plan on as many GPUs beats on step time without less memory headroom,
	// or on headroom without a longer step. By default they are left out.
	IncludeDominated bool
	// SlowGPUSpeed is the what-if of step.Request.SlowGPUSpeed: one GPU of every job
	// size computes at this fraction of its speed (0: none).
	SlowGPUSpeed float64
	// DegradedNICSpeed and DegradedLinkSpeed are the what-ifs of step.Request: one
	// node's NICs, or one GPU's scale-up link, at this fraction of their bandwidth
	// (0: none).
	DegradedNICSpeed, DegradedLinkSpeed float64
	// PlacementTolerance is how much better (a share of the objective) a layout must
	// do on a placement that leaves fewer whole nodes free to be preferred to one
	// that keeps them free (nil: DefaultPlacementTolerance; 0 keeps whichever
	// placement scores better).
	PlacementTolerance *float64
	// ExcludeNodes, a what-if: these nodes are gone (failed, drained) and the job
	// runs on the others' free GPUs — the N−1 question after a node fails.
	ExcludeNodes []int
	// DegradedNodes, located what-ifs: these nodes have a degraded part. The
	// planner places each job size on the other nodes when the free GPUs there can
	// host it, and otherwise on them too, priced with the degradation (the what-ifs
	// above, applied to the job); each plan's placement says which degraded nodes
	// it used and which it avoided.
	DegradedNodes []DegradedNode
	// avoid is the free map without the degraded nodes (normalise; nil without
	// DegradedNodes).
	avoid FreeMap
	// readmitOrders are the orders in which the degraded nodes are taken back when
	// the others cannot host a job (normalise): mildest first by the slowest part,
	// and sparing each kind of part in turn (readmitOrders).
	readmitOrders [][]int
	// degradedAt[node] is the node's index in DegradedNodes, -1 for a healthy node
	// (normalise; nil without DegradedNodes): each placement looks its nodes up.
	degradedAt []int32
	// busy are the GPUs other jobs hold (node → local GPUs): those a free map leaves
	// out, but for excluded nodes (normalise; nil without a free map).
	busy map[int][]int
	// Workers evaluates candidates in parallel (default: all CPUs).
	Workers int
	// MaxLayouts stops a search that would enumerate more layouts than this with
	// ErrTooManyLayouts (0: no limit). Enumeration memory grows with it (about 100
	// bytes a layout), so a service bounds it per request.
	MaxLayouts int
	// Trace, when set, is told when each phase of the search starts; the returned
	// function is called when it ends, with the number of items it produced. The
	// phases are PhaseEnumerate (layouts kept), PhaseEvaluate (layouts estimated),
	// PhaseRank (top plans) and PhasePareto (front plans).
	Trace func(phase string) (end func(items int))
}

// The phases of a search, as given to Request.Trace.
const (
	PhaseEnumerate = "enumerate"
	PhaseEvaluate  = "evaluate"
	PhaseRank      = "rank"
	PhasePareto    = "pareto"
)

// DefaultMaxMicroBatch is Constraints.MaxMicroBatch when it is 0: a bound on the
// search's space (policy, not a property of the hardware; 12 of the published runs
// use 16 sequences, 2 use 32).
const DefaultMaxMicroBatch = 16

// DefaultTopK is how many plans a search returns when Request.TopK is 0.
const DefaultTopK = 10

// MaxTopK is the most plans a search returns: an answer a scheduler or a person can
// still read, and a bound on the ranked list the search keeps.
const MaxTopK = 1000

// Bounds of Request.PricePerGPUHour and TokenBudget: far beyond any real price or
// training run, and small enough that every cost stays finite.
const (
	MaxPricePerGPUHour = 1e6
	MaxTokenBudget     = 1e18
)

// MinPricePerGPUHour is the least price a request may give (0 aside: no price): a
// millionth of a dollar per GPU-hour, far below any real price (GPU-hours sell for
// tens of cents to tens of dollars), and large enough that no cost underflows. A
// price has no physical minimum, but the cost of one step is price × GPUs × step
// time / 3600: at 5e-324 dollars (the smallest float) it is 0, and the plans ranked
// by cost all tie at a cost of nothing.
const MinPricePerGPUHour = 1e-6

// CheckPrice checks a price per GPU-hour and a token budget (0 for none), naming the
// field at fault.
func CheckPrice(price, budget float64) error {
	c := invalid.Collector{}
	if !(price == 0 || price >= MinPricePerGPUHour && price <= MaxPricePerGPUHour) {
		c.Add("price_per_gpu_hour", "must be 0 (none) or from %g to %g US dollars (got %v)", MinPricePerGPUHour, MaxPricePerGPUHour, price)
	}
	if !(budget >= 0 && budget <= MaxTokenBudget) {
		c.Add("token_budget", "must be between 0 and %g tokens (got %v)", MaxTokenBudget, budget)
	}
	return c.Err()
}

// CheckTokenBudget refuses a token budget (0 for none) below one step's tokens
// (global batch × sequence length): a run trains whole steps, and the cost of a
// fraction of one (a budget of 1e-300 tokens priced at 1e-308 dollars) answers no
// question.
func CheckTokenBudget(budget float64, t step.Training) error {
	tokens, of := float64(t.GlobalBatch)*float64(t.SeqLen), fmt.Sprintf("global_batch %d × seq_len %d", t.GlobalBatch, t.SeqLen)
	if t.GlobalBatch == 0 {
		tokens, of = float64(t.GlobalTokens), "global_tokens"
	}
	if budget > 0 && tokens > 0 && budget < tokens {
		return invalid.Field("token_budget", "must be at least one step's %.0f tokens (%s): a run trains whole steps (got %v)", tokens, of, budget)
	}
	return nil
}

// CheckObjective is the rule of an objective with its price and budget: both in
// range (CheckPrice, checked first), the objective one of the planner's, and cost
// given a price and a budget to cost.
func CheckObjective(obj Objective, price, budget float64) error {
	if err := CheckPrice(price, budget); err != nil {
		return err
	}
	switch obj {
	case "", FastestStep, Throughput:
		if price > 0 && !(budget > 0) { // cost_usd prices the budget: alone, the price would change nothing
			return invalid.Field("token_budget", "is 0, so price_per_gpu_hour %v prices nothing: give the tokens to train (cost_usd is the budget's cost)", price)
		}
	case Cost:
		if !(price > 0) || !(budget > 0) {
			return invalid.Field("objective", "%s needs price_per_gpu_hour > 0 and token_budget > 0", Cost)
		}
	default:
		return invalid.Field("objective", "must be step_time, throughput or cost (got %q)", obj)
	}
	return nil
}

// ErrTooManyLayouts is returned when a search would enumerate more than
// Request.MaxLayouts layouts.
var ErrTooManyLayouts = errors.New("the search spans too many layouts")

// Plan is one way to run the job.
type Plan struct {
	Rank      int         `json:"rank"`
	GPUs      int         `json:"gpus"`
	Layout    step.Layout `json:"layout"`
	Placement Placement   `json:"placement"`
	Estimate  step.Result `json:"estimate"`
	// Score is the objective's value: seconds per step, negative tokens/s per GPU, or
	// dollars for the token budget.
	Score float64 `json:"score"`
	// CostUSD to train the token budget, when a price and budget are given.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Dominated: another evaluated plan on as many GPUs is no slower and keeps at
	// least as much memory headroom, and is better in one (only with
	// Request.IncludeDominated).
	Dominated bool `json:"dominated,omitempty"`
}

// Dominates says whether a plan of step time stepA and headroom headA dominates one
// of stepB and headB on the same number of GPUs: no slower, no less headroom, and
// strictly better in one. For a fixed GPU count every objective orders plans as the
// step time does (tokens per GPU-second and cost are monotone in it), so a dominated
// plan is never the better choice.
func Dominates(stepA, headA, stepB, headB float64) bool {
	return stepA <= stepB && headA >= headB && (stepA < stepB || headA > headB)
}

// Stats count what the search did.
type Stats struct {
	Enumerated int            `json:"enumerated"`
	Pruned     map[string]int `json:"pruned"`
	Evaluated  int            `json:"evaluated"`
	Feasible   int            `json:"feasible"`
	// Dominated counts feasible plans left out of the top K because another
	// feasible plan taken dominates them (all of them, wherever they would rank).
	Dominated int           `json:"dominated"`
	GPUCounts []int         `json:"gpu_counts"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	// refused counts the pipelines the job divides into that no schedule
	// searched runs; firstRefused is the first in enumeration order of those
	// with the most micro-batches per replica (noPlanReason says which rule
	// refused it).
	refused      int
	firstRefused refusal
}

// Result of a search.
type Result struct {
	Top    []Plan `json:"top"`
	Pareto []Plan `json:"pareto"` // GPUs × step time × memory headroom, among evaluated plans
	Stats  Stats  `json:"stats"`
	// NoPlan says why, when the search found no plan.
	NoPlan string `json:"no_plan,omitempty"`
}

// Pruning reasons.
const (
	PrunedDivisibility = "divisibility"
	PrunedPlacement    = "placement"
	PrunedMemoryBound  = "memory_lower_bound"
	PrunedTimeBound    = "time_lower_bound"
	PrunedMemory       = "memory"
	// PrunedDominatedBound: an evaluated plan on as many GPUs has a better score than
	// the layout's lower bound and at least its memory headroom.
	PrunedDominatedBound = "dominated_bound"
	PrunedInvalid        = "invalid"
)

// Tolerance is the placement tolerance the search uses: PlacementTolerance, or
// DefaultPlacementTolerance when it is unset.
func (r *Request) Tolerance() float64 {
	if r.PlacementTolerance == nil {
		return DefaultPlacementTolerance
	}
	return *r.PlacementTolerance
}

func (r *Request) validate() error {
	c := invalid.Collector{}
	if r.Cluster == nil {
		c.Add("cluster", "is required")
		return c.Err()
	}
	if err := r.Model.ValidateAt("model."); err != nil {
		c.Join(err)
	}
	c.Join(step.CheckWhatIfs(r.SlowGPUSpeed, r.DegradedNICSpeed, r.DegradedLinkSpeed, r.Cluster))
	if v := r.PlacementTolerance; v != nil && !(*v >= 0 && *v <= 1) {
		c.Add("placement_tolerance", "must be between 0 and 1 (unset: %g) (got %v)", DefaultPlacementTolerance, *v)
	}
	excluded := map[int]int{}
	for i, n := range r.ExcludeNodes {
		if n < 0 || n >= r.Cluster.Spec.Nodes {
			c.Add(fmt.Sprintf("exclude_nodes[%d]", i), "node %d is not in the cluster's %d nodes", n, r.Cluster.Spec.Nodes)
		} else if j, dup := excluded[n]; dup {
			c.Add(fmt.Sprintf("exclude_nodes[%d]", i), "node %d is also exclude_nodes[%d]", n, j)
		} else {
			excluded[n] = i
		}
	}
	degraded := map[int]int{}
	for i, d := range r.DegradedNodes {
		field := fmt.Sprintf("degraded_nodes[%d]", i)
		k, gone := excluded[d.Node]
		switch j, dup := degraded[d.Node]; {
		case d.Node < 0 || d.Node >= r.Cluster.Spec.Nodes:
			c.Add(field+".node", "node %d is not in the cluster's %d nodes", d.Node, r.Cluster.Spec.Nodes)
		case dup:
			c.Add(field+".node", "node %d is also degraded_nodes[%d]; give its parts in one entry", d.Node, j)
		case gone:
			c.Add(field+".node", "node %d is also exclude_nodes[%d]: the job runs on no excluded node, so its degradation would change nothing", d.Node, k)
		default:
			degraded[d.Node] = i
		}
		// A part at 1 runs at full speed: such a node is healthy, and the search
		// would avoid it as degraded.
		if d.slowest() >= 1 {
			c.Add(field, "names no degraded part: give gpu_speed, nic_speed or link_speed below 1 (got %g, %g, %g)", d.GPUSpeed, d.NICSpeed, d.LinkSpeed)
		}
		c.Join(step.CheckDegradedParts(field, d.GPUSpeed, d.NICSpeed, d.LinkSpeed, r.Cluster))
	}
	// The search reads the training as the estimator would (global tokens as a
	// batch, the default precision and optimizer), and every layout shares it: a
	// bad value would otherwise only make every layout invalid, an empty answer.
	r.Training = r.Training.Normalise()
	c.Join(r.Training.Validate())
	total := r.Cluster.GPUs()
	switch {
	case r.GPUs < 0 || r.GPUs > total:
		c.Add("gpus", "must be between 1 and the cluster's %d GPUs (got %d)", total, r.GPUs)
	case r.GPUs > 0 && r.MaxGPUs != 0:
		c.Add("max_gpus", "give gpus (a job size) or max_gpus (a range of sizes), not both (gpus %d, max_gpus %d)", r.GPUs, r.MaxGPUs)
	case r.GPUs > 0 && r.MinGPUs != 0:
		c.Add("min_gpus", "goes with max_gpus, not with gpus (a job size): give gpus, or min_gpus and max_gpus (gpus %d, min_gpus %d)", r.GPUs, r.MinGPUs)
	case r.GPUs == 0 && (r.MaxGPUs < 1 || r.MaxGPUs > total):
		c.Add("max_gpus", "give gpus, or max_gpus between 1 and the cluster's %d GPUs (got %d)", total, r.MaxGPUs)
	case r.GPUs == 0 && (r.MinGPUs < 0 || r.MinGPUs > r.MaxGPUs):
		c.Add("min_gpus", "must be between 0 and max_gpus %d (got %d)", r.MaxGPUs, r.MinGPUs)
	case r.GPUs == 0 && r.Cluster.Spec.GPUsPerNode > 0 && len(gpuCounts(r)) == 0:
		// Only whole nodes and sizes dividing one are searched (gpuCounts): a
		// range between two of them would be answered with no plan.
		g := r.Cluster.Spec.GPUsPerNode
		size := func(n int) bool { return n%g == 0 || n < g && g%n == 0 }
		below, above := r.MinGPUs-1, r.MaxGPUs+1
		for ; below > 1 && !size(below); below-- {
		}
		for ; !size(above); above++ {
		}
		c.Add("max_gpus", "no job size from min_gpus %d to max_gpus %d: a job fills whole nodes of %d GPUs or divides one (nearest: %d below, %d above)", r.MinGPUs, r.MaxGPUs, g, below, above)
	}
	if err := CheckObjective(r.Objective, r.PricePerGPUHour, r.TokenBudget); err != nil {
		c.Join(err)
	} else {
		c.Join(CheckTokenBudget(r.TokenBudget, r.Training))
	}
	if r.TopK < 0 || r.TopK > MaxTopK {
		c.Add("top_k", "must be between 1 and %d (got %d)", MaxTopK, r.TopK)
	}
	if h, capGB := r.Constraints.MinHeadroomGB, r.Cluster.GPU().MemoryGB; !(h >= 0 && h < capGB) {
		c.Add("constraints.min_headroom_gb", "must be at least 0 and less than the GPU's %v GB (got %v)", capGB, h)
	}
	if m := r.Constraints.MaxMicroBatch; m < 0 || m > step.MaxMicroBatch {
		c.Add("constraints.max_micro_batch", "must be between 1 and %d, or 0 for %d (got %d)", step.MaxMicroBatch, DefaultMaxMicroBatch, m)
	}
	for name, vs := range map[string][]int{"tp": r.Constraints.TP, "pp": r.Constraints.PP, "cp": r.Constraints.CP, "ep": r.Constraints.EP,
		"micro_batch": r.Constraints.MicroBatch, "virtual_stages": r.Constraints.VirtualStages} {
		for i, v := range vs {
			if v < 1 || v > step.MaxParallel {
				c.Add(fmt.Sprintf("constraints.%s[%d]", name, i), "must be between 1 and %d (got %d)", step.MaxParallel, v)
			}
		}
	}
	for i, z := range r.Constraints.ZeRO {
		if z < 0 || z > 3 {
			c.Add(fmt.Sprintf("constraints.zero[%d]", i), "must be 0–3 (got %d)", z)
		}
	}
	for i, rc := range r.Constraints.Recompute {
		switch rc {
		case step.RecomputeNone, step.RecomputeSelective, step.RecomputeOps, step.RecomputeFull:
		default:
			c.Add(fmt.Sprintf("constraints.recompute[%d]", i), "must be none, selective, ops or full (got %q)", rc)
		}
	}
	for i, s := range r.Constraints.Schedules {
		switch s {
		case step.GPipe, step.OneFOneB, step.Interleaved, step.ZeroBubble, step.ZeroBubbleV, step.DualPipe:
		default:
			c.Add(fmt.Sprintf("constraints.schedules[%d]", i), "must be gpipe, 1f1b, interleaved, zb-h1, zb-v or dualpipe (got %q)", s)
		}
	}
	switch r.Constraints.Offload {
	case "", step.OffloadNone:
	case step.OffloadOptimizer, step.OffloadParams:
		if !r.Cluster.Spec.Host.Described() {
			c.Add("cluster.host", "offloading needs the node's host memory_gb, memory_bandwidth_gbps and link_gbps; %q does not give them", r.Cluster.Spec.Name)
		}
	default:
		c.Add("constraints.offload", "must be none, optimizer or params (got %q)", r.Constraints.Offload)
	}
	if cs := &r.Constraints; slices.Contains(cs.FP8Params, true) && r.Training.Precision != step.FP8 {
		c.Add("constraints.fp8_params", "fp8 weights need precision %s (precision is %q)", step.FP8, r.Training.Precision)
	} else if r.Training.FP8Params && len(cs.FP8Params) > 0 && !slices.Contains(cs.FP8Params, true) {
		c.Add("constraints.fp8_params", "lists only 16-bit weights, but training.fp8_params stores them in fp8")
	}
	// Constraints on what the layouts cannot have would filter nothing, and the
	// search would answer as if they were not given.
	if cs := &r.Constraints; r.Model.MoE == nil {
		if slices.Contains(cs.OverlapEP, true) {
			c.Add("constraints.overlap_ep", "asks for the expert-parallel all-to-all overlap, but the model has no experts")
		}
		if slices.Contains(cs.ExpertsWhole, true) {
			c.Add("constraints.experts_whole", "asks for whole experts per TP rank, but the model has no experts")
		}
	}
	// The overlap hides the all-to-alls of expert parallelism: with ep 1 there are none.
	if cs := &r.Constraints; r.Model.MoE != nil && slices.Contains(cs.OverlapEP, true) && !slices.Contains(cs.OverlapEP, false) &&
		len(cs.EP) > 0 && !slices.ContainsFunc(cs.EP, func(ep int) bool { return ep > 1 }) {
		c.Add("constraints.overlap_ep", "asks for the expert-parallel all-to-all overlap, but constraints.ep lists no ep above 1 (got %v)", cs.EP)
	}
	// It runs without a pipeline or with the interleaved schedule, and without full
	// recomputation (overlapEP): pins leaving it no layout answered plans without it.
	if cs := &r.Constraints; r.Model.MoE != nil && slices.Contains(cs.OverlapEP, true) && !slices.Contains(cs.OverlapEP, false) {
		if len(cs.PP) > 0 && !slices.Contains(cs.PP, 1) && len(cs.Schedules) > 0 && !slices.Contains(cs.Schedules, step.Interleaved) {
			c.Add("constraints.overlap_ep", "asks for the expert-parallel all-to-all overlap, which runs without a pipeline or with the %s schedule, but constraints.pp lists no pp 1 (got %v) and constraints.schedules asks for %s",
				step.Interleaved, cs.PP, framework.Or(cs.Schedules))
		}
		if len(cs.Recompute) > 0 && !slices.ContainsFunc(cs.Recompute, func(rc step.Recompute) bool { return rc != step.RecomputeFull }) {
			c.Add("constraints.overlap_ep", "asks for the expert-parallel all-to-all overlap, which runs without full recomputation, but constraints.recompute lists only %s", step.RecomputeFull)
		}
	}
	if cs := &r.Constraints; slices.Contains(cs.CPAllToAll, true) && len(cs.CP) > 0 && !slices.ContainsFunc(cs.CP, func(cp int) bool { return cp > 1 }) {
		c.Add("constraints.cp_all_to_all", "asks for Ulysses context parallelism, but constraints.cp lists no cp above 1 (got %v)", cs.CP)
	}
	// Sequence parallelism and TP overlap run with tp > 1 only, and TP overlap with
	// sequence parallelism only (the enumeration's rules): pinned on against a pin
	// that allows neither, no layout was left and the answer named the other lists
	// ("constraints.tp [1]", or the framework's schedules), not the switch.
	noneAbove1 := func(vs []int) bool { return len(vs) > 0 && !slices.ContainsFunc(vs, func(v int) bool { return v > 1 }) }
	onlyOn := func(bs []bool) bool { return slices.Contains(bs, true) && !slices.Contains(bs, false) }
	if cs := &r.Constraints; onlyOn(cs.SP) && noneAbove1(cs.TP) {
		c.Add("constraints.sp", "asks for sequence parallelism, which needs tp > 1, but constraints.tp lists no tp above 1 (got %v)", cs.TP)
	}
	if cs := &r.Constraints; onlyOn(cs.OverlapTP) {
		if noneAbove1(cs.TP) {
			c.Add("constraints.overlap_tp", "asks for TP communication overlap, which needs tp > 1, but constraints.tp lists no tp above 1 (got %v)", cs.TP)
		} else if len(cs.SP) > 0 && !slices.Contains(cs.SP, true) {
			c.Add("constraints.overlap_tp", "asks for TP communication overlap, which runs with sequence parallelism only, but constraints.sp lists only off")
		}
	}
	// max_micro_batch bounds the sizes searched when micro_batch is empty: a size
	// pinned above it was searched all the same, the bound dropped without a word.
	if cs := &r.Constraints; cs.MaxMicroBatch > 0 {
		for i, m := range cs.MicroBatch {
			if m > cs.MaxMicroBatch {
				c.Add("constraints.max_micro_batch", "is %d, but constraints.micro_batch[%d] asks for %d (max_micro_batch bounds the sizes searched when micro_batch is empty): give one, or sizes within it",
					cs.MaxMicroBatch, i, m)
				break
			}
		}
	}
	// A job without a pipeline runs no pipeline schedule: its layouts are 1F1B's
	// (schedules), so schedules without 1f1b and pp 1 alone filtered nothing.
	if cs := &r.Constraints; len(cs.Schedules) > 0 && !slices.Contains(cs.Schedules, step.OneFOneB) &&
		len(cs.PP) > 0 && !slices.ContainsFunc(cs.PP, func(pp int) bool { return pp > 1 }) {
		c.Add("constraints.schedules", "asks for %s, but constraints.pp lists no pp above 1 (got %v): a job without pipeline parallelism runs no pipeline schedule",
			framework.Or(cs.Schedules), cs.PP)
	}
	// Interleaving needs 2 model chunks a rank or more: asked for alone with depth 1
	// alone it leaves only layouts without a pipeline.
	if cs := &r.Constraints; len(cs.Schedules) > 0 && !slices.ContainsFunc(cs.Schedules, func(s step.Schedule) bool { return s != step.Interleaved }) &&
		len(cs.VirtualStages) > 0 && !slices.ContainsFunc(cs.VirtualStages, func(v int) bool { return v > 1 }) {
		c.Add("constraints.virtual_stages", "lists no interleaving depth above 1 (got %v), but constraints.schedules asks only for %s, which runs 2 model chunks a rank or more", cs.VirtualStages, step.Interleaved)
	}
	if cs := &r.Constraints; r.Model.MoE != nil && len(cs.ExpertsWhole) > 0 && !slices.Contains(cs.ExpertsWhole, false) &&
		len(cs.SP) > 0 && !slices.Contains(cs.SP, true) && (len(cs.TP) == 0 || slices.ContainsFunc(cs.TP, func(tp int) bool { return tp > 1 })) {
		// step's layout.etp rule: a TP rank holds its experts whole only with SP.
		c.Add("constraints.experts_whole", "lists only whole experts, which need sequence parallelism with tp > 1, but constraints.sp lists only off")
	}
	zeroGiven := len(r.Constraints.ZeRO) > 0
	fwName := r.Training.Framework
	if fw, err := framework.Get(r.Training.Framework); err == nil && fw.Runs.Limited() {
		fwName = fw.Name
		if fw.Runs.EvenLayerSplit {
			// The framework splits no other way (framework.Runs.EvenLayerSplit):
			// its search is constraints.even_split's, whether or not that is given.
			if r.Constraints.UnevenPP {
				c.Add("constraints.uneven_pp", "asks for uneven pipeline splits, but %s splits the layers evenly only", fw.Name)
			} else {
				r.Constraints.EvenSplit = true
			}
			r.Constraints.interleaveOver2 = true
		}
		c.Join(restrictToRuns(&r.Constraints, fw, r.Model.MLA != nil, r.Model.SlidingWindow > 0))
	}
	// The depths filter the interleaved schedule's alone: without it among the
	// schedules searched (those given, or the framework's) they would filter nothing.
	// Depth 1 (no interleaving) is every other schedule's.
	if cs := &r.Constraints; slices.ContainsFunc(cs.VirtualStages, func(v int) bool { return v > 1 }) && len(cs.Schedules) > 0 && !slices.Contains(cs.Schedules, step.Interleaved) {
		c.Add("constraints.virtual_stages", "are interleaving depths, but the schedules searched do not include %s (%v; constraints.schedules, or the framework's): add it, or leave virtual_stages out", step.Interleaved, cs.Schedules)
	}
	// An offload runs under some ZeRO stages only (the search's space): with none
	// of them searched the answer was "no layout to search" naming the stages, not
	// the offload.
	if cs := &r.Constraints; len(cs.ZeRO) > 0 && (cs.Offload == step.OffloadOptimizer || cs.Offload == step.OffloadParams) {
		what, needs, runs := "optimizer", "ZeRO 1 or more", func(z int) bool { return z >= 1 }
		if cs.Offload == step.OffloadParams {
			what, needs, runs = "parameters", "ZeRO 3", func(z int) bool { return z == 3 }
		}
		if !slices.ContainsFunc(cs.ZeRO, runs) {
			searched := fmt.Sprintf("constraints.zero lists %v", cs.ZeRO)
			if !zeroGiven {
				searched = fmt.Sprintf("%s runs ZeRO %s", fwName, framework.Or(cs.ZeRO))
			}
			c.Add("constraints.offload", "keeps the %s in host memory, which needs %s, but %s", what, needs, searched)
		}
	}
	if r.Constraints.EvenSplit && r.Constraints.UnevenPP {
		c.Add("constraints.even_split", "keeps to even pipeline splits, but uneven_pp asks for uneven ones: give one")
	}
	if slices.Contains(r.Constraints.OffloadActivations, true) && !r.Cluster.Spec.Host.Described() {
		c.Add("cluster.host", "activation offload needs the node's host memory_gb, memory_bandwidth_gbps and link_gbps; %q does not give them", r.Cluster.Spec.Name)
	}
	if r.Free != nil {
		c.Join(r.Free.validate(r.Cluster))
	}
	return c.Err()
}

// restrictToRuns narrows the constraints to what the framework runs
// (framework.Profile.Runs) for a model with latent attention or not (mla), with
// sliding-window attention or not (sliding): an
// empty list becomes the framework's, a list asking for what it does not run is
// an error naming the constraint and the framework.
func restrictToRuns(cs *Constraints, fw *framework.Profile, mla, sliding bool) error {
	c := invalid.Collector{}
	r := fw.Runs
	limitTo(&c, fw.Name, "schedules", &cs.Schedules, convert[step.Schedule](r.Schedules))
	limitTo(&c, fw.Name, "recompute", &cs.Recompute, convert[step.Recompute](r.Recompute))
	if len(r.ZeRO) > 0 {
		zeros := slices.Clone(r.ZeRO)
		for _, z := range r.ZeROWithPipeline {
			if !slices.Contains(zeros, z) {
				zeros = append(zeros, z)
			}
		}
		slices.Sort(zeros)
		limitTo(&c, fw.Name, "zero", &cs.ZeRO, zeros)
	}
	if len(r.ZeROWithPipeline) > 0 {
		cs.zeroWithPipeline = slices.Clone(r.ZeROWithPipeline)
		cs.zeroWithoutPipeline = slices.Clone(r.ZeRO)
	}
	cs.ddpAlone = r.DDPAlone
	cs.fp8Sharded = r.FP8ParamsSharded
	off := func(field string, list *[]bool, no bool, what string) {
		switch {
		case !no:
		case len(*list) == 0:
			*list = []bool{false}
		case slices.Contains(*list, true):
			c.Add("constraints."+field, "asks for %s, but %s runs none", what, fw.Name)
		}
	}
	off("sp", &cs.SP, r.NoSequenceParallel, "sequence parallelism")
	if r.NoTPOverlap {
		off("overlap_tp", &cs.OverlapTP, true, "TP communication overlap")
	} else {
		off("overlap_tp", &cs.OverlapTP, !r.TPOverlapRuns(mla), "TP communication overlap with latent attention (mla)")
	}
	off("overlap_ep", &cs.OverlapEP, r.NoEPOverlap, "the expert-parallel all-to-all overlap")
	// step's validateRuns: activation offload only where the profile runs it.
	off("offload_activations", &cs.OffloadActivations, !fw.ActivationOffload, "activation offload to host memory")
	one := func(field string, list *[]int, no bool, what string) {
		switch {
		case !no:
		case len(*list) == 0:
			*list = []int{1}
		case slices.ContainsFunc(*list, func(n int) bool { return n > 1 }):
			c.Add("constraints."+field, "asks for %s, but %s runs none", what, fw.Name)
		}
	}
	if r.ExpertTPIsTP {
		switch {
		case len(cs.ExpertsWhole) == 0:
			cs.ExpertsWhole = []bool{false}
		case slices.Contains(cs.ExpertsWhole, true):
			c.Add("constraints.experts_whole", "asks for whole experts per TP rank, but %s splits the experts like the dense MLP", fw.Name)
		}
	}
	// Checked per layout in the enumeration: without a pipeline, the micro-batch
	// is the local batch.
	cs.oneMicroBatch = r.NoGradAccumulation
	one("pp", &cs.PP, r.NoPipeline, "pipeline parallelism")
	if r.NoContextParallel {
		one("cp", &cs.CP, true, "context parallelism")
	} else {
		one("cp", &cs.CP, mla && r.NoMLAContextParallel, "context parallelism with latent attention (mla)")
	}
	if sliding && r.NoSlidingWindowRingCP {
		// Context parallelism by all-to-alls only (the enumeration checks
		// cp_all_to_all where cp > 1, so cp 1 layouts are unchanged).
		switch {
		case len(cs.CPAllToAll) == 0:
			cs.CPAllToAll = []bool{true}
		case slices.Contains(cs.CPAllToAll, false):
			c.Add("constraints.cp_all_to_all", "asks for ring context parallelism, but %s runs context parallelism for sliding-window attention by all-to-alls only", fw.Name)
		}
	}
	return c.Err()
}

// limitTo sets an empty list to allowed (when allowed is not empty), or reports
// each listed value outside it, naming the constraint and the framework.
func limitTo[T comparable](c *invalid.Collector, fw, field string, list *[]T, allowed []T) {
	if len(allowed) == 0 {
		return
	}
	if len(*list) == 0 {
		*list = slices.Clone(allowed)
		return
	}
	for i, v := range *list {
		if !slices.Contains(allowed, v) {
			c.Add(fmt.Sprintf("constraints.%s[%d]", field, i), "asks for %v, but %s runs %s", v, fw, framework.Or(allowed))
		}
	}
}

func convert[T ~string](vs []string) []T {
	out := make([]T, len(vs))
	for i, v := range vs {
		out[i] = T(v)
	}
	return out
}
