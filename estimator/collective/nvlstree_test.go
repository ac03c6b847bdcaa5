package collective_test

import (
	"errors"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
)

// The NVLS tree (NCCL's NVLS_TREE) reduces each node's data in the NVSwitch, sends
// every reduced block across the nodes on its own NIC and multicasts the result
// back. Its time is bounded by physics on both sides: never faster than the NICs
// can carry each GPU's block (once each way on two nodes, twice on more, as a node
// is inner in one of NCCL's two trees), never faster than the same all-reduce
// inside one node by NVLS, and — the two sides being pipelined — well under
// their sum for large messages.
func TestNVLSTree(t *testing.T) {
	m := collective.NewModel(collective.Default())
	h100 := mustCluster(t, "dgx-h100", 4, nil)
	nicGBps := h100.Spec.NICs.Gbps / 8 // one 400 Gb/s NIC per GPU
	const S = 1 << 30

	g, sib, err := collective.NodeGroups(h100, 1, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	oneNode, err := m.Estimate(mustPlace(t, h100, g, sib), collective.AllReduce, S, collective.Options{Algo: collective.NVLS})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		nodes     int
		nicPasses float64 // times each GPU's 1/8 block crosses its NIC each way
	}{{2, 1}, {4, 2}} {
		g, sib, err := collective.NodeGroups(h100, tc.nodes, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		p := mustPlace(t, h100, g, sib)
		e, err := m.Estimate(p, collective.AllReduce, S, collective.Options{Algo: collective.NVLSTree})
		if err != nil {
			t.Fatal(err)
		}
		nicUs := tc.nicPasses * S / 8 / (nicGBps * 1e3)
		if e.TimeUs < nicUs || e.TimeUs < oneNode.TimeUs {
			t.Errorf("%d nodes: %.0f µs, faster than the NICs (%.0f µs) or one node's NVLS all-reduce (%.0f µs)",
				tc.nodes, e.TimeUs, nicUs, oneNode.TimeUs)
		}
		if sum := nicUs + oneNode.TimeUs; e.TimeUs > 0.8*sum {
			t.Errorf("%d nodes: %.0f µs, not pipelined (NICs %.0f + NVLS %.0f µs)", tc.nodes, e.TimeUs, nicUs, oneNode.TimeUs)
		}
		if e.Algo != collective.NVLSTree || e.Protocol != collective.Simple || e.Channels != 16 {
			t.Errorf("%d nodes: got %s/%s on %d channels, want nvlstree/simple on NCCL's 16 NVLS channels", tc.nodes, e.Algo, e.Protocol, e.Channels)
		}
	}

	// Auto picks it for a large all-reduce across two DGX H100s, as NCCL does
	// (nccl-tests on 2×8 H100: 461 GB/s bus bandwidth at 2 GiB, above the ring's
	// NIC-bound ~360 GB/s).
	g, sib, _ = collective.NodeGroups(h100, 2, 8, false)
	auto, err := m.Estimate(mustPlace(t, h100, g, sib), collective.AllReduce, 2<<30, collective.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if auto.Algo != collective.NVLSTree || auto.BusBWGBps < 400 {
		t.Errorf("2×8 H100, 2 GiB: auto chose %s at %.0f GB/s bus bandwidth, want nvlstree above 400", auto.Algo, auto.BusBWGBps)
	}

	// Where it does not apply, the reason is given.
	a100 := mustCluster(t, "dgx-a100", 2, nil)
	ga, siba, _ := collective.NodeGroups(a100, 2, 8, false)
	g1, sib1, _ := collective.NodeGroups(h100, 1, 8, false)
	g3, sib3, _ := collective.NodeGroups(h100, 2, 8, false)
	for name, c := range map[string]struct {
		p  *collective.Placement
		op collective.Op
	}{
		"no NVLS (A100)": {mustPlace(t, a100, ga, siba), collective.AllReduce},
		"one node":       {mustPlace(t, h100, g1, sib1), collective.AllReduce},
		"all-gather":     {mustPlace(t, h100, g3, sib3), collective.AllGather},
	} {
		if err := m.Supports(c.p, c.op, collective.NVLSTree); !errors.Is(err, collective.ErrUnsupported) {
			t.Errorf("%s: Supports = %v, want ErrUnsupported", name, err)
		}
	}
	if _, err := collective.Build(collective.AllReduce, collective.NVLSTree, collective.Shape{Node: []int32{0, 0, 1, 1}}, 64, collective.Params{Channels: 1, Chunks: 1}); err == nil {
		t.Error("Build of an NVLS tree schedule: no error, want 'no explicit schedule'")
	}
}
