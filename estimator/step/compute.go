package step

import (
	"math"

	"github.com/stepcost/stepcost/estimator/hardware"
)

// Constants are the fitted parameters of the compute and memory model, per GPU
// generation where the hardware differs. docs/step-model.md gives each one's source.
type Constants struct {
	// GEMMEfficiency is the fraction of dense peak a large, well-shaped bf16 matrix
	// multiplication reaches (cuBLAS/hipBLASLt on big square-ish problems).
	GEMMEfficiency map[hardware.Arch]float64
	// FP8GEMMEfficiency is the same for fp8 matmuls against the fp8 peak; the casts
	// around them are priced separately (fp8CastBytes).
	FP8GEMMEfficiency map[hardware.Arch]float64
	// TEExpertFP8Efficiency is the fraction of the fp8 peak the routed experts'
	// GEMMs reach where Transformer Engine runs them with per-tensor scales
	// (delayed or current scaling) on the GPU generations listed: Megatron-Core's
	// SequentialMLP (a TE Linear per local expert, Megatron-Core core_r0.10.0–0.12
	// moe/experts.py) or GroupedLinear (TE's general_grouped_gemm, one cuBLASLt GEMM
	// per expert over its compute streams). Each expert's input and output gradient
	// get their own cast, amax and scale-inverse, and each GEMM its own cuBLASLt
	// heuristic and per-tensor descale epilogue, where the dense layers' GEMMs are
	// one fused call per projection. Zero for a generation: the experts run at
	// FP8GEMMEfficiency. Fitted (docs/step-model.md, "Transformer Engine's fp8
	// expert GEMMs on Hopper").
	TEExpertFP8Efficiency map[hardware.Arch]float64
	// GEMMHalfFLOPs is the work at which a GEMM reaches half of its large-problem
	// efficiency: kernel start, prologue and epilogue amortise over the work.
	GEMMHalfFLOPs float64
	// TileM × TileN is the output tile one SM computes; a GEMM runs in waves of one
	// tile per SM, so a partial last wave wastes the idle SMs.
	TileM, TileN int
	// AttentionEfficiency is the fraction of peak of the attention core (QKᵀ, softmax,
	// AV): flash attention when fused, separate batched GEMMs and softmax otherwise.
	AttentionEfficiency map[hardware.Arch]float64
	// HBMEfficiency is the fraction of HBM bandwidth elementwise kernels reach:
	// streaming kernels (BabelStream triad, cudaMemcpy) reach about 90 % of the
	// datasheet bandwidth on A100 and H100.
	HBMEfficiency float64
	// KernelLaunchUs is the host cost of launching one kernel; a layer cannot run
	// faster than the host can launch its kernels.
	KernelLaunchUs float64
	// KernelsPerLayer is the number of kernels of one layer's forward pass (GEMMs,
	// norms, rotary, attention, residuals); the backward launches twice as many.
	KernelsPerLayer float64
	// OptimizerBytes is the HBM traffic of one Adam update per parameter: read fp32
	// master, m, v and the gradient, write master, m, v and the bf16 weight.
	OptimizerBytes float64
	// RuntimeReserveGB is memory the framework holds besides tensors: CUDA context,
	// cuBLAS workspaces, NCCL buffers.
	RuntimeReserveGB float64
	// Fragmentation is the fraction of the GPU's memory the caching allocator loses
	// to fragmentation at peak.
	Fragmentation float64
	// DPBucketBytes is the gradient bucket size of data-parallel reduction where
	// the framework has no bucket model of its own (neither Megatron-Core's nor
	// PyTorch DDP's: framework.Profile.MegatronDDPBuckets, TorchDDP); the last
	// bucket cannot overlap the backward pass.
	DPBucketBytes float64
	// EagerOpHostUs is the host time of one eager PyTorch operator: Python, the
	// dispatcher, autograd bookkeeping and the launch — published at 5–25 µs per op
	// (see docs/step-model.md). On-demand ZeRO-3 gathers spend two per peer rank.
	EagerOpHostUs float64
	// ModulesPerLayer is how many modules of a transformer layer own weights and so
	// gather them separately under on-demand ZeRO-3: two norms, the fused QKV and
	// output projections, and the two MLP projections (Megatron-LM's layer).
	ModulesPerLayer float64
}

