package step

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/model"
)

// MoE parallel folding under fp8: a routed expert's input is gathered over the
// expert-TP group, not attention's TP group (Megatron-Core's token dispatchers
// all-gather the tokens a rank receives over the expert-TP group of size etp). With
// TP 4 and expert TP 1 a rank holds a quarter of the routed copies that expert TP 4
// gathers — each h wide, read by a cast forward, its output gradient cast backward —
// while its FFN-wide casts (width/etp over etp/tp of the copies) stay the same. So
// going from expert TP 4 to 1 takes 3/4 of tokens · top-k · h elements off each
// direction's casts, at fp8CastBytes per element over the HBM: Qwen3-235B-A22B's
// top-8 of 4096-wide tokens, 4096 tokens per micro-batch on an H100.
func TestFP8CastsRoutedCopiesFollowExpertTP(t *testing.T) {
	a, err := model.Lookup("qwen3-235b-a22b")
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := catalog.GPU("H100")
	if err != nil {
		t.Fatal(err)
	}
	k := DefaultConstants()
	r, ok := k.rates(gpu, FP8)
	if !ok {
		t.Fatal("no H100 fp8 rates")
	}
	e := New()
	const tokens = 4096.0
	casts := func(etp int) (fwd, bwd float64) {
		req := Request{Model: a, Training: Training{SeqLen: 4096, Precision: FP8, FP8Recipe: FP8Delayed},
			Layout: Layout{TP: 4, PP: 1, DP: 8, EP: 8, ETP: etp, SP: true, MicroBatch: 1}}
		var lt layerTimes
		return e.fp8Casts(req, &r, &lt, 0, 0, tokens, true)
	}
	f4, b4 := casts(4)
	f1, b1 := casts(1)
	want := fp8CastBytes * tokens * float64(a.MoE.TopK) * float64(a.Hidden) * (1 - 1.0/4) / r.hbm
	for _, c := range []struct {
		dir        string
		etp4, etp1 float64
	}{{"forward", f4, f1}, {"backward", b4, b1}} {
		got := c.etp4 - c.etp1
		t.Logf("%s casts: expert TP 4 %.3f ms, expert TP 1 %.3f ms", c.dir, 1e3*c.etp4, 1e3*c.etp1)
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s casts: expert TP 4 − expert TP 1 = %.4f ms, want %.4f ms (3/4 of the routed copies' h-wide rows)", c.dir, 1e3*got, 1e3*want)
		}
	}
	// Expert TP 1 with TP 1: every copy on its rank, the same count as expert TP = TP = 1.
	req := Request{Model: a, Training: Training{SeqLen: 4096, Precision: FP8, FP8Recipe: FP8Delayed},
		Layout: Layout{TP: 1, PP: 1, DP: 32, EP: 8, ETP: 1, MicroBatch: 1}}
	var lt layerTimes
	g1, _ := e.fp8Casts(req, &r, &lt, 0, 0, tokens, true)
	req.Layout.ETP = 0
	g0, _ := e.fp8Casts(req, &r, &lt, 0, 0, tokens, true)
	if g1 != g0 {
		t.Errorf("TP 1: expert TP 1 casts %.4f ms, unset %.4f ms, want equal", 1e3*g1, 1e3*g0)
	}
}
