package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// rankBatch is how many configs go to the service per call; progress is reported
// between batches.
const rankBatch = 50

// api is the service, in process or remote.
type api interface {
	RankConfigs(ctx context.Context, in *pb.RankConfigsRequest, opts ...grpc.CallOption) (*pb.RankConfigsResponse, error)
	EstimatePlan(ctx context.Context, in *pb.EstimatePlanRequest, opts ...grpc.CallOption) (*pb.EstimatePlanResponse, error)
	EstimateStep(ctx context.Context, in *pb.EstimateStepRequest, opts ...grpc.CallOption) (*pb.EstimateStepResponse, error)
	SimulateCollective(ctx context.Context, in *pb.SimulateCollectiveRequest, opts ...grpc.CallOption) (*pb.SimulateCollectiveResponse, error)
}

// connect returns the remote service at addr, reached as sec says, or the
// in-process one when addr is empty.
func connect(addr string, sec *remoteSecurity) (api, func(), error) {
	if addr == "" {
		return newLocal(), func() {}, nil
	}
	opts, err := sec.dialOptions(addr)
	if err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient(addr, append(opts, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))...)
	if err != nil {
		return nil, nil, fmt.Errorf("--server %s: %w", addr, err)
	}
	return pb.NewStepcostServiceClient(conn), func() { conn.Close() }, nil
}

func runRank(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("rank", "--in configs.jsonl [--server host:port] [--format table|json|csv]", stderr)
	in := fs.String("in", "", "file of configs, one EstimateStep request (JSON) per line; - for standard input")
	addr := fs.String("server", "", "rank on a running stepcostd (host:port) instead of in process")
	sec := remoteSecurityFlags(fs)
	format := fs.String("format", "table", "output: table, json or csv")
	objective := fs.String("objective", "step_time", "step_time, throughput or cost")
	price := fs.Float64("price", 0, "price per GPU-hour (objective cost)")
	tokens := fs.Float64("tokens", 0, "token budget (objective cost)")
	progress := fs.Bool("progress", true, "report progress on stderr for more than one batch")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *in == "" {
		return errors.New("--in: required (a JSON-lines file of configs)")
	}
	switch *format {
	case "table", "json", "csv":
	default:
		return fmt.Errorf("--format: must be table, json or csv (got %q)", *format)
	}
	obj, ok := map[string]pb.Objective{"step_time": pb.Objective_OBJECTIVE_STEP_TIME, "throughput": pb.Objective_OBJECTIVE_THROUGHPUT, "cost": pb.Objective_OBJECTIVE_COST}[*objective]
	if !ok {
		return fmt.Errorf("--objective: must be step_time, throughput or cost (got %q)", *objective)
	}
	var r io.Reader
	if *in == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(*in)
		if err != nil {
			return fmt.Errorf("--in: %w", err)
		}
		defer f.Close()
		r = f
	}
	var configs []*pb.EstimateStepRequest
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		var c pb.EstimateStepRequest
		if err := protojson.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("--in %s line %d: %w", *in, line, err)
		}
		configs = append(configs, &c)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--in: %w", err)
	}
	if len(configs) == 0 {
		return fmt.Errorf("--in %s: no configs", *in)
	}
	svc, closeFn, err := connect(*addr, sec)
	if err != nil {
		return err
	}
	defer closeFn()
	var results []*pb.RankedConfig
	version := ""
	for i := 0; i < len(configs); i += rankBatch {
		end := min(len(configs), i+rankBatch)
		resp, err := svc.RankConfigs(ctx, &pb.RankConfigsRequest{Configs: configs[i:end], Objective: obj, PricePerGpuHour: *price, TokenBudget: *tokens})
		if err != nil {
			return flagged(err, rankFlags)
		}
		version = resp.GetEstimatorVersion()
		for _, x := range resp.GetResults() {
			x.Index += int32(i)
			results = append(results, x)
		}
		if *progress && len(configs) > rankBatch {
			bar := strings.Repeat("█", 30*end/len(configs)) + strings.Repeat("·", 30-30*end/len(configs))
			fmt.Fprintf(stderr, "\rranking %s %d/%d", bar, end, len(configs))
		}
	}
	if *progress && len(configs) > rankBatch {
		fmt.Fprintln(stderr)
	}
	// Rank across batches, as the service ranks one batch: configs that fit first.
	items := make([]planner.RankItem, len(results))
	for i, x := range results {
		if e := x.GetEstimate(); x.GetError() == nil && e != nil {
			items[i] = planner.RankItem{Valid: true, Fits: e.GetMemory().GetFits(), GPUs: int(e.GetGpus()), Score: x.GetScore(),
				StepTime: e.GetStepTimeS(), Headroom: e.GetMemory().GetHeadroomGb()}
		}
	}
	rank, dominated := planner.RankConfigs(items)
	for i, x := range results {
		x.Rank, x.Dominated, x.Infeasible = int32(rank[i]), dominated[i], items[i].Valid && !items[i].Fits
	}
	return printRanked(stdout, *format, configs, &pb.RankConfigsResponse{Results: results, EstimatorVersion: version})
}

