package server

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Every RPC called by many clients at once on a daemon of its own (cold), with identical and
// differing requests interleaved (so that calls share one computation in the
// cache, wait for it, and compute side by side), answers each caller what the
// same request answers alone afterwards, byte for byte but for the cached flag.
// Run under -race (CI runs go test -race), it also checks that no answer the
// cache hands to several callers is written while another reads it.
func TestConcurrentCallsEveryRPC(t *testing.T) {
	var svc pb.StepcostServiceClient
	var pics pb.PictureServiceClient
	fromJSON := func(body string, m proto.Message) proto.Message {
		if err := protojson.Unmarshal([]byte(body), m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	step := func(v int) *pb.EstimateStepRequest {
		r := stepRequest()
		if v == 1 {
			r.Layout.Tp, r.Layout.Dp = 4, 8
		}
		return r
	}
	plan := func(v int) *pb.EstimatePlanRequest {
		r := planRequest()
		r.TopK += int32(v)
		return r
	}
	coll := func(v int) *pb.SimulateCollectiveRequest {
		r := fromJSON(okColl, new(pb.SimulateCollectiveRequest)).(*pb.SimulateCollectiveRequest)
		r.SizeBytes >>= 10 * v
		return r
	}
	cal := func(v int) *pb.CalibrateClusterRequest {
		r := fromJSON(okCal, new(pb.CalibrateClusterRequest)).(*pb.CalibrateClusterRequest)
		r.Name = fmt.Sprint("mine-", v)
		return r
	}
	type call func(ctx context.Context, v int) (proto.Message, error)
	rpcs := []struct {
		name string
		call call
	}{
		{"EstimateStep", func(ctx context.Context, v int) (proto.Message, error) { return svc.EstimateStep(ctx, step(v)) }},
		{"EstimatePlan", func(ctx context.Context, v int) (proto.Message, error) { return svc.EstimatePlan(ctx, plan(v)) }},
		{"RankConfigs", func(ctx context.Context, v int) (proto.Message, error) {
			return svc.RankConfigs(ctx, &pb.RankConfigsRequest{Configs: []*pb.EstimateStepRequest{step(v), step(1 - v)}})
		}},
		{"SimulateCollective", func(ctx context.Context, v int) (proto.Message, error) { return svc.SimulateCollective(ctx, coll(v)) }},
		{"ListCatalog", func(ctx context.Context, _ int) (proto.Message, error) {
			return svc.ListCatalog(ctx, &pb.ListCatalogRequest{})
		}},
		{"CalibrateCluster", func(ctx context.Context, v int) (proto.Message, error) { return svc.CalibrateCluster(ctx, cal(v)) }},
		{"DrawSchedule", func(ctx context.Context, v int) (proto.Message, error) {
			return pics.DrawSchedule(ctx, &pb.DrawScheduleRequest{Estimate: step(v)})
		}},
		{"DrawPareto", func(ctx context.Context, v int) (proto.Message, error) {
			return pics.DrawPareto(ctx, &pb.DrawParetoRequest{Plan: plan(v)})
		}},
		{"DrawCalibration", func(ctx context.Context, v int) (proto.Message, error) {
			return pics.DrawCalibration(ctx, &pb.DrawCalibrationRequest{Calibration: cal(v)})
		}},
	}
	// answer is m's encoding without the fields that describe the call: the
	// cached flag (a hit says so) and a search's elapsed time. The cache stores
	// an answer asynchronously and may drop it under contention, so a caller
	// arriving after the first computation ended may compute again: its answer
	// is the same but for the time its search took
	// (TestEstimatePlanAnswersAreByteIdentical).
	answer := func(m proto.Message) []byte {
		m = proto.Clone(m)
		switch r := m.(type) {
		case *pb.EstimateStepResponse:
			r.Cached = false
		case *pb.EstimatePlanResponse:
			r.Cached = false
			if r.Stats != nil {
				r.Stats.ElapsedMs = 0
			}
		case *pb.SimulateCollectiveResponse:
			r.Cached = false
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const callers = 8
	for _, rpc := range rpcs {
		t.Run(rpc.name, func(t *testing.T) {
			// A daemon of its own, its cache cold.
			conn := grpcConn(t, secureDaemon(t, nil))
			svc, pics = pb.NewStepcostServiceClient(conn), pb.NewPictureServiceClient(conn)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			got := make([][]byte, callers)
			errs := make([]error, callers)
			var wg sync.WaitGroup
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m, err := rpc.call(ctx, i%2)
					if errs[i] = err; err == nil {
						got[i] = answer(m)
					}
				}()
			}
			wg.Wait()
			for v := range 2 {
				m, err := rpc.call(ctx, v)
				if err != nil {
					t.Fatalf("request %d alone: %v", v, err)
				}
				want := answer(m)
				for i := v; i < callers; i += 2 {
					if errs[i] != nil {
						t.Errorf("caller %d (request %d): %v", i, v, errs[i])
					} else if !bytes.Equal(got[i], want) {
						t.Errorf("caller %d (request %d): %d B answer, alone %d B: not the same", i, v, len(got[i]), len(want))
					}
				}
			}
		})
	}
}
