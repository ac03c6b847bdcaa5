package picture_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/picture"
	"github.com/stepcost/stepcost/planner"
)

func estimate(t testing.TB, name string, nodes int, tr step.Training, l step.Layout, slow float64) step.Result {
	t.Helper()
	a, err := model.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes = nodes
	cl, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Framework == "" && l.PP > 1 && l.Schedule != "" && l.Schedule != step.OneFOneB && l.Schedule != step.Interleaved {
		// The default profile, megatron-core, runs 1F1B and interleaved only; fsdp's
		// states no limit.
		tr.Framework = "fsdp"
	}
	r, err := step.New().Estimate(step.Request{Model: a, Cluster: cl, Training: tr, Layout: l, SlowGPUSpeed: slow})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wellFormed decodes the whole document and counts its elements by name.
func wellFormed(t testing.TB, doc []byte) map[string]int {
	t.Helper()
	counts := map[string]int{}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = true
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, head(doc))
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
			for _, a := range se.Attr {
				if a.Name.Local == "class" {
					counts["class="+a.Value]++
				}
			}
		}
	}
	if counts["svg"] == 0 {
		t.Fatalf("no <svg> element:\n%s", head(doc))
	}
	return counts
}

func head(b []byte) string {
	if len(b) > 2000 {
		b = b[:2000]
	}
	return string(b)
}

// The drawn pipeline takes as long as the estimate's pipeline time, for every
// schedule: both execute the schedule's block table (to rounding; the target is
// 1 %). ZB-V's bubble shrinks from as few micro-batches as stages (8) to 32, where
// its table's steady state has begun. With one slow GPU the estimate adds the
// whole fill and drain at the other stages' speed to every micro-batch at the slow
// one's, where the drawn schedule lets the slow stage work through part of the
// fill and drain: drawn ≤ estimate, and never below the slow stage's own work.
func TestMakespan(t *testing.T) {
	tr := step.Training{SeqLen: 4096, GlobalBatch: 64}
	bubbles := map[string]float64{}
	for _, c := range []struct {
		name  string
		model string
		l     step.Layout
		slow  float64
		tol   float64
		below bool
	}{
		{"zb-v-32", "llama3-8b", step.Layout{TP: 1, PP: 8, DP: 2, MicroBatch: 1, ZeRO: 1, Schedule: step.ZeroBubbleV}, 0, 1e-9, false},
		{"dualpipe-pp2", "mixtral-8x7b", step.Layout{TP: 1, PP: 2, DP: 8, EP: 8, MicroBatch: 1, ZeRO: 1, Schedule: step.DualPipe}, 0, 1e-9, false},
		{"pp1", "llama3-8b", step.Layout{TP: 8, PP: 1, DP: 8, MicroBatch: 1, ZeRO: 1}, 0, 1e-9, false},
		{"1f1b", "llama3-8b", step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1, ZeRO: 1, Schedule: step.OneFOneB}, 0, 1e-9, false},
		{"gpipe", "llama3-8b", step.Layout{TP: 2, PP: 4, DP: 8, MicroBatch: 1, ZeRO: 1, Schedule: step.GPipe}, 0, 1e-9, false},
		{"interleaved", "llama3-8b", step.Layout{TP: 2, PP: 4, DP: 8, MicroBatch: 1, Schedule: step.Interleaved, VirtualStages: 2}, 0, 1e-9, false},
		{"zb-h1", "llama3-8b", step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1, ZeRO: 1, Schedule: step.ZeroBubble}, 0, 1e-9, false},
		{"zb-v", "llama3-8b", step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1, ZeRO: 1, Schedule: step.ZeroBubbleV}, 0, 1e-9, false},
		{"dualpipe", "mixtral-8x7b", step.Layout{TP: 1, PP: 8, DP: 4, EP: 4, MicroBatch: 1, ZeRO: 1, Schedule: step.DualPipe}, 0, 1e-9, false},
		{"1f1b-tp-sp", "llama3-70b", step.Layout{TP: 8, PP: 4, DP: 2, MicroBatch: 1, ZeRO: 1, SP: true, Recompute: step.RecomputeSelective}, 0, 1e-9, false},
		{"1f1b-slow-gpu", "llama3-8b", step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1, ZeRO: 1}, 0.5, 1, true},
		// Stages of 4 GPUs, two a node: every other hop (and the interleaved
		// schedule's wrap-around) leaves the node, each priced on its own link.
		{"1f1b-hops", "llama3-8b", step.Layout{TP: 2, PP: 16, DP: 2, MicroBatch: 1, ZeRO: 1, Schedule: step.OneFOneB}, 0, 1e-9, false},
		{"interleaved-hops", "llama3-8b", step.Layout{TP: 2, PP: 16, DP: 2, MicroBatch: 1, ZeRO: 1, Schedule: step.Interleaved, VirtualStages: 2}, 0, 1e-9, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := estimate(t, c.model, 8, tr, c.l, c.slow)
			bubbles[c.name] = r.Breakdown.Bubble
			if strings.HasSuffix(c.name, "-hops") && r.PerMicroBatch.HopSends == nil {
				t.Fatalf("%s: one price for every hop", c.name)
			}
			tl, err := picture.Simulate(r)
			if err != nil {
				t.Fatal(err)
			}
			rel := tl.Makespan/r.Pipeline - 1
			t.Logf("%s: drawn %.4f s, estimate's pipeline %.4f s (%+.2f %%), step %.4f s", c.name, tl.Makespan, r.Pipeline, 100*rel, r.StepTime)
			if math.Abs(rel) > c.tol || c.below && rel > 1e-9 {
				t.Errorf("drawn pipeline %.6f s, estimate %.6f s: %+.3f %% (tolerance %.3g %%)", tl.Makespan, r.Pipeline, 100*rel, 100*c.tol)
			}
			if c.slow > 0 {
				m := r.PerMicroBatch
				own := float64(r.MicroBatches) * ((m.Forward+m.Backward+m.Recompute)/c.slow + m.ExposedComm + 2*m.Send)
				if tl.Makespan < own*(1-1e-9) {
					t.Errorf("drawn pipeline %.6f s shorter than the slow stage's own work %.6f s", tl.Makespan, own)
				}
			}
			if r.Pipeline > r.StepTime*(1+1e-12) {
				t.Errorf("pipeline %.6f s longer than the step %.6f s", r.Pipeline, r.StepTime)
			}
		})
	}
	if !(bubbles["zb-v-32"] < 0.9*bubbles["zb-v"]) {
		t.Errorf("ZB-V bubble with 32 micro-batches %.4f s, with 8 %.4f s: want it smaller", bubbles["zb-v-32"], bubbles["zb-v"])
	}
}

