package calibrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/internal/jsonl"
	"github.com/stepcost/stepcost/estimator/internal/ncclrow"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/strictjson"
)

// MeasurementRow is one row of a measurement table in stepcost's nccl-measurement
// schema, the one its published collective measurements are kept in
// (estimator/collective/accuracy/testdata): one message size of one run, with the
// numbers as the benchmark printed them and where they came from (ncclrow.Row
// gives the fields and their units).
//
// A row states its run (collective, n_nodes, gpus_per_node) and its size, and
// time_us or busbw_GBps (or both, and algbw_GBps, which must then agree). The
// descriptive fields are read and not priced; a field not in the schema is an
// error, so a misspelt one is not silently dropped.
type MeasurementRow = ncclrow.Row

// IsMeasurementRows says whether data is a measurement table as JSON lines: its
// first line that is not blank is a JSON object.
func IsMeasurementRows(data []byte) bool {
	for _, l := range bytes.Split(data, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 {
			return t[0] == '{'
		}
	}
	return false
}

// forcedName reads a forced algorithm or protocol: a name, optionally followed by
// a parenthesised remark ("Ring (NCCL_ALGO=Ring)").
var forcedName = regexp.MustCompile(`^\s*([A-Za-z0-9_-]+)\s*(\(.*\))?\s*$`)

