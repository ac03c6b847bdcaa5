// Package service is stepcost's one answer to every API call, in the daemon and in
// the command line alike: a proto request is resolved and validated once
// (internal/wire), keyed from what it resolved to, answered from the cache or by
// the planner and the estimator, converted back (internal/wire) and checked finite.
// Errors are typed (CodeOf); the daemon's server package turns them into gRPC
// status, the command line into messages naming its flags. The limits that bound
// one request live here; the transport (gRPC, the REST gateway, authentication,
// telemetry, the slots of admission control) lives in package server.
package service

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/internal/buildinfo"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Limits bound what one request may ask for.
type Limits struct {
	MaxGPUs        int // GPUs of a job or cluster
	MaxRankConfigs int // configs in one RankConfigs call
	MaxCandidates  int // layouts one EstimatePlan may enumerate (0: no limit)
	// MaxSearchGPUs bounds the GPUs one EstimatePlan places, summed over the job
	// sizes it tries (0: no limit; see planner.SearchGPUs).
	MaxSearchGPUs int
	// MaxAnswerGPUs bounds the GPUs one EstimatePlan answer may list: each plan
	// lists every GPU of its placement, so top_k × the largest job size (0: no
	// limit; DefaultAnswerGPUs).
	MaxAnswerGPUs int
	// Service-wide, not per request (the daemon's admission control): searches (and
	// large RankConfigs calls) running at once (0: no limit), and waiting for a slot.
	MaxConcurrentSearches, MaxQueuedSearches int
}

// DefaultConcurrentSearches is two: with one, a large search holds up all the
// others (in the load test, 17 of ~1 950 ordinary searches got through in 20 s);
// with four on the manifests' 2 CPUs, small requests waited for the CPU (p99 2.8 s
// against 0.12 s with two); and each may hold ~130 MB, two of them and the 256 MiB
// cache leaving room in the manifests' 1 GiB.
const DefaultConcurrentSearches = 2

// DefaultAnswerGPUs is 16 plans of the largest job --max-gpus allows by default
// (131 072 GPUs): the default top_k (10) passes on any job. An answer of 2 Mi GPUs
// is ~9 MB in protobuf and ~23 MB in JSON (measured: 47 plans on 98 304 GPUs, 10.3
// MB and 26.7 MB), held a few times over while it is built and sent; 409 plans on
// 98 304 GPUs (top_k 1000) took the daemon to 3.4 GB resident.
const DefaultAnswerGPUs = 16 * 131072

// DefaultLimits are safe for a shared service; the command line answers in process
// under the same ones, so that what a daemon takes it takes too.
func DefaultLimits() Limits {
	return Limits{MaxGPUs: 131072, MaxRankConfigs: 1000, MaxCandidates: 2_000_000, MaxSearchGPUs: 1_000_000,
		MaxAnswerGPUs: DefaultAnswerGPUs, MaxConcurrentSearches: DefaultConcurrentSearches, MaxQueuedSearches: 32}
}

// Validate checks the limits, naming each by its flag.
func (l Limits) Validate(v *invalid.Collector) {
	if l.MaxGPUs < 1 {
		v.Add("--max-gpus", "must be ≥ 1 (got %d)", l.MaxGPUs)
	}
	if l.MaxRankConfigs < 1 {
		v.Add("--max-rank-configs", "must be ≥ 1 (got %d)", l.MaxRankConfigs)
	}
	if l.MaxCandidates < 0 {
		v.Add("--max-candidates", "must be ≥ 0 (got %d)", l.MaxCandidates)
	}
	if l.MaxConcurrentSearches < 0 {
		v.Add("--max-concurrent-searches", "must be ≥ 0 (got %d)", l.MaxConcurrentSearches)
	}
	if l.MaxQueuedSearches < 0 {
		v.Add("--max-queued-searches", "must be ≥ 0 (got %d)", l.MaxQueuedSearches)
	}
	if l.MaxSearchGPUs < 0 {
		v.Add("--max-search-gpus", "must be ≥ 0 (got %d)", l.MaxSearchGPUs)
	}
	if l.MaxAnswerGPUs < 0 {
		v.Add("--max-answer-gpus", "must be ≥ 0 (got %d)", l.MaxAnswerGPUs)
	}
}

// Gate admits the expensive calls (searches, large batches, calibrations): Acquire
// waits for a slot (large ones for a large slot) and returns its release, or fails
// with an error of the gate's own (busy, or the deadline passed while waiting).
type Gate interface {
	Acquire(ctx context.Context, large bool) (release func(), err error)
	// AcquireHeap admits a call that holds up to heap bytes of live heap in as
	// many slots as that weighs; granted is the heap of the slots taken (0:
	// slots are not weighed).
	AcquireHeap(ctx context.Context, large bool, heap int64) (release func(), granted int64, err error)
	// Heap is the live heap of all the slots, the most one call may hold (0:
	// calls are not weighed by their heap).
	Heap() int64
}

