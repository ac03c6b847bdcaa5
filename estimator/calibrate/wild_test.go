package calibrate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
)

// table8 is an all_reduce_perf run of one process driving 8 GPUs (-g 8) as
// nccl-tests 2.10 and later print it: the header, the device lines, the
// out-of-place and in-place columns with #wrong, and the rows sized 1–64 MiB at
// the given time each; wrong[i] is row i's out-of-place #wrong.
func table8(timeUs float64, wrong ...string) string {
	var b strings.Builder
	b.WriteString("# nThread 1 nGpus 8 minBytes 1048576 maxBytes 67108864 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n")
	for r := range 8 {
		fmt.Fprintf(&b, "#  Rank %2d Group  0 Pid   4242 on     node01 device %2d [0x%02x] NVIDIA H100 80GB HBM3\n", r, r, 0x18+r)
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
		fmt.Fprintf(&b, "%12d  %12d     float     sum      -1  %7.1f  %6.2f  %6.2f  %5s  %7.1f  %6.2f  %6.2f      0\n", size, size/4, t, alg, alg*1.75, w, t, alg, alg*1.75)
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
		// The 4 MiB row is on line 18, the first (1 MiB) on 16.
		{"oop.txt", table8(20, "", "", "17"), "oop.txt:18: #wrong 17"},
		{"inplace.txt", strings.Replace(table8(20), "      0\n", "   1024\n", 1), "inplace.txt:16: in-place #wrong 1024"},
		{"failed.txt", strings.Replace(table8(20), "Out of bounds values : 0 OK", "Out of bounds values : 3 FAILED", 1), "failed.txt:23: Out of bounds values : 3 FAILED"},
	} {
		_, err := calibrate.ParseNCCLTests(tt.name, []byte(tt.out), calibrate.Layout{Op: "allreduce"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}
