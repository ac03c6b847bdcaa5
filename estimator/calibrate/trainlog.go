package calibrate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

// RunLayout is how a training run was laid out, given beside its log (the logs
// state the step time, rarely the layout). Field names follow the EstimateStep
// request's.
type RunLayout struct {
	Model       string `json:"model"`
	GPUs        int    `json:"gpus"`
	GPUsPerNode int    `json:"gpus_per_node,omitempty"` // default: the base cluster's
	TP          int    `json:"tp,omitempty"`
	PP          int    `json:"pp,omitempty"`
	CP          int    `json:"cp,omitempty"`
	EP          int    `json:"ep,omitempty"`
	DP          int    `json:"dp,omitempty"` // default: GPUs / (TP·PP·CP)
	ZeRO        int    `json:"zero,omitempty"`
	MicroBatch  int    `json:"micro_batch"`
	GlobalBatch int    `json:"global_batch"`
	SeqLen      int    `json:"seq_len"`
	Precision   string `json:"precision,omitempty"` // bf16 (default), fp16, fp8
	Recompute   string `json:"recompute,omitempty"` // none (default), selective, ops, full
	SP          bool   `json:"sp,omitempty"`
	Schedule    string `json:"schedule,omitempty"`
	VPP         int    `json:"vpp,omitempty"`
	Framework   string `json:"framework,omitempty"` // default: the log's
}

// Run is one training log: the framework that wrote it, the step time it reports,
// and the layout given beside it.
type Run struct {
	File      string
	Framework string // the framework whose log lines were read
	// StepS is the median step time, in seconds, over the logged steps after the
	// warm-up ones; Steps is how many logged values that median is over.
	StepS  float64
	Steps  int
	Layout RunLayout
	// Peak is the peak FLOP/s the framework divided by for the MFU it logs
	// (trainpeak.go), from the metric line whose printed figures bound it
	// closest; its Line is 0 when no line states it.
	Peak  ImpliedPeak
	Notes []string
}

// A log format: the line that carries the metric, and how to turn the metric into
// a step time (s) for a layout.
type logFormat struct {
	framework string
	re        *regexp.Regexp
	key       string // a literal every matching line contains, to detect a broken one
	// lit is text every line re matches holds: re is tried only on lines
	// holding it (the expressions, tried on each line for each format, were
	// most of the time to read a log).
	lit   string
	stepS func(v float64, l RunLayout) float64
	// not is a line that matches re but is no training step (torchtitan's
	// validation line); nil when there is none.
	not *regexp.Regexp
	// step reads the step counter of a metric line, to see a restart (the
	// counter going back); nil when the line carries none.
	step *regexp.Regexp
	// redraw: a line with the step of the one before is the same step drawn
	// again (a progress bar's refresh), not a restart.
	redraw bool
}

