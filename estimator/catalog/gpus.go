package catalog

import (
	"math"

	"github.com/stepcost/stepcost/estimator/hardware"
)

// Dense peak rates per operand format, in TFLOP/s. Datasheets that quote only
// structured-sparsity rates ("with sparsity") are halved. fp32 is the non-tensor
// (vector) FP32 rate; tf32 is the tensor-core TF32 rate. A format the GPU does not
// execute in hardware is left out, so hardware.GPU.Peak reports it as missing.
//
// NVLinkGBps is the scale-up bandwidth per direction: vendors quote the bidirectional
// total (A100 600 GB/s, H100 900 GB/s, B200 1.8 TB/s), which is halved here.

// Ampere: 108 SMs at 1410 MHz. NVLink 3: 12 links × 25 GB/s per direction.
var a100Peak = map[hardware.DType]float64{
	hardware.FP32: 19.5,
	hardware.TF32: 156,
	hardware.BF16: 312,
	hardware.FP16: 312,
}

// GH100 in its SXM5 form (H100 SXM, H200, H800): 132 SMs. Dense tensor rates from
// the H100 whitepaper (the datasheets quote the same values doubled for sparsity:
// 989 / 1,979 / 3,958 TFLOP/s).
var gh100SXMPeak = map[hardware.DType]float64{
	hardware.FP32: 66.9,
	hardware.TF32: 494.7,
	hardware.BF16: 989.4,
	hardware.FP16: 989.4,
	hardware.FP8:  1978.9,
}

// The H100 SXM with 96 GB of HBM2e run at a 500 W power limit instead of the SXM5's
// 700 W (the part torchtitan's published H100 runs used). NVIDIA publishes no rates
// for it, so they are derived:
//   - Tensor rates: a GEMM-bound H100 runs at its power limit, and dynamic CMOS power
//     is P = α·C·V²·f with the supply voltage scaled with the clock along the DVFS
//     curve (V ∝ f), so P ∝ f³ and the sustained clock scales as the cube root of the
//     power limit: (500/700)^(1/3) = 0.894 of the 700 W part's rates.
//   - HBM: six 16 GB HBM2e stacks (96 GB) on the GH100's 6 × 1024-bit interface at
//     HBM2e's 3.2 Gb/s per pin (JEDEC JESD235C; the H100 PCIe's five HBM2e stacks give
//     its published 2.0 TB/s the same way): 6144 × 3.2 / 8 = 2,458 GB/s.
var h100HBM2e500WPeak = scalePeaks(gh100SXMPeak, math.Cbrt(h100PowerLimitW/h100SXMTDPW))

const (
	h100SXMTDPW     = 700.0 // H100 SXM5 maximum thermal design power (datasheet)
	h100PowerLimitW = 500.0
)

// The B200 run at a 750 W power limit instead of its 1000 W (HGX B200). Meta's
// B200 hosts run at it: torchao's B200 training table states "8xB200 GPUs limited to
// 750W" in its first revision (pytorch/ao d8bb51f63, PR #2777, 2025-08-15, reworded
// to "power limited" in 9e3758d15, PR #2778), and the benchmark scripts of
// pytorch/helion PR #347 set B200s to 750 W (H100s to 500 W, GB200s to 1200 W).
//
// Tensor rates: NVIDIA rates the same Blackwell GPU (two dies, the same HBM3e) at three
// power envelopes (NVIDIA Blackwell datasheet, "Individual Blackwell GPU
// specifications", 2024): HGX B100 at 700 W, HGX B200 at 1000 W, GB200 at 1200 W, with
// dense BF16 1.75 / 2.25 / 2.5 PFLOP/s and FP8 3.5 / 4.5 / 5 (FP4 and INT8 in the same
// 7 : 9 : 10; TF32 and FP64, rated apart, nearly so). A power-capped B200 lowers its
// clock until it draws the cap, so it runs where the vendor's rated clock at that
// power is: between the B100's and the B200's envelopes the rate grows as P^k,
// k = ln(2.25/1.75) / ln(1000/700) = 0.705, and at 750 W it is (750/1000)^0.705 = 0.817 of the 1000 W part's rates (log-linear
// interpolation between the two ratings; linear interpolation gives 0.815). The
// cube-root rule of the 500 W H100 (P ∝ f³, 0.909 here) does not hold for Blackwell:
// its own ratings fall more than twice as fast with power. (Hopper's do not: the H100
// NVL, the same 132-SM GH100 rated at 350–400 W, has 835 dense BF16 TFLOP/s against the
// 700 W SXM's 989, k = 0.24–0.30 against the cube root's 0.33, so (500/700)^k is 0.90–0.92
// where the cube root gives 0.894.) HBM3e keeps its pin rate (the B100 is rated at the
// B200's 8 TB/s).
var b200750WPeak = scalePeaks(b200Peak, ratedPowerScale(b200PowerLimitW, b100TDPW, b200TDPW, b100BF16TFLOPS, b200Peak[hardware.BF16]))

