package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/buildinfo"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// ClusterEntry is a built cluster and the estimator whose placements are cached for it.
type ClusterEntry struct {
	Cluster *topology.Cluster
	Est     *step.Estimator
}

// Clusters interns clusters by their canonical description, so that equal
// requests reuse one cluster and its cached communication placements. It keeps at
// most max entries, dropping the oldest.
type Clusters struct {
	mu      sync.Mutex
	entries map[string]*ClusterEntry
	order   []string
	max     int
	// schedules are the compiled pipeline schedules every pooled cluster's
	// estimator shares: they depend on no cluster, so a search on a new cluster
	// finds those earlier searches compiled.
	schedules *step.Schedules
}

// NewClusters is a pool of at most max clusters.
func NewClusters(max int) *Clusters {
	return &Clusters{entries: map[string]*ClusterEntry{}, max: max, schedules: step.NewSchedules()}
}

// NewEstimator is a fresh estimator sharing the pool's compiled schedules.
func (p *Clusters) NewEstimator() *step.Estimator { return step.New().ShareSchedules(p.schedules) }

// Get is the pooled cluster of spec, built on first use.
func (p *Clusters) Get(spec topology.Spec) (*ClusterEntry, error) {
	if err := spec.Validate(); err != nil { // before the key: JSON cannot spell NaN
		return nil, err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	key := string(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.entries[key]; ok {
		return e, nil
	}
	c, err := spec.Build()
	if err != nil {
		return nil, err
	}
	e := &ClusterEntry{Cluster: c, Est: p.NewEstimator()}
	p.entries[key] = e
	p.order = append(p.order, key)
	if len(p.order) > p.max {
		delete(p.entries, p.order[0])
		p.order = p.order[1:]
	}
	return e, nil
}

// Sized resolves a cluster spec big enough for gpus GPUs (and every node a free
// map names, topNode; -1 for none), refusing more than maxGPUs GPUs. asked says
// what gpus is, as a refusal names it ("the job's 64 GPUs (gpus 64)", "jobs of
// up to 64 GPUs (max_gpus 64)"); empty, "the 64 GPUs asked for".
func (p *Clusters) Sized(c *pb.ClusterSpec, gpus, topNode, maxGPUs int, asked string) (*ClusterEntry, error) {
	spec, err := ClusterSpec("cluster", c)
	if err != nil {
		return nil, err
	}
	if err := CheckGPUsPerNode(spec); err != nil {
		return nil, err
	}
	if n := int(c.GetNodes()); n < 0 || n > topology.MaxNodes {
		return nil, invalid.Field("cluster.nodes", "must be between 0 and %d (got %d)", topology.MaxNodes, n)
	} else if n > 0 {
		// The caller's cluster: a job or a free map larger than it is a mistake in
		// the request, not a reason to grow the cluster (0 sizes it for the job).
		if gpus > n*spec.GPUsPerNode {
			if asked == "" {
				asked = fmt.Sprintf("the %d GPUs asked for", gpus)
			}
			return nil, invalid.Field("cluster.nodes", "%d nodes of %d GPUs cannot hold %s (0: as many nodes as they need)", n, spec.GPUsPerNode, asked)
		}
		for i, f := range c.GetFreeGpus() {
			if int(f.GetNode()) >= n {
				return nil, invalid.Field(fmt.Sprintf("cluster.free_gpus[%d].node", i), "node %d is not in the cluster's %d nodes (cluster.nodes)", f.GetNode(), n)
			}
		}
		spec.Nodes = n
	}
	need := (gpus + spec.GPUsPerNode - 1) / spec.GPUsPerNode
	spec.Nodes = max(spec.Nodes, need, topNode+1, 1)
	if spec.Nodes*spec.GPUsPerNode > maxGPUs {
		return nil, &LimitError{"cluster.nodes", fmt.Sprintf("%d GPUs exceed the service's limit of %d (flag --max-gpus)", spec.Nodes*spec.GPUsPerNode, maxGPUs)}
	}
	ce, err := p.Get(spec)
	if err != nil {
		return nil, ClusterFields(c, "", err)
	}
	return ce, nil
}

// Supported refuses a precision the estimator has no calibration for on the
// cluster's GPU, or a GPU it cannot price at all, naming the field to change; and
// the mxfp8 recipe off Blackwell, as the estimator does for one layout, so that a
// plan search is refused by that field instead of finding every layout invalid.
func (ce *ClusterEntry) Supported(c *pb.ClusterSpec, t step.Training) error {
	t = t.Normalise()
	gpu := ce.Cluster.GPU()
	if err := ce.Est.Supports(gpu, t.Precision); err != nil {
		return ClusterFields(c, "cluster.", err)
	}
	if t.Precision == step.FP8 {
		return step.SupportsFP8Recipe(gpu, t.FP8Recipe)
	}
	return nil
}

// checkFreeHoldsFirst checks a call's free map, which must hold the first gpus GPUs
// of the cluster, where call puts its ranks.
func checkFreeHoldsFirst(c *pb.ClusterSpec, ce *ClusterEntry, gpus int, call, instead string) error {
	gpn := ce.Cluster.Spec.GPUsPerNode
	if err := CheckFree("cluster.free_gpus", c.GetFreeGpus(), gpn); err != nil {
		return err
	}
	if len(c.GetFreeGpus()) == 0 {
		return nil
	}
	first := make([]int, gpus)
	for i := range first {
		first[i] = i
	}
	return CheckFreeHolds("cluster.free_gpus", c.GetFreeGpus(), gpn, first, call, instead)
}

// Step is an EstimateStep request resolved: what it estimates (its Key) and on
// which cluster.
type Step struct {
	Model    model.Arch
	Derived  string // how a shape was derived from a parameter count
	Training step.Training
	Layout   step.Layout
	Cluster  *ClusterEntry
	// The what-ifs.
	SlowGPU, DegradedNIC, DegradedLink float64
}

// ResolveStep resolves and checks an EstimateStep request, its cluster from pool
// and at most maxGPUs GPUs.
func ResolveStep(pool *Clusters, req *pb.EstimateStepRequest, maxGPUs int) (*Step, error) {
	if err := CheckText(req); err != nil {
		return nil, err
	}
	if err := CheckWhatIfs(req.GetSlowGpuSpeed(), req.GetDegradedNicSpeed(), req.GetDegradedLinkSpeed()); err != nil {
		return nil, err
	}
	a, derived, err := ResolveModel("model", req.GetModel())
	if err != nil {
		return nil, err
	}
	t, err := TrainingFromProto(req.GetTraining())
	if err != nil {
		return nil, err
	}
	l, err := LayoutFromProto(req.GetLayout())
	if err != nil {
		return nil, err
	}
	gpus, err := LayoutGPUs(l, maxGPUs)
	if err != nil {
		return nil, err
	}
	_, top, err := FreeMap("cluster.free_gpus", req.GetCluster().GetFreeGpus())
	if err != nil {
		return nil, err
	}
	ce, err := pool.Sized(req.GetCluster(), gpus, top, maxGPUs, "")
	if err != nil {
		return nil, err
	}
	if err := ce.Supported(req.GetCluster(), t); err != nil {
		return nil, err
	}
	if err := checkFreeHoldsFirst(req.GetCluster(), ce, gpus, "EstimateStep",
		fmt.Sprintf("leave free_gpus out to estimate the layout there, or ask EstimatePlan (gpus %d, constraints pinning the layout) to place it on the free GPUs", gpus)); err != nil {
		return nil, err
	}
	return &Step{Model: a, Derived: derived, Training: t, Layout: l, Cluster: ce,
		SlowGPU: req.GetSlowGpuSpeed(), DegradedNIC: req.GetDegradedNicSpeed(), DegradedLink: req.GetDegradedLinkSpeed()}, nil
}

// Key is what the request resolves to: equivalent requests have equal keys. The
// recompute modules are a set (the estimator reads them as bits): in the key, as
// in the answer's layout (Response), they are in the estimator's order.
func (s *Step) Key() any {
	l := s.Layout
	l.RecomputeModules = CanonicalRecomputeModules(l.RecomputeModules)
	return struct {
		Model    model.Arch
		Derived  string
		Training step.Training
		Layout   step.Layout
		Cluster  topology.Spec
		// The what-ifs change the answer as much as the layout does.
		SlowGPU, DegradedNIC, DegradedLink float64
	}{s.Model, s.Derived, s.Training, l, s.Cluster.Cluster.Spec, s.SlowGPU, s.DegradedNIC, s.DegradedLink}
}

// CanonicalRecomputeModules is v in the estimator's order of the modules
// (step.RecomputeModuleNames), a name it does not know after them in the order
// given; v itself when already in that order.
func CanonicalRecomputeModules(v []string) []string {
	names := step.RecomputeModuleNames()
	rank := func(m string) int {
		if i := slices.Index(names, m); i >= 0 {
			return i
		}
		return len(names)
	}
	if slices.IsSortedFunc(v, func(a, b string) int { return rank(a) - rank(b) }) {
		return v
	}
	out := slices.Clone(v)
	slices.SortStableFunc(out, func(a, b string) int { return rank(a) - rank(b) })
	return out
}

// Request is the estimator's request.
func (s *Step) Request() step.Request {
	return step.Request{Model: s.Model, Training: s.Training, Cluster: s.Cluster.Cluster, Layout: s.Layout,
		SlowGPUSpeed: s.SlowGPU, DegradedNICSpeed: s.DegradedNIC, DegradedLinkSpeed: s.DegradedLink}
}

// Response is the API's answer for the estimator's res.
func (s *Step) Response(res step.Result) *pb.EstimateStepResponse {
	est := StepToProto(res)
	// One answer for the modules in any order (Key): listed in the estimator's.
	if l := est.GetLayout(); l != nil {
		l.RecomputeModules = CanonicalRecomputeModules(l.RecomputeModules)
	}
	if s.Derived != "" {
		est.Assumptions = append([]string{s.Derived}, est.Assumptions...)
	}
	est.Warnings = append(est.Warnings, NoEffect(s.Model, s.Training, &s.Layout)...)
	est.Warnings = append(est.Warnings, WhatIfNoEffect(s.SlowGPU, s.DegradedNIC, s.DegradedLink)...)
	if w := collective.ReleaseWarning(s.Cluster.Cluster.Spec); w != "" {
		est.Warnings = append(est.Warnings, w)
	}
	return &pb.EstimateStepResponse{Estimate: est, Model: ArchToProto(s.Model), EstimatorVersion: buildinfo.EstimatorVersion,
		NcclRelease: collective.LibraryRelease(s.Cluster.Cluster.Spec)}
}

// PlanResponse is the answer to an EstimatePlan request pr found res. It lists the
// GPUs of at most maxListed of its plans' placements (0: no limit; the service's
// --max-answer-gpus): the top plans in full (the service refuses a top_k that
// could list more before the search), then the front's plans, in order, while they
// fit. A front plan that does not keeps its placement's counts and says why its
// nodes are left out: the front's size is known only after the search, and 19
// plans on 131 072 GPUs listed 2.5 M GPUs beside the top plans' 2.1 M.
//
// It returns ctx's error, looked at before each plan: converting 50 plans of
// 98 304 GPUs takes up to ~0.1 s, past a deadline the search has just met.
func PlanResponse(ctx context.Context, pr planner.Request, res planner.Result, maxListed int) (*pb.EstimatePlanResponse, error) {
	out := &pb.EstimatePlanResponse{Model: ArchToProto(pr.Model), EstimatorVersion: buildinfo.EstimatorVersion, NoPlanReason: res.NoPlan,
		Stats: &pb.SearchStats{Enumerated: int64(res.Stats.Enumerated), Evaluated: int64(res.Stats.Evaluated),
			Feasible: int64(res.Stats.Feasible), Dominated: int64(res.Stats.Dominated), GpuCounts: ToInt32s(res.Stats.GPUCounts), Pruned: map[string]int64{},
			ElapsedMs: float64(res.Stats.Elapsed.Microseconds()) / 1e3}}
	for k, v := range res.Stats.Pruned {
		out.Stats.Pruned[k] = int64(v)
	}
	listed := 0
	// fits counts p's GPUs into the answer's listing if they fit in maxListed.
	fits := func(p planner.Plan) bool {
		n := 0
		for _, u := range p.Placement.Nodes {
			n += len(u.GPUs)
		}
		if maxListed > 0 && listed+n > maxListed {
			return false
		}
		listed += n
		return true
	}
	// What every top plan warns of: settings without effect, and a release newer
	// than the collective model knows.
	common := append(PlanNoEffect(pr), withoutPipeline(pr.Constraints, res.Top)...)
	if pr.Cluster != nil {
		if w := collective.ReleaseWarning(pr.Cluster.Spec); w != "" {
			common = append(common, w)
		}
	}
	for _, p := range res.Top {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fits(p) // within the limit: checked on top_k × the largest job size before the search
		pp := PlanToProto(p)
		pp.Estimate.Warnings = append(pp.Estimate.Warnings, common...)
		out.Plans = append(out.Plans, pp)
	}
	for _, p := range res.Pareto {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		listIt := fits(p)
		if !listIt {
			p.Placement.Nodes = nil
		}
		// The front can hold dozens of plans; their full communication tables and
		// assumptions would multiply the response size (and its encoding time) for
		// detail a caller gets from EstimateStep on the plan it picks.
		pp := PlanToProto(p)
		pp.Estimate.Communication, pp.Estimate.Assumptions = nil, nil
		if !listIt {
			pp.Estimate.Warnings = append(pp.Estimate.Warnings, fmt.Sprintf(
				"placement.nodes left out: the answer lists at most %d GPUs in its plans' placements (flag --max-answer-gpus) and this plan's %d would take it over; an EstimatePlan with gpus %d and this layout in its constraints lists them",
				maxListed, p.GPUs, p.GPUs))
		}
		out.Pareto = append(out.Pareto, pp)
	}
	return out, nil
}

// withoutPipeline says, when some of the plans top has pp 1 and the constraints
// pinned schedules without 1F1B (or interleaving depths, none of them 1), that
// those plans run none: a job without pipeline parallelism has no pipeline
// schedule (the search takes its layouts for 1F1B's), and the search
// keeps such layouts unless constraints.pp leaves them out (docs/planner.md,
// "Search space"). One warning on every plan, so that the answer says it
// wherever its plans are read.
func withoutPipeline(cs planner.Constraints, top []planner.Plan) []string {
	if !slices.ContainsFunc(top, func(p planner.Plan) bool { return p.Layout.PP == 1 }) {
		return nil
	}
	const fix = "a job without pipeline parallelism has none; constraints.pp above 1 searches only pipelines"
	switch {
	case len(cs.Schedules) > 0 && !slices.Contains(cs.Schedules, step.OneFOneB):
		return []string{fmt.Sprintf("constraints.schedules: %v pinned: plans with pp 1 run no pipeline schedule (%s)", apiNames(cs.Schedules, schedules), fix)}
	case len(cs.VirtualStages) > 0 && !slices.Contains(cs.VirtualStages, 1):
		return []string{fmt.Sprintf("constraints.virtual_stages: %v pinned: plans with pp 1 run no interleaving (%s)", cs.VirtualStages, fix)}
	}
	return nil
}

// RankObjective checks a RankConfigs request's own fields (its configs are
// checked one by one) for at most maxConfigs configs, and returns its objective.
func RankObjective(req *pb.RankConfigsRequest, maxConfigs int) (planner.Objective, error) {
	n := len(req.GetConfigs())
	switch {
	case n == 0:
		return "", invalid.Field("configs", "must list at least one config")
	case n > maxConfigs:
		return "", &LimitError{"configs", fmt.Sprintf("%d configs exceed the limit of %d per call (flag --max-rank-configs)", n, maxConfigs)}
	}
	obj, ok := Objectives[req.GetObjective()]
	if !ok {
		return "", invalid.Field("objective", "%s", EnumRule(req.GetObjective()))
	}
	if err := planner.CheckObjective(obj, req.GetPricePerGpuHour(), req.GetTokenBudget()); err != nil {
		return "", err
	}
	return obj, nil
}

// Score is the objective's score of an estimate (lower is better), as the planner
// scores its plans.
func Score(obj planner.Objective, req *pb.RankConfigsRequest, e *pb.StepEstimate) float64 {
	tokens := float64(e.GetTraining().GetGlobalBatch()) * float64(e.GetTraining().GetSeqLen())
	return planner.Score(obj, e.GetStepTimeS(), e.GetThroughput().GetTokensPerSPerGpu(), int(e.GetGpus()), tokens,
		req.GetPricePerGpuHour(), req.GetTokenBudget())
}

// CheckRankBudget refuses, for one estimated config of a RankConfigs request, a
// token budget below the config's step (planner.CheckTokenBudget): the configs
// may train different batches, so each is checked against its own.
func CheckRankBudget(req *pb.RankConfigsRequest, e *pb.StepEstimate) error {
	t := e.GetTraining()
	return planner.CheckTokenBudget(req.GetTokenBudget(), step.Training{SeqLen: int(t.GetSeqLen()), GlobalBatch: int(t.GetGlobalBatch()), GlobalTokens: int(t.GetGlobalTokens())})
}

// RankResults ranks estimated configs in place (planner.RankConfigs): those that fit
// first, by score; the others after them, flagged infeasible; dominated ones flagged.
func RankResults(rs []*pb.RankedConfig) {
	items := make([]planner.RankItem, len(rs))
	for i, r := range rs {
		if r.GetError() != nil || r.GetEstimate() == nil {
			continue
		}
		e := r.GetEstimate()
		items[i] = planner.RankItem{Valid: true, Fits: e.GetMemory().GetFits(), GPUs: int(e.GetGpus()), Score: r.GetScore(),
			StepTime: e.GetStepTimeS(), Headroom: e.GetMemory().GetHeadroomGb()}
	}
	rank, dominated := planner.RankConfigs(items)
	for i, r := range rs {
		r.Rank, r.Dominated = int32(rank[i]), dominated[i]
		r.Infeasible = items[i].Valid && !items[i].Fits
	}
}

// Plan is an EstimatePlan request resolved: the planner's request and the cluster
// it searches.
type Plan struct {
	Request planner.Request
	Cluster *ClusterEntry
}

// ResolvePlan resolves and checks an EstimatePlan request, its cluster from pool,
// at most maxGPUs GPUs and maxCandidates layouts.
func ResolvePlan(pool *Clusters, req *pb.EstimatePlanRequest, maxGPUs, maxCandidates int) (*Plan, error) {
	if err := CheckText(req); err != nil {
		return nil, err
	}
	if err := CheckWhatIfs(req.GetSlowGpuSpeed(), req.GetDegradedNicSpeed(), req.GetDegradedLinkSpeed()); err != nil {
		return nil, err
	}
	if err := CheckDegradedNodes(req.GetDegradedNodes()); err != nil {
		return nil, err
	}
	a, _, err := ResolveModel("model", req.GetModel())
	if err != nil {
		return nil, err
	}
	t, err := TrainingFromProto(req.GetTraining())
	if err != nil {
		return nil, err
	}
	free, top, err := FreeMap("cluster.free_gpus", req.GetCluster().GetFreeGpus())
	if err != nil {
		return nil, err
	}
	size := max(int(req.GetGpus()), int(req.GetMaxGpus()))
	if size > maxGPUs {
		field := "gpus" // the field that asked for the most
		if req.GetMaxGpus() > req.GetGpus() {
			field = "max_gpus"
		}
		return nil, Limit(field, fmt.Sprintf("%d GPUs exceed the service's limit of %d (flag --max-gpus)", size, maxGPUs))
	}
	// The job's size, before it sizes the cluster: a catalog system without nodes
	// is built as large as the job, so a size below 1 would build one node and the
	// planner's bound ("the cluster's 8 GPUs") would misstate the system.
	switch g, m := req.GetGpus(), req.GetMaxGpus(); {
	case g < 0:
		return nil, invalid.Field("gpus", "must be between 1 and the service's limit of %d (got %d)", maxGPUs, g)
	case g > 0 && m != 0:
		return nil, invalid.Field("max_gpus", "give gpus (a job size) or max_gpus (a range of sizes), not both (gpus %d, max_gpus %d)", g, m)
	case g > 0 && req.GetMinGpus() != 0:
		return nil, invalid.Field("min_gpus", "goes with max_gpus, not with gpus (a job size): give gpus, or min_gpus and max_gpus (gpus %d, min_gpus %d)", g, req.GetMinGpus())
	case g == 0 && m < 1:
		return nil, invalid.Field("max_gpus", "give gpus, or max_gpus between 1 and the service's limit of %d (got %d)", maxGPUs, m)
	case g == 0 && (req.GetMinGpus() < 0 || req.GetMinGpus() > m):
		return nil, invalid.Field("min_gpus", "must be between 0 and max_gpus %d (got %d)", m, req.GetMinGpus())
	}
	// gpus is the job's size; max_gpus only the top of the sizes searched.
	asked := fmt.Sprintf("the job's %d GPUs (gpus %d)", size, size)
	if req.GetGpus() == 0 {
		asked = fmt.Sprintf("jobs of up to %d GPUs (max_gpus %d)", size, size)
	}
	ce, err := pool.Sized(req.GetCluster(), size, top, maxGPUs, asked)
	if err != nil {
		return nil, err
	}
	if err := ce.Supported(req.GetCluster(), t); err != nil {
		return nil, err
	}
	if err := CheckFree("cluster.free_gpus", req.GetCluster().GetFreeGpus(), ce.Cluster.Spec.GPUsPerNode); err != nil {
		return nil, err
	}
	cons, err := ConstraintsFromProto(req.GetConstraints())
	if err != nil {
		return nil, err
	}
	obj, ok := Objectives[req.GetObjective()]
	if !ok {
		return nil, invalid.Field("objective", "%s", EnumRule(req.GetObjective()))
	}
	pr := planner.Request{Model: a, Training: t, Cluster: ce.Cluster, GPUs: int(req.GetGpus()), MinGPUs: int(req.GetMinGpus()),
		MaxGPUs: int(req.GetMaxGpus()), Free: free, Constraints: cons, Objective: obj, PricePerGPUHour: req.GetPricePerGpuHour(),
		TokenBudget: req.GetTokenBudget(), TopK: int(req.GetTopK()), MaxLayouts: maxCandidates,
		IncludeDominated: req.GetIncludeDominated(), SlowGPUSpeed: req.GetSlowGpuSpeed(),
		DegradedNICSpeed: req.GetDegradedNicSpeed(), DegradedLinkSpeed: req.GetDegradedLinkSpeed(),
		PlacementTolerance: PlacementToleranceFromProto(req)}
	for _, n := range req.GetExcludeNodes() {
		pr.ExcludeNodes = append(pr.ExcludeNodes, int(n))
	}
	pr.DegradedNodes = DegradedNodesFromProto(req.GetDegradedNodes())
	if pr.TopK == 0 {
		pr.TopK = planner.DefaultTopK
	}
	return &Plan{Request: pr, Cluster: ce}, nil
}

// PlacementToleranceFromProto is the request's placement_tolerance for the
// planner: nil when unset (the planner's default), else the value sent, 0 included.
func PlacementToleranceFromProto(req *pb.EstimatePlanRequest) *float64 {
	if req.PlacementTolerance == nil {
		return nil
	}
	return new(req.GetPlacementTolerance())
}

// PlacementToleranceToProto is the planner's placement tolerance on the wire: unset
// when nil.
func PlacementToleranceToProto(v *float64) *float64 {
	if v == nil {
		return nil
	}
	return new(*v)
}

// Key is what the request resolves to: equivalent requests have equal keys.
func (p *Plan) Key() any {
	pr := p.Request
	return struct {
		Model                  model.Arch
		Training               step.Training
		Cluster                topology.Spec
		GPUs, MinGPUs, MaxGPUs int
		Free                   planner.FreeMap
		Constraints            planner.Constraints
		Objective              planner.Objective
		Price, Tokens          float64
		TopK                   int
		IncludeDominated       bool
		// The what-ifs change the answer as much as the constraints do.
		SlowGPU, DegradedNIC, DegradedLink float64
		ExcludeNodes                       []int
		PlacementTolerance                 float64
		DegradedNodes                      []planner.DegradedNode
	}{pr.Model, pr.Training, pr.Cluster.Spec, pr.GPUs, pr.MinGPUs, pr.MaxGPUs, pr.Free, pr.Constraints.Canonical(), pr.Objective, pr.PricePerGPUHour, pr.TokenBudget, pr.TopK,
		pr.IncludeDominated, pr.SlowGPUSpeed, pr.DegradedNICSpeed, pr.DegradedLinkSpeed, sorted(pr.ExcludeNodes), pr.Tolerance(), degradedByNode(pr.DegradedNodes)}
}

// sorted is a copy of nodes in increasing order: the planner reads the list as a
// set (it refuses repeats), so the key does too.
func sorted(nodes []int) []int {
	out := slices.Clone(nodes)
	slices.Sort(out)
	return out
}

// degradedByNode is a copy of degraded nodes in node order, as the planner reads
// them (one entry a node).
func degradedByNode(ds []planner.DegradedNode) []planner.DegradedNode {
	out := slices.Clone(ds)
	slices.SortFunc(out, func(a, b planner.DegradedNode) int { return a.Node - b.Node })
	return out
}

// Collective is a SimulateCollective request resolved: the placed group, the
// operation and its options, for the collective model.
type Collective struct {
	req       *pb.SimulateCollectiveRequest
	Model     *collective.Model
	ce        *ClusterEntry
	Placement *collective.Placement
	Op        collective.Op
	Options   collective.Options
	Size      float64
	nodes     int
	per       int
	// Steps asks for the chosen algorithm's schedule, at most Rows rows.
	Steps bool
	Rows  int
}

// ResolveCollective resolves and checks a SimulateCollective request, its cluster
// from pool and at most maxGPUs GPUs, to be priced by coll.
func ResolveCollective(pool *Clusters, coll *collective.Model, req *pb.SimulateCollectiveRequest, maxGPUs int) (*Collective, error) {
	if err := CheckText(req); err != nil {
		return nil, err
	}
	op, ok := CollectiveOps[req.GetCollective()]
	if !ok {
		return nil, invalid.Field("collective", "%s", EnumRule(req.GetCollective()))
	}
	algo, ok := Algorithms[req.GetAlgorithm()]
	if !ok {
		return nil, invalid.Field("algorithm", "%s", EnumRule(req.GetAlgorithm()))
	}
	launch, ok := Launches[req.GetLaunch()]
	if !ok {
		return nil, invalid.Field("launch", "%s", EnumRule(req.GetLaunch()))
	}
	opts := collective.Options{Algo: algo, Launch: launch}
	if p := req.GetProtocol(); p != pb.Protocol_PROTOCOL_UNSPECIFIED {
		pr, ok := Protocols[p]
		if !ok {
			return nil, invalid.Field("protocol", "%s", EnumRule(p))
		}
		opts.ForceProtocol, opts.Protocol = true, pr
	}
	// A message of 0 bytes is priced at zero, which is no answer to "how long does
	// this collective take"; the upper bound is the estimator's.
	if req.GetSizeBytes() <= 0 || req.GetSizeBytes() > collective.MaxBytes {
		return nil, invalid.Field("size_bytes", "must be between 1 and 2^50 (got %d)", req.GetSizeBytes())
	}
	// nodes has no default: 0 was read as 1 node, an answer to a question not
	// asked (the field is required, as size_bytes is).
	nodes := int(req.GetNodes())
	spec, err := ClusterSpec("cluster", req.GetCluster())
	if err != nil {
		return nil, err
	}
	if err := CheckGPUsPerNode(spec); err != nil {
		return nil, err
	}
	// The group's rule (nodes, gpus_per_node) is the estimator's, checked before
	// the cluster is sized by nodes; the cluster built holds them (Sized), and
	// NodeGroups checks the fit.
	per := int(req.GetGpusPerNode())
	if per == 0 {
		per = spec.GPUsPerNode
	}
	if err := collective.CheckNodeGroup(nodes, per, spec.GPUsPerNode); err != nil {
		return nil, err
	}
	if nodes*spec.GPUsPerNode > maxGPUs {
		return nil, Limit("nodes", fmt.Sprintf("must be between 1 and %d nodes of %d GPUs, the service's limit of %d GPUs (flag --max-gpus; got %d)", maxGPUs/spec.GPUsPerNode, spec.GPUsPerNode, maxGPUs, nodes))
	}
	_, top, err := FreeMap("cluster.free_gpus", req.GetCluster().GetFreeGpus())
	if err != nil {
		return nil, err
	}
	ce, err := pool.Sized(req.GetCluster(), nodes*max(1, spec.GPUsPerNode), top, maxGPUs, "")
	if err != nil {
		return nil, err
	}
	group, sib, err := collective.NodeGroups(ce.Cluster, nodes, per, req.GetConcurrent())
	if err != nil {
		return nil, err
	}
	// An all-gather's, reduce-scatter's or all-to-all's size is the whole buffer
	// (nccl-tests' convention), each rank's part a share of it: below a byte a rank
	// no rank has anything to send (nccl-tests prints such sizes as 0 B), and 1 B
	// on 8 GPUs was priced as if it were a call.
	if ranks := int64(len(group)); (op == collective.AllGather || op == collective.ReduceScatter || op == collective.AllToAll) && req.GetSizeBytes() < ranks {
		return nil, invalid.Field("size_bytes", "is the whole buffer of the %s, a share of it on each of its %d ranks: at least %d bytes, one a rank (got %d)",
			op, ranks, ranks, req.GetSizeBytes())
	}
	if err := CheckFree("cluster.free_gpus", req.GetCluster().GetFreeGpus(), ce.Cluster.Spec.GPUsPerNode); err != nil {
		return nil, err
	}
	if err := CheckFreeHolds("cluster.free_gpus", req.GetCluster().GetFreeGpus(), ce.Cluster.Spec.GPUsPerNode, slices.Concat(append([][]int{group}, sib...)...),
		"SimulateCollective", "leave free_gpus out to price the collective there"); err != nil {
		return nil, err
	}
	p, err := collective.Place(ce.Cluster, group, sib)
	if err != nil {
		return nil, err
	}
	if err := collectiveApplies(coll, req, p, op, algo); err != nil {
		return nil, err
	}
	rows := int(req.GetMaxStepRows())
	switch why := collective.CheckReplayRows(rows); {
	case rows != 0 && !req.GetSteps():
		return nil, invalid.Field("max_step_rows", "applies only with steps: true (got %d)", rows)
	case why != "":
		return nil, invalid.Field("max_step_rows", "%s", why)
	}
	return &Collective{req: req, Model: coll, ce: ce, Placement: p, Op: op, Options: opts, Size: float64(req.GetSizeBytes()), nodes: nodes, per: per,
		Steps: req.GetSteps(), Rows: rows}, nil
}

// Key is what the request resolves to: equivalent requests have equal keys.
func (c *Collective) Key() any {
	return struct {
		Op             collective.Op
		Options        collective.Options
		Size           float64
		Nodes, PerNode int
		Concurrent     bool
		Cluster        topology.Spec
		Steps          bool
		StepRows       int
	}{c.Op, c.Options, c.Size, c.nodes, c.per, c.req.GetConcurrent(), c.ce.Cluster.Spec, c.Steps, c.Rows}
}

// CollectiveResponse is the API's answer: the chosen estimate, the schedule when
// asked for (replay, nil otherwise), every candidate considered (fastest first) and
// why each algorithm that does not apply does not.
// Concurrent says whether the request asked for the nodes' other GPUs to run
// the same collective beside the group.
func (c *Collective) Concurrent() bool { return c.req.GetConcurrent() }

// GPUsPerNode is the group's GPUs on each of its nodes.
func (c *Collective) GPUsPerNode() int { return c.per }

func (c *Collective) Response(chosen collective.Estimate, replay *collective.Replay, considered []collective.Estimate, notApplicable map[collective.Algorithm]error) *pb.SimulateCollectiveResponse {
	out := &pb.SimulateCollectiveResponse{Chosen: CollectiveEstimateToProto(chosen), Ranks: int32(c.Placement.N()),
		ConcurrentGroups: int32(c.Placement.Concurrent), EstimatorVersion: buildinfo.EstimatorVersion,
		NcclRelease: collective.LibraryRelease(c.Placement.Cluster.Spec)}
	if w := collective.ReleaseWarning(c.Placement.Cluster.Spec); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	if replay != nil {
		out.Schedule = ReplayToProto(replay)
	}
	for _, e := range considered {
		out.Considered = append(out.Considered, CollectiveEstimateToProto(e))
	}
	for _, a := range collective.Algorithms() { // in the model's order
		if err, ok := notApplicable[a]; ok {
			out.NotApplicable = append(out.NotApplicable, &pb.NotApplicable{Algorithm: AlgorithmToProto(a), Reason: APINotApplicable(err, a, c.Op)})
		}
	}
	return out
}
