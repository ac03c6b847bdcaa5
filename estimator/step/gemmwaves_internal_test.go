package step

import "testing"

// A GEMM whose output tiles all fit in one wave takes as long with a few more
// rows: the same wave of tiles runs, and the kernel's start-up
// (Constants.GEMMHalfFLOPs) is paid once, not once per idle SM of the wave. Qwen3
// 30B-A3B's expert GEMMs at TP 8 (gate and up projections, 2 × 768 / 8 columns,
// hidden 2048) with 128 and 144 tokens an expert (top-8 and top-9 of 128 experts
// over 2048 tokens) on H100, looped over 64 local experts and grouped; and
// generally a GEMM never gets faster as it grows in any dimension.
func TestGEMMNotFasterWhenLarger(t *testing.T) {
	k := DefaultConstants()
	for _, gpu := range []string{"h100-sxm5", "b200"} {
		for _, p := range []Precision{BF16, FP8} {
			r := catalogRates(t, &k, gpu, p)
			for _, grouped := range []bool{false, true} {
				small := gemm{m: 128, n: 192, k: 2048, count: 64, grouped: grouped}
				large := small
				large.m = 144
				if ts, tl := k.gemmTime(small, &r), k.gemmTime(large, &r); tl < ts {
					t.Errorf("%s %s grouped %v: %g rows %.3f µs, %g rows %.3f µs", gpu, p, grouped, small.m, ts*1e6, large.m, tl*1e6)
				}
				for _, base := range []gemm{{m: 100, n: 200, k: 512, count: 1}, {m: 1000, n: 3000, k: 4096, count: 1},
					{m: 4096, n: 1536, k: 2048, count: 4, grouped: grouped}, {m: 256, n: 4096, k: 7168, count: 8, grouped: grouped}} {
					for _, grow := range []func(*gemm){func(g *gemm) { g.m += 16 }, func(g *gemm) { g.n += 16 }, func(g *gemm) { g.k += 16 }} {
						g := base
						grow(&g)
						if tb, tg := k.gemmTime(base, &r), k.gemmTime(g, &r); tg < tb {
							t.Errorf("%s %s: %v %.3f µs, %v %.3f µs", gpu, p, base, tb*1e6, g, tg*1e6)
						}
					}
				}
			}
		}
	}
}