const (
	b200TDPW        = 1000.0 // HGX B200 maximum thermal design power per GPU (NVIDIA HGX B200 specifications)
	b200PowerLimitW = 750.0  // Meta's B200 hosts (pytorch/ao d8bb51f63, pytorch/helion PR #347; above)
	b100TDPW        = 700.0  // HGX B100 maximum thermal design power per GPU (NVIDIA Blackwell datasheet)
	b100BF16TFLOPS  = 1750.0 // HGX B100 dense BF16 (3.5 PFLOP/s with sparsity; NVIDIA Blackwell datasheet)
)

// ratedPowerScale is the fraction of a GPU's rates at highW that it sustains at a
// power limit limitW between two envelopes the vendor rates the same GPU at (rateLow
// at lowW, rateHigh at highW): the rating interpolated linearly in log power and log
// rate, (limitW/highW)^k with k = ln(rateHigh/rateLow) / ln(highW/lowW). Called only
// with the catalog's constants, limitW within [lowW, highW] (TestB200At750W).
func ratedPowerScale(limitW, lowW, highW, rateLow, rateHigh float64) float64 {
	k := math.Log(rateHigh/rateLow) / math.Log(highW/lowW)
	return math.Pow(limitW/highW, k)
}

// b200Peak: NVIDIA HGX B200 specifications (2025), per GPU, dense (the sparse
// figures halved).
var b200Peak = map[hardware.DType]float64{
	hardware.FP32: 75,
	hardware.TF32: 1100,
	hardware.BF16: 2250,
	hardware.FP16: 2250,
	hardware.FP8:  4500,
}

// b300Peak: NVIDIA HGX B300 specifications (nvidia.com/en-us/data-center/hgx,
// read 2026-11-27), per GPU, dense (the sparse figures of 8 GPUs: FP8 72, BF16 36,
// TF32 18 PFLOP/s, halved and divided by 8; FP32 600 TFLOP/s / 8).
var b300Peak = map[hardware.DType]float64{
	hardware.FP32: 75,
	hardware.TF32: 1125,
	hardware.BF16: 2250,
	hardware.FP16: 2250,
	hardware.FP8:  4500,
}

