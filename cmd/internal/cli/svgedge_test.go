package cli

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// finiteSVG checks that doc is well-formed XML whose coordinates and sizes are
// finite numbers, widths and heights not negative.
func finiteSVG(t *testing.T, what string, doc []byte) {
	t.Helper()
	wellFormedSVG(t, doc)
	dec := xml.NewDecoder(bytes.NewReader(doc))
	n := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		for _, a := range el.Attr {
			var nums []string
			switch a.Name.Local {
			case "x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r", "rx", "ry", "width", "height":
				nums = []string{a.Value}
			case "points":
				nums = strings.FieldsFunc(a.Value, func(r rune) bool { return r == ' ' || r == ',' })
			default:
				continue
			}
			for _, s := range nums {
				n++
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || (a.Name.Local == "width" || a.Name.Local == "height") && v < 0 {
					t.Errorf("%s: <%s %s=%q>", what, el.Name.Local, a.Name.Local, a.Value)
				}
			}
		}
	}
	if n == 0 {
		t.Errorf("%s: no coordinates", what)
	}
}

// The pictures of edge requests are well-formed with finite coordinates: one GPU,
// a pipeline as deep as the layers with one micro-batch (and with two model chunks
// a rank, ZB-V), zero-bubble and DualPipe schedules, a search whose front is one
// plan.
func TestSVGOfEdgeRequests(t *testing.T) {
	dir := t.TempDir()
	tiny := []string{"--layers", "2", "--hidden", "256", "--heads", "4", "--cluster", "dgx-h100"}
	for i, args := range [][]string{
		{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "1", "--tp", "1", "--mbs", "1", "--gbs", "1", "--seq", "4096"},
		{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "32", "--tp", "1", "--pp", "32", "--mbs", "1", "--gbs", "1", "--seq", "4096"},
		{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "1", "--pp", "16", "--vpp", "2", "--mbs", "1", "--gbs", "16", "--seq", "4096"},
		{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "1", "--pp", "16", "--mbs", "1", "--gbs", "1", "--seq", "4096", "--schedule", "zb-v", "--framework", "torchtitan"},
		{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "32", "--tp", "1", "--pp", "32", "--mbs", "1", "--gbs", "1", "--seq", "4096", "--schedule", "zb-h1", "--framework", "hai-llm"},
		{"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "4", "--tp", "1", "--pp", "4", "--mbs", "1", "--gbs", "8", "--seq", "4096", "--schedule", "dualpipe", "--framework", "hai-llm"},
		append(append([]string{"estimate"}, tiny...), "--gpus", "1", "--tp", "1", "--mbs", "1", "--gbs", "1", "--seq", "128"),
		append(append([]string{"plan"}, tiny...), "--gpus", "1", "--gbs", "1", "--seq", "128", "--top", "1"),
		{"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "32", "--pp", "32", "--mbs", "1", "--gbs", "1", "--seq", "4096", "--top", "1"},
	} {
		file := filepath.Join(dir, strconv.Itoa(i)+".svg")
		a := append(args, "--svg", file)
		if code, _, errOut := run(a...); code != exitOK {
			t.Fatalf("%q: exit %d: %s", a, code, errOut)
		}
		doc, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		finiteSVG(t, strings.Join(args, " "), doc)
	}
}
