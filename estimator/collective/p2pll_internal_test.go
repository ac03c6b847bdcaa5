package collective

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/hardware"
)

// The p2p kernel's LL rate follows its warps (sendrecv.h at v2.28.7-1): 20 warps a
// block, shared among a batch's works, each work's split into (n − 1)/2 receiving warps
// above 4 and n/2 up to 4; a warp moves NCCL's LL ring ceiling over one node (llMaxBws:
// Hopper 141, Blackwell 282 GB/s) over its collective channels (24 on an H100 node, 32
// on a Blackwell one) of 16 warps each.
func TestP2PLLRateFromWarps(t *testing.T) {
	// 20/w warps a work: 20 → 9, 10 → 4, 5 → 2, 4 → 2, 2 → 1.
	for w, want := range map[int]int{1: 9, 2: 4, 4: 2, 5: 2, 8: 1} {
		if got := p2pLLRecvWarps(w); got != want {
			t.Errorf("%d works a channel: %d receiving warps a work, want %d", w, got, want)
		}
	}
	for _, c := range []struct {
		arch     hardware.Arch
		llMax    float64
		channels int
	}{{hardware.Hopper, 141.0, 24}, {hardware.Blackwell, 2 * 141.0, 32}} {
		got, ok := p2pLLChannelGBps(c.arch, 1)
		want := 9 * c.llMax / float64(c.channels*16)
		if !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%v: one work a channel moves %.3f GB/s by LL (ok %v), want %.3f", c.arch, got, ok, want)
		}
		// Two works share the 20 warps: 4 receiving warps each, 8 in all.
		if got2, _ := p2pLLChannelGBps(c.arch, 2); math.Abs(got2-got*8/9) > 1e-9 {
			t.Errorf("%v: two works a channel move %.3f GB/s, want %.3f", c.arch, got2, got*8/9)
		}
	}
	// RCCL's kernel is not NCCL's: no LL rate from its warps on AMD GPUs.
	if _, ok := p2pLLChannelGBps(hardware.CDNA3, 1); ok {
		t.Error("CDNA3 took NCCL's p2p LL rate")
	}
	// An all-to-all of 4, 8 or 64 ranks on 32 p2p channels runs one work a channel
	// (4 rounds × 8 parts, 8 × 4, an epoch of 8 rounds × 1); a send/recv one.
	for _, c := range []struct{ peers, nch, want int }{{3, 8, 1}, {7, 4, 1}, {63, 1, 1}, {1, 16, 1}, {7, 32, 8}} {
		if got := p2pWorksPerChannel(c.peers, c.nch, 32); got != c.want {
			t.Errorf("%d peers on %d channels each: %d works a channel, want %d", c.peers, c.nch, got, c.want)
		}
	}
}
