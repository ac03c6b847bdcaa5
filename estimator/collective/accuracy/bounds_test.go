package accuracy_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/collective/accuracy"
	"github.com/stepcost/stepcost/estimator/topology"
)

// shipped are the constants the model ships with, as the fit sees them.
func shipped() accuracy.Knobs {
	return accuracy.Knobs{K: collective.Default(), Links: accuracy.Links{
		IntraLatencyUs: topology.NVLinkHopLatencyUs,
		RackLatencyUs:  topology.NVLinkRackHopLatencyUs,
		NetLatencyUs:   topology.NetHopLatencyUs,
		EFALatencyUs:   topology.EFAHopLatencyUs,
	}}
}

// knownAtBound are the shipped constants that still sit on a bound of their fit
// (docs/calibration.md, "Constants at a bound"): none since the model runs NCCL's
// own choice of algorithm and protocol and the start-up ramp is retired (Simple's
// fixed cost, on its 80 µs bound before, carried what NCCL's protocol choice does).
// The list may only shrink: a constant that leaves its bound must leave the list.
var knownAtBound []string

// No shipped constant sits on a bound of its fit, but for the known ones above.
func TestNoShippedConstantAtBound(t *testing.T) {
	var at []string
	for _, p := range accuracy.AtBound(shipped(), accuracy.FitParams()) {
		at = append(at, p.Name)
		if !slices.Contains(knownAtBound, p.Name) {
			t.Errorf("%s = %g sits on a bound of its fit [%g, %g]: missing physics, not a value", p.Name, *p.Get(ptr(shipped())), p.Min, p.Max)
		}
	}
	for _, name := range knownAtBound {
		if !slices.Contains(at, name) {
			t.Errorf("%s no longer sits on a bound: take it off knownAtBound", name)
		}
	}
}

func ptr(k accuracy.Knobs) *accuracy.Knobs { return &k }

// AtBound flags values on or within a hair of either bound, and nothing else.
func TestAtBound(t *testing.T) {
	var k accuracy.Knobs
	p := accuracy.Param{Name: "x", Get: func(k *accuracy.Knobs) *float64 { return &k.K.NVLSStepUs }, Min: 0, Max: 80}
	for _, c := range []struct {
		v    float64
		want bool
	}{{0, true}, {0.05, true}, {0.5, false}, {40, false}, {79, false}, {79.5, true}, {80, true}} {
		k.K.NVLSStepUs = c.v
		if got := len(accuracy.AtBound(k, []accuracy.Param{p})) == 1; got != c.want {
			t.Errorf("value %g in [0, 80]: at bound %v, want %v", c.v, got, c.want)
		}
	}
	q := accuracy.Param{Name: "y", Get: p.Get, Min: 1024, Max: 1 << 30}
	for _, c := range []struct {
		v    float64
		want bool
	}{{1024, true}, {1030, true}, {1100, false}, {math.Pow(2, 29), false}} {
		k.K.NVLSStepUs = c.v
		if got := len(accuracy.AtBound(k, []accuracy.Param{q})) == 1; got != c.want {
			t.Errorf("value %g in [1024, 2^30]: at bound %v, want %v", c.v, got, c.want)
		}
	}
}

// The point-to-point rows of 64 KiB and less (send/recv and all-to-all, scored) are
// priced within 25 % of the published sweeps, NCCL's and RCCL's alike, with the
// shipped constants: the p2p kernel's fixed cost is fitted on NCCL's rows
// (accuracy.P2PCases; the same rows each left out in turn, TestCrossValidatedAccuracy),
// and RCCL's fixed costs are NCCL's scaled by the two libraries' base latencies
// (collective/rccl.go), nothing fitted on them. One row is logged and not held: the first size of the one-node
// MI355X sweep (prasad-nair-amd/alibaba, 128 B) takes 40.9 µs where the nine sizes
// after it, 256 B to 64 KiB, take 29.8–33.0 µs (its in-place column alike, 59.5
// against 46.5–50.7): a cost of the sweep's first timed size, not of the call's size,
// which a per-call price cannot carry (docs/calibration.md, "RCCL's small-message
// point-to-point").
func TestSmallP2PWithin25Percent(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	firstOfSweep := map[string]bool{"alibaba-mi355x-1n-alltoall-128": true}
	res := accuracy.Evaluate(collective.NewModel(collective.Default()), accuracy.Cases(rows))
	n := map[string]int{}
	for _, r := range res {
		if !r.Scored || r.Err != nil || r.Bytes > 64<<10 || (r.Op != collective.SendRecv && r.Op != collective.AllToAll) {
			continue
		}
		t.Logf("%-40s %8.0f B measured %7.2f µs, predicted %7.2f µs (%s/%s) %+.1f%%", r.Row.ID, r.Bytes, r.MeasuredUs, r.Predicted.TimeUs, r.Predicted.Algo, r.Predicted.Protocol, 100*r.RelErr)
		if firstOfSweep[r.Row.ID] {
			continue
		}
		n[r.Row.Library]++
		if !(math.Abs(r.RelErr) <= 0.25) {
			t.Errorf("%s: %+.1f%% off the measured %.2f µs", r.Row.ID, 100*r.RelErr, r.MeasuredUs)
		}
	}
	if n["NCCL"] < 6 || n["RCCL"] < 15 {
		t.Errorf("small send/recv and all-to-all rows held: %v, want 6 NCCL and 15 RCCL or more", n)
	}
}

