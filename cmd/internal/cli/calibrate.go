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
	"time"
	"unicode"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/stepcost/stepcost/cmd/internal/clusterfile"
	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/picture"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// errSVGAndJSON refuses --svg - with --json (plan, estimate, calibrate): one of
// the two would be lost, or the two mixed, on standard output.
var errSVGAndJSON = errors.New("--svg - and --json: both write to standard output; give --svg a file")

// maxInputSize bounds one input file (nccl-tests outputs are kilobytes, training
// logs megabytes) and every other file read whole (a request, a model, a free
// map).
const maxInputSize = 64 << 20

// calibrateCommand is a thin adapter: read the files, hand them to estimator/calibrate
// (in process) or to a daemon's CalibrateCluster (--server), print the proto
// response — the table and --json are drawn from it either way — and write the
// cluster file.
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
	addr := fs.String("server", "", "ask a running stepcostd (host:port) instead of calibrating in process")
	timeout := fs.Duration("timeout", defaultCalibrateTimeout, "stop a calibration in process after this long (0: no limit); given with --server, the call's deadline (not given, or 0: the daemon's --default-deadline)")
	sec := remoteSecurityFlags(fs)
	// Flags may come before, between and after the files (calibrate --cluster x
	// *.txt --out y); "--" ends the flags. The files are required (filesArgs).
	return func(ctx context.Context, files []string, stdout, stderr io.Writer) error {
		if *svg == "-" && *asJSON {
			return errSVGAndJSON
		}
		if *timeout < 0 {
			return fmt.Errorf("--timeout: must be at least 0 (no limit; got %v)", *timeout)
		}
		if *addr != "" && *svg != "" {
			return errors.New("--svg: pictures are drawn in process; leave out --server (or ask the daemon's POST /v1/pictures:calibration)")
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
		// Each file with its layout: the flags state the collective
		// measurements' nodes and GPUs per node; a training log's are its
		// layout's (or the cluster's).
		contents := make([][]byte, len(files))
		fileLayouts := make([]calibrate.FileLayout, len(files))
		for i, f := range files {
			if contents[i], err = readFile(f); err != nil {
				return err
			}
			d := def
			if calibrate.ReadsAsTrainingLog(contents[i]) {
				d = calibrate.FileLayout{}
			}
			fileLayouts[i] = layouts.For(f, d)
		}
		var resp *pb.CalibrateClusterResponse
		var rep *calibrate.Report
		var in calibrate.Inputs
		if *addr != "" {
			// --timeout given is the call's deadline, which the daemon stops at
			// (it was ignored: the daemon's default deadline stopped the call).
			rctx := ctx
			if fs.Changed("timeout") && *timeout > 0 {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(ctx, *timeout)
				defer cancel()
			}
			start := time.Now()
			if resp, err = calibrateRemote(rctx, *addr, sec, clusterProto(*clusterName, spec), *name, files, contents, fileLayouts); err != nil {
				if rctx != ctx && errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
					return fmt.Errorf("--timeout: the daemon stopped after %v, unfinished: give a longer --timeout (%w)", time.Since(start).Round(time.Millisecond), err)
				}
				return err
			}
		} else {
			for i, f := range files {
				if err := in.Read(f, contents[i], fileLayouts[i]); err != nil {
					return err
				}
			}
			if *svg != "" && len(in.Sweeps) == 0 {
				// Said before the fit writes anything: the picture draws the sweeps.
				return errors.New("--svg: no nccl-tests output or measurement rows among the inputs: the picture draws their bus bandwidth over size")
			}
			if rep, err = calibrateInProcess(ctx, base, spec, in, *timeout, stderr); err != nil {
				return err
			}
			rep.Spec.Name = *name
			if rep.Spec.Name == "" {
				rep.Spec.Name = spec.Name + "-calibrated"
			}
			resp = wire.CalibrationResponse(rep, in)
		}
		if !slices.ContainsFunc(resp.GetFiles(), func(f *pb.CalibrationFile) bool { return f.GetKind() == "collective" }) {
			for _, f := range []struct {
				name string
				v    int
			}{{"nodes", *nodes}, {"gpus-per-node", *perNode}} {
				if f.v > 0 {
					fmt.Fprintf(stderr, "stepcost calibrate: --%s %d: unused, no nccl-tests output or measurement rows among the inputs (a training log's nodes and GPUs per node follow from its layout: gpus, gpus_per_node or the cluster's)\n", f.name, f.v)
				}
			}
		}
		// The picture's file first: a path it cannot be written to fails the
		// command before the cluster file is written.
		if *svg != "" && *svg != "-" {
			if err := writeCalibrationSVG(*svg, rep, in, stdout); err != nil {
				return err
			}
		}
		if *out != "" {
			written, err := wire.DefinitionToSpec("cluster", resp.GetCluster())
			if err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			// A definition carries no size: the base's, as calibration keeps it.
			written.Nodes = spec.Nodes
			written.Source = strings.TrimSpace(spec.Source + "; calibrated by stepcost calibrate on " + strings.Join(baseNames(files), ", "))
			doc, err := clusterfile.Format(written, fileComments(resp))
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
			return printProtoJSON(stdout, resp)
		}
		printReport(stdout, resp, *out)
		return nil
	}
}

