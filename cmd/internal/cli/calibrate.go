package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/stepcost/stepcost/cmd/internal/clusterfile"
	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/picture"
)

// errSVGAndJSON refuses --svg - with --json (plan, estimate, calibrate): one of
// the two would be lost, or the two mixed, on standard output.
var errSVGAndJSON = errors.New("--svg - and --json: both write to standard output; give --svg a file")

// maxInputSize bounds one input file (nccl-tests outputs are kilobytes, training
// logs megabytes) and every other file read whole (a request, a model, a free
// map).
const maxInputSize = 64 << 20

// calibrateCommand is a thin adapter: read the files, hand them to estimator/calibrate,
// print its report and write the cluster file.
func calibrateCommand(fs *pflag.FlagSet) runFunc {
	clusterName := fs.String("cluster", "", "base catalog system (see 'stepcost catalog'), e.g. dgx-h100")
	clusterFile := fs.String("cluster-file", "", "base cluster description file (JSON or YAML)")
	nodes := fs.Int("nodes", 0, "nodes of the nccl-tests outputs whose header has no device lines")
	perNode := fs.Int("gpus-per-node", 0, "GPUs per node of those outputs")
	layoutFile := fs.String("layout", "", "YAML or JSON: per input file (by name) what it does not state — nodes, gpus_per_node, op, launch, algo for nccl-tests; model, gpus, tp, pp, dp, micro_batch, global_batch, seq_len, … for training logs")
	out := fs.String("out", "", "write the calibrated cluster file here (YAML; load it with --cluster-file)")
	name := fs.String("name", "", "name of the calibrated cluster (default: the base's with -calibrated)")
	svg := fs.String("svg", "", "draw measured vs predicted bus bandwidth over size, before and after, per input file (SVG; - for standard output)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	// Flags may come before, between and after the files (calibrate --cluster x
	// *.txt --out y); "--" ends the flags. The files are required (filesArgs).
	return func(_ context.Context, files []string, stdout, stderr io.Writer) error {
		if *svg == "-" && *asJSON {
			return errSVGAndJSON
		}
		// The name is printed by every command that loads the file, on one line.
		if n := *name; n != "" && (strings.TrimSpace(n) != n || strings.ContainsFunc(n, unicode.IsControl)) {
			return fmt.Errorf("--name: must be printable text without leading or trailing blanks: the cluster's name, which the commands that load the file print (got %q)", n)
		}
		// 0 is the flags' "not given"; given, a value below 1 is no node count.
		for _, f := range []struct {
			name string
			v    int
		}{{"nodes", *nodes}, {"gpus-per-node", *perNode}} {
			if f.v < 0 || f.v == 0 && fs.Changed(f.name) {
				return fmt.Errorf("--%s: must be at least 1 (got %d)", f.name, f.v)
			}
		}
		spec, base, err := loadCluster(*clusterName, *clusterFile)
		if err != nil {
			return err
		}
		layouts := calibrate.Layouts{}
		if *layoutFile != "" {
			data, err := readFile(*layoutFile)
			if err != nil {
				return fmt.Errorf("--layout: %w", err)
			}
			j, err := yaml.YAMLToJSONStrict(data)
			if err != nil {
				return fmt.Errorf("--layout %s: %w", *layoutFile, err)
			}
			if layouts, err = calibrate.DecodeLayouts(j); err != nil {
				return fmt.Errorf("--layout %s: %w", *layoutFile, err)
			}
			if err := layoutsOfOneFile(layouts, files); err != nil {
				return fmt.Errorf("--layout %s: %w", *layoutFile, err)
			}
			if u := layouts.Unused(files); len(u) > 0 {
				more := ""
				if len(u) > maxFailedLines {
					u, more = u[:maxFailedLines], fmt.Sprintf(" and %d more", len(u)-maxFailedLines)
				}
				fmt.Fprintf(stderr, "stepcost calibrate: --layout %s: unused, not among the input files (entries are keyed by the file's base name): %s%s\n", *layoutFile, strings.Join(u, ", "), more)
			}
		}
		def := calibrate.FileLayout{Nodes: *nodes, RunLayout: calibrate.RunLayout{GPUsPerNode: *perNode}}
		if err := sameFiles(files); err != nil {
			return err
		}
		var in calibrate.Inputs
		for _, f := range files {
			data, err := readFile(f)
			if err != nil {
				return err
			}
			// The flags state the collective measurements' nodes and GPUs per
			// node; a training log's are its layout's (or the cluster's).
			d := def
			if calibrate.ReadsAsTrainingLog(data) {
				d = calibrate.FileLayout{}
			}
			if err := in.Read(f, data, layouts.For(f, d)); err != nil {
				return err
			}
		}
		if *svg != "" && len(in.Sweeps) == 0 {
			// Said before the fit writes anything: the picture draws the sweeps.
			return errors.New("--svg: no nccl-tests output or measurement rows among the inputs: the picture draws their bus bandwidth over size")
		}
		if len(in.Sweeps) == 0 {
			for _, f := range []struct {
				name string
				v    int
			}{{"nodes", *nodes}, {"gpus-per-node", *perNode}} {
				if f.v > 0 {
					fmt.Fprintf(stderr, "stepcost calibrate: --%s %d: unused, no nccl-tests output or measurement rows among the inputs (a training log's nodes and GPUs per node follow from its layout: gpus, gpus_per_node or the cluster's)\n", f.name, f.v)
				}
			}
		}
		rep, err := calibrate.Calibrate(base, spec, in)
		if err != nil {
			return err
		}
		rep.Spec.Name = *name
		if rep.Spec.Name == "" {
			rep.Spec.Name = spec.Name + "-calibrated"
		}
		rep.Spec.Source = strings.TrimSpace(spec.Source + "; calibrated by stepcost calibrate on " + strings.Join(baseNames(files), ", "))
		// The picture's file first: a path it cannot be written to fails the
		// command before the cluster file is written.
		if *svg != "" && *svg != "-" {
			if err := writeCalibrationSVG(*svg, rep, in, stdout); err != nil {
				return err
			}
		}
		if *out != "" {
			doc, err := clusterfile.Format(rep.Spec, fileComments(rep))
			if err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			if err := os.WriteFile(*out, doc, 0o644); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
		}
		if *svg == "-" {
			return writeCalibrationSVG(*svg, rep, in, stdout)
		}
		if *asJSON {
			return writeJSON(stdout, reportJSON(rep, in))
		}
		printReport(stdout, rep, in, *out)
		return nil
	}
}

// calibrationJSON is calibrate's --json: the report, and what the table says
// of the inputs besides — each file as read, and the notes of what the readers
// set aside or dropped.
type calibrationJSON struct {
	*calibrate.Report
	Inputs []calibrationInput
	Notes  []string `json:",omitempty"`
}

// calibrationInput is one input file as read: an nccl-tests output or
// measurement rows (Kind "collective"), or a training log ("training").
type calibrationInput struct {
	File, Kind string
	// A collective's operation, ranks and launch, and where its nodes came from
	// ("header", "rows", "given").
	Op                 string `json:",omitempty"`
	Nodes, GPUsPerNode int    `json:",omitempty"`
	Device, Launch     string `json:",omitempty"`
	Algo               string `json:",omitempty"`
	Rows               int    `json:",omitempty"`
	NodesFrom          string `json:",omitempty"`
	// A training log's framework, model and GPUs, and its step time (the
	// median of LoggedSteps steps after the warm-up ones).
	Framework   string  `json:",omitempty"`
	Model       string  `json:",omitempty"`
	GPUs        int     `json:",omitempty"`
	StepSeconds float64 `json:",omitempty"`
	LoggedSteps int     `json:",omitempty"`
}

func reportJSON(r *calibrate.Report, in calibrate.Inputs) calibrationJSON {
	out := calibrationJSON{Report: r, Inputs: []calibrationInput{}, Notes: append(in.Notes(), r.Notes...)}
	for _, s := range in.Sweeps {
		c := calibrationInput{File: s.File, Kind: "collective", Op: s.Op.String(), Nodes: s.Nodes, GPUsPerNode: s.GPUsPerNode,
			Device: s.Device, Launch: s.Launch.String(), Rows: len(s.Points), NodesFrom: nodesFrom(s)}
		if s.Algo != collective.Auto {
			c.Algo = s.Algo.String()
		}
		out.Inputs = append(out.Inputs, c)
	}
	for _, ru := range in.Runs {
		out.Inputs = append(out.Inputs, calibrationInput{File: ru.File, Kind: "training", Framework: ru.Framework,
			Model: ru.Layout.Model, GPUs: ru.Layout.GPUs, StepSeconds: ru.StepS, LoggedSteps: ru.Steps})
	}
	return out
}

// nodesFrom says where a sweep's nodes and GPUs per node came from.
func nodesFrom(s calibrate.Sweep) string {
	switch {
	case s.FromRows:
		return "rows"
	case s.FromHeader:
		return "header"
	}
	return "given"
}

// sameFiles refuses one file given under two paths (x.txt and ./x.txt, a link):
// its rows would be fitted twice, and each copy scored with the other in the fit.
// One path given twice is said so.
// layoutsOfOneFile refuses a layout entry, keyed by a base name, that two input
// files share: it cannot say which it is for, and was applied to both.
func layoutsOfOneFile(layouts calibrate.Layouts, files []string) error {
	first := map[string]string{}
	for _, f := range files {
		b := filepath.Base(f)
		if _, ok := layouts[b]; !ok {
			continue
		}
		if g, ok := first[b]; ok && g != f {
			return fmt.Errorf("entry %q is for %s and %s, whose base names are the same (entries are keyed by the file's base name): give the files distinct names", b, g, f)
		}
		first[b] = f
	}
	return nil
}

func sameFiles(files []string) error {
	seen := make([]os.FileInfo, len(files))
	for i, f := range files {
		if slices.Contains(files[:i], f) {
			return fmt.Errorf("%s: given twice", f)
		}
		fi, err := os.Stat(f)
		if err != nil {
			continue // reading it says why
		}
		for j := range i {
			if seen[j] != nil && files[j] != f && os.SameFile(seen[j], fi) {
				return fmt.Errorf("%s: the same file as %s (given twice)", f, files[j])
			}
		}
		seen[i] = fi
	}
	return nil
}

func baseNames(files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Base(f)
	}
	return out
}