// ParseMeasurementRows reads one run's measurement rows, JSON lines in the
// nccl-measurement schema (MeasurementRow). One file is one run: every row states
// the same collective, nodes, GPUs per node, forced algorithm and protocol,
// system and NCCL version. Each row's numbers are checked against each other —
// algbw against size ÷ time, busbw against algbw × the bus factor of the
// collective on n_nodes × gpus_per_node ranks — and a row that contradicts itself
// is refused with the file, line and field. layout may state the nodes, GPUs per
// node, collective, algorithm and launch; what it states must agree with the rows.
func ParseMeasurementRows(name string, data []byte, layout Layout) (Sweep, error) {
	s := Sweep{File: name, Launch: collective.PerProcess}
	type runKey struct {
		op, algo, proto, system, version string
		nodes, gpn                       int
	}
	var first runKey
	firstLine := 0
	sc := jsonl.NewScanner(data)
	for sc.Scan() {
		line, raw := sc.Line(), sc.Bytes()
		var r MeasurementRow
		if err := jsonl.UnmarshalStrict(raw, &r); errors.Is(err, jsonl.ErrTrailing) {
			return s, fileErr(name, line, "text after the row's JSON object: one row per line")
		} else if err != nil {
			return s, fileErr(name, line, "not a measurement row: %v", jsonFieldErr(err))
		}
		if err := strictjson.Check(raw); err != nil {
			// A key given twice (in any case): the decoder kept the last.
			return s, fileErr(name, line, "not a measurement row: %v", err)
		}
		fe := func(field, format string, args ...any) error {
			return fileErr(name, line, "%s: %s", field, fmt.Sprintf(format, args...))
		}
		// The run.
		if r.Collective == "" {
			return s, fe("collective", "missing (allreduce, allgather, reducescatter, alltoall, sendrecv, broadcast, reduce)")
		}
		op, err := collective.ParseOp(r.Collective)
		if err != nil {
			return s, fe("collective", "%v", err)
		}
		if r.Nodes == nil || *r.Nodes < 1 {
			return s, fe("n_nodes", "missing or below 1: the row must say how many nodes ran it")
		}
		if r.GPUsPerNode == nil || *r.GPUsPerNode < 1 {
			return s, fe("gpus_per_node", "missing or below 1")
		}
		ranks := *r.Nodes * *r.GPUsPerNode
		if r.NGPUs != nil && *r.NGPUs != ranks {
			return s, fe("n_gpus", "%d, but n_nodes × gpus_per_node is %d × %d = %d", *r.NGPUs, *r.Nodes, *r.GPUsPerNode, ranks)
		}
		algo, proto := "", ""
		if r.Algorithm != nil {
			m := forcedName.FindStringSubmatch(*r.Algorithm)
			if m == nil {
				return s, fe("algorithm", "%q: want the algorithm the run forced with NCCL_ALGO (ring, tree, nvls, nvlstree, pat), or null when NCCL chose", *r.Algorithm)
			}
			a, err := ncclAlgo(m[1])
			if err != nil {
				return s, fe("algorithm", "%v (null when NCCL chose)", err)
			}
			algo = a.String()
			s.Algo = a
		}
		if r.Protocol != nil {
			m := forcedName.FindStringSubmatch(*r.Protocol)
			if m == nil {
				return s, fe("protocol", "%q: want the protocol the run forced with NCCL_PROTO (ll, ll128, simple), or null when NCCL chose", *r.Protocol)
			}
			p, err := collective.ParseProtocol(m[1])
			if err != nil {
				return s, fe("protocol", "%v (null when NCCL chose)", err)
			}
			proto = p.String()
			s.Protocol, s.ForceProtocol = p, true
		}
		version := ""
		if r.LibraryVersion != nil {
			version = *r.LibraryVersion
			// The release the row ran, as stepcost accuracy reads it
			// (collective/accuracy statedNCCL; an RCCL row states none): "2.28.7 (NCCL version
			// 2.28.7+cuda13.0 printed)" gives 2.28.7; a library_version that
			// does not start with a digit ("not stated") states none, and one
			// that does must start with a release topology.ParseNCCLRelease
			// takes ("9.99" or "2.28.7.1.2" is refused, not read as none).
			// NCCL prints its release with the CUDA it was built for ("2.28.7+cuda13.0",
			// as the nccl-tests reader strips it too); the library is NCCL unless the
			// row names another, in any case ("nccl").
			v, _, _ := strings.Cut(version, " ")
			v, _, _ = strings.Cut(v, "+")
			if (r.Library == "" || strings.EqualFold(r.Library, "NCCL")) && version != "" &&
				(version[0] == ' ' || version[0] >= '0' && version[0] <= '9') {
				if v == "" {
					// A blank before the release is refused as every release field
					// refuses it, quoting what the row gave, not the empty text
					// before the blank.
					v = version
				}
				if _, _, err := topology.ParseNCCLRelease(v); err != nil {
					return s, fe("library_version", "%v", err)
				}
				s.NCCL = v
			}
		}
		k := runKey{op.String(), algo, proto, r.System, version, *r.Nodes, *r.GPUsPerNode}
		if firstLine == 0 {
			first, firstLine = k, line
		} else if k != first {
			field := ""
			switch {
			case k.op != first.op:
				field = "collective"
			case k.nodes != first.nodes:
				field = "n_nodes"
			case k.gpn != first.gpn:
				field = "gpus_per_node"
			case k.algo != first.algo:
				field = "algorithm"
			case k.proto != first.proto:
				field = "protocol"
			case k.system != first.system:
				field = "system"
			default:
				field = "library_version"
			}
			return s, fe(field, "differs from line %d's: one file is one run (one collective on one set of nodes, one NCCL); put each run in its own file", firstLine)
		}
		if s.Device == "" {
			s.Device = r.GPU
		}

		// The numbers.
		if r.SizeBytes == nil || !(*r.SizeBytes > 0) || math.IsInf(*r.SizeBytes, 0) {
			return s, fe("size_bytes", "missing or not positive")
		}
		size := *r.SizeBytes
		if size > collective.MaxBytes {
			return s, fe("size_bytes", "%g is above the model's largest message (%g)", size, float64(collective.MaxBytes))
		}
		for _, v := range []struct {
			field string
			p     *float64
			zero  bool // a bandwidth of a small message is printed rounded to 0.00
		}{{"time_us", r.TimeUs, false}, {"algbw_GBps", r.AlgBW, true}, {"busbw_GBps", r.BusBW, true}, {"inplace_time_us", r.InPlaceTimeUs, false}} {
			if v.p != nil && (!(*v.p > 0 || v.zero && *v.p == 0) || math.IsInf(*v.p, 0)) {
				return s, fe(v.field, "%g: must be positive (null when not measured)", *v.p)
			}
		}
		f := op.BusFactor(ranks)
		p := Point{Line: line, Bytes: size}
		switch {
		case r.TimeUs != nil:
			p.TimeUs = *r.TimeUs
		case r.AlgBW != nil && *r.AlgBW > 0:
			p.TimeUs = size / *r.AlgBW / 1e3
		case r.BusBW != nil && *r.BusBW > 0:
			if f == 0 {
				return s, fe("busbw_GBps", "%s on %d rank(s) moves nothing over a bus (factor 0): give time_us", op, ranks)
			}
			p.TimeUs = size / (*r.BusBW / f) / 1e3
		default:
			return s, fe("time_us", "missing, and no algbw_GBps or busbw_GBps above zero to derive it from")
		}
		alg := size / p.TimeUs / 1e3 // GB/s
		p.AlgBW, p.BusBW = alg, alg*f
		// Published bandwidths are rounded to two decimals (nccl-tests prints them so),
		// those computed from a time to a few more: a difference beyond the rounding
		// and 2 % is a contradiction, not a rounding.
		if r.AlgBW != nil && r.TimeUs != nil {
			if math.Abs(*r.AlgBW-alg) > 0.011+0.02*alg {
				return s, fe("algbw_GBps", "%g GB/s is not size_bytes / time_us = %.4g GB/s", *r.AlgBW, alg)
			}
			p.AlgBW = *r.AlgBW
		}
		if r.BusBW != nil && (r.TimeUs != nil || r.AlgBW != nil && *r.AlgBW > 0) {
			if math.Abs(*r.BusBW-alg*f) > 0.011+0.02*alg*f {
				return s, fe("busbw_GBps", "%g GB/s is not algbw × the bus factor of %s on %d × %d ranks (%.4g × %.3f = %.4g GB/s): the row's size, time, nodes or GPUs per node are not what was measured", *r.BusBW, op, *r.Nodes, *r.GPUsPerNode, alg, f, alg*f)
			}
			p.BusBW = *r.BusBW
		}
		switch r.Placement {
		case "", "out-of-place", "unspecified":
			if r.InPlaceTimeUs != nil {
				p.InPlaceUs = *r.InPlaceTimeUs
			}
		case "in-place":
			// The time is the in-place column; the reader's stall check compares the
			// two columns whichever is priced.
		default:
			return s, fe("placement", "%q: want out-of-place, in-place or unspecified (the source does not say which column)", r.Placement)
		}
		s.Points = append(s.Points, p)
	}
	if err := sc.Err(); err != nil {
		return s, fileErr(name, 0, "%v", err)
	}
	if len(s.Points) == 0 {
		return s, fileErr(name, 0, "no measurement rows")
	}
	s.Op, _ = collective.ParseOp(first.op)
	s.Nodes, s.GPUsPerNode = first.nodes, first.gpn
	s.Ranks = s.Nodes * s.GPUsPerNode
	s.FromRows = true
	for b, op := range benchOps {
		if op == s.Op {
			s.Bench = b
		}
	}

	// What the caller states must agree with the rows.
	if given := layout.disagrees(s.Nodes, s.GPUsPerNode); given != "" {
		return s, fileErr(name, firstLine, "%s, but the rows' n_nodes and gpus_per_node are %d × %d", given, s.Nodes, s.GPUsPerNode)
	}
	if layout.Op != "" {
		op, err := collective.ParseOp(layout.Op)
		if err != nil {
			return s, fileErr(name, 0, "layout op: %v", err)
		}
		if op != s.Op {
			return s, fileErr(name, firstLine, "the layout says %s, the rows' collective %s", op, s.Op)
		}
	}
	if layout.Algo != "" {
		a, err := ncclAlgo(layout.Algo)
		if err != nil {
			return s, fileErr(name, 0, "layout algo: %v", err)
		}
		if first.algo != "" && a != s.Algo {
			return s, fileErr(name, firstLine, "the layout says NCCL_ALGO %s, the rows' algorithm %s", a, s.Algo)
		}
		s.Algo = a
	}
	if layout.Launch != "" {
		l, err := collective.ParseLaunch(layout.Launch)
		if err != nil {
			return s, fileErr(name, 0, "layout launch: %v", err)
		}
		s.Launch = l
	}
	// A table need not be ordered; the sweep's checks expect sizes upwards.
	sort.SliceStable(s.Points, func(i, j int) bool { return s.Points[i].Bytes < s.Points[j].Bytes })
	return s, checkSweep(&s, true)
}

// jsonFieldErr words encoding/json's errors by field.
func jsonFieldErr(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: a JSON %s where the schema has a %s", te.Field, te.Value, te.Type)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Sprintf("%s: not a field of the nccl-measurement schema (a misspelling?)", strings.Trim(f, `"`))
	}
	return msg
}