// defaultCalibrateTimeout bounds a calibration in process: 16 full sweeps take
// 26 s on two busy cores (docs/calibrate.md), sweeps stated on thousands of
// nodes much longer.
const defaultCalibrateTimeout = 10 * time.Minute

// calibrateInProcess calibrates within the heap the inputs need (at least
// calibrate.DefaultHeap), saying on stderr first when that is more than the
// default, and stops at the timeout (0: none) or when ctx is cancelled, saying
// which.
func calibrateInProcess(ctx context.Context, base string, spec topology.Spec, in calibrate.Inputs, timeout time.Duration, stderr io.Writer) (*calibrate.Report, error) {
	if need := calibrate.Heap(spec, in); need.Bytes > calibrate.DefaultHeap {
		fmt.Fprintf(stderr, "stepcost calibrate: these inputs need about %s\n", need)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	start := time.Now()
	rep, err := calibrate.CalibrateContext(ctx, base, spec, in)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("--timeout: stopped after %v, unfinished: give a longer --timeout (0: no limit)", time.Since(start).Round(time.Millisecond))
	case errors.Is(err, context.Canceled):
		return nil, fmt.Errorf("interrupted after %v, unfinished", time.Since(start).Round(time.Millisecond))
	}
	return rep, err
}

// calibrateRemote sends the files to a daemon's CalibrateCluster, each under the
// name it was given on the command line with what its layout states.
func calibrateRemote(ctx context.Context, addr string, sec *remoteSecurity, cluster *pb.ClusterSpec, name string, files []string, contents [][]byte, layouts []calibrate.FileLayout) (*pb.CalibrateClusterResponse, error) {
	req := &pb.CalibrateClusterRequest{Cluster: cluster, Name: name}
	for i, f := range files {
		l := layouts[i]
		req.Inputs = append(req.Inputs, &pb.CalibrationInput{Name: f, Content: string(contents[i]), Nodes: int32(l.Nodes), GpusPerNode: int32(l.GPUsPerNode),
			Op: l.Op, Launch: l.Launch, Algo: l.Algo, Run: &pb.CalibrationRun{Model: l.Model, Gpus: int32(l.GPUs), Tp: int32(l.TP), Pp: int32(l.PP),
				Cp: int32(l.CP), Ep: int32(l.EP), Dp: int32(l.DP), Zero: int32(l.ZeRO), MicroBatch: int32(l.MicroBatch), GlobalBatch: int32(l.GlobalBatch),
				SeqLen: int32(l.SeqLen), Precision: l.Precision, Recompute: l.Recompute, Sp: l.SP, Schedule: l.Schedule, Vpp: int32(l.VPP), Framework: l.Framework}})
	}
	svc, done, err := connect(addr, sec)
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := svc.CalibrateCluster(ctx, req)
	if err != nil {
		return nil, calibrateRefusal(err)
	}
	return resp, nil
}

