package cli

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/pflag"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/collective/accuracy"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/topology"
)

func accuracyCommand(fs *pflag.FlagSet) runFunc {
	rows := fs.Bool("rows", false, "print every measurement with its prediction")
	asJSON := fs.Bool("json", false, "print JSON")
	fit := fs.Bool("fit", false, "refit the calibrated constants from their current values and print them")
	fromPrior := fs.Bool("from-prior", false, "with --fit: fit as every cross-validation fold does, from NCCL's own constants (accuracy.Prior), on every row")
	loso := fs.Bool("cross-validate", false, "leave one source out: refit without each source (from NCCL's own constants) and score it; prints in-sample and out-of-sample tables (about 2 minutes of CPU, the folds in parallel: a minute on two idle cores)")
	return func(_ context.Context, args []string, stdout, stderr io.Writer) error {
		data, err := accuracy.Rows()
		if err != nil {
			return err
		}
		if *fromPrior && !*fit {
			return fmt.Errorf("--from-prior: only with --fit")
		}
		// --fit and --cross-validate each print their own report, which has no rows.
		if *fit && *loso {
			return fmt.Errorf("--fit and --cross-validate: give one")
		}
		if *rows && (*fit || *loso) {
			return fmt.Errorf("--rows: only without --fit and --cross-validate")
		}
		if *fit {
			return runFit(stdout, data, *fromPrior, *asJSON)
		}
		if *loso {
			return runCrossValidate(stdout, data, *asJSON)
		}
		res := accuracy.Evaluate(collective.NewModel(collective.Default()), accuracy.Cases(data))
		var buckets []accuracy.Summary
		for _, b := range accuracy.Buckets() {
			buckets = append(buckets, accuracy.Summarise(b.Label, res, b.Keep))
		}
		systems := accuracy.BySystem(res)
		if *asJSON {
			type row struct {
				ID          string  `json:"id"`
				Op          string  `json:"op"`
				SizeBytes   float64 `json:"size_bytes"`
				Ranks       int     `json:"ranks"`
				MeasuredUs  float64 `json:"measured_us"`
				PredictedUs float64 `json:"predicted_us"`
				Algorithm   string  `json:"algorithm"`
				Protocol    string  `json:"protocol"`
				RelErr      float64 `json:"rel_err"`
				Scored      bool    `json:"scored"`
				Excluded    string  `json:"excluded,omitempty"`
			}
			out := struct {
				Buckets []accuracy.Summary `json:"buckets"`
				Systems []accuracy.Summary `json:"systems"`
				Rows    []row              `json:"rows,omitempty"`
			}{Buckets: buckets, Systems: systems}
			if *rows {
				for _, r := range res {
					x := row{ID: r.Row.ID, Op: r.Op.String(), SizeBytes: r.Bytes, Ranks: r.Ranks, MeasuredUs: r.MeasuredUs,
						PredictedUs: r.Predicted.TimeUs, RelErr: r.RelErr, Scored: r.Scored, Excluded: r.Why}
					if r.Err != nil {
						x.Excluded = r.Err.Error()
					} else if r.Predicted.TimeUs > 0 {
						x.Algorithm, x.Protocol = r.Predicted.Algo.String(), r.Predicted.Protocol.String()
					}
					out.Rows = append(out.Rows, x)
				}
			}
			return writeJSON(stdout, out)
		}
		fmt.Fprintln(stdout, "Collective model vs published nccl-tests measurements (time per call; scored rows only)")
		fmt.Fprintln(stdout)
		summaryTable("size", buckets).write(stdout)
		fmt.Fprintln(stdout)
		summaryTable("system (source)", systems).write(stdout)
		if *rows {
			fmt.Fprintln(stdout)
			t := table{head: []string{"id", "op", "size", "ranks", "measured", "predicted", "error", "algorithm", "note"}, wrap: "note"}
			for _, r := range res {
				note := r.Why
				if r.Err != nil {
					note = r.Err.Error()
				}
				if r.Row.ID == "" || r.Predicted.TimeUs == 0 && r.Err == nil && r.Why != "" {
					t.add(r.Row.ID, r.Row.Collective, "-", "-", "-", "-", "-", "-", note)
					continue
				}
				t.add(r.Row.ID, r.Op.String(), FormatSize(r.Bytes), fmt.Sprint(r.Ranks), fmtUs(r.MeasuredUs), fmtUs(r.Predicted.TimeUs),
					fmt.Sprintf("%+.1f%%", 100*r.RelErr), r.Predicted.Algo.String()+"/"+r.Predicted.Protocol.String(), note)
			}
			t.write(stdout)
		}
		return nil
	}
}

func summaryTable(first string, ss []accuracy.Summary) *table {
	t := &table{head: []string{first, "rows", "median |err|", "mean |err|", "p90 |err|", "max |err|", "bias"}, optional: []string{"p90 |err|", "mean |err|"}}
	for _, s := range ss {
		t.add(s.Label, fmt.Sprint(s.N), pct(s.MedianAbs), pct(s.MeanAbs), pct(s.P90Abs), pct(s.MaxAbs), fmt.Sprintf("%+.1f%%", 100*s.Bias))
	}
	return t
}

