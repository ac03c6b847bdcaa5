package calibrate_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Each framework's step-time line, in the form its logger prints it, gives the step
// time; the first logged steps (warm-up) are dropped and the median kept.
func TestParseTrainingLogs(t *testing.T) {
	lay := calibrate.RunLayout{Model: "llama3-8b", GPUs: 16, TP: 1, MicroBatch: 2, GlobalBatch: 64, SeqLen: 8192}
	for _, tt := range []struct {
		name, log, fw string
		want          float64
	}{
		{"megatron", " [2026-01-01 10:00:00] iteration       10/    1000 | consumed samples:          640 | elapsed time per iteration (ms): 9000.0 | learning rate: 3.0E-04 | global batch size:    64 |\n" +
			" [2026-01-01 10:00:20] iteration       20/    1000 | consumed samples:         1280 | elapsed time per iteration (ms): 2010.5 | global batch size:    64 |\n" +
			" [2026-01-01 10:00:40] iteration       30/    1000 | consumed samples:         1920 | elapsed time per iteration (ms): 2000.5 | global batch size:    64 |\n", "megatron-core", 2.0055},
		{"nemo", "Epoch 0: :   1%| 10/1000 [00:30<50:00, reduced_train_loss=7.10, train_step_timing in s=5.00]\nEpoch 0: :   2%| 20/1000 [00:50<40:00, reduced_train_loss=6.90, train_step_timing in s=2.10]\nEpoch 0: :   3%| 30/1000 [01:10<40:00, reduced_train_loss=6.70, train_step_timing in s=2.20]\n", "nemo", 2.15},
		{"torchtitan", "[rank0]:[titan] 2026-01-01 10:00:00,000 - root - INFO - step:  1  loss: 12.0  memory: 40.00GiB(50.0%)  tps: 1,000  tflops: 50.0  mfu: 5.0%\n[rank0]:[titan] 2026-01-01 10:00:10,000 - root - INFO - step: 10  loss:  8.0  memory: 40.00GiB(50.0%)  tps: 8,192  tflops: 400.0  mfu: 40.0%\n[rank0]:[titan] 2026-01-01 10:00:20,000 - root - INFO - step: 20  loss:  7.0  memory: 40.00GiB(50.0%)  tps: 8,192  tflops: 400.0  mfu: 40.0%\n", "torchtitan", 64 * 8192 / (8192.0 * 16)},
		// torchtitan before pytorch/torchtitan#697 (2024-11-24) printed the same
		// per-GPU token rate as "wps" (train.py: wps = ntokens_since_last_log /
		// (time_delta * parallel_dims.model_parallel_size)).
		{"torchtitan wps", "[rank0]:2024-06-01 10:00:00,000 - root - INFO - step:  1  loss: 12.0000  memory: 40.00GiB(50.00%)  wps: 1,000  mfu: 5.00%\n[rank0]:2024-06-01 10:00:10,000 - root - INFO - step: 10  loss:  8.0000  memory: 40.00GiB(50.00%)  wps: 8,192  mfu: 40.00%\n[rank0]:2024-06-01 10:00:20,000 - root - INFO - step: 20  loss:  7.0000  memory: 40.00GiB(50.00%)  wps: 8,192  mfu: 40.00%\n", "torchtitan", 64 * 8192 / (8192.0 * 16)},
		{"composer", "[batch=10/100]:\n\t Train throughput/batches_per_sec: 0.2000\n[batch=20/100]:\n\t Train throughput/batches_per_sec: 0.5000\n[batch=30/100]:\n\t Train throughput/batches_per_sec: 0.5000\n", "composer", 2},
		{"deepspeed", "[2026-01-01 10:00:00,000] [INFO] [timer.py:260:stop] epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=20.0, CurrSamplesPerSec=10.0, MemAllocated=10GB\n[2026-01-01 10:00:10,000] [INFO] [timer.py:260:stop] epoch=0/micro_step=20/global_step=20, RunningAvgSamplesPerSec=30.0, CurrSamplesPerSec=32.0, MemAllocated=10GB\n[2026-01-01 10:00:20,000] [INFO] [timer.py:260:stop] epoch=0/micro_step=30/global_step=30, RunningAvgSamplesPerSec=31.0, CurrSamplesPerSec=32.0, MemAllocated=10GB\n", "deepspeed", 2},
	} {
		if !calibrate.IsTrainingLog([]byte(tt.log)) {
			t.Errorf("%s: not taken for a training log", tt.name)
		}
		r, err := calibrate.ParseTrainingLog(tt.name+".log", []byte(tt.log), lay)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if r.Framework != tt.fw || math.Abs(r.StepS-tt.want) > 1e-9*tt.want || r.Steps != 2 {
			t.Errorf("%s: %s, step %v s over %d steps, want %s %v s over 2", tt.name, r.Framework, r.StepS, r.Steps, tt.fw, tt.want)
		}
	}
}

