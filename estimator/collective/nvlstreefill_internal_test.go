package collective

import "testing"

// NCCL's NVLS tree chunk (enqueue.cc calcCollChunking, v2.19.3-1 to v2.29.2-1) on
// NCCL's 16 NVLS channels × 8 heads of 8-GPU H100 nodes (128 concurrent chunks):
// 128 KiB from 64 MiB on and 64 KiB below, 32 KiB below 8 MiB; from 4 nodes on
// (NCCL_NVLSTREE_MAX_CHUNKSIZE's default) 64 KiB, 32 KiB below 8 MiB.
func TestNCCLNVLSTreeChunk(t *testing.T) {
	const ops = 16 * 8
	for _, tc := range []struct {
		nodes int
		bytes float64
		want  float64
	}{
		{2, 16 << 30, 128 << 10},
		{2, 64 << 20, 128 << 10},
		{2, 64<<20 - 1, 64 << 10},
		{2, 8 << 20, 64 << 10},
		{2, 8<<20 - 1, 32 << 10},
		{2, 1 << 20, 32 << 10},
		{3, 256 << 20, 128 << 10},
		{4, 16 << 30, 64 << 10},
		{4, 32 << 20, 64 << 10},
		{4, 8<<20 - 1, 32 << 10},
		{8, 8 << 20, 64 << 10},
	} {
		if got := ncclNVLSTreeChunk(tc.bytes, ops, tc.nodes); got != tc.want {
			t.Errorf("%d nodes, %.0f B: chunk %.0f KiB, want %.0f KiB", tc.nodes, tc.bytes, got/1024, tc.want/1024)
		}
	}
	// A call smaller than one loop of chunks fills the pipeline with what it has.
	if got, want := nvlsTreeFillBytes(1<<20, 4, ops, 2), 3.0*(1<<20); got != want {
		t.Errorf("fill of a 1 MiB call: %.0f B, want %.0f B (3 stages × the call)", got, want)
	}
	if got, want := nvlsTreeFillBytes(256<<20, 4, ops, 2), 3.0*ops*(128<<10); got != want {
		t.Errorf("fill of a 256 MiB call: %.0f B, want %.0f B (3 loops of 128 × 128 KiB)", got, want)
	}
	// Two nodes of 8 B200 on NCCL 2.27 or later: 32 NVLS channels across nodes × 8
	// heads (nvls.cc ncclNvlsInit), so the chunk steps from 64 to 128 KiB at
	// 4 × 256 × 128 KiB = 128 MiB (nccl-tests' 128 MiB call) and from 32 to 64 KiB at
	// 256 × 64 KiB = 16 MiB.
	const opsB200 = 32 * 8
	for _, tc := range []struct{ bytes, want float64 }{
		{64 << 20, 64 << 10},
		{128<<20 - 1, 64 << 10},
		{128 << 20, 128 << 10},
		{256 << 20, 128 << 10},
		{16<<20 - 1, 32 << 10},
		{16 << 20, 64 << 10},
	} {
		if got := ncclNVLSTreeChunk(tc.bytes, opsB200, 2); got != tc.want {
			t.Errorf("B200, 2 nodes, %.0f B: chunk %.0f KiB, want %.0f KiB", tc.bytes, got/1024, tc.want/1024)
		}
	}
}
