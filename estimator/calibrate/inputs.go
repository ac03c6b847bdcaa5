package calibrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"unicode/utf16"

	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/strictjson"
)

// FileLayout is what the caller states about one input file: for nccl-tests output
// without device lines its nodes and GPUs per node (and the test, if the output does
// not name it); for a training log the run's layout.
type FileLayout struct {
	Nodes  int    `json:"nodes,omitempty"`
	Op     string `json:"op,omitempty"`
	Launch string `json:"launch,omitempty"`
	// Algo is NCCL_ALGO as the run set it (ring, tree, nvls, nvlstree, pat, collnet
	// is not modelled); empty when NCCL chose.
	Algo string `json:"algo,omitempty"`
	RunLayout
}

// Layouts maps input files, by base name, to their layouts.
type Layouts map[string]FileLayout

// DecodeLayouts reads a layouts file in its JSON form (the command line converts
// YAML to it): an object keyed by input file name. Unknown keys are errors.
func DecodeLayouts(data []byte) (Layouts, error) {
	if err := strictjson.Check(data); err != nil {
		return nil, fmt.Errorf("layouts: %w", err) // a key twice, in two cases: the decoder keeps the last
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("layouts: %w", err)
	}
	out := Layouts{}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		dec := json.NewDecoder(bytes.NewReader(raw[k]))
		dec.DisallowUnknownFields()
		var fl FileLayout
		if err := dec.Decode(&fl); err != nil {
			return nil, fmt.Errorf("layouts %s: %w", k, err)
		}
		if fl.Nodes < 0 || fl.GPUs < 0 || fl.GPUsPerNode < 0 {
			return nil, fmt.Errorf("layouts %s: nodes, gpus and gpus_per_node must not be negative", k)
		}
		out[k] = fl
	}
	return out, nil
}

// For returns the layout given for a file (matched by its base name), and the
// defaults for what it leaves out.
func (ls Layouts) For(file string, def FileLayout) FileLayout {
	fl, ok := ls[filepath.Base(file)]
	if !ok {
		return def
	}
	if fl.Nodes == 0 {
		fl.Nodes = def.Nodes
	}
	if fl.GPUsPerNode == 0 {
		fl.GPUsPerNode = def.GPUsPerNode
	}
	return fl
}

// Unused names the layouts given for files that are not among the inputs
// (matched by base name, as For matches them), in order: a misspelt or stale
// entry leaves its file without the layout written for it, and a layout file
// shared by several calibrations holds entries for files not given this time.
func (ls Layouts) Unused(files []string) []string {
	have := map[string]bool{}
	for _, f := range files {
		have[filepath.Base(f)] = true
	}
	var unused []string
	for k := range ls {
		if !have[k] {
			unused = append(unused, k)
		}
	}
	sort.Strings(unused)
	return unused
}

// runFields names the fields of a training log's layout that are set (all but
// gpus_per_node, which nccl-tests outputs share), by their layout-file keys.
func runFields(l RunLayout) []string {
	var set []string
	v, t := reflect.ValueOf(l), reflect.TypeOf(l)
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if key != "gpus_per_node" && !v.Field(i).IsZero() {
			set = append(set, key)
		}
	}
	return set
}

// The kinds of input file, in the order Read tells them apart.
type inputKind int

const (
	unknownInput inputKind = iota
	jsonReport
	measurementRows
	ncclTests
	trainingLog
)

// kindOf is what Read takes data for (a byte-order mark aside).
func kindOf(data []byte) inputKind {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	switch {
	case bytes.Contains(data, []byte(`"nccl_version"`)) && bytes.Contains(data, []byte(`"results"`)):
		return jsonReport
	case IsMeasurementRows(data):
		return measurementRows
	case IsNCCLTests(data):
		return ncclTests
	case IsTrainingLog(data):
		return trainingLog
	}
	return unknownInput
}

