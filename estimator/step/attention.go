package step

import (
	"math"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/hardware"
)

// Measured speed of fused causal attention on an H100 SXM5 (bf16, head dimension
// 128, batch × sequence = 16k tokens), in TFLOP/s at the sequence lengths
// attnSeqLens: Shah et al. 2024, "FlashAttention-3" (arXiv 2407.08608), Fig. 5
// (forward, causal mask) and Fig. 6 (backward, head dimension 128). FlashAttention-2
// stands for the kernels of its generation (flash-attn 2, PyTorch's SDPA flash
// backend); cuDNN is the fused attention Transformer Engine runs on Hopper.
var (
	attnSeqLens    = [...]float64{512, 1024, 2048, 4096, 8192, 16384}
	fa2FwdTFLOPS   = [...]float64{191, 260, 298, 319, 333, 335}
	fa2BwdTFLOPS   = [...]float64{214, 260, 291, 310, 318, 322}
	cuDNNFwdTFLOPS = [...]float64{315, 410, 484, 518, 529, 539}
	cuDNNBwdTFLOPS = [...]float64{305, 408, 465, 499, 518, 516}
	// The same figures' head dimension 64 (Fig. 5, forward, causal mask; Fig. 6,
	// backward): cuDNN's kernel at about 0.72 of its head-128 speed forward and
	// 0.84 backward at 8k keys.
	cuDNNFwdTFLOPS64 = [...]float64{225, 288, 334, 363, 379, 388}
	cuDNNBwdTFLOPS64 = [...]float64{266, 348, 395, 417, 432, 433}
)

// attentionSpeed returns the forward and backward speed of a framework's fused
// attention kernel on a GPU of architecture arch, for key sequences of length skv per
// kernel call, relative to a FlashAttention-2-class kernel on the same GPU — the
// kernel Constants.AttentionEfficiency is fitted to (every calibration run on Hopper
// used one). On Hopper, Transformer Engine's cuDNN fused attention runs at the
// published ratio of the two kernels' speeds at that length (1.6× forward at 16k,
// 1.65× at 2k); elsewhere the kernels are of one class (Transformer Engine runs
// FlashAttention-2 on Ampere) and the ratio is 1. The curves are interpolated in log₂
// of the length and held flat beyond their ends.
//
// flash2 (Training.FlashAttention2) keeps the FlashAttention-2 kernel whatever the
// framework's: the ratio is 1.
//
// Heads narrower than 128 (headDim, the query-key width of one head) run cuDNN's
// kernel at its head-64 speed at 64 and below, interpolated linearly in between:
// the calibration runs on Hopper, and the shipped efficiency, are of 128-wide heads.
//
// The absolute shape of the curves (FlashAttention-2 at 2k keys runs at 0.89 of its
// 16k speed) is not applied: the calibration runs at 2k keys (llm-foundry, the
// flash-attention repository) reach a higher attention efficiency than those at 8k
// and more (torchtitan), so the shape would only move the fitted efficiency.
func attentionSpeed(arch hardware.Arch, fw string, flash2 bool, skv, headDim float64) (fwd, bwd float64) {
	if !runsFusedAttention(arch, fw, flash2) {
		return 1, 1
	}
	if arch == hardware.Blackwell {
		return blackwellAttentionSpeed(skv, headDim)
	}
	xs := attnSeqLens[:]
	cf, cb := interpLog2(xs, cuDNNFwdTFLOPS[:], skv), interpLog2(xs, cuDNNBwdTFLOPS[:], skv)
	if headDim < 128 {
		w := max(0, (headDim-64)/64) // 0 at 64 and below, 1 at 128
		cf = w*cf + (1-w)*interpLog2(xs, cuDNNFwdTFLOPS64[:], skv)
		cb = w*cb + (1-w)*interpLog2(xs, cuDNNBwdTFLOPS64[:], skv)
	}
	fwd = cf / interpLog2(xs, fa2FwdTFLOPS[:], skv)
	bwd = cb / interpLog2(xs, fa2BwdTFLOPS[:], skv)
	return fwd, bwd
}

// runsFusedAttention says whether the layer's attention runs cuDNN's fused kernel
// (Transformer Engine's, framework.Profile.HopperFusedAttention) rather than
// FlashAttention-2: on Hopper and Blackwell, under a framework that runs it, unless
// the request asks for FlashAttention-2.
func runsFusedAttention(arch hardware.Arch, fw string, flash2 bool) bool {
	if arch != hardware.Hopper && arch != hardware.Blackwell || flash2 {
		return false
	}
	p, err := framework.Get(fw)
	return err == nil && p.HopperFusedAttention
}

