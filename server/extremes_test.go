package server

import (
	"context"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/model"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Valid requests at the edges of what is allowed — the smallest and largest
// models, one-token sequences and the longest, a micro-batch of the whole batch,
// every system, ZeRO stage, recomputation and schedule — are answered with numbers
// that can be right, like any other (see checkAnswer). Random mutation of a request
// rarely stays valid; these are built valid.
func TestExtremeButValidRequests(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	systems := catalog.Systems()
	models := model.Catalog()
	archs := []*pb.Architecture{
		{Layers: 1, Hidden: 1, Heads: 1, Ffn: 1, Vocab: 1},
		{Layers: 2, Hidden: 64, Heads: 8, KvHeads: 1, Ffn: 8, Vocab: 2, TiedEmbeddings: true},
		{Layers: 4, Hidden: 65536, Heads: 512, Ffn: 8, Vocab: 10_000_000, GatedMlp: true},
		{Layers: 8, Hidden: 128, Heads: 8, Ffn: 16_777_216, Vocab: 8, Moe: &pb.MoE{Experts: 64, TopK: 64, Frequency: 8}},
		{Layers: 10000, Hidden: 16, Heads: 16, Ffn: 16, Vocab: 16, Moe: &pb.MoE{Experts: 2, TopK: 1, ExpertFfn: 1}},
	}
	svc := fuzzService()
	pick := func(v []int32) int32 { return v[rng.IntN(len(v))] }
	const n = 24
	answered := 0
	for range n {
		req := &pb.EstimateStepRequest{
			Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: systems[rng.IntN(len(systems))].Name}},
			Training: &pb.Training{SeqLen: pick([]int32{1, 2, 8, 4096, 1 << 16, 1 << 24}), Precision: pb.Precision(rng.IntN(4)),
				Zero3OnDemandGathers: rng.IntN(2) == 0, Zero3BackwardPrefetch: pb.BackwardPrefetch(rng.IntN(5))},
			Layout: &pb.Layout{Tp: pick([]int32{1, 2, 4, 8}), Pp: pick([]int32{1, 2, 4}), Dp: pick([]int32{1, 2, 8, 64}),
				Cp: pick([]int32{1, 1, 2}), Zero: int32(rng.IntN(4)), Recompute: pb.Recompute(rng.IntN(5)), RecomputeLayers: pick([]int32{0, 0, 1, 3}),
				MicroBatch: pick([]int32{1, 2, 64, 65536}), Sp: rng.IntN(2) == 0, OverlapTp: rng.IntN(2) == 0, CpAllToAll: rng.IntN(2) == 0},
		}
		if req.Layout.Tp == 1 {
			req.Layout.Sp = false
		}
		req.Training.GlobalBatch = int64(req.Layout.Dp) * int64(req.Layout.MicroBatch) * int64(pick([]int32{1, 2, 16}))
		switch rng.IntN(3) {
		case 0:
			req.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: models[rng.IntN(len(models))].Name}}
		case 1:
			req.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Architecture{Architecture: archs[rng.IntN(len(archs))]}}
		default:
			req.Model = &pb.ModelSpec{Source: &pb.ModelSpec_Params{Params: []float64{1e7, 1.3e9, 7e10, 9.99e13}[rng.IntN(4)]}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		resp, err := svc.EstimateStep(ctx, req)
		cancel()
		// Many combinations are invalid; they must say why.
		if judgeCall(t, itemRequest, req, resp, err) {
			answered++
		}
	}
	if answered < n/10 {
		t.Errorf("only %d of %d requests answered: the test no longer reaches the estimator", answered, n)
	}
	t.Logf("%d of %d answered", answered, n)
}

