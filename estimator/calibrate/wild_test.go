package calibrate_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/catalog"
)

// table8 is an all_reduce_perf run of one process driving 8 GPUs (-g 8) as
// nccl-tests 2.10 and later print it: the header, the device lines, the
// out-of-place and in-place columns with #wrong, and the rows sized 1–64 MiB at
// the given time each; wrong[i] is row i's out-of-place #wrong.
func table8(timeUs float64, wrong ...string) string {
	return run8("all_reduce_perf", "node01", 4242, timeUs, wrong...)
}

// run8 is table8 for another test (its bus factor on 8 ranks), host and pid.
func run8(bench, host string, pid int, timeUs float64, wrong ...string) string {
	factor := map[string]float64{"all_reduce_perf": 1.75, "all_gather_perf": 0.875}[bench]
	var b strings.Builder
	fmt.Fprintf(&b, "# Collective test starting: %s\n", bench)
	b.WriteString("# nThread 1 nGpus 8 minBytes 1048576 maxBytes 67108864 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n")
	for r := range 8 {
		fmt.Fprintf(&b, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] NVIDIA H100 80GB HBM3\n", r, pid, host, r, 0x18+r)
	}
	b.WriteString("#\n#                                                              out-of-place                       in-place\n")
	b.WriteString("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
	b.WriteString("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
	for i, size := 0, 1<<20; size <= 64<<20; i, size = i+1, size*2 {
		t := timeUs * float64(size>>20)
		alg := float64(size) / t / 1e3
		w := "0"
		if i < len(wrong) && wrong[i] != "" {
			w = wrong[i]
		}
		fmt.Fprintf(&b, "%12d  %12d     float     sum      -1  %7.1f  %6.2f  %6.2f  %5s  %7.1f  %6.2f  %6.2f      0\n", size, size/4, t, alg, alg*factor, w, t, alg, alg*factor)
	}
	b.WriteString("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 100\n#\n")
	return b.String()
}

// A row whose #wrong is not zero is a run whose results were corrupt (the
// data check found wrong elements): its times are not fitted, and the file,
// line and column are named. So is a run whose closing check failed.
func TestParseRefusesWrongResults(t *testing.T) {
	if _, err := calibrate.ParseNCCLTests("ok.txt", []byte(table8(20)), calibrate.Layout{Op: "allreduce"}); err != nil {
		t.Fatalf("the clean table: %v", err)
	}
	for _, tt := range []struct{ name, out, want string }{
		// The 4 MiB row is on line 19, the first (1 MiB) on 17.
		{"oop.txt", table8(20, "", "", "17"), "oop.txt:19: #wrong 17"},
		{"inplace.txt", strings.Replace(table8(20), "      0\n", "   1024\n", 1), "inplace.txt:17: in-place #wrong 1024"},
		// nccl-tests prints the count with %6g: a million is "1e+06".
		{"million.txt", table8(20, "1e+06"), "million.txt:17: #wrong 1e+06"},
		{"failed.txt", strings.Replace(table8(20), "Out of bounds values : 0 OK", "Out of bounds values : 3 FAILED", 1), "failed.txt:24: Out of bounds values : 3 FAILED"},
	} {
		_, err := calibrate.ParseNCCLTests(tt.name, []byte(tt.out), calibrate.Layout{Op: "allreduce"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}

// Two runs in one file are read as one only when they ran the same test on the
// same GPUs (a rerun appended: its sizes repeat the first's). Another test, or
// the same rank on another GPU — two clusters' outputs, or every process of an
// mpirun or srun printing a test of its own because nccl-tests was built without
// MPI=1 — is refused at the line where the second run shows it.
func TestParseTwoRunsInOneFile(t *testing.T) {
	s, err := calibrate.ParseNCCLTests("rerun.txt", []byte(table8(20)+run8("all_reduce_perf", "node01", 5151, 21)), calibrate.Layout{})
	if err != nil {
		t.Fatalf("a rerun appended: %v", err)
	}
	if len(s.Points) != 14 || s.Nodes != 1 || s.GPUsPerNode != 8 {
		t.Errorf("a rerun appended: %d points on %d × %d, want 14 on 1 × 8", len(s.Points), s.Nodes, s.GPUsPerNode)
	}
	// The second run starts on line 27 (the first has 26 lines); its device
	// lines on line 31.
	for _, tt := range []struct{ name, out, want string }{
		{"twotests.txt", table8(20) + run8("all_gather_perf", "node01", 5151, 20), "twotests.txt:27: all_gather_perf after all_reduce_perf"},
		{"twohosts.txt", table8(20) + run8("all_reduce_perf", "node02", 5151, 20), "twohosts.txt:31: rank 0 is on node02 device 0 here and on node01 device 0 at line 5"},
		// Two processes on one node, each running its own one-GPU all-reduce
		// and printing it (no MPI in the build), their lines interleaved.
		{"perproc.txt", "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
			"# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n" +
			"#  Rank  0 Group  0 Pid   1001 on     node01 device  0 [0x18] NVIDIA H100 80GB HBM3\n# Using devices\n" +
			"#  Rank  0 Group  0 Pid   1002 on     node01 device  1 [0x2a] NVIDIA H100 80GB HBM3\n" +
			"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
			"     1048576        262144     float     sum      -1     10.0  104.86    0.00      0     10.0  104.86    0.00      0\n" +
			"     1048576        262144     float     sum      -1     10.0  104.86    0.00      0     10.0  104.86    0.00      0\n",
			"perproc.txt:7: rank 0 is on node01 device 1 here and on node01 device 0 at line 5"},
	} {
		_, err := calibrate.ParseNCCLTests(tt.name, []byte(tt.out), calibrate.Layout{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}

// Training logs as the frameworks write them to a file: torchtitan's metric
// line in colour (its logger wraps each field in ANSI codes, torchtitan
// components/metrics.py) and its validation line, which is not a training step;
// Megatron-LM forks that print the iteration time in seconds (FZJ-JSC
// jubench-megatron-lm README.md: "elapsed time per iteration (s): 7.2310");
// Lightning's progress bar, whose updates a file keeps on one line separated by
// carriage returns.
func TestTrainingLogsInTheWild(t *testing.T) {
	lay := calibrate.RunLayout{Model: "llama3-8b", GPUs: 16, TP: 1, MicroBatch: 2, GlobalBatch: 64, SeqLen: 8192}
	titan := func(step int, loss string, tps string) string {
		return fmt.Sprintf("[rank0]:[titan] 2026-01-01 10:00:00,000 - root - INFO - \x1b[31mstep: %2d  \x1b[32mloss: %7s  \x1b[38;2;54;234;195mmemory: 40.00GiB(50.00%%)  \x1b[34mtps: %s  \x1b[36mtflops: 400.00  \x1b[35mmfu: 40.00%%\x1b[39m\n", step, loss, tps)
	}
	for _, tt := range []struct {
		name, log string
		want      float64
		steps     int
		note      string
	}{
		{"titan-colour", titan(1, "12.0000", "1,000") + titan(10, "8.0000", "8,192") +
			"[rank0]:[titan] 2026-01-01 10:00:00,000 - root - INFO - \x1b[33mvalidate step: 10  \x1b[32mloss:  7.9000  \x1b[38;2;54;234;195mmemory: 40.00GiB(50.00%)  \x1b[34mtps: 50,000\x1b[39m\n" +
			titan(20, "7.0000", "8,192"), 4, 2, ""},
		{"megatron-seconds", "[default3]: iteration       10/ 3125000 | consumed samples:          960 | elapsed time per iteration (s): 7.2310 | learning rate: 4.438E-07 | global batch size:    96 |\n" +
			"[default3]: iteration       20/ 3125000 | consumed samples:         1920 | elapsed time per iteration (s): 5.3551 | global batch size:    96 |\n" +
			"[default3]: iteration       30/ 3125000 | consumed samples:         2880 | elapsed time per iteration (s): 5.6192 | global batch size:    96 |\n" +
			"[default3]: iteration       40/ 3125000 | consumed samples:         3840 | elapsed time per iteration (s): 5.3291 | global batch size:    96 |\n" +
			"[default3]: iteration       50/ 3125000 | consumed samples:         4800 | elapsed time per iteration (s): 5.3247 | global batch size:    96 |\n", (5.3291 + 5.3551) / 2, 4, ""},
		{"nemo-bar", "Epoch 0: :   1%| 10/1000 [00:30<50:00, reduced_train_loss=7.10, train_step_timing in s=5.00]\rEpoch 0: :   2%| 20/1000 [00:50<40:00, reduced_train_loss=6.90, train_step_timing in s=2.10]\rEpoch 0: :   3%| 30/1000 [01:10<40:00, reduced_train_loss=6.70, train_step_timing in s=2.20]\n", 2.15, 2, ""},
	} {
		l := lay
		if tt.name == "megatron-seconds" {
			l.GlobalBatch = 96 // the run's, as its lines say
		}
		r, err := calibrate.ParseTrainingLog(tt.name+".log", []byte(tt.log), l)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if math.Abs(r.StepS-tt.want) > 1e-9*tt.want || r.Steps != tt.steps {
			t.Errorf("%s: step %v s over %d steps, want %v s over %d", tt.name, r.StepS, r.Steps, tt.want, tt.steps)
		}
		if tt.note != "" && !strings.Contains(strings.Join(r.Notes, "\n"), tt.note) {
			t.Errorf("%s: notes %q lack %q", tt.name, r.Notes, tt.note)
		}
	}
}

// Logged steps that are not the run's healthy step are set aside and said:
// Megatron-LM's intervals with skipped iterations (an fp16 overflow skips the
// optimizer step) or NaN iterations, a NaN or infinite loss; and after a restart
// (a "[before the start of training step]" banner, Megatron-LM
// megatron/training/training.py, or torchtitan's step counter going back) the
// first logged steps are warm-up again.
func TestTrainingLogsSetAside(t *testing.T) {
	lay := calibrate.RunLayout{Model: "llama3-8b", GPUs: 16, TP: 1, MicroBatch: 2, GlobalBatch: 64, SeqLen: 8192}
	titan := func(step int, loss string, tps string) string {
		return fmt.Sprintf("[rank0]:[titan] 2026-01-01 10:00:00,000 - root - INFO - \x1b[31mstep: %2d  \x1b[32mloss: %7s  \x1b[38;2;54;234;195mmemory: 40.00GiB(50.00%%)  \x1b[34mtps: %s  \x1b[36mtflops: 400.00  \x1b[35mmfu: 40.00%%\x1b[39m\n", step, loss, tps)
	}
	meg := func(it int, ms float64, skipped, nan int) string {
		return fmt.Sprintf(" [2026-01-01 10:00:00] iteration %8d/    1000 | consumed samples: %12d | elapsed time per iteration (ms): %.1f | learning rate: 3.0E-04 | global batch size:    64 | lm loss: 7.000000E+00 | loss scale: 1.0 | number of skipped iterations: %3d | number of nan iterations: %3d |\n", it, it*64, ms, skipped, nan)
	}
	nemo2 := func(it int, s float64) string {
		return fmt.Sprintf("Training epoch 0, iteration %d/99 | lr: 1.499e-05 | global_batch_size: 64 | global_step: %d | reduced_train_loss: 10.98 | train_step_timing in s: %.3f | consumed_samples: %d\n", it, it, s, it*64)
	}
	for _, tt := range []struct {
		name, log string
		want      float64
		steps     int
		note      string
	}{
		{"megatron-skipped", meg(10, 9000, 0, 0) + meg(20, 2000, 0, 0) + meg(30, 2100, 1, 0) + meg(40, 2010, 0, 2) + meg(50, 2020, 0, 0) + meg(60, 2030, 0, 0), 2.02, 3,
			"2 logged step(s) with skipped or NaN iterations or a NaN or infinite loss set aside (lines 3, 4)"},
		{"titan-nan", titan(1, "12.0000", "1,000") + titan(10, "8.0000", "8,192") + titan(20, "nan", "4,096") + titan(30, "7.0000", "8,192"), 4, 2,
			"1 logged step(s) with skipped or NaN iterations or a NaN or infinite loss set aside (lines 3)"},
		// The bar drawn again at the same step is one step, not two nor a restart.
		{"nemo-redraw", "Epoch 0: :   1%| 10/1000 [00:30<50:00, reduced_train_loss=7.10, train_step_timing in s=5.00]\rEpoch 0: :   2%| 20/1000 [00:50<40:00, reduced_train_loss=6.90, train_step_timing in s=2.10]\rEpoch 0: :   2%| 20/1000 [00:50<40:00, reduced_train_loss=6.90, train_step_timing in s=2.10]\rEpoch 0: :   3%| 30/1000 [01:10<40:00, reduced_train_loss=6.70, train_step_timing in s=2.20]\n", 2.15, 2, ""},
		// NeMo 2's progress printer (nemo/lightning/pytorch/callbacks/progress_printer.py)
		// states the iteration: going back is a restart.
		{"nemo2-restart", nemo2(10, 9.0) + nemo2(20, 2.0) + nemo2(30, 2.0) + nemo2(20, 7.0) + nemo2(30, 2.2) + nemo2(40, 2.2), 2.1, 4, "restart at line 4"},
		{"megatron-restart", meg(10, 9000, 0, 0) + meg(20, 2000, 0, 0) + meg(30, 2000, 0, 0) + meg(40, 2000, 0, 0) + meg(50, 2000, 0, 0) +
			"[before the start of training step] datetime: 2026-01-01 11:00:00\n" +
			meg(60, 8000, 0, 0) + meg(70, 2100, 0, 0) + meg(80, 2100, 0, 0) + meg(90, 2100, 0, 0) + meg(100, 2100, 0, 0), 2.05, 8, "restart at line 6"},
		{"titan-restart", titan(1, "12.0000", "1,000") + titan(10, "8.0000", "8,192") + titan(20, "7.5000", "8,192") + titan(30, "7.0000", "8,192") +
			titan(21, "7.4000", "1,000") + titan(30, "7.0000", "4,096") + titan(40, "6.9000", "4,096"), 4, 5, "restart at line 5"},
	} {
		r, err := calibrate.ParseTrainingLog(tt.name+".log", []byte(tt.log), lay)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if math.Abs(r.StepS-tt.want) > 1e-9*tt.want || r.Steps != tt.steps {
			t.Errorf("%s: step %v s over %d steps, want %v s over %d", tt.name, r.StepS, r.Steps, tt.want, tt.steps)
		}
		if tt.note != "" && !strings.Contains(strings.Join(r.Notes, "\n"), tt.note) {
			t.Errorf("%s: notes %q lack %q", tt.name, r.Notes, tt.note)
		}
	}
	// Every rank's lines, as torchrun's --tee prefixes them ("[rank1]:"): each
	// rank's counter is its own, so the ranks repeating a step are no restart.
	var ranks strings.Builder
	for _, step := range []int{1, 10, 20, 30} {
		tps := "8,192"
		if step == 1 {
			tps = "1,000"
		}
		for rank := range 2 {
			ranks.WriteString(strings.Replace(titan(step, "7.0000", tps), "[rank0]:", fmt.Sprintf("[rank%d]:", rank), 1))
		}
	}
	r, err := calibrate.ParseTrainingLog("ranks.log", []byte(ranks.String()), lay)
	if err != nil || r.StepS != 4 || strings.Contains(strings.Join(r.Notes, "\n"), "restart") {
		t.Errorf("every rank's lines: %v s, notes %q, %v", r.StepS, r.Notes, err)
	}

	// Every logged step set aside: nothing to fit, said with the file.
	_, err = calibrate.ParseTrainingLog("allnan.log", []byte(titan(1, "nan", "1,000")+titan(10, "nan", "8,192")), lay)
	if err == nil || !strings.Contains(err.Error(), "allnan.log: every logged step") {
		t.Errorf("all steps NaN: got %v", err)
	}
}

// A layout value the file's reader does not use is refused, not dropped: a
// training log's fields given for nccl-tests output, nccl-tests' for a training
// log; a layout entry for a file that is not among the inputs is named.
func TestLayoutValuesUsedOrRefused(t *testing.T) {
	nccl := read(t, "testdata/a100-roce/oci-14340fb-readme.txt")
	log := []byte(" iteration 10/ 1000 | elapsed time per iteration (ms): 2000.0 |\n")
	run := calibrate.RunLayout{Model: "llama3-8b", GPUs: 16, MicroBatch: 2, GlobalBatch: 64, SeqLen: 8192}
	for _, tt := range []struct {
		name string
		data []byte
		fl   calibrate.FileLayout
		want string
	}{
		{"ar.txt", nccl, calibrate.FileLayout{Op: "allreduce", RunLayout: calibrate.RunLayout{Model: "llama3-8b", TP: 2}}, "ar.txt: layout model, tp: fields of a training log's layout, but the file is nccl-tests output"},
		{"run.log", log, calibrate.FileLayout{Op: "allreduce", Algo: "ring", RunLayout: run}, "run.log: layout op, algo: fields of an nccl-tests output's layout, but the file is a training log"},
	} {
		var in calibrate.Inputs
		err := in.Read(tt.name, tt.data, tt.fl)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
	ls := calibrate.Layouts{"ar.txt": {Op: "allreduce"}, "ar-2n.txt": {Op: "allreduce"}}
	if u := ls.Unused([]string{"/data/ar.txt"}); len(u) != 1 || u[0] != "ar-2n.txt" {
		t.Errorf("a layout for a file not among the inputs: got %q", u)
	}
	if u := ls.Unused([]string{"/data/ar.txt", "ar-2n.txt"}); len(u) != 0 {
		t.Errorf("every layout used: %q", u)
	}
}

// Constants the inputs do not determine are named with what would determine
// them, not kept at the base's value in silence: 2-node all-reduce rows of
// 8 MiB and more (ncclt290-ring.txt) say nothing of the NIC latency (messages
// under 1 MiB), of the scale-up constants (single-node sweeps) or of the
// compute scale (training logs).
func TestCalibrateNamesWhatItCannotFit(t *testing.T) {
	spec, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	var in calibrate.Inputs
	if err := in.Read("ring.txt", read(t, "testdata/h100-ib-ndr/ncclt290-ring.txt"), calibrate.FileLayout{Op: "allreduce", Algo: "ring"}); err != nil {
		t.Fatal(err)
	}
	rep, err := calibrate.Calibrate("dgx-h100", spec, in)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rep.Undetermined, "\n")
	for _, want := range []string{
		"NIC latency (nics.latency_us) kept at the base's",
		"no multi-node sweep with messages under 1 MiB",
		"scale-up hop latency (intra.latency_us) kept at the base's",
		"compute scale (gpu.peak_tflops) kept at the base's",
		"no training log",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("undetermined lacks %q:\n%s", want, got)
		}
	}
	for _, kn := range rep.Determined {
		if strings.Contains(got, kn.Field) {
			t.Errorf("%s is both determined and not:\n%s", kn.Field, got)
		}
	}
}

// nccl-tests and rccl-tests run with -C 1 (report_cputime) print the host's
// time to enqueue the calls under a "cputime" column instead of the
// collective's (rccl-tests src/common.cu at ae3e635: timeStr is "cputime",
// timeUsec the CPU seconds taken before completeColl): not the fabric's time, so
// refused at the column header.
func TestParseRefusesCPUTime(t *testing.T) {
	out := strings.Replace(table8(20), "root     time   algbw   busbw #wrong     time", "root  cputime   algbw   busbw #wrong  cputime", 1)
	_, err := calibrate.ParseNCCLTests("cpu.txt", []byte(out), calibrate.Layout{})
	if err == nil || !strings.Contains(err.Error(), "cpu.txt:15: cputime") {
		t.Errorf("got %v, want the cputime column refused at line 15", err)
	}
}

// Messages other processes print into the same output are not the table's and
// do not stop it: Open MPI's aggregated help ("[node02:12345] 7 more processes
// have sent help message …", Open MPI orte/util/show_help.c) and UCX's warnings
// ("[1704067200.123456] [node02:12345:0]  ucp_context.c:… UCX  WARN …") between
// rows; and pdsh or clush, which prefix each line with its host ("node01: ").
func TestParseLauncherMessagesInTable(t *testing.T) {
	base := table8(20)
	mid := strings.Index(base, "     4194304")
	for name, out := range map[string]string{
		"ompi.txt": base[:mid] + "[node02:12345] 7 more processes have sent help message help-mpi-btl-openib.txt / no device params found\n" +
			"[node02:12345] Set MCA parameter \"orte_base_help_aggregate\" to 0 to see all help / error messages\n" + base[mid:],
		"ucx.txt":  base[:mid] + "[1704067200.123456] [node02:12345:0]  ucp_context.c:1176 UCX  WARN  network device 'mlx5_0:1' is not available, please use one or more of: 'eth0'(tcp)\n" + base[mid:],
		"pdsh.txt": "node01: " + strings.ReplaceAll(strings.TrimSuffix(base, "\n"), "\n", "\nnode01: ") + "\n",
	} {
		s, err := calibrate.ParseNCCLTests(name, []byte(out), calibrate.Layout{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(s.Points) != 7 || s.Nodes != 1 || s.GPUsPerNode != 8 {
			t.Errorf("%s: %d points on %d × %d, want 7 on 1 × 8", name, len(s.Points), s.Nodes, s.GPUsPerNode)
		}
	}
}

// rccl-tests prints nccl-tests' table with its own header: a version line, no
// Group in the device lines, PCI addresses with a function, OK after the
// average (ROCm/rccl-tests src/common.cu at ae3e635).
func TestParseRCCLTests(t *testing.T) {
	out := strings.Replace(table8(20), "#\n# Using devices\n", "#\nrccl-tests: Version develop:ae3e635\n# Using devices\n", 1)
	out = strings.ReplaceAll(out, " Group  0 Pid", " Pid")
	out = strings.ReplaceAll(out, "[0x18]", "[0000:05:00.0]")
	out = strings.ReplaceAll(out, "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X")
	out = strings.Replace(out, "# Out of bounds values : 0 OK", "# Errors with asterisks indicate errors that have exceeded the maximum threshold.\n# Out of bounds values : 0 OK", 1)
	out = strings.Replace(out, "# Avg bus bandwidth    : 100", "# Avg bus bandwidth    : 100 OK", 1)
	s, err := calibrate.ParseNCCLTests("rccl.txt", []byte(out), calibrate.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 7 || s.Nodes != 1 || s.GPUsPerNode != 8 || s.Device != "AMD Instinct MI300X" || len(s.Notes) != 0 {
		t.Errorf("%d points on %d × %d of %q, notes %q", len(s.Points), s.Nodes, s.GPUsPerNode, s.Device, s.Notes)
	}
}

// -d all and -o all time every size once per data type and reduction: the rows
// are read together, and the report says which (nccl-tests common.cu, run():
// the loops over types and ops around the size sweep).
func TestParseSeveralTypesAndOps(t *testing.T) {
	base := table8(20)
	rows := base[strings.Index(base, "     1048576"):strings.Index(base, "# Out of bounds")]
	out := strings.Replace(base, "# Out of bounds", strings.ReplaceAll(rows, "float     sum", " half     sum")+strings.ReplaceAll(rows, "float     sum", "float    prod")+"# Out of bounds", 1)
	s, err := calibrate.ParseNCCLTests("dall.txt", []byte(out), calibrate.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 21 || !strings.Contains(strings.Join(s.Notes, "\n"), "rows of 2 data types (float, half) and 2 reductions (sum, prod), read together") {
		t.Errorf("%d points, notes %q", len(s.Points), s.Notes)
	}
}

// nccl-tests 2.18.5 and later can suffix each row with a timestamp (-S 1,
// "%Y-%m-%d %H:%M:%S"), and 2.19 can print per-iteration columns after each
// #wrong (-I 1: i_min, i_max, i_p99, i_cv%) (NVIDIA/nccl-tests src/util.cu at
// a0b82b2, writeResultHeader, writeBenchmarkLineBody, writePerIterReport): the
// rows are read, with their times.
func TestParseTimestampsAndPerIterationColumns(t *testing.T) {
	base := table8(20)
	var ts, iter strings.Builder
	for _, l := range strings.SplitAfter(base, "\n") {
		body := strings.TrimSuffix(l, "\n")
		f := strings.Fields(body)
		switch {
		case strings.Contains(body, "#wrong"):
			ts.WriteString(body + "          timestamp\n")
			iter.WriteString(strings.ReplaceAll(body, "#wrong", "#wrong    i_min    i_max    i_p99    i_cv%") + "\n")
		case len(f) == 13:
			ts.WriteString(body + "  2025-10-28 12:34:56\n")
			iter.WriteString(strings.Join(append(append(append(append([]string{}, f[:9]...), f[5]+"0", f[5]+"9", f[5]+"8", "1.20"), f[9:]...), f[9]+"0", f[9]+"9", f[9]+"8", "1.10"), "  ") + "\n")
		default:
			ts.WriteString(l)
			iter.WriteString(l)
		}
	}
	for name, out := range map[string]string{"ts.txt": ts.String(), "iter.txt": iter.String()} {
		s, err := calibrate.ParseNCCLTests(name, []byte(out), calibrate.Layout{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(s.Points) != 7 || s.Points[2].Bytes != 4<<20 || s.Points[2].TimeUs != 80 || s.Points[2].InPlaceUs != 80 {
			t.Errorf("%s: %d points, the 4 MiB one %+v", name, len(s.Points), s.Points[min(2, len(s.Points)-1)])
		}
	}
}

// The torchao log is cut to its first three steps and inputs over
// fuzzMaxInput are passed over, for the engine's minimisation
// (FuzzParseNCCLTests says why).
func FuzzParseTrainingLog(f *testing.F) {
	for _, p := range []string{"testdata/trainlogs/torchao-pretraining-bf16.log"} {
		b := []byte(strings.Join(strings.SplitAfter(string(read(f, p)), "\n")[:3], ""))
		if len(b) > fuzzMaxInput {
			f.Fatalf("%s: the seed is %d bytes", p, len(b))
		}
		f.Add(b)
	}
	f.Add([]byte(" iteration       10/    1000 | elapsed time per iteration (ms): 9000.0 | number of skipped iterations:   0 |\n[before the start of training step] datetime: x\n iteration       10/    1000 | elapsed time per iteration (ms): 2000.0 | lm loss: NAN |\n"))
	f.Add([]byte("Epoch 0: | 10/1000 [00:30<50:00, train_step_timing in s=5.00]\rEpoch 0: | 10/1000 [00:30<50:00, train_step_timing in s=5.00]\n"))
	f.Add([]byte("\x1b[31mstep:  1  \x1b[32mloss:     nan  \x1b[34mtps: 1,000\x1b[39m\n\x1b[33mvalidate step: 1  \x1b[34mtps: 9\n"))
	lay := calibrate.RunLayout{Model: "llama3-8b", GPUs: 8, MicroBatch: 1, GlobalBatch: 8, SeqLen: 8192}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMaxInput {
			return
		}
		r, err := checkReader(t, "fuzz.log", func() (calibrate.Run, error) { return calibrate.ParseTrainingLog("fuzz.log", data, lay) })
		if err == nil && (!(r.StepS > 0) || math.IsInf(r.StepS, 0) || r.Steps < 1) {
			t.Fatalf("accepted a log without a step time: %v s over %d steps", r.StepS, r.Steps)
		}
		// An implied peak lies within its bounds, all positive and finite.
		if p := r.Peak; err == nil && p.Line > 0 && !(0 < p.Lo && p.Lo <= p.TFLOPS && p.TFLOPS <= p.Hi && !math.IsInf(p.Hi, 0)) {
			t.Fatalf("implied peak %+v", p)
		}
	})
}

// The test's name is the binary's (program_invocation_short_name, nccl-tests
// dafb704): a build with NAME_SUFFIX=_mpi runs all_reduce_perf_mpi (src/Makefile),
// which is all_reduce_perf; alltoallv_perf (2.19) is a test of its own, not
// alltoall_perf, and is refused naming it.
func TestParseTestNames(t *testing.T) {
	s, err := calibrate.ParseNCCLTests("mpi.txt", []byte(strings.Replace(table8(20), "all_reduce_perf", "all_reduce_perf_mpi", 1)), calibrate.Layout{})
	if err != nil || s.Op.String() != "allreduce" || s.Bench != "all_reduce_perf" {
		t.Errorf("all_reduce_perf_mpi: %v %q, %v", s.Op, s.Bench, err)
	}
	_, err = calibrate.ParseNCCLTests("v.txt", []byte(strings.Replace(table8(20), "all_reduce_perf", "alltoallv_perf", 1)), calibrate.Layout{Op: "alltoall"})
	if err == nil || !strings.Contains(err.Error(), "alltoallv_perf") {
		t.Errorf("alltoallv_perf with op alltoall: %v", err)
	}
}

// nccl-tests 2.18.5 and later can write a JSON report (-J; src/util.cu,
// "version", "nccl_version", "results"): it is not measurement rows, and is
// refused naming what to give instead.
func TestReadRefusesNCCLTestsJSON(t *testing.T) {
	for name, data := range map[string]string{
		"one-line.json": `{"version":1,"start_time":"2025-10-28 12:00:00","args":"-b 8 -e 1G","nccl_version":22703,"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"-1","out_of_place":{"time":20.1,"alg_bw":0,"bus_bw":0,"nwrong":0}}]}` + "\n",
		"pretty.json":   "{\n  \"version\": 1,\n  \"nccl_version\": 22703,\n  \"results\": []\n}\n",
	} {
		var in calibrate.Inputs
		err := in.Read(name, []byte(data), calibrate.FileLayout{})
		if err == nil || !strings.Contains(err.Error(), name+": nccl-tests' JSON report (-J)") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A sweep from -b 0 with a step in bytes (-i) starts with a row of size 0: it
// times the call's fixed cost and moves no data, so it is set aside and said;
// the file's other rows are read.
func TestParseSizeZeroRow(t *testing.T) {
	base := table8(20)
	i := strings.Index(base, "     1048576")
	out := base[:i] + "           0             0     float     sum      -1     5.20    0.00    0.00      0     5.10    0.00    0.00      0\n" + base[i:]
	s, err := calibrate.ParseNCCLTests("zero.txt", []byte(out), calibrate.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 7 || !strings.Contains(strings.Join(s.Notes, "\n"), "line 17: size 0 moves no data; set aside") {
		t.Errorf("%d points, notes %q", len(s.Points), s.Notes)
	}
}

// Files saved with CRLF line endings read as the LF ones do.
func TestCRLF(t *testing.T) {
	s, err := calibrate.ParseNCCLTests("crlf.txt", []byte(strings.ReplaceAll(table8(20), "\n", "\r\n")), calibrate.Layout{})
	if err != nil || len(s.Points) != 7 || s.GPUsPerNode != 8 || len(s.Notes) != 0 {
		t.Errorf("nccl-tests: %d points on %d GPUs per node, notes %q, %v", len(s.Points), s.GPUsPerNode, s.Notes, err)
	}
	log := " iteration       10/    1000 | elapsed time per iteration (ms): 9000.0 |\r\n iteration       20/    1000 | elapsed time per iteration (ms): 2000.0 |\r\n iteration       30/    1000 | elapsed time per iteration (ms): 2000.0 |\r\n"
	r, err := calibrate.ParseTrainingLog("crlf.log", []byte(log), calibrate.RunLayout{Model: "llama3-8b", GPUs: 8, MicroBatch: 1, GlobalBatch: 8, SeqLen: 8192})
	if err != nil || r.StepS != 2 || r.Steps != 2 {
		t.Errorf("training log: %v s over %d, %v", r.StepS, r.Steps, err)
	}
}

// Outputs copied from a web page or a notebook often lose the comment mark of
// the column header (dstack's and the cluster toolkit's examples print
// "        size         count      type …", testdata/h100-ib): the header still
// says what the columns are, so it is read as with the mark — cputime columns
// refused, a "#wrong" count in %g form a count, the -I 1 columns read.
func TestParseColumnHeaderWithoutCommentMark(t *testing.T) {
	bare := func(out string) string {
		var b strings.Builder
		for _, l := range strings.SplitAfter(out, "\n") {
			if strings.Contains(l, "algbw") || strings.Contains(l, "(elements)") || strings.Contains(l, "out-of-place") {
				l = " " + strings.TrimPrefix(l, "#")
			}
			b.WriteString(l)
		}
		return b.String()
	}
	if s, err := calibrate.ParseNCCLTests("bare.txt", []byte(bare(table8(20))), calibrate.Layout{}); err != nil || len(s.Points) != 7 {
		t.Fatalf("the clean table without comment marks: %v", err)
	}
	cpu := strings.Replace(table8(20), "root     time   algbw   busbw #wrong     time", "root  cputime   algbw   busbw #wrong  cputime", 1)
	if _, err := calibrate.ParseNCCLTests("cpu.txt", []byte(bare(cpu)), calibrate.Layout{}); err == nil || !strings.Contains(err.Error(), "cpu.txt:15: cputime") {
		t.Errorf("cputime columns without the comment mark: got %v, want them refused at line 15", err)
	}
	if _, err := calibrate.ParseNCCLTests("million.txt", []byte(bare(table8(20, "1e+06"))), calibrate.Layout{}); err == nil || !strings.Contains(err.Error(), "million.txt:17: #wrong 1e+06") {
		t.Errorf("a million wrong elements under a header without the comment mark: got %v, want line 17 refused", err)
	}
	var iter strings.Builder
	for _, l := range strings.SplitAfter(bare(table8(20)), "\n") {
		body := strings.TrimSuffix(l, "\n")
		f := strings.Fields(body)
		switch {
		case strings.Contains(body, "#wrong"):
			iter.WriteString(strings.ReplaceAll(body, "#wrong", "#wrong    i_min    i_max    i_p99    i_cv%") + "\n")
		case len(f) == 13 && !strings.HasPrefix(body, "#"):
			iter.WriteString(strings.Join(append(append(append(append([]string{}, f[:9]...), f[5]+"0", f[5]+"9", f[5]+"8", "1.20"), f[9:]...), f[9]+"0", f[9]+"9", f[9]+"8", "1.10"), "  ") + "\n")
		default:
			iter.WriteString(l)
		}
	}
	if s, err := calibrate.ParseNCCLTests("iter.txt", []byte(iter.String()), calibrate.Layout{}); err != nil || len(s.Points) != 7 || s.Points[2].TimeUs != 80 {
		t.Errorf("per-iteration columns under a header without the comment mark: %v", err)
	}
}