// calibrateRefusal names a refused input as the in-process command does: the
// daemon's rule on an input's content or layout (inputs[i].content,
// inputs[i].run.tp) is the readers' own error, which names the file and line,
// so the field is dropped; the other fields are named by their flags.
func calibrateRefusal(err error) error {
	fes := wire.FieldErrors(err)
	if len(fes) == 0 {
		return flagged(err, calibrateFlags)
	}
	parts := make([]string, len(fes))
	for i, fe := range fes {
		if _, rest, ok := strings.Cut(fe.Field, "]."); ok && strings.HasPrefix(fe.Field, "inputs[") &&
			(rest == "content" || rest == "gpus_per_node" || strings.HasPrefix(rest, "run.")) {
			parts[i] = fe.Rule
			continue
		}
		parts[i] = flagged(fe, calibrateFlags).Error()
	}
	return errors.New(strings.Join(parts, "; "))
}

// calibrateFlags names the flag of each request field of calibrate.
var calibrateFlags = map[string]string{"name": "--name"}

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
func fileComments(r *pb.CalibrateClusterResponse) []string {
	c := []string{fmt.Sprintf("Calibrated by stepcost calibrate from %s on %d input file(s).", r.GetBase(), len(r.GetFiles()))}
	for _, kn := range r.GetConstants() {
		c = append(c, fmt.Sprintf("  %s: %.4g (base %.4g)", kn.GetField(), kn.GetFitted(), kn.GetBase()))
	}
	if s := r.GetComputeScale(); s != 1 {
		c = append(c, fmt.Sprintf("  gpu.peak_tflops are the datasheet's × %.3f (compute scale)", s))
	}
	all := &pb.CalibrationErrorRow{}
	for _, row := range r.GetErrors() {
		if row.GetGroup() == "all" {
			all = row
		}
	}
	c = append(c, fmt.Sprintf("Median |error| over the inputs, each file left out of the fit in turn: %.1f %% -> %.1f %%.", 100*all.GetBeforeMedian(), 100*all.GetAfterMedian()))
	return c
}

