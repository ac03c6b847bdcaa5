package wire

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// Limits of one CalibrateCluster request. Calibration fits every input file left
// out in turn, so its work grows with the square of the file count, and the
// held-out checks of each constant and measured range add fits; the fits run in
// parallel and reuse each other's placements and row prices (estimator/calibrate
// placer). Measured with stepcost calibrate (two cores shared with other work,
// load average 10–15), the five OCI A100 sweeps take 1.1 s of CPU (5.6 s before
// that reuse), 16 copies of OCI's full sweep (oci-14340fb, 8 B–8 GiB, 31 rows)
// 8.2 s of CPU and 26 s of wall time (100 s and 245 s before) and 16 copies of
// Lambda's B200 sweep (29 rows) 2.0 s (35 s); 16.0 s and 0.41 s for the OCI sets
// at f7fed17, when this limit was set, before the held-out checks of each
// measured range and of a tail's candidates. 8.2 s of CPU split over two cores,
// about 4 s on a server not busy with other work, is well within the server's
// default 30 s deadline (BenchmarkCalibrate in estimator/calibrate times them);
// a busy server's caller gives a longer deadline. An nccl-tests output is a
// few KiB and a training log's step lines a few hundred KiB; 1 MiB per file
// leaves room for a long log, and the server's request size bounds the whole.
const (
	MaxCalibrationInputs     = 16
	MaxCalibrationInputBytes = 1 << 20
	MaxCalibrationNameBytes  = 256
)

// Calibration is a resolved CalibrateCluster request.
type Calibration struct {
	Base   string // the base's name, for the report
	Spec   topology.Spec
	Inputs calibrate.Inputs
	// files maps each input's name to its index, to name the field of an error;
	// runGPUsPerNode the inputs whose run gives gpus_per_node.
	files          map[string]int
	runGPUsPerNode map[string]bool
}

