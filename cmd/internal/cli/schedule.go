package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/stepcost/stepcost/estimator/collective"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// scheduleJSON is the schedule part of `stepcost collective --steps`, with the
// field names of the API's CollectiveSchedule (proto/stepcost/v1/stepcost.proto
// gives every field's meaning and unit). It is filled from the estimator in
// process and from the response of a daemon, so both print alike.
type scheduleJSON struct {
	Algorithm        string           `json:"algorithm"`
	Protocol         string           `json:"protocol"`
	Channels         int              `json:"channels"`
	Chunks           int              `json:"chunks"`
	Steps            int              `json:"steps"`
	Transfers        int64            `json:"transfers"`
	TimeUs           float64          `json:"time_us"`
	LatencyUs        float64          `json:"latency_us"`
	AnalyticalTimeUs float64          `json:"analytical_time_us"`
	DifferencePct    float64          `json:"difference_pct"`
	Difference       string           `json:"difference"`
	Verification     verificationJSON `json:"verification"`
	Rows             []rowJSON        `json:"rows"`
	OmittedRows      int              `json:"omitted_rows"`
}

type verificationJSON struct {
	Verified bool   `json:"verified"`
	Result   string `json:"result"`
	Error    string `json:"error,omitempty"`
	Elements int64  `json:"elements"`
	Scaled   bool   `json:"scaled"`
}

type rowJSON struct {
	FirstStep       int        `json:"first_step"`
	StepCount       int        `json:"step_count"`
	Phase           string     `json:"phase"`
	TimeUs          float64    `json:"time_us"`
	LatencyUs       float64    `json:"latency_us"`
	MaxStepTimeUs   float64    `json:"max_step_time_us"`
	Bottleneck      string     `json:"bottleneck,omitempty"`
	BottleneckBytes float64    `json:"bottleneck_bytes,omitempty"`
	BottleneckGBps  float64    `json:"bottleneck_gbps,omitempty"`
	Flows           []flowJSON `json:"flows"`
}

type flowJSON struct {
	Kind     string     `json:"kind"`
	Route    string     `json:"route"`
	Pairs    int        `json:"pairs"`
	MinBytes int64      `json:"min_bytes"`
	MaxBytes int64      `json:"max_bytes"`
	Bytes    int64      `json:"bytes"`
	Examples []pairJSON `json:"examples"`
}

// pairJSON is a source and destination rank; −1 is every rank of the group.
type pairJSON struct {
	Src int32 `json:"src"`
	Dst int32 `json:"dst"`
}

// errNotVerified makes the command fail when a schedule does not verify, after
// printing it.
var errNotVerified = errors.New("the schedule does not produce the collective's result (see verification)")

var transferKindNames = map[pb.TransferKind]string{
	pb.TransferKind_TRANSFER_KIND_COPY: collective.Copy.String(), pb.TransferKind_TRANSFER_KIND_ADD: collective.Add.String(),
	pb.TransferKind_TRANSFER_KIND_SWITCH_REDUCE: collective.SwitchReduce.String(), pb.TransferKind_TRANSFER_KIND_MULTICAST: collective.Multicast.String(),
}

// scheduleFromProto reads a daemon's schedule; nil stays nil.
func scheduleFromProto(s *pb.CollectiveSchedule) *scheduleJSON {
	if s == nil {
		return nil
	}
	v := s.GetVerification()
	out := &scheduleJSON{Algorithm: algoName(s.GetAlgorithm()), Protocol: protocolName(s.GetProtocol()), Channels: int(s.GetChannels()),
		Chunks: int(s.GetChunks()), Steps: int(s.GetSteps()), Transfers: s.GetTransfers(), TimeUs: s.GetTimeUs(), LatencyUs: s.GetLatencyUs(),
		AnalyticalTimeUs: s.GetAnalyticalTimeUs(), DifferencePct: s.GetDifferencePct(), Difference: s.GetDifference(),
		OmittedRows:  int(s.GetOmittedRows()),
		Verification: verificationJSON{Verified: v.GetVerified(), Result: v.GetResult(), Error: v.GetError(), Elements: v.GetElements(), Scaled: v.GetScaled()}}
	for _, row := range s.GetRows() {
		rj := rowJSON{FirstStep: int(row.GetFirstStep()), StepCount: int(row.GetStepCount()), Phase: row.GetPhase(), TimeUs: row.GetTimeUs(),
			LatencyUs: row.GetLatencyUs(), MaxStepTimeUs: row.GetMaxStepTimeUs(), Bottleneck: row.GetBottleneck(),
			BottleneckBytes: row.GetBottleneckBytes(), BottleneckGBps: row.GetBottleneckGbps()}
		for _, f := range row.GetFlows() {
			fj := flowJSON{Kind: transferKindNames[f.GetKind()], Route: f.GetRoute(), Pairs: int(f.GetPairs()), MinBytes: f.GetMinBytes(),
				MaxBytes: f.GetMaxBytes(), Bytes: f.GetBytes()}
			for _, e := range f.GetExamples() {
				fj.Examples = append(fj.Examples, pairJSON{e.GetSrc(), e.GetDst()})
			}
			rj.Flows = append(rj.Flows, fj)
		}
		out.Rows = append(out.Rows, rj)
	}
	return out
}

