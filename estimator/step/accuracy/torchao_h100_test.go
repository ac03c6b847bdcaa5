package accuracy_test

import (
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/step/accuracy"
)

// torchaoH100 is the same benchmark as torchao's B200 table on the same team's H100
// hosts, five months earlier: torchao/float8/README.md "Training benchmarks" as added
// in pytorch/ao 8c81863ba (PR #1793, 2025-03-12): Llama3-8b, single node of 8 H100,
// batch 1, sequence 8192, 100 steps, torch.compile, FSDP2, per-op SAC (torch
// 2.7.0a0+gitb98af95, torchao 0.10.0+git890e0ac8, torchtitan 0.0.2), median tokens/s
// per GPU. The hosts' H100 is Meta's 96 GB HBM2e part (torchao's roofline_utils.py:
// "2.4 TB per second, custom to Meta's H100 variant"), run at 500 W as torchtitan's
// published H100 runs are.
var torchaoH100 = map[string]float64{ // the B200 row's recipe → tokens/s per GPU on H100
	"bf16":              6150,
	"float8_tensorwise": 7689.5,
	"float8_rowwise":    6768,
}

// The model prices torchao's benchmark on its H100 hosts within 12 %, where the B200
// table of the same benchmark comes out 35–39 % fast: what the model misses on B200
// is not in how it prices the stack (docs/step-model.md, "torchao's B200 table").
// The measured B200 / H100 ratio, 1.28–1.35×, is logged beside the estimated one.
//
// What float8 tensorwise saves over bf16 is the time of the work the recipe changes
// (the matmuls, less their casts), the rest of the step being the same in both rows.
// On the H100 hosts the model prices that saving within 15 % of the measured one;
// on B200 the measured saving is logged beside the priced one (1.39× it: the
// matmuls there ran slower than priced, where an added per-step cost would leave
// the saving as priced).
func TestTorchaoH100Control(t *testing.T) {
	runs, err := accuracy.MoERuns()
	if err != nil {
		t.Fatal(err)
	}
	e := step.New()
	seen := 0
	// Measured and estimated step times by recipe: H100, then B200.
	mh, ph, mb, pb := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, r := range runs {
		recipe, ok := strings.CutPrefix(r.ID, "torchao_b200_llama3_8b_8gpu_")
		tps, ok2 := torchaoH100[recipe]
		if !ok || !ok2 {
			continue
		}
		seen++
		b200, _, _, err := r.StepFromMeasure()
		if err != nil {
			t.Fatal(err)
		}
		h := r
		h.GPU, h.GPUMemGB, h.System = "H100 SXM HBM2e 96GB (500 W power limit)", 96, "dgx-h100"
		h.FrameworkVer = "torchtitan 0.0.2, torch 2.7.0a0+gitb98af95, torchao 0.10.0+git890e0ac8"
		qh, _, err := accuracy.MoECase(h)
		if err != nil {
			t.Fatal(err)
		}
		qb, _, err := accuracy.MoECase(r)
		if err != nil {
			t.Fatal(err)
		}
		eh, err := e.Estimate(qh)
		if err != nil {
			t.Fatal(err)
		}
		eb, err := e.Estimate(qb)
		if err != nil {
			t.Fatal(err)
		}
		measured := float64(r.SeqLen) / tps
		rel := eh.StepTime/measured - 1
		mh[recipe], ph[recipe], mb[recipe], pb[recipe] = measured, eh.StepTime, b200, eb.StepTime
		t.Logf("%-17s H100 at 500 W: measured %.3f s, estimated %.3f s (%+.1f%%); B200 / H100 measured %.2f×, estimated %.2f×",
			recipe, measured, eh.StepTime, 100*rel, measured/b200, eh.StepTime/eb.StepTime)
		if rel < -0.12 || rel > 0.12 {
			t.Errorf("%s on H100: %+.1f%%, want within 12 %%", recipe, 100*rel)
		}
	}
	if seen != len(torchaoH100) {
		t.Errorf("%d of the %d recipes found among the torchao rows", seen, len(torchaoH100))
		return
	}
	const bf16, tw = "bf16", "float8_tensorwise"
	savedH, pricedH := mh[bf16]-mh[tw], ph[bf16]-ph[tw]
	savedB, pricedB := mb[bf16]-mb[tw], pb[bf16]-pb[tw]
	t.Logf("float8 tensorwise over bf16: H100 at 500 W saves %.3f s measured, %.3f s priced (measured %.2f× the price); B200 at 750 W saves %.3f s measured, %.3f s priced (%.2f×)",
		savedH, pricedH, savedH/pricedH, savedB, pricedB, savedB/pricedB)
	if r := pricedH/savedH - 1; r < -0.15 || r > 0.15 {
		t.Errorf("float8 tensorwise's saving on H100: priced %.3f s against %.3f s measured (%+.1f%%), want within 15 %%", pricedH, savedH, 100*r)
	}
}
