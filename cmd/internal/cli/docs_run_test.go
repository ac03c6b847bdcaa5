package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// docCommand is one shell line of a documented sh block, with the directory it
// runs in (the repository's root, or the last `cd` of its block).
type docCommand struct {
	file, dir, line string
}

// documentedShell returns every line of the sh code blocks of the README and
// docs/*.md, continuation lines joined, in order, each with the directory it runs
// in relative to the repository's root.
func documentedShell(t *testing.T) []docCommand {
	t.Helper()
	files, err := filepath.Glob("../../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../../README.md")
	var out []docCommand
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inSh, cur, dir := false, "", "."
		for _, l := range strings.Split(string(data), "\n") {
			trimmed := strings.TrimSpace(l)
			if strings.HasPrefix(trimmed, "```") {
				lang := strings.TrimPrefix(trimmed, "```")
				inSh = !inSh && (lang == "sh" || lang == "bash")
				cur, dir = "", "."
				continue
			}
			if !inSh {
				continue
			}
			cur += " " + strings.TrimSuffix(trimmed, "\\")
			if strings.HasSuffix(trimmed, "\\") {
				continue
			}
			line := strings.TrimSpace(cur)
			cur = ""
			if w := shellWords(line); len(w) == 2 && w[0] == "cd" {
				dir = filepath.Join(dir, w[1])
				continue
			}
			out = append(out, docCommand{filepath.Base(f), dir, line})
		}
	}
	return out
}

// outFlags are the file flags (fileFlags) that name a file the command writes.
var outFlags = map[string]bool{"out": true, "svg": true}

// The command lines of the README and the docs run as written, on the embedded
// catalog and the repository's test data, and exit 0: a line whose input files
// are the reader's own (ar-2n.txt, free.json) is passed over and counted; the
// files a block writes with printf first (a layout in /tmp) are written, and
// what a line writes (--out, --svg) goes to a temporary directory. Where the
// text after a block says what it "prints" and shows it in a plain code block,
// every line shown is in the output. The lines that refit or cross-validate
// (accuracy --fit, --cross-validate, runs: seconds to a minute) run under
// STEPCOST_SLOW=1.
func TestDocumentedCommandLinesRun(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// An absolute path a block writes (/tmp/a100.yaml) is kept in tmp.
	local := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Join(tmp, strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "_"))
		}
		return p
	}
	slow := os.Getenv("STEPCOST_SLOW") == "1"
	ran, passed := 0, map[string]bool{}
	for _, c := range documentedShell(t) {
		words := shellWords(c.line)
		dir := filepath.Join(root, c.dir)
		if len(words) > 0 && words[0] == "printf" && strings.Contains(c.line, ">") {
			// printf 'FORMAT' > FILE, a file the lines after it read.
			format := words[1]
			_, target, _ := strings.Cut(c.line, ">")
			if err := os.WriteFile(local(strings.TrimSpace(target)), []byte(strings.ReplaceAll(format, `\n`, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !isStepcostLine(strings.TrimSpace(c.line)) {
			continue
		}
		i := 0
		for i < len(words) && words[i] != "stepcost" && !strings.HasSuffix(words[i], "/cmd/stepcost") {
			i++
		}
		args := words[i+1:]
		root := newRoot(bytes.NewBuffer(nil), bytes.NewBuffer(nil))
		args = longDashes(root, args)
		cmd, rest, err := root.Find(args)
		if err != nil || cmd == root {
			continue // TestDocumentedCommandLinesParse says why
		}
		if err := cmd.ParseFlags(rest); err != nil {
			continue
		}
		if cmd.Flags().Lookup("server") != nil && cmd.Flags().Changed("server") {
			passed["--server"] = true
			continue // a running daemon's
		}
		if !slow && (cmd.Name() == "runs" || cmd.Name() == "accuracy" && (cmd.Flags().Changed("cross-validate") || cmd.Flags().Changed("fit"))) {
			continue
		}
		// The arguments again, each file resolved where the line runs.
		var run []string
		missing := ""
		for j := 0; j < len(args); j++ {
			a := args[j]
			name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			isFlag := strings.HasPrefix(a, "--")
			switch {
			case isFlag && (fileFlags[name] || outFlags[name]):
				if !hasValue && j+1 < len(args) {
					j++
					value = args[j]
				}
				if outFlags[name] {
					if value != "-" {
						value = filepath.Join(tmp, filepath.Base(value))
					}
				} else if p := local(value); filepath.IsAbs(p) {
					value = p
				} else {
					value = filepath.Join(dir, value)
				}
				if !outFlags[name] {
					if _, err := os.Stat(value); err != nil && missing == "" {
						missing = a + " " + filepath.Base(value)
					}
				}
				run = append(run, "--"+name, value)
			case !isFlag && cmd.Name() == "calibrate" && (j == 0 || !strings.HasPrefix(args[j-1], "--") || isBoolFlag(cmd.Flags(), strings.TrimPrefix(args[j-1], "--"))) && a != "calibrate":
				m, _ := filepath.Glob(filepath.Join(dir, a))
				if len(m) == 0 && missing == "" {
					missing = a
				}
				run = append(run, m...)
			default:
				run = append(run, a)
			}
		}
		if missing != "" {
			passed["needs "+missing] = true
			continue
		}
		var stdout, stderr bytes.Buffer
		if code := Run(context.Background(), run, &stdout, &stderr); code != 0 {
			t.Errorf("%s: %q exits %d: %s", c.file, c.line, code, stderr.String())
			continue
		}
		if stdout.Len() == 0 {
			t.Errorf("%s: %q prints nothing", c.file, c.line)
		}
		ran++
		for _, want := range documentedOutput(t, c) {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%s: %q does not print, as the docs say, %q:\n%s", c.file, c.line, want, stdout.String())
			}
		}
	}
	for why := range passed {
		t.Logf("passed over: %s", why)
	}
	t.Logf("%d documented command lines ran", ran)
	// The README's plans, estimates and collective, the docs' calibrations on the
	// test data at least; a runner that runs none would pass vacuously.
	if ran < 20 {
		t.Fatalf("%d documented command lines ran", ran)
	}
}

func isBoolFlag(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Value.Type() == "bool"
}

// documentedOutput is what the docs show a command line printing: the lines of
// the plain code block after the sh block that holds it alone, when the text
// between says it "prints" it; none otherwise.
func documentedOutput(t *testing.T, c docCommand) []string {
	t.Helper()
	path := "../../../README.md"
	if c.file != "README.md" {
		path = filepath.Join("../../../docs", c.file)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		var block []string
		j := i + 1
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			block = append(block, strings.TrimSpace(lines[j]))
		}
		if len(block) != 1 || block[0] != c.line {
			i = j
			continue
		}
		// The text up to the next code block.
		k := j + 1
		text := ""
		for ; k < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[k]), "```"); k++ {
			text += lines[k] + " "
		}
		if k == len(lines) || strings.TrimSpace(lines[k]) != "```" || !strings.Contains(text, "prints") {
			return nil
		}
		var want []string
		for k++; k < len(lines) && strings.TrimSpace(lines[k]) != "```"; k++ {
			if l := strings.TrimRight(lines[k], " "); l != "" {
				want = append(want, l)
			}
		}
		return want
	}
	return nil
}