// fileComments are the comment lines on top of the written cluster file: what was
// fitted, from what, and how far it moved.
func fileComments(r *calibrate.Report) []string {
	c := []string{fmt.Sprintf("Calibrated by stepcost calibrate from %s on %d input file(s).", r.Base, len(r.Files))}
	for _, kn := range r.Determined {
		c = append(c, fmt.Sprintf("  %s: %.4g (base %.4g)", kn.Field, kn.Of(r.Fitted), kn.Of(r.Catalog)))
	}
	if r.Fitted.ComputeScale != 1 {
		c = append(c, fmt.Sprintf("  gpu.peak_tflops are the datasheet's × %.3f (compute scale)", r.Fitted.ComputeScale))
	}
	s := r.Summary()
	c = append(c, fmt.Sprintf("Median |error| over the inputs, each file left out of the fit in turn: %.1f %% -> %.1f %%.", 100*s.BeforeMedian, 100*s.AfterMedian))
	return c
}

func printReport(w io.Writer, r *calibrate.Report, in calibrate.Inputs, out string) {
	fmt.Fprintf(w, "Calibration of %s on %d file(s)\n\n", r.Base, len(r.Files))
	for _, s := range in.Sweeps {
		src := map[string]string{"rows": "from the rows", "header": "from the header", "given": "as given"}[nodesFrom(s)]
		printWrapped(w, "  ", fmt.Sprintf("%s: %s (nodes %s)", s.File, s.Describe(), src), true)
	}
	for _, ru := range in.Runs {
		printWrapped(w, "  ", fmt.Sprintf("%s: %s log, step %.4g s (median of %d), %s on %d GPUs", ru.File, ru.Framework, ru.StepS, ru.Steps, ru.Layout.Model, ru.Layout.GPUs), true)
	}
	for _, n := range append(in.Notes(), r.Notes...) {
		printWrapped(w, "  ", fmt.Sprintf("note: %s", n), true)
	}

	fmt.Fprintln(w, "\nConstants")
	t := table{head: []string{"constant", "cluster file field", "base", "fitted", "ratio"}}
	for _, kn := range r.Determined {
		a, b := kn.Of(r.Fitted), kn.Of(r.Catalog)
		t.add(kn.Name, kn.Field, fmt.Sprintf("%.4g", b), fmt.Sprintf("%.4g", a), fmt.Sprintf("%.2f×", a/b))
	}
	if len(r.Determined) == 0 {
		printWrapped(w, "  ", "none: the inputs determine no constant (efficiencies need messages of 64 MiB or more, latencies under 1 MiB, scale-up constants single-node sweeps or multi-node rows they set, network constants sweeps across nodes; an efficiency must set two large rows at its fitted value)", true)
	} else {
		t.write(w)
	}
	for _, u := range r.Undetermined {
		printWrapped(w, "  ", fmt.Sprintf("not determined: %s", u), true)
	}
	for _, m := range r.Moved {
		printWrapped(w, "  ", fmt.Sprintf("moved far: %s", m), true)
	}
	for _, m := range r.AtBound {
		printWrapped(w, "  ", fmt.Sprintf("at a bound: %s", m), true)
	}
	for _, d := range r.Declined {
		printWrapped(w, "  ", fmt.Sprintf("declined: %s", d), true)
	}
	for _, c := range r.Contradictions {
		printWrapped(w, "  ", fmt.Sprintf("contradiction: %s", c), true)
	}
	printMismatches(w, r.Mismatches)
	if len(r.Choices) > 0 {
		printWrapped(w, "  ", "algorithms NCCL runs here, written into the cluster file (algorithms; the model's automatic choice honours them):", true)
		for _, c := range r.Choices {
			printWrapped(w, "    ", calibrate.FormatRange(c), true)
		}
	}
	if len(r.Excluded) > 0 {
		printWrapped(w, "  ", fmt.Sprintf("left out of the written fit (they contradict the majority): %s", strings.Join(r.Excluded, ", ")), true)
	}
	if r.Compromise {
		printWrapped(w, "  ", "the inputs contradict each other with no majority: the written fit is a compromise between them; calibrate them separately to see each", true)
	}

	fmt.Fprintln(w, "\nError |predicted − measured| / measured: base cluster vs calibrated with the row's own file left out")
	e := table{head: []string{"group", "rows", "median before", "median after", "mean before", "mean after"}, optional: []string{"mean before", "mean after"}, wrap: "group"}
	for _, row := range r.Rows {
		e.add(row.Label, fmt.Sprint(row.N), pct(row.BeforeMedian), pct(row.AfterMedian), pct(row.BeforeMean), pct(row.AfterMean))
	}
	e.write(w)
	if out != "" {
		fmt.Fprintf(w, "\nwrote %s: use it with --cluster-file (plan, estimate, collective; with --server they send it to stepcostd as the request's cluster definition)\n", out)
	}
}