var logFormats = []logFormat{
	// Megatron-LM training_log: "... | elapsed time per iteration (ms): 1234.5 | ..."
	{framework: "megatron-core", re: regexp.MustCompile(`elapsed time per iteration \(ms\):\s*([0-9.]+)`), key: "elapsed time per iteration (ms)", lit: "elapsed time per iteration (ms)",
		stepS: func(v float64, _ RunLayout) float64 { return v / 1e3 }, step: megatronIter},
	// Forks that print it in seconds (FZJ-JSC jubench-megatron-lm README.md:
	// "elapsed time per iteration (s): 7.2310").
	{framework: "megatron-core", re: regexp.MustCompile(`elapsed time per iteration \(s\):\s*([0-9.]+)`), key: "elapsed time per iteration (s)", lit: "elapsed time per iteration (s)",
		stepS: func(v float64, _ RunLayout) float64 { return v }, step: megatronIter},
	// NeMo / Megatron-Bridge (Lightning): "train_step_timing in s=1.23", "train_step_timing: 1.23";
	// the step is the progress bar's ("| 10/1000 [") or NeMo 2's progress
	// printer's ("Training epoch 0, iteration 10/99 | … | train_step_timing in s: 1.23").
	{framework: "nemo", re: regexp.MustCompile(`train_step_timing(?: in s)?\s*[=:]\s*([0-9.]+)`), key: "train_step_timing", lit: "train_step_timing",
		stepS: func(v float64, _ RunLayout) float64 { return v }, step: regexp.MustCompile(`\|\s*(\d+)/\d+\s*\[|\biteration\s+(\d+)/\d+`), redraw: true},
	// torchtitan metrics line: "step: 10  loss: 7.9  memory: 30.1GiB(38%)  tps: 6,123  tflops: 355  mfu: 35.9%".
	// tps is tokens per second per GPU (ntokens since the last log over the time and
	// the non-data-parallel degree), so a step of the global batch takes
	// global tokens / (tps · GPUs).
	// Its validation line ("validate step: 10  loss: …  tps: 50,000") times no
	// training step.
	{framework: "torchtitan", re: regexp.MustCompile(`\bstep:\s*\d+.*\btps:\s*([0-9][0-9,]*(?:\.[0-9]+)?)`), key: "tps:", lit: "tps:",
		stepS: perGPUTokenRate, not: regexp.MustCompile(`\bvalidat\w*\s+step:`), step: regexp.MustCompile(`\bstep:\s*(\d+)`)},
	// torchtitan before pytorch/torchtitan#697 (2024-11-24, "rename wps to tps")
	// printed the same rate as "wps" ("step: 10  loss: 7.9  memory: 30.1GiB(38%)
	// wps: 5,739  mfu: 35.4%"; train.py: wps = ntokens_since_last_log /
	// (time_delta * parallel_dims.model_parallel_size)), read as tps is.
	{framework: "torchtitan", re: regexp.MustCompile(`\bstep:\s*\d+.*\bwps:\s*([0-9][0-9,]*(?:\.[0-9]+)?)`), key: "wps:", lit: "wps:",
		stepS: perGPUTokenRate, not: regexp.MustCompile(`\bvalidat\w*\s+step:`), step: regexp.MustCompile(`\bstep:\s*(\d+)`)},
	// Composer / llm-foundry: "Train throughput/batches_per_sec: 0.52".
	{framework: "composer", re: regexp.MustCompile(`throughput/batches_per_sec:\s*([0-9.]+(?:[eE][-+]?[0-9]+)?)`), key: "throughput/batches_per_sec", lit: "throughput/batches_per_sec",
		stepS: func(v float64, _ RunLayout) float64 { return 1 / v }},
	// Composer's samples rate, when batches_per_sec is not logged.
	{framework: "composer", re: regexp.MustCompile(`throughput/samples_per_sec:\s*([0-9.]+(?:[eE][-+]?[0-9]+)?)`), key: "throughput/samples_per_sec", lit: "throughput/samples_per_sec",
		stepS: func(v float64, l RunLayout) float64 { return float64(l.GlobalBatch) / v }},
	// DeepSpeed's throughput timer: "... CurrSamplesPerSec=12.3, ..." or "samples/sec=12.3".
	{framework: "deepspeed", re: regexp.MustCompile(`(?:CurrSamplesPerSec|samples/sec)\s*[=:]\s*([0-9.]+)`), key: "SamplesPerSec", lit: "amples", // CurrSamplesPerSec, samples/sec

		stepS: func(v float64, l RunLayout) float64 { return float64(l.GlobalBatch) / v }, step: regexp.MustCompile(`global_step=(\d+)`)},
}

// perGPUTokenRate is the step time of a rate of tokens per second per GPU
// (torchtitan's tps, wps): the global batch's tokens over the rate of all GPUs.
func perGPUTokenRate(v float64, l RunLayout) float64 {
	return float64(l.GlobalBatch) * float64(l.SeqLen) / (v * float64(l.GPUs))
}