// The network hop latency and the protocols' network step costs are seen only as
// their sum: raising the hop by c and lowering every protocol's NetStepUs by c
// prices every InfiniBand/RoCE row the same. That is why Simple's NetStepUs is not
// fitted but 0 by definition, the hop being what a Simple step pays to cross the
// network (fitted together, the pair slid along the sum until Simple's step cost
// sat at its bound of 0), and why FitParams must not hold both.
func TestNetworkHopGauge(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	var cases []accuracy.Case
	for _, c := range accuracy.Cases(rows) {
		if c.Spec.Name != "" && c.Spec.Nodes > 1 && c.Spec.NICs.PerNode > 0 && c.Spec.NICs.Kind != topology.EFA {
			cases = append(cases, c)
		}
	}
	if len(cases) < 50 {
		t.Fatalf("only %d multi-node InfiniBand/RoCE cases", len(cases))
	}
	k := shipped()
	base := accuracy.Price(collective.NewModel(k.K), accuracy.PrepareWith(cases, k.Links))
	const c = 1.5
	moved := k
	moved.Links.NetLatencyUs += c
	for i := range moved.K.NetStepUs {
		moved.K.NetStepUs[i] -= c
	}
	shifted := accuracy.Price(collective.NewModel(moved.K), accuracy.PrepareWith(cases, moved.Links))
	crossing := 0
	for i := range base {
		a, b := base[i].Predicted, shifted[i].Predicted
		if base[i].Err != nil || shifted[i].Err != nil {
			continue
		}
		if math.Abs(a.TimeUs-b.TimeUs) > 1e-9*a.TimeUs || a.Algo != b.Algo || a.Protocol != b.Protocol {
			t.Errorf("%s: %.4f µs (%s/%s), with the hop +%g µs and the step costs −%g µs %.4f µs (%s/%s)",
				base[i].Row.ID, a.TimeUs, a.Algo, a.Protocol, c, c, b.TimeUs, b.Algo, b.Protocol)
		}
		crossing++
	}
	if crossing < 50 {
		t.Errorf("only %d rows priced", crossing)
	}
	for _, p := range accuracy.FitParams() {
		if p.Name == "NetStepUs.simple" {
			t.Errorf("the fit adjusts %s and the network hop latency, which only their sum constrains", p.Name)
		}
	}
	// The hop does move a price on its own: it is not a dead parameter.
	hopOnly := k
	hopOnly.Links.NetLatencyUs += c
	alone := accuracy.Price(collective.NewModel(hopOnly.K), accuracy.PrepareWith(cases, hopOnly.Links))
	if alone[0].Predicted.TimeUs <= base[0].Predicted.TimeUs {
		t.Errorf("%s: a slower hop alone did not slow it (%.3f → %.3f µs)", base[0].Row.ID, base[0].Predicted.TimeUs, alone[0].Predicted.TimeUs)
	}
}

