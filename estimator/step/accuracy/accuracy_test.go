package accuracy_test

import (
	"math"
	"os"
	"slices"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/step/accuracy"
)

func results(t *testing.T) []accuracy.Result {
	t.Helper()
	runs, err := accuracy.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 127 {
		t.Fatalf("embedded data has %d runs, want the 127 published ones", len(runs))
	}
	return accuracy.Evaluate(step.New(), accuracy.Cases(runs))
}

func TestStepTimeAccuracy(t *testing.T) {
	rs := results(t)
	for _, r := range rs {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Run.ID, r.Err)
		}
	}
	all := accuracy.Summarise(rs)
	t.Logf("all %d runs: mean |err| %.1f%%, median %.1f%%, max %.1f%% (%s), bias %+.1f%%",
		all.N, 100*all.MeanAbs, 100*all.MedianAbs, 100*all.Max, all.Worst, 100*all.Bias)
	if all.N != 127 {
		t.Errorf("%d runs estimated, want 127", all.N)
	}
	if !(all.MeanAbs <= 0.10) {
		t.Errorf("mean |error| %.1f%% > 10%%", 100*all.MeanAbs)
	}
	// The worst run is torchtitan's Llama 3.1 8B at 64K tokens with CP 2 (+28.1 %,
	// rounded up to the next half point; +27.7 % before FSDP2's copies on the
	// compute stream were priced, framework.Profile.FSDP2Copies, +27.2 % before its
	// Float8 linears' casts were priced per projection,
	// framework.Profile.FP8CastPerProjection): its neighbours at CP 4 and 8 are
	// within 5 %, see docs/step-model.md ("Known gaps").
	// With NCCL's own choice of algorithm and protocol and the collective constants
	// refitted without the start-up ramp (docs/calibration.md), the worst run is
	// ZeRO-3 GPT 175B on 1536 A100 (narayanan21_t2_zero3_175b_1536gpu): +24.8 →
	// +33.0 %, its parameter all-gathers being rings of 1536 ranks, each step paying
	// Simple's refitted step cost (6.32 µs, 1.58 before); the 530B ZeRO-3 runs moved
	// the other way (−14.7 → −11.5 %, −12.5 → −7.2 %) and the mean is unchanged.
	// DeepSpeed 2021's on-demand gathers then priced with the copies around each
	// collective (torch.zeros of the gather buffer, ProcessGroupNCCL's flatten and
	// copy-out: docs/step-model.md, "DeepSpeed ZeRO-3 (2021)") move every ZeRO-3 row
	// slower: the 530B ones toward their measurements, the 175B ones away (1536
	// GPUs +33.0 → +36.1 %), the mean unchanged — what holds the 1536-GPU row up is
	// its 1536-rank rings, not these copies.
	if !(all.Max <= 0.365) {
		t.Errorf("max |error| %.1f%% > 36.5%% (%s)", 100*all.Max, all.Worst)
	}
}

// Inside each ranking set the measured order of the layouts is kept wherever the
// source's own re-measurements say it is an order (accuracy.RepeatabilityTolerance).
func TestRankingSets(t *testing.T) {
	sets := accuracy.Rankings(results(t))
	if len(sets) != 11 {
		t.Errorf("%d ranking sets, want the data's 11", len(sets))
	}
	for _, k := range sets {
		t.Logf("%-40s n=%d τ=%+.2f (measured ties within %.0f%%: %+.2f)", k.Set, k.N, k.Tau, 100*accuracy.RepeatabilityTolerance, k.TauRepeatable)
		if !k.Ordered {
			t.Logf("  every measured difference is within the repeatability: no order to keep")
			continue
		}
		if !(k.TauRepeatable >= 0.7) {
			t.Errorf("%s: Kendall τ %.2f < 0.7 (predicted %v, measured %v)", k.Set, k.TauRepeatable, k.Pred, k.Meas)
		}
	}
}

