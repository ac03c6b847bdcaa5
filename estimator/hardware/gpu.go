// Package hardware describes accelerators: their peak arithmetic rates, memory and
// the NVLink-class bandwidth each one brings to its node's fabric.
package hardware

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stepcost/stepcost/estimator/invalid"
)

// Arch is a GPU generation. Collective-library behaviour (protocol caps, NVLS support)
// and compute efficiency are calibrated per generation.
type Arch string

const (
	Ampere    Arch = "ampere"
	Hopper    Arch = "hopper"
	Blackwell Arch = "blackwell"
	CDNA3     Arch = "cdna3"
	CDNA4     Arch = "cdna4"
)

// Known reports whether a is a generation the models are calibrated for.
func (a Arch) Known() bool {
	switch a {
	case Ampere, Hopper, Blackwell, CDNA3, CDNA4:
		return true
	}
	return false
}

// DType is a numeric format of matrix operands.
type DType string

const (
	FP32 DType = "fp32"
	TF32 DType = "tf32"
	BF16 DType = "bf16"
	FP16 DType = "fp16"
	FP8  DType = "fp8"
)

// GPU is one accelerator model. Rates are dense (no structured sparsity).
type GPU struct {
	Name string `json:"name"`
	Arch Arch   `json:"arch"`
	// PeakTFLOPS is the dense peak in 10^12 FLOP/s per operand format.
	PeakTFLOPS map[DType]float64 `json:"peak_tflops"`
	// MemoryGB is HBM capacity in 10^9 bytes.
	MemoryGB float64 `json:"memory_gb"`
	// MemoryBandwidthGBps is HBM bandwidth in 10^9 B/s.
	MemoryBandwidthGBps float64 `json:"memory_bandwidth_gbps"`
	// NVLinkGBps is the GPU's scale-up bandwidth per direction in 10^9 B/s
	// (NVLink or Infinity Fabric), summed over all its links.
	NVLinkGBps float64 `json:"nvlink_gbps"`
	// SMs is the number of streaming multiprocessors (compute units on AMD): matrix
	// multiplications run in waves of one output tile per SM. Zero: unknown, no wave
	// quantisation is modelled.
	SMs int `json:"sms,omitempty"`
	// Source says where the numbers come from.
	Source string `json:"source,omitempty"`
}

// BlackwellUltra reports whether g is a Blackwell Ultra part (compute capability
// 10.3, sm_103): the catalog's B300 and GB300, by name, as NVIDIA names the two
// products of the chip ("Inside NVIDIA Blackwell Ultra: The Chip Powering the AI
// Factory Era", NVIDIA technical blog, 2025-08-22). Its tensor rates are the
// B200's; its special-function units run the softmax exponentials at twice the
// rate (same article), which its fused attention kernels show.
func (g GPU) BlackwellUltra() bool {
	return g.Arch == Blackwell && (g.Name == "B300" || g.Name == "GB300")
}

// Peak returns the dense peak FLOP/s (not TFLOP/s) for d, or an error if the GPU
// has no rate for that format.
func (g GPU) Peak(d DType) (float64, error) {
	v, ok := g.PeakTFLOPS[d]
	if !ok || v <= 0 {
		return 0, fmt.Errorf("gpu %q: no peak rate for dtype %q", g.Name, d)
	}
	return v * 1e12, nil
}

// MinRate and MaxRate bound every rate and size of a GPU (TFLOP/s, GB, GB/s): a
// thousand times below and above anything built, so that no time or fraction
// computed from them overflows or vanishes.
const (
	MinRate = 1e-3
	MaxRate = 1e6
)

// Validate checks that every number is present, finite, positive and within
// MinRate and MaxRate. Field names in
// errors are the JSON names, prefixed by path.
func (g GPU) Validate(path string) error {
	c := invalid.Collector{Prefix: path}
	if g.Name == "" {
		c.Add("name", "must not be empty")
	}
	if !g.Arch.Known() {
		c.Add("arch", "must be one of ampere, hopper, blackwell, cdna3, cdna4 (got %q)", g.Arch)
	}
	if len(g.PeakTFLOPS) == 0 {
		c.Add("peak_tflops", "must give at least one dtype")
	}
	for _, d := range sortedDTypes(g.PeakTFLOPS) {
		switch d {
		case FP32, TF32, BF16, FP16, FP8:
			c.PositiveWithin("peak_tflops."+string(d), g.PeakTFLOPS[d], MinRate, MaxRate)
		default:
			c.Add("peak_tflops."+string(d), "unknown dtype (want fp32, tf32, bf16, fp16, fp8)")
		}
	}
	c.PositiveWithin("memory_gb", g.MemoryGB, MinRate, MaxRate)
	c.PositiveWithin("memory_bandwidth_gbps", g.MemoryBandwidthGBps, MinRate, MaxRate)
	c.PositiveWithin("nvlink_gbps", g.NVLinkGBps, MinRate, MaxRate)
	if g.SMs < 0 || g.SMs > 4096 {
		c.Add("sms", "must be between 0 (unknown) and 4096 (got %d)", g.SMs)
	}
	return c.Err()
}

// sortedDTypes keeps error order deterministic.
func sortedDTypes(m map[DType]float64) []DType {
	out := make([]DType, 0, len(m))
	for d := range m {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// SameTypeKeys finds two keys of a GPU's peak_tflops that name one type in
// different case ("BF16", "bf16"), in sorted order; ok is false when there are
// none. Requests and cluster files read the keys in any case, so such a pair
// would leave the map's iteration order to choose the rate.
func SameTypeKeys(keys []string) (first, second string, ok bool) {
	keys = slices.Sorted(slices.Values(keys))
	seen := make(map[string]string, len(keys))
	for _, k := range keys {
		if other, dup := seen[strings.ToLower(k)]; dup {
			return other, k, true
		}
		seen[strings.ToLower(k)] = k
	}
	return "", "", false
}