// DefaultConstants returns the fitted compute constants (a fresh copy). Where each
// value comes from is stated beside it; those with no published source are listed
// in docs/step-model.md, "Constants without a published source".
func DefaultConstants() Constants {
	return Constants{
		// Fitted (accuracy.Fit, accuracy.Setters) to the published runs:
		// docs/step-model.md, "In sample and out of sample". Blackwell's bf16 rate
		// is tied to Hopper's. CDNA 3 and 4 (no AMD run in the fit): not fitted,
		// no published source.
		GEMMEfficiency: map[hardware.Arch]float64{
			hardware.Ampere: 0.73, hardware.Hopper: 0.61, hardware.Blackwell: 0.61,
			hardware.CDNA3: 0.50, hardware.CDNA4: 0.50,
		},
		// Hopper's fitted as GEMMEfficiency ("MoE, fp8 and Blackwell runs");
		// Blackwell's from kernel measurements (blackwellFP8GEMMEfficiency), not
		// fitted; CDNA's not fitted, no published source.
		FP8GEMMEfficiency: map[hardware.Arch]float64{
			hardware.Hopper: 0.55, hardware.Blackwell: blackwellFP8GEMMEfficiency, hardware.CDNA3: 0.35, hardware.CDNA4: 0.35,
		},
		// Fitted: docs/step-model.md, "Transformer Engine's fp8 expert GEMMs on Hopper".
		TEExpertFP8Efficiency: map[hardware.Arch]float64{hardware.Hopper: 0.44},
		// A hardware constant, not fitted ("In sample and out of sample": fitted, it
		// became a sink); no published measurement.
		GEMMHalfFLOPs: 1e7,
		// The output tile Hopper's fp8 cuBLAS kernels run, 128 × 256 or 256 × 128
		// (docs/step-model.md, "Per-run residuals of the MoE, fp8 and Blackwell
		// runs", the larger fp8 tile); taken for every GEMM, where bf16 kernels often
		// run 128 × 128 — that choice has no published source.
		TileM: 128,
		TileN: 256,
		// Fitted as GEMMEfficiency; CDNA's not fitted, no published source.
		AttentionEfficiency: map[hardware.Arch]float64{
			hardware.Ampere: 0.29, hardware.Hopper: 0.215, hardware.Blackwell: 0.215,
			hardware.CDNA3: 0.20, hardware.CDNA4: 0.20,
		},
		// STREAM-class kernels reach about 90 % of datasheet HBM bandwidth on A100
		// and H100 (BabelStream triad, cudaMemcpy; see the field's comment).
		HBMEfficiency: 0.90,
		// Not fitted; no published measurement of the launch cost or of a layer's
		// kernel count (20 forward, 40 backward) behind them.
		KernelLaunchUs:  4,
		KernelsPerLayer: 20,
		// Counted: fp32 master, m, v (12 B) and the fp32 gradient (4 B) read, master,
		// m, v written (12 B), the bf16 weight written (2 B).
		OptimizerBytes: 30,
		// Memory only (no step time depends on them); no published source.
		RuntimeReserveGB: 2.5,
		Fragmentation:    0.05,
		// Fitted to Narayanan et al. 2021's DeepSpeed ZeRO-3 rows (Table 2), inside
		// the published 5–25 µs an eager operator: docs/step-model.md, "How the time
		// is computed" (ZeRO-3's on-demand gathers).
		EagerOpHostUs: 7,
		// Counted: Megatron-LM's layer (see the field's comment).
		ModulesPerLayer: 6,
		// Without a published source for the frameworks it applies to: PyTorch
		// DDP's bucket_cap_mb default of 25 taken as 25·10⁶ B, for the profiles
		// whose data parallelism is neither Megatron-Core's nor DDP's (FSDP reduces
		// each wrapped module's flat gradient, DeepSpeed reduce_bucket_size 5e8
		// elements after the backward, torchtitan's DDP bucket_cap_mb=100; see
		// docs/step-model.md, "Constants without a published source"). DDP itself
		// is priced with its own buckets (framework.TorchDDPBucketBytes).
		DPBucketBytes: 25e6,
	}
}