// Runs published as out of memory come out infeasible. The shared data set has none;
// torchtitan's docs/performance.md (Llama 2 on 64 A100-80GB with FSDP2, sequence 4096)
// reports three, which go through the same mapping here, with the run that fitted at
// local batch 1 as the control.
func TestPublishedOutOfMemory(t *testing.T) {
	all := results(t)
	missed, oom := accuracy.MissedOOM(all)
	if len(missed) > 0 {
		t.Errorf("published out of memory, estimated to fit: %v", missed)
	}
	// And every run that ran fits (with the micro-batch size it states, or one the
	// harness chooses where it does not).
	for _, r := range all {
		if r.Err == nil && !r.PublishedOOM && !r.Estimate.Memory.Fits {
			m := r.Estimate.Memory
			t.Errorf("%s ran, estimated not to fit: %.1f of %.1f GB (gathered %.1f, activations %.1f, logits %.1f)",
				r.Run.ID, m.Total, m.Capacity, m.Gathered, m.Activations, m.Logits)
		}
	}
	t.Logf("%d runs of the data set published as out of memory", oom)

	runs, err := accuracy.Runs()
	if err != nil {
		t.Fatal(err)
	}
	var base accuracy.Run
	for _, r := range runs {
		if r.ID == "torchtitan_a100_llama2_70b_lbs1_ac_selective_op" {
			base = r
		}
	}
	if base.ID == "" {
		t.Fatal("Llama 2 70B run not in the data")
	}
	var torchtitan []accuracy.Run
	for _, c := range []struct {
		id, rc string
		mbs    int
		oom    bool
	}{
		{"70b_lbs2_selective_layer", "selective layer", 2, true},
		{"70b_lbs2_selective_op", "selective op", 2, true},
		{"70b_lbs1_selective_op", "selective op", 1, false},
	} {
		r := base
		r.ID, r.Recompute, r.MicroBatch, r.GlobalBatch = c.id, &c.rc, &c.mbs, 64*c.mbs
		if c.oom {
			r.Outcome, r.Measured = "OOM", nil
		}
		torchtitan = append(torchtitan, r)
	}
	res := accuracy.Evaluate(step.New(), accuracy.Cases(torchtitan))
	missed, oom = accuracy.MissedOOM(res)
	if oom != 2 || len(missed) > 0 {
		t.Errorf("torchtitan: %d published out of memory, estimated to fit: %v", oom, missed)
	}
	if r := res[2]; r.Err != nil || !r.Estimate.Memory.Fits || r.PublishedOOM {
		t.Errorf("the local batch 1 run that ran: %v, fits %v", r.Err, r.Estimate.Memory.Fits)
	}
	if s := accuracy.Summarise(res); s.N != 1 {
		t.Errorf("step-time statistics over %d runs, want only the one that ran", s.N)
	}

	// Narayanan et al. 2021, Table 2's note: the 530B model under ZeRO-3 at
	// micro-batch 4 "did not fit on 560 GPUs", so it ran on 640 with a batch of 2560
	// (narayanan21_t2_zero3_530b_640gpu, which must fit).
	var zero3 accuracy.Run
	for _, r := range runs {
		if r.ID == "narayanan21_t2_zero3_530b_640gpu" {
			zero3 = r
		}
	}
	if zero3.ID == "" {
		t.Fatal("the 530B ZeRO-3 run is not in the data")
	}
	dp := 560
	zero3.ID, zero3.GPUs, zero3.RawDP, zero3.GlobalBatch = "530b_zero3_560gpu_mbs4", 560, &dp, 2240
	zero3.Outcome, zero3.Measured = "OOM", nil
	res = accuracy.Evaluate(step.New(), accuracy.Cases([]accuracy.Run{zero3}))
	if missed, oom := accuracy.MissedOOM(res); oom != 1 || len(missed) > 0 {
		m := res[0].Estimate.Memory
		t.Errorf("530B ZeRO-3 on 560 GPUs at micro-batch 4 (published out of memory): %v, %.1f of %.1f GB", res[0].Err, m.Total, m.Capacity)
	}
}