// ResolveCalibration validates a CalibrateCluster request and reads its inputs:
// a file that is neither nccl-tests output nor a training log, or that the
// readers refuse, is an error on inputs[i].content naming the file and line.
func ResolveCalibration(req *pb.CalibrateClusterRequest) (*Calibration, error) {
	c := invalid.Collector{}
	ins := req.GetInputs()
	switch {
	case len(ins) == 0:
		c.Add("inputs", "give at least one nccl-tests output or training log")
	case len(ins) > MaxCalibrationInputs:
		return nil, Limit("inputs", fmt.Sprintf("at most %d files per request (got %d)", MaxCalibrationInputs, len(ins)))
	}
	if n := req.GetName(); len(n) > MaxCalibrationNameBytes {
		c.Add("name", "at most %d bytes (got %d)", MaxCalibrationNameBytes, len(n))
	}
	seen := map[string]int{}
	for i, in := range ins {
		f := fmt.Sprintf("inputs[%d]", i)
		switch n := in.GetName(); {
		case n == "":
			c.Add(f+".name", "must not be empty")
		case len(n) > MaxCalibrationNameBytes || !utf8.ValidString(n):
			c.Add(f+".name", "must be valid UTF-8 of at most %d bytes", MaxCalibrationNameBytes)
		default:
			if j, dup := seen[n]; dup {
				c.Add(f+".name", "%q is also inputs[%d]'s name", n, j)
			}
			seen[n] = i
		}
		if len(in.GetContent()) > MaxCalibrationInputBytes {
			return nil, Limit(f+".content", fmt.Sprintf("at most %d bytes per file (got %d)", MaxCalibrationInputBytes, len(in.GetContent())))
		}
		if n := in.GetNodes(); n < 0 {
			c.Add(f+".nodes", "must not be negative (got %d; 0 when the output's device lines give them)", n)
		}
		if g := in.GetGpusPerNode(); g < 0 {
			c.Add(f+".gpus_per_node", "must not be negative (got %d; 0 when the output's device lines give them)", g)
		}
		// The layout's names, checked here to name their field: the readers
		// would refuse them as the file's (inputs[i].content).
		for _, l := range []struct {
			field, v string
			parse    func(string) error
		}{
			{"op", in.GetOp(), func(v string) error { _, err := collective.ParseOp(v); return err }},
			{"launch", in.GetLaunch(), func(v string) error { _, err := collective.ParseLaunch(v); return err }},
			{"algo", in.GetAlgo(), func(v string) error { _, err := collective.ParseAlgorithm(v); return err }},
		} {
			if l.v == "" {
				continue
			}
			if err := l.parse(l.v); err != nil {
				c.Add(f+"."+l.field, "%v", err)
			}
		}
	}
	spec, err := ClusterSpec("cluster", req.GetCluster())
	if err == nil {
		// The base checked as a call on it is (Clusters.Get): its nccl read by
		// the one release parser, its rates within bounds. Its node count is not
		// used (each input states its own): checked at one node.
		v := spec
		v.Nodes = max(v.Nodes, 1)
		err = ClusterFields(req.GetCluster(), "", v.Validate())
	}
	c.Join(err)
	if err == nil {
		// A run larger than the cluster: the readers would take its ranks as the
		// file's and refuse the file's bus factor (inputs[i].content).
		for i, in := range ins {
			f := fmt.Sprintf("inputs[%d]", i)
			if g := int(in.GetGpusPerNode()); g > spec.GPUsPerNode {
				c.Add(f+".gpus_per_node", "must be at most the %d GPUs of the cluster's nodes (got %d)", spec.GPUsPerNode, g)
			}
			if n, most := int(in.GetNodes()), clusterNodes(req.GetCluster()); n > most {
				c.Add(f+".nodes", "must be at most the cluster's %d nodes (got %d)", most, n)
			}
		}
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	base := req.GetCluster().GetName()
	if base == "" {
		base = spec.Name
	}
	cal := &Calibration{Base: base, Spec: spec, files: seen, runGPUsPerNode: map[string]bool{}}
	for _, in := range ins {
		r := in.GetRun()
		fl := calibrate.FileLayout{Nodes: int(in.GetNodes()), Op: in.GetOp(), Launch: in.GetLaunch(), Algo: in.GetAlgo(),
			RunLayout: calibrate.RunLayout{Model: r.GetModel(), GPUs: int(r.GetGpus()), GPUsPerNode: int(in.GetGpusPerNode()),
				TP: int(r.GetTp()), PP: int(r.GetPp()), CP: int(r.GetCp()), EP: int(r.GetEp()), DP: int(r.GetDp()), ZeRO: int(r.GetZero()),
				MicroBatch: int(r.GetMicroBatch()), GlobalBatch: int(r.GetGlobalBatch()), SeqLen: int(r.GetSeqLen()),
				Precision: r.GetPrecision(), Recompute: r.GetRecompute(), SP: r.GetSp(), Schedule: r.GetSchedule(), VPP: int(r.GetVpp()),
				Framework: r.GetFramework()}}
		if r.GetGpusPerNode() != 0 {
			fl.GPUsPerNode = int(r.GetGpusPerNode())
			cal.runGPUsPerNode[in.GetName()] = true
		}
		if err := cal.Inputs.Read(in.GetName(), []byte(in.GetContent()), fl); err != nil {
			return nil, cal.FileError(err)
		}
	}
	return cal, nil
}

// FileError turns an error of the calibration that names an input file into a
// field error on that input's content; others pass through.
func (c *Calibration) FileError(err error) error {
	var fe *calibrate.FileError
	if errors.As(err, &fe) {
		if i, ok := c.files[fe.File]; ok {
			// A training log's layout at fault is its run's field (the input's
			// own gpus_per_node unless the run gives one), not the content.
			field := "content"
			switch {
			case fe.Layout == "gpus_per_node" && !c.runGPUsPerNode[fe.File]:
				field = "gpus_per_node"
			case fe.Layout != "":
				field = "run." + fe.Layout
			}
			return invalid.Field(fmt.Sprintf("inputs[%d].%s", i, field), "%s", fe.Error())
		}
	}
	if errors.Is(err, calibrate.ErrNoInputs) {
		return invalid.Field("inputs", "%v", err)
	}
	return err
}

// CalibrationResponse is the report in proto form.
func CalibrationResponse(r *calibrate.Report, in calibrate.Inputs) *pb.CalibrateClusterResponse {
	out := &pb.CalibrateClusterResponse{Cluster: SpecToDefinition(r.Spec), Moved: r.Moved, AtBound: r.AtBound,
		Excluded: r.Excluded, Compromise: r.Compromise, Notes: append(in.Notes(), r.Notes...), Warnings: r.Warnings}
	for _, kn := range r.Determined {
		out.Constants = append(out.Constants, &pb.CalibratedConstant{Name: kn.Name, Field: kn.Field,
			Base: kn.Of(r.Catalog), Fitted: kn.Of(r.Fitted), Min: kn.Min, Max: kn.Max})
	}
	for _, row := range r.Rows {
		out.Errors = append(out.Errors, &pb.CalibrationErrorRow{Group: row.Group, Label: row.Label, Rows: int32(row.N),
			BeforeMedian: row.BeforeMedian, AfterMedian: row.AfterMedian, BeforeMean: row.BeforeMean, AfterMean: row.AfterMean})
	}
	for _, d := range r.Declined {
		out.Declined = append(out.Declined, d.String())
	}
	for _, c := range r.Contradictions {
		out.Contradictions = append(out.Contradictions, c.String())
	}
	for _, m := range r.Mismatches {
		out.Mismatches = append(out.Mismatches, m.String())
		out.MismatchRows = append(out.MismatchRows, &pb.CalibrationMismatch{File: m.File, Line: int32(m.Line), Bytes: m.Bytes,
			Model: m.Model, Measured: m.Measured, ModelErr: m.ModelErr, MatchErr: m.MatchErr})
	}
	out.Base, out.Undetermined, out.ComputeScale = r.Base, r.Undetermined, r.Fitted.ComputeScale
	out.Before, out.OutOfSample, out.After = measurementsToProto(r.Before), measurementsToProto(r.OutOfSample), measurementsToProto(r.After)
	out.Choices = algoRangesToProto(r.Choices)
	for _, s := range in.Sweeps {
		f := &pb.CalibrationFile{File: s.File, Kind: "collective", Op: s.Op.String(), Nodes: int32(s.Nodes), GpusPerNode: int32(s.GPUsPerNode),
			Device: s.Device, Launch: s.Launch.String(), Rows: int32(len(s.Points)), NodesFrom: NodesFrom(s), Description: s.Describe()}
		if s.Algo != collective.Auto {
			f.Algo = s.Algo.String()
		}
		out.Files = append(out.Files, f)
	}
	for _, ru := range in.Runs {
		out.Files = append(out.Files, &pb.CalibrationFile{File: ru.File, Kind: "training", Framework: ru.Framework,
			Model: ru.Layout.Model, Gpus: int32(ru.Layout.GPUs), StepSeconds: ru.StepS, LoggedSteps: int32(ru.Steps)})
	}
	return out
}

func measurementsToProto(ms []calibrate.Measured) []*pb.CalibrationMeasurement {
	out := make([]*pb.CalibrationMeasurement, len(ms))
	for i, m := range ms {
		out[i] = &pb.CalibrationMeasurement{File: m.File, Line: int32(m.Line), Op: m.Op, Bytes: m.Bytes, Nodes: int32(m.Nodes),
			Ranks: int32(m.Ranks), Algo: m.Algo, MeasuredUs: m.MeasuredUs, PredictedUs: m.PredictedUs}
	}
	return out
}

// NodesFrom says where a sweep's nodes and GPUs per node came from: "rows"
// (measurement rows), "header" (the output's device lines) or "given" (the
// request or the command line).
func NodesFrom(s calibrate.Sweep) string {
	switch {
	case s.FromRows:
		return "rows"
	case s.FromHeader:
		return "header"
	}
	return "given"
}

// AlgoRangesFromProto is the inverse of the conversion of a cluster's
// algorithms, for a report's choices.
func AlgoRangesFromProto(rs []*pb.AlgoRange) []topology.AlgoRange {
	out := make([]topology.AlgoRange, len(rs))
	for i, r := range rs {
		out[i] = topology.AlgoRange{Op: r.GetOp(), Nodes: int(r.GetNodes()), GPUsPerNode: int(r.GetGpusPerNode()), MinNodes: int(r.GetMinNodes()),
			MaxNodes: int(r.GetMaxNodes()), MinBytes: r.GetMinBytes(), MaxBytes: r.GetMaxBytes(), Algo: r.GetAlgo()}
	}
	return out
}

// clusterNodes is the most nodes a cluster spec holds: its nodes, or
// topology.MaxNodes when it gives none.
func clusterNodes(c *pb.ClusterSpec) int {
	if n := int(c.GetNodes()); n > 0 {
		return n
	}
	return topology.MaxNodes
}
