package step

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
)

// A grouped GEMM of many small expert problems (Qwen3-30B-A3B: 16 local experts of
// width 768 on EP 8, a few hundred tokens each) is faster than the same problems run
// one after another — one launch, and their tiles share the waves — and slower than
// one GEMM of all their tokens, whose tiles are full.
func TestGroupedExpertGEMMs(t *testing.T) {
	k := DefaultConstants()
	gpu, err := catalog.GPU("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	r, ok := k.rates(gpu, BF16)
	if !ok {
		t.Fatal("no H100 rates")
	}
	for _, tokens := range []float64{96, 512, 2048} {
		seq := k.gemmTime(gemm{tokens, 2 * 768, 2048, 16, false}, &r)
		grp := k.gemmTime(gemm{tokens, 2 * 768, 2048, 16, true}, &r)
		one := k.gemmTime(gemm{16 * tokens, 2 * 768, 2048, 1, false}, &r)
		t.Logf("%4.0f tokens × 16 experts: sequential %.1f µs, grouped %.1f µs, one GEMM of all tokens %.1f µs", tokens, seq*1e6, grp*1e6, one*1e6)
		if !(grp < seq && grp >= one) {
			t.Errorf("%v tokens: grouped %.3g s not between one GEMM %.3g s and sequential %.3g s", tokens, grp, one, seq)
		}
	}
	// One problem: grouped or not, the same GEMM.
	if a, b := k.gemmTime(gemm{512, 1536, 2048, 1, true}, &r), k.gemmTime(gemm{512, 1536, 2048, 1, false}, &r); a != b {
		t.Errorf("a group of one: %v s, plain %v s", a, b)
	}
}
