package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stepcost/stepcost/estimator/step"
)

// widest is the longest line of s, in runes, and that line.
func widest(s string) (int, string) {
	n, line := 0, ""
	for _, l := range strings.Split(s, "\n") {
		if w := utf8.RuneCountInString(l); w > n {
			n, line = w, l
		}
	}
	return n, line
}

// Tables and notes fit the width: the terminal's, or $COLUMNS, or defaultColumns
// when standard output is not a terminal; --wide gives every column at full width.
func TestOutputFitsTheWidth(t *testing.T) {
	estimate := []string{"estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "256", "--tp", "8", "--pp", "4", "--mbs", "1", "--gbs", "1024", "--seq", "8192"}
	plan := []string{"plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "256", "--gbs", "1024", "--seq", "8192",
		"--objective", "cost", "--price", "2", "--tokens", "1e12", "--top", "5"}
	t.Setenv("COLUMNS", "")
	for _, args := range [][]string{estimate, plan, {"collective", "--cluster", "dgx-h100", "--nodes", "4", "--size", "1GiB", "--steps"}} {
		code, out, errOut := run(args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, errOut)
		}
		if n, line := widest(out); n > defaultColumns {
			t.Errorf("%s: a line of %d columns, over %d:\n%s", args[0], n, defaultColumns, line)
		}
		// --wide: as wide as the content.
		_, wide, _ := run(append(args, "--wide")...)
		if n, _ := widest(wide); n <= defaultColumns {
			t.Errorf("%s --wide: %d columns at most", args[0], n)
		}
	}
	// $COLUMNS: plan leaves out its least useful columns, says so, and keeps the rest.
	t.Setenv("COLUMNS", "100")
	_, out, _ := run(plan...)
	if n, line := widest(out); n > 100 {
		t.Errorf("plan with COLUMNS=100: %d columns:\n%s", n, line)
	}
	if !strings.Contains(out, "(left out to fit 100 columns: contention, optimizer, compute, bubble") || strings.Contains(out, " compute ") {
		t.Errorf("plan with COLUMNS=100: no note of the columns left out, or compute still there:\n%s", out)
	}
	for _, head := range []string{"gpus", "layout", "step", "memory GB", "MFU", "duration", "cost"} {
		if !strings.Contains(out, head) {
			t.Errorf("plan with COLUMNS=100 lost %q:\n%s", head, out)
		}
	}
	_, wide, _ := run(append(plan, "--wide")...)
	if !strings.Contains(wide, "compute  exposed comm") || strings.Contains(wide, "left out") {
		t.Errorf("plan --wide lacks columns:\n%s", wide)
	}
	// JSON is never cut.
	_, js, _ := run(append(estimate, "--json")...)
	_, jsWide, _ := run(append(estimate, "--json", "--wide")...)
	if js != jsWide {
		t.Error("--json output depends on the width")
	}
}

// A table leaves out its optional columns first, then wraps its text column.
func TestTableFit(t *testing.T) {
	tb := table{head: []string{"name", "a", "b", "note"}, optional: []string{"b"}, wrap: "note"}
	tb.add("x", "1", "22", "one two three four five six seven eight nine ten eleven twelve")
	var b bytes.Buffer
	tb.write(&output{Writer: &b, cols: 40})
	want := "name  a  note\n" +
		"x     1  one two three four five six\n" +
		"         seven eight nine ten eleven\n" +
		"         twelve\n" +
		"(left out to fit 40 columns: b; --wide\n" +
		"shows every column)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	tb.write(&output{Writer: &b}) // --wide
	if !strings.Contains(b.String(), " 22 ") || !strings.HasSuffix(b.String(), "eleven twelve\n") || strings.Count(b.String(), "\n") != 2 {
		t.Errorf("wide:\n%s", b.String())
	}
}