// interpLog2 interpolates ys over xs (increasing) linearly in log₂ x, flat outside.
func interpLog2(xs, ys []float64, x float64) float64 {
	n := len(xs)
	if !(x > xs[0]) {
		return ys[0]
	}
	if x >= xs[n-1] {
		return ys[n-1]
	}
	i := 1
	for xs[i] < x {
		i++
	}
	w := math.Log2(x/xs[i-1]) / math.Log2(xs[i]/xs[i-1])
	return ys[i-1] + w*(ys[i]-ys[i-1])
}

// Measured speed of causal attention on a B200 (bf16, head dimension 128, 128 query
// and 8 key-value heads — Llama 3.1 405B's — batch 1), in TFLOP/s at the key lengths
// bwAttnSeqLens: NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training at commit
// bb37575 (2025-10-07), artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv, run in
// the NGC PyTorch 25.09 container (sample_b200_bf16_run.txt: torch 2.9.0a0 nv25.09,
// cuDNN 9.13.0, flash-attn 2.7.4.post1): the pyt_cudnn backend (cuDNN's sm100 fused
// attention, which Transformer Engine's FusedAttention runs) and flash_attention
// (flash-attn 2, whose sm80 kernels run unchanged on Blackwell). The same benchmark
// with cuDNN 9.10.2 (NGC 25.05, commit 87a1bcd) measured within 3 % of these from 4k
// keys on. Shorter keys are left out: at batch 1 the kernels last 0.1–0.2 ms and
// the figures are the launch's.
var (
	bwAttnSeqLens     = [...]float64{2048, 4096, 8192, 16384}
	bwCuDNNFwdTFLOPS  = [...]float64{478.921, 855.678, 1171.278, 1332.415}
	bwCuDNNBwdTFLOPS  = [...]float64{371.486, 701.265, 942.509, 1074.776}
	bwFlash2FwdTFLOPS = [...]float64{254.381, 342.990, 399.925, 425.128}
	bwFlash2BwdTFLOPS = [...]float64{198.845, 273.484, 318.004, 336.635}
)

// The dense bf16 peaks the shares of peak are taken against (the catalog's B200 and
// H100), and where attnSeqLens has 16k keys, bwAttnSeqLens' last length.
const (
	b200PeakBF16TFLOPS float64 = 2250
	h100PeakBF16TFLOPS float64 = 989
	attnSeqLen16k              = 5
)

// blackwellAttentionSpeed is Transformer Engine's cuDNN fused attention on Blackwell
// relative to the kernel Constants.AttentionEfficiency prices there: Blackwell's
// attention efficiency is tied to Hopper's, so that kernel runs at FlashAttention-2's
// share of the H100's peak. The speed is cuDNN's over flash-attn 2's on the same B200
// run at that key length (2.9× at 8k: flash-attn 2 does not use Blackwell's tensor
// core instructions), times flash-attn 2's share of the B200's peak over its share of
// the H100's at 16k keys (0.558 forward, 0.460 backward: the same kernel runs at
// about the same TFLOP/s on both), interpolated in log₂ of the key length and held
// flat beyond the measured ones: 1.63× forward and 1.36× backward at 8k keys, 1.05 /
// 0.86 at 2k. Measured at head dimension 128 only; other widths keep the tied
// efficiency (ratio 1).
func blackwellAttentionSpeed(skv, headDim float64) (fwd, bwd float64) {
	if headDim != 128 {
		return 1, 1
	}
	xs := bwAttnSeqLens[:]
	n := len(xs) - 1
	shareF := (bwFlash2FwdTFLOPS[n] / b200PeakBF16TFLOPS) / (fa2FwdTFLOPS[attnSeqLen16k] / h100PeakBF16TFLOPS)
	shareB := (bwFlash2BwdTFLOPS[n] / b200PeakBF16TFLOPS) / (fa2BwdTFLOPS[attnSeqLen16k] / h100PeakBF16TFLOPS)
	fwd = interpLog2(xs, bwCuDNNFwdTFLOPS[:], skv) / interpLog2(xs, bwFlash2FwdTFLOPS[:], skv) * shareF
	bwd = interpLog2(xs, bwCuDNNBwdTFLOPS[:], skv) / interpLog2(xs, bwFlash2BwdTFLOPS[:], skv) * shareB
	return fwd, bwd
}