// Leave-one-source-out: the compute constants are fitted (from accuracy.Prior) on
// every source but one and that source is scored with them. This is the figure a
// user on a framework or cluster the fit has not seen should expect.
func TestCrossValidatedAccuracy(t *testing.T) {
	if os.Getenv("STEPCOST_SLOW") == "" {
		t.Skip("one refit per source: set STEPCOST_SLOW=1 (CI's cross-validation step)")
	}
	runs, err := accuracy.Runs()
	if err != nil {
		t.Fatal(err)
	}
	cases := accuracy.Cases(runs)
	folds := accuracy.CrossValidate(cases, accuracy.Prior(), accuracy.Setters(), accuracy.FitRounds)
	if len(folds) != len(accuracy.Sources(cases)) || len(folds) < 3 {
		t.Fatalf("%d folds for sources %v", len(folds), accuracy.Sources(cases))
	}
	for _, f := range folds {
		s := accuracy.Summarise(f.Held)
		t.Logf("left out %-12s n=%2d mean |err| %5.1f%%, max %5.1f%% (%s), bias %+5.1f%%; fitted %v", f.Source, s.N, 100*s.MeanAbs, 100*s.Max, s.Worst, 100*s.Bias, accuracy.FittedValues(f.Constants, accuracy.Setters()))
		if s.N != len(f.Held) {
			t.Errorf("%s: %d of %d runs scored", f.Source, s.N, len(f.Held))
		}
		if !(s.MeanAbs <= 0.20) {
			t.Errorf("left out %s: mean |error| %.1f%% > 20%%", f.Source, 100*s.MeanAbs)
		}
	}
	out := accuracy.OutOfSample(folds)
	all := accuracy.Summarise(out)
	t.Logf("all %d runs out of sample: mean |err| %.1f%%, median %.1f%%, max %.1f%% (%s), bias %+.1f%%", all.N, 100*all.MeanAbs, 100*all.MedianAbs, 100*all.Max, all.Worst, 100*all.Bias)
	// Each run left out with its source: 6.7 % now; no change may take it over
	// 7.5 %, the figure before the MoE, fp8 and Blackwell work.
	if !(all.MeanAbs <= 0.075) {
		t.Errorf("out-of-sample mean |error| %.2f%% > 7.5%%", 100*all.MeanAbs)
	}
	// Out of sample, every ranking set keeps its order (τ′ ≥ 0.7).
	var swapped []string
	for _, k := range accuracy.Rankings(out) {
		t.Logf("out of sample %-40s n=%d τ′=%+.2f", k.Set, k.N, k.TauRepeatable)
		if k.Ordered && !(k.TauRepeatable >= 0.7) {
			t.Logf("  Kendall τ′ %.2f < 0.7 (predicted %v, measured %v)", k.TauRepeatable, k.Pred, k.Meas)
			swapped = append(swapped, k.Set)
		}
	}
	if len(swapped) > 0 {
		t.Errorf("out of sample, ranking sets with τ′ < 0.7: %v", swapped)
	}
}

// Published peak-memory readings (torchtitan's peak reserved memory on H100) against
// the estimated peak: within 15 % each, and the median within 5 %. Before the loss
// was priced as PyTorch's fp32 cross entropy holds it (12 B per logit rather than
// Megatron's 6), the long-context runs came out 28 % low.
func TestPublishedMemoryReadings(t *testing.T) {
	rs := results(t)
	readings := accuracy.MemoryReadings(rs)
	if len(readings) < 8 {
		t.Fatalf("%d memory readings, want the 8 with a stated micro-batch", len(readings))
	}
	var errs []float64
	for _, m := range readings {
		t.Logf("%-50s measured %5.1f GB, estimated %5.1f GB (%+.1f%%)", m.ID, m.MeasuredGB, m.PredictedGB, 100*m.RelErr)
		if math.Abs(m.RelErr) > 0.15 {
			t.Errorf("%s: peak memory off by %+.1f%%", m.ID, 100*m.RelErr)
		}
		errs = append(errs, math.Abs(m.RelErr))
	}
	slices.Sort(errs)
	if med := errs[len(errs)/2]; med > 0.05 {
		t.Errorf("median |error| of peak memory %.1f%% > 5%%", 100*med)
	}
}
