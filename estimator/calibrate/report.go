package calibrate

import (
	"fmt"
	"math"
	"slices"

	"github.com/stepcost/stepcost/estimator/topology"
)

// Report is what calibration found: the fitted constants beside the base's, the
// error of every input before (the base cluster) and after (constants fitted
// without that input's file), the constants that moved far, and the inputs that
// contradict the others.
type Report struct {
	Base string
	// Catalog are the base cluster's constants, Fitted the calibrated ones.
	Catalog, Fitted Knobs
	// Determined are the knobs the inputs constrain (the others keep the base's value).
	Determined []Knob
	// Undetermined names each constant the inputs do not determine, kept at the
	// base's value, with the inputs that would determine it.
	Undetermined []string
	Spec         topology.Spec
	Files        []string
	// Before prices every input with the base cluster; OutOfSample with constants
	// fitted without the input's own file; After with the written constants (in sample).
	Before, OutOfSample, After []Measured
	// Rows are the error summaries: per file, per collective and size band.
	Rows []Row
	// Moved names the constants that moved far from the base's (a factor of 1.5 for
	// latencies, 10 % for efficiencies and the compute scale), and AtBound those
	// whose fit stopped at a bound of physics — a sign of something the model lacks.
	Moved, AtBound []string
	Contradictions []Contradiction
	// Excluded are the contradicting files left out of the written fit; Compromise
	// says the files contradict each other with no majority, so the fit over all of
	// them is a compromise.
	Excluded   []string
	Compromise bool
	// Mismatches are the rows NCCL evidently ran with another algorithm than the
	// model picks (fitted with the one they show; scored with the model's).
	Mismatches []Mismatch
	// Choices are the size ranges in which the rows show NCCL running another
	// algorithm than the model picks, written into the calibrated cluster
	// (topology.AlgoRange), whose automatic choice then honours them.
	Choices []topology.AlgoRange
	// Declined are the constants the inputs determine that the fit left at the
	// base's value, because moving them priced a group of rows worse.
	Declined []Declined
	// Notes are what calibration noticed of the inputs against the base cluster
	// (a training log's GPU that could not be told apart from the base's), beside
	// the readers' own (Inputs.Notes).
	Notes []string
	// Warnings are what the caller should know of the prices: an NCCL release,
	// the base's or an input's, newer than the newest the collective model
	// knows, priced by that newest one's rules (topology.NewerNCCLWarning).
	Warnings []string `json:",omitempty"`
}

// Contradiction is an input file that, fitted alone, wants a constant far from the
// value the other files agree on.
type Contradiction struct {
	File, Knob, Field string
	Alone, Others     float64
}

func (c Contradiction) String() string {
	return fmt.Sprintf("%s contradicts the other inputs: alone it wants %s %.3g, the others %.3g (%s)", c.File, c.Knob, c.Alone, c.Others, ratio(c.Alone, c.Others))
}

// Row is the median and mean |error| of a group of measurements before and after
// calibration (after: out of sample, every file scored by constants fitted without it).
type Row struct {
	Group, Label string // group: "file", "collective", "all"
	N            int
	BeforeMedian float64
	AfterMedian  float64
	BeforeMean   float64
	AfterMean    float64
}

// Stats is the median and mean |relative error| of measurements.
func Stats(ms []Measured) (median, mean float64) {
	if len(ms) == 0 {
		return 0, 0
	}
	e := make([]float64, len(ms))
	for i, m := range ms {
		e[i] = math.Abs(m.RelErr())
		mean += e[i]
	}
	slices.Sort(e)
	n := len(e)
	median = e[n/2]
	if n%2 == 0 {
		median = (e[n/2-1] + e[n/2]) / 2
	}
	return median, mean / float64(n)
}

func (r *Report) finish() {
	add := func(group, label string, keep func(Measured) bool) {
		var b, a []Measured
		for i := range r.Before {
			if keep(r.Before[i]) {
				b = append(b, r.Before[i])
			}
		}
		for i := range r.OutOfSample {
			if keep(r.OutOfSample[i]) {
				a = append(a, r.OutOfSample[i])
			}
		}
		if len(b) == 0 {
			return
		}
		row := Row{Group: group, Label: label, N: len(b)}
		row.BeforeMedian, row.BeforeMean = Stats(b)
		row.AfterMedian, row.AfterMean = Stats(a)
		r.Rows = append(r.Rows, row)
	}
	for _, f := range r.Files {
		add("file", f, func(m Measured) bool { return m.File == f })
	}
	var ops []string
	for _, m := range r.Before {
		if !slices.Contains(ops, m.Op) {
			ops = append(ops, m.Op)
		}
	}
	for _, op := range ops {
		for _, band := range []string{BandSmall, BandMedium, BandLarge} {
			add("collective", op+" "+band, func(m Measured) bool { return m.Op == op && m.Op != "step" && bandOf(m.Bytes) == band })
		}
		if op == "step" {
			add("collective", "training step", func(m Measured) bool { return m.Op == "step" })
		}
	}
	add("all", "all inputs", func(Measured) bool { return true })

	for _, kn := range r.Determined {
		a, b := kn.Of(r.Fitted), kn.Of(r.Catalog)
		far := 1.1
		if kn.latency {
			far = 1.5
		}
		if a > b*far || b > a*far {
			r.Moved = append(r.Moved, fmt.Sprintf("%s (%s) %.3g, %s the base's %.3g", kn.Name, kn.Field, a, ratio(a, b), b))
		}
		// Moved to within 2 % of a bound counts as at it: the fit pressed against
		// physics (a base value near a bound, as a 0.95 NIC efficiency, is not).
		if a != b && (a <= kn.Min*1.02 || a >= kn.Max/1.02) {
			r.AtBound = append(r.AtBound, fmt.Sprintf("%s (%s) %.3g is at its physical bound [%.3g, %.3g]: the measurements want a value physics does not allow, so something else differs from the model (the algorithm NCCL chose, a degraded link, a launcher, a library setting)", kn.Name, kn.Field, a, kn.Min, kn.Max))
		}
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		return "new"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// Summary returns the "all inputs" row.
func (r *Report) Summary() Row {
	for _, row := range r.Rows {
		if row.Group == "all" {
			return row
		}
	}
	return Row{}
}
