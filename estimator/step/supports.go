package step

import (
	"fmt"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
)

// Supports says whether the estimator is calibrated for training in precision p on
// GPU g. The error wraps ErrUnsupported and holds an *invalid.Error naming what to
// change: training.precision (fp8 on a GPU without a calibrated fp8 rate),
// cluster.gpu.peak_tflops (no bf16 or fp16 rate) or cluster.gpu.arch (a generation
// without calibrated compute efficiencies).
func (e *Estimator) Supports(g hardware.GPU, p Precision) error {
	if _, ok := e.k.rates(g, p); ok {
		return nil
	}
	var fe *invalid.Error
	_, bf := g.Peak(hardware.BF16)
	_, fp := g.Peak(hardware.FP16)
	switch {
	case bf != nil && fp != nil:
		fe = invalid.Field("cluster.gpu.peak_tflops", "must give a bf16 or fp16 rate: attention and the non-matmul work run in 16 bits (GPU %q has %v)", g.Name, dtypes(g))
	case e.k.GEMMEfficiency[g.Arch] == 0 || e.k.AttentionEfficiency[g.Arch] == 0:
		fe = invalid.Field("cluster.gpu.arch", "has no calibrated compute efficiency (got %q)", g.Arch)
	default:
		fe = invalid.Field("training.precision", "%s needs a GPU with an fp8 rate and a calibrated fp8 efficiency; %s (%s) has none (use %s or %s)", FP8, g.Name, g.Arch, BF16, FP16)
	}
	return fmt.Errorf("%w: %w", ErrUnsupported, fe)
}

func dtypes(g hardware.GPU) []hardware.DType {
	var out []hardware.DType
	for _, d := range []hardware.DType{hardware.FP32, hardware.TF32, hardware.BF16, hardware.FP16, hardware.FP8} {
		if _, err := g.Peak(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// messageFits refuses a communication larger than the collective model prices
// (collective.MaxBytes), naming what makes it that large: the micro-batch's
// activations, or the model's weights and gradients per GPU.
func messageFits(c Comm, op collective.Op, bytes float64) error {
	if bytes <= collective.MaxBytes {
		return nil
	}
	switch c {
	case CommTP, CommCP, CommEP, CommPP:
		return invalid.Field("layout.micro_batch", "makes the %s %s of one micro-batch %.3g bytes, more than the 2^50 bytes one collective may carry: use a smaller micro_batch or seq_len, or more tp or cp", c, op, bytes)
	}
	return invalid.Field("layout", "leaves the %s %s of %.3g bytes per GPU, more than the 2^50 bytes one collective may carry: split the model over more tp or pp", c, op, bytes)
}

// SupportsFP8Recipe refuses an fp8 recipe GPU g's tensor cores cannot run:
// MXFP8's 32-element block scales are applied by Blackwell's block-scaled MMA
// (tcgen05); Hopper has no such GEMM. It is for fp8 training only: other
// precisions have no recipe.
func SupportsFP8Recipe(g hardware.GPU, recipe FP8Recipe) error {
	if recipe == FP8MXFP8 && g.Arch != hardware.Blackwell {
		return invalid.Field("training.fp8_recipe", "mxfp8 needs Blackwell's block-scaled tensor cores (the cluster's GPU is %s, %s)", g.Name, g.Arch)
	}
	return nil
}