// The fit returns its constants in the shipped gauge, Simple's network step cost 0
// (the descent searches in another, Fit), and they price the rows as the constants
// it found: started from constants with Simple's network step cost at 2 µs and given
// no round to move, it returns the same loss with the hops 2 µs higher and every
// network step cost 2 µs lower.
func TestFitReturnsShippedGauge(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	cases := accuracy.Cases(rows)
	start := shipped()
	start.K.NetStepUs[collective.Simple] = 2
	want := accuracy.Loss(accuracy.Price(collective.NewModel(start.K), accuracy.PrepareWith(accuracy.FitCases(cases), start.Links)))
	got, loss := accuracy.Fit(cases, start, accuracy.FitParams(), 0)
	if got.K.NetStepUs[collective.Simple] != 0 {
		t.Errorf("Simple's network step cost %g, want 0", got.K.NetStepUs[collective.Simple])
	}
	if d := got.Links.NetLatencyUs - start.Links.NetLatencyUs; math.Abs(d-2) > 1e-12 {
		t.Errorf("network hop moved by %g, want 2", d)
	}
	if d := got.Links.EFALatencyUs - start.Links.EFALatencyUs; math.Abs(d-2) > 1e-12 {
		t.Errorf("EFA hop moved by %g, want 2", d)
	}
	for _, pr := range []collective.Protocol{collective.LL128, collective.LL} {
		if d := start.K.NetStepUs[pr] - got.K.NetStepUs[pr]; math.Abs(d-2) > 1e-12 {
			t.Errorf("%s network step cost moved by %g, want −2", pr, -d)
		}
	}
	again := accuracy.Loss(accuracy.Price(collective.NewModel(got.K), accuracy.PrepareWith(accuracy.FitCases(cases), got.Links)))
	if math.Abs(loss-want) > 1e-9 || math.Abs(again-want) > 1e-9 {
		t.Errorf("loss %v reported, %v of the returned constants, want %v", loss, again, want)
	}
}

// The one measured cross-node all-to-all and send/recv of NCCL on NVIDIA GPUs
// (Vultr's 2-node HGX B200 cluster, secondary evidence, not scored): 16 GiB
// all-to-all at 42.4 GB/s busbw and 512 MiB send/recv at 19.8 GB/s, where a
// 400 Gb/s NIC per GPU would allow about 90 and 48. A rank's 8 peers on the other
// node share the 2 channels NCCL gives a net peer, at about 14 GB/s each (p2p.go):
// the model had priced both at the NIC, 2.1× and 2.4× fast.
func TestCrossNodeP2PWithinNetChannels(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"vultr-b200-2n-alltoall-peak": 0.25, "vultr-b200-2n-sendrecv-peak": 0.35}
	res := accuracy.Evaluate(collective.NewModel(collective.Default()), accuracy.Cases(rows))
	for _, r := range res {
		tol, ok := want[r.Row.ID]
		if !ok {
			continue
		}
		delete(want, r.Row.ID)
		if r.Err != nil {
			t.Errorf("%s: %v", r.Row.ID, r.Err)
			continue
		}
		t.Logf("%-32s measured %8.2f ms, predicted %8.2f ms (%s/%s, %d channels) %+.1f%%", r.Row.ID, r.MeasuredUs/1e3, r.Predicted.TimeUs/1e3, r.Predicted.Algo, r.Predicted.Protocol, r.Predicted.Channels, 100*r.RelErr)
		if !(math.Abs(r.RelErr) <= tol) {
			t.Errorf("%s: %+.1f%% off the measured %.2f ms, want within %.0f%%", r.Row.ID, 100*r.RelErr, r.MeasuredUs/1e3, 100*tol)
		}
	}
	for id := range want {
		t.Errorf("row %s not found", id)
	}
}

// OCI's GB200 all-to-all across 2 and 3 NVL72 racks of 16 trays (oracle-quickstart/
// oci-gpu-quickstarts): each rack is one NVLink domain and only the bytes between racks
// cross the trays' 400 Gb/s NICs. Priced as one InfiniBand cluster of trays (no rack
// domain) the busiest rank would send 1.5–1.9× the bytes over the network, and as racks
// filled to 18 trays 12.5 % more (72 or 144 remote peers instead of 64 or 128). The rows stay within 20 %: they are 6–7 % (2 racks) and
// 13–15 % (3 racks) too fast with the NIC bound alone.
func TestMultiRackAllToAllPricedPerRack(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	res := accuracy.Evaluate(collective.NewModel(collective.Default()), accuracy.Cases(rows))
	racks := map[int]int{32: 2, 48: 3}
	seen := 0
	for _, r := range res {
		id := r.Row.ID
		if !strings.HasPrefix(id, "oci-gb200-32n-alltoall") && !strings.HasPrefix(id, "oci-gb200-48n-alltoall") {
			continue
		}
		seen++
		if r.Err != nil {
			t.Errorf("%s: %v", id, r.Err)
			continue
		}
		nodes := r.Spec.Nodes
		if got := r.Spec.Intra.DomainNodes; got != 16 || nodes/got != racks[nodes] {
			t.Errorf("%s: %d trays priced in NVLink domains of %d, want %d racks of 16", id, nodes, got, racks[nodes])
		}
		t.Logf("%-34s measured %8.2f ms, predicted %8.2f ms %+.1f%%", id, r.MeasuredUs/1e3, r.Predicted.TimeUs/1e3, 100*r.RelErr)
		if !(math.Abs(r.RelErr) <= 0.20) {
			t.Errorf("%s: %+.1f%% off the measured %.2f ms, want within 20%%", id, 100*r.RelErr, r.MeasuredUs/1e3)
		}
	}
	if seen != 4 {
		t.Errorf("found %d of the 4 multi-rack GB200 rows", seen)
	}
}

