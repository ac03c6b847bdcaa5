package cli

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func wellFormedSVG(t *testing.T, doc []byte) {
	t.Helper()
	if !bytes.HasPrefix(doc, []byte("<svg")) {
		t.Fatalf("not an SVG document: %.200s", doc)
	}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
	}
}

// --svg writes the schedule and breakdown of an estimate, and the Pareto front with
// the best plan's schedule of a search, to a file or (with -) to standard output;
// errors name the flag.
func TestSVGFlag(t *testing.T) {
	dir := t.TempDir()
	est := []string{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "2", "--pp", "4",
		"--mbs", "1", "--gbs", "32", "--seq", "4096", "--schedule", "zb-h1", "--framework", "hai-llm"}
	file := filepath.Join(dir, "estimate.svg")
	if code, out, errOut := run(append(est, "--svg", file)...); code != 0 || !strings.Contains(out, "step time") {
		t.Fatalf("estimate --svg FILE: exit %d: %s", code, errOut)
	}
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	wellFormedSVG(t, doc)
	if !bytes.Contains(doc, []byte(`class="block"`)) || !bytes.Contains(doc, []byte(`class="part"`)) {
		t.Error("estimate --svg: no schedule blocks or breakdown bars")
	}
	code, out, errOut := run(append(est, "--svg", "-")...)
	if code != 0 {
		t.Fatalf("estimate --svg -: exit %d: %s", code, errOut)
	}
	wellFormedSVG(t, []byte(out))

	plan := filepath.Join(dir, "plan.svg")
	if code, _, errOut := run("plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs", "64", "--seq", "4096",
		"--top", "3", "--svg", plan); code != 0 {
		t.Fatalf("plan --svg: exit %d: %s", code, errOut)
	}
	doc, err = os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	wellFormedSVG(t, doc)
	if !bytes.Contains(doc, []byte(`class="front"`)) || !bytes.Contains(doc, []byte(`class="best"`)) || !bytes.Contains(doc, []byte(`class="block"`)) {
		t.Error("plan --svg: no front, best plan or schedule")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{append(est, "--svg", filepath.Join(dir, "missing", "x.svg")), "--svg"},
		{append(est, "--svg", "-", "--json"), "--svg - and --json"},
		{append(est, "--svg", "x.svg", "--server", "127.0.0.1:1"), "--svg"},
	} {
		if code, _, errOut := run(c.args...); code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want an error naming %q", c.args[len(c.args)-2:], code, errOut, c.want)
		}
	}
}
