package picture

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/stepcost/stepcost/planner"
)

// Candidate is one plan of a search, as the Pareto picture shows it.
type Candidate struct {
	Label      string  // the layout, e.g. LayoutLabel
	GPUs       int     // job size
	StepTime   float64 // seconds
	MemoryGB   float64 // peak memory per GPU
	CapacityGB float64 // the GPU's memory
	// Rank is the plan's place in the ranking (1 the best), 0 for a plan that is
	// only on the front.
	Rank      int
	OnFront   bool
	Dominated bool
}

// Front is what the Pareto picture draws: the plans a search returned.
type Front struct {
	Title      string
	Candidates []Candidate
	// Evaluated is how many layouts the search estimated, of which Candidates are
	// the ones it returned (the top plans and the front).
	Evaluated int
}

// FrontOf collects a search's top plans and Pareto front (a plan in both once).
func FrontOf(res planner.Result, title string) Front {
	top := make([]Candidate, len(res.Top))
	for i, p := range res.Top {
		top[i] = candidateOf(p)
	}
	front := make([]Candidate, len(res.Pareto))
	for i, p := range res.Pareto {
		front[i] = candidateOf(p)
	}
	return Merge(title, res.Stats.Evaluated, top, front)
}

// Merge is the front of a search that evaluated evaluated layouts and returned
// the top plans and the Pareto front: a plan in both is drawn once, ranked and on
// the front; a plan only on the front is unranked. A plan is known by its job
// size, its layout and its step time (candidateKey), wherever it comes from (the
// planner's result, the API's answer).
func Merge(title string, evaluated int, top, front []Candidate) Front {
	f := Front{Title: title, Evaluated: evaluated}
	index := map[string]int{}
	for _, c := range top {
		index[candidateKey(c)] = len(f.Candidates)
		f.Candidates = append(f.Candidates, c)
	}
	for _, c := range front {
		if i, ok := index[candidateKey(c)]; ok {
			f.Candidates[i].OnFront = true
			continue
		}
		c.Rank, c.OnFront = 0, true
		f.Candidates = append(f.Candidates, c)
	}
	return f
}

// candidateKey identifies a plan: its job size, its layout and its step time.
func candidateKey(c Candidate) string {
	return strconv.Itoa(c.GPUs) + "|" + c.Label + "|" + strconv.FormatFloat(c.StepTime, 'g', -1, 64)
}

func candidateOf(p planner.Plan) Candidate {
	return Candidate{Label: LayoutLabel(p.Layout), GPUs: p.GPUs, StepTime: p.Estimate.StepTime, MemoryGB: p.Estimate.Memory.Total,
		CapacityGB: p.Estimate.Memory.Capacity, Rank: p.Rank, Dominated: p.Dominated}
}

// Layout of the Pareto figure, pixels.
const (
	parWidth  = 900.0
	parHeight = 560.0
	parLeft   = 80.0
	parRight  = 190.0
	parTop    = 60.0
	parBottom = 60.0
)

// ErrNoCandidates is a Pareto picture of a search that returned no plan.
var ErrNoCandidates = errors.New("picture: the search returned no plans to draw")