// ReadsAsTrainingLog says whether Read takes data for a training log, not for
// nccl-tests output, measurement rows or nccl-tests' JSON report: a caller's
// defaults for the collective measurements (their nodes and GPUs per node) are
// not a training run's layout.
func ReadsAsTrainingLog(data []byte) bool { return kindOf(data) == trainingLog }

// Read reads one input file, nccl-tests output, measurement rows (JSON lines in
// the nccl-measurement schema, MeasurementRow) or a training log, by its content,
// and adds it to the inputs. Content that is neither is an error naming the file.
func (in *Inputs) Read(name string, data []byte, fl FileLayout) (err error) {
	// UTF-16 with its byte-order mark (PowerShell 5's > and Out-File write
	// UTF-16LE) is the same text in another encoding.
	data, err = fromUTF16(name, data)
	if err != nil {
		return err
	}
	// A UTF-8 byte-order mark (a file saved by a Windows editor) is not
	// content: before it, measurement rows read as some other text.
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	// A copy of a file read already, under another name: its rows would be
	// fitted twice, and each copy scored, left out, with the other in the fit.
	// Line ends aside: a copy saved with Windows line ends is the same content.
	sum := sha256.Sum256(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")))
	if first, ok := in.contents[sum]; ok {
		return fileErr(name, 0, "the same content as %s: one measurement given twice (a copy under another name)", first)
	}
	defer func() {
		if err != nil {
			return
		}
		if in.contents == nil {
			in.contents = map[[sha256.Size]byte]string{}
		}
		in.contents[sum] = name
	}()
	// A layout value the file's reader would not use is refused, not dropped.
	switch kindOf(data) {
	case jsonReport:
		// nccl-tests 2.18.5 and later write it with -J (src/util.cu).
		return fileErr(name, 0, "nccl-tests' JSON report (-J) is not read: give the text output the run printed to its standard output")
	case measurementRows:
		if f := runFields(fl.RunLayout); len(f) > 0 {
			return fileErr(name, 0, "layout %s: fields of a training log's layout, but the file is measurement rows", strings.Join(f, ", "))
		}
		s, err := ParseMeasurementRows(name, data, Layout{Nodes: fl.Nodes, GPUsPerNode: fl.GPUsPerNode, Op: fl.Op, Launch: fl.Launch, Algo: fl.Algo})
		if err != nil {
			return err
		}
		in.Sweeps = append(in.Sweeps, s)
	case ncclTests:
		if f := runFields(fl.RunLayout); len(f) > 0 {
			return fileErr(name, 0, "layout %s: fields of a training log's layout, but the file is nccl-tests output", strings.Join(f, ", "))
		}
		s, err := ParseNCCLTests(name, data, Layout{Nodes: fl.Nodes, GPUsPerNode: fl.GPUsPerNode, Op: fl.Op, Launch: fl.Launch, Algo: fl.Algo})
		if err != nil {
			return err
		}
		in.Sweeps = append(in.Sweeps, s)
	case trainingLog:
		var set []string
		for _, f := range []struct{ key, v string }{{"op", fl.Op}, {"launch", fl.Launch}, {"algo", fl.Algo}} {
			if f.v != "" {
				set = append(set, f.key)
			}
		}
		if len(set) > 0 {
			return fileErr(name, 0, "layout %s: fields of an nccl-tests output's layout, but the file is a training log", strings.Join(set, ", "))
		}
		r, err := ParseTrainingLog(name, data, fl.RunLayout)
		if err != nil {
			return err
		}
		in.Runs = append(in.Runs, r)
	default:
		return fileErr(name, 0, "neither nccl-tests output (no nThread header, no algbw/busbw table), nor measurement rows (JSON lines), nor a training log stepcost reads (no Megatron-LM, NeMo, torchtitan, Composer or DeepSpeed step-time line)")
	}
	return nil
}

// fromUTF16 returns data as UTF-8: UTF-16 text behind its byte-order mark
// decoded, anything else as it is. UTF-32, and UTF-16 without a mark (its first
// line's every other byte zero), are refused naming the encoding.
func fromUTF16(name string, data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE, 0, 0}) || bytes.HasPrefix(data, []byte{0, 0, 0xFE, 0xFF}):
		return nil, fileErr(name, 0, "UTF-32 text: save it as UTF-8 (or UTF-16)")
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		if len(data)%2 != 0 {
			return nil, fileErr(name, 0, "UTF-16 text of an odd number of bytes: cut short")
		}
		be := data[0] == 0xFE
		u := make([]uint16, 0, len(data)/2-1)
		for i := 2; i+1 < len(data); i += 2 {
			if be {
				u = append(u, uint16(data[i])<<8|uint16(data[i+1]))
			} else {
				u = append(u, uint16(data[i])|uint16(data[i+1])<<8)
			}
		}
		return []byte(string(utf16.Decode(u))), nil
	}
	// ASCII text in UTF-16 without a mark: of its first bytes, every other one
	// zero and none of the others (little- or big-endian).
	if first := data[:min(len(data), 80)&^1]; len(first) >= 8 {
		for hi := range 2 {
			ascii := true
			for i := 0; i+1 < len(first) && ascii; i += 2 {
				ascii = first[i+hi] == 0 && first[i+1-hi] != 0
			}
			if ascii {
				return nil, fileErr(name, 0, "UTF-16 text without a byte-order mark: save it as UTF-8 (PowerShell: Out-File -Encoding utf8)")
			}
		}
	}
	return data, nil
}