var (
	// torchrun's prefix of a rank's lines with --tee or --local-ranks-filter
	// ("[rank3]:"; "[default3]:" from torchelastic's older log prefix).
	rankTag = regexp.MustCompile(`^\[(?:rank|default)\d+\]:`)
	// Megatron-LM's "global batch size:   512 |", the global batch the logged
	// step ran: micro-batch × data-parallel size × the current number of
	// micro-batches, which a batch-size ramp-up grows (megatron/training/
	// training.py, training_log); NeMo 2's progress printer's
	// "global_batch_size: 16 |" ("Training epoch 0, iteration 32/99 | lr: … |
	// global_batch_size: 16 | … | train_step_timing in s: 4.929").
	globalBatchRe = regexp.MustCompile(`global(?: batch size|_batch_size):\s*(\d+)`)
	// Megatron-LM's "iteration       10/    1000 |".
	megatronIter = regexp.MustCompile(`\biteration\s+(\d+)\s*/`)
	// A run starting (again): Megatron-LM's print_datetime("before the start of
	// training step") (megatron/training/training.py) and torchtitan's "Training
	// starts at step 41" (torchtitan train.py).
	startRe = regexp.MustCompile(`\[before the start of training step\]|Training starts at step`)
	// A logged interval that is not a healthy step: Megatron-LM's counts of
	// iterations whose optimizer step was skipped (an fp16 loss-scale overflow) or
	// whose loss was NaN ("number of skipped iterations:   1"), or a NaN or
	// infinite loss on the line ("loss:     nan", "reduced_train_loss=nan",
	// "lm loss: INF").
	badStepRe = regexp.MustCompile(`(?i)number of (?:skipped|nan) iterations:\s*0*[1-9]|loss[\w/]*\s*[:=]\s*[-+]?(?:nan|inf)`)
)

// maybeBadStep says whether a line holds the fixed text badStepRe needs
// ("iterations:", or a nan or inf in any case): the case-blind expression,
// tried on every metric line, was a third of reading a log.
func maybeBadStep(t string) bool {
	l := strings.ToLower(t)
	return strings.Contains(l, "iterations") || strings.Contains(l, "nan") || strings.Contains(l, "inf")
}

