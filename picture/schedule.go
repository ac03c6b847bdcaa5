package picture

import (
	"fmt"
	"strings"

	"github.com/stepcost/stepcost/estimator/step"
)

// Colours of the passes; DualPipe's second direction is drawn darker.
var passFill = [2][numPasses]string{
	{"#7aa6d8", "#79c07a", "#b99ad6"},
	{"#3f6fa8", "#3f8f40", "#8462a8"},
}

const (
	idleFill = "#eeeeee"
	restFill = "#f2c48d"
)

// Layout of the schedule figure, pixels.
const (
	schedWidth  = 1100.0
	schedLeft   = 80.0
	schedRight  = 30.0
	schedTop    = 58.0
	legendH     = 54.0
	maxRowH     = 26.0
	minRowH     = 6.0
	rowsHeight  = 420.0 // rows share this height once they get thin
	minLabelPxW = 14.0  // narrower blocks carry no micro-batch number
)

// Schedule draws the pipeline schedule of an estimate: one row per pipeline stage,
// time across, a block per micro-batch pass (forward, backward and, under the
// zero-bubble schedules, weight gradient) numbered by micro-batch, its exposed
// communication hatched at its end, idle time grey, and the rest of the step
// after the pipeline (data-parallel and ZeRO communication, optimizer, contention).
// title heads the picture (a model and cluster name, say); it is escaped.
func Schedule(r step.Result, title string) (Figure, error) {
	tl, err := Simulate(r)
	if err != nil {
		return Figure{}, err
	}
	l := r.Layout
	rest := max(0, finite(r.StepTime)-finite(r.Pipeline))
	span := finite(tl.SimulatedSpan)
	if tl.Simulated == tl.MicroBatches {
		span += rest
	}
	unit, unitScale := timeUnit(max(span, finite(r.StepTime)))
	plotW := schedWidth - schedLeft - schedRight
	scale := 0.0
	if span > 0 {
		scale = plotW / span
	}
	rowH := max(minRowH, min(maxRowH, rowsHeight/float64(tl.Stages)))
	rowsTop := schedTop
	axisY := rowsTop + rowH*float64(tl.Stages)
	height := axisY + 40 + legendH

	var c canvas
	c.printf(`<defs><pattern id="sched-comm" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
		`<rect width="6" height="6" fill="#ffffff" fill-opacity="0.35"/><line x1="0" y1="0" x2="0" y2="6" stroke="#333333" stroke-width="2"/></pattern></defs>` + "\n")
	type titleLine struct {
		s  string
		px float64
	}
	titles := []titleLine{{title, 15}}
	c.text(schedLeft, 20, "start", ` font-size="15" font-weight="bold"`, title)
	sched := string(tl.Schedule)
	if l.PP > 1 && l.VirtualStages > 1 && tl.Schedule == step.Interleaved {
		sched += fmt.Sprintf(" (v = %d)", l.VirtualStages)
	}
	sub := fmt.Sprintf("%s — pipeline schedule %s, %d stage(s), %d micro-batches; pipeline %s drawn (estimate %s), step %s",
		LayoutLabel(l), sched, tl.Stages, tl.MicroBatches, seconds(tl.Makespan), seconds(r.Pipeline), seconds(r.StepTime))
	c.text(schedLeft, 38, "start", "", sub)
	titles = append(titles, titleLine{sub, 12})
	if tl.Simulated < tl.MicroBatches {
		note := fmt.Sprintf("first %d of %d micro-batches drawn; the other %d run in the steady state, %s each (%s more)",
			tl.Simulated, tl.MicroBatches, tl.MicroBatches-tl.Simulated, seconds(tl.SteadyPerMicroBatch),
			seconds(tl.Makespan-tl.SimulatedSpan))
		c.text(schedLeft, 52, "start", ` fill="#a33"`, note)
		titles = append(titles, titleLine{note, 12})
	}

	// Rows: idle background, stage labels.
	for s := range tl.Stages {
		y := rowsTop + float64(s)*rowH
		c.rect(schedLeft, y+1, plotW, rowH-2, fmt.Sprintf(` fill="%s"`, idleFill))
		if rowH >= 10 || s%max(1, int(10/rowH)) == 0 {
			c.text(schedLeft-6, y+rowH/2+4, "end", ` font-size="11"`, fmt.Sprintf("stage %d", s))
		}
	}
	// Blocks, in the order they were laid out (deterministic).
	for _, b := range tl.Blocks {
		x := schedLeft + b.Start*scale
		w := (b.End - b.Start) * scale
		y := rowsTop + float64(b.Stage)*rowH + 1
		h := rowH - 2
		fill := passFill[b.Direction][b.Pass]
		c.printf(`<g class="block" data-pass="%s" data-stage="%d" data-micro-batch="%d">`, passCode(b.Pass), b.Stage, b.MicroBatch)
		c.printf(`<title>%s</title>`, esc(fmt.Sprintf("stage %d, micro-batch %d, chunk %d: %s %s–%s (exposed communication %s)",
			b.Stage, b.MicroBatch, b.Chunk, b.Pass, seconds(b.Start), seconds(b.End), seconds(b.Comm))))
		c.rect(x, y, w, h, fmt.Sprintf(` fill="%s" stroke="#ffffff" stroke-width="0.5"`, fill))
		if cw := b.Comm * scale; cw > 0 {
			c.rect(x+w-cw, y, cw, h, ` fill="url(#sched-comm)"`)
		}
		if w >= minLabelPxW && h >= 9 {
			c.text(x+w/2, y+h/2+4, "middle", ` font-size="10"`, fmt.Sprint(b.MicroBatch))
		}
		c.printf("</g>\n")
	}
	// The rest of the step, after the pipeline's last block.
	if tl.Simulated == tl.MicroBatches && rest > 0 {
		x := schedLeft + tl.SimulatedSpan*scale
		c.printf(`<g class="rest"><title>%s</title>`, esc("rest of the step: "+restLabel(r.Breakdown)))
		c.rect(x, rowsTop+1, rest*scale, axisY-rowsTop-2, fmt.Sprintf(` fill="%s"`, restFill))
		if rest*scale > 60 {
			c.text(x+rest*scale/2, (rowsTop+axisY)/2+4, "middle", ` font-size="10"`, "rest of step")
		}
		c.printf("</g>\n")
	}

	// Time axis.
	c.timeAxis(schedLeft, axisY, plotW, span, scale, unitScale, 8, "time ("+unit+")")

	// Legend.
	ly := axisY + 44
	items := []struct{ fill, label string }{
		{passFill[0][Forward], "forward"}, {passFill[0][Backward], "backward"},
	}
	zb := tl.Schedule == step.ZeroBubble || tl.Schedule == step.ZeroBubbleV || tl.Schedule == step.DualPipe
	if zb {
		items[1].label = "backward (activation gradients, B)"
		items = append(items, struct{ fill, label string }{passFill[0][WeightGrad], "weight gradients (W)"})
	}
	if tl.Schedule == step.DualPipe {
		items = append(items, struct{ fill, label string }{passFill[1][Forward], "second direction (darker)"})
	}
	items = append(items, struct{ fill, label string }{"url(#sched-comm)", "exposed communication (TP/CP/EP, pipeline send)"},
		struct{ fill, label string }{idleFill, "idle (bubble)"})
	if rest > 0 {
		items = append(items, struct{ fill, label string }{restFill, "rest of step: " + restLabel(r.Breakdown)})
	}
	// Items wrap to a new line rather than run past the right edge; one too long
	// for any line widens the figure.
	x, width := schedLeft, schedWidth
	for i, it := range items {
		w := 19 + textWidth(it.label, 11)
		if i > 0 && x+w > schedWidth-8 {
			x, ly = schedLeft, ly+18
		}
		c.rect(x, ly-10, 14, 12, fmt.Sprintf(` fill="%s" stroke="#999999" stroke-width="0.5"`, it.fill))
		c.text(x+19, ly, "start", ` font-size="11"`, it.label)
		width = max(width, x+w+8)
		x += w + 16
	}
	for _, t := range titles {
		width = max(width, schedLeft+textWidth(t.s, t.px)+8)
	}
	return c.onWhite(width, max(height, ly+14)), nil
}

func passCode(p Pass) string { return [...]string{"F", "B", "W"}[p] }

// restLabel names the parts of the step outside the pipeline that are not zero.
func restLabel(b step.Breakdown) string {
	var parts []string
	add := func(name string, v float64) {
		if v = finite(v); v > 0 {
			parts = append(parts, name+" "+seconds(v))
		}
	}
	add("DP comm", b.Exposed[step.CommDP])
	add("ZeRO-3 comm", b.Exposed[step.CommZeRO3])
	add("embedding sync", b.Exposed[step.CommEmbed])
	add("optimizer", b.Optimizer)
	add("contention", b.Contention)
	if len(parts) == 0 {
		return "fp8 weight casts"
	}
	return strings.Join(parts, ", ")
}

// LayoutLabel is a short description of a layout: "tp8 pp2 dp4 z1 mbs1 selective
// sp 1f1b".
func LayoutLabel(l step.Layout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tp%d pp%d dp%d", l.TP, l.PP, l.DP)
	if l.CP > 1 {
		fmt.Fprintf(&b, " cp%d", l.CP)
	}
	if l.EP > 1 {
		fmt.Fprintf(&b, " ep%d", l.EP)
	}
	fmt.Fprintf(&b, " z%d mbs%d", l.ZeRO, l.MicroBatch)
	if l.Recompute != "" && l.Recompute != step.RecomputeNone {
		fmt.Fprintf(&b, " %s", l.Recompute)
	}
	if l.SP {
		b.WriteString(" sp")
	}
	if l.OverlapTP && l.TP > 1 {
		b.WriteString(" tp-overlap")
	}
	if l.OverlapEP && l.EP > 1 {
		b.WriteString(" ep-overlap")
	}
	if l.CPAllToAll && l.CP > 1 {
		b.WriteString(" ulysses")
	}
	if l.PP > 1 {
		fmt.Fprintf(&b, " %s", l.Schedule)
		if l.VirtualStages > 1 && l.Schedule == step.Interleaved {
			fmt.Fprintf(&b, "×%d", l.VirtualStages)
		}
	}
	if l.Offload != "" && l.Offload != step.OffloadNone {
		fmt.Fprintf(&b, " offload-%s", l.Offload)
	}
	return b.String()
}