// Pareto draws step time against peak memory per GPU for a search's plans: every
// plan faint, the Pareto front (GPUs × step time × memory headroom) highlighted and
// joined in order of memory, the best plan (rank 1) marked and named, the GPU's
// memory as a dashed line. When the plans span several job sizes each front plan
// is labelled with its GPU count.
func Pareto(f Front) (Figure, error) {
	var cs []Candidate
	for _, c := range f.Candidates {
		if c.StepTime = finite(c.StepTime); c.StepTime < 0 {
			continue
		}
		c.MemoryGB, c.CapacityGB = max(0, finite(c.MemoryGB)), max(0, finite(c.CapacityGB))
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return Figure{}, ErrNoCandidates
	}
	maxMem, maxStep, capGB := 0.0, 0.0, 0.0
	gpuCounts := map[int]bool{}
	sameCap := true
	for _, c := range cs {
		maxMem, maxStep = max(maxMem, c.MemoryGB), max(maxStep, c.StepTime)
		if capGB != 0 && c.CapacityGB != capGB {
			sameCap = false
		}
		capGB = max(capGB, c.CapacityGB)
		gpuCounts[c.GPUs] = true
	}
	xMax := niceCeil(max(maxMem, capGB) * 1.05)
	stepUnit, stepScale := timeUnit(maxStep)
	yMax := niceCeil(maxStep * stepScale * 1.1)
	plotW, plotH := parWidth-parLeft-parRight, parHeight-parTop-parBottom
	px := func(gb float64) float64 { return parLeft + gb/xMax*plotW }
	py := func(s float64) float64 { return parTop + plotH - s*stepScale/yMax*plotH }

	var c canvas
	c.rect(0, 0, parWidth, parHeight, ` fill="#ffffff"`)
	c.text(parLeft, 20, "start", ` font-size="15" font-weight="bold"`, f.Title)
	front := 0
	for _, x := range cs {
		if x.OnFront {
			front++
		}
	}
	c.text(parLeft, 38, "start", "", fmt.Sprintf("%d plans shown (the top plans and the Pareto front) of %d layouts estimated; %d on the front",
		len(cs), f.Evaluated, front))

	// Axes and grid.
	c.rect(parLeft, parTop, plotW, plotH, ` fill="none" stroke="#333333"`)
	xt, xs := ticks(0, xMax, 8)
	for _, v := range xt {
		c.line(px(v), parTop+plotH, px(v), parTop+plotH+5, ` stroke="#333333"`)
		c.line(px(v), parTop, px(v), parTop+plotH, ` stroke="#e5e5e5"`)
		c.text(px(v), parTop+plotH+18, "middle", ` font-size="11"`, tickLabel(v, xs))
	}
	c.text(parLeft+plotW/2, parHeight-14, "middle", "", "peak memory per GPU (GB)")
	yt, ys := ticks(0, yMax, 6)
	for _, v := range yt {
		y := parTop + plotH - v/yMax*plotH
		c.line(parLeft-5, y, parLeft, y, ` stroke="#333333"`)
		c.line(parLeft, y, parLeft+plotW, y, ` stroke="#e5e5e5"`)
		c.text(parLeft-8, y+4, "end", ` font-size="11"`, tickLabel(v, ys))
	}
	c.printf(`<text x="18" y="%s" text-anchor="middle" transform="rotate(-90 18 %s)">step time (%s)</text>`+"\n",
		num(parTop+plotH/2), num(parTop+plotH/2), stepUnit)
	if capGB > 0 && sameCap {
		c.line(px(capGB), parTop, px(capGB), parTop+plotH, ` stroke="#a33" stroke-dasharray="5,4"`)
		c.text(px(capGB)-4, parTop+14, "end", ` font-size="11" fill="#a33"`, fmt.Sprintf("GPU memory %.0f GB", capGB))
	}

	// Every plan, faint; then the front joined by memory; then the best plan.
	for _, x := range cs {
		c.printf(`<circle class="candidate" cx="%s" cy="%s" r="4" fill="#8899aa" fill-opacity="0.35"><title>%s</title></circle>`+"\n",
			num(px(x.MemoryGB)), num(py(x.StepTime)), esc(candidateTitle(x)))
	}
	fr := slices.DeleteFunc(slices.Clone(cs), func(x Candidate) bool { return !x.OnFront })
	slices.SortStableFunc(fr, func(a, b Candidate) int {
		if a.MemoryGB != b.MemoryGB {
			return cmpFloat(a.MemoryGB, b.MemoryGB)
		}
		return cmpFloat(a.StepTime, b.StepTime)
	})
	if len(fr) > 1 && len(gpuCounts) == 1 {
		var pts []byte
		for i, x := range fr {
			if i > 0 {
				pts = append(pts, ' ')
			}
			pts = fmt.Appendf(pts, "%s,%s", num(px(x.MemoryGB)), num(py(x.StepTime)))
		}
		c.printf(`<polyline points="%s" fill="none" stroke="#e07b00" stroke-width="1.5"/>`+"\n", pts)
	}
	for _, x := range fr {
		c.printf(`<circle class="front" cx="%s" cy="%s" r="5.5" fill="#e07b00" stroke="#7a4300"><title>%s</title></circle>`+"\n",
			num(px(x.MemoryGB)), num(py(x.StepTime)), esc(candidateTitle(x)))
		if len(gpuCounts) > 1 {
			c.text(px(x.MemoryGB)+8, py(x.StepTime)-6, "start", ` font-size="10" fill="#7a4300"`, fmt.Sprintf("%d GPUs", x.GPUs))
		}
	}
	if i := slices.IndexFunc(cs, func(x Candidate) bool { return x.Rank == 1 }); i >= 0 {
		b := cs[i]
		bx, by := px(b.MemoryGB), py(b.StepTime)
		c.printf(`<g class="best"><title>%s</title>`, esc(candidateTitle(b)))
		c.printf(`<path d="M %s %s l 3.5 7 7.5 1 -5.5 5.5 1.5 7.5 -7 -3.5 -7 3.5 1.5 -7.5 -5.5 -5.5 7.5 -1 z" fill="#d62728" stroke="#5a0000"/>`,
			num(bx), num(by-11))
		c.printf("</g>\n")
		c.text(parLeft+plotW+12, parTop+14, "start", ` font-weight="bold" fill="#d62728"`, "★ best plan")
		c.text(parLeft+plotW+12, parTop+30, "start", ` font-size="11"`, b.Label)
		c.text(parLeft+plotW+12, parTop+46, "start", ` font-size="11"`, fmt.Sprintf("%d GPUs, step %s", b.GPUs, seconds(b.StepTime)))
		c.text(parLeft+plotW+12, parTop+62, "start", ` font-size="11"`, fmt.Sprintf("%.1f GB per GPU", b.MemoryGB))
	}
	// Legend.
	ly := parTop + 96
	c.printf(`<circle cx="%s" cy="%s" r="4" fill="#8899aa" fill-opacity="0.35"/>`+"\n", num(parLeft+plotW+18), num(ly-4))
	c.text(parLeft+plotW+28, ly, "start", ` font-size="11"`, "plan returned")
	c.printf(`<circle cx="%s" cy="%s" r="5.5" fill="#e07b00" stroke="#7a4300"/>`+"\n", num(parLeft+plotW+18), num(ly+14))
	c.text(parLeft+plotW+28, ly+18, "start", ` font-size="11"`, "Pareto front")
	c.text(parLeft+plotW+12, ly+40, "start", ` font-size="10" fill="#555555"`, "front: GPUs × step time ×")
	c.text(parLeft+plotW+12, ly+53, "start", ` font-size="10" fill="#555555"`, "memory headroom")
	return c.figure(parWidth, parHeight), nil
}

func candidateTitle(x Candidate) string {
	s := fmt.Sprintf("%s, %d GPUs: step %s, %.1f GB per GPU", x.Label, x.GPUs, seconds(x.StepTime), x.MemoryGB)
	if x.Rank > 0 {
		s = fmt.Sprintf("#%d ", x.Rank) + s
	}
	if x.Dominated {
		s += " (dominated)"
	}
	return s
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// niceCeil rounds x up to 1, 2 or 5 × 10^k (1 for what is not positive).
func niceCeil(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= x {
			return m * mag
		}
	}
	return 10 * mag
}
