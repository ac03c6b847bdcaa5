package server

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/cache"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/internal/buildinfo"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
	"github.com/stepcost/stepcost/server/admission"
)

// EstimatorVersion identifies the models behind the answers (buildinfo.EstimatorVersion).
const EstimatorVersion = buildinfo.EstimatorVersion

// Version is the one-line answer to --version of the stepcost binaries.
func Version(program string) string { return buildinfo.Version(program) }

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
	return Limits{MaxGPUs: 131072, MaxRankConfigs: 1000, MaxCandidates: 2_000_000, MaxSearchGPUs: 1_000_000,
		MaxConcurrentSearches: defaultConcurrentSearches, MaxQueuedSearches: 32}
}

// Service implements the API on the estimator and the planner.
type Service struct {
	pb.UnimplementedStepcostServiceServer
	limits   Limits
	cache    *cache.Cache[proto.Message]
	coll     *collective.Model
	clusters *wire.Clusters
	// tracer, when set, gets a span per planner phase under the RPC's span.
	tracer trace.Tracer
	// admit bounds the searches running at once (admission.go).
	admit *admission.Control
	// scratch serves searches whose free map moves ranks (estimators.go).
	scratch scratchEstimator
}

// NewService builds a service; c may be nil for no cache.
func NewService(limits Limits, c *cache.Cache[proto.Message]) *Service {
	return &Service{limits: limits, cache: c, coll: collective.NewModel(collective.Default()),
		clusters: wire.NewClusters(64),
		admit:    admission.New(limits.MaxConcurrentSearches, limits.MaxQueuedSearches)}
}

// sizedCluster resolves a cluster spec big enough for gpus GPUs (and every node a
// free map names).
func (s *Service) sizedCluster(c *pb.ClusterSpec, gpus, topNode int) (*wire.ClusterEntry, error) {
	return s.clusters.Sized(c, gpus, topNode, s.limits.MaxGPUs)
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
// the key as sent. The cache stores a copy
// marked cached and hands it out as is (responses are only read after this point:
// gRPC and the gateway marshal them); the caller that computed it gets its own copy
// marked not cached.
func (s *Service) cached(ctx context.Context, method string, w work) (proto.Message, error) {
	w.run = finiteRun(w.run)
	if s.cache == nil {
		return w.run(ctx)
	}
	rest, resolved, err := w.key.parts()
	if err != nil { // a value JSON cannot spell (NaN): answer without the cache
		return w.run(ctx)
	}
	m, hit, err := s.cache.Get(ctx, cache.Key([]byte(method), []byte(EstimatorVersion), rest, resolved), func(ctx context.Context) (proto.Message, error) {
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
	st, err := wire.ResolveStep(s.clusters, req, s.limits.MaxGPUs)
	if err != nil {
		return work{}, err
	}
	return work{requestKey{stepRest(req), st.Key()}, func(ctx context.Context) (proto.Message, error) { return st.Estimate(ctx) }}, nil
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
	p, err := wire.ResolvePlan(s.clusters, req, s.limits.MaxGPUs, s.limits.MaxCandidates)
	if err != nil {
		return work{}, err
	}
	if err := s.checkSearchSize(p.Request); err != nil {
		return work{}, err
	}
	return work{requestKey{planRest(req), p.Key()}, func(ctx context.Context) (proto.Message, error) {
		pr := p.Request
		pr.Trace = s.plannerTrace(ctx)
		return s.search(ctx, p.Cluster, pr)
	}}, nil
}

func (s *Service) search(ctx context.Context, ce *wire.ClusterEntry, pr planner.Request) (*pb.EstimatePlanResponse, error) {
	release, err := s.admit.Acquire(ctx, largeSearch(pr))
	if err != nil {
		return nil, err
	}
	defer release()
	return wire.Search(ctx, s.estimatorFor(ce, pr), pr)
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
	obj, err := wire.RankObjective(req, s.limits.MaxRankConfigs)
	if err != nil {
		return nil, toStatus(err)
	}
	n := len(req.GetConfigs())
	if gatedBatch(n) {
		release, err := s.admit.Acquire(ctx, true)
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
			r.Score = wire.Score(obj, req, resp.GetEstimate())
		}
		out.Results[i] = r
	}
	wire.RankResults(out.Results)
	return out, nil
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
	c, err := wire.ResolveCollective(s.clusters, s.coll, req, s.limits.MaxGPUs)
	if err != nil {
		return work{}, err
	}
	return work{requestKey{collectiveRest(req), c.Key()}, func(ctx context.Context) (proto.Message, error) { return c.Simulate(ctx) }}, nil
}

// ListCatalog lists the embedded catalog.
func (s *Service) ListCatalog(ctx context.Context, _ *pb.ListCatalogRequest) (*pb.ListCatalogResponse, error) {
	return wire.Catalog(), nil
}
