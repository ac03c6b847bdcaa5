package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/step/accuracy"
)

func runsCommand(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print JSON")
	filled := fs.Bool("filled", false, "also list, per run, the settings the source does not state and how they were filled")
	inSample := fs.Bool("in-sample", false, "only the shipped constants' figures: no leave-one-source-out refits (which take about a minute on two cores)")
	return func(_ context.Context, args []string, stdout, stderr io.Writer) error {
		// Every published run: published_runs.jsonl's and the MoE, fp8 and
		// Blackwell runs of published_runs_moe.jsonl.
		cases, err := accuracy.AllCases()
		if err != nil {
			return err
		}
		res := accuracy.Evaluate(step.New(), cases)
		sum := accuracy.Summarise(res)
		ranks := accuracy.Rankings(res)
		bySource := inSampleRuns(res)
		if !*inSample {
			bySource = crossValidatedRuns(res, cases)
		}
		if *asJSON {
			type row struct {
				ID        string      `json:"id"`
				Kind      string      `json:"kind"`
				GPUs      int         `json:"gpus"`
				MeasuredS float64     `json:"measured_step_s"`
				Predicted float64     `json:"predicted_step_s"`
				RelErr    float64     `json:"rel_err"`
				Layout    step.Layout `json:"layout"`
				Filled    []string    `json:"filled,omitempty"`
				Error     string      `json:"error,omitempty"`
				// PublishedOOM rows have no step time; Fits says whether the estimate agrees.
				PublishedOOM bool   `json:"published_oom,omitempty"`
				Fits         bool   `json:"fits"`
				RankingSet   string `json:"ranking_set,omitempty"`
			}
			var out struct {
				Summary  accuracy.Summary   `json:"summary"`
				Sources  []sourceFigures    `json:"sources"`
				Rankings []accuracy.Ranking `json:"rankings"`
				Kinds    []kindFigures      `json:"kinds"`
				Runs     []row              `json:"runs"`
			}
			out.Summary, out.Rankings, out.Sources, out.Kinds = sum, ranks, bySource, byKind(res)
			for _, r := range res {
				x := row{ID: r.Run.ID, Kind: runKind(r.Run), GPUs: r.Run.GPUs, MeasuredS: r.MeasuredS, Predicted: r.Estimate.StepTime, RelErr: r.RelErr, Layout: r.Layout, Filled: r.Filled,
					PublishedOOM: r.PublishedOOM, Fits: r.Estimate.Memory.Fits}
				if r.Run.RankingSet != nil {
					x.RankingSet = *r.Run.RankingSet
				}
				if r.Err != nil {
					x.Error = r.Err.Error()
				}
				out.Runs = append(out.Runs, x)
			}
			return writeJSON(stdout, out)
		}
		fmt.Fprintln(stdout, "Step-time model vs published training runs (measured step time from the primary measurement)")
		fmt.Fprintln(stdout)
		t := table{head: []string{"run", "kind", "gpus", "layout", "measured", "predicted", "error", "MFU"}, optional: []string{"MFU"}, wrap: "layout"}
		for _, r := range res {
			kind := runKind(r.Run)
			if r.Err != nil {
				t.add(r.Run.ID, kind, fmt.Sprint(r.Run.GPUs), "-", fmtSeconds(r.MeasuredS), "-", "-", r.Err.Error())
				continue
			}
			l := r.Layout
			lay := fmt.Sprintf("tp%d pp%d dp%d cp%d z%d mbs%d %s", l.TP, l.PP, l.DP, max(1, l.CP), l.ZeRO, l.MicroBatch, l.Recompute)
			if l.RecomputeLayers > 0 {
				lay += fmt.Sprintf("×%d", l.RecomputeLayers)
			}
			if l.VirtualStages > 1 {
				lay += fmt.Sprintf(" v%d", l.VirtualStages)
			}
			if r.PublishedOOM {
				verdict := "does not fit"
				if r.Estimate.Memory.Fits {
					verdict = "FITS"
				}
				t.add(r.Run.ID, kind, fmt.Sprint(r.Run.GPUs), lay, "OOM", verdict, "-", "-")
				continue
			}
			t.add(r.Run.ID, kind, fmt.Sprint(r.Run.GPUs), lay, fmtSeconds(r.MeasuredS), fmtSeconds(r.Estimate.StepTime),
				fmt.Sprintf("%+.1f%%", 100*r.RelErr), fmt.Sprintf("%.1f%%", 100*r.Estimate.Throughput.MFU))
		}
		t.write(stdout)
		fmt.Fprintf(stdout, "\n%d runs: mean |error| %.1f%%, median %.1f%%, max %.1f%% (%s), bias %+.1f%%\n",
			sum.N, 100*sum.MeanAbs, 100*sum.MedianAbs, 100*sum.Max, sum.Worst, 100*sum.Bias)
		if *inSample {
			fmt.Fprintln(stdout, "\nby source: in sample (shipped constants; without --in-sample, also left out)")
		} else {
			fmt.Fprintln(stdout, "\nby source: in sample (shipped constants) and left out (refitted from accuracy.Prior without the source)")
		}
		st := table{head: []string{"source", "runs", "in-sample mean", "in-sample max", "left-out mean", "left-out max", "left-out bias"}}
		for _, s := range bySource {
			if s.LeftOut == nil {
				st.add(s.Source, fmt.Sprint(s.InSample.N), pct(s.InSample.MeanAbs), pct(s.InSample.Max), "-", "-", "-")
				continue
			}
			st.add(s.Source, fmt.Sprint(s.InSample.N), pct(s.InSample.MeanAbs), pct(s.InSample.Max), pct(s.LeftOut.MeanAbs), pct(s.LeftOut.Max), fmt.Sprintf("%+.1f%%", 100*s.LeftOut.Bias))
		}
		st.write(stdout)
		fmt.Fprintln(stdout, "\nby kind, in sample (original: published_runs.jsonl; new: published_runs_moe.jsonl, and of these what a run exercises: moe, fp8, blackwell)")
		kt := table{head: []string{"kind", "runs", "mean", "median", "max", "bias"}}
		for _, k := range byKind(res) {
			kt.add(k.Kind, fmt.Sprint(k.InSample.N), pct(k.InSample.MeanAbs), pct(k.InSample.MedianAbs), pct(k.InSample.Max), fmt.Sprintf("%+.1f%%", 100*k.InSample.Bias))
		}
		kt.write(stdout)
		missed, oom := accuracy.MissedOOM(res)
		fmt.Fprintf(stdout, "%d runs published as out of memory: %d estimated infeasible\n", oom, oom-len(missed))
		fmt.Fprintln(stdout)
		printWrapped(stdout, "", fmt.Sprintf("ranking sets (Kendall τ of predicted vs measured throughput; τ' counts measured differences under %.0f%%, the sources' re-measurement spread, as ties):", 100*accuracy.RepeatabilityTolerance), false)
		for _, k := range ranks {
			rep := fmt.Sprintf("%+.2f", k.TauRepeatable)
			if !k.Ordered {
				rep = "no order (all within the spread)"
			}
			fmt.Fprintf(stdout, "  %-40s %d runs  τ %+.2f  τ' %s\n", k.Set, k.N, k.Tau, rep)
		}
		if *filled {
			fmt.Fprintln(stdout, "\nsettings the sources do not state:")
			for _, r := range res {
				if len(r.Filled) > 0 {
					printWrapped(stdout, "  "+r.Run.ID+": ", strings.Join(r.Filled, "; "), false)
				}
			}
		}
		return nil
	}
}

