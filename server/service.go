package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/buildinfo"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// EstimatorVersion identifies the models behind the answers; it changes whenever a
// formula or a calibrated constant does, so that clients can tell answers apart.
const EstimatorVersion = "stepcost-2026.11.5"

// Version is the one-line answer to --version of the stepcost binaries: the build
// (module version, commit, Go) and the estimator version.
func Version(program string) string {
	return fmt.Sprintf("%s %s, estimator %s", program, buildinfo.Read(), EstimatorVersion)
}

// Limits bound what one request may ask for.
type Limits struct {
	MaxGPUs        int // GPUs of a job or cluster
	MaxRankConfigs int // configs in one RankConfigs call
	MaxCandidates  int // layouts one EstimatePlan may enumerate (0: no limit)
	// MaxSearchGPUs bounds the GPUs one EstimatePlan places, summed over the job
	// sizes it tries (0: no limit; see searchGPUs).
	MaxSearchGPUs int
	// Service-wide, not per request (admission.go): searches (and large RankConfigs
	// calls) running at once (0: no limit), and waiting for a slot.
	MaxConcurrentSearches, MaxQueuedSearches int
}

// DefaultLimits are safe for a shared service.
func DefaultLimits() Limits {
	return Limits{MaxGPUs: 65536, MaxRankConfigs: 1000, MaxCandidates: 1_000_000, MaxSearchGPUs: 1_000_000,
		MaxConcurrentSearches: defaultConcurrentSearches, MaxQueuedSearches: 32}
}

// Service implements the API on the estimator and the planner.
type Service struct {
	pb.UnimplementedStepcostServiceServer
	limits   Limits
	cache    *cache.Cache[proto.Message]
	coll     *collective.Model
	clusters clusterPool
	// tracer, when set, gets a span per planner phase under the RPC's span.
	tracer trace.Tracer
	// admit bounds the searches running at once (admission.go).
	admit *admission
	// scratch serves searches whose free map moves ranks (estimators.go).
	scratch scratchEstimator
}

// NewService builds a service; c may be nil for no cache.
func NewService(limits Limits, c *cache.Cache[proto.Message]) *Service {
	return &Service{limits: limits, cache: c, coll: collective.NewModel(collective.Default()),
		clusters: clusterPool{entries: map[string]*clusterEntry{}, max: 64},
		admit:    newAdmission(limits.MaxConcurrentSearches, limits.MaxQueuedSearches)}
}

// clusterEntry is a built cluster and the estimator whose placements are cached for it.
type clusterEntry struct {
	cluster *topology.Cluster
	est     *step.Estimator
}

// clusterPool interns clusters by their canonical description, so that equal
// requests reuse one cluster and its cached communication placements. It keeps at
// most max entries, dropping the oldest.
type clusterPool struct {
	mu      sync.Mutex
	entries map[string]*clusterEntry
	order   []string
	max     int
}

func (p *clusterPool) get(spec topology.Spec) (*clusterEntry, error) {
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
	e := &clusterEntry{cluster: c, est: step.New()}
	p.entries[key] = e
	p.order = append(p.order, key)
	if len(p.order) > p.max {
		delete(p.entries, p.order[0])
		p.order = p.order[1:]
	}
	return e, nil
}

// sizedCluster resolves a cluster spec big enough for gpus GPUs (and every node a
// free map names).
func (s *Service) sizedCluster(c *pb.ClusterSpec, gpus, topNode int) (*clusterEntry, error) {
	spec, err := clusterSpec("cluster", c)
	if err != nil {
		return nil, err
	}
	if err := checkGPUsPerNode(spec); err != nil {
		return nil, err
	}
	if n := int(c.GetNodes()); n < 0 || n > topology.MaxNodes {
		return nil, invalid.Field("cluster.nodes", "must be between 0 and %d (got %d)", topology.MaxNodes, n)
	} else if n > 0 {
		spec.Nodes = n
	}
	need := (gpus + spec.GPUsPerNode - 1) / spec.GPUsPerNode
	spec.Nodes = max(spec.Nodes, need, topNode+1, 1)
	if spec.Nodes*spec.GPUsPerNode > s.limits.MaxGPUs {
		return nil, &limitError{"cluster.nodes", fmt.Sprintf("%d GPUs exceed the service's limit of %d (flag --max-gpus)", spec.Nodes*spec.GPUsPerNode, s.limits.MaxGPUs)}
	}
	ce, err := s.clusters.get(spec)
	if err != nil {
		return nil, clusterFields(c, "", err)
	}
	return ce, nil
}