// algoName and protocolName turn the API's enums back into the estimator's names.
func algoName(a pb.Algorithm) string {
	for k, v := range pbAlgorithm {
		if v == a {
			return k.String()
		}
	}
	return a.String()
}

func protocolName(p pb.Protocol) string {
	for k, v := range pbProtocol {
		if v == p {
			return k.String()
		}
	}
	return p.String()
}

// failed is errNotVerified when the schedule did not verify, nil otherwise (and
// for no schedule).
func (s *scheduleJSON) failed() error {
	if s != nil && !s.Verification.Verified {
		return errNotVerified
	}
	return nil
}

// write prints the schedule for people; perNode is the group's GPUs per node, to
// say which GPU a rank is.
func (s *scheduleJSON) write(w io.Writer, perNode int) {
	chunks := ""
	if s.Chunks > 1 {
		chunks = fmt.Sprintf(" × %d chunks", s.Chunks)
	}
	ranks := fmt.Sprintf("rank r is GPU r mod %d of node ⌊r/%d⌋", perNode, perNode)
	if perNode == 1 {
		ranks = "rank r is on node r"
	}
	fmt.Fprintf(w, "schedule of %s/%s: %d channel(s)%s, %d steps, %d transfers; %s\n",
		s.Algorithm, s.Protocol, s.Channels, chunks, s.Steps, s.Transfers, ranks)
	v := s.Verification
	how := fmt.Sprintf("executed with %d elements per rank", v.Elements)
	if v.Scaled {
		how += ": the schedule's transfers with every piece of data one or two elements long"
	}
	if v.Verified {
		printWrapped(w, "verified: ", fmt.Sprintf("%s (%s)", v.Result, how), true)
	} else {
		fmt.Fprintf(w, "NOT VERIFIED: %s: %s (%s)\n", v.Result, v.Error, how)
	}
	// Rounded first, so that a difference of −0.001 % prints as +0.00 %, not −0.00 %.
	d := math.Round(s.DifferencePct*100) / 100
	if d == 0 {
		d = 0 // −0 compares equal to 0: this makes it +0
	}
	printWrapped(w, "time: ", fmt.Sprintf("schedule %s, closed form %s (%+.2f %%): %s", fmtUs(s.TimeUs), fmtUs(s.AnalyticalTimeUs), d, s.Difference), true)
	fmt.Fprintln(w)

	head := []string{"steps", "phase", "time", "slowest step", "bottleneck of the slowest step"}
	cells := [][]string{head}
	for _, r := range s.Rows {
		steps := fmt.Sprint(r.FirstStep)
		if r.StepCount > 1 {
			steps = fmt.Sprintf("%d–%d", r.FirstStep, r.FirstStep+r.StepCount-1)
		}
		neck := "-"
		if r.Bottleneck != "" {
			neck = fmt.Sprintf("%s: %s at %.4g GB/s", r.Bottleneck, FormatSize(r.BottleneckBytes), r.BottleneckGBps)
		}
		cells = append(cells, []string{steps, r.Phase, fmtUs(r.TimeUs), fmtUs(r.MaxStepTimeUs), neck})
	}
	width := make([]int, len(head))
	for _, c := range cells {
		for i, x := range c {
			width[i] = max(width[i], len([]rune(x)))
		}
	}
	pad := func(x string, n int) string { return x + strings.Repeat(" ", max(0, n-len([]rune(x)))) }
	indent := strings.Repeat(" ", width[0]+2)
	for i, c := range cells {
		var b strings.Builder
		for j, x := range c {
			if j > 0 {
				b.WriteString("  ")
			}
			b.WriteString(pad(x, width[j]))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		if i == 0 {
			continue
		}
		for _, f := range s.Rows[i-1].Flows {
			size := FormatSize(float64(f.MinBytes))
			if hi := FormatSize(float64(f.MaxBytes)); hi != size {
				size += "–" + hi
			}
			ex := make([]string, len(f.Examples))
			for k, e := range f.Examples {
				ex[k] = rankName(e.Src) + "→" + rankName(e.Dst)
			}
			more := ""
			if f.Pairs > len(f.Examples) {
				more = " …"
			}
			fmt.Fprintf(w, "%s%s via %s: %d pair(s) × %s per step, e.g. %s%s\n", indent, f.Kind, f.Route, f.Pairs, size, strings.Join(ex, " "), more)
		}
	}
	if s.OmittedRows > 0 {
		fmt.Fprintf(w, "… %d more row(s) not shown (--step-rows, up to %d)\n", s.OmittedRows, collective.MaxReplayRows)
	}
}

// rankName prints a rank of a flow example; −1 is every rank (the NVLS switch side).
func rankName(r int32) string {
	if r < 0 {
		return "all"
	}
	return fmt.Sprint(r)
}