// ansiRe is a terminal colour or cursor sequence (ESC [ … letter): torchtitan's
// logger colours each field of its metric line (torchtitan
// components/metrics.py, Color), and a log written to a file keeps the codes.
var ansiRe = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// logLines calls fn with each line of a log as a terminal would show it: colour
// codes removed, and each update of a progress bar that redraws itself with a
// carriage return (Lightning's tqdm bar, where NeMo prints train_step_timing)
// a line of its own, numbered with the file's line.
func logLines(data []byte, fn func(line int, t string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	// Lines up to 1 MiB; the buffer starts at the scanner's 4 KiB and grows
	// only when a line is long (64 KiB made and cleared per call were a tenth
	// of reading a short log).
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		for _, t := range strings.Split(sc.Text(), "\r") {
			if strings.Contains(t, "\x1b") {
				t = ansiRe.ReplaceAllString(t, "")
			}
			if err := fn(line, t); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

// name is the metric as the log prints it, for messages ("tps", "elapsed time
// per iteration (ms)").
func (f *logFormat) name() string { return strings.TrimSuffix(f.key, ":") }

// valueAfter is the text of the value that follows key on line t ("" when none):
// past a NeMo "in s", then any spaces, "=" or ":", up to the next space or "|".
func valueAfter(t, key string) string {
	i := strings.Index(t, key)
	if i < 0 {
		return ""
	}
	rest := strings.TrimLeft(strings.TrimPrefix(strings.TrimLeft(t[i+len(key):], " "), "in s"), " =:")
	if fs := strings.Fields(rest); len(fs) > 0 {
		return strings.TrimRight(fs[0], "|,")
	}
	return ""
}

// positive says whether v, a metric's text, reads as a positive finite number.
func positive(v string) bool {
	x, err := strconv.ParseFloat(strings.ReplaceAll(v, ",", ""), 64)
	return err == nil && x > 0 && !math.IsInf(x, 0)
}

// cutLastLine refuses a log whose last line, without the newline a logger ends
// each line with, holds the step counter of format's metric lines but not the
// metric: the log was copied (or read) while the run was writing that line, and
// the step it began would be dropped without a word.
func cutLastLine(name string, data []byte, f *logFormat) error {
	if len(data) == 0 || data[len(data)-1] == '\n' || f.step == nil {
		return nil
	}
	last := string(data[bytes.LastIndexByte(data, '\n')+1:])
	if i := strings.LastIndexByte(last, '\r'); i >= 0 {
		last = last[i+1:]
	}
	last = ansiRe.ReplaceAllString(last, "")
	if strings.TrimSpace(last) == "" || f.re.MatchString(last) || !f.step.MatchString(last) {
		return nil
	}
	line := bytes.Count(data, []byte("\n")) + 1
	return fileErr(name, line, "the last line is cut short before its %s metric (%s): the log was copied while the run wrote it; copy it again, or leave the line out: %q", f.framework, f.key, clip(last))
}

// IsTrainingLog says whether data carries one of the step-time metrics read here.
func IsTrainingLog(data []byte) bool {
	data = ansiRe.ReplaceAll(data, nil)
	for _, f := range logFormats {
		if f.re.Match(data) {
			return true
		}
	}
	return bytes.Contains(data, []byte("samples/sec"))
}

// ParseTrainingLog reads the step times of one training log. The layout must be
// given (the logs do not state it); a log whose metric lines are cut short, or that
// carries none of the metrics, is an error naming the file and line.
func ParseTrainingLog(name string, data []byte, l RunLayout) (Run, error) {
	r := Run{File: name, Layout: l}
	// logged is one metric line's value; seg counts the restarts before it.
	type logged struct {
		v         float64
		line, seg int
		bad       bool
		gbs       int // the global batch the line says the step ran (0: not said)
	}
	var vals []logged
	var format *logFormat
	type restart struct {
		line int
		why  string
	}
	var restarts []restart
	// The step counter last seen, per rank: torchrun's --tee prefixes each rank's
	// lines ("[rank3]:", "[default3]:"), and every rank logs each step.
	lastStep := map[string]int{}
	started := false
	hasTFLOPS := false // a torchtitan line states tflops
	err := logLines(data, func(line int, t string) error {
		if strings.ContainsRune(t, 0) {
			return fileErr(name, line, "not text")
		}
		for i := range logFormats {
			f := &logFormats[i]
			var m []string
			if strings.Contains(t, f.lit) {
				m = f.re.FindStringSubmatch(t)
			}
			if m == nil {
				if format == f && strings.Contains(t, f.key) && !strings.Contains(t, "samples/sec") {
					if v := valueAfter(t, f.key); v != "" && !positive(v) {
						// There, but not a number the metric can be (-2000.0, nan).
						return fileErr(name, line, "%s: %q is not a positive number", f.name(), v)
					}
					return fileErr(name, line, "a %s metric line without its value (cut short?): %q", f.framework, clip(t))
				}
				continue
			}
			if f.not != nil && strings.Contains(t, "validat") && f.not.MatchString(t) {
				return nil
			}
			if format != nil && format != f {
				continue // the first metric found is the one read (Megatron-DeepSpeed logs carry two)
			}
			format = f
			if f.step != nil {
				if sm := f.step.FindStringSubmatch(t); sm != nil {
					n, _ := strconv.Atoi(strings.Join(sm[1:], ""))
					rank := rankTag.FindString(t)
					last, seen := lastStep[rank]
					if f.redraw && seen && n == last && !started {
						return nil
					}
					if seen && n <= last && !started {
						restarts = append(restarts, restart{line, fmt.Sprintf("the step counter back from %d to %d", last, n)})
					}
					lastStep[rank] = n
				}
			}
			started = false
			v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return fileErr(name, line, "%s: %q is not a positive number", f.name(), m[1])
			}
			l := logged{v: v, line: line, seg: len(restarts), bad: maybeBadStep(t) && badStepRe.MatchString(t)}
			if strings.Contains(t, "global batch size") || strings.Contains(t, "global_batch_size") {
				if gm := globalBatchRe.FindStringSubmatch(t); gm != nil {
					l.gbs, _ = strconv.Atoi(gm[1])
				}
			}
			vals = append(vals, l)
			if f.framework == "torchtitan" {
				// The line whose printed figures bound the peak closest (a
				// warm-up step's small mfu, 3.49 %, rounds to 0.14 %).
				p, tf, ok := peakClaim(line, t)
				hasTFLOPS = hasTFLOPS || tf
				if ok && (r.Peak.Line == 0 || p.Hi-p.Lo < r.Peak.Hi-r.Peak.Lo) {
					r.Peak = p
				}
			}
			break
		}
		if len(vals) > 0 && !started && strings.Contains(t, "start") && startRe.MatchString(t) {
			restarts = append(restarts, restart{line, strings.TrimSpace(startRe.FindString(t))})
			started = true
		}
		return nil
	})
	if err != nil {
		if _, ok := err.(*FileError); ok {
			return r, err
		}
		return r, fileErr(name, 0, "%v", err)
	}
	if format != nil {
		if err := cutLastLine(name, data, format); err != nil {
			return r, err
		}
	}
	if format == nil {
		return r, fileErr(name, 0, "not a training log stepcost reads: none of Megatron-LM's \"elapsed time per iteration (ms)\", NeMo's \"train_step_timing\", torchtitan's \"tps:\" (\"wps:\" before November 2024), Composer's \"throughput/batches_per_sec\" or DeepSpeed's \"samples/sec\"")
	}
	r.Framework = format.framework
	if err := checkRunLayout(name, &r.Layout, format.framework); err != nil {
		return r, err
	}
	if r.Peak.Line == 0 {
		r.Notes = append(r.Notes, "the GPU the run ran on could not be checked against the base cluster's: "+noPeakWhy(format.framework, hasTFLOPS))
	}
	// Steps the log says ran another global batch than the layout's are not its
	// steps: a batch-size ramp-up's, set aside and said; none of the layout's is
	// a layout that is not the log's.
	var other []logged
	ran := vals[:0:0]
	for _, l := range vals {
		if l.gbs > 0 && l.gbs != r.Layout.GlobalBatch {
			other = append(other, l)
			continue
		}
		ran = append(ran, l)
	}
	if len(other) > 0 {
		if len(ran) == 0 {
			return r, &FileError{File: name, Line: other[0].line, Layout: "global_batch",
				Msg: fmt.Sprintf("layout global_batch: %d was given, but the log's steps ran global batch size %d", r.Layout.GlobalBatch, other[0].gbs)}
		}
		var sizes []string
		for _, l := range other {
			if g := strconv.Itoa(l.gbs); !slices.Contains(sizes, g) {
				sizes = append(sizes, g)
			}
		}
		r.Notes = append(r.Notes, fmt.Sprintf("%d logged step(s) of another global batch size than the layout's %d (%s: a batch-size ramp-up?) set aside (lines %d–%d)",
			len(other), r.Layout.GlobalBatch, strings.Join(sizes, ", "), other[0].line, other[len(other)-1].line))
		vals = ran
	}
	// The first logged steps carry compilation, allocation and NCCL set-up: drop the
	// first fifth (at least one when three or more were logged), and so again after
	// each restart (at least one there).
	var kept []float64
	var badLines []string
	warm := 0
	for seg := 0; seg <= len(restarts); seg++ {
		var part []logged
		for _, l := range vals {
			if l.seg == seg {
				part = append(part, l)
			}
		}
		skip := len(part) / 5
		if skip == 0 && (len(part) >= 3 || seg > 0) {
			skip = min(1, len(part))
		}
		warm += skip
		if seg > 0 {
			rs := restarts[seg-1]
			r.Notes = append(r.Notes, fmt.Sprintf("restart at line %d (%s): its first %d logged step(s) dropped as warm-up", rs.line, rs.why, skip))
		}
		for _, l := range part[skip:] {
			if l.bad {
				badLines = append(badLines, strconv.Itoa(l.line))
				continue
			}
			kept = append(kept, l.v)
		}
	}
	if len(badLines) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d logged step(s) with skipped or NaN iterations or a NaN or infinite loss set aside (lines %s)", len(badLines), strings.Join(badLines, ", ")))
	}
	if len(kept) == 0 {
		return r, fileErr(name, 0, "every logged step was set aside (%d warm-up, %d with skipped or NaN iterations or a NaN or infinite loss): no step time to fit", warm, len(badLines))
	}
	slices.Sort(kept)
	med := kept[len(kept)/2]
	if len(kept)%2 == 0 {
		med = (kept[len(kept)/2-1] + kept[len(kept)/2]) / 2
	}
	r.StepS = format.stepS(med, r.Layout)
	r.Steps = len(kept)
	if warm > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("median of %d logged steps after %d warm-up one(s)", len(kept), warm))
	}
	return r, nil
}