// gb200Peak: the GB200's dense tensor rates as measured against the B200's. The two
// are the same Blackwell GPU — NVIDIA rates the GB200's at 2.5 / 5 PFLOP/s dense
// BF16 / FP8 and the HGX B200's at 2.25 / 4.5, the clock a 1200 W envelope allows
// over a 1000 W one (NVIDIA Blackwell datasheet, above) — but under a sustained
// matmul the GB200 keeps less than that 1.11: the largest matmul rate found over a
// brute-force search of shapes (torch.matmul, the mean of 100 iterations after 50
// warm-up, stas00/ml-engineering compute/accelerator/README.md at b9e2972, "Maximum
// Achievable Matmul FLOPS comparison table") is 1822.0 TFLOP/s BF16 and 3615.6 FP8
// (float8_e4m3fn) on a GB200 (torch 2.10 dev, CUDA 13.0) against 1745.0 and 3432.5 on a
// B200 (torch 2.7.1, CUDA 12.8): 1.044 and 1.053, where the ratings give 1.111. The
// B300, rated as the B200, measured 1769.0 / 3353.3 in the same table on CUDA 13.0
// (GB200 over it 1.030 / 1.078), so the software moves the B200-class figure by
// −2…+1.4 %, less than the gap to the ratings. The catalog prices the B200 at its
// rating and the model's fitted Blackwell efficiency carries what a B200 keeps of
// it; the GB200's tensor rates are the B200's times the measured ratio (BF16 and
// FP16 at BF16's, TF32 — the same tensor cores and clock, not measured — at BF16's,
// FP8 at FP8's). FP32 (the CUDA cores) stays NVIDIA's rated 80 TFLOP/s.
var gb200Peak = map[hardware.DType]float64{
	hardware.FP32: 80,
	hardware.TF32: math.Round(b200Peak[hardware.TF32]*gb200MAMFBF16/b200MAMFBF16*10) / 10,
	hardware.BF16: math.Round(b200Peak[hardware.BF16]*gb200MAMFBF16/b200MAMFBF16*10) / 10,
	hardware.FP16: math.Round(b200Peak[hardware.FP16]*gb200MAMFBF16/b200MAMFBF16*10) / 10,
	hardware.FP8:  math.Round(b200Peak[hardware.FP8]*gb200MAMFFP8/b200MAMFFP8*10) / 10,
}

// Maximum achievable matmul TFLOP/s, dense (stas00/ml-engineering
// compute/accelerator/README.md at b9e2972; gb200Peak above).
const (
	b200MAMFBF16  = 1745.0 // NVIDIA B200 SXM, best shape 1792x16128x3072, torch 2.7.1+cu128
	gb200MAMFBF16 = 1822.0 // NVIDIA GB200, best shape 4096x9728x2048, torch 2.10.0.dev20250916+cu130
	b200MAMFFP8   = 3432.5 // NVIDIA B200 SXM, float8_e4m3fn, best shape 15360x4096x3072, torch 2.7.1+cu128
	gb200MAMFFP8  = 3615.6 // NVIDIA GB200, float8_e4m3fn, best shape 19456x5120x1536, torch 2.10.0.dev20250916+cu130
)

func scalePeaks(m map[hardware.DType]float64, f float64) map[hardware.DType]float64 {
	out := make(map[hardware.DType]float64, len(m))
	for d, v := range m {
		out[d] = math.Round(v*f*10) / 10
	}
	return out
}

