package accuracy_test

import (
	"math"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/step/accuracy"
)

// rowwiseGain is torchao float8 rowwise's measured speed-up over bf16 in torchtitan
// on the same layout, by tensor-parallel degree (tokens/s per GPU, rowwise over
// bf16, every linear converted, torch.compile):
//   - Llama 3 8B, FSDP 8 (TP 1), 8 H100, batch 1 × 8192, per-op SAC: 6768 / 6150
//     (torchao/float8/README.md "Training benchmarks", pytorch/ao 8c81863ba, PR
//     #1793, 2025-03-12; torchtitan 0.0.2, torch 2.7.0a0);
//   - Llama 3 8B, FSDP 2 × TP 2, 4 H100, per-op SAC: 5189 / 5378 (torchtitan#1207,
//     2025-05-20, torch 2.8.0a0+gite21ad6e, torchao 0.11.0; batch and sequence
//     the llama3_8b.toml defaults, 1 × 8192);
//   - Llama 3 8B, FSDP 8 × TP 8, 64 H100, and Llama 3 70B, FSDP 32 × TP 8, 256 H100,
//     vanilla TP, full AC: 3708 / 4378 and 599.6 / 597.3 (torchtitan
//     benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md; the rowwise rows are in
//     the data, the bf16 ones beside them in the same tables).
//
// The H100s are Meta's 96 GB HBM2e part at 500 W (the torchao README's and the
// benchmark's hosts; #1207 names none).
var rowwiseGain = []struct {
	row, what  string
	tp, gpus   int // tp and gpus 0: the row's own layout
	bf16, fp8r float64
}{
	{"torchao_b200_llama3_8b_8gpu_float8_rowwise", "8B, TP 1 (torchao README)", 0, 0, 6150, 6768},
	{"torchao_b200_llama3_8b_8gpu_float8_rowwise", "8B, TP 2 × FSDP 2 (torchtitan#1207)", 2, 4, 5378, 5189},
	{"torchtitan_asynctp_h100_llama38b_64gpu_rowwise_vanillatp", "8B, TP 8 × FSDP 8", 0, 0, 4378, 3708},
	{"torchtitan_asynctp_h100_llama370b_256gpu_rowwise_vanillatp", "70B, TP 8 × FSDP 32", 0, 0, 597.3, 599.6},
}

// Rowwise fp8 gains 10 % over bf16 without TP and nothing at TP 8, where every GPU
// of the TP group casts the whole gathered input of each of its projections
// (framework.Profile.FP8CastPerProjection). The model prices rowwise over bf16 on
// the same layout 6–7 % below the measured gain at TP 1 and at TP 8 alike (0.6 % at
// TP 2), so the drop from TP 1 to TP 8 is the measured one within 2 %: 8B measured
// 1.100 → 0.847×, priced 1.019 → 0.789×; the 70B at TP 8 measured 1.004×, priced
// 0.945×. Before the casts were priced per projection the TP 8 gains were priced
// above bf16's (the rowwise rows 9–20 % fast).
func TestRowwiseGainByTP(t *testing.T) {
	runs, err := accuracy.MoERuns()
	if err != nil {
		t.Fatal(err)
	}
	byID := moeRunsByID(runs)
	e := step.New()
	gain := map[string][2]float64{} // what → priced, measured
	for _, g := range rowwiseGain {
		r, ok := byID[g.row]
		if !ok {
			t.Fatalf("no row %s", g.row)
		}
		r.GPU, r.GPUMemGB, r.System = "H100 SXM HBM2e 96GB (500 W power limit)", 96, "dgx-h100"
		if g.tp > 0 {
			r.TP, r.GPUs = g.tp, g.gpus
			r.DP = g.gpus / g.tp
			r.GlobalBatch = r.DP * *r.MicroBatch
			sp := true
			r.SP = &sp
		}
		price := func(precision string) float64 {
			q := r
			q.Precision = precision
			if precision == "bf16" {
				q.FP8Recipe = nil
			}
			req, _, err := accuracy.MoECase(q)
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Estimate(req)
			if err != nil {
				t.Fatalf("%s (%s): %v", g.what, precision, err)
			}
			return res.StepTime
		}
		priced, measured := price("bf16")/price(r.Precision), g.fp8r/g.bf16
		t.Logf("%-36s rowwise over bf16: measured %.3f×, priced %.3f× (%+.1f%%)", g.what, measured, priced, 100*(priced/measured-1))
		if math.Abs(priced/measured-1) > 0.08 {
			t.Errorf("%s: rowwise over bf16 priced %.3f×, measured %.3f×, want within 8 %%", g.what, priced, measured)
		}
		gain[g.what] = [2]float64{priced, measured}
	}
	tp1 := gain[rowwiseGain[0].what]
	for _, g := range rowwiseGain[2:] {
		x := gain[g.what]
		priced, measured := x[0]/tp1[0], x[1]/tp1[1]
		t.Logf("%-36s over 8B at TP 1: measured %.3f, priced %.3f", g.what, measured, priced)
		if math.Abs(priced/measured-1) > 0.03 {
			t.Errorf("%s: rowwise's gain over its gain at TP 1 priced %.3f, measured %.3f, want within 3 %%", g.what, priced, measured)
		}
	}
}