// Measured speed of the same causal attention (bf16, head dimension 128, 128 query
// and 8 key-value heads, batch 1) on a GB300 — Blackwell Ultra — in the same
// benchmark, commit and container as the B200's above (NVIDIA/cudnn-frontend
// benchmark/sdpa_benchmark_training at bb37575,
// artifacts/sdpa_bf16_benchmark_results_NVIDIA_GB300.csv; sample_gb300_bf16_run.txt:
// torch 2.9.0a0 nv25.09, cuDNN 9.13.0), the pyt_cudnn backend at bwAttnSeqLens, in
// TFLOP/s; and the GB300's dense bf16 peak the catalog gives (NVIDIA's GB300 NVL72
// rating, which is also the GB200's; the catalog prices the GB200 at its measured rate).
var (
	ultraCuDNNFwdTFLOPS = [...]float64{593.514, 1144.867, 1495.674, 1702.463}
	ultraCuDNNBwdTFLOPS = [...]float64{487.345, 892.572, 1130.076, 1267.827}
)

const gb300PeakBF16TFLOPS float64 = 2500

// ultraAttentionSpeed is Transformer Engine's cuDNN fused attention on Blackwell
// Ultra (B300, GB300) relative to its price on other Blackwell parts
// (blackwellAttentionSpeed, at the same share of the GPU's bf16 peak): cuDNN 9.13's
// measured GB300 speed over its B200 speed at that key length, divided by the two
// parts' peak ratio (2500 / 2250 TFLOP/s, 1.11: flash-attn 2's sm80 kernel, bound by
// its older tensor-core instructions, runs 1.09–1.10× faster on the GB300 than on the
// B200 from 8k keys on in the same files, the clock's gain). Blackwell Ultra runs
// the softmax's exponentials at twice the B200's rate, its tensor rates are the
// B200's: 1.15× forward and 1.08× backward at 8k keys (the backward runs five GEMMs
// per recomputed exponential, the forward two, so the exponentials are a smaller
// share of its time), 1.20 / 1.15 at 4k,
// 1.15 / 1.06 at 16k, held flat beyond. cuDNN 9.17 measured GB300 against GB200 —
// the same rating — at 1.20 / 1.07 at 8k and 1.19 / 1.07 at 16k (cudnn-frontend at
// b372d39). The same kernels apply as for blackwellAttentionSpeed; elsewhere 1.
func ultraAttentionSpeed(fw string, flash2 bool, skv, headDim float64) (fwd, bwd float64) {
	if headDim != 128 || !runsFusedAttention(hardware.Blackwell, fw, flash2) {
		return 1, 1
	}
	xs := bwAttnSeqLens[:]
	peaks := gb300PeakBF16TFLOPS / b200PeakBF16TFLOPS
	fwd = interpLog2(xs, ultraCuDNNFwdTFLOPS[:], skv) / interpLog2(xs, bwCuDNNFwdTFLOPS[:], skv) / peaks
	bwd = interpLog2(xs, ultraCuDNNBwdTFLOPS[:], skv) / interpLog2(xs, bwCuDNNBwdTFLOPS[:], skv) / peaks
	return fwd, bwd
}

// attnTile is the block of the score matrix a fused attention kernel computes as one
// unit: q query rows by k key columns. A tile the mask cuts through is computed whole
// (its masked scores are set to −∞ after the matmul), and each tile carries the same
// fixed work — the softmax's running-maximum rescale, the pipeline's barriers — however
// few of its scores count.
type attnTile struct{ q, k int }

