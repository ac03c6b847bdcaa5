package collective

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
)

// NCCL's one-domain NVLS chunk (enqueue.cc calcCollChunking, v2.28.7-1) on 8
// Blackwell ranks (24 channels × 8 heads): 16 KiB below 12 MiB, 32 KiB below
// 96 MiB, 64 KiB below 1.5 GiB, 128 KiB from there; on 64 ranks of a rack (24
// channels × 32 heads) 16 KiB below 48 MiB, 32 KiB below 384 MiB.
func TestNCCLNVLSChunk(t *testing.T) {
	for _, tc := range []struct {
		ops   int
		bytes float64
		want  float64
	}{
		{24 * 8, 4 << 20, 16 << 10},
		{24 * 8, 12<<20 - 1, 16 << 10},
		{24 * 8, 12 << 20, 32 << 10},
		{24 * 8, 96<<20 - 1, 32 << 10},
		{24 * 8, 96 << 20, 64 << 10},
		{24 * 8, 1536<<20 - 1, 64 << 10},
		{24 * 8, 1536 << 20, 128 << 10},
		{24 * 8, 16 << 30, 128 << 10},
		{24 * 32, 48<<20 - 1, 16 << 10},
		{24 * 32, 48 << 20, 32 << 10},
		{24 * 32, 384 << 20, 64 << 10},
	} {
		if got := ncclNVLSChunk(tc.bytes, tc.ops); got != tc.want {
			t.Errorf("%d ops, %.0f B: chunk %.0f, want %.0f", tc.ops, tc.bytes, got, tc.want)
		}
	}
}

// The rounds of one loop on 8 ranks (all_reduce.h at v2.28.7-1: scatter 8 warps,
// reduce 5, gather 7; 4 KiB a warp a round): the gather is the slowest role, 9, 17,
// 25 and 41 rounds at 16, 32, 64 and 128 KiB chunks (eight heads' chunks in turn
// after its wait); on 6 ranks or fewer the reduce takes 7 warps and the others 7
// and 6.
func TestNVLSLoopRounds(t *testing.T) {
	for _, tc := range []struct {
		chunk       float64
		gather, max float64
	}{
		{16 << 10, 9, 9},
		{32 << 10, 17, 17},
		{64 << 10, 25, 25},
		{128 << 10, 41, 41},
	} {
		s, r, g := nvlsLoopRounds(tc.chunk, 8, 8)
		if g != tc.gather || max(s, r, g) != tc.max {
			t.Errorf("%.0f KiB: scatter %v, reduce %v, gather %v rounds; want gather %v, slowest %v", tc.chunk/1024, s, r, g, tc.gather, tc.max)
		}
	}
	if s, r, g := nvlsWarps(6); s != 7 || r != 7 || g != 6 {
		t.Errorf("6 ranks: warps %d/%d/%d, want 7/7/6", s, r, g)
	}
	if s, r, g := nvlsWarps(8); s != 8 || r != 5 || g != 7 {
		t.Errorf("8 ranks: warps %d/%d/%d, want 8/5/7", s, r, g)
	}
}

// A call's rounds on 8 Blackwell ranks (24 channels): the first loop's roles in
// series (scatter, reduce, gather), then every further loop its slowest role, the
// last one on its remainder. 4 MiB is 2 loops of 16 KiB chunks (3 MiB a loop):
// 9 + 3 + 9 for the first, the last 1 MiB on 16 KiB chunks of 3 of the 8 heads
// (42.7 KiB a channel: 3 + 1, 3 and 1 + 3 rounds, 4); 64 MiB is 11
// loops of 32 KiB (6 MiB a loop): 9 + 4 + 17, nine more at 17, and the last 4 MiB
// (170.7 KiB a channel, 32 KiB chunks on 6 heads: 6 + 1, 4, 1 + 12) at 13.
func TestNVLSAllReduceRounds(t *testing.T) {
	for _, tc := range []struct {
		bytes float64
		want  float64
	}{
		{4 << 20, 9 + 3 + 9 + 4},
		{64 << 20, 9 + 4 + 17 + 9*17 + 13},
	} {
		if got := nvlsAllReduceRounds(tc.bytes, 24, 8); got != tc.want {
			t.Errorf("%.0f MiB: %v rounds, want %v", tc.bytes/(1<<20), got, tc.want)
		}
	}
	if got := nvlsAllReduceRounds(0, 24, 8); got != 0 {
		t.Errorf("0 bytes: %v rounds, want 0", got)
	}
}

// An NVLS all-reduce inside one domain is priced at least its rounds × NVLSRoundUs
// beyond its fixed cost, and the floor is what prices 8 B200 at 64 MiB (the links'
// load alone priced it at 211 µs, the measured sweeps take 276–293 µs).
func TestNVLSRoundsFloorTheCall(t *testing.T) {
	cl, err := catalog.Cluster("dgx-b200", 1)
	if err != nil {
		t.Fatal(err)
	}
	group, _, err := NodeGroups(cl, 1, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Place(cl, group, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := Default()
	const S = 64 << 20
	with, err := NewModel(k).Estimate(p, AllReduce, S, Options{Algo: NVLS})
	if err != nil {
		t.Fatal(err)
	}
	k.NVLSRoundUs = 0
	without, err := NewModel(k).Estimate(p, AllReduce, S, Options{Algo: NVLS})
	if err != nil {
		t.Fatal(err)
	}
	floor := Default().NVLSRoundUs * nvlsAllReduceRounds(S, with.Channels, 8)
	fixed := fixedOf(t, p)
	if !(with.TimeUs >= fixed+floor-1e-9) || !(with.TimeUs > without.TimeUs) || math.IsNaN(with.TimeUs) {
		t.Errorf("64 MiB on 8 B200: %.1f µs with the rounds, %.1f without, floor %.1f + fixed %.1f", with.TimeUs, without.TimeUs, floor, fixed)
	}
}

// fixedOf is the fixed cost of an NVLS all-reduce on p (Model.fixedUs).
func fixedOf(t *testing.T, p *Placement) float64 {
	t.Helper()
	return NewModel(Default()).fixedUs(p, AllReduce, NVLS, Simple, PerProcess)
}
