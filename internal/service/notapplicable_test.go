package service

import (
	"context"
	"regexp"
	"strings"
	"testing"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// SimulateCollective's not_applicable reasons name the algorithms and the
// operation as the API's caller sends them (ALGORITHM_PAIRWISE,
// COLLECTIVE_ALL_TO_ALL), not as the command line's flags take them (pairwise,
// all-to-all): the algorithm refused and the operation, and the algorithms a
// reason suggests instead ("use ALGORITHM_PAIRWISE or ALGORITHM_DIRECT"). Every
// operation on a group in one node, across nodes with one and with eight ranks
// each.
func TestNotApplicableReasonsSpellTheAPI(t *testing.T) {
	s := New(Options{})
	use := regexp.MustCompile(`\(use ([^)]*)\)`)
	seen := 0
	for op := pb.Collective_COLLECTIVE_ALL_REDUCE; op <= pb.Collective_COLLECTIVE_SEND_RECV; op++ {
		for _, g := range []struct{ nodes, per int32 }{{1, 8}, {4, 1}, {2, 8}} {
			r := &pb.SimulateCollectiveRequest{Cluster: &pb.ClusterSpec{Source: &pb.ClusterSpec_Name{Name: "dgx-h100"}, Nodes: 4},
				Nodes: g.nodes, GpusPerNode: g.per, Collective: op, SizeBytes: 1 << 20}
			if op == pb.Collective_COLLECTIVE_SEND_RECV && g.nodes*g.per != 2 {
				r.Nodes, r.GpusPerNode = 2, 1
			}
			resp, err := s.SimulateCollective(context.Background(), r)
			if err != nil {
				t.Fatalf("%s on %d×%d: %v", op, g.nodes, g.per, err)
			}
			for _, na := range resp.GetNotApplicable() {
				seen++
				reason := na.GetReason()
				if want := "algorithm not applicable: " + na.GetAlgorithm().String() + " " + op.String() + ": "; !strings.HasPrefix(reason, want) {
					t.Errorf("%s on %d×%d: reason %q does not start %q", op, g.nodes, g.per, reason, want)
				}
				for _, m := range use.FindAllStringSubmatch(reason, -1) {
					for _, w := range strings.Fields(m[1]) {
						if w != "or" && !strings.HasPrefix(w, "ALGORITHM_") {
							t.Errorf("%s on %d×%d: reason %q suggests %q, not an API name", op, g.nodes, g.per, reason, w)
						}
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no algorithm was not applicable")
	}
}