// The tiles of the kernels the model prices, by head dimension. cuDNN's fused
// attention is closed source; FlashAttention's kernels for the same GPUs are its open
// counterparts and are taken for its tiling.
//
//   - Blackwell, cuDNN's sm100 kernel: forward 2 × 128 query rows (two softmax
//     stages) by 128 keys, backward 128 × 128. Dao-AILab/flash-attention at
//     0251105a: flash_attn/cute/flash_fwd_sm100.py (m_block_size 128, n_block_size
//     128, q_stage 2: cta_tiler = (q_stage·m_block_size, n_block_size)),
//     flash_attn/cute/interface.py (q_stage 2 on sm10x once the queries exceed one
//     tile), flash_attn/cute/flash_bwd_sm100.py (tile_m = tile_n = 128).
//   - Hopper, cuDNN's sm90 kernel: forward 192 × 128 at head dimension 64 and
//     below, 128 × 128 above, causal or local; backward 128 × 128 at 64, 64 × 128
//     above (FlashAttention-3 at the same commit: hopper/tile_size.h,
//     tile_size_fwd_sm90; hopper/flash_bwd_launch_template.h, run_mha_bwd_hdim64 and
//     run_mha_bwd_hdim128, causal or local).
//   - FlashAttention-2 (every other GPU, and Training.FlashAttention2): forward 128 ×
//     128 at head dimension 64 and below, 128 × 64 above; backward 128 × 128 at 64,
//     64 × 128 above (csrc/flash_attn/src/flash_fwd_launch_template.h,
//     run_mha_fwd_hdim64 / run_mha_fwd_hdim128 without dropout;
//     flash_bwd_launch_template.h, run_mha_bwd_hdim64 / run_mha_bwd_hdim128 with
//     144 KB of shared memory).
var (
	blackwellAttnFwdTile = attnTile{256, 128}
	blackwellAttnBwdTile = attnTile{128, 128}
	hopperAttnFwdTile64  = attnTile{192, 128}
	hopperAttnFwdTile    = attnTile{128, 128}
	hopperAttnBwdTile64  = attnTile{128, 128}
	hopperAttnBwdTile    = attnTile{64, 128}
	flash2AttnFwdTile64  = attnTile{128, 128}
	flash2AttnFwdTile    = attnTile{128, 64}
	flash2AttnBwdTile64  = attnTile{128, 128}
	flash2AttnBwdTile    = attnTile{64, 128}
)

// attentionTiles returns the forward and backward tiles of the fused attention kernel
// attentionSpeed prices: cuDNN's on Hopper and Blackwell where the framework runs
// Transformer Engine's fused attention, FlashAttention-2's otherwise.
func attentionTiles(arch hardware.Arch, fw string, flash2 bool, headDim float64) (fwd, bwd attnTile) {
	fused := runsFusedAttention(arch, fw, flash2)
	narrow := headDim <= 64
	switch {
	case fused && arch == hardware.Blackwell:
		return blackwellAttnFwdTile, blackwellAttnBwdTile
	case fused && narrow:
		return hopperAttnFwdTile64, hopperAttnBwdTile64
	case fused:
		return hopperAttnFwdTile, hopperAttnBwdTile
	case narrow:
		return flash2AttnFwdTile64, flash2AttnBwdTile64
	}
	return flash2AttnFwdTile, flash2AttnBwdTile
}

// bandTiles counts the tiles of a seq × seq score matrix, cut in tiles of tl, that a
// causal mask with a window of w keys (each query attends to itself and the w−1 keys
// before it; w ≤ 0: the whole causal prefix) leaves at least one score in: query tile
// j runs over the key tiles from the one holding key j·q − (w−1) to the one holding
// its last query (FlashAttention's BlockInfo.get_n_block_min_max,
// flash_attn/cute/block_info.py at 0251105a, with window_size_left w−1 and
// window_size_right 0).
func bandTiles(seq, w int, tl attnTile) int {
	n := 0
	for q0 := 0; q0 < seq; q0 += tl.q {
		q1 := min(q0+tl.q, seq)
		hi := (q1 + tl.k - 1) / tl.k
		lo := 0
		if w > 0 && q0-(w-1) > 0 {
			lo = (q0 - (w - 1)) / tl.k
		}
		n += hi - lo
	}
	return n
}

// windowTileShare is the time of a windowed layer's attention relative to the same
// layer's causal attention over the whole sequence, forward and backward: the tiles
// the kernel computes with the window over those it computes without (bandTiles). A
// window of 128 keys over 8k-token sequences is 3.1 % of causal attention's scores
// but, in cuDNN's Blackwell tiles, 9.0 % of its forward tiles and 6.1 % of its
// backward ones: every 256-row query tile touches three 128-key tiles, where the
// window needs one and a half. The measured causal speeds (attentionSpeed) already
// price the causal diagonal's tiles.
func windowTileShare(arch hardware.Arch, fw string, flash2 bool, headDim float64, seq, window int) (fwd, bwd float64) {
	if window <= 0 || seq <= window {
		return 1, 1
	}
	tf, tb := attentionTiles(arch, fw, flash2, headDim)
	fwd = float64(bandTiles(seq, window, tf)) / float64(bandTiles(seq, 0, tf))
	bwd = float64(bandTiles(seq, window, tb)) / float64(bandTiles(seq, 0, tb))
	return fwd, bwd
}