func checkRunLayout(name string, l *RunLayout, fw string) error {
	bad := func(field, format string, args ...any) error {
		return &FileError{File: name, Msg: fmt.Sprintf("layout %s: %s", field, fmt.Sprintf(format, args...)), Layout: field}
	}
	if l.Model == "" {
		return bad("model", "required (a catalog model, e.g. llama3-8b): the log does not state the architecture")
	}
	if _, err := model.Lookup(l.Model); err != nil {
		return bad("model", "%v", err)
	}
	if l.GPUs < 1 {
		return bad("gpus", "required: how many GPUs the run used")
	}
	for _, f := range []struct {
		key string
		v   int
	}{{"global_batch", l.GlobalBatch}, {"seq_len", l.SeqLen}, {"micro_batch", l.MicroBatch}} {
		if f.v < 1 {
			return bad(f.key, "required (the log's step time is for this batch: global_batch, seq_len and micro_batch)")
		}
	}
	// A negative degree was read as 1 (max(1, tp)), one the estimate does not
	// take as given.
	for _, f := range []struct {
		key string
		v   int
	}{{"gpus_per_node", l.GPUsPerNode}, {"tp", l.TP}, {"pp", l.PP}, {"cp", l.CP}, {"ep", l.EP}, {"dp", l.DP}, {"zero", l.ZeRO}, {"vpp", l.VPP}} {
		if f.v < 0 {
			return bad(f.key, "must not be negative (got %d)", f.v)
		}
	}
	// The degrees multiply to the run's GPUs: the estimate is of tp × pp × cp ×
	// dp GPUs, and was of fewer than the log's when they did not (dp taken as
	// gpus / (tp × pp × cp), rounded down).
	tp, pp, cp := max(1, l.TP), max(1, l.PP), max(1, l.CP)
	switch {
	case l.DP == 0 && l.GPUs%(tp*pp*cp) != 0:
		return bad("gpus", "%d is not a multiple of tp × pp × cp = %d × %d × %d", l.GPUs, tp, pp, cp)
	case l.DP > 0 && tp*pp*cp*l.DP != l.GPUs:
		return bad("dp", "tp × pp × cp × dp = %d × %d × %d × %d = %d GPUs, but gpus is %d", tp, pp, cp, l.DP, tp*pp*cp*l.DP, l.GPUs)
	}
	if l.Framework == "" {
		l.Framework = fw
	}
	if _, err := framework.Lookup(l.Framework); err != nil {
		return bad("framework", "%v", err)
	}
	return nil
}

