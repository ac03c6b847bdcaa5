package service

import (
	"context"
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// An all-gather's, reduce-scatter's or all-to-all's size_bytes is the whole
// buffer: below a byte a rank it is refused naming the field and the ranks,
// where 1 B on 8 GPUs was priced (13.66 µs) as if it were a call; at a byte a
// rank, and for an all-reduce or send/recv of any size, it is priced.
func TestSharedBufferBelowAByteARankIsRefused(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	call := func(op pb.Collective, nodes int32, size int64) error {
		_, err := s.SimulateCollective(ctx, &pb.SimulateCollectiveRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}},
			Nodes: nodes, Collective: op, SizeBytes: size})
		return err
	}
	for _, op := range []pb.Collective{pb.Collective_COLLECTIVE_ALL_GATHER, pb.Collective_COLLECTIVE_REDUCE_SCATTER, pb.Collective_COLLECTIVE_ALL_TO_ALL} {
		for _, tc := range []struct {
			nodes int32
			size  int64
		}{{1, 1}, {1, 7}, {2, 15}} {
			err := call(op, tc.nodes, tc.size)
			if code, _ := CodeOf(err); code != InvalidArgument || !strings.Contains(err.Error(), "size_bytes") || !strings.Contains(err.Error(), "one a rank") {
				t.Errorf("%v of %d B on %d nodes: %v; want INVALID_ARGUMENT naming size_bytes", op, tc.size, tc.nodes, err)
			}
		}
		if err := call(op, 2, 16); err != nil {
			t.Errorf("%v of 16 B on 16 GPUs: %v", op, err)
		}
	}
	for _, op := range []pb.Collective{pb.Collective_COLLECTIVE_ALL_REDUCE, pb.Collective_COLLECTIVE_BROADCAST} {
		if err := call(op, 1, 1); err != nil {
			t.Errorf("%v of 1 B: %v", op, err)
		}
	}
}