// blackwellFP8GEMMEfficiency is Blackwell's fp8 GEMM efficiency taken from kernel
// measurements rather than from training steps: the value at which gemmTime prices
// the e4m3 GEMMs of XLA's cuBLASLt table for sm_100 on a B200
// (testdata/gemm_measured.jsonl, source xla-sm100: tensorflow a305421
// matmul_interpolator_data.h) whose M, N and K are all at least 2 048, the regime of
// the training rows' GEMMs, with no mean log error: the geometric mean of the
// efficiencies the eight shapes imply one by one, 0.367–0.710
// (TestBlackwellFP8GEMMEfficiencyFromMeasuredShapes). Their mean |log error| is flat
// between the middle two, 0.523–0.639. The geometric mean, 0.5509, has a standard
// error of 8 % (the implied efficiencies' log standard deviation 0.22 over √8), so
// it is kept to two decimals, as the fitted constants are. The MAMF figures are left out: each is the
// best shape of a sweep, the envelope rather than a typical GEMM. Fitted to the
// training rows instead, the constant followed whichever Blackwell fp8 source a
// leave-one-source-out fold kept: 0.490 without MLPerf v5.1, whose 8 192-token B200
// rows then came out 7–17 % slow, the constant taking up the GB200 cost of NeMo
// 25.04's rows (docs/step-model.md, "Blackwell's fp8 GEMM rate from kernel
// measurements").
const blackwellFP8GEMMEfficiency = 0.55

// gemm is one matrix multiplication C[M×N] += A[M×K]·B[K×N], Count times.
type gemm struct {
	m, n, k float64
	count   float64
	// grouped: the count problems run as one grouped GEMM (one launch whose tiles
	// share the SMs' waves) rather than count GEMMs one after another.
	grouped bool
}

func (g gemm) flops() float64 { return 2 * g.m * g.n * g.k * g.count }

// gpuRates holds what compute timing needs of a GPU.
type gpuRates struct {
	peak     float64 // FLOP/s of the matmul format
	peak16   float64 // bf16/fp16 FLOP/s (attention runs in 16 bits)
	peak32   float64 // fp32 FLOP/s on the CUDA cores (no TF32); 0: not given
	hbm      float64 // achievable B/s
	sms      float64
	gemmEff  float64
	attnEff  float64
	arch     hardware.Arch
	ultra    bool    // Blackwell Ultra (hardware.GPU.BlackwellUltra)
	elemSize float64 // bytes per matmul operand element
	// fp8: the layers' matmuls run in fp8 (and pay for their casts); gemmEff16 is
	// the 16-bit efficiency of the matmuls that stay in 16 bits.
	fp8       bool
	gemmEff16 float64
	// accBytes, when not 0, is the HBM traffic per output element of a GEMM that
	// accumulates into its output rather than writing it: a weight gradient added
	// to the gradient it accumulates over the micro-batches, read and written
	// (wgradAccumulationBytes). 0: the output written once in 16 bits.
	accBytes float64
}

// bf16 returns the rates of a 16-bit matmul on the same GPU: the output layer's
// under fp8 training.
func (r *gpuRates) bf16() gpuRates {
	c := *r
	c.peak, c.gemmEff, c.elemSize, c.fp8 = c.peak16, c.gemmEff16, 2, false
	return c
}