// Every micro-batch pass of every chunk is one block; a stage never runs two at
// once; a block never starts before its input exists.
func TestScheduleBlocks(t *testing.T) {
	tr := step.Training{SeqLen: 4096, GlobalBatch: 64}
	for _, c := range []struct {
		name          string
		l             step.Layout
		passes, model int
	}{
		{"1f1b", step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1}, 2, 0},
		{"interleaved", step.Layout{TP: 2, PP: 4, DP: 8, MicroBatch: 1, Schedule: step.Interleaved, VirtualStages: 4}, 2, 0},
		{"zb-h1", step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1, Schedule: step.ZeroBubble}, 3, 0},
		{"zb-v", step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1, Schedule: step.ZeroBubbleV}, 3, 0},
		{"dualpipe", step.Layout{TP: 1, PP: 4, DP: 8, MicroBatch: 1, Schedule: step.DualPipe}, 3, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := estimate(t, "llama3-8b", 8, tr, c.l, 0)
			fig, err := picture.Schedule(r, "llama3-8b on dgx-h100")
			if err != nil {
				t.Fatal(err)
			}
			counts := wellFormed(t, fig.SVG())
			v := max(1, r.Layout.VirtualStages)
			want := c.passes * r.Layout.PP * v * r.MicroBatches
			if r.Layout.Schedule == step.DualPipe {
				// dualpipe.py defers the W of 2(P/2 − h − 1) + h + 1 backwards on a
				// rank of half-rank h; the others compute their weight gradients.
				want = 2 * r.Layout.PP * r.MicroBatches
				for rank := range r.Layout.PP {
					h := min(rank, r.Layout.PP-1-rank)
					want += 2*(r.Layout.PP/2-h-1) + h + 1
				}
			}
			if got := counts["class=block"]; got != want {
				t.Errorf("%d blocks drawn, want %d passes × %d stages × %d chunks × %d micro-batches = %d", got, c.passes, r.Layout.PP, v, r.MicroBatches, want)
			}
			tl, _ := picture.Simulate(r)
			last := make([]float64, tl.Stages)
			for _, b := range tl.Blocks {
				if b.Start < last[b.Stage]-1e-12 {
					t.Fatalf("stage %d runs two blocks at once at %.6f s", b.Stage, b.Start)
				}
				last[b.Stage] = b.End
			}
		})
	}
}