// A cell of several lines (a refused config's errors, one a field) keeps each
// line in its column, under the row's first line, wide or wrapped: a line break
// printed as it is would start the next line at the table's left edge, where it
// reads as a row of its own.
func TestTableCellOfSeveralLines(t *testing.T) {
	tb := table{head: []string{"rank", "layout", "note"}, wrap: "note"}
	tb.add("-", "tp3\npp2", "layout.tp: must divide 64 heads\nlayout.tp: must divide 28672")
	tb.add("1", "tp8", "")
	var b bytes.Buffer
	tb.write(&output{Writer: &b}) // --wide
	want := "rank  layout                             note\n" +
		"-        tp3  layout.tp: must divide 64 heads\n" +
		"         pp2     layout.tp: must divide 28672\n" +
		"1        tp8\n"
	if b.String() != want {
		t.Errorf("wide: got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	tb.write(&output{Writer: &b, cols: 40})
	want = "rank  layout  note\n" +
		"-        tp3  layout.tp: must divide 64\n" +
		"         pp2  heads\n" +
		"              layout.tp: must divide\n" +
		"              28672\n" +
		"1        tp8\n"
	if b.String() != want {
		t.Errorf("40 columns: got\n%s\nwant\n%s", b.String(), want)
	}
}

// /dev/null is a character device but not a terminal: no progress frames there.
func TestDevNullIsNotATerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("/dev/null taken for a terminal")
	}
	if o := newOutput(f, false); o.cols != defaultColumns && os.Getenv("COLUMNS") == "" {
		t.Errorf("/dev/null: %d columns", o.cols)
	}
}

// A note wraps at spaces, its lines after the first indented under its text.
func TestPrintWrapped(t *testing.T) {
	var b bytes.Buffer
	printWrapped(&output{Writer: &b, cols: 30}, "  - ", "attention core at 22% of the 16-bit peak for FlashAttention-2-class kernels", true)
	want := "  - attention core at 22% of\n" +
		"    the 16-bit peak for\n" +
		"    FlashAttention-2-class\n" +
		"    kernels\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	printWrapped(&output{Writer: &b}, "  - ", "no limit with --wide", true)
	if b.String() != "  - no limit with --wide\n" {
		t.Errorf("wide: %q", b.String())
	}
}

// An uneven layer split — the cost-balanced one a plan or an estimate chose, or
// the one given — is part of the layout people read: DeepSeek-V3's 61 layers on
// 16 stages run 4 on fifteen and 1 on the last; an even split says nothing new.
func TestLayerSplitShown(t *testing.T) {
	l := step.Layout{TP: 2, PP: 16, DP: 64, ZeRO: 1, MicroBatch: 1, Recompute: step.RecomputeNone, Schedule: step.DualPipe,
		LayerSplit: []int{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1}}
	if got := layoutString(l); !strings.HasSuffix(got, " layers 4×15,1") {
		t.Errorf("uneven split: %q, want it to end in layers 4×15,1", got)
	}
	l.LayerSplit = []int{3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3}
	if got := layoutString(l); !strings.HasSuffix(got, " layers 3,4×13,3×2") {
		t.Errorf("uneven split: %q, want it to end in layers 3,4×13,3×2", got)
	}
	l.LayerSplit = []int{4, 4, 4, 4}
	l.PP = 4
	if got := layoutString(l); strings.Contains(got, "layers") {
		t.Errorf("even split: %q names it", got)
	}
	code, out, errOut := run("estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "24", "--tp", "8", "--pp", "3", "--gbs", "48", "--seq", "4096")
	if code != exitOK || !strings.Contains(out, "layers per stage 11×2, 10") {
		t.Errorf("estimate of 32 layers on pp 3: exit %d, %s%s; want the split 11×2, 10 in its title", code, out, errOut)
	}
}

// A wrapped paragraph never breaks between a pruning reason and its count: the
// search line read "…, dominated_bound" at one line's end and "716, memory …" at
// the next's.
func TestWrapKeepsCountsWithTheirReason(t *testing.T) {
	var b bytes.Buffer
	line := "searched 1158453 layouts over 1 job size(s): 11961 estimated, 11961 feasible; pruned: " +
		prunedSummary(map[string]int{"divisibility": 1, "dominated_bound": 716, "memory": 10794, "memory_lower_bound": 283789, "time_lower_bound": 851193})
	for cols := 40; cols <= 130; cols++ {
		b.Reset()
		printWrapped(&output{Writer: &b, cols: cols}, "", line, false)
		out := b.String()
		if strings.ContainsRune(out, '\u00a0') || strings.Join(strings.Fields(out), " ") != strings.ReplaceAll(line, "\u00a0", " ") {
			t.Fatalf("%d columns: the text changed:\n%s", cols, out)
		}
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			switch f := strings.Fields(l); f[len(f)-1] {
			case "divisibility", "dominated_bound", "memory", "memory_lower_bound", "time_lower_bound":
				t.Errorf("%d columns: a line ends with a reason, its count on the next:\n%s", cols, out)
			}
		}
	}
}