// Options of a Service; the zero value is a service without cache, gate or traces
// under DefaultLimits.
type Options struct {
	Limits *Limits // nil: DefaultLimits
	// Cache holds answers by request key; nil for none.
	Cache *cache.Cache[proto.Message]
	// Gate admits the expensive calls; nil admits them all at once.
	Gate Gate
	// Tracer, when set, gets a span per planner phase under the call's span.
	Tracer trace.Tracer
	// APISpelling has a RankConfigs item's refusal and an EstimatePlan's no-plan
	// reason name the values of enum-valued fields as the API does (APIItemError,
	// wire.APINoPlanReason: SCHEDULE_ZB_H1), for the API's callers; the command
	// line's spelling (zb-h1) otherwise.
	APISpelling bool
}

// Service answers the API's calls.
type Service struct {
	limits Limits
	cache  *cache.Cache[proto.Message]
	gate   Gate
	tracer trace.Tracer
	// apiSpelling: refusals and no-plan reasons name enum values as the API does
	// (Options.APISpelling); itemError is a RankConfigs item's refusal so spelled.
	apiSpelling bool
	itemError   func(error) *pb.ItemError
	coll        *collective.Model
	clusters    *wire.Clusters
	// scratch serves searches whose free map moves ranks (estimators.go).
	scratch scratchEstimator
}

// New builds a service.
func New(o Options) *Service {
	lim := DefaultLimits()
	if o.Limits != nil {
		lim = *o.Limits
	}
	itemError := ItemError
	if o.APISpelling {
		itemError = APIItemError
	}
	return &Service{limits: lim, cache: o.Cache, gate: o.Gate, tracer: o.Tracer, apiSpelling: o.APISpelling, itemError: itemError,
		coll: collective.NewModel(collective.Default()), clusters: wire.NewClusters(64)}
}

// Limits are the limits the service applies.
func (s *Service) Limits() Limits { return s.limits }

// acquire takes a slot of the gate, if there is one.
func (s *Service) acquire(ctx context.Context, large bool) (func(), error) {
	if s.gate == nil {
		return func() {}, nil
	}
	return s.gate.Acquire(ctx, large)
}

// work is a validated request: what it resolves to (the cache key) and the
// computation that answers it.
type work struct {
	key requestKey
	run func(context.Context) (proto.Message, error)
}

