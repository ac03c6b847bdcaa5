package collective_test

import (
	"errors"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
)

// A communicator created with ncclConfig_t.maxCTAs (PyTorch's
// ProcessGroupNCCL.Options().config.max_ctas) runs at most that many channels a
// call: a 4 MiB send/recv between two GB200s of one NVL72 rack on one thread block
// moves at one channel's copy rate (Blackwell's 70 GB/s, P2PChannelGBps), about
// 60 µs of transfer, where NCCL's own channels take it near the links' pace; 0 is
// NCCL's default, and a count outside [0, MaxChannels] is refused naming max_ctas.
func TestSendRecvMaxCTAs(t *testing.T) {
	c := mustCluster(t, "gb200-nvl72", 2, nil)
	group, _, err := collective.NodeGroups(c, 2, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlace(t, c, group, nil)
	m := collective.NewModel(collective.Default())
	const size = 4 << 20
	est := func(ctas int) collective.Estimate {
		t.Helper()
		e, err := m.Estimate(p, collective.SendRecv, size, collective.Options{MaxCTAs: ctas})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	def, one, four := est(0), est(1), est(4)
	t.Logf("4 MiB send/recv on two GB200s: %.1f µs on %d channels (NCCL default), %.1f µs on 4, %.1f µs on 1", def.TimeUs, def.Channels, four.TimeUs, one.TimeUs)
	if def.Channels < 2 {
		t.Fatalf("4 MiB send/recv on two GB200s: %d channel(s) by default, want several", def.Channels)
	}
	if one.Channels != 1 {
		t.Errorf("maxCTAs 1: %d channels, want 1", one.Channels)
	}
	rate := collective.Default().P2PChannelGBps[c.GPU().Arch]
	if xfer := one.TimeUs - one.LatencyUs; xfer < size/(rate*1e3)*0.99 {
		t.Errorf("maxCTAs 1: %.1f µs of transfer, want at least one channel's %.1f µs", xfer, size/(rate*1e3))
	}
	if !(one.TimeUs > four.TimeUs && four.TimeUs >= def.TimeUs) {
		t.Errorf("4 MiB send/recv: %.1f µs on 1 thread block, %.1f on 4, %.1f by default: want fewer blocks slower", one.TimeUs, four.TimeUs, def.TimeUs)
	}
	if four.Channels > 4 {
		t.Errorf("maxCTAs 4: %d channels", four.Channels)
	}
	for _, bad := range []int{-1, collective.MaxChannels + 1} {
		_, err := m.Estimate(p, collective.SendRecv, size, collective.Options{MaxCTAs: bad})
		var fe *invalid.Error
		if !errors.As(err, &fe) || fe.Field != "max_ctas" {
			t.Errorf("maxCTAs %d: error %v, want one naming max_ctas", bad, err)
		}
	}
}

// The rings of a communicator created with maxCTAs run on at most that many
// channels (NCCL's connect.cc: nChannels bounded by config.maxCTAs), and each
// channel crosses the network through one GPU's NIC: a reduce-scatter of 256 ranks,
// 32 on each of 8 GB200 NVL72 racks, runs by default on 32 channels, through every
// one of the 32 GPUs' NICs of a rack (1.6 TB/s out of a rack, so NVLink paces it),
// and on 8 (MLPerf Training v5.1's dp_cp max_ctas) through 8 of them: its transfer
// then takes at least the bytes over 8 NICs' 400 Gb/s; a cap at or above the
// default changes nothing, and a group inside one rack, whose channels all share the
// same NVLink ports, pays no more than on NCCL's own count.
func TestCollectiveMaxCTAs(t *testing.T) {
	c := mustCluster(t, "gb200-nvl72", 8*18, nil)
	dom := c.DomainGPUs()
	var group []int
	for r := range 8 {
		for i := range 32 {
			group = append(group, r*dom+i)
		}
	}
	p := mustPlace(t, c, group, nil)
	m := collective.NewModel(collective.Default())
	const size = 256 << 20
	est := func(p *collective.Placement, op collective.Op, ctas int) collective.Estimate {
		t.Helper()
		e, err := m.Estimate(p, op, size, collective.Options{MaxCTAs: ctas})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	def, eight, wide := est(p, collective.ReduceScatter, 0), est(p, collective.ReduceScatter, 8), est(p, collective.ReduceScatter, 64)
	t.Logf("256 MiB reduce-scatter over 8 racks × 32 GB200: %.0f µs (%.0f of transfer) on %d channels (%v), %.0f µs (%.0f) on %d (maxCTAs 8, %v)",
		def.TimeUs, def.TimeUs-def.LatencyUs, def.Channels, def.Algo, eight.TimeUs, eight.TimeUs-eight.LatencyUs, eight.Channels, eight.Algo)
	if def.Channels < 32 || eight.Channels != 8 {
		t.Fatalf("channels: %d by default, %d under maxCTAs 8; want 32 or more and 8", def.Channels, eight.Channels)
	}
	nics := 8 * (c.Spec.NICs.Gbps / 8) * 1e3 // bytes per µs through 8 NICs
	floor := size * 255 / 256 / nics
	if x, d := eight.TimeUs-eight.LatencyUs, def.TimeUs-def.LatencyUs; x < floor*0.99 || d >= floor {
		t.Errorf("transfer: %.0f µs on 8 channels, %.0f µs on NCCL's; want at least, and under, 8 NICs' %.0f µs", x, d, floor)
	}
	if wide.TimeUs != def.TimeUs || wide.Channels != def.Channels {
		t.Errorf("maxCTAs 64: %.0f µs on %d channels, want NCCL's default %.0f µs on %d", wide.TimeUs, wide.Channels, def.TimeUs, def.Channels)
	}
	if again := est(p, collective.ReduceScatter, 8); again != eight {
		t.Errorf("maxCTAs 8 priced twice: %+v, then %+v", eight, again)
	}
	if ag := est(p, collective.AllGather, 8); ag.Channels != 8 {
		t.Errorf("all-gather under maxCTAs 8: %d channels", ag.Channels)
	}
	// A TP pair inside one rack: the capped ring's channels share the pair's NVLink
	// ports as NCCL's do.
	pair := mustPlace(t, c, []int{0, 1}, nil)
	if d, e := est(pair, collective.AllGather, 0), est(pair, collective.AllGather, 8); e.TimeUs > d.TimeUs*1.01 || e.Channels > 8 {
		t.Errorf("all-gather of two GB200s: %.1f µs on %d channels by default, %.1f µs on %d under maxCTAs 8", d.TimeUs, d.Channels, e.TimeUs, e.Channels)
	}
}