// The same for collectives: every system, operation, algorithm, protocol and launch
// mode, one byte to 2^50, two GPUs to the largest group.
func TestExtremeButValidCollectives(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	systems := catalog.Systems()
	svc := fuzzService()
	const n = 600
	answered := 0
	for range n {
		sys := systems[rng.IntN(len(systems))]
		req := &pb.SimulateCollectiveRequest{
			Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: sys.Name}},
			Nodes:   []int32{1, 2, 3, 16, 512 / int32(sys.GPUsPerNode)}[rng.IntN(5)], Concurrent: rng.IntN(2) == 0,
			Collective: pb.Collective(1 + rng.IntN(7)), SizeBytes: []int64{1, 2, 4096, 1 << 30, 1 << 50}[rng.IntN(5)],
			Algorithm: pb.Algorithm(rng.IntN(9)), Protocol: pb.Protocol(rng.IntN(4)), Launch: pb.Launch(rng.IntN(5)),
		}
		if rng.IntN(3) == 0 {
			req.GpusPerNode = int32(sys.GPUsPerNode / []int{1, 2, sys.GPUsPerNode}[rng.IntN(3)])
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		resp, err := svc.SimulateCollective(ctx, req)
		cancel()
		if judgeCall(t, req.ProtoReflect().Descriptor(), req, resp, err) {
			answered++
		}
	}
	if answered < n/10 {
		t.Errorf("only %d of %d requests answered", answered, n)
	}
	t.Logf("%d of %d answered", answered, n)
}

// And for plans: small and large models and batches, every objective, constraints
// that leave little or nothing to search, free GPUs scattered over the nodes.
func TestExtremeButValidPlans(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	systems := catalog.Systems()
	models := model.Catalog()
	svc := fuzzService()
	const n = 24
	answered := 0
	for range n {
		sys := systems[rng.IntN(len(systems))]
		g := int32(sys.GPUsPerNode)
		req := &pb.EstimatePlanRequest{
			Model:     &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: models[rng.IntN(len(models))].Name}},
			Cluster:   &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: sys.Name}},
			Training:  &pb.Training{SeqLen: []int32{1, 2048, 1 << 20}[rng.IntN(3)], GlobalBatch: []int64{1, 64, 1 << 20}[rng.IntN(3)]},
			Objective: pb.Objective(rng.IntN(4)), PricePerGpuHour: 2, TokenBudget: []float64{1, 1e12, 1e18}[rng.IntN(3)],
			TopK: []int32{0, 1, 1000}[rng.IntN(3)],
		}
		if rng.IntN(2) == 0 {
			req.Gpus = []int32{1, g, 4 * g}[rng.IntN(3)]
		} else {
			req.MinGpus, req.MaxGpus = 1, 8*g
		}
		if rng.IntN(3) == 0 {
			req.Constraints = &pb.Constraints{Tp: []int32{1, g}, Zero: []int32{3}, MaxMicroBatch: 1, MinHeadroomGb: 10, UnevenPp: true, TpAcrossNodes: true}
		}
		if rng.IntN(3) == 0 {
			req.Cluster.FreeGpus = []*pb.NodeFreeGPUs{{Node: 1, Gpus: []int32{0}}, {Node: 5, Gpus: []int32{g - 1, 0}}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		resp, err := svc.EstimatePlan(ctx, req)
		cancel()
		if judgeCall(t, req.ProtoReflect().Descriptor(), req, resp, err) {
			answered++
		}
	}
	if answered < n/4 {
		t.Errorf("only %d of %d requests answered", answered, n)
	}
	t.Logf("%d of %d answered", answered, n)
}

// judgeCall checks one call of these tests: an error must be a documented status
// naming a field of desc, an answer must pass checkAnswer (the request is logged if
// it does not). It reports whether the call was answered.
func judgeCall(t *testing.T, desc protoreflect.MessageDescriptor, req, resp proto.Message, err error) bool {
	t.Helper()
	if err != nil {
		checkStatus(t, desc, err)
		return false
	}
	t.Run("", func(t *testing.T) {
		defer func() {
			if t.Failed() {
				b, _ := protojson.Marshal(req)
				t.Logf("request: %s", b)
			}
		}()
		checkAnswer(t, resp)
	})
	return true
}