// printReport draws calibrate's table from the proto response, the same in
// process and with --server.
func printReport(w io.Writer, r *pb.CalibrateClusterResponse, out string) {
	fmt.Fprintf(w, "Calibration of %s on %d file(s)\n\n", r.GetBase(), len(r.GetFiles()))
	for _, f := range r.GetFiles() {
		if f.GetKind() == "training" {
			printWrapped(w, "  ", fmt.Sprintf("%s: %s log, step %.4g s (median of %d), %s on %d GPUs", f.GetFile(), f.GetFramework(), f.GetStepSeconds(), f.GetLoggedSteps(), f.GetModel(), f.GetGpus()), true)
			continue
		}
		src := map[string]string{"rows": "from the rows", "header": "from the header", "given": "as given"}[f.GetNodesFrom()]
		printWrapped(w, "  ", fmt.Sprintf("%s: %s (nodes %s)", f.GetFile(), f.GetDescription(), src), true)
	}
	for _, n := range r.GetNotes() {
		printWrapped(w, "  ", fmt.Sprintf("note: %s", n), true)
	}
	for _, x := range r.GetWarnings() {
		printWrapped(w, "  ", fmt.Sprintf("warning: %s", x), true)
	}

	fmt.Fprintln(w, "\nConstants")
	t := table{head: []string{"constant", "cluster file field", "base", "fitted", "ratio"}}
	for _, kn := range r.GetConstants() {
		a, b := kn.GetFitted(), kn.GetBase()
		t.add(kn.GetName(), kn.GetField(), fmt.Sprintf("%.4g", b), fmt.Sprintf("%.4g", a), fmt.Sprintf("%.2f×", a/b))
	}
	if len(r.GetConstants()) == 0 {
		printWrapped(w, "  ", "none: the inputs determine no constant (efficiencies need messages of 64 MiB or more, latencies under 1 MiB, scale-up constants single-node sweeps or multi-node rows they set, network constants sweeps across nodes; an efficiency must set two large rows at its fitted value)", true)
	} else {
		t.write(w)
	}
	for _, l := range []struct {
		word  string
		lines []string
	}{{"not determined", r.GetUndetermined()}, {"moved far", r.GetMoved()}, {"at a bound", r.GetAtBound()},
		{"declined", r.GetDeclined()}, {"contradiction", r.GetContradictions()}} {
		for _, s := range l.lines {
			printWrapped(w, "  ", fmt.Sprintf("%s: %s", l.word, s), true)
		}
	}
	printMismatches(w, r.GetMismatchRows())
	if len(r.GetChoices()) > 0 {
		printWrapped(w, "  ", "algorithms NCCL runs here, written into the cluster file (algorithms; the model's automatic choice honours them):", true)
		for _, c := range wire.AlgoRangesFromProto(r.GetChoices()) {
			printWrapped(w, "    ", calibrate.FormatRange(c), true)
		}
	}
	if len(r.GetExcluded()) > 0 {
		printWrapped(w, "  ", fmt.Sprintf("left out of the written fit (they contradict the majority): %s", strings.Join(r.GetExcluded(), ", ")), true)
	}
	if r.GetCompromise() {
		printWrapped(w, "  ", "the inputs contradict each other with no majority: the written fit is a compromise between them; calibrate them separately to see each", true)
	}

	fmt.Fprintln(w, "\nError |predicted − measured| / measured: base cluster vs calibrated with the row's own file left out")
	e := table{head: []string{"group", "rows", "median before", "median after", "mean before", "mean after"}, optional: []string{"mean before", "mean after"}, wrap: "group"}
	for _, row := range r.GetErrors() {
		e.add(row.GetLabel(), fmt.Sprint(row.GetRows()), pct(row.GetBeforeMedian()), pct(row.GetAfterMedian()), pct(row.GetBeforeMean()), pct(row.GetAfterMean()))
	}
	e.write(w)
	if out != "" {
		fmt.Fprintf(w, "\nwrote %s: use it with --cluster-file (plan, estimate, collective; with --server they send it to stepcostd as the request's cluster definition)\n", out)
	}
}

// printMismatches lists the rows NCCL ran with another algorithm than
// the model picks, one line per file and pair of choices with the sizes it covers.
func printMismatches(w io.Writer, ms []*pb.CalibrationMismatch) {
	if len(ms) == 0 {
		return
	}
	printWrapped(w, "  ", "rows NCCL ran with another algorithm than the model picks (fitted with the one they show; first … last row of each group):", true)
	for i := 0; i < len(ms); {
		j := i
		for j+1 < len(ms) && ms[j+1].GetFile() == ms[i].GetFile() && ms[j+1].GetModel() == ms[i].GetModel() && ms[j+1].GetMeasured() == ms[i].GetMeasured() {
			j++
		}
		line := fmt.Sprintf("%s: %d rows %s–%s measured as %s (%+.0f %% … %+.0f %%), the model picks %s (%+.0f %% … %+.0f %%)",
			ms[i].GetFile(), j-i+1, calibrate.FormatBytes(ms[i].GetBytes()), calibrate.FormatBytes(ms[j].GetBytes()),
			ms[i].GetMeasured(), 100*ms[i].GetMatchErr(), 100*ms[j].GetMatchErr(), ms[i].GetModel(), 100*ms[i].GetModelErr(), 100*ms[j].GetModelErr())
		if i == j {
			// One row: its size and errors, not a range from it to itself
			// ("1 row(s) 256 KiB–256 KiB … (+2 % … +2 %)").
			line = fmt.Sprintf("%s: 1 row of %s measured as %s (%+.0f %%), the model picks %s (%+.0f %%)",
				ms[i].GetFile(), calibrate.FormatBytes(ms[i].GetBytes()), ms[i].GetMeasured(), 100*ms[i].GetMatchErr(), ms[i].GetModel(), 100*ms[i].GetModelErr())
		}
		printWrapped(w, "    ", line, true)
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
