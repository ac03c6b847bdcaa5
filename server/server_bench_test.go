package server

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

func planRequest() *pb.EstimatePlanRequest {
	return &pb.EstimatePlanRequest{Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: "llama3-8b"}},
		Cluster:  &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
		Training: &pb.Training{SeqLen: 8192, GlobalBatch: 256}, Gpus: 32, TopK: 3}
}

// loopback starts the daemon on loopback TCP and returns a client.
func loopback(b *testing.B) pb.StepcostServiceClient {
	b.Helper()
	d := startDaemon(b, nil)
	b.Cleanup(func() { d.stop() })
	conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return pb.NewStepcostServiceClient(conn)
}

// BenchmarkCachedEstimatePlan: a scheduler asking the same question again over
// loopback gRPC. Reports p50 and p99 latency besides the mean.
func BenchmarkCachedEstimatePlan(b *testing.B) {
	c := loopback(b)
	req := planRequest()
	fromCache(b, "warm-up", func() (*pb.EstimatePlanResponse, error) { return c.EstimatePlan(context.Background(), req) })
	b.ReportAllocs()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		r, err := c.EstimatePlan(context.Background(), req)
		if err != nil || !r.GetCached() {
			b.Fatalf("%v cached=%v", err, r.GetCached())
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkUncachedEstimatePlan: a new question each time (the batch varies).
func BenchmarkUncachedEstimatePlan(b *testing.B) {
	c := loopback(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := planRequest()
		i++
		req.Training.GlobalBatch = int64(256 + 32*i)
		if _, err := c.EstimatePlan(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCachedEstimatePlanParallel: throughput with many clients at once.
func BenchmarkCachedEstimatePlanParallel(b *testing.B) {
	c := loopback(b)
	req := planRequest()
	if _, err := c.EstimatePlan(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.EstimatePlan(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
