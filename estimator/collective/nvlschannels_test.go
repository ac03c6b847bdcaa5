package collective_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
)

// NCCL's NVLS channels follow the release and the communicator's span
// (src/transport/nvls.cc ncclNvlsInit): 16 on every GPU up to v2.24 (v2.23.4-1,
// v2.24.3-1); on Blackwell 32 in v2.25 and v2.26 (NVLS_NCHANNELS_SM100, v2.25.1-1,
// v2.26.6-1); from v2.27 32 across more than one node or MNNVL clique and 24
// (NVLS_NCHANNELS_SM100_NVL) inside one (v2.27.3-1 to v2.29.7-1), which is also the
// rule when no release is stated; Hopper 16 in every release (NVLS_NCHANNELS_SM90).
func TestNVLSChannelsByRelease(t *testing.T) {
	m := collective.NewModel(collective.Default())
	for _, tc := range []struct {
		system string
		nccl   string
		nodes  int
		want   int
	}{
		{"hgx-b200", "2.24", 1, 16},
		{"hgx-b200", "2.24.3", 2, 16},
		{"hgx-b200", "2.25", 1, 32},
		{"hgx-b200", "2.26.6", 2, 32},
		{"hgx-b200", "2.27", 1, 24},
		{"hgx-b200", "2.27", 2, 32},
		{"hgx-b200", "2.29.7", 1, 24},
		{"hgx-b200", "2.29.7", 2, 32},
		{"hgx-b200", "", 1, 24},
		{"hgx-b200", "", 2, 32},
		{"dgx-h100", "2.26", 2, 16},
		{"dgx-h100", "2.29", 2, 16},
		{"dgx-h100", "", 1, 16},
	} {
		c := mustCluster(t, tc.system, tc.nodes, func(s *topology.Spec) { s.NCCL = tc.nccl })
		g, sib, err := collective.NodeGroups(c, tc.nodes, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		algo := collective.NVLSTree
		if tc.nodes == 1 {
			algo = collective.NVLS
		}
		e, err := m.Estimate(mustPlace(t, c, g, sib), collective.AllReduce, 256<<20, collective.Options{Algo: algo})
		if err != nil {
			t.Fatal(err)
		}
		if e.Channels != tc.want {
			t.Errorf("%s, NCCL %q, %d nodes: %d NVLS channels, want %d", tc.system, tc.nccl, tc.nodes, e.Channels, tc.want)
		}
	}
}

// Two nodes of 8 B200: the NVLS tree's pipeline holds one chunk per channel and head
// (enqueue.cc ncclPatternNvlsTree), so NCCL 2.27's 32 channels fill it with twice the
// chunks of 2.24's 16, and from 128 MiB (4 × 256 × 128 KiB, calcCollChunking) with
// 128 KiB each: the 128 MiB call costs more under 2.27 than under 2.24 (dstack's
// Lambda and GCP A4 sweeps, release not stated, take 597 and 639 µs), while a 1 MiB
// call, whose fill is the call itself, costs the same.
func TestNVLSTreeChannelsMovePrice(t *testing.T) {
	m := collective.NewModel(collective.Default())
	price := func(nccl string, bytes float64) float64 {
		c := mustCluster(t, "hgx-b200", 2, func(s *topology.Spec) { s.NCCL = nccl })
		g, sib, err := collective.NodeGroups(c, 2, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.Estimate(mustPlace(t, c, g, sib), collective.AllReduce, bytes, collective.Options{Algo: collective.NVLSTree})
		if err != nil {
			t.Fatal(err)
		}
		return e.TimeUs
	}
	if old, cur := price("2.24", 128<<20), price("2.27", 128<<20); !(cur > 1.05*old) {
		t.Errorf("128 MiB: %.0f µs with 32 NVLS channels (2.27), %.0f µs with 16 (2.24); want the fuller pipeline over 5 %% slower", cur, old)
	}
	if old, cur := price("2.24", 1<<20), price("2.27", 1<<20); cur != old {
		t.Errorf("1 MiB: %.1f µs (2.27) against %.1f µs (2.24); want the same (the call fills the pipeline alone)", cur, old)
	}
}
