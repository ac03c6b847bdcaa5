// Package picture draws stepcost's answers as SVG: the pipeline schedule of one
// layout (which micro-batch each stage runs when, where it idles, what
// communication is exposed), where one step's time goes, and the Pareto front of a
// plan search.
//
// Every number drawn comes from an estimate (step.Result) or a search
// (planner.Result); the package only lays them out. Output is deterministic: the
// same input gives the same bytes (no timestamps, no map iteration, numbers
// printed with a fixed precision), so pictures can be diffed, cached and tested.
// Text from the caller (model names, labels) is XML-escaped.
package picture

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Figure is one SVG picture: its size in pixels and its content.
type Figure struct {
	Width, Height float64
	body          []byte // the elements inside the root <svg>
}

// SVG returns the figure as a standalone SVG document.
func (f Figure) SVG() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="12">`,
		num(f.Width), num(f.Height), num(f.Width), num(f.Height))
	b.WriteByte('\n')
	b.Write(f.body)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// Stack puts figures one under the other in one picture, as `stepcost estimate
// --svg` writes the schedule above the breakdown.
func Stack(figs ...Figure) Figure {
	var out Figure
	var b bytes.Buffer
	for _, f := range figs {
		// A nested <svg> keeps each figure's coordinates (and its pattern ids, which
		// are prefixed per figure kind, so two figures never clash).
		fmt.Fprintf(&b, `<svg x="0" y="%s" width="%s" height="%s" viewBox="0 0 %s %s">`+"\n",
			num(out.Height), num(f.Width), num(f.Height), num(f.Width), num(f.Height))
		b.Write(f.body)
		b.WriteString("</svg>\n")
		out.Height += f.Height
		out.Width = max(out.Width, f.Width)
	}
	out.body = b.Bytes()
	return out
}

// canvas accumulates SVG elements.
type canvas struct {
	b bytes.Buffer
}

func (c *canvas) printf(format string, args ...any) { fmt.Fprintf(&c.b, format, args...) }

// text writes a text element; s is escaped.
func (c *canvas) text(x, y float64, anchor, attrs, s string) {
	c.printf(`<text x="%s" y="%s" text-anchor="%s"%s>%s</text>`+"\n", num(x), num(y), anchor, attrs, esc(s))
}

func (c *canvas) line(x1, y1, x2, y2 float64, attrs string) {
	c.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s"%s/>`+"\n", num(x1), num(y1), num(x2), num(y2), attrs)
}

func (c *canvas) rect(x, y, w, h float64, attrs string) {
	c.printf(`<rect x="%s" y="%s" width="%s" height="%s"%s/>`+"\n", num(x), num(y), num(max(0, w)), num(max(0, h)), attrs)
}

func (c *canvas) figure(w, h float64) Figure {
	return Figure{Width: w, Height: h, body: bytes.Clone(c.b.Bytes())}
}

// textWidth is an upper estimate of the width of s drawn at font size px in the
// sans-serif fonts SVG viewers pick (DejaVu Sans, Helvetica, Arial): their digits
// are 0.636 em (DejaVu) or 0.556 em (Helvetica) wide and lower-case letters
// average less, so 0.64 em a character errs on the wide side. Labels are laid out
// with it so that none runs past the edge of its picture.
func textWidth(s string, px float64) float64 {
	return 0.64 * px * float64(len([]rune(s)))
}

// onWhite is the figure of what c holds, w × h, on a white background of that
// size (drawn first, so it is laid out once the size is known).
func (c *canvas) onWhite(w, h float64) Figure {
	var bg canvas
	bg.rect(0, 0, w, h, ` fill="#ffffff"`)
	bg.b.Write(c.b.Bytes())
	return bg.figure(w, h)
}

// esc escapes text for an XML text node or attribute value, and drops what XML 1.0
// cannot carry at all (control characters, invalid UTF-8), so that a caller's label
// never breaks the document.
func esc(s string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case r < 0x20 || r == 0xFFFE || r == 0xFFFF:
			return -1
		case r >= 0xD800 && r <= 0xDFFF:
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	var b strings.Builder
	xml.EscapeText(&b, []byte(clean)) // never fails on a strings.Builder
	return b.String()
}

// num prints a coordinate with at most two decimals, and 0 for what is not a finite
// number (a picture never carries NaN, which SVG viewers reject).
func num(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "0"
	}
	x = math.Round(x*100) / 100
	if x == 0 {
		return "0" // no "-0"
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// seconds prints a duration for a label, in the unit that suits it.
func seconds(s float64) string {
	a := math.Abs(s)
	switch {
	case math.IsNaN(s) || math.IsInf(s, 0):
		return "–"
	case a == 0:
		return "0 s"
	case a >= 1:
		return strconv.FormatFloat(s, 'f', 3, 64) + " s"
	case a >= 1e-3:
		return strconv.FormatFloat(s*1e3, 'f', 2, 64) + " ms"
	}
	return strconv.FormatFloat(s*1e6, 'f', 1, 64) + " µs"
}

// finite is x, or 0 when x is NaN or infinite.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// ticks returns about n round tick values covering [lo, hi] (1, 2 or 5 × 10^k
// apart) and the step between them.
func ticks(lo, hi float64, n int) ([]float64, float64) {
	if !(hi > lo) || n < 1 {
		return []float64{lo}, 0
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi*(1+1e-9) && len(out) < 4*n+2; v += step {
		out = append(out, v)
	}
	return out, step
}

// tickLabel prints a tick value in the axis unit with as many decimals as the tick
// step needs.
func tickLabel(v, step float64) string {
	d := 0
	if step > 0 && step < 1 {
		d = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	if math.Abs(v) < step/2 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', min(d, 9), 64)
}

// timeAxis draws a horizontal time axis at y from left over width: about n
// ticks from 0 to span seconds, at scale points per second, labelled in the unit
// unitScale converts seconds to, and caption under its right end.
func (c *canvas) timeAxis(left, y, width, span, scale, unitScale float64, n int, caption string) {
	c.line(left, y, left+width, y, ` stroke="#333333"`)
	tv, step := ticks(0, span*unitScale, n)
	for _, v := range tv {
		x := left + v/unitScale*scale
		c.line(x, y, x, y+5, ` stroke="#333333"`)
		c.text(x, y+17, "middle", ` font-size="11"`, tickLabel(v, step))
	}
	c.text(left+width, y+32, "end", ` font-size="11"`, caption)
}

// timeUnit picks the unit of a time axis spanning up to span seconds.
func timeUnit(span float64) (name string, scale float64) {
	switch {
	case span >= 1:
		return "s", 1
	case span >= 1e-3:
		return "ms", 1e3
	}
	return "µs", 1e6
}
