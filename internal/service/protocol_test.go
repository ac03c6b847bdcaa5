package service

import (
	"context"
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// A protocol forced without an algorithm that runs it is said in the answer's
// warnings, naming the field: the collective model forces a protocol on ring and
// tree only, so LL on two DGX H100 nodes was answered with NVLS tree on Simple
// and not a word of the LL asked for. Forced with ring, it is priced, and no
// warning; no protocol, no warning. The prices are unchanged.
func TestForcedProtocolNotPricedIsWarned(t *testing.T) {
	s := New(Options{})
	req := func(algo pb.Algorithm, proto pb.Protocol) *pb.SimulateCollectiveRequest {
		return &pb.SimulateCollectiveRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}}, Nodes: 2,
			Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 30, Algorithm: algo, Protocol: proto}
	}
	ask := func(r *pb.SimulateCollectiveRequest) *pb.SimulateCollectiveResponse {
		t.Helper()
		resp, err := s.SimulateCollective(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	auto := ask(req(pb.Algorithm_ALGORITHM_UNSPECIFIED, pb.Protocol_PROTOCOL_UNSPECIFIED))
	forced := ask(req(pb.Algorithm_ALGORITHM_UNSPECIFIED, pb.Protocol_PROTOCOL_LL))
	if forced.GetChosen().GetProtocol() == pb.Protocol_PROTOCOL_LL {
		t.Skip("the model now prices LL here: nothing to warn of")
	}
	want := "protocol: PROTOCOL_LL is not what the chosen " + forced.GetChosen().GetAlgorithm().String()
	if len(forced.GetWarnings()) != 1 || !strings.HasPrefix(forced.GetWarnings()[0], want) {
		t.Errorf("warnings %q, want one starting %q", forced.GetWarnings(), want)
	}
	if forced.GetChosen().GetTimeUs() != auto.GetChosen().GetTimeUs() {
		t.Errorf("the warning moved the price: %v µs, %v µs without the protocol", forced.GetChosen().GetTimeUs(), auto.GetChosen().GetTimeUs())
	}
	if len(auto.GetWarnings()) != 0 {
		t.Errorf("no protocol: warnings %q", auto.GetWarnings())
	}
	ring := ask(req(pb.Algorithm_ALGORITHM_RING, pb.Protocol_PROTOCOL_LL))
	if ring.GetChosen().GetProtocol() != pb.Protocol_PROTOCOL_LL || len(ring.GetWarnings()) != 0 {
		t.Errorf("ring forced on LL: %v, warnings %q", ring.GetChosen(), ring.GetWarnings())
	}
}

// concurrent with a group that holds every GPU of its nodes has no other GPUs to
// run beside it: the answer says so, naming the field (it was answered as if not
// set, without a word). With half the node's GPUs, the other half runs, and no
// warning.
func TestConcurrentWithoutOtherGPUsIsWarned(t *testing.T) {
	s := New(Options{})
	ask := func(per int32) *pb.SimulateCollectiveResponse {
		t.Helper()
		resp, err := s.SimulateCollective(context.Background(), &pb.SimulateCollectiveRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Nodes: 2, GpusPerNode: per, Concurrent: true, Collective: pb.Collective_COLLECTIVE_ALL_REDUCE, SizeBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, per := range []int32{0, 8} {
		if ws := ask(per).GetWarnings(); len(ws) != 1 || !strings.HasPrefix(ws[0], "concurrent: no effect: the group holds all 8 GPUs of each of its nodes") {
			t.Errorf("gpus_per_node %d: warnings %q", per, ws)
		}
	}
	if r := ask(4); len(r.GetWarnings()) != 0 || r.GetConcurrentGroups() < 2 {
		t.Errorf("gpus_per_node 4: %d groups, warnings %q", r.GetConcurrentGroups(), r.GetWarnings())
	}
}
