package collective_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
)

// On EFA without in-order 128-byte delivery (p4d) the OFI plugin sets NCCL_PROTO to
// simple, so a group that crosses nodes runs Simple whatever is asked; inside one
// node, and on p5's in-order RDMA writes, LL and LL128 stay available.
func TestEFASimpleProtocolOnly(t *testing.T) {
	m := collective.NewModel(collective.Default())
	price := func(system string, nodes int, o collective.Options) collective.Estimate {
		t.Helper()
		c := mustCluster(t, system, nodes, nil)
		group, _, err := collective.NodeGroups(c, nodes, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Estimate(mustPlace(t, c, group, nil), collective.AllReduce, 64, o)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if e := price("aws-p4d", 2, collective.Options{}); e.Protocol != collective.Simple {
		t.Errorf("2×p4d small all-reduce: %s/%s, want Simple", e.Algo, e.Protocol)
	}
	ll := collective.Options{Algo: collective.Ring, ForceProtocol: true, Protocol: collective.LL}
	if e := price("aws-p4d", 2, ll); e.Protocol != collective.Simple {
		t.Errorf("2×p4d with LL forced: %s, want Simple (the plugin overrides NCCL_PROTO)", e.Protocol)
	}
	if e := price("aws-p4d", 1, collective.Options{}); e.Protocol == collective.Simple {
		t.Errorf("one p4d node: %s/%s; NVLink runs LL for small messages", e.Algo, e.Protocol)
	}
	// (NVLS and the NVLS tree run Simple only; the ring and the trees pick a protocol.)
	if e := price("aws-p5", 2, collective.Options{Algo: collective.Ring}); e.Protocol == collective.Simple {
		t.Errorf("2×p5 small ring all-reduce: %s/%s; p5's EFA delivers in order, LL is allowed", e.Algo, e.Protocol)
	}
	// Simple's fixed cost makes small cross-node calls on p4d several times dearer.
	p4d, p5 := price("aws-p4d", 2, collective.Options{}), price("aws-p5", 2, collective.Options{})
	if p4d.TimeUs < 2*p5.TimeUs {
		t.Errorf("2×p4d 64 B all-reduce %.0f µs vs 2×p5 %.0f µs: Simple-only should cost far more", p4d.TimeUs, p5.TimeUs)
	}
}