// work is a validated request: what it resolves to (the cache key) and the
// computation that answers it.
type work struct {
	key any
	run func(context.Context) (proto.Message, error)
}

// cached answers from the cache when possible. The key is the request as resolved
// (the model's architecture, the cluster's spec, the layout and training with their
// defaults, constraint lists as sets, free GPUs in order), so that equivalent
// requests — a model by name or by its architecture, lists in another order,
// defaults spelled out or left out — share one entry. The cache stores a copy
// marked cached and hands it out as is (responses are only read after this point:
// gRPC and the gateway marshal them); the caller that computed it gets its own copy
// marked not cached.
func (s *Service) cached(ctx context.Context, method string, w work) (proto.Message, error) {
	if s.cache == nil {
		return w.run(ctx)
	}
	b, err := json.Marshal(w.key)
	if err != nil { // a value JSON cannot spell (NaN): answer without the cache
		return w.run(ctx)
	}
	m, hit, err := s.cache.Get(ctx, cache.Key([]byte(method), []byte(EstimatorVersion), b), func(ctx context.Context) (proto.Message, error) {
		m, err := w.run(ctx)
		if err != nil {
			return nil, err
		}
		setCached(m, true)
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	if !hit {
		m = proto.Clone(m)
		setCached(m, false)
	}
	return m, nil
}

func setCached(m proto.Message, v bool) {
	switch r := m.(type) {
	case *pb.EstimateStepResponse:
		r.Cached = v
	case *pb.EstimatePlanResponse:
		r.Cached = v
	case *pb.SimulateCollectiveResponse:
		r.Cached = v
	}
}

// EstimateStep estimates one layout.
func (s *Service) EstimateStep(ctx context.Context, req *pb.EstimateStepRequest) (*pb.EstimateStepResponse, error) {
	w, err := s.estimateStep(req)
	if err != nil {
		return nil, toStatus(err)
	}
	m, err := s.cached(ctx, "EstimateStep", w)
	if err != nil {
		return nil, toStatus(err)
	}
	return m.(*pb.EstimateStepResponse), nil
}

func (s *Service) estimateStep(req *pb.EstimateStepRequest) (work, error) {
	a, derived, err := resolveModel("model", req.GetModel())
	if err != nil {
		return work{}, err
	}
	t, err := trainingFromProto(req.GetTraining())
	if err != nil {
		return work{}, err
	}
	l, err := layoutFromProto(req.GetLayout())
	if err != nil {
		return work{}, err
	}
	gpus, err := layoutGPUs(l, s.limits.MaxGPUs)
	if err != nil {
		return work{}, err
	}
	ce, err := s.sizedCluster(req.GetCluster(), gpus, -1)
	if err != nil {
		return work{}, err
	}
	if err := supported(ce, req.GetCluster(), t); err != nil {
		return work{}, err
	}
	key := struct {
		Model    model.Arch
		Derived  string
		Training step.Training
		Layout   step.Layout
		Cluster  topology.Spec
		// The what-ifs change the answer as much as the layout does.
		SlowGPU, DegradedNIC, DegradedLink float64
	}{a, derived, t, l, ce.cluster.Spec, req.GetSlowGpuSpeed(), req.GetDegradedNicSpeed(), req.GetDegradedLinkSpeed()}
	return work{key, func(ctx context.Context) (proto.Message, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err := ce.est.Estimate(step.Request{Model: a, Training: t, Cluster: ce.cluster, Layout: l, SlowGPUSpeed: req.GetSlowGpuSpeed(),
			DegradedNICSpeed: req.GetDegradedNicSpeed(), DegradedLinkSpeed: req.GetDegradedLinkSpeed()})
		if err != nil {
			return nil, err
		}
		est := stepToProto(res)
		if derived != "" {
			est.Assumptions = append([]string{derived}, est.Assumptions...)
		}
		return &pb.EstimateStepResponse{Estimate: est, Model: archToProto(a), EstimatorVersion: EstimatorVersion}, nil
	}}, nil
}

// EstimatePlan searches and ranks the plans of a job.
func (s *Service) EstimatePlan(ctx context.Context, req *pb.EstimatePlanRequest) (*pb.EstimatePlanResponse, error) {
	w, err := s.estimatePlan(req)
	if err != nil {
		return nil, toStatus(err)
	}
	m, err := s.cached(ctx, "EstimatePlan", w)
	if err != nil {
		return nil, toStatus(err)
	}
	return m.(*pb.EstimatePlanResponse), nil
}

func (s *Service) estimatePlan(req *pb.EstimatePlanRequest) (work, error) {
	a, _, err := resolveModel("model", req.GetModel())
	if err != nil {
		return work{}, err
	}
	t, err := trainingFromProto(req.GetTraining())
	if err != nil {
		return work{}, err
	}
	free, top, err := freeMap("cluster.free_gpus", req.GetCluster().GetFreeGpus())
	if err != nil {
		return work{}, err
	}
	size := max(int(req.GetGpus()), int(req.GetMaxGpus()))
	if size > s.limits.MaxGPUs {
		field := "gpus" // the field that asked for the most
		if req.GetMaxGpus() > req.GetGpus() {
			field = "max_gpus"
		}
		return work{}, &limitError{field, fmt.Sprintf("%d GPUs exceed the service's limit of %d", size, s.limits.MaxGPUs)}
	}
	ce, err := s.sizedCluster(req.GetCluster(), size, top)
	if err != nil {
		return work{}, err
	}
	if err := supported(ce, req.GetCluster(), t); err != nil {
		return work{}, err
	}
	if err := checkFree("cluster.free_gpus", req.GetCluster().GetFreeGpus(), ce.cluster.Spec.GPUsPerNode); err != nil {
		return work{}, err
	}
	cons, err := constraintsFromProto(req.GetConstraints())
	if err != nil {
		return work{}, err
	}
	obj, ok := objectives[req.GetObjective()]
	if !ok {
		return work{}, invalid.Field("objective", "%s", enumRule(req.GetObjective()))
	}
	pr := planner.Request{Model: a, Training: t, Cluster: ce.cluster, GPUs: int(req.GetGpus()), MinGPUs: int(req.GetMinGpus()),
		MaxGPUs: int(req.GetMaxGpus()), Free: free, Constraints: cons, Objective: obj, PricePerGPUHour: req.GetPricePerGpuHour(),
		TokenBudget: req.GetTokenBudget(), TopK: int(req.GetTopK()), MaxLayouts: s.limits.MaxCandidates,
		IncludeDominated: req.GetIncludeDominated(), SlowGPUSpeed: req.GetSlowGpuSpeed(),
		DegradedNICSpeed: req.GetDegradedNicSpeed(), DegradedLinkSpeed: req.GetDegradedLinkSpeed(),
		PlacementTolerance: req.GetPlacementTolerance()}
	for _, n := range req.GetExcludeNodes() {
		pr.ExcludeNodes = append(pr.ExcludeNodes, int(n))
	}
	if pr.TopK == 0 {
		pr.TopK = planner.DefaultTopK
	}
	if err := s.checkSearchSize(pr); err != nil {
		return work{}, err
	}
	key := struct {
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
	}{a, t, ce.cluster.Spec, pr.GPUs, pr.MinGPUs, pr.MaxGPUs, free, cons.Canonical(), obj, pr.PricePerGPUHour, pr.TokenBudget, pr.TopK,
		pr.IncludeDominated, pr.SlowGPUSpeed, pr.DegradedNICSpeed, pr.DegradedLinkSpeed, pr.ExcludeNodes, pr.PlacementTolerance}
	return work{key, func(ctx context.Context) (proto.Message, error) {
		pr := pr
		pr.Trace = s.plannerTrace(ctx)
		return s.search(ctx, ce, pr)
	}}, nil
}

func (s *Service) search(ctx context.Context, ce *clusterEntry, pr planner.Request) (*pb.EstimatePlanResponse, error) {
	release, err := s.admit.acquire(ctx, largeSearch(pr))
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := planner.Search(ctx, s.estimatorFor(ce, pr), pr)
	if errors.Is(err, planner.ErrTooManyLayouts) {
		return nil, &limitError{"gpus", fmt.Sprintf("%v layouts (flag --max-candidates); narrow gpus, min_gpus/max_gpus or constraints", err)}
	}
	if err != nil {
		return nil, err
	}
	out := &pb.EstimatePlanResponse{Model: archToProto(pr.Model), EstimatorVersion: EstimatorVersion,
		Stats: &pb.SearchStats{Enumerated: int64(res.Stats.Enumerated), Evaluated: int64(res.Stats.Evaluated),
			Feasible: int64(res.Stats.Feasible), Dominated: int64(res.Stats.Dominated), GpuCounts: toInt32s(res.Stats.GPUCounts), Pruned: map[string]int64{},
			ElapsedMs: float64(res.Stats.Elapsed.Microseconds()) / 1e3}}
	for k, v := range res.Stats.Pruned {
		out.Stats.Pruned[k] = int64(v)
	}
	for _, p := range res.Top {
		out.Plans = append(out.Plans, planToProto(p))
	}
	for _, p := range res.Pareto {
		// The front can hold dozens of plans; their full communication tables and
		// assumptions would multiply the response size (and its encoding time) for
		// detail a caller gets from EstimateStep on the plan it picks.
		pp := planToProto(p)
		pp.Estimate.Communication, pp.Estimate.Assumptions = nil, nil
		out.Pareto = append(out.Pareto, pp)
	}
	return out, nil
}

// plannerTrace makes a span of each planner phase, with the items it produced.
func (s *Service) plannerTrace(ctx context.Context) func(string) func(int) {
	if s.tracer == nil {
		return nil
	}
	return func(phase string) func(int) {
		_, span := s.tracer.Start(ctx, "planner."+phase)
		return func(items int) {
			span.SetAttributes(attribute.Int("stepcost.planner.items", items))
			span.End()
		}
	}
}

// RankConfigs estimates and ranks a batch; each failing item carries its own error.
func (s *Service) RankConfigs(ctx context.Context, req *pb.RankConfigsRequest) (*pb.RankConfigsResponse, error) {
	n := len(req.GetConfigs())
	switch {
	case n == 0:
		return nil, toStatus(invalid.Field("configs", "must list at least one config"))
	case n > s.limits.MaxRankConfigs:
		return nil, toStatus(&limitError{"configs", fmt.Sprintf("%d configs exceed the limit of %d per call (flag --max-rank-configs)", n, s.limits.MaxRankConfigs)})
	}
	obj, ok := objectives[req.GetObjective()]
	if !ok {
		return nil, toStatus(invalid.Field("objective", "%s", enumRule(req.GetObjective())))
	}
	if err := planner.CheckPrice(req.GetPricePerGpuHour(), req.GetTokenBudget()); err != nil {
		return nil, toStatus(err)
	}
	if obj == planner.Cost && !(req.GetPricePerGpuHour() > 0 && req.GetTokenBudget() > 0) {
		return nil, toStatus(invalid.Field("objective", "cost needs price_per_gpu_hour > 0 and token_budget > 0"))
	}
	if gatedBatch(n) {
		release, err := s.admit.acquire(ctx, true)
		if err != nil {
			return nil, toStatus(err)
		}
		defer release()
	}
	out := &pb.RankConfigsResponse{EstimatorVersion: EstimatorVersion, Results: make([]*pb.RankedConfig, n)}
	for i, c := range req.GetConfigs() {
		if err := ctx.Err(); err != nil {
			return nil, toStatus(err)
		}
		r := &pb.RankedConfig{Index: int32(i)}
		resp, err := s.EstimateStep(ctx, c)
		if err != nil {
			r.Error = itemError(err)
		} else {
			r.Estimate = resp.GetEstimate()
			r.Score = scoreOf(obj, req, resp.GetEstimate())
		}
		out.Results[i] = r
	}
	rankResults(out.Results)
	return out, nil
}

// rankResults ranks estimated configs in place (planner.RankConfigs): those that fit
// first, by score; the others after them, flagged infeasible; dominated ones flagged.
func rankResults(rs []*pb.RankedConfig) {
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

func scoreOf(obj planner.Objective, req *pb.RankConfigsRequest, e *pb.StepEstimate) float64 {
	switch obj {
	case planner.Throughput:
		return -e.GetThroughput().GetTokensPerSPerGpu()
	case planner.Cost:
		tokens := float64(e.GetTraining().GetGlobalBatch()) * float64(e.GetTraining().GetSeqLen())
		return req.GetTokenBudget() / tokens * e.GetStepTimeS() * float64(e.GetGpus()) * req.GetPricePerGpuHour() / 3600
	}
	return e.GetStepTimeS()
}

// SimulateCollective prices one collective.
func (s *Service) SimulateCollective(ctx context.Context, req *pb.SimulateCollectiveRequest) (*pb.SimulateCollectiveResponse, error) {
	w, err := s.simulateCollective(req)
	if err != nil {
		return nil, toStatus(err)
	}
	m, err := s.cached(ctx, "SimulateCollective", w)
	if err != nil {
		return nil, toStatus(err)
	}
	return m.(*pb.SimulateCollectiveResponse), nil
}

func (s *Service) simulateCollective(req *pb.SimulateCollectiveRequest) (work, error) {
	op, ok := collectiveOps[req.GetCollective()]
	if !ok {
		return work{}, invalid.Field("collective", "%s", enumRule(req.GetCollective()))
	}
	algo, ok := algorithms[req.GetAlgorithm()]
	if !ok {
		return work{}, invalid.Field("algorithm", "%s", enumRule(req.GetAlgorithm()))
	}
	launch, ok := launches[req.GetLaunch()]
	if !ok {
		return work{}, invalid.Field("launch", "%s", enumRule(req.GetLaunch()))
	}
	opts := collective.Options{Algo: algo, Launch: launch}
	if p := req.GetProtocol(); p != pb.Protocol_PROTOCOL_UNSPECIFIED {
		pr, ok := protocols[p]
		if !ok {
			return work{}, invalid.Field("protocol", "%s", enumRule(p))
		}
		opts.ForceProtocol, opts.Protocol = true, pr
	}
	if req.GetSizeBytes() <= 0 || req.GetSizeBytes() > 1<<50 {
		return work{}, invalid.Field("size_bytes", "must be between 1 and 2^50 (got %d)", req.GetSizeBytes())
	}
	nodes := int(req.GetNodes())
	if nodes == 0 {
		nodes = 1
	}
	spec, err := clusterSpec("cluster", req.GetCluster())
	if err != nil {
		return work{}, err
	}
	if err := checkGPUsPerNode(spec); err != nil {
		return work{}, err
	}
	if nodes < 1 {
		return work{}, invalid.Field("nodes", "must be at least 1, or 0 for 1 (got %d)", nodes)
	}
	if nodes*spec.GPUsPerNode > s.limits.MaxGPUs {
		return work{}, &limitError{"nodes", fmt.Sprintf("must be between 1 and %d nodes", s.limits.MaxGPUs/spec.GPUsPerNode)}
	}
	ce, err := s.sizedCluster(req.GetCluster(), nodes*max(1, spec.GPUsPerNode), -1)
	if err != nil {
		return work{}, err
	}
	per := int(req.GetGpusPerNode())
	if per == 0 {
		per = ce.cluster.Spec.GPUsPerNode
	}
	group, sib, err := collective.NodeGroups(ce.cluster, nodes, per, req.GetConcurrent())
	if err != nil {
		return work{}, err
	}
	p, err := collective.Place(ce.cluster, group, sib)
	if err != nil {
		return work{}, err
	}
	if err := s.collectiveApplies(req, p, op, algo); err != nil {
		return work{}, err
	}
	rows := int(req.GetMaxStepRows())
	switch {
	case rows != 0 && !req.GetSteps():
		return work{}, invalid.Field("max_step_rows", "applies only with steps: true (got %d)", rows)
	case rows < 0 || rows > collective.MaxReplayRows:
		return work{}, invalid.Field("max_step_rows", "must be between 0 (for %d) and %d (got %d)", collective.DefaultReplayRows, collective.MaxReplayRows, rows)
	}
	size := float64(req.GetSizeBytes())
	key := struct {
		Op             collective.Op
		Options        collective.Options
		Size           float64
		Nodes, PerNode int
		Concurrent     bool
		Cluster        topology.Spec
		Steps          bool
		StepRows       int
	}{op, opts, size, nodes, per, req.GetConcurrent(), ce.cluster.Spec, req.GetSteps(), rows}
	return work{key, func(ctx context.Context) (proto.Message, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chosen, err := s.coll.Estimate(p, op, size, opts)
		if err != nil {
			return nil, err
		}
		var sched *pb.CollectiveSchedule
		if req.GetSteps() {
			r, err := s.coll.Replay(p, chosen, collective.ReplayOptions{Launch: launch, MaxRows: rows})
			switch {
			case errors.Is(err, collective.ErrReplayTooLarge):
				return nil, invalid.Field("steps", "%v", err)
			case errors.Is(err, collective.ErrNoSchedule):
				return nil, invalid.Field("steps", "%v; force another algorithm with algorithm", err)
			case err != nil:
				return nil, err
			}
			sched = replayToProto(r)
		}
		out := &pb.SimulateCollectiveResponse{Chosen: collectiveEstimateToProto(chosen), Ranks: int32(p.N()),
			ConcurrentGroups: int32(len(p.Siblings)), EstimatorVersion: EstimatorVersion, Schedule: sched}
		all := s.coll.Candidates(p, op, size, collective.Options{Launch: launch, ForceProtocol: opts.ForceProtocol, Protocol: opts.Protocol}, nil)
		collective.ByTime(all)
		for _, e := range all {
			out.Considered = append(out.Considered, collectiveEstimateToProto(e))
		}
		for _, a := range collective.Algorithms() {
			if err := s.coll.Supports(p, op, a); err != nil {
				out.NotApplicable = append(out.NotApplicable, &pb.NotApplicable{Algorithm: algorithmToProto(a), Reason: err.Error()})
			}
		}
		return out, nil
	}}, nil
}

// ListCatalog lists the embedded catalog.
func (s *Service) ListCatalog(ctx context.Context, _ *pb.ListCatalogRequest) (*pb.ListCatalogResponse, error) {
	out := &pb.ListCatalogResponse{}
	for _, g := range catalog.GPUs() {
		out.Gpus = append(out.Gpus, gpuToProto(g))
	}
	for _, sp := range catalog.Systems() {
		out.Systems = append(out.Systems, &pb.SystemEntry{Name: sp.Name, Description: sp.Description, Source: sp.Source, Definition: specToDefinition(sp)})
	}
	for _, a := range model.Catalog() {
		out.Models = append(out.Models, archToProto(a))
	}
	return out, nil
}