// rankFlags names the flag of each request field of rank.
var rankFlags = map[string]string{"objective": "--objective", "price_per_gpu_hour": "--price", "token_budget": "--tokens"}

// printRanked prints the ranked configs, best first: as the API's
// RankConfigsResponse (json), CSV or a table.
func printRanked(w io.Writer, format string, configs []*pb.EstimateStepRequest, resp *pb.RankConfigsResponse) error {
	sorted := append([]*pb.RankedConfig(nil), resp.GetResults()...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i].GetRank(), sorted[j].GetRank()
		if (a == 0) != (b == 0) {
			return b == 0
		}
		return a < b
	})
	switch format {
	case "json":
		return printProtoJSON(w, &pb.RankConfigsResponse{Results: sorted, EstimatorVersion: resp.GetEstimatorVersion()})
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"rank", "index", "model", "tp", "pp", "dp", "cp", "zero", "micro_batch", "step_time_s", "tokens_per_s_per_gpu", "mfu", "memory_gb", "fits", "dominated", "error"})
		for _, r := range sorted {
			c := configs[r.GetIndex()]
			l, e := c.GetLayout(), r.GetEstimate()
			errMsg := ""
			if r.GetError() != nil {
				errMsg = r.GetError().GetMessage()
			}
			cw.Write([]string{fmt.Sprint(r.GetRank()), fmt.Sprint(r.GetIndex()), modelLabel(c), fmt.Sprint(l.GetTp()), fmt.Sprint(l.GetPp()),
				fmt.Sprint(l.GetDp()), fmt.Sprint(l.GetCp()), fmt.Sprint(l.GetZero()), fmt.Sprint(l.GetMicroBatch()),
				fmt.Sprintf("%g", e.GetStepTimeS()), fmt.Sprintf("%g", e.GetThroughput().GetTokensPerSPerGpu()),
				fmt.Sprintf("%g", e.GetThroughput().GetMfu()), fmt.Sprintf("%g", e.GetMemory().GetTotalGb()), fmt.Sprint(e.GetMemory().GetFits()), fmt.Sprint(r.GetDominated()), errMsg})
		}
		cw.Flush()
		return cw.Error()
	}
	t := table{head: []string{"rank", "#", "model", "layout", "step", "tokens/s/GPU", "MFU", "memory GB", "note"}}
	for _, r := range sorted {
		c := configs[r.GetIndex()]
		l := c.GetLayout()
		lay := fmt.Sprintf("tp%d pp%d dp%d cp%d z%d mbs%d", l.GetTp(), l.GetPp(), l.GetDp(), max(1, l.GetCp()), l.GetZero(), l.GetMicroBatch())
		if r.GetError() != nil {
			t.add("-", fmt.Sprint(r.GetIndex()), modelLabel(c), lay, "-", "-", "-", "-", r.GetError().GetMessage())
			continue
		}
		e := r.GetEstimate()
		var notes []string
		if r.GetInfeasible() {
			notes = append(notes, "does not fit")
		}
		if r.GetDominated() {
			notes = append(notes, "dominated")
		}
		note := strings.Join(notes, ", ")
		t.add(fmt.Sprint(r.GetRank()), fmt.Sprint(r.GetIndex()), modelLabel(c), lay, fmtSeconds(e.GetStepTimeS()),
			fmt.Sprintf("%.0f", e.GetThroughput().GetTokensPerSPerGpu()), fmt.Sprintf("%.1f%%", 100*e.GetThroughput().GetMfu()),
			fmt.Sprintf("%.1f", e.GetMemory().GetTotalGb()), note)
	}
	t.write(w)
	return nil
}

func modelLabel(c *pb.EstimateStepRequest) string {
	switch s := c.GetModel().GetSource().(type) {
	case *pb.ModelSpec_Name:
		return s.Name
	case *pb.ModelSpec_Params:
		return fmt.Sprintf("%.3gB params", s.Params/1e9)
	case *pb.ModelSpec_Architecture:
		return fmt.Sprintf("%d×%d", s.Architecture.GetLayers(), s.Architecture.GetHidden())
	}
	return "?"
}