// request builds the step estimate of a run on spec.
func (r Run) request(spec topology.Spec) (step.Request, error) {
	l := r.Layout
	a, err := model.Lookup(l.Model)
	if err != nil {
		return step.Request{}, fileErr(r.File, 0, "layout model: %v", err)
	}
	per := spec.GPUsPerNode
	if l.GPUsPerNode > 0 {
		per = l.GPUsPerNode
	}
	if per > spec.GPUsPerNode {
		return step.Request{}, fileErr(r.File, 0, "layout gpus_per_node %d: the base cluster has %d", per, spec.GPUsPerNode)
	}
	// The run's GPUs on as many nodes as gpus_per_node of each hold, rank r on
	// GPU r mod gpus_per_node of node r / gpus_per_node (the nodes' first GPUs,
	// as a launcher given fewer GPUs a node than it has places them); it was
	// checked against the node and then dropped, the run priced on full nodes.
	spec.Nodes = (l.GPUs + per - 1) / per
	cl, err := spec.Build()
	if err != nil {
		return step.Request{}, fmt.Errorf("%s: the base cluster with %d nodes: %w", r.File, spec.Nodes, err)
	}
	var ranks *step.RankMap
	if per < spec.GPUsPerNode {
		gpus := make([]int, l.GPUs)
		for r := range gpus {
			gpus[r] = r/per*spec.GPUsPerNode + r%per
		}
		if ranks, err = step.NewRankMap(cl, gpus); err != nil {
			return step.Request{}, fileErr(r.File, 0, "layout gpus_per_node %d: %v", per, err)
		}
	}
	lay := step.Layout{TP: max(1, l.TP), PP: max(1, l.PP), CP: max(1, l.CP), EP: l.EP, DP: l.DP, ZeRO: l.ZeRO,
		MicroBatch: l.MicroBatch, SP: l.SP, Recompute: step.RecomputeNone, VirtualStages: l.VPP}
	if lay.DP == 0 {
		lay.DP = l.GPUs / (lay.TP * lay.PP * lay.CP)
	}
	if l.Recompute != "" {
		lay.Recompute = step.Recompute(strings.ToLower(l.Recompute))
	}
	switch {
	case l.Schedule != "":
		lay.Schedule = step.Schedule(strings.ToLower(l.Schedule))
	case l.VPP > 1:
		lay.Schedule = step.Interleaved
	case lay.PP > 1:
		lay.Schedule = step.OneFOneB
	}
	t := step.Training{SeqLen: l.SeqLen, GlobalBatch: l.GlobalBatch, Precision: step.BF16, Framework: l.Framework}
	if l.Precision != "" {
		t.Precision = step.Precision(strings.ToLower(l.Precision))
	}
	return step.Request{Model: a, Training: t, Cluster: cl, Layout: lay, Ranks: ranks}, nil
}

