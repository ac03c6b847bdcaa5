package cli

import (
	"context"
	"net"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// bigAnswers is a daemon whose EstimatePlan answers with size bytes: one plan
// listing size/4 GPUs, or past the CLI's limit a long version string.
type bigAnswers struct {
	pb.UnimplementedStepcostServiceServer
	size int
}

func (b bigAnswers) EstimatePlan(context.Context, *pb.EstimatePlanRequest) (*pb.EstimatePlanResponse, error) {
	if b.size > maxAnswerBytes {
		return &pb.EstimatePlanResponse{EstimatorVersion: strings.Repeat("v", b.size)}, nil
	}
	gpus := make([]int32, b.size/4)
	for i := range gpus {
		gpus[i] = 1 << 21 // four bytes each as a varint
	}
	return &pb.EstimatePlanResponse{Plans: []*pb.Plan{{Rank: 1, Gpus: int32(len(gpus)), Placement: &pb.Placement{Nodes: []*pb.NodeUse{{Gpus: gpus}}}}}}, nil
}

func serveAnswers(t *testing.T, size int) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterStepcostServiceServer(s, bigAnswers{size: size})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// An answer over gRPC's default 4 MiB receive limit (about 2 M GPUs listed)
// reaches the command line; one over its own limit is refused saying what to do.
func TestRemoteAnswerOver4MiB(t *testing.T) {
	plan := []string{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "32", "--gbs", "256", "--seq", "8192"}
	big, _ := bigAnswers{size: 5 << 20}.EstimatePlan(context.Background(), nil)
	if n := proto.Size(big); n <= 4<<20 {
		t.Fatalf("the answer is %d bytes, not over 4 MiB", n)
	}
	code, out, errOut := run(append(plan, "--json", "--server", serveAnswers(t, 5<<20))...)
	if code != 0 || !regexp.MustCompile(`"gpus":\s*1310720`).MatchString(out) {
		t.Errorf("a 5 MiB answer: exit %d, %d bytes out, %s", code, len(out), errOut)
	}

	code, _, errOut = run(append(plan, "--server", serveAnswers(t, maxAnswerBytes+1<<20))...)
	if code != 1 || !strings.Contains(errOut, "larger than the 64 MiB") || !strings.Contains(errOut, "--top") {
		t.Errorf("an answer over the limit: exit %d, %s", code, errOut)
	}
}
