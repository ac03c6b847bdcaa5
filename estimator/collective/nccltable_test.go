package collective

import (
	"math"
	"testing"
)

// NCCLTable is the table Auto takes NCCL's choice from: its arg-min is the
// algorithm and protocol Auto runs wherever NCCL's model applies, and each entry's
// transfer term is bytes over a bandwidth, so it doubles with the bytes wherever
// the tree's size correction does not change (ring and NVLS always; the tree from
// 512 MiB, past the correction's last entry).
func TestNCCLTableArgMinIsAuto(t *testing.T) {
	m := nccltuned()
	for _, c := range []struct {
		system string
		nodes  int
	}{{"dgx-a100", 1}, {"dgx-a100", 2}, {"dgx-h100", 1}, {"dgx-h100", 2}, {"dgx-h100", 8}, {"hgx-b200", 4}} {
		p := placeNodes(t, c.system, c.nodes, 8)
		for _, op := range []Op{AllReduce, AllGather, ReduceScatter, Broadcast} {
			for b := 8.0; b <= 8<<30; b *= 8 {
				tab := m.NCCLTable(p, op, b)
				if len(tab) == 0 {
					t.Fatalf("%s %d nodes %s %g B: empty table", c.system, c.nodes, op, b)
				}
				best := tab[0]
				for _, e := range tab {
					if !(e.LatencyUs >= 0 && e.TransferUs > 0) {
						t.Errorf("%s %d nodes %s %g B: %s/%s latency %g, transfer %g", c.system, c.nodes, op, b, e.Algo, e.Protocol, e.LatencyUs, e.TransferUs)
					}
					if e.TimeUs() < best.TimeUs() {
						best = e
					}
				}
				auto, err := m.Estimate(p, op, b, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if auto.Algo != best.Algo || auto.Protocol != best.Protocol {
					t.Errorf("%s %d nodes %s %g B: Auto runs %s/%s, the table's arg-min is %s/%s", c.system, c.nodes, op, b, auto.Algo, auto.Protocol, best.Algo, best.Protocol)
				}
				if b < 512<<20 {
					continue
				}
				twice := m.NCCLTable(p, op, 2*b)
				for i, e := range tab {
					if r := twice[i].TransferUs / e.TransferUs; math.Abs(r-2) > 1e-9 {
						t.Errorf("%s %d nodes %s: %s/%s transfer %g B → %g B ×%.4f, want ×2", c.system, c.nodes, op, e.Algo, e.Protocol, b, 2*b, r)
					}
				}
			}
		}
	}
	// Where NCCL has no model, no table: all-to-all, send/recv.
	p := placeNodes(t, "dgx-h100", 2, 8)
	for _, op := range []Op{AllToAll, SendRecv} {
		if tab := m.NCCLTable(p, op, 1<<20); tab != nil {
			t.Errorf("%s: a table of %d entries, want none", op, len(tab))
		}
	}
}
