package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A group of one row NCCL ran with another algorithm than the model picks is said
// as one row, its size and errors: the report said "1 row(s) 256 KiB–256 KiB
// measured as … (+2 % … +2 %)", a range from the row to itself. Groups of several
// rows keep their first … last range.
func TestCalibrateOneMismatchedRowIsNotARange(t *testing.T) {
	f := filepath.Join("..", "..", "..", "estimator", "calibrate", "testdata", "h100-ib", "dstack-nebius-allreduce.txt")
	code, out, errOut := run("calibrate", "--cluster", "dgx-h100", "--nodes", "2", "--gpus-per-node", "8", f)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "rows NCCL ran with another algorithm") {
		t.Fatalf("no row of this sweep runs another algorithm than the model picks (pick a sweep that has one):\n%s", out)
	}
	if !regexp.MustCompile(`: 1 row of \S+ \S+ measured as \S+ \([+-]\d+ %\), the model picks \S+ \([+-]\d+ %\)`).MatchString(flat) {
		t.Errorf("no one-row group said as one row:\n%s", out)
	}
	for _, m := range regexp.MustCompile(`(\d+ \S*B)–(\d+ \S*B) measured`).FindAllStringSubmatch(flat, -1) {
		if m[1] == m[2] {
			t.Errorf("a range from a row to itself: %q in\n%s", m[0], out)
		}
	}
	if strings.Contains(flat, "row(s)") || strings.Contains(flat, " 1 rows ") {
		t.Errorf("row(s) or 1 rows in:\n%s", out)
	}
}
