package calibrate_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/topology"
)

// a100Log is a torchtitan log of the tutorial's layout as an A100 run prints it:
// tflops ÷ mfu = 115.84 ÷ 37.13 % = 312.0, torchtitan's A100 peak (tools/utils.py),
// where the tutorial's H100 runs print 367.39 ÷ 37.15 % = 988.9.
const a100Log = "[rank0]:[titan] 2026-01-01 10:00:00,000 - root - INFO - step:  1  loss: 12.2611  memory: 27.22GiB(68.05%)  tps: 180  tflops: 10.42  mfu: 3.34%\n" +
	"[rank0]:[titan] 2026-01-01 10:00:30,000 - root - INFO - step: 10  loss: 10.4260  memory: 30.89GiB(77.23%)  tps: 2,000  tflops: 115.84  mfu: 37.13%\n" +
	"[rank0]:[titan] 2026-01-01 10:01:10,000 - root - INFO - step: 20  loss:  8.9482  memory: 30.89GiB(77.23%)  tps: 1,998  tflops: 115.72  mfu: 37.09%\n" +
	"[rank0]:[titan] 2026-01-01 10:01:50,000 - root - INFO - step: 30  loss:  8.1183  memory: 30.89GiB(77.23%)  tps: 1,996  tflops: 115.61  mfu: 37.05%\n"

// tutorialLayout is the layout of the tutorial's bf16 run (testdata/trainlogs/layout.yaml).
var tutorialLayout = calibrate.FileLayout{RunLayout: calibrate.RunLayout{Model: "llama3-8b", GPUs: 8, GPUsPerNode: 8, TP: 1, PP: 1, ZeRO: 3,
	MicroBatch: 1, GlobalBatch: 8, SeqLen: 8192, Recompute: "ops"}}

func systemOf(t *testing.T, name string) topology.Spec {
	t.Helper()
	spec, err := catalog.System(name)
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes = 1
	return spec
}

// The tutorial's logs imply torchtitan's H100 peak (989 TFLOP/s, the bf16 peak
// also for the fp8 runs) within the rounding of their printed figures.
func TestTorchaoLogsImplyTheH100Peak(t *testing.T) {
	_, in := torchaoRuns(t)
	for _, r := range in.Runs {
		p := r.Peak
		if p.Line < 2 || !(p.Lo <= 989 && 989 <= p.Hi) || !(p.Hi-p.Lo < 1) {
			t.Errorf("%s: implied peak %+v, want 989 TFLOP/s within its bounds, from a line after the first", r.File, p)
		}
		if slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "could not be checked") }) {
			t.Errorf("%s: %q", r.File, r.Notes)
		}
	}
}

// A log of another GPU than the base cluster's is refused, naming the file, the
// line and both GPUs: the tutorial's H100 logs on dgx-a100 (priced 114.9 % off,
// the compute scale driven to its bound), an A100 run on dgx-h100. On its own
// GPU the A100 run is fitted.
func TestTrainingLogOfAnotherGPURefused(t *testing.T) {
	_, h100 := torchaoRuns(t)
	var a100 calibrate.Inputs
	if err := a100.Read("a100.log", []byte(a100Log), tutorialLayout); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		system string
		in     calibrate.Inputs
		file   string
		line   int
		want   []string
	}{
		{"dgx-a100", h100, "torchao-pretraining-bf16.log", 2, []string{"367.39 ÷ 37.15 % = 988.9 TFLOP/s", "H100 SXM or H200", "dgx-a100's A100-80GB (312 TFLOP/s)"}},
		{"dgx-h100", a100, "a100.log", 2, []string{"115.84 ÷ 37.13 % = 312 TFLOP/s", "an A100", "dgx-h100's H100-SXM (989 TFLOP/s)"}},
	} {
		_, err := calibrate.Calibrate(tt.system, systemOf(t, tt.system), tt.in)
		var fe *calibrate.FileError
		if !errors.As(err, &fe) || fe.File != tt.file || fe.Line != tt.line {
			t.Errorf("%s: %v, want %s:%d refused", tt.system, err, tt.file, tt.line)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(fe.Msg, w) {
				t.Errorf("%s: %q lacks %q", tt.system, fe.Msg, w)
			}
		}
	}
	rep, err := calibrate.Calibrate("dgx-a100", systemOf(t, "dgx-a100"), a100)
	if err != nil {
		t.Fatalf("the A100 run on dgx-a100: %v", err)
	}
	if len(rep.Notes) != 0 {
		t.Errorf("the A100 run on dgx-a100: notes %q", rep.Notes)
	}
}

