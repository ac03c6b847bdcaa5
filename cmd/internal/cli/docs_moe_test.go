package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// planRow is one row of plan --wide's table.
type planRow struct {
	layout                map[string]string // "tp" → "1", "pp" → "2", …; a word without a number → ""
	step, exposed, bubble float64           // seconds
	mfu                   float64           // percent
	interleaved, dualpipe bool
}

// planRows reads the ranked rows of plan --wide's output (the table before the
// Pareto front).
func planRows(t *testing.T, out string) []planRow {
	t.Helper()
	top, _, _ := strings.Cut(out, "Pareto front")
	dur := func(s string) float64 {
		v, unit, _ := strings.Cut(strings.TrimSpace(s), " ")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%q: not a duration", s)
		}
		switch unit {
		case "s":
			return f
		case "ms":
			return f / 1e3
		case "µs":
			return f / 1e6
		}
		t.Fatalf("%q: unit %q", s, unit)
		return 0
	}
	var rows []planRow
	sep := regexp.MustCompile(`\s{2,}`)
	for _, l := range strings.Split(top, "\n") {
		c := sep.Split(strings.TrimSpace(l), -1)
		if len(c) != 12 || c[0] == "#" {
			continue
		}
		r := planRow{layout: map[string]string{}, step: dur(c[4]), exposed: dur(c[6]), bubble: dur(c[7])}
		for _, w := range strings.Fields(c[2]) {
			if m := regexp.MustCompile(`^([a-z]+)(\d+)$`).FindStringSubmatch(w); m != nil {
				r.layout[m[1]] = m[2]
			} else {
				r.layout[w] = ""
			}
			r.interleaved = r.interleaved || strings.HasPrefix(w, "interleaved")
			r.dualpipe = r.dualpipe || w == "dualpipe"
		}
		r.mfu, _ = strconv.ParseFloat(strings.TrimSuffix(c[11], "%"), 64)
		rows = append(rows, r)
	}
	return rows
}

// spaced writes n with a space between groups of three digits, as the docs do.
func spaced(n string) string {
	for i := len(n) - 3; i > 0; i -= 3 {
		n = n[:i] + " " + n[i:]
	}
	return n
}

// docs/planner.md's MoE example ("A MoE model": Qwen3-30B-A3B on 64 H100) states
// what the plan command it quotes answers: the layouts searched and estimated,
// the best three plans' layouts, step times, MFU, exposed communication and bubble,
// the best two with the EP overlap off and the best under hai-llm. Each sentence is
// written here from the command's output and must be in the doc, so a change that
// moves a price or the search fails until the doc is updated (the other planner.md
// figures: TestDocumentedQuotesAreWhatIsPrinted).
func TestPlannerMoEExampleFigures(t *testing.T) {
	data, err := os.ReadFile("../../../docs/planner.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := oneLine(string(data))
	_, para, ok := strings.Cut(doc, "**A MoE model.**")
	if !ok {
		t.Fatal("docs/planner.md has no MoE example (**A MoE model.**)")
	}
	para, _, _ = strings.Cut(para, "## ")
	m := regexp.MustCompile("\\(`(stepcost plan [^`]*)`\\)").FindStringSubmatch(para)
	if m == nil {
		t.Fatal("the MoE example quotes no plan command")
	}
	base := shellWords(m[1])[1:]
	run := func(extra ...string) (string, []planRow) {
		args := append(append(append([]string{}, base...), "--wide"), extra...)
		var stdout, stderr bytes.Buffer
		if code := Run(context.Background(), args, &stdout, &stderr); code != exitOK {
			t.Fatalf("%q exits %d: %s", args, code, stderr.String())
		}
		rows := planRows(t, stdout.String())
		if len(rows) < 3 {
			t.Fatalf("%q: %d plans read:\n%s", args, len(rows), stdout.String())
		}
		return stdout.String(), rows
	}
	ms := func(s float64) string { return fmt.Sprintf("%.1f ms", s*1e3) }
	want := func(text string) {
		t.Helper()
		if !strings.Contains(para, text) {
			t.Errorf("docs/planner.md's MoE example does not state %q, what %q prints", text, m[1])
		}
	}

	out, rows := run()
	stats := regexp.MustCompile(`searched (\d+) layouts .*: (\d+) estimated`).FindStringSubmatch(out)
	if stats == nil {
		t.Fatalf("no search statistics:\n%s", out)
	}
	want(fmt.Sprintf("of %s layouts, %s are estimated", spaced(stats[1]), spaced(stats[2])))
	best, second, third := rows[0], rows[1], rows[2]
	if best.layout["pp"] != "1" || best.layout["tp"] != "1" {
		t.Errorf("the best plan is not TP 1 without a pipeline: %v", best.layout)
	}
	if _, on := best.layout["ep-overlap"]; !on {
		t.Errorf("the best plan does not overlap the expert all-to-alls: %v", best.layout)
	}
	want(fmt.Sprintf("the best has no pipeline: %s-way ZeRO-%s data parallelism and EP %s with the expert all-to-alls overlapped (`ep-overlap`) — %.3f s a step at %.1f %% MFU, %s of it exposed communication",
		best.layout["dp"], best.layout["z"], best.layout["ep"], best.step, best.mfu, ms(best.exposed)))
	if _, sp := second.layout["sp"]; !sp || second.layout["ep"] != best.layout["ep"] || second.layout["pp"] != "1" {
		t.Errorf("the second plan is not the best's with TP and SP: %v", second.layout)
	}
	want(fmt.Sprintf("ahead of the same with TP %s and sequence parallelism (%.3f s)", second.layout["tp"], second.step))
	if !third.interleaved || third.layout["ep"] != best.layout["ep"] {
		t.Errorf("the third plan is not interleaved stages with the best's EP: %v", third.layout)
	}
	want(fmt.Sprintf("and of %s interleaved pipeline stages with the same EP (%.3f s, %s exposed, %s of bubble)",
		words[third.layout["pp"]], third.step, ms(third.exposed), ms(third.bubble)))

	_, off := run("--overlap-ep", "off")
	if off[0].layout["pp"] != "1" || off[0].layout["dp"] != best.layout["dp"] || !off[1].interleaved {
		t.Errorf("with the overlap off, the best two are not data parallelism then interleaved stages: %v, %v", off[0].layout, off[1].layout)
	}
	want(fmt.Sprintf("with the overlap off (`--overlap-ep off`) the best is the same data parallelism with EP %s (%.3f s, %s exposed), then %s interleaved stages with EP %s (%.3f s)",
		off[0].layout["ep"], off[0].step, ms(off[0].exposed), words[off[1].layout["pp"]], off[1].layout["ep"], off[1].step))

	_, hai := run("--framework", "hai-llm")
	if !hai[0].dualpipe {
		t.Errorf("under hai-llm the best plan is not DualPipe: %v", hai[0].layout)
	}
	want(fmt.Sprintf("(under `--framework hai-llm` %s DualPipe stages with EP %s are best, %.3f s)", words[hai[0].layout["pp"]], hai[0].layout["ep"], hai[0].step))
}

// words spells the small counts the docs write in words.
var words = map[string]string{"2": "two", "3": "three", "4": "four", "8": "eight"}
