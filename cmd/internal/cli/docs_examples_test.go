package cli

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step/accuracy"
)

// documentedCommandLines returns every stepcost command line of the sh code blocks
// of the README and docs/*.md, continuation lines joined, each with the file it is
// in: what a reader copies into a shell.
func documentedCommandLines(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../../README.md")
	out := map[string][]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inSh, cur := false, ""
		for _, l := range strings.Split(string(data), "\n") {
			trimmed := strings.TrimSpace(l)
			if strings.HasPrefix(trimmed, "```") {
				lang := strings.TrimPrefix(trimmed, "```")
				inSh = !inSh && (lang == "sh" || lang == "bash")
				cur = ""
				continue
			}
			if !inSh {
				continue
			}
			if cur == "" && !isStepcostLine(trimmed) {
				continue
			}
			cur += " " + strings.TrimSuffix(trimmed, "\\")
			if !strings.HasSuffix(trimmed, "\\") {
				out[filepath.Base(f)] = append(out[filepath.Base(f)], strings.TrimSpace(cur))
				cur = ""
			}
		}
	}
	return out
}

// isStepcostLine: the line runs the command line, after any VAR=value assignments.
func isStepcostLine(l string) bool {
	for _, w := range strings.Fields(l) {
		switch {
		case w == "stepcost":
			return true
		case w == "go":
			return strings.Contains(l, "go run ") && strings.Contains(l, "/cmd/stepcost ")
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-"):
			continue // an environment assignment
		default:
			return false
		}
	}
	return false
}

// shellWords splits a documented command line as a shell would, for the plain
// lines the docs hold: single and double quotes, no expansion; it stops at a
// comment, a pipe or a redirection.
func shellWords(l string) []string {
	var words []string
	var w strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range l {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case !inWord && (r == '#' || r == '|' || r == '>' || r == '<'):
			return words
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// The command lines the README and the docs give parse as written: the command
// exists, every flag is one of its flags, every enum value is one of the flag's
// names, and the arguments are what the command takes. Nothing is run (the files
// they name need not exist), so a renamed flag or value fails here rather than on
// the reader's machine.
func TestDocumentedCommandLinesParse(t *testing.T) {
	lines := documentedCommandLines(t)
	n := 0
	for file, ls := range lines {
		for _, l := range ls {
			words := shellWords(l)
			i := 0
			for i < len(words) && words[i] != "stepcost" && !strings.HasSuffix(words[i], "/cmd/stepcost") {
				i++
			}
			args := words[i+1:]
			if len(args) == 0 {
				t.Errorf("%s: %q: no command", file, l)
				continue
			}
			root := newRoot(io.Discard, io.Discard)
			args = longDashes(root, args)
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == root {
				t.Errorf("%s: %q: no command %q (%v)", file, l, args[0], err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: %q: %v", file, l, err)
				continue
			}
			if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
				t.Errorf("%s: %q: arguments: %v", file, l, err)
				continue
			}
			if err := int32Flags(cmd.Flags()); err != nil {
				t.Errorf("%s: %q: %v", file, l, err)
			}
			n++
		}
	}
	// The README's quick start, calibration, estimate, MoE and picture examples at
	// least; a parser that finds none would pass vacuously.
	if len(lines["README.md"]) < 8 || n < 20 {
		t.Fatalf("%d command lines found (%d in README.md): the code blocks were not read", n, len(lines["README.md"]))
	}
}

// What the docs say 'stepcost runs' lists is the number of runs it lists: the
// command's comment in docs/step-model.md ("every published run (all 260, …)")
// and its "by source" table's count said 260 after nine runs were added (269).
func TestDocumentedRunCountIsTheRuns(t *testing.T) {
	cases, err := accuracy.AllCases()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../../docs/step-model.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`stepcost runs\s+# every published run \(all (\d+),`),
		regexp.MustCompile(`"by source" table covers the (\d+) runs of both files`),
	} {
		m := re.FindSubmatch(data)
		if m == nil {
			t.Errorf("docs/step-model.md: no %q", re)
			continue
		}
		n++
		if got, _ := strconv.Atoi(string(m[1])); got != len(cases) {
			t.Errorf("docs/step-model.md: %q says %d runs; stepcost runs lists %d", m[0], got, len(cases))
		}
	}
	if n == 0 {
		t.Fatal("no count found")
	}
}