// layoutKeys are the layout file's keys of the estimator's fields a training
// log's layout sets (step.Layout's and step.Training's, as the API names them).
var layoutKeys = map[string]string{
	"layout.tp": "tp", "layout.pp": "pp", "layout.cp": "cp", "layout.ep": "ep", "layout.dp": "dp", "layout.zero": "zero",
	"layout.micro_batch": "micro_batch", "layout.sp": "sp", "layout.recompute": "recompute", "layout.schedule": "schedule",
	"layout.virtual_stages": "vpp", "training.global_batch": "global_batch", "training.seq_len": "seq_len",
	"training.precision": "precision", "training.framework": "framework",
}

// layoutRefusal is the estimator's refusal of a run's layout, named by the
// layout file's key when it is one field the layout sets ("layout precision:
// must be bf16, fp16 or fp8"), else as the estimator gives it.
func layoutRefusal(file string, err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap() // the estimator's refusals, joined
	}
	var msgs []string
	first := ""
	for _, e := range errs {
		var ie *invalid.Error
		if !errors.As(e, &ie) || ie.Error() != e.Error() {
			return fileErr(file, 0, "the layout does not estimate: %v", err)
		}
		key, ok := layoutKeys[ie.Field]
		if !ok {
			return fileErr(file, 0, "the layout does not estimate: %v", err)
		}
		if first == "" {
			first = key
		}
		msgs = append(msgs, fmt.Sprintf("layout %s: %s", key, ie.Rule))
	}
	if first == "" {
		return fileErr(file, 0, "the layout does not estimate: %v", err)
	}
	return &FileError{File: file, Msg: strings.Join(msgs, "; "), Layout: first}
}

// priceRuns estimates every run's step on spec with knobs k.
func priceRuns(spec topology.Spec, k Knobs, runs []Run) ([]Measured, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	sp := Apply(spec, k)
	est := step.New()
	out := make([]Measured, 0, len(runs))
	for _, r := range runs {
		req, err := r.request(sp)
		if err != nil {
			return nil, err
		}
		res, err := est.Estimate(req)
		if err != nil {
			return nil, layoutRefusal(r.File, err)
		}
		if !(res.StepTime > 0) {
			return nil, fileErr(r.File, 0, "the layout gives no step time")
		}
		out = append(out, Measured{File: r.File, Op: "step", Nodes: req.Cluster.Spec.Nodes, Ranks: r.Layout.GPUs,
			MeasuredUs: r.StepS * 1e6, PredictedUs: res.StepTime * 1e6})
	}
	return out, nil
}
