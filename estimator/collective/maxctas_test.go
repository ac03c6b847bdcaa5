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
