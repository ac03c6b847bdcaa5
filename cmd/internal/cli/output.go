package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/term"
)

// defaultColumns is the width tables and notes fit when standard output is not a
// terminal and $COLUMNS is not set: a plan table's rank, size, layout, nodes,
// step time, memory and MFU fit in it, where the 80 of a classic terminal would
// leave out the memory column too.
const defaultColumns = 120

// output is a command's standard output with the width its tables fit.
type output struct {
	io.Writer
	cols int   // 0: no limit (--wide)
	err  error // the first write that failed
}

// Write writes to the standard output and keeps the first error: a command's
// text is printed with fmt.Fprint*, whose errors no one looked at, so a table
// written to a full disk ended the command with exit 0.
func (o *output) Write(p []byte) (int, error) {
	n, err := o.Writer.Write(p)
	if err != nil && o.err == nil {
		o.err = err
	}
	return n, err
}

// newOutput is w with the width to fit: none with --wide, the terminal's when w is
// one, else $COLUMNS, else defaultColumns.
func newOutput(w io.Writer, wide bool) *output {
	if wide {
		return &output{Writer: w}
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return &output{Writer: w, cols: cols}
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return &output{Writer: w, cols: n}
	}
	return &output{Writer: w, cols: defaultColumns}
}

// widthOf is the columns w's text should fit, 0 for no limit.
func widthOf(w io.Writer) int {
	if o, ok := w.(*output); ok {
		return o.cols
	}
	return 0
}

// helpWidth is the width --help wraps at: the terminal's, or $COLUMNS, or
// defaultColumns.
func helpWidth(w io.Writer) int {
	if o, ok := w.(*output); ok {
		w = o.Writer
	}
	return newOutput(w, false).cols
}

// isTerminal reports whether w is a terminal, where a progress bar redrawn with
// carriage returns belongs (not a redirected file, a pipe or /dev/null).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// table prints aligned columns, fitted to the output's width: the columns named by
// optional are left out, first ones first, with a note saying which (--wide shows
// them), then a text column named by wrap breaks its text over lines.
type table struct {
	head     []string
	rows     [][]string
	wrap     string   // the head of a text column that may wrap
	optional []string // heads of the columns that may be left out, the least useful first
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// minWrap is the narrowest a wrapped column gets: about three words.
const minWrap = 24

func (t *table) write(w io.Writer) {
	cols := widthOf(w)
	keep := make([]bool, len(t.head))
	for i := range keep {
		keep[i] = true
	}
	width := make([]int, len(t.head))
	for i, h := range t.head {
		width[i] = runes(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			for _, l := range strings.Split(c, "\n") {
				width[i] = max(width[i], runes(l))
			}
		}
	}
	total := func() int {
		n, sum := 0, 0
		for i, k := range keep {
			if k {
				n++
				sum += width[i]
			}
		}
		return sum + 2*max(0, n-1)
	}
	wrapAt := -1
	var dropped []string
	if cols > 0 && total() > cols {
		for _, name := range t.optional {
			if total() <= cols {
				break
			}
			if i := index(t.head, name); i >= 0 && keep[i] {
				keep[i] = false
				dropped = append(dropped, name)
			}
		}
		if i := index(t.head, t.wrap); i >= 0 && total() > cols {
			wrapAt = i
			width[i] = max(minWrap, runes(t.head[i]), width[i]-(total()-cols))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		first := true
		for i, c := range cells {
			if !keep[i] {
				continue
			}
			if !first {
				b.WriteString("  ")
			}
			pad := width[i] - runes(c)
			if first || i == wrapAt {
				b.WriteString(c + strings.Repeat(" ", max(0, pad)))
			} else {
				b.WriteString(strings.Repeat(" ", max(0, pad)) + c)
			}
			first = false
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	// A row takes as many lines as its tallest cell: the wrapped column's text
	// broken to its width, and every cell's own line breaks (a refused config's
	// errors, one a line) kept, each line in the cell's column.
	for _, r := range append([][]string{t.head}, t.rows...) {
		parts := make([][]string, len(r))
		n := 0
		for i, c := range r {
			for _, l := range strings.Split(c, "\n") {
				if i == wrapAt {
					parts[i] = append(parts[i], wrapWords(l, width[i])...)
				} else {
					parts[i] = append(parts[i], l)
				}
			}
			n = max(n, len(parts[i]))
		}
		for j := range n {
			cells := make([]string, len(r))
			for i, p := range parts {
				if j < len(p) {
					cells[i] = p[j]
				}
			}
			line(cells)
		}
	}
	if len(dropped) > 0 {
		printWrapped(w, "", fmt.Sprintf("(left out to fit %d columns: %s; --wide shows every column)", cols, strings.Join(dropped, ", ")), false)
	}
}

func runes(s string) int { return len([]rune(s)) }

func index(head []string, name string) int {
	if name == "" {
		return -1
	}
	for i, h := range head {
		if h == name {
			return i
		}
	}
	return -1
}

// wrapWords breaks s into lines of at most width runes at spaces (a longer word
// stands alone on its line).
func wrapWords(s string, width int) []string {
	if width <= 0 || runes(s) <= width {
		return []string{s}
	}
	var lines []string
	var cur string
	for _, word := range strings.FieldsFunc(s, breaksLine) {
		switch {
		case cur == "":
			cur = word
		case runes(cur)+1+runes(word) <= width:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = word
		}
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	return lines
}

// glue joins two words that wrapping must keep on one line (a pruning reason and
// its count); printWrapped writes it as a space.
const glue = '\u00a0'

// breaksLine reports whether wrapping may break at r: any white space but glue.
func breaksLine(r rune) bool { return r != glue && unicode.IsSpace(r) }

// printWrapped writes a paragraph, wrapped to the output's width: the first line
// starts with first, the ones after with as many spaces as it has runes when
// hang is true, else with none.
func printWrapped(w io.Writer, first, text string, hang bool) {
	cols := widthOf(w)
	if cols <= 0 || runes(first)+runes(text) <= cols {
		fmt.Fprintln(w, first+strings.ReplaceAll(text, string(glue), " "))
		return
	}
	indent := ""
	if hang {
		indent = strings.Repeat(" ", runes(first))
	}
	lines := wrapWords(text, max(minWrap, cols-runes(first)))
	for i, l := range lines {
		l = strings.ReplaceAll(l, string(glue), " ")
		if i == 0 {
			fmt.Fprintln(w, first+l)
		} else {
			fmt.Fprintln(w, indent+l)
		}
	}
}