// Bytes of HBM traffic per element of an fp8 cast: read 16 bits, write the fp8 value
// and its transpose (Hopper's fp8 tensor cores take only the TN layout, so every
// tensor is needed both ways: Transformer Engine's fused cast-transpose); current
// scaling reads the tensor once more for its amax first.
const (
	fp8CastBytes = 4
	fp8AmaxBytes = 2
	// fp8WeightCopyBytes: an fp8 weight and its transpose, per parameter.
	fp8WeightCopyBytes = 2
	// fp8TransposeWriteBytes: the transposed fp8 copy a cast writes, per element
	// (part of fp8CastBytes).
	fp8TransposeWriteBytes = 1
	// fp8ElementBytes is one fp8 value (E4M3 or E5M2).
	fp8ElementBytes = 1
	// fp8TransposeBytes: with fp8 weights (Training.FP8Params) only the transpose is
	// kept besides the weight itself.
	fp8TransposeBytes = 1
	// fp8ParamCastBytes: with fp8 weights a weight's cast is its transpose: read the
	// fp8 weight, write the fp8 transpose.
	fp8ParamCastBytes = 2
	// fp8RowwiseCastBytes: rowwise scaling quantises a tensor along each axis
	// separately (the scales of the transposed operand run along the other axis), each
	// an amax reduction (read 16 bits) and a cast (read 16 bits, write fp8):
	// 2 × (2 + 2 + 1) per element, half of it along the rows and half along the
	// columns (fp8ColumnCastRate).
	fp8RowwiseCastBytes = 10
	// fp8RowwiseAxisBytes is one of those two casts: 2 + 2 + 1 per element.
	fp8RowwiseAxisBytes = fp8RowwiseCastBytes / 2
	// fp8ColumnCastRate is the speed of a cast scaled along the columns of a row-major
	// tensor (torchao's "dim1" cast: the amax runs down the columns and the fp8 copy
	// is written transposed, column-major, for the backward GEMM's operand) relative
	// to one scaled along the rows: Inductor's kernels for it reach 0.6–0.7 TB/s on
	// H100 where the row-wise ones reach 2.0–2.2 TB/s, reads uncoalesced
	// (pytorch/pytorch#149982, torch 2.8.0a0, 2025-03-25: 0.65 / 2.1), the same 3×
	// that torchao measured when it moved its per-group row-wise scaling kernel to
	// coalesced reads (pytorch/ao PR #2863). Under torchao's rowwise recipe each
	// operand is cast once each way, so half of fp8RowwiseCastBytes runs at this rate.
	fp8ColumnCastRate = 0.65 / 2.1
	// fp8MXCastBytes: MXFP8 quantises along each axis too, its 32-element block
	// scales found in the cast kernel's registers: 2 × (2 + 1) per element (the
	// scales, 1 B per 32 elements, are left out).
	fp8MXCastBytes = 6
	// fp8BlockScaleBytes: block scaling's fp32 scales, one per 128 elements of each
	// of the two copies a cast writes (DeepSeek-V3 §3.3.1's 1×128 tiles).
	fp8BlockScaleBytes = 2 * 4.0 / 128
	// fp8RescaleBytes: a backward GEMM of rowwise scaling runs as a tensorwise cuBLAS
	// GEMM with unit scales (pytorch/ao PR #1325: the rowwise CUTLASS kernel is too
	// slow without fast accumulation) and writes its 16-bit output as usual; an extra
	// Inductor kernel multiplies it in place by the outer product of the row and
	// column scales (torchao 6243040 float8_ops.py addmm_float8_unwrapped: output
	// dtype the operand's original bf16, `output *= post_inverse_scale`; pytorch/ao
	// issue #2184: "at least one extra triton kernel per GEMM"): read 2, write 2 B
	// per output element.
	fp8RescaleBytes = 4
)

func (k *Constants) rates(g hardware.GPU, p Precision) (gpuRates, bool) {
	var r gpuRates
	bf, err := g.Peak(hardware.BF16)
	if err != nil {
		if bf, err = g.Peak(hardware.FP16); err != nil {
			return r, false
		}
	}
	r.peak16, r.peak = bf, bf
	if f32, err := g.Peak(hardware.FP32); err == nil {
		r.peak32 = f32
	}
	r.gemmEff = k.GEMMEfficiency[g.Arch]
	r.gemmEff16 = r.gemmEff
	r.elemSize = 2
	if p == FP8 {
		f8, err := g.Peak(hardware.FP8)
		if err != nil || k.FP8GEMMEfficiency[g.Arch] == 0 {
			return r, false
		}
		r.peak, r.gemmEff, r.elemSize, r.fp8 = f8, k.FP8GEMMEfficiency[g.Arch], 1, true
	}
	r.attnEff = k.AttentionEfficiency[g.Arch]
	r.arch = g.Arch
	r.ultra = g.BlackwellUltra()
	r.hbm = g.MemoryBandwidthGBps * 1e9 * k.HBMEfficiency
	r.sms = float64(g.SMs)
	return r, r.gemmEff > 0 && r.attnEff > 0
}