// sourceFigures are one source's statistics in sample and left out (nil with
// --in-sample: not computed, rather than zeros).
type sourceFigures struct {
	Source   string            `json:"source"`
	InSample accuracy.Summary  `json:"in_sample"`
	LeftOut  *accuracy.Summary `json:"left_out,omitempty"`
}

// inSampleRuns scores every source with the shipped constants only; the last row
// is all runs.
func inSampleRuns(in []accuracy.Result) []sourceFigures {
	names, by := accuracy.BySource(in)
	var figs []sourceFigures
	for _, n := range names {
		figs = append(figs, sourceFigures{Source: n, InSample: accuracy.Summarise(by[n])})
	}
	return append(figs, sourceFigures{Source: "all", InSample: accuracy.Summarise(in)})
}

// crossValidatedRuns scores every source in sample and with the constants fitted
// without it; the last row is all runs.
func crossValidatedRuns(in []accuracy.Result, cases []accuracy.Case) []sourceFigures {
	out := accuracy.OutOfSample(accuracy.CrossValidate(cases, accuracy.Prior(), accuracy.Setters(), accuracy.FitRounds))
	names, held := accuracy.BySource(out)
	_, inBy := accuracy.BySource(in)
	var figs []sourceFigures
	for _, n := range names {
		left := accuracy.Summarise(held[n])
		figs = append(figs, sourceFigures{n, accuracy.Summarise(inBy[n]), &left})
	}
	all := accuracy.Summarise(out)
	return append(figs, sourceFigures{"all", accuracy.Summarise(in), &all})
}

// runKind names what a run exercises: "original" for a run of published_runs.jsonl,
// else the kinds of published_runs_moe.jsonl ("moe", "fp8", "blackwell") it has, or
// "dense" for one of its runs that has none (a dense 16-bit run before Blackwell).
func runKind(r accuracy.Run) string {
	switch {
	case r.Publication == "":
		return "original"
	case len(r.Kind) == 0:
		return "dense"
	}
	return strings.Join(r.Kind, ",")
}

// kindFigures are the in-sample statistics of the runs of one kind.
type kindFigures struct {
	Kind     string           `json:"kind"`
	InSample accuracy.Summary `json:"in_sample"`
}

// runKinds orders the kinds: all runs, the original ones, those of
// published_runs_moe.jsonl ("new"), then each kind of these.
var runKinds = []string{"all", "original", "new", "moe", "fp8", "blackwell"}

// byKind summarises the results per kind (a run can be of several).
func byKind(res []accuracy.Result) []kindFigures {
	groups := map[string][]accuracy.Result{}
	for _, r := range res {
		groups["all"] = append(groups["all"], r)
		if r.Run.Publication == "" {
			groups["original"] = append(groups["original"], r)
		} else {
			groups["new"] = append(groups["new"], r)
		}
		for _, k := range r.Run.Kind {
			groups[k] = append(groups[k], r)
		}
	}
	var out []kindFigures
	for _, k := range runKinds {
		if len(groups[k]) > 0 {
			out = append(out, kindFigures{k, accuracy.Summarise(groups[k])})
		}
	}
	return out
}
