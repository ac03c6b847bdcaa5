package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/internal/service"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// docFiles are the Markdown files a reader follows links between: the README,
// docs/*.md and the Python client's README, as paths from this package.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(files, "../../../README.md", "../../../clients/python/README.md")
}

// proseLines returns a Markdown file's lines outside fenced code blocks, with
// inline code spans blanked out, each with its line number: where a link or a
// heading is one.
func proseLines(data string) (lines []string, numbers []int) {
	inFence := false
	for i, l := range strings.Split(data, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		lines = append(lines, l)
		numbers = append(numbers, i+1)
	}
	return lines, numbers
}

var codeSpan = regexp.MustCompile("`[^`]*`")

// headingAnchors returns the anchors GitHub gives a Markdown file's headings:
// the heading's text lower-cased, its code spans' and links' text kept, every
// character but letters, digits, spaces, hyphens and underscores dropped,
// spaces turned into hyphens; a repeated anchor gets -1, -2, … in order
// (github.com/gjtorikian/html-pipeline, TableOfContentsFilter, the anchor rule
// GitHub's Markdown rendering follows).
func headingAnchors(data string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	lines, _ := proseLines(data)
	for _, l := range lines {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimLeft(l, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		text = mdLink.ReplaceAllString(strings.TrimSpace(text), "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

var mdLink = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)

// Every relative link of the README, docs/*.md and the Python client's README
// leads somewhere: the file or folder exists, and an anchor (#section) is one of
// the target file's headings, or of its own file's for a bare #section. A doc
// renamed or a heading reworded then fails here rather than in the reader's
// browser.
func TestDocumentedLinksResolve(t *testing.T) {
	n := 0
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) map[string]bool {
		if a, ok := anchorsOf[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchorsOf[path] = headingAnchors(string(data))
		return anchorsOf[path]
	}
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines, numbers := proseLines(string(data))
		for i, l := range lines {
			l = codeSpan.ReplaceAllString(l, "")
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				where := filepath.Base(f) + ":" + strconv.Itoa(numbers[i])
				path, anchor, _ := strings.Cut(target, "#")
				file := f
				if path != "" {
					file = filepath.Join(filepath.Dir(f), path)
					if _, err := os.Stat(file); err != nil {
						t.Errorf("%s: link %q: no file %s", where, target, path)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(file, ".md") {
					t.Errorf("%s: link %q: an anchor into a file that is not Markdown", where, target)
					continue
				}
				if !anchors(file)[anchor] {
					t.Errorf("%s: link %q: %s has no heading #%s", where, target, filepath.Base(file), anchor)
				}
			}
		}
	}
	// The README's links to the planner's speed section, the proto, the Python
	// client and the scheduler example at least; a reader that finds none of the
	// docs' links would pass vacuously.
	if n < 20 {
		t.Fatalf("%d relative links found: the files were not read", n)
	}
}

var testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)

// testFuncs returns the test, benchmark, fuzz and example functions of every
// package of the repository, by directory relative to its root.
func testFuncs(t *testing.T, root string) map[string][]string {
	t.Helper()
	funcs := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(data), -1) {
			funcs[dir] = append(funcs[dir], m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return funcs
}

// goTestCommands returns the go test command lines of a Markdown file: each line
// of a code block that runs one (continuation lines joined) and each code span
// that holds one (its line breaks, where the paragraph wraps it, as spaces); each
// from "go test" to the end of its command.
func goTestCommands(data string) []string {
	var snippets []string
	inFence, cur := false, ""
	var prose strings.Builder
	for _, l := range strings.Split(data, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			prose.WriteString(l + "\n")
			continue
		}
		cur += " " + strings.TrimSuffix(strings.TrimSpace(l), "\\")
		if !strings.HasSuffix(strings.TrimSpace(l), "\\") {
			snippets = append(snippets, cur)
			cur = ""
		}
	}
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(prose.String(), -1) {
		snippets = append(snippets, strings.Join(strings.Fields(m[1]), " "))
	}
	var cmds []string
	for _, s := range snippets {
		for {
			i := strings.Index(s, "go test ")
			if i < 0 {
				break
			}
			s = s[i:]
			end := len(s)
			for _, sep := range []string{" && ", "; ", " || "} {
				if j := strings.Index(s, sep); j >= 0 && j < end {
					end = j
				}
			}
			cmds = append(cmds, s[:end])
			s = s[end:]
		}
	}
	return cmds
}

var testName = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`)

// The tests the README and the docs name exist: every go test command's -run,
// -bench or -fuzz pattern selects a function of the package it names, and every
// other Test…, Benchmark… or Fuzz… name is a function of some package. A test
// renamed, moved or deleted then fails here rather than leaving a reader to run
// a command that tests nothing ("no tests to run" passes) or to look for a test
// that is gone.
func TestDocumentedTestsExist(t *testing.T) {
	const root = "../../.."
	funcs := testFuncs(t, root)
	all := map[string]bool{}
	for _, fs := range funcs {
		for _, f := range fs {
			all[f] = true
		}
	}
	commands, names := 0, 0
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inPatterns := map[string]bool{}
		for _, c := range goTestCommands(string(data)) {
			words := shellWords(c)
			var pkgs, patterns []string
			for i := 2; i < len(words); i++ {
				w := words[i]
				flag, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
				switch {
				case strings.HasPrefix(w, "./") && !strings.HasSuffix(w, "..."):
					pkgs = append(pkgs, filepath.Clean(w))
				case strings.HasPrefix(w, "-") && (flag == "run" || flag == "bench" || flag == "fuzz"):
					if !hasVal && i+1 < len(words) {
						i++
						val = words[i]
					}
					patterns = append(patterns, flag+"="+val)
				}
			}
			if len(pkgs) == 0 {
				continue // ./... or the current directory: nothing to check it against
			}
			for _, p := range patterns {
				flag, pat, _ := strings.Cut(p, "=")
				for _, n := range testName.FindAllString(pat, -1) {
					inPatterns[n] = true
				}
				top, _, _ := strings.Cut(pat, "/")
				rx, err := regexp.Compile(top)
				if err != nil {
					t.Errorf("%s: %q: -%s %q: %v", filepath.Base(f), c, flag, pat, err)
					continue
				}
				if rx.MatchString("") {
					continue // '^$': no test on purpose, or every one
				}
				commands++
				found := false
				for _, pkg := range pkgs {
					for _, fn := range funcs[pkg] {
						isBench := strings.HasPrefix(fn, "Benchmark")
						if rx.MatchString(fn) && isBench == (flag == "bench") && (flag != "fuzz" || strings.HasPrefix(fn, "Fuzz")) {
							found = true
						}
					}
				}
				if !found {
					t.Errorf("%s: %q: -%s %q selects nothing in %v", filepath.Base(f), c, flag, pat, pkgs)
				}
			}
		}
		for _, n := range testName.FindAllString(string(data), -1) {
			if inPatterns[n] {
				continue
			}
			names++
			if !all[n] {
				t.Errorf("%s: %s: no such function in the repository", filepath.Base(f), n)
			}
		}
	}
	// The docs give dozens of go test commands and name hundreds of tests; a reader
	// that found few would pass vacuously.
	if commands < 30 || names < 200 {
		t.Fatalf("%d go test patterns and %d test names found: the docs were not read", commands, names)
	}
}

var (
	curlBody    = regexp.MustCompile(`(?s)curl [^\n]*?(/v1/[a-z]+:[a-z]+)[^'\n]*?-d '([^']*)'`)
	grpcurlBody = regexp.MustCompile(`grpcurl [^\n]*?-d '([^']*)' \S+ stepcost\.v1\.\w+/(\w+)`)
)

// The request bodies the README and the docs send with curl and grpcurl are
// requests the API takes as written: each decodes strictly (every field named as
// the proto names it, every enum value one of its names) as its path's or
// method's request, and the service answers it rather than refusing a field or a
// name (a search is let run only a moment). A field renamed in the proto, or a
// catalog name retired, then fails here rather than on the reader's machine.
func TestDocumentedRequestsAreTaken(t *testing.T) {
	s := service.New(service.Options{})
	ask := func(ctx context.Context, kind string) (proto.Message, func() error) {
		switch kind {
		case "/v1/plans:estimate", "/v1/pictures:pareto", "EstimatePlan":
			m := &pb.EstimatePlanRequest{}
			return m, func() error { _, err := s.EstimatePlan(ctx, m); return err }
		case "/v1/steps:estimate", "/v1/pictures:schedule", "EstimateStep":
			m := &pb.EstimateStepRequest{}
			return m, func() error { _, err := s.EstimateStep(ctx, m); return err }
		case "/v1/collectives:simulate", "SimulateCollective":
			m := &pb.SimulateCollectiveRequest{}
			return m, func() error { _, err := s.SimulateCollective(ctx, m); return err }
		case "/v1/configs:rank", "RankConfigs":
			m := &pb.RankConfigsRequest{}
			return m, func() error { _, err := s.RankConfigs(ctx, m); return err }
		}
		return nil, nil
	}
	n := 0
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var bodies [][2]string // kind, body
		for _, m := range curlBody.FindAllStringSubmatch(string(data), -1) {
			bodies = append(bodies, [2]string{m[1], m[2]})
		}
		for _, m := range grpcurlBody.FindAllStringSubmatch(string(data), -1) {
			bodies = append(bodies, [2]string{m[2], m[1]})
		}
		for _, b := range bodies {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			m, run := ask(ctx, b[0])
			if m == nil {
				t.Errorf("%s: a request to %s, which the test does not know", filepath.Base(f), b[0])
				cancel()
				continue
			}
			n++
			if err := protojson.Unmarshal([]byte(b[1]), m); err != nil {
				t.Errorf("%s: %s %s: %v", filepath.Base(f), b[0], b[1], err)
			} else if err := run(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: %s %s: refused: %v", filepath.Base(f), b[0], b[1], err)
			}
			cancel()
		}
	}
	// The README's quick start sends five bodies and service.md four; a reader that
	// found fewer would pass vacuously.
	if n < 9 {
		t.Fatalf("%d request bodies found: the docs were not read", n)
	}
}