// gemmTime is the time of a GEMM: the larger of its compute time — at the
// large-problem efficiency, the waves of output tiles it runs (a partial last wave
// as long as a full one) plus the start-up of a launch (Constants.GEMMHalfFLOPs of
// work, paid once whatever the waves) — and the time to move its operands through
// HBM. The start-up is not stretched by the wave's idle SMs: a kernel's prologue
// and epilogue take as long whether its last wave is full or not, so a GEMM never
// takes less time for more rows, columns or depth (TestGEMMNotFasterWhenLarger).
func (k *Constants) gemmTime(g gemm, r *gpuRates) float64 {
	if g.count == 0 || g.m <= 0 || g.n <= 0 || g.k <= 0 {
		return 0
	}
	if g.grouped && g.count > 1 {
		// One launch: the problems' work adds up against the launch and ramp
		// overhead, and their tiles (each problem tiled on its own) fill the waves
		// together.
		n := g.count
		work := 2 * g.m * g.n * g.k * n
		if r.sms > 0 {
			tiles := n * math.Ceil(g.m/float64(k.TileM)) * math.Ceil(g.n/float64(k.TileN))
			waves := math.Ceil(tiles / r.sms)
			work *= max(1, waves*r.sms*float64(k.TileM*k.TileN)/(n*g.m*g.n))
		}
		bytes := n * (r.elemSize*(g.m*g.k+g.k*g.n) + r.outputBytes()*g.m*g.n)
		return rooflineTime((work+k.GEMMHalfFLOPs)/(r.peak*r.gemmEff), bytes/r.hbm)
	}
	work := 2 * g.m * g.n * g.k
	if r.sms > 0 {
		tiles := math.Ceil(g.m/float64(k.TileM)) * math.Ceil(g.n/float64(k.TileN))
		waves := math.Ceil(tiles / r.sms)
		// The tile-waves run whole: partial tiles at the edges and the idle SMs of
		// the last wave take as long as useful ones.
		work *= max(1, waves*r.sms*float64(k.TileM*k.TileN)/(g.m*g.n))
	}
	compute := (work + k.GEMMHalfFLOPs) / (r.peak * r.gemmEff)
	bytes := r.elemSize*(g.m*g.k+g.k*g.n) + r.outputBytes()*g.m*g.n
	if g.count > 1 {
		// Local experts looped over.
		return g.count * rooflineTime(compute, bytes/r.hbm)
	}
	return max(compute, bytes/r.hbm)
}

// outputBytes is the HBM traffic per output element of a GEMM (gpuRates.accBytes).
func (r *gpuRates) outputBytes() float64 {
	if r.accBytes > 0 {
		return r.accBytes
	}
	return 2
}

// wgradAccumulationBytes is the traffic per element of a weight-gradient GEMM that
// adds its result to the gradient held over the micro-batches of a step: the
// gradient read and written, each at the optimizer's gradient width (fp32 main
// gradients: Megatron-LM's --gradient-accumulation-fusion, on by default, has the
// wgrad GEMM accumulate into param.main_grad, Transformer Engine's
// fuse_wgrad_accumulation for its linear and grouped linear layers; 16-bit
// gradients: PyTorch autograd's accumulation into .grad). With few tokens per
// expert the weight gradients' traffic outweighs the GEMM's work: at 256 tokens
// DeepSeek-V3's expert weight gradients move 8 B per 512 FLOPs.
func wgradAccumulationBytes(gradBytes float64) float64 { return 2 * gradBytes }

// rooflineTime combines a GEMM's compute and memory times on a soft roofline of
// order p = 2, (compute^p + memory^p)^(1/p): a kernel near the ridge point, where the tensor
// cores would be busy as long as HBM streams the operands, reaches neither bound,
// because its pipeline stages wait on loads the other warps cannot always cover.
// p = 2 fits DeepGEMM's grouped GEMMs of DeepSeek-V3's expert shapes on H800
// (deepseek-ai/DeepGEMM README at commit 55ab91f, 2025-03-25): 4 experts of 256
// tokens (N × K of 4096 × 7168 and 7168 × 2048), whose compute and weight traffic
// take about as long, run at 932 and 815 TFLOPS against 1346 and 1214 at 4096–8192
// tokens per expert — 1.44× and 1.49× the larger bound, where p = 2 gives 1.41×;
// with more tokens per expert the weights amortise and the penalty fades (1024
// tokens: measured 1.09×, p = 2 gives 1.06×). The plain maximum (p → ∞) priced
// 256 tokens per expert as fast as 4096. It prices the GEMMs of several local
// experts, grouped or looped over — the shapes DeepGEMM measured (a single local
// expert sees all its rank's routed tokens, far from the ridge); dense GEMMs keep
// the plain maximum their fitted efficiencies were calibrated with (they run far
// from the ridge: tokens per micro-batch in the thousands against one weight).
func rooflineTime(compute, memory float64) float64 {
	return math.Hypot(compute, memory)
}
