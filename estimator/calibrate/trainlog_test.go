package calibrate_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
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
		{"composer", "[batch=10/100]:\n\t Train throughput/batches_per_sec: 0.2000\n[batch=20/100]:\n\t Train throughput/batches_per_sec: 0.5000\n[batch=30/100]:\n\t Train throughput/batches_per_sec: 0.5000\n", "composer", 2},
		{"deepspeed", "[2026-01-01 10:00:00,000] [INFO] [timer.py:260:stop] epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=20.0, CurrSamplesPerSec=10.0, MemAllocated=10GB\n[2026-01-01 10:00:10,000] [INFO] [timer.py:260:stop] epoch=0/micro_step=20/global_step=20, RunningAvgSamplesPerSec=30.0, CurrSamplesPerSec=32.0, MemAllocated=10GB\n[2026-01-01 10:00:20,000] [INFO] [timer.py:260:stop] epoch=0/micro_step=30/global_step=30, RunningAvgSamplesPerSec=31.0, CurrSamplesPerSec=32.0, MemAllocated=10GB\n", "deepspeed", 2},
	} {
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
		{"nolayout", " iteration 10/ 1000 | elapsed time per iteration (ms): 2000.0 |\n", calibrate.RunLayout{}, "layout model: required"},
		{"badmodel", " iteration 10/ 1000 | elapsed time per iteration (ms): 2000.0 |\n", calibrate.RunLayout{Model: "nope", GPUs: 8, MicroBatch: 1, GlobalBatch: 8, SeqLen: 2048}, "layout model"},
	} {
		_, err := calibrate.ParseTrainingLog(tt.name+".log", []byte(tt.log), tt.lay)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}