// The A100's peak is also the one torchtitan divides by on a GPU its version's
// table did not name (a B200 before May 2025): on such a base the run is fitted
// and the report says the two could not be told apart.
func TestTrainingLogOfTheFallbackPeakNoted(t *testing.T) {
	var in calibrate.Inputs
	if err := in.Read("a100.log", []byte(a100Log), tutorialLayout); err != nil {
		t.Fatal(err)
	}
	rep, err := calibrate.Calibrate("hgx-b200", systemOf(t, "hgx-b200"), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "a100.log:2: tflops ÷ mfu = 312 TFLOP/s, the A100's peak") || !strings.Contains(rep.Notes[0], "not told apart") {
		t.Errorf("notes %q", rep.Notes)
	}
}

// A log that states no MFU is read, and its notes say the GPU it ran on could not
// be checked, and why: torchtitan's "mfu: N/A" under fp8 (since f113706c4), its
// lines before tflops were printed, Megatron-LM's and NeMo's logs.
func TestTrainingLogWithoutMFUNoted(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "trainlogs", "torchao-pretraining-fp8-rowwise.log"))
	if err != nil {
		t.Fatal(err)
	}
	// The tutorial's fp8 run as torchtitan prints it since f113706c4.
	na := strings.NewReplacer("mfu: 2.20%", "mfu: N/A", "mfu: 41.19%", "mfu: N/A", "mfu: 41.12%", "mfu: N/A", "mfu: 41.08%", "mfu: N/A").Replace(string(b))
	if strings.Count(na, "N/A") != 4 {
		t.Fatalf("%d lines edited", strings.Count(na, "N/A"))
	}
	for _, tt := range []struct{ name, log, why string }{
		{"titan-na", na, `prints "mfu: N/A" under fp8`},
		{"titan-wps", "step:  1  loss: 12.0000  memory: 40.00GiB(50.00%)  wps: 1,000  mfu: 5.00%\nstep: 10  loss:  8.0000  memory: 40.00GiB(50.00%)  wps: 6,192  mfu: 35.00%\n", "state no tflops beside their mfu"},
		{"megatron", " iteration       10/    1000 | elapsed time per iteration (ms): 1300.0 | throughput per GPU (TFLOP/s/GPU): 367.4 |\n iteration       20/    1000 | elapsed time per iteration (ms): 1298.0 | throughput per GPU (TFLOP/s/GPU): 367.9 |\n", "TFLOP/s per GPU but no MFU"},
		{"nemo", "Epoch 0: :   1%| 10/1000 [00:30<50:00, train_step_timing in s=1.30]\nEpoch 0: :   2%| 20/1000 [00:50<40:00, train_step_timing in s=1.29]\n", "no MFU"},
	} {
		var in calibrate.Inputs
		if err := in.Read(tt.name+".log", []byte(tt.log), tutorialLayout); err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		r := in.Runs[0]
		i := slices.IndexFunc(r.Notes, func(n string) bool { return strings.Contains(n, "could not be checked against the base cluster's") })
		if r.Peak.Line != 0 || i < 0 || !strings.Contains(r.Notes[i], tt.why) {
			t.Errorf("%s: peak %+v, notes %q; want a note saying %q", tt.name, r.Peak, r.Notes, tt.why)
		}
	}
}

// A compute scale the log determines but the fit declines (a run faster than the
// GPU's boost clock allows the model's price: 9,000 tokens/s per H100 against
// the model's about 7,240) is reported as declined only: it was also "not determined:
// … the inputs have no training log".
func TestDeclinedComputeScaleIsNotUndetermined(t *testing.T) {
	const fast = "step:  1  loss: 12.2611  memory: 27.22GiB(28.65%)  tps: 595  tflops: 34.47  mfu: 3.49%\n" +
		"step: 10  loss: 10.4260  memory: 30.89GiB(32.51%)  tps: 9,000  tflops: 521.20  mfu: 52.70%\n" +
		"step: 20  loss:  8.9482  memory: 30.89GiB(32.51%)  tps: 9,000  tflops: 521.20  mfu: 52.70%\n"
	var in calibrate.Inputs
	if err := in.Read("fast.log", []byte(fast), tutorialLayout); err != nil {
		t.Fatal(err)
	}
	rep, err := calibrate.Calibrate("dgx-h100", systemOf(t, "dgx-h100"), in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Declined, func(d calibrate.Declined) bool { return d.Field == "gpu.peak_tflops" }) {
		t.Errorf("the compute scale is not declined: %v", rep.Declined)
	}
	for _, u := range rep.Undetermined {
		if strings.Contains(u, "gpu.peak_tflops") {
			t.Errorf("declined and said undetermined: %q", u)
		}
	}
}