func TestTrainingLogRefuses(t *testing.T) {
	lay := calibrate.RunLayout{Model: "llama3-8b", GPUs: 16, MicroBatch: 2, GlobalBatch: 64, SeqLen: 8192}
	for _, tt := range []struct {
		name, log string
		lay       calibrate.RunLayout
		want      string
	}{
		{"cut", " iteration 10/ 1000 | elapsed time per iteration (ms): 2000.0 |\n iteration 20/ 1000 | elapsed time per iteration (ms): \n", lay, "cut.log:2: a megatron-core metric line without its value"},
		{"foreign", "hello\nworld\n", lay, "not a training log stepcost reads"},
		// A value that is there but not a positive number is named as such: it
		// was said to be missing ("without its value (cut short?)").
		{"negative", " iteration 10/ 1000 | elapsed time per iteration (ms): 2000.0 |\n iteration 20/ 1000 | elapsed time per iteration (ms): -2000.0 |\n", lay, `negative.log:2: elapsed time per iteration (ms): "-2000.0" is not a positive number`},
		{"tps nan", "step: 10  loss: 7.9  tps: 6,123  mfu: 35.9%\nstep: 20  loss: 7.8  tps: nan  mfu: 35.9%\n", lay, `tps nan.log:2: tps: "nan" is not a positive number`},
		{"nemo negative", "train_step_timing in s=1.5\ntrain_step_timing in s=-1.5\n", lay, `nemo negative.log:2: train_step_timing: "-1.5" is not a positive number`},
		// The last line cut short before its metric (no newline after it): the
		// step it began was dropped without a word.
		{"cut last line", "step: 10  loss: 7.9  tps: 6,123  mfu: 35.9%\nstep: 20  loss: 7.8  tps: 6,100  mfu: 35.9%\nstep: 30  loss: 7.7  tps: 6,200  mfu: 35.9%\nstep: 40  loss:", lay,
			`cut last line.log:4: the last line is cut short before its torchtitan metric (tps:)`},
		{"cut last megatron line", " iteration 10/ 1000 | elapsed time per iteration (ms): 2000.0 |\n iteration 20/ 1000 | elapsed time per iteration (ms): 2000.0 |\n iteration 30/ 1000 | consumed samples", lay,
			`cut last megatron line.log:3: the last line is cut short before its megatron-core metric (elapsed time per iteration (ms))`},
		{"nolayout", " iteration 10/ 1000 | elapsed time per iteration (ms): 2000.0 |\n", calibrate.RunLayout{}, "layout model: required"},
		{"badmodel", " iteration 10/ 1000 | elapsed time per iteration (ms): 2000.0 |\n", calibrate.RunLayout{Model: "nope", GPUs: 8, MicroBatch: 1, GlobalBatch: 8, SeqLen: 2048}, "layout model"},
	} {
		_, err := calibrate.ParseTrainingLog(tt.name+".log", []byte(tt.log), tt.lay)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}

// The torchtitan runs of pytorch/ao's float8 pre-training tutorial (testdata/trainlogs,
// provenance in its README) are read as torchtitan logs: the step time is the
// global batch's tokens over tps × GPUs, tps the median of the lines after the
// first (warm-up) one — the values below are read off the files by hand.
func TestTorchaoTutorialLogs(t *testing.T) {
	for _, tt := range []struct {
		file string
		tps  float64 // median tps after step 1
		n    int
	}{
		{"torchao-pretraining-bf16.log", (6321 + 6300) / 2.0, 4},           // 6,344 6,321 6,300 6,291
		{"torchao-pretraining-fp8-rowwise.log", 7022, 3},                   // 7,034 7,022 7,014
		{"torchao-pretraining-fp8-tensorwise.log", (7637 + 7643) / 2.0, 4}, // 7,503 7,663 7,643 7,637
	} {
		_, in := torchaoRuns(t)
		var r calibrate.Run
		for _, x := range in.Runs {
			if x.File == tt.file {
				r = x
			}
		}
		want := 8 * 8192 / (tt.tps * 8) // global batch 8 × 8192 tokens over tps × 8 GPUs
		if r.Framework != "torchtitan" || r.Steps != tt.n || math.Abs(r.StepS-want) > 1e-9*want {
			t.Errorf("%s: %s, %v s over %d steps; want torchtitan, %v s over %d", tt.file, r.Framework, r.StepS, r.Steps, want, tt.n)
		}
	}
}

// Calibrating the compute scale on those runs moves the predicted step time toward
// the measured one: in sample, and for each run with the scale fitted on the other
// two (the leave-one-out rows of the report), with the scale inside its bounds.
func TestTorchaoTutorialCalibrates(t *testing.T) {
	spec, in := torchaoRuns(t)
	rep, err := calibrate.Calibrate("dgx-h100", spec, in)
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Fitted.ComputeScale; !(s > 0.5 && s < 1.15) {
		t.Errorf("compute scale %.3f at or beyond its bounds (0.5, 1.15)", s)
	}
	for i, b := range rep.Before {
		a, o := rep.After[i], rep.OutOfSample[i]
		t.Logf("%s: measured %.3f s, catalog %.3f s (%+.1f %%), calibrated %.3f s (%+.1f %%), without this run %.3f s (%+.1f %%)",
			b.File, b.MeasuredUs/1e6, b.PredictedUs/1e6, 100*b.RelErr(), a.PredictedUs/1e6, 100*a.RelErr(), o.PredictedUs/1e6, 100*o.RelErr())
		if !(math.Abs(a.RelErr()) < math.Abs(b.RelErr())) || !(math.Abs(o.RelErr()) < math.Abs(b.RelErr())) {
			t.Errorf("%s: |err| %.1f %% with the catalog, %.1f %% calibrated, %.1f %% held out: not closer", b.File, 100*math.Abs(b.RelErr()), 100*math.Abs(a.RelErr()), 100*math.Abs(o.RelErr()))
		}
	}
}

func torchaoRuns(t *testing.T) (topology.Spec, calibrate.Inputs) {
	t.Helper()
	spec, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes = 1
	dir := filepath.Join("testdata", "trainlogs")
	data, err := os.ReadFile(filepath.Join(dir, "layout.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	lays, err := calibrate.DecodeLayouts(j)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(files) != 3 {
		t.Fatalf("%d logs in %s, want 3", len(files), dir)
	}
	var in calibrate.Inputs
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Read(filepath.Base(f), b, lays.For(f, calibrate.FileLayout{})); err != nil {
			t.Fatal(err)
		}
	}
	return spec, in
}

// A training log's layout is read as given or refused naming the field: a
// negative degree was taken as 1, a GPU count the degrees do not multiply to was
// priced on the GPUs they do multiply to (16 GPUs with tp 2 and dp 4 as 8), and
// gpus_per_node was checked against the node and then dropped (8 GPUs as 2 nodes
// × 4 priced as one node of 8).
func TestTrainingLogLayoutReadAsGiven(t *testing.T) {
	log := []byte(" iteration 10/ 1000 | elapsed time per iteration (ms): 2000.0 |\n iteration 20/ 1000 | elapsed time per iteration (ms): 2000.0 |\n")
	ok := calibrate.RunLayout{Model: "llama3-8b", GPUs: 16, MicroBatch: 1, GlobalBatch: 64, SeqLen: 4096}
	with := func(edit func(*calibrate.RunLayout)) calibrate.RunLayout {
		l := ok
		edit(&l)
		return l
	}
	for _, tt := range []struct {
		name string
		lay  calibrate.RunLayout
		want string
	}{
		{"negative tp", with(func(l *calibrate.RunLayout) { l.TP = -2 }), "layout tp: must not be negative (got -2)"},
		{"negative pp", with(func(l *calibrate.RunLayout) { l.PP = -1 }), "layout pp: must not be negative (got -1)"},
		{"negative zero", with(func(l *calibrate.RunLayout) { l.ZeRO = -1 }), "layout zero: must not be negative (got -1)"},
		{"negative vpp", with(func(l *calibrate.RunLayout) { l.VPP = -4 }), "layout vpp: must not be negative (got -4)"},
		{"gpus not a multiple", with(func(l *calibrate.RunLayout) { l.GPUs, l.TP = 12, 8 }), "layout gpus: 12 is not a multiple of tp × pp × cp = 8 × 1 × 1"},
		{"dp against gpus", with(func(l *calibrate.RunLayout) { l.TP, l.DP = 2, 4 }), "layout dp: tp × pp × cp × dp = 2 × 1 × 1 × 4 = 8 GPUs, but gpus is 16"},
	} {
		_, err := calibrate.ParseTrainingLog(tt.name+".log", log, tt.lay)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}

	// 8 GPUs as 2 nodes × 4 of dgx-h100 are priced on two nodes: the data-parallel
	// gradients cross the network, which one node of 8 does not.
	spec, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	score := func(per int) float64 {
		t.Helper()
		l := calibrate.RunLayout{Model: "llama3-8b", GPUs: 8, GPUsPerNode: per, MicroBatch: 1, GlobalBatch: 8, SeqLen: 4096}
		r, err := calibrate.ParseTrainingLog("run.log", log, l)
		if err != nil {
			t.Fatal(err)
		}
		med, _, err := calibrate.Score(spec, calibrate.Inputs{Runs: []calibrate.Run{r}})
		if err != nil {
			t.Fatalf("gpus_per_node %d: %v", per, err)
		}
		return med
	}
	if one, two := score(8), score(4); one == two {
		t.Errorf("8 GPUs as 2 nodes × 4 priced as one node of 8 (error %.4f both)", one)
	}
	if a, b := score(0), score(8); a != b {
		t.Errorf("gpus_per_node left out (the node's) %.4f, given as the node's 8 %.4f", a, b)
	}
}

// Megatron-LM prints the global batch each logged step ran ("global batch size:
// 512 |", training.py training_log: micro-batch × data-parallel × the current
// number of micro-batches): a layout whose global_batch no logged step ran is
// refused naming it (a step of 512 sequences was priced as one of 256 without a
// word), and the steps of a batch-size ramp-up (--rampup-batch-size), smaller
// batches than the layout's, are set aside and said, not taken for its steps.
func TestMegatronGlobalBatchAgainstTheLayout(t *testing.T) {
	line := func(it, gbs int, ms float64) string {
		return fmt.Sprintf(" [2026-01-01 10:00:00] iteration %8d/    1000 | consumed samples: %12d | elapsed time per iteration (ms): %.1f | learning rate: 3.000E-04 | global batch size: %5d | lm loss: 7.000000E+00 | loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n", it, it*gbs, ms, gbs)
	}
	lay := calibrate.RunLayout{Model: "llama3-8b", GPUs: 16, TP: 1, MicroBatch: 2, GlobalBatch: 256, SeqLen: 8192}
	var log strings.Builder
	for it := 10; it <= 60; it += 10 {
		log.WriteString(line(it, 512, 4000))
	}
	_, err := calibrate.ParseTrainingLog("gbs.log", []byte(log.String()), lay)
	var fe *calibrate.FileError
	if !errors.As(err, &fe) || fe.Layout != "global_batch" || fe.Line != 1 ||
		!strings.Contains(err.Error(), "gbs.log:1: layout global_batch: 256 was given, but the log's steps ran global batch size 512") {
		t.Errorf("a layout of another global batch: %v (%+v)", err, fe)
	}

	// NeMo 2's progress printer says it too ("global_batch_size: 16").
	nemo := "Training epoch 0, iteration 32/99 | lr: 4.8e-06 | global_batch_size: 16 | global_step: 32 | reduced_train_loss: 1.436 | train_step_timing in s: 4.929 | consumed_samples: 528\n" +
		"Training epoch 0, iteration 33/99 | lr: 4.95e-06 | global_batch_size: 16 | global_step: 33 | reduced_train_loss: 1.43 | train_step_timing in s: 4.93 | consumed_samples: 544\n"
	if _, err := calibrate.ParseTrainingLog("nemo.log", []byte(nemo), lay); err == nil || !strings.Contains(err.Error(), "nemo.log:1: layout global_batch: 256 was given, but the log's steps ran global batch size 16") {
		t.Errorf("a NeMo 2 log of another global batch: %v", err)
	}

	// A ramp-up of 128 and 256 before 512: those steps are not the layout's.
	log.Reset()
	log.WriteString(line(10, 128, 1000) + line(20, 256, 2000) + line(30, 256, 2000))
	for it := 40; it <= 100; it += 10 {
		log.WriteString(line(it, 512, 4000))
	}
	lay.GlobalBatch = 512
	r, err := calibrate.ParseTrainingLog("ramp.log", []byte(log.String()), lay)
	if err != nil {
		t.Fatal(err)
	}
	if r.StepS != 4 || r.Steps != 6 {
		t.Errorf("step %v s over %d steps; want 4 s over the 7 steps of 512 less one of warm-up", r.StepS, r.Steps)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool {
		return strings.Contains(n, "3 logged step(s) of another global batch size than the layout's 512 (128, 256: a batch-size ramp-up?) set aside (lines 1–3)")
	}) {
		t.Errorf("no note of the ramp-up's steps: %q", r.Notes)
	}
}

// A training log's layout the estimator refuses is named by the layout file's
// key, as the reader's own refusals are: the estimator's field
// ("training.precision", "layout.tp") was given, a name the layout file has not,
// and the file's content was named at fault over the API.
func TestTrainingLogEstimateRefusalNamesTheKey(t *testing.T) {
	log := []byte(" iteration 10/ 1000 | elapsed time per iteration (ms): 2000.0 |\n iteration 20/ 1000 | elapsed time per iteration (ms): 2000.0 |\n")
	spec, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lay       calibrate.RunLayout
		key, want string
	}{
		{calibrate.RunLayout{Model: "llama3-8b", GPUs: 16, MicroBatch: 1, GlobalBatch: 64, SeqLen: 4096, Precision: "fp4"}, "precision", `run.log: layout precision: must be bf16, fp16 or fp8 (got "fp4")`},
		{calibrate.RunLayout{Model: "llama3-8b", GPUs: 24, TP: 3, MicroBatch: 1, GlobalBatch: 64, SeqLen: 4096}, "tp", "run.log: layout tp: "},
	} {
		r, err := calibrate.ParseTrainingLog("run.log", log, c.lay)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = calibrate.Score(spec, calibrate.Inputs{Runs: []calibrate.Run{r}})
		fe := &calibrate.FileError{}
		if !errors.As(err, &fe) || fe.Layout != c.key || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v (field %q); want %q naming %s", c.lay, err, fe.Layout, c.want, c.key)
		}
	}
}
