package collective

import "testing"

// callChannels against NCCL's rule worked by hand (enqueue.cc: a channel off while
// bytes < channels × threads × threshold, then threads halved while a multiple of
// 128; tuning.cc: thresholds 8 / 8 / 64 B per thread for LL / LL128 / Simple, the
// ring's LL threshold × the ranks; 512 / 640 / 512 threads).
func TestCallChannelsFollowsNCCL(t *testing.T) {
	cases := []struct {
		name          string
		nch, ranks    int
		a             Algorithm
		pr            Protocol
		bytes         float64
		wantNC, wantT int
	}{
		// 128 ranks, 64 channels (two GB200 racks): a Simple tree needs 512 × 64 B =
		// 32 KiB a channel, so 256 KiB runs on 8 channels, 1 MiB on 32, 2 MiB on all 64.
		{"tree simple 256KiB", 64, 128, DoubleTree, Simple, 256 << 10, 8, 512},
		{"tree simple 1MiB", 64, 128, DoubleTree, Simple, 1 << 20, 32, 512},
		{"tree simple 1MiB-1", 64, 128, DoubleTree, Simple, 1<<20 - 1, 31, 512},
		{"tree simple 2MiB", 64, 128, Tree, Simple, 2 << 20, 64, 512},
		{"tree simple 1GiB", 64, 128, Tree, Simple, 1 << 30, 64, 512},
		// one channel, then threads: 8 B < 1 × 512 × 64 → 256 → 128 → 64 (not a
		// multiple of 128: the cut stops).
		{"tree simple 8B", 64, 128, DoubleTree, Simple, 8, 1, 64},
		// 40 KiB: 1 channel (40960 < 2 × 32768), 512 threads kept (40960 ≥ 32768).
		{"tree simple 40KiB", 64, 128, DoubleTree, Simple, 40 << 10, 1, 512},
		// 20 KiB on one channel: 20480 < 32768 → 256 threads (20480 ≥ 16384).
		{"tree simple 20KiB", 64, 128, DoubleTree, Simple, 20 << 10, 1, 256},
		// LL128: 640 × 8 B = 5 KiB a channel.
		{"tree ll128 100KB", 64, 128, DoubleTree, LL128, 102400, 20, 640},
		{"ring ll128 320KiB", 64, 128, Ring, LL128, 320 << 10, 64, 640},
		// 640 threads are not halved (640 mod 128 = 0 → 320; 320 mod 128 ≠ 0 stops).
		{"ring ll128 1KiB", 64, 128, Ring, LL128, 1024, 1, 320},
		// Ring LL on 16 ranks: threshold 8 × 16 = 128 B a thread (nccl#527's
		// "threadThresholds 8/8/64 | 128/8/64"), 64 KiB a channel.
		{"ring ll 16 ranks 256KiB", 12, 16, Ring, LL, 256 << 10, 4, 512},
		{"ring ll 16 ranks 1MiB", 12, 16, Ring, LL, 1 << 20, 12, 512},
		// Tree LL is not scaled by the ranks: 4 KiB a channel.
		{"tree ll 16 ranks 16KiB", 12, 16, Tree, LL, 16 << 10, 4, 512},
		// Ring Simple on 32 H100 ranks, 16 channels: 32 KiB a channel.
		{"ring simple 32 ranks 128KiB", 16, 32, Ring, Simple, 128 << 10, 4, 512},
		// NVLS and the rest are not cut.
		{"nvls", 24, 8, NVLS, Simple, 8, 24, 0},
		{"pat", 1, 64, PAT, Simple, 8, 1, 0},
	}
	for _, c := range cases {
		nc, nt := callChannels(c.nch, c.ranks, c.a, c.pr, c.bytes)
		if nc != c.wantNC || nt != c.wantT {
			t.Errorf("%s: %d channels × %d threads, NCCL's rule gives %d × %d", c.name, nc, nt, c.wantNC, c.wantT)
		}
	}
}
