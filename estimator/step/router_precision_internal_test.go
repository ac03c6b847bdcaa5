package step

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/hardware"
)

// The MoE router's gating GEMM runs in 16 bits under fp8 training (routerRates:
// Megatron-Core's TopKRouter.gating is a torch linear outside Transformer
// Engine's fp8 modules; torchtitan's MoE configs keep router.gate out of torchao's
// conversion; DeepSeek-V3 keeps its gating modules in BF16 or FP32). Llama 4
// Maverick's router on one H100 rank, 2 048 tokens × 128 experts × hidden 5 120
// (NeMo's 512-GPU layout): its forward and two backward GEMMs take exactly what a
// bf16 training's router takes, with 16-bit operands at the H100's dense bf16
// peak, 989.4 TFLOP/s (NVIDIA's H100 SXM datasheet, the catalog's figure), not
// its fp8 peak, and slower than as fp8 GEMMs.
func TestRouterGEMMIn16Bits(t *testing.T) {
	gpu, err := catalog.GPU("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	peak16, err := gpu.Peak(hardware.BF16)
	if err != nil {
		t.Fatal(err)
	}
	k := DefaultConstants()
	r8, ok8 := k.rates(gpu, FP8)
	r16, ok16 := k.rates(gpu, BF16)
	if !ok8 || !ok16 {
		t.Fatalf("H100 rates: fp8 %v, bf16 %v", ok8, ok16)
	}
	g := gemm{2048, 128, 5120, 1, false}
	router := func(r *gpuRates) float64 {
		rr := routerRates(r)
		return k.gemmTime(g, &rr) + k.gemmTime(gemm{g.m, g.k, g.n, 1, false}, &rr) + k.gemmTime(gemm{g.k, g.n, g.m, 1, false}, &rr)
	}
	fp8, bf16 := router(&r8), router(&r16)
	asFP8 := k.gemmTime(g, &r8) + k.gemmTime(gemm{g.m, g.k, g.n, 1, false}, &r8) + k.gemmTime(gemm{g.k, g.n, g.m, 1, false}, &r8)
	t.Logf("router fwd+bwd %.2f µs under fp8 training, %.2f µs under bf16; as fp8 GEMMs %.2f µs", 1e6*fp8, 1e6*bf16, 1e6*asFP8)
	if !(fp8 > asFP8) {
		t.Errorf("fp8 training: the router's GEMMs take %.2f µs, no slower than as fp8 GEMMs (%.2f µs)", 1e6*fp8, 1e6*asFP8)
	}
	if fp8 != bf16 {
		t.Errorf("the router's GEMMs take %.3f µs under fp8 training and %.3f µs under bf16: want the same 16-bit GEMMs", 1e6*fp8, 1e6*bf16)
	}
	if rr := routerRates(&r8); rr.fp8 || rr.elemSize != 2 || rr.peak != peak16 {
		t.Errorf("router rates under fp8: fp8 %v, %g B an element, peak %.4g; want 16-bit operands at %.4g", rr.fp8, rr.elemSize, rr.peak, peak16)
	}
}