// cached answers from the cache when possible. The key is the request with the
// parts it was resolved from replaced by what they resolved to (requestKey: the
// model's architecture, the cluster's spec, the layout and training with their
// defaults, constraint lists as sets, free GPUs in order), so that equivalent
// requests — a model by name or by its architecture, lists in another order,
// defaults spelled out or left out — share one entry, and every other field is in
// the key as sent. The cache stores a copy marked cached and hands it out as is
// (responses are only read after this point: gRPC and the gateway marshal them);
// the caller that computed it gets its own copy marked not cached. Every answer,
// cached or not, is checked finite (finiteRun).
func (s *Service) cached(ctx context.Context, method string, w work) (proto.Message, error) {
	w.run = finiteRun(w.run)
	if s.cache == nil {
		return w.run(ctx)
	}
	rest, resolved, err := w.key.parts()
	if err != nil { // a value JSON cannot spell (NaN): answer without the cache
		return w.run(ctx)
	}
	m, hit, err := s.cache.Get(ctx, cache.Key([]byte(method), []byte(buildinfo.EstimatorVersion), rest, resolved), func(ctx context.Context) (proto.Message, error) {
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
	req = positiveZeros(req)
	w, err := s.estimateStep(req)
	if err != nil {
		return nil, err
	}
	m, err := s.cached(ctx, "EstimateStep", w)
	// The key holds layout.recompute_modules as a set, so a computation for the same
	// modules in another order, at the same time, may have answered: its field
	// errors name that order's indices. Estimated again for this caller alone (a
	// refused layout is refused in validation, before any pricing).
	if err != nil && ctx.Err() == nil && len(req.GetLayout().GetRecomputeModules()) > 1 {
		if code, _ := CodeOf(err); code == InvalidArgument {
			m, err = finiteRun(w.run)(ctx)
		}
	}
	if err != nil {
		return nil, err
	}
	return stepWarned(m.(*pb.EstimateStepResponse), wire.BaseKeeps("cluster", req.GetCluster())), nil
}

// stepWarned is resp with warnings ws added to a copy (the cache's answers are
// shared, and the key does not hold how the cluster was spelled, so what the
// request's spelling warns of is added after it); resp itself without any.
func stepWarned(resp *pb.EstimateStepResponse, ws []string) *pb.EstimateStepResponse {
	if len(ws) == 0 || resp.GetEstimate() == nil {
		return resp
	}
	resp = proto.CloneOf(resp)
	resp.Estimate.Warnings = append(resp.Estimate.Warnings, ws...)
	return resp
}

// planWarned is stepWarned for every plan's estimate (the Pareto front's carry
// no warnings).
func planWarned(resp *pb.EstimatePlanResponse, ws []string) *pb.EstimatePlanResponse {
	if len(ws) == 0 {
		return resp
	}
	resp = proto.CloneOf(resp)
	for _, p := range resp.GetPlans() {
		if p.Estimate != nil {
			p.Estimate.Warnings = append(p.Estimate.Warnings, ws...)
		}
	}
	return resp
}

func (s *Service) estimateStep(req *pb.EstimateStepRequest) (work, error) {
	req = positiveZeros(req)
	st, err := wire.ResolveStep(s.clusters, req, s.limits.MaxGPUs)
	if err != nil {
		return work{}, err
	}
	return work{requestKey{stepRest(req), st.Key()}, func(ctx context.Context) (proto.Message, error) {
		res, err := estimate(ctx, st)
		if err != nil {
			return nil, err
		}
		return st.Response(res), nil
	}}, nil
}

// estimate runs the step model on a resolved request.
func estimate(ctx context.Context, st *wire.Step) (step.Result, error) {
	if err := ctx.Err(); err != nil {
		return step.Result{}, err
	}
	return st.Cluster.Est.Estimate(st.Request())
}

// EstimatePlan searches and ranks the plans of a job.
func (s *Service) EstimatePlan(ctx context.Context, req *pb.EstimatePlanRequest) (*pb.EstimatePlanResponse, error) {
	req = positiveZeros(req)
	w, err := s.estimatePlan(req)
	if err != nil {
		return nil, err
	}
	m, err := s.cached(ctx, "EstimatePlan", w)
	if err != nil {
		return nil, err
	}
	return planWarned(m.(*pb.EstimatePlanResponse), wire.BaseKeeps("cluster", req.GetCluster())), nil
}

func (s *Service) estimatePlan(req *pb.EstimatePlanRequest) (work, error) {
	req = positiveZeros(req)
	p, err := wire.ResolvePlan(s.clusters, req, s.limits.MaxGPUs, s.limits.MaxCandidates)
	if err != nil {
		return work{}, err
	}
	if err := s.checkSearchSize(p.Request); err != nil {
		return work{}, err
	}
	return work{requestKey{planRest(req), p.Key()}, func(ctx context.Context) (proto.Message, error) {
		resp, _, err := s.plan(ctx, p)
		return resp, err
	}}, nil
}

func (s *Service) plan(ctx context.Context, p *wire.Plan) (*pb.EstimatePlanResponse, planner.Result, error) {
	pr := p.Request
	pr.Trace = s.plannerTrace(ctx)
	res, err := s.search(ctx, p.Cluster, pr)
	if err != nil {
		return nil, res, err
	}
	resp, err := wire.PlanResponse(ctx, pr, res, s.limits.MaxAnswerGPUs)
	if err == nil && s.apiSpelling {
		resp.NoPlanReason = wire.APINoPlanReason(resp.NoPlanReason)
	}
	return resp, res, err
}

// PlanResult answers an EstimatePlan request as EstimatePlan does, but never from
// the cache, and also returns the planner's result, for a caller in process that
// draws it (the command line's --svg).
func (s *Service) PlanResult(ctx context.Context, req *pb.EstimatePlanRequest) (*pb.EstimatePlanResponse, planner.Result, error) {
	req = positiveZeros(req)
	p, err := wire.ResolvePlan(s.clusters, req, s.limits.MaxGPUs, s.limits.MaxCandidates)
	if err != nil {
		return nil, planner.Result{}, err
	}
	if err := s.checkSearchSize(p.Request); err != nil {
		return nil, planner.Result{}, err
	}
	resp, res, err := s.plan(ctx, p)
	if err != nil {
		return nil, res, err
	}
	if err := checkFinite(resp); err != nil {
		return nil, res, err
	}
	return planWarned(resp, wire.BaseKeeps("cluster", req.GetCluster())), res, nil
}

// StepResult answers an EstimateStep request as EstimateStep does, but never from
// the cache, and also returns the estimator's result, for a caller that draws it
// (the answer's assumptions also say how a shape was derived from a parameter
// count; the result's are the estimator's own).
func (s *Service) StepResult(ctx context.Context, req *pb.EstimateStepRequest) (*pb.EstimateStepResponse, step.Result, error) {
	req = positiveZeros(req)
	st, err := wire.ResolveStep(s.clusters, req, s.limits.MaxGPUs)
	if err != nil {
		return nil, step.Result{}, err
	}
	res, err := estimate(ctx, st)
	if err != nil {
		return nil, res, err
	}
	resp := st.Response(res)
	if err := checkFinite(resp); err != nil {
		return nil, res, err
	}
	return stepWarned(resp, wire.BaseKeeps("cluster", req.GetCluster())), res, nil
}

// search runs the planner in a slot of the gate (only a cache miss gets here).
func (s *Service) search(ctx context.Context, ce *wire.ClusterEntry, pr planner.Request) (planner.Result, error) {
	release, err := s.acquire(ctx, largeSearch(pr))
	if err != nil {
		return planner.Result{}, err
	}
	defer release()
	res, err := planner.Search(ctx, s.estimatorFor(ce, pr), pr)
	if errors.Is(err, planner.ErrTooManyLayouts) {
		field := "gpus" // the size the request gave: one, or a sweep up to max_gpus
		if pr.GPUs == 0 {
			field = "max_gpus"
		}
		return res, wire.Limit(field, fmt.Sprintf("%v layouts, the service's limit (stepcostd --max-candidates); narrow gpus, min_gpus/max_gpus or constraints", err))
	}
	return res, err
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

// RankConfigs estimates and ranks a batch; each failing item carries its own error
// (ItemError).
func (s *Service) RankConfigs(ctx context.Context, req *pb.RankConfigsRequest) (*pb.RankConfigsResponse, error) {
	req = positiveZeros(req)
	obj, err := wire.RankObjective(req, s.limits.MaxRankConfigs)
	if err != nil {
		return nil, err
	}
	n := len(req.GetConfigs())
	if gatedBatch(n) {
		release, err := s.acquire(ctx, true)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	out := &pb.RankConfigsResponse{EstimatorVersion: buildinfo.EstimatorVersion, Results: make([]*pb.RankedConfig, n)}
	for i, c := range req.GetConfigs() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := &pb.RankedConfig{Index: int32(i)}
		resp, err := s.EstimateStep(ctx, c)
		if err != nil && ctx.Err() != nil {
			// The call ran out of time (or was cancelled) in this item: the call's
			// error, not the item's, as when it happens before another item
			// (TestRankConfigsDeadlineInTheLastItem).
			return nil, ctx.Err()
		}
		if err == nil {
			err = wire.CheckRankBudget(req, resp.GetEstimate())
		}
		if err != nil {
			r.Error = s.itemError(err)
		} else {
			r.Estimate = resp.GetEstimate()
			r.Score = wire.Score(obj, req, resp.GetEstimate())
		}
		out.Results[i] = r
	}
	wire.RankResults(out.Results)
	return out, nil
}

// SimulateCollective prices one collective.
func (s *Service) SimulateCollective(ctx context.Context, req *pb.SimulateCollectiveRequest) (*pb.SimulateCollectiveResponse, error) {
	req = positiveZeros(req)
	w, err := s.simulateCollective(req)
	if err != nil {
		return nil, err
	}
	m, err := s.cached(ctx, "SimulateCollective", w)
	if err != nil {
		return nil, err
	}
	resp := m.(*pb.SimulateCollectiveResponse)
	if ws := wire.BaseKeeps("cluster", req.GetCluster()); len(ws) > 0 { // after the cache, as stepWarned
		resp = proto.CloneOf(resp)
		resp.Warnings = append(resp.Warnings, ws...)
	}
	return resp, nil
}

func (s *Service) simulateCollective(req *pb.SimulateCollectiveRequest) (work, error) {
	req = positiveZeros(req)
	c, err := wire.ResolveCollective(s.clusters, s.coll, req, s.limits.MaxGPUs)
	if err != nil {
		return work{}, err
	}
	return work{requestKey{collectiveRest(req), c.Key()}, func(ctx context.Context) (proto.Message, error) { return simulate(ctx, c) }}, nil
}

// simulate prices a resolved collective: the algorithm the model chooses (or the
// one forced), its schedule when asked for, every candidate and why the other
// algorithms do not apply.
func simulate(ctx context.Context, c *wire.Collective) (*pb.SimulateCollectiveResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	chosen, err := c.Model.Estimate(c.Placement, c.Op, c.Size, c.Options)
	if err != nil {
		return nil, err
	}
	var replay *collective.Replay
	if c.Steps {
		replay, err = c.Model.Replay(c.Placement, chosen, collective.ReplayOptions{Launch: c.Options.Launch, MaxRows: c.Rows})
		switch {
		case errors.Is(err, collective.ErrReplayTooLarge):
			return nil, invalid.Field("steps", "%v", err)
		case errors.Is(err, collective.ErrNoSchedule):
			// The algorithm is a value, for the API to name as it does (ALGORITHM_NVLS_TREE).
			return nil, invalid.Field("steps", "%v: %v is priced by its closed form only; force another algorithm (field algorithm; --algo on the command line)",
				collective.ErrNoSchedule, chosen.Algo)
		case err != nil:
			return nil, err
		}
	}
	all := c.Model.Candidates(c.Placement, c.Op, c.Size, collective.Options{Launch: c.Options.Launch, ForceProtocol: c.Options.ForceProtocol, Protocol: c.Options.Protocol}, nil)
	collective.ByTime(all)
	notApplicable := map[collective.Algorithm]error{}
	for _, a := range collective.Algorithms() {
		if err := c.Model.Supports(c.Placement, c.Op, a); err != nil {
			notApplicable[a] = err
		}
	}
	resp := c.Response(chosen, replay, all, notApplicable)
	if c.Options.ForceProtocol && chosen.Protocol != c.Options.Protocol {
		// The model forces a protocol on ring and tree only (NCCL_PROTO), and a
		// network of simple_protocol_only runs Simple across nodes whatever is
		// forced: the protocol asked for is not the one priced, and says so.
		resp.Warnings = append(resp.Warnings, fmt.Sprintf("protocol: %s is not what the chosen %s runs (%s): a protocol is forced on ring and tree only, as NCCL_PROTO does, and across nodes of nics.simple_protocol_only only Simple runs; force algorithm ring or tree with it",
			wire.ProtocolToProto(c.Options.Protocol), wire.AlgorithmToProto(chosen.Algo), wire.ProtocolToProto(chosen.Protocol)))
	}
	if c.Concurrent() && c.Placement.Concurrent <= 1 {
		resp.Warnings = append(resp.Warnings, fmt.Sprintf("concurrent: no effect: the group holds all %d GPUs of each of its nodes, so no other GPUs run beside it (give gpus_per_node below %d)",
			c.GPUsPerNode(), c.GPUsPerNode()))
	}
	return resp, nil
}

// ListCatalog lists the embedded catalog.
func (s *Service) ListCatalog(context.Context, *pb.ListCatalogRequest) (*pb.ListCatalogResponse, error) {
	return wire.Catalog(), nil
}

// checkSearchSize refuses a search over MaxSearchGPUs, or whose answer could list
// more than MaxAnswerGPUs GPUs, before it runs.
func (s *Service) checkSearchSize(pr planner.Request) error {
	if n := planner.SearchGPUs(pr); s.limits.MaxSearchGPUs > 0 && n > s.limits.MaxSearchGPUs {
		if pr.GPUs > 0 { // one job size: the field the caller sent
			return wire.Limit("gpus", fmt.Sprintf("the search would place %d GPUs, over the limit of %d (flag --max-search-gpus); ask for fewer GPUs", n, s.limits.MaxSearchGPUs))
		}
		return wire.Limit("max_gpus", fmt.Sprintf("the search would place %d GPUs summed over its job sizes, over the limit of %d (flag --max-search-gpus); narrow min_gpus/max_gpus", n, s.limits.MaxSearchGPUs))
	}
	if s.limits.MaxAnswerGPUs <= 0 {
		return nil
	}
	topK := pr.TopK
	if topK == 0 {
		topK = planner.DefaultTopK
	}
	if topK > planner.MaxTopK {
		// Out of top_k's own range, which the planner refuses naming it: a size
		// to ask for would advise more plans than that range allows.
		return nil
	}
	// The largest job the search tries: gpus, or the top of min_gpus…max_gpus.
	if n := topK * max(pr.GPUs, pr.MaxGPUs); n > s.limits.MaxAnswerGPUs {
		return wire.Limit("top_k", fmt.Sprintf("%d plans of up to %d GPUs would list %d GPUs in their placements, over the limit of %d (flag --max-answer-gpus); ask for at most %d plans",
			topK, max(pr.GPUs, pr.MaxGPUs), n, s.limits.MaxAnswerGPUs, max(1, s.limits.MaxAnswerGPUs/max(pr.GPUs, pr.MaxGPUs))))
	}
	return nil
}
