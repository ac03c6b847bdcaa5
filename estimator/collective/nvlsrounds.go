package collective

import "math"

// The NVLS all-reduce inside one NVLink domain, as NCCL's kernel runs it: loops of
// dependent rounds (NCCL v2.28.7-1; the kernel is the same from v2.19.3-1 to
// v2.29.7-1 but for the channel count; docs/collective.md, "NVLS all-reduce on one
// NVLink domain: the loop's dependent rounds").
//
// A channel's block of 640 threads (NCCL_MAX_NTHREADS) splits into three roles
// (src/device/all_reduce.h lines 394–397, RunWorkElement<…, NCCL_ALGO_NVLS, …>):
// scatter warps copy the loop's data, one head's chunk after another, into the
// rank's buffer of the multicast object and post once for the loop
// (src/device/prims_simple.h ScatterGatherOp, lines 427–483, with a
// fence_acq_rel_sys before the post); each head's reduce warps wait for every
// rank's post (multimem.ld_reduce.min over the step counters, NvlsMinPolling),
// reduce their chunk in the switch (multimem.ld_reduce) and store it to every rank
// (multimem.st), fencing before they post; the gather warps wait for every head
// and copy the loop out, head by head. A loop covers channels × heads × the chunk
// (all_reduce.h: loopSize = nChannels*nvls->nHeads*chunkSize).
//
// Every role moves its data in rounds of dependent loads and stores: a warp's
// reduceCopy moves COLL_UNROLL (8 from sm_80 on, src/include/device.h line 502)
// × 32 lanes × 16 bytes (common_kernel.h, the 16-byte packs multimem loads use)
// = 4 KiB per round, whatever the link. With NCCL_STEPS (8) slots a connection
// (src/transport/nvls.cc lines 335–337) the roles work on different loops in
// steady state, so a loop costs its slowest role; the first loop has nothing to
// overlap with: the reduce waits for every rank's scatter and the gather for every
// head's reduce, so its three roles run one after the other.
//
// nvlsRoundBytes is what one warp moves in one round.
const nvlsRoundBytes = 8 * 32 * 16

// ncclNVLSChunkDefault is NCCL_NVLS_CHUNKSIZE's default, 128 KiB
// (src/transport/nvls.cc line 153).
const ncclNVLSChunkDefault = 128 << 10

// ncclNVLSChunk is the chunk NCCL's one-domain NVLS all-reduce runs a call of S
// bytes with, ops being its channels × heads (src/enqueue.cc calcCollChunking,
// lines 2041–2055 at v2.28.7-1, the same from v2.18 to v2.29): NCCL_NVLS_CHUNKSIZE
// cut to 64 KiB below 64 × ops × the chunk, then to 32 KiB below 8 × ops × the
// chunk, then to 16 KiB below 2 × ops × the chunk. On 8 Blackwell ranks (24
// channels × 8 heads) that is 16 KiB below 12 MiB, 32 KiB below 96 MiB, 64 KiB
// below 1.5 GiB.
func ncclNVLSChunk(S float64, ops int) float64 {
	c, o := float64(ncclNVLSChunkDefault), float64(ops)
	if S < 64*o*c && c > 64<<10 {
		c = 64 << 10
	}
	if S < 8*o*c && c > 32<<10 {
		c = 32 << 10
	}
	if S < 2*o*c && c > 16<<10 {
		c = 16 << 10
	}
	return c
}

// nvlsWarps is the one-domain NVLS all-reduce's warps per role without user-buffer
// registration (all_reduce.h lines 394–397 at v2.28.7-1: of 20 warps, reduce 5, or
// 7 on 6 ranks or fewer; scatter and gather share the rest, scatter taking the odd
// one).
func nvlsWarps(ranks int) (scatter, reduce, gather int) {
	const total = 640 / 32 // NCCL_MAX_NTHREADS / WARP_SIZE
	reduce = 5
	if ranks <= 6 {
		reduce = 7
	}
	return (total - reduce + 1) / 2, reduce, (total - reduce) / 2
}

// nvlsLoopRounds is the rounds of each role in one loop whose heads with data
// (of heads) each carry a chunk of chunk bytes: the scatter copies the heads'
// chunks in turn and posts behind a fence (one round more); the reduce waits,
// reduces its chunk and fences (two rounds more); the gather waits and copies the
// heads' chunks in turn (one round more).
func nvlsLoopRounds(chunk float64, withData, ranks int) (scatter, reduce, gather float64) {
	sw, rw, gw := nvlsWarps(ranks)
	per := func(warps int) float64 { return math.Ceil(chunk / nvlsRoundBytes / float64(warps)) }
	h := float64(withData)
	return h*per(sw) + 1, per(rw) + 2, 1 + h*per(gw)
}

// nvlsAllReduceRounds is the dependent rounds of an NVLS all-reduce of S bytes on
// ranks GPUs of one NVLink domain with the given channels: the first loop's three
// roles in series, every further loop its slowest role. The last loop runs on what
// is left: each channel's remainder split among the heads, aligned up to 16 KiB
// (all_reduce.h: the last chunk is aligned to the 16 KiB of the smallest chunk),
// the heads past the data copying nothing.
func nvlsAllReduceRounds(S float64, channels, ranks int) float64 {
	if !(S > 0) || channels < 1 || ranks < 2 {
		return 0
	}
	heads := int(nvlsHeads(float64(ranks)))
	chunk := ncclNVLSChunk(S, channels*heads)
	loop := float64(channels*heads) * chunk
	full := math.Ceil(S/loop) - 1 // loops before the last
	rem := S - full*loop
	perCh := rem / float64(channels)
	last := min(chunk, math.Ceil(perCh/float64(heads)/(16<<10))*(16<<10))
	lastHeads := min(heads, int(math.Ceil(perCh/last)))

	var rounds float64
	s, r, g := nvlsLoopRounds(chunk, heads, ranks)
	ls, lr, lg := nvlsLoopRounds(last, lastHeads, ranks)
	if full == 0 {
		return ls + lr + lg
	}
	rounds = s + r + g                  // the first loop: its roles in series
	rounds += (full - 1) * max(s, r, g) // the further full loops: the slowest role
	rounds += max(ls, lr, lg)           // the last loop on its remainder
	return rounds
}