// Notes lists what the readers set aside or noticed, file by file.
func (in Inputs) Notes() []string {
	var out []string
	for _, s := range in.Sweeps {
		for _, n := range s.Notes {
			out = append(out, s.File+": "+n)
		}
	}
	for _, r := range in.Runs {
		for _, n := range r.Notes {
			out = append(out, r.File+": "+n)
		}
	}
	return out
}

// Fit fits the constants the inputs determine, starting from the base cluster's,
// and returns them with the calibrated spec.
func Fit(spec topology.Spec, in Inputs) (Knobs, topology.Spec, error) {
	start := Start(spec)
	pc := newPlacer(spec)
	forced, _, err := matchChoices(pc, spec, start, in.Sweeps)
	if err != nil {
		return Knobs{}, topology.Spec{}, err
	}
	f, err := fit(context.Background(), pc, spec, start, in, forced, nil)
	if err != nil {
		return Knobs{}, topology.Spec{}, err
	}
	return f.k, Apply(withChoices(spec, f.choices), f.k), nil
}

// Score prices the inputs on spec and returns the median and mean |error|.
func Score(spec topology.Spec, in Inputs) (median, mean float64, err error) {
	ms, err := price(newPlacer(spec), spec, Start(spec), in)
	if err != nil {
		return 0, 0, err
	}
	median, mean = Stats(ms)
	return median, mean, nil
}

// Describe names a sweep for reports: "allreduce, 2 nodes × 8 GPUs, 30 sizes".
func (s Sweep) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %d node(s) × %d GPUs", s.Op, s.Nodes, s.GPUsPerNode)
	if s.Device != "" {
		fmt.Fprintf(&b, " (%s)", s.Device)
	}
	sizes := map[float64]bool{}
	lo, hi := s.Points[0].Bytes, s.Points[0].Bytes
	for _, p := range s.Points {
		sizes[p.Bytes] = true
		lo, hi = min(lo, p.Bytes), max(hi, p.Bytes)
	}
	b.WriteString(", ")
	if len(s.Points) != len(sizes) {
		// A size measured more than once (a rerun appended, a row repeated).
		fmt.Fprintf(&b, "%d rows at ", len(s.Points))
	}
	fmt.Fprintf(&b, "%d sizes %s–%s, %s launch", len(sizes), FormatBytes(lo), FormatBytes(hi), s.Launch)
	return b.String()
}