// printMismatches lists the rows NCCL ran with another algorithm than
// the model picks, one line per file and pair of choices with the sizes it covers.
func printMismatches(w io.Writer, ms []calibrate.Mismatch) {
	if len(ms) == 0 {
		return
	}
	printWrapped(w, "  ", "rows NCCL ran with another algorithm than the model picks (fitted with the one they show; first … last row of each group):", true)
	for i := 0; i < len(ms); {
		j := i
		for j+1 < len(ms) && ms[j+1].File == ms[i].File && ms[j+1].Model == ms[i].Model && ms[j+1].Measured == ms[i].Measured {
			j++
		}
		printWrapped(w, "    ", fmt.Sprintf("%s: %d row(s) %s–%s measured as %s (%+.0f %% … %+.0f %%), the model picks %s (%+.0f %% … %+.0f %%)",
			ms[i].File, j-i+1, calibrate.FormatBytes(ms[i].Bytes), calibrate.FormatBytes(ms[j].Bytes),
			ms[i].Measured, 100*ms[i].MatchErr, 100*ms[j].MatchErr, ms[i].Model, 100*ms[i].ModelErr, 100*ms[j].ModelErr), true)
		i = j + 1
	}
}

// writeCalibrationSVG draws one bus-bandwidth picture per nccl-tests file, stacked.
func writeCalibrationSVG(path string, r *calibrate.Report, in calibrate.Inputs, stdout io.Writer) error {
	fig, err := picture.Calibration(r, in.Sweeps)
	if err != nil {
		return fmt.Errorf("--svg: %w", err)
	}
	return writeSVG(path, fig, stdout)
}