func TestEscapesLabels(t *testing.T) {
	r := estimate(t, "llama3-8b", 1, step.Training{SeqLen: 2048, GlobalBatch: 8}, step.Layout{TP: 2, PP: 2, DP: 2, MicroBatch: 1}, 0)
	evil := `model <&> "quoted" 'x' ]]> <script>alert(1)</script>` + "\x00\x1b\xff"
	s, err := picture.Schedule(r, evil)
	if err != nil {
		t.Fatal(err)
	}
	b := picture.Breakdown(r, evil)
	p, err := picture.Pareto(picture.Front{Title: evil, Candidates: []picture.Candidate{{Label: evil, GPUs: 8, StepTime: 1, MemoryGB: 40, CapacityGB: 80, Rank: 1, OnFront: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, fig := range map[string]picture.Figure{"schedule": s, "breakdown": b, "pareto": p, "stack": picture.Stack(s, b)} {
		doc := fig.SVG()
		wellFormed(t, doc)
		if bytes.Contains(doc, []byte("<script")) || !bytes.Contains(doc, []byte("&lt;&amp;&gt;")) {
			t.Errorf("%s: label not escaped", name)
		}
	}
}

func TestDeterministic(t *testing.T) {
	r := estimate(t, "llama3-8b", 8, step.Training{SeqLen: 4096, GlobalBatch: 64}, step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1, Schedule: step.ZeroBubbleV}, 0)
	render := func() []byte {
		s, err := picture.Schedule(r, "x")
		if err != nil {
			t.Fatal(err)
		}
		return picture.Stack(s, picture.Breakdown(r, "x")).SVG()
	}
	a := render()
	for range 3 {
		if !bytes.Equal(a, render()) {
			t.Fatal("two renderings of one estimate differ")
		}
	}
}

func TestScheduleEdgeCases(t *testing.T) {
	t.Run("one micro-batch", func(t *testing.T) {
		r := estimate(t, "llama3-8b", 1, step.Training{SeqLen: 2048, GlobalBatch: 1}, step.Layout{TP: 2, PP: 4, DP: 1, MicroBatch: 1}, 0)
		fig, err := picture.Schedule(r, "one")
		if err != nil {
			t.Fatal(err)
		}
		if got := wellFormed(t, fig.SVG())["class=block"]; got != 8 {
			t.Errorf("%d blocks, want 8", got)
		}
	})
	t.Run("many micro-batches are capped", func(t *testing.T) {
		r := estimate(t, "llama3-8b", 8, step.Training{SeqLen: 2048, GlobalBatch: 200000}, step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1, Schedule: step.ZeroBubble}, 0)
		fig, err := picture.Schedule(r, "many")
		if err != nil {
			t.Fatal(err)
		}
		doc := fig.SVG()
		if got := wellFormed(t, doc)["class=block"]; got > picture.MaxBlocks || got == 0 {
			t.Errorf("%d blocks drawn, want 1 … %d", got, picture.MaxBlocks)
		}
		if !bytes.Contains(doc, []byte("of 25000 micro-batches drawn")) {
			t.Error("the picture does not say it drew only some micro-batches")
		}
		tl, _ := picture.Simulate(r)
		if rel := tl.Makespan/r.Pipeline - 1; math.Abs(rel) > 1e-9 {
			t.Errorf("extrapolated pipeline %.4f s, estimate %.4f s", tl.Makespan, r.Pipeline)
		}
	})
	t.Run("zero and bad durations", func(t *testing.T) {
		for _, s := range []step.Schedule{step.GPipe, step.OneFOneB, step.Interleaved, step.ZeroBubble, step.ZeroBubbleV, step.DualPipe} {
			for _, d := range []float64{0, math.NaN(), math.Inf(1), -1} {
				r := step.Result{Layout: step.Layout{PP: 4, VirtualStages: 2, Schedule: s}, MicroBatches: 8, StepTime: d, Pipeline: d,
					PerMicroBatch: step.MicroBatch{Forward: d, Backward: d, WeightGrad: d, ExposedComm: d, Send: d}}
				fig, err := picture.Schedule(r, "zero")
				if err != nil {
					t.Fatalf("%s %v: %v", s, d, err)
				}
				wellFormed(t, fig.SVG())
				wellFormed(t, picture.Breakdown(r, "zero").SVG())
			}
		}
	})
	t.Run("no micro-batches", func(t *testing.T) {
		if _, err := picture.Schedule(step.Result{}, "none"); err == nil {
			t.Error("an estimate without micro-batches drew a schedule")
		}
	})
}

func TestPareto(t *testing.T) {
	a, err := model.Lookup("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := catalog.System("dgx-h100")
	spec.Nodes = 4
	cl, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := planner.Search(context.Background(), step.New(), planner.Request{Model: a, Cluster: cl, MaxGPUs: 32,
		Training: step.Training{SeqLen: 4096, GlobalBatch: 64}, TopK: 5})
	if err != nil {
		t.Fatal(err)
	}
	f := picture.FrontOf(res, "llama3-8b <up to 32 GPUs>")
	fig, err := picture.Pareto(f)
	if err != nil {
		t.Fatal(err)
	}
	counts := wellFormed(t, fig.SVG())
	if counts["class=candidate"] != len(f.Candidates) || counts["class=front"] != len(res.Pareto) || counts["class=best"] != 1 {
		t.Errorf("drew %d plans, %d on the front, %d best; want %d, %d, 1", counts["class=candidate"], counts["class=front"], counts["class=best"], len(f.Candidates), len(res.Pareto))
	}
	if !strings.Contains(string(fig.SVG()), "best plan") {
		t.Error("best plan not named")
	}
	if _, err := picture.Pareto(picture.Front{}); !errors.Is(err, picture.ErrNoCandidates) {
		t.Errorf("empty front: %v", err)
	}
	// Bad numbers do not break the picture.
	bad, err := picture.Pareto(picture.Front{Candidates: []picture.Candidate{{StepTime: math.NaN(), MemoryGB: math.Inf(1)}, {StepTime: 0, Rank: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, bad.SVG())
}

// FuzzSchedule draws schedules of arbitrary shapes and durations: never a panic,
// always well-formed XML within the block budget.
func FuzzSchedule(f *testing.F) {
	f.Add(uint8(4), uint8(2), uint16(8), uint8(2), 1.0, 2.0, 0.5, 0.1, 0.01, 0.0)
	f.Add(uint8(1), uint8(1), uint16(1), uint8(1), 0.0, 0.0, 0.0, 0.0, 0.0, 0.5)
	f.Add(uint8(8), uint8(1), uint16(1000), uint8(5), 1e-6, 1e9, 2e9, 0.0, 1.0, 0.0)
	f.Fuzz(func(t *testing.T, pp, v uint8, m uint16, sched uint8, fwd, bwd, w, comm, send, slow float64) {
		schedules := []step.Schedule{step.GPipe, step.OneFOneB, step.Interleaved, step.ZeroBubble, step.ZeroBubbleV, step.DualPipe}
		r := step.Result{Layout: step.Layout{PP: int(pp%32) + 1, VirtualStages: int(v%4) + 1, Schedule: schedules[int(sched)%len(schedules)]},
			MicroBatches: int(m%2048) + 1, StepTime: fwd + bwd, Pipeline: fwd,
			PerMicroBatch: step.MicroBatch{Forward: fwd, Backward: bwd, WeightGrad: w, ExposedComm: comm, Send: send, SlowGPUSpeed: slow}}
		fig, err := picture.Schedule(r, "fuzz")
		if err != nil {
			return // refused, not crashed
		}
		if got := wellFormed(t, fig.SVG())["class=block"]; got > picture.MaxBlocks*3/2+3*32*4*32 {
			t.Fatalf("%d blocks", got)
		}
	})
}

// svgText is one text element of a picture: where it is anchored and what it says.
type svgText struct {
	x, size float64
	anchor  string
	s       string
}

// svgLayout reads a picture's text elements and the widths of its rects by the
// class and data-part of the group around them.
func svgLayout(t *testing.T, doc []byte) (texts []svgText, rects map[string][]float64) {
	t.Helper()
	rects = map[string][]float64{}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var group string
	var cur *svgText
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return texts, rects
		}
		if err != nil {
			t.Fatal(err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			num := func(k string, def float64) float64 {
				v, err := strconv.ParseFloat(attr[k], 64)
				if err != nil {
					return def
				}
				return v
			}
			switch e.Name.Local {
			case "g":
				group = attr["class"] + "/" + attr["data-part"]
			case "rect":
				rects[group] = append(rects[group], num("width", 0))
			case "text":
				cur = &svgText{x: num("x", 0), size: num("font-size", 12), anchor: attr["text-anchor"]}
			}
		case xml.CharData:
			if cur != nil {
				cur.s += string(e)
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "g":
				group = ""
			case "text":
				texts = append(texts, *cur)
				cur = nil
			}
		}
	}
}

// The stacked bar of the whole step is drawn on the time axis of the parts' bars:
// its length over the forward bar's is the step over the forward time.
func TestBreakdownStepBarOnTheAxis(t *testing.T) {
	r := estimate(t, "llama3-70b", 8, step.Training{SeqLen: 8192, GlobalBatch: 32},
		step.Layout{TP: 8, PP: 4, DP: 2, MicroBatch: 1, ZeRO: 1, SP: true, Recompute: step.RecomputeSelective, Schedule: step.ZeroBubble}, 0)
	_, rects := svgLayout(t, picture.Breakdown(r, "x").SVG())
	stack := 0.0
	for g, ws := range rects {
		if strings.HasPrefix(g, "stack-part/") {
			for _, w := range ws {
				stack += w
			}
		}
	}
	fwd := rects["part/forward"]
	if len(fwd) != 1 || fwd[0] <= 0 || stack <= 0 {
		t.Fatalf("forward bar %v, stacked bar %.1f px", fwd, stack)
	}
	if got, want := stack/fwd[0], r.StepTime/r.Breakdown.Forward; math.Abs(got/want-1) > 0.01 {
		t.Errorf("stacked bar / forward bar = %.3f, step / forward = %.3f: the step bar is off the axis", got, want)
	}
}

// No label runs past the edge of its picture (with widths estimated on the wide
// side): legends wrap, and a label longer than a line widens the figure.
func TestLabelsInsideTheFigure(t *testing.T) {
	cases := map[string]step.Result{
		"dp32 zero-2": estimate(t, "llama3-8b", 4, step.Training{SeqLen: 8192, GlobalBatch: 256},
			step.Layout{TP: 1, PP: 1, DP: 32, MicroBatch: 1, ZeRO: 2}, 0),
		"zb-h1": estimate(t, "llama3-70b", 8, step.Training{SeqLen: 8192, GlobalBatch: 32},
			step.Layout{TP: 8, PP: 4, DP: 2, MicroBatch: 1, ZeRO: 1, SP: true, Recompute: step.RecomputeSelective, Schedule: step.ZeroBubble}, 0),
		"dualpipe": estimate(t, "llama3-8b", 8, step.Training{SeqLen: 4096, GlobalBatch: 128},
			step.Layout{TP: 1, PP: 8, DP: 8, MicroBatch: 1, Schedule: step.DualPipe}, 0),
	}
	for name, r := range cases {
		s, err := picture.Schedule(r, "llama3-8b on dgx-h100 — best plan, 32 GPUs")
		if err != nil {
			t.Fatal(err)
		}
		for kind, fig := range map[string]picture.Figure{"schedule": s, "breakdown": picture.Breakdown(r, "title")} {
			texts, _ := svgLayout(t, fig.SVG())
			for _, x := range texts {
				w := picture.TextWidth(x.s, x.size)
				lo, hi := x.x, x.x+w
				switch x.anchor {
				case "end":
					lo, hi = x.x-w, x.x
				case "middle":
					lo, hi = x.x-w/2, x.x+w/2
				}
				if lo < 0 || hi > fig.Width {
					t.Errorf("%s %s: %q spans %.0f–%.0f px of a %.0f px figure", name, kind, x.s, lo, hi, fig.Width)
				}
			}
		}
	}
}

func TestBusBW(t *testing.T) {
	fig, err := picture.BusBW(picture.BusBWSeries{Title: "allreduce <a&b>", Bytes: []float64{8, 1 << 20, 1 << 30},
		Measured: []float64{0.01, 20, 190}, Before: []float64{0.01, 25, 240}, After: []float64{0.01, 21, 189}})
	if err != nil {
		t.Fatal(err)
	}
	doc := fig.SVG()
	counts := wellFormed(t, doc)
	if counts["circle"] != 4 || counts["path"] != 2 {
		t.Errorf("want 3 measured dots plus the legend's and two lines, got %v", counts)
	}
	if !bytes.Contains(doc, []byte("&lt;a&amp;b&gt;")) || !bytes.Contains(doc, []byte("1 GiB")) {
		t.Errorf("title not escaped or size axis missing:\n%s", doc)
	}
	if _, err := picture.BusBW(picture.BusBWSeries{Bytes: []float64{8}, Measured: []float64{1}}); err == nil {
		t.Error("a series with missing predictions was drawn")
	}
}
