package picture

import (
	"fmt"

	"github.com/stepcost/stepcost/estimator/step"
)

// part is one line of the breakdown.
type part struct {
	name, fill    string
	value, hidden float64 // seconds; hidden: communication overlapped with compute
}

// breakdownParts lists an estimate's breakdown in the order the CLI prints it,
// each communication kind on its own line.
func breakdownParts(b step.Breakdown) []part {
	ps := []part{
		{name: "forward", fill: passFill[0][Forward], value: b.Forward},
		{name: "backward", fill: passFill[0][Backward], value: b.Backward},
		{name: "recompute", fill: "#a9d3a0", value: b.Recompute},
	}
	commFill := [step.NumComms]string{"#e4572e", "#f3a712", "#a8c256", "#29335c", "#db2b39", "#8f2d56", "#55828b"}
	for _, k := range step.Comms() {
		ps = append(ps, part{name: "exposed " + k.String() + " comm", fill: commFill[k], value: b.Exposed[k], hidden: b.Hidden[k]})
	}
	return append(ps,
		part{name: "pipeline bubble", fill: idleFill, value: b.Bubble},
		part{name: "optimizer step", fill: restFill, value: b.Optimizer},
		part{name: "comm/compute contention", fill: "#c9c9c9", value: b.Contention})
}

// Layout of the breakdown figure, pixels.
const (
	bdWidth    = 1100.0
	bdLeft     = 200.0
	bdRight    = 190.0
	bdRowH     = 20.0
	bdStackTop = 50.0
	bdStackH   = 26.0
)

// Breakdown draws where the time of one step goes: a stacked bar of the whole step,
// then one bar per part (forward, backward, recompute, exposed communication of
// each kind, pipeline bubble, optimizer, contention) with its time and share, and
// beside each communication kind the time compute hid (not part of the step).
// Parts that are zero are listed without a bar, so every kind the estimate knows
// appears. title is escaped.
func Breakdown(r step.Result, title string) Figure {
	ps := breakdownParts(r.Breakdown)
	total := 0.0
	for i := range ps {
		ps[i].value, ps[i].hidden = max(0, finite(ps[i].value)), max(0, finite(ps[i].hidden))
		total += ps[i].value
	}
	// One time axis for the stacked step and every part's bar: the axis reaches
	// the step (or a hidden time longer than it).
	axisMax := total
	for _, p := range ps {
		axisMax = max(axisMax, p.value, p.hidden)
	}
	plotW := bdWidth - bdLeft - bdRight
	barsTop := bdStackTop + bdStackH + 40
	height := barsTop + bdRowH*float64(len(ps)) + 50

	scale := 0.0
	if axisMax > 0 {
		scale = plotW / axisMax
	}
	// The figure widens to its longest label rather than clip it.
	width := bdWidth
	right := func(x float64, s string, px float64) { width = max(width, x+textWidth(s, px)+8) }

	var c canvas
	c.text(bdLeft, 20, "start", ` font-size="15" font-weight="bold"`, title)
	right(bdLeft, title, 15)
	sub := fmt.Sprintf("%s — step %s, %d GPUs, %.0f tokens/s, MFU %.1f %%, memory %.1f of %.1f GB per GPU",
		LayoutLabel(r.Layout), seconds(r.StepTime), r.GPUs, finite(r.Throughput.TokensPerSec), 100*finite(r.Throughput.MFU),
		finite(r.Memory.Total), finite(r.Memory.Capacity))
	c.text(bdLeft, 38, "start", "", sub)
	right(bdLeft, sub, 12)

	// The whole step as one stacked bar, on the parts' time axis.
	c.text(bdLeft-8, bdStackTop+bdStackH/2+4, "end", "", "step")
	x := bdLeft
	for _, p := range ps {
		if p.value <= 0 || total <= 0 {
			continue
		}
		w := p.value * scale
		c.printf(`<g class="stack-part" data-part="%s"><title>%s</title>`, esc(p.name), esc(fmt.Sprintf("%s: %s (%.1f %%)", p.name, seconds(p.value), 100*p.value/total)))
		c.rect(x, bdStackTop, w, bdStackH, fmt.Sprintf(` fill="%s" stroke="#ffffff" stroke-width="0.5"`, p.fill))
		c.printf("</g>\n")
		x += w
	}
	c.text(x+8, bdStackTop+bdStackH/2+4, "start", "", seconds(total))
	right(x+8, seconds(total), 12)

	// One bar per part, on the same time axis.
	unit, unitScale := timeUnit(axisMax)
	for i, p := range ps {
		y := barsTop + float64(i)*bdRowH
		c.printf(`<g class="part" data-part="%s">`, esc(p.name))
		c.text(bdLeft-8, y+bdRowH/2+4, "end", "", p.name)
		if p.hidden > 0 {
			c.rect(bdLeft, y+bdRowH-6, p.hidden*scale, 3, fmt.Sprintf(` fill="%s" fill-opacity="0.45"`, p.fill))
		}
		c.rect(bdLeft, y+3, p.value*scale, bdRowH-10, fmt.Sprintf(` fill="%s" stroke="#888888" stroke-width="0.5"`, p.fill))
		label := seconds(p.value)
		if total > 0 {
			label += fmt.Sprintf(" (%.1f %%)", 100*p.value/total)
		}
		if p.hidden > 0 {
			label += ", " + seconds(p.hidden) + " hidden"
		}
		c.text(bdLeft+p.value*scale+6, y+bdRowH/2+3, "start", ` font-size="11"`, label)
		right(bdLeft+p.value*scale+6, label, 11)
		c.printf("</g>\n")
	}
	axisY := barsTop + bdRowH*float64(len(ps)) + 4
	c.timeAxis(bdLeft, axisY, plotW, axisMax, scale, unitScale, 6, "time per step ("+unit+"); thin bars: communication hidden under compute")
	return c.onWhite(width, height)
}