// A row's cluster states the NCCL release the row states, and none where the row
// names only its page's other tables' release or none at all: that release decides
// the channels of a cross-node send/recv or all-to-all. RCCL rows state none (AMD
// GPUs take RCCL's rule).
func TestRowsStateTheirNCCLRelease(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"oci-quickstart-gb300-alltoall-32n": "2.28.7", // "2.28.7 (NCCL version 2.28.7+cuda13.0 printed)"
		"oci-quickstart-b300-alltoall-2n":   "",       // "not printed in the table (…)"
		"oci-quickstart-gb200-alltoall-32n": "",       // "not stated for the all-to-all tables (…)"
		"oci-oke-a100-2node-nccl2.29":       "2.29.3",
		"nvidia-nccl-issue-2169":            "2.30.4", // "2.30.4 (nccl-headers=23004)"
		"alibaba-mi355x-2n-alltoall":        "",       // RCCL 2.27.7
	}
	seen := map[string]bool{}
	for _, c := range accuracy.Cases(rows) {
		w, ok := want[c.Row.SourceID]
		if !ok || c.Why != "" {
			continue
		}
		seen[c.Row.SourceID] = true
		if c.Spec.NCCL != w {
			t.Errorf("%s: cluster states NCCL %q, want %q", c.Row.ID, c.Spec.NCCL, w)
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("no priced row of %s", id)
		}
	}
}

// Rows that turn NVLS off and leave the rest to NCCL (OCI's 32 GB200 trays on two
// racks: NCCL_NVLS_ENABLE=0 in the shape's manifest) are priced on a cluster without
// NVLS, ring or tree as the model finds cheaper, not as a forced ring; a row that
// turns NVLS off to get NCCL's ring keeps the ring. The sweep's bandwidth-bound end
// (4–32 GiB, where NCCL's ring and tree over the racks' RoCE decide) holds within 5 %.
func TestNVLSOffLeavesNCCLsChoice(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	res := accuracy.Evaluate(collective.NewModel(collective.Default()), accuracy.Cases(rows))
	seen, ring := 0, 0
	for _, r := range res {
		switch r.Row.SourceID {
		case "nvidia-nccl-issue-1801":
			if r.Options.Algo == collective.Ring {
				ring++
			}
			continue
		case "oci-oke-gb200v3-32tray-2rack":
		default:
			continue
		}
		seen++
		if r.Err != nil {
			t.Errorf("%s: %v", r.Row.ID, r.Err)
			continue
		}
		if r.Spec.Intra.NVLS || r.Options.Algo != collective.Auto {
			t.Errorf("%s: NVLS %v, algorithm %v; want no NVLS and NCCL's choice", r.Row.ID, r.Spec.Intra.NVLS, r.Options.Algo)
		}
		if a := r.Predicted.Algo; a == collective.NVLS || a == collective.NVLSTree {
			t.Errorf("%s: priced as %v with NVLS off", r.Row.ID, a)
		}
		if r.Spec.Intra.DomainNodes != 16 || r.Spec.NICs.Kind != topology.RoCE || r.Spec.NICs.PerNode*int(r.Spec.NICs.Gbps) != 3200 || r.Spec.NCCL != "2.29.2" {
			t.Errorf("%s: racks of %d trays, NICs %+v, NCCL %q; want 16 trays a rack, 8× 400 Gb/s RoCE a tray, 2.29.2", r.Row.ID, r.Spec.Intra.DomainNodes, r.Spec.NICs, r.Spec.NCCL)
		}
		t.Logf("%-40s measured %10.2f µs, predicted %10.2f µs (%v/%v) %+6.1f%%", r.Row.ID, r.MeasuredUs, r.Predicted.TimeUs, r.Predicted.Algo, r.Predicted.Protocol, 100*r.RelErr)
		if r.Bytes >= 4<<30 && !(math.Abs(r.RelErr) <= 0.05) {
			t.Errorf("%s: %+.1f%% off the measured %.0f µs, want within 5%%", r.Row.ID, 100*r.RelErr, r.MeasuredUs)
		}
	}
	if seen != 33 {
		t.Errorf("found %d of the 33 rows of OCI's 32-tray all-reduce", seen)
	}
	if ring == 0 {
		t.Error("nvidia/nccl#1801's 'Ring (default with NCCL_NVLS_ENABLE=0)' rows are no longer priced as a ring")
	}
}
