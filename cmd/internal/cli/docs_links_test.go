package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
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