func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// runFit refits the constants, starting from the current ones (or, fromPrior, as
// every cross-validation fold does: accuracy.FitAllRows), and prints them, as a
// table or as JSON.
func runFit(w io.Writer, data []accuracy.Row, fromPrior, asJSON bool) error {
	cases := accuracy.Cases(data)
	start := accuracy.Knobs{K: collective.Default(), Links: accuracy.Links{
		IntraLatencyUs: topology.NVLinkHopLatencyUs,
		RackLatencyUs:  topology.NVLinkRackHopLatencyUs,
		NetLatencyUs:   topology.NetHopLatencyUs,
		EFALatencyUs:   topology.EFAHopLatencyUs,
	}}
	before := accuracy.Loss(accuracy.Price(collective.NewModel(start.K), accuracy.PrepareWith(accuracy.FitCases(cases), start.Links)))
	var k accuracy.Knobs
	var after float64
	if fromPrior {
		k, after = accuracy.FitAllRows(cases)
	} else {
		k, after = accuracy.Fit(cases, start, accuracy.FitParams(), 60)
	}
	if asJSON {
		type constant struct {
			Name     string   `json:"name"`
			Current  float64  `json:"current"`
			Refitted float64  `json:"refitted"`
			Fitted   bool     `json:"fitted"`             // false: moved with a fitted one, not fitted itself
			AtBound  bool     `json:"at_bound,omitempty"` // on a bound of its fit range: missing physics
			Min      *float64 `json:"min,omitempty"`      // the fit's range (fitted constants)
			Max      *float64 `json:"max,omitempty"`
		}
		out := struct {
			FromPrior    bool       `json:"from_prior"`
			LossCurrent  float64    `json:"loss_current"`
			LossRefitted float64    `json:"loss_refitted"`
			Constants    []constant `json:"constants"`
		}{FromPrior: fromPrior, LossCurrent: before, LossRefitted: after}
		bound := accuracy.AtBound(k, accuracy.FitParams())
		for _, p := range accuracy.FitParams() {
			out.Constants = append(out.Constants, constant{Name: p.Name, Current: *p.Get(&start), Refitted: *p.Get(&k), Fitted: true,
				AtBound: slices.ContainsFunc(bound, func(b accuracy.Param) bool { return b.Name == p.Name }), Min: &p.Min, Max: &p.Max})
		}
		for _, a := range []hardware.Arch{hardware.Hopper, hardware.Blackwell} {
			if start.K.NVLSEfficiency[a] != k.K.NVLSEfficiency[a] {
				out.Constants = append(out.Constants, constant{Name: "NVLSEfficiency." + string(a), Current: start.K.NVLSEfficiency[a], Refitted: k.K.NVLSEfficiency[a]})
			}
		}
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "loss (mean |log error| + bucket medians): current %.4f, refitted %.4f\n\n", before, after)
	t := table{head: []string{"constant", "current", "refitted"}}
	for _, p := range accuracy.FitParams() {
		t.add(p.Name, fmt.Sprintf("%.4g", *p.Get(&start)), fmt.Sprintf("%.4g", *p.Get(&k)))
	}
	for _, a := range []hardware.Arch{hardware.Hopper, hardware.Blackwell} {
		if start.K.NVLSEfficiency[a] != k.K.NVLSEfficiency[a] {
			t.add("NVLSEfficiency."+string(a)+" (not fitted)", fmt.Sprintf("%.4g", start.K.NVLSEfficiency[a]), fmt.Sprintf("%.4g", k.K.NVLSEfficiency[a]))
		}
	}
	t.write(w)
	// A constant the fit pushes onto a bound of its range is missing physics.
	for _, p := range accuracy.AtBound(k, accuracy.FitParams()) {
		fmt.Fprintf(w, "at a bound: %s = %.4g (fit range %.4g – %.4g)\n", p.Name, *p.Get(&k), p.Min, p.Max)
	}
	return nil
}

// runCrossValidate prints the in-sample and leave-one-source-out statistics side by
// side, by size class, for multi-node rows and by source.
func runCrossValidate(w io.Writer, data []accuracy.Row, asJSON bool) error {
	cases := accuracy.Cases(data)
	in := accuracy.Evaluate(collective.NewModel(collective.Default()), cases)
	out := accuracy.OutOfSample(accuracy.CrossValidate(cases, accuracy.Prior(), accuracy.FitParams(), accuracy.CrossValidateRounds))
	type pair struct {
		Label     string           `json:"label"`
		InSample  accuracy.Summary `json:"in_sample"`
		OutSample accuracy.Summary `json:"out_of_sample"`
	}
	var classes, sources []pair
	multi := func(r accuracy.Result) bool { return accuracy.MultiNode(r) && r.Bytes >= accuracy.MiB }
	for _, b := range accuracy.Buckets() {
		classes = append(classes, pair{b.Label, accuracy.Summarise(b.Label, in, b.Keep), accuracy.Summarise(b.Label, out, b.Keep)})
	}
	classes = append(classes, pair{"multi-node ≥ 1 MiB", accuracy.Summarise("", in, multi), accuracy.Summarise("", out, multi)})
	ins := accuracy.BySource(in)
	for i, o := range accuracy.BySource(out) {
		sources = append(sources, pair{o.Label, ins[i], o})
	}
	if asJSON {
		return writeJSON(w, struct {
			Classes []pair `json:"classes"`
			Sources []pair `json:"sources"`
		}{classes, sources})
	}
	fmt.Fprintln(w, "Collective model: in-sample (current constants) vs leave-one-source-out (refitted without the source); median / mean |error|")
	fmt.Fprintln(w)
	for _, group := range [][]pair{classes, sources} {
		t := table{head: []string{"rows", "n", "in-sample median", "in-sample mean", "out-of-sample median", "out-of-sample mean", "out-of-sample bias"}}
		for _, p := range group {
			t.add(p.Label, fmt.Sprint(p.OutSample.N), pct(p.InSample.MedianAbs), pct(p.InSample.MeanAbs), pct(p.OutSample.MedianAbs), pct(p.OutSample.MeanAbs), fmt.Sprintf("%+.1f%%", 100*p.OutSample.Bias))
		}
		t.write(w)
		fmt.Fprintln(w)
	}
	return nil
}
