package picture

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/stepcost/stepcost/estimator/calibrate"
)

// BusBWSeries is one collective's bus bandwidth over message size: measured, and
// predicted before and after calibration (GB/s, one value per size; 0 where there
// is none).
type BusBWSeries struct {
	Title                   string
	Bytes                   []float64
	Measured, Before, After []float64
	BeforeLabel, AfterLabel string
}

const (
	bwLeft, bwTop, bwW, bwH = 70.0, 50.0, 560.0, 260.0
	bwWidth, bwHeight       = bwLeft + bwW + 170, bwTop + bwH + 50
)

// BusBW draws measured against predicted bus bandwidth over message size (log₂
// axis), as `stepcost calibrate --svg` shows one collective of one input file.
func BusBW(s BusBWSeries) (Figure, error) {
	n := len(s.Bytes)
	if n == 0 || len(s.Measured) != n || len(s.Before) != n || len(s.After) != n {
		return Figure{}, fmt.Errorf("picture: a bus-bandwidth series needs one measured, before and after value per size (%d sizes, %d, %d, %d)", n, len(s.Measured), len(s.Before), len(s.After))
	}
	lo, hi, yMax := math.Inf(1), math.Inf(-1), 0.0
	for i, b := range s.Bytes {
		if !(b > 0) {
			return Figure{}, fmt.Errorf("picture: size %v is not positive", b)
		}
		lo, hi = math.Min(lo, math.Log2(b)), math.Max(hi, math.Log2(b))
		yMax = math.Max(yMax, math.Max(finite(s.Measured[i]), math.Max(finite(s.Before[i]), finite(s.After[i]))))
	}
	if hi == lo {
		lo, hi = lo-1, hi+1
	}
	if yMax <= 0 {
		yMax = 1
	}
	yt, ys := ticks(0, yMax*1.05, 6)
	yTop := yt[len(yt)-1]
	if yTop < yMax {
		yTop += ys
	}
	px := func(b float64) float64 { return bwLeft + (math.Log2(b)-lo)/(hi-lo)*bwW }
	py := func(v float64) float64 { return bwTop + bwH - finite(v)/yTop*bwH }

	var c canvas
	c.text(bwLeft, 22, "start", ` font-size="15" font-weight="bold"`, s.Title)
	c.text(bwLeft, 40, "start", ` font-size="11"`, "bus bandwidth over message size: measured (dots), predicted before (dashed) and after (solid) calibration")
	for _, v := range yt {
		y := py(v)
		c.line(bwLeft, y, bwLeft+bwW, y, ` stroke="#e5e5e5"`)
		c.text(bwLeft-8, y+4, "end", ` font-size="11"`, tickLabel(v, ys))
	}
	for e := math.Ceil(lo); e <= hi; e += math.Max(1, math.Ceil((hi-lo)/10)) {
		x := bwLeft + (e-lo)/(hi-lo)*bwW
		c.line(x, bwTop+bwH, x, bwTop+bwH+5, ` stroke="#333333"`)
		c.text(x, bwTop+bwH+18, "middle", ` font-size="11"`, sizeLabel(math.Exp2(e)))
	}
	c.line(bwLeft, bwTop+bwH, bwLeft+bwW, bwTop+bwH, ` stroke="#333333"`)
	c.line(bwLeft, bwTop, bwLeft, bwTop+bwH, ` stroke="#333333"`)
	c.text(bwLeft+bwW/2, bwHeight-8, "middle", "", "message size (nccl-tests convention)")
	c.printf(`<text x="18" y="%s" text-anchor="middle" transform="rotate(-90 18 %s)">busbw (GB/s)</text>`+"\n", num(bwTop+bwH/2), num(bwTop+bwH/2))

	path := func(vs []float64, attrs string) {
		var b strings.Builder
		for i, v := range vs {
			if !(v > 0) {
				continue
			}
			if b.Len() == 0 {
				b.WriteString("M")
			} else {
				b.WriteString(" L")
			}
			fmt.Fprintf(&b, "%s %s", num(px(s.Bytes[i])), num(py(v)))
		}
		if b.Len() > 0 {
			c.printf(`<path d="%s" fill="none"%s/>`+"\n", b.String(), attrs)
		}
	}
	path(s.Before, ` stroke="#999999" stroke-width="1.5" stroke-dasharray="5 4"`)
	path(s.After, ` stroke="#1f77b4" stroke-width="2"`)
	for i, v := range s.Measured {
		if v > 0 {
			c.printf(`<circle cx="%s" cy="%s" r="3" fill="#d62728"/>`+"\n", num(px(s.Bytes[i])), num(py(v)))
		}
	}
	lx := bwLeft + bwW + 15
	c.printf(`<circle cx="%s" cy="%s" r="3" fill="#d62728"/>`+"\n", num(lx+10), num(bwTop+10))
	c.text(lx+22, bwTop+14, "start", ` font-size="11"`, "measured")
	c.line(lx, bwTop+30, lx+20, bwTop+30, ` stroke="#999999" stroke-width="1.5" stroke-dasharray="5 4"`)
	c.text(lx+22, bwTop+34, "start", ` font-size="11"`, orDefault(s.BeforeLabel, "before"))
	c.line(lx, bwTop+50, lx+20, bwTop+50, ` stroke="#1f77b4" stroke-width="2"`)
	c.text(lx+22, bwTop+54, "start", ` font-size="11"`, orDefault(s.AfterLabel, "after"))
	return c.figure(bwWidth, bwHeight), nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// sizeLabel prints a power-of-two size: 8 B, 64 KiB, 1 GiB.
func sizeLabel(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%s %s", strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", b), "0"), "."), units[i])
}

// Calibration draws one bus-bandwidth picture per nccl-tests sweep of a
// calibration, stacked: measured, the base cluster's prediction and the calibrated
// one, as `stepcost calibrate --svg` and the page show them.
func Calibration(r *calibrate.Report, sweeps []calibrate.Sweep) (Figure, error) {
	var figs []Figure
	for _, s := range sweeps {
		series := BusBWSeries{Title: fmt.Sprintf("%s — %s", filepath.Base(s.File), s.Describe()),
			BeforeLabel: "base " + r.Base, AfterLabel: "calibrated"}
		f := s.Op.BusFactor(s.Ranks)
		bus := func(m calibrate.Measured) float64 { return m.Bytes / m.PredictedUs / 1e3 * f }
		for i, m := range r.Before {
			if m.File != s.File || i >= len(r.After) {
				continue
			}
			series.Bytes = append(series.Bytes, m.Bytes)
			series.Measured = append(series.Measured, m.Bytes/m.MeasuredUs/1e3*f)
			series.Before = append(series.Before, bus(m))
			series.After = append(series.After, bus(r.After[i]))
		}
		fig, err := BusBW(series)
		if err != nil {
			return Figure{}, fmt.Errorf("%s: %w", s.File, err)
		}
		figs = append(figs, fig)
	}
	if len(figs) == 0 {
		return Figure{}, fmt.Errorf("no nccl-tests file to draw")
	}
	return Stack(figs...), nil
}