var gpuTable = []gpuEntry{
	{
		gpu: hardware.GPU{
			Name: "A100-40GB", Arch: hardware.Ampere,
			PeakTFLOPS:          a100Peak,
			MemoryGB:            40 * gib,
			MemoryBandwidthGBps: 1555,
			NVLinkGBps:          300,
			SMs:                 108,
			Source:              "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 40GB SXM: 40 GB HBM2, 1,555 GB/s, NVLink 600 GB/s bidirectional; NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020)",
		},
		aliases: []string{"a100-40g", "a100-sxm4-40gb", "a100-sxm-40gb", "a100-40gb-sxm4"},
	},
	{
		gpu: hardware.GPU{
			Name: "A100-80GB", Arch: hardware.Ampere,
			PeakTFLOPS:          a100Peak,
			MemoryGB:            80 * gib,
			MemoryBandwidthGBps: 2039,
			NVLinkGBps:          300,
			SMs:                 108,
			Source:              "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB SXM: 80 GB HBM2e, 2,039 GB/s, NVLink 600 GB/s bidirectional; NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020)",
		},
		// Plain "a100" means the 80 GB part: the DGX A100 640GB (Selene) and most
		// published A100 runs use it; compute rates of both parts are identical.
		aliases: []string{"a100", "a100-80g", "a100-sxm4", "a100-sxm4-80gb", "a100-sxm-80gb", "a100-80gb-sxm4"},
	},
	{
		gpu: hardware.GPU{
			Name: "H100-SXM", Arch: hardware.Hopper,
			PeakTFLOPS:          gh100SXMPeak,
			MemoryGB:            80 * gib,
			MemoryBandwidthGBps: 3350,
			NVLinkGBps:          450,
			SMs:                 132,
			Source:              "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM: 80 GB HBM3, 3.35 TB/s, NVLink 900 GB/s bidirectional; dense rates from the NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022)",
		},
		aliases: []string{"h100", "h100-sxm5", "h100-80gb", "h100-sxm-80gb", "h100-sxm5-80gb", "h100-80gb-hbm3"},
	},
	{
		gpu: hardware.GPU{
			Name: "H100-SXM-HBM2e-500W", Arch: hardware.Hopper,
			PeakTFLOPS:          h100HBM2e500WPeak,
			MemoryGB:            96 * gib,
			MemoryBandwidthGBps: 2458,
			NVLinkGBps:          450,
			SMs:                 132,
			Source:              "H100 SXM with 96 GB HBM2e at a 500 W power limit: tensor rates of the 700 W H100 SXM × (500/700)^(1/3) (clock at a power limit, P ∝ f³), HBM six HBM2e stacks at 3.2 Gb/s per pin (6144-bit bus: 2,458 GB/s); NVLink as H100 SXM",
		},
		aliases: []string{"h100-hbm2e-500w", "h100-96gb-hbm2e"},
	},
	{
		gpu: hardware.GPU{
			Name: "H200", Arch: hardware.Hopper,
			PeakTFLOPS:          gh100SXMPeak,
			MemoryGB:            141 * gib,
			MemoryBandwidthGBps: 4800,
			NVLinkGBps:          450,
			SMs:                 132,
			Source:              "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM: 141 GB HBM3e, 4.8 TB/s, NVLink 900 GB/s bidirectional; compute as H100 SXM",
		},
		aliases: []string{"h200-sxm", "h200-141gb", "h200-sxm-141gb", "h200-sxm5"},
	},
	{
		gpu: hardware.GPU{
			Name: "H800", Arch: hardware.Hopper,
			PeakTFLOPS:          gh100SXMPeak,
			MemoryGB:            80 * gib,
			MemoryBandwidthGBps: 3350,
			NVLinkGBps:          200,
			SMs:                 132,
			Source:              "NVIDIA H800 Tensor Core GPU datasheet (2023), H800 SXM5: 80 GB HBM3, 3.35 TB/s, NVLink 400 GB/s bidirectional (8 links); tensor rates as H100 SXM",
		},
		aliases: []string{"h800-sxm", "h800-sxm5", "h800-80gb"},
	},
	{
		gpu: hardware.GPU{
			Name: "H20", Arch: hardware.Hopper,
			PeakTFLOPS: map[hardware.DType]float64{
				hardware.FP32: 44,
				hardware.TF32: 74,
				hardware.BF16: 148,
				hardware.FP16: 148,
				hardware.FP8:  296,
			},
			MemoryGB:            96 * gib,
			MemoryBandwidthGBps: 4000,
			NVLinkGBps:          450,
			SMs:                 78,
			Source:              "NVIDIA HGX H20 specifications (2024; no public NVIDIA datasheet, figures as published by NVIDIA partners): 96 GB HBM3, 4.0 TB/s, NVLink 900 GB/s bidirectional, FP8 296 / BF16 148 / TF32 74 / FP32 44 TFLOP/s dense",
		},
		aliases: []string{"h20-96gb"},
	},
	{
		gpu: hardware.GPU{
			Name: "B200", Arch: hardware.Blackwell,
			PeakTFLOPS:          b200Peak,
			MemoryGB:            180 * gib,
			MemoryBandwidthGBps: 7700,
			NVLinkGBps:          900,
			SMs:                 148,
			Source:              "NVIDIA HGX B200 specifications (2025), per GPU: FP8 9 / FP16 4.5 / TF32 2.2 PFLOP/s with sparsity, FP32 75 TFLOP/s, 180 GB HBM3e, 7.7 TB/s, NVLink 5 1.8 TB/s bidirectional",
		},
		aliases: []string{"b200-sxm", "b200-180gb"},
	},
	{
		gpu: hardware.GPU{
			Name: "B200-750W", Arch: hardware.Blackwell,
			PeakTFLOPS:          b200750WPeak,
			MemoryGB:            180 * gib,
			MemoryBandwidthGBps: 7700,
			NVLinkGBps:          900,
			SMs:                 148,
			Source:              "B200 at a 750 W power limit (Meta's B200 hosts: pytorch/ao d8bb51f63 'limited to 750W', pytorch/helion PR #347): tensor rates of the 1000 W B200 × (750/1000)^0.705 = 0.817, interpolating NVIDIA's ratings of the same GPU at 700 W (HGX B100, 1.75 PFLOP/s dense BF16) and 1000 W (HGX B200, 2.25; NVIDIA Blackwell datasheet); HBM3e, NVLink as B200",
		},
		aliases: []string{"b200-750w"},
	},
	{
		gpu: hardware.GPU{
			Name: "GB200", Arch: hardware.Blackwell,
			PeakTFLOPS:          gb200Peak,
			MemoryGB:            186 * gib,
			MemoryBandwidthGBps: 8000,
			NVLinkGBps:          900,
			SMs:                 148,
			Source:              "NVIDIA GB200 NVL72 specifications (2024–2025), per Blackwell GPU of the superchip: FP32 80 TFLOP/s, 186 GB HBM3e, 8 TB/s, NVLink 5 1.8 TB/s bidirectional; tensor rates the B200's × the GB200's measured matmul rate over the B200's (stas00/ml-engineering 'Maximum Achievable Matmul FLOPS': BF16 1822.0 / 1745.0, FP8 3615.6 / 3432.5 TFLOP/s), not the rated 2.5 / 5 PFLOP/s dense",
		},
		aliases: []string{"gb200-gpu"},
	},
	{
		// Blackwell Ultra in its HGX form (8 per baseboard, 1100 W): the dense FP8,
		// BF16 and TF32 rates are the B200's — Blackwell Ultra raises NVFP4 and the
		// attention exponentials, not the FP8/BF16 tensor rates (NVIDIA HGX
		// specifications, https://www.nvidia.com/en-us/data-center/hgx/, read
		// 2026-11-27: HGX B300 FP8/FP6 72, FP16/BF16 36, TF32 18 PFLOP/s with
		// sparsity and FP32 600 TFLOP/s per 8 GPUs, up to 2.1 TB of HBM3e per 8 GPUs,
		// NVLink 1.8 TB/s per GPU). 270 GB is the part the HGX B300 systems carry
		// (B300-SXM-270GB: MLPerf Training v5.1's Dell XE9780 and Lenovo SR680a V4
		// system descriptions, 275 040 MiB visible); 8 TB/s is Blackwell Ultra's HBM3e
		// (NVIDIA, "Inside NVIDIA Blackwell Ultra: The Chip Powering the AI Factory
		// Era", https://developer.nvidia.com/blog/inside-nvidia-blackwell-ultra-the-chip-powering-the-ai-factory-era/,
		// 2025-08-22: 8 stacks, 8 TB/s per GPU). SMs: the full die has 160 (same
		// article); the shipping part enables 148, as the B200 does (the device's
		// multiProcessorCount as published for B300 SXM6).
		gpu: hardware.GPU{
			Name: "B300", Arch: hardware.Blackwell,
			PeakTFLOPS:          b300Peak,
			MemoryGB:            270 * gib,
			MemoryBandwidthGBps: 8000,
			NVLinkGBps:          900,
			SMs:                 148,
			Source:              "NVIDIA HGX B300 specifications (nvidia.com/en-us/data-center/hgx, read 2026-11-27), per GPU: FP8 9 / FP16 4.5 / TF32 2.25 PFLOP/s with sparsity, FP32 75 TFLOP/s, NVLink 5 1.8 TB/s bidirectional, 1100 W; 270 GB HBM3e (B300-SXM-270GB, MLPerf Training v5.1 system descriptions); 8 TB/s (NVIDIA technical blog 'Inside NVIDIA Blackwell Ultra', 2025-08-22)",
		},
		aliases: []string{"b300-sxm", "b300-270gb", "b300-sxm-270gb"},
	},
	{
		// Blackwell Ultra in the GB300 superchip (1400 W). NVIDIA GB300 NVL72
		// specifications (https://www.nvidia.com/en-us/data-center/gb300-nvl72/, read
		// 2026-11-27), per 72 GPUs: FP8/FP6 720, FP16/BF16 360, TF32 180 PFLOP/s with
		// sparsity — 5, 2.5 and 1.25 PFLOP/s dense per GPU, the GB200's rates — HBM3e
		// up to 20 TB at 576 TB/s (288 GB and 8 TB/s per GPU, as "Inside NVIDIA
		// Blackwell Ultra", 2025-08-22, states per GPU), NVLink 130 TB/s (1.8 TB/s per
		// GPU). FP32: the rack's 6 PFLOP/s is the GB200 NVL72's 5,760 TFLOP/s rounded
		// (80 per GPU, the same SMs at the same clock). SMs as the B300's above.
		gpu: hardware.GPU{
			Name: "GB300", Arch: hardware.Blackwell,
			PeakTFLOPS: map[hardware.DType]float64{
				hardware.FP32: 80,
				hardware.TF32: 1250,
				hardware.BF16: 2500,
				hardware.FP16: 2500,
				hardware.FP8:  5000,
			},
			MemoryGB:            288 * gib,
			MemoryBandwidthGBps: 8000,
			NVLinkGBps:          900,
			SMs:                 148,
			Source:              "NVIDIA GB300 NVL72 specifications (nvidia.com/en-us/data-center/gb300-nvl72, read 2026-11-27), per Blackwell Ultra GPU of the superchip: FP8 10 / FP16 5 / TF32 2.5 PFLOP/s with sparsity, 288 GB HBM3e, 8 TB/s, NVLink 5 1.8 TB/s bidirectional, 1400 W (NVIDIA technical blog 'Inside NVIDIA Blackwell Ultra', 2025-08-22)",
		},
		aliases: []string{"gb300-gpu"},
	},
	{
		gpu: hardware.GPU{
			Name: "MI300X", Arch: hardware.CDNA3,
			PeakTFLOPS: map[hardware.DType]float64{
				hardware.FP32: 163.4,
				hardware.TF32: 653.7,
				hardware.BF16: 1307.4,
				hardware.FP16: 1307.4,
				hardware.FP8:  2614.9,
			},
			MemoryGB:            192 * gib,
			MemoryBandwidthGBps: 5300,
			NVLinkGBps:          448,
			SMs:                 304,
			Source:              "AMD Instinct MI300X data sheet (2023): 192 GB HBM3, 5.3 TB/s, 7 Infinity Fabric links × 128 GB/s bidirectional (64 GB/s per direction to each of 7 peers), dense matrix rates",
		},
		aliases: []string{"instinct-mi300x", "amd-mi300x", "mi300x-192gb"},
	},
	{
		gpu: hardware.GPU{
			Name: "MI355X", Arch: hardware.CDNA4,
			// CDNA 4 has no TF32 (XF32) matrix instructions, so tf32 is absent.
			PeakTFLOPS: map[hardware.DType]float64{
				hardware.FP32: 157.3,
				hardware.BF16: 2516.6,
				hardware.FP16: 2516.6,
				hardware.FP8:  5033.2,
			},
			MemoryGB:            288 * gib,
			MemoryBandwidthGBps: 8000,
			NVLinkGBps:          537.6,
			SMs:                 256,
			Source:              "AMD Instinct MI355X data sheet (2025): 288 GB HBM3E, 8 TB/s, 7 Infinity Fabric links × 153.6 GB/s bidirectional (76.8 GB/s per direction to each of 7 peers), dense matrix rates (256 CUs at 2.4 GHz)",
		},
		aliases: []string{"instinct-mi355x", "amd-mi355x", "mi355x-288gb"},
	},
}
