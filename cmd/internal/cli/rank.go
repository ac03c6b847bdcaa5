package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/internal/jsonreq"
	"github.com/stepcost/stepcost/internal/service"
	"github.com/stepcost/stepcost/internal/wire"
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
	CalibrateCluster(ctx context.Context, in *pb.CalibrateClusterRequest, opts ...grpc.CallOption) (*pb.CalibrateClusterResponse, error)
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
	conn, err := grpc.NewClient(addr, append(opts,
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxAnswerBytes)),
		grpc.WithChainUnaryInterceptor(answerTooLarge, refusedFields))...)
	if err != nil {
		return nil, nil, fmt.Errorf("--server %s: %w", addr, err)
	}
	return pb.NewStepcostServiceClient(conn), func() { conn.Close() }, nil
}

// refusedFields turns the daemon's refusal of a request, INVALID_ARGUMENT with
// the fields at fault (google.rpc.BadRequest), into the field errors the service
// returns in process, so that the command names them by its flags (flagged) as it
// does without --server; other errors pass unchanged.
func refusedFields(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	s, ok := status.FromError(err)
	if !ok || s.Code() != codes.InvalidArgument {
		return err
	}
	var fields []error
	for _, d := range s.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, invalid.Field(v.GetField(), "%s", wire.CommandLineSpelling(v.GetDescription())))
			}
		}
	}
	if len(fields) == 0 {
		return err
	}
	return errors.Join(fields...)
}

// maxAnswerBytes is the largest answer the CLI takes from a daemon, as the REST
// gateway does: gRPC's default 4 MiB is less than one EstimatePlan answer may be
// (each plan lists its GPUs; the daemon's --max-answer-gpus, about 2 M GPUs, is
// 4 MB of protobuf, and a daemon started with a larger limit sends more).
const maxAnswerBytes = 64 << 20

// answerTooLarge turns the gRPC client's refusal of an answer over its receive
// limit into what to do: the daemon answered, and the same call would be
// refused again.
func answerTooLarge(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if s, ok := status.FromError(err); ok && s.Code() == codes.ResourceExhausted && strings.Contains(s.Message(), "received message larger than max") {
		return fmt.Errorf("--server: the answer is larger than the %d MiB the command line takes (%s): ask for fewer plans (--top) or a smaller job", maxAnswerBytes>>20, s.Message())
	}
	return err
}

func rankCommand(fs *pflag.FlagSet) runFunc {
	in := fs.String("in", "", "file of configs, one EstimateStep request (JSON) per line (JSON Lines: not pretty-printed, not an array); - for standard input")
	addr := fs.String("server", "", "rank on a running stepcostd (host:port) instead of in process")
	sec := remoteSecurityFlags(fs)
	format := enumFlag(fs, "format", "table", "output: table, json or csv", formatNames)
	objective := enumFlag(fs, "objective", "step_time", "step_time, throughput or cost", objectiveNames)
	price := fs.Float64("price", 0, "price per GPU-hour (objective cost)")
	tokens := fs.Float64("tokens", 0, "token budget (objective cost)")
	progress := fs.Bool("progress", true, "report progress on stderr for more than one batch (only when stderr is a terminal)")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
		if err := costFlags(*objective, *price, *tokens); err != nil {
			return err
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
		// A configs file is read as a stream, up to maxRankInput bytes: one
		// without end (/dev/zero: one endless line, skipped to its end) was read
		// for ever.
		bounded := &io.LimitedReader{R: r, N: maxRankInput + 1}
		file, err := readConfigs(bounded)
		if err == nil && bounded.N == 0 {
			err = fmt.Errorf("larger than %d MiB", maxRankInput>>20)
		}
		if err != nil {
			return fmt.Errorf("--in %s: %w", *in, err)
		}
		if !file.text {
			return emptyInput(*in, "one EstimateStepRequest as JSON per line")
		}
		if len(file.configs) == 0 && len(file.bad) == 0 {
			return fmt.Errorf("--in %s: no configs", *in)
		}
		if err := file.notJSONLines(); err != nil {
			return fmt.Errorf("--in %s: %w", *in, err)
		}
		configs := file.configs
		svc, closeFn, err := connect(*addr, sec)
		if err != nil {
			return err
		}
		defer closeFn()
		var results []*pb.RankedConfig
		version := ""
		showProgress := *progress && len(configs) > rankBatch && isTerminal(stderr)
		for i := 0; i < len(configs); i += rankBatch {
			end := min(len(configs), i+rankBatch)
			resp, err := svc.RankConfigs(ctx, &pb.RankConfigsRequest{Configs: configs[i:end], Objective: obj, PricePerGpuHour: *price, TokenBudget: *tokens})
			if err != nil {
				return flagged(err, rankFlags)
			}
			version = resp.GetEstimatorVersion()
			for _, x := range resp.GetResults() {
				x.Index += int32(i)
				flagItemError(x.GetError())
				if e := x.GetEstimate(); e != nil && *format != "json" {
					// The table and the CSV print these fields only: the
					// whole estimate (breakdown, every collective) of each
					// config held to the end took 5 KB a config, 0.5 GB for
					// 100 000.
					x.Estimate = &pb.StepEstimate{StepTimeS: e.GetStepTimeS(), Gpus: e.GetGpus(), Layout: e.GetLayout(),
						Throughput: &pb.Throughput{TokensPerSPerGpu: e.GetThroughput().GetTokensPerSPerGpu(), Mfu: e.GetThroughput().GetMfu()},
						Memory:     &pb.Memory{TotalGb: e.GetMemory().GetTotalGb(), Fits: e.GetMemory().GetFits(), HeadroomGb: e.GetMemory().GetHeadroomGb()}}
				}
				results = append(results, x)
			}
			if showProgress {
				bar := strings.Repeat("█", 30*end/len(configs)) + strings.Repeat("·", 30-30*end/len(configs))
				fmt.Fprintf(stderr, "\rranking %s %d/%d", bar, end, len(configs))
			}
		}
		if showProgress {
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
		// The results are indexed by config line (what the file holds, bad lines
		// included), not by the position among the configs sent.
		for _, x := range results {
			x.Index = int32(file.index[x.GetIndex()])
		}
		for _, b := range file.bad {
			e := &pb.ItemError{Code: service.InvalidArgument.String(), Message: b.err}
			if b.field != "" {
				e.Violations = []*pb.FieldViolation{{Field: b.field, Description: b.rule}}
			}
			results = append(results, &pb.RankedConfig{Index: int32(b.index), Error: e})
		}
		sort.SliceStable(results, func(i, j int) bool { return results[i].GetIndex() < results[j].GetIndex() })
		if err := printRanked(stdout, *format, *objective, file, &pb.RankConfigsResponse{Results: results, EstimatorVersion: version}); err != nil {
			return err
		}
		var failed []string
		for _, x := range results {
			if x.GetError() != nil {
				failed = append(failed, fmt.Sprint(file.lines[x.GetIndex()]))
			}
		}
		if n := len(failed); n > 0 {
			more := ""
			if n > maxFailedLines {
				failed, more = failed[:maxFailedLines], fmt.Sprintf(" and %d more", n-maxFailedLines)
			}
			if n == len(results) {
				return fmt.Errorf("--in %s: %d of %d configs failed (line %s%s): none is ranked", *in, n, n, strings.Join(failed, ", "), more)
			}
			return fmt.Errorf("--in %s: %d of %d configs failed (line %s%s); the others are ranked above", *in, n, len(results), strings.Join(failed, ", "), more)
		}
		return nil
	}
}

// maxFailedLines is how many names a summary lists before counting the rest:
// rank's failed lines (each is in the output, with its error; a file of 100 000
// bad lines named them all, 650 KB) and calibrate's unused --layout entries.
const maxFailedLines = 20

// visible is s with what a terminal or a JSON answer cannot show as it is
// escaped: bytes that are not UTF-8 (an error echoing a binary file's bytes made
// --format json fail whole) and control characters (a terminal escape).
func visible(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[0])
		case unicode.IsControl(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// maxConfigLine bounds one line of a configs file: a request larger than this
// would be refused by the service anyway.
const maxConfigLine = 1 << 20

// maxRankInput bounds a configs file: a million configs of a few hundred bytes.
const maxRankInput = 512 << 20

// configFile is a JSON-lines file of configs as read: the configs that parsed,
// the lines that did not, and where each config line stands in the file.
type configFile struct {
	configs []*pb.EstimateStepRequest
	index   []int // index[i]: the config line of configs[i] (0-based over the config lines)
	lines   []int // lines[k]: the file line (1-based) of config line k
	bad     []badLine
	parsed  map[int]*pb.EstimateStepRequest // by config line
	text    bool                            // a line is not blank (a comment counts)
	// raw is the file from its first config line on, when that line is not a
	// config (and the file is at most maxInputSize bytes): the file may then be
	// one JSON value over several lines, not JSON Lines (see notJSONLines).
	raw     []byte
	rawKept int // 0: not decided yet (no config line read), 1: kept, 2: not kept
}

// badLine is a config line that is not an EstimateStepRequest.
type badLine struct {
	index int // config line (0-based over the config lines)
	err   string
	field string // the field at fault, by its path in the request ("" when none)
	rule  string // … and the rule it broke
}

// readConfigs reads a JSON-lines file of EstimateStepRequests. Blank lines and
// lines starting with # are skipped; a line that does not parse, or is longer
// than maxConfigLine, is kept as a bad line with its line number, and the rest of
// the file is still read.
func readConfigs(r io.Reader) (*configFile, error) {
	f := &configFile{parsed: map[int]*pb.EstimateStepRequest{}}
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, tooLong, err := readLine(br, maxConfigLine)
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte(byteOrderMark))
		}
		t := bytes.TrimSpace(b)
		f.text = f.text || tooLong || len(t) > 0
		if tooLong || (len(t) > 0 && t[0] != '#') {
			k := len(f.lines)
			f.lines = append(f.lines, line)
			var c pb.EstimateStepRequest
			switch {
			case tooLong:
				f.bad = append(f.bad, badLine{index: k, err: fmt.Sprintf("line %d: longer than %d bytes", line, maxConfigLine)})
			default:
				// Decoded as the REST gateway decodes a body: an error names
				// the field at fault by its path in the request.
				perr := jsonreq.Unmarshal(protojson.UnmarshalOptions{}, t, &c)
				if f.rawKept == 0 {
					f.rawKept = 2
					if perr != nil {
						f.rawKept = 1
					}
				}
				if perr != nil {
					msg := visible(onConfigLine(perr.Error()))
					b := badLine{index: k, err: fmt.Sprintf("line %d: not an EstimateStepRequest: %s", line, msg)}
					var je *jsonreq.Error
					if errors.As(perr, &je) && je.Field != "" {
						b.field, b.rule = visible(je.Field), visible(onConfigLine(je.Rule))
					}
					f.bad = append(f.bad, b)
				} else {
					f.configs = append(f.configs, &c)
					f.index = append(f.index, k)
					f.parsed[k] = &c
				}
			}
		}
		if f.rawKept == 1 {
			if f.raw = append(append(f.raw, b...), '\n'); len(f.raw) > maxInputSize {
				f.raw, f.rawKept = nil, 2
			}
		}
		if err == io.EOF {
			return f, nil
		}
	}
}

// notJSONLines says so when the file is one JSON value over several lines — a
// request pretty-printed (its first line "{" alone, as jq and Python's json.dumps
// with indent write it) or an array of requests — rather than one request a line:
// each of its lines failed on its own, with no word of the format.
func (f *configFile) notJSONLines() error {
	t := bytes.TrimSpace(f.raw)
	if len(f.bad) == 0 || !json.Valid(t) {
		return nil
	}
	switch n := bytes.Count(t, []byte("\n")) + 1; {
	case t[0] == '[':
		return errors.New("a JSON array, not JSON Lines: rank reads one EstimateStepRequest per line; write its elements one per line (e.g. jq -c '.[]')")
	case t[0] == '{' && n > 1:
		return fmt.Errorf("one JSON object over %d lines, not JSON Lines: rank reads one EstimateStepRequest per line; write it on one line (e.g. jq -c .)", n)
	}
	return nil
}

// byteOrderMark is UTF-8's byte-order mark, which editors on Windows and
// spreadsheet exports write at the start of a file: not content.
const byteOrderMark = "\uFEFF"

// readFile reads a file the user names (a model, a free map, a request),
// without a leading byte-order mark, as the cluster file decoder reads one, and
// at most maxInputSize bytes of it: a file without end (/dev/zero, a device)
// was read until memory ran out.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, path)
}

// emptyInput is the error for an --in file (path, or - for standard input) that
// holds nothing but white space: the JSON decoder said "unexpected token" at its
// end, which does not say the file is empty. want is what the file should hold.
func emptyInput(path, want string) error {
	if path == "-" {
		return fmt.Errorf("--in -: empty standard input (want %s)", want)
	}
	return fmt.Errorf("--in %s: empty file (want %s)", path, want)
}

// onConfigLine rewords a decoding error of one config line: the decoder places a
// fault at "line 1, column N", or a line cut short as ending "at line 1", of the
// one line it was given, while the file's line is said first ("line 7: …"), so
// only the column is kept.
func onConfigLine(msg string) string {
	msg = strings.Replace(msg, "ends inside a value at line 1 (cut short?)", "ends inside a value (cut short?)", 1)
	return strings.Replace(msg, "at line 1, column ", "at column ", 1)
}

// readFileOrStdin is readFile, with "-" naming standard input (as rank's --in takes
// it).
func readFileOrStdin(path string) ([]byte, error) {
	if path != "-" {
		return readFile(path)
	}
	return readBounded(os.Stdin, "standard input")
}

// readBounded reads r, named name in errors, to its end if that comes within
// maxInputSize bytes, without a leading byte-order mark.
func readBounded(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInputSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxInputSize {
		return nil, fmt.Errorf("%s: larger than %d MiB", name, maxInputSize>>20)
	}
	return bytes.TrimPrefix(data, []byte(byteOrderMark)), nil
}

// readLine returns the next line without its newline, reading at most limit
// bytes of it; past that it skips to the end of the line and says so.
func readLine(br *bufio.Reader, limit int) ([]byte, bool, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			return bytes.TrimSuffix(line, []byte("\n")), tooLong, nil
		default:
			return line, tooLong, err
		}
	}
}

// rankFlags names the flag of each request field of rank.
var rankFlags = map[string]string{"objective": "--objective", "price_per_gpu_hour": "--price", "token_budget": "--tokens"}

// flagItemError spells, in a config's error message, the fields rank's flags set
// (the token budget below the config's step) as those flags, as plan's errors
// are; the violations keep the API's field names.
func flagItemError(e *pb.ItemError) {
	for _, v := range e.GetViolations() {
		if f, ok := rankFlags[v.GetField()]; ok {
			e.Message = strings.Replace(e.GetMessage(), v.GetField()+": "+v.GetDescription(), f+": "+v.GetDescription(), 1)
		}
	}
}

// printRanked prints the ranked configs, best first: as the API's
// RankConfigsResponse (json), CSV or a table.
func printRanked(w io.Writer, format, objective string, file *configFile, resp *pb.RankConfigsResponse) error {
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
		// The API's answer, in request order as RankConfigsResponse.results
		// documents it and REST writes it (each result's rank says its place);
		// best first was the table's order, not the API's. index counts the
		// file's config lines; an error the service gave names the file's line
		// too, as the table's and CSV's line column does (the lines that did not
		// parse already say theirs).
		ordered := append([]*pb.RankedConfig(nil), resp.GetResults()...)
		sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].GetIndex() < ordered[j].GetIndex() })
		for _, r := range ordered {
			if e := r.GetError(); e != nil && !strings.HasPrefix(e.GetMessage(), "line ") {
				e.Message = fmt.Sprintf("line %d: %s", file.lines[r.GetIndex()], e.GetMessage())
			}
		}
		return printProtoJSON(w, &pb.RankConfigsResponse{Results: ordered, EstimatorVersion: resp.GetEstimatorVersion()})
	case "csv":
		cw := csv.NewWriter(w)
		// cluster, gpus and score came later: after error, so that columns read
		// by position keep their place. score is the objective's value (seconds
		// per step, negative tokens/s per GPU, or dollars).
		cw.Write([]string{"rank", "line", "model", "tp", "pp", "dp", "cp", "zero", "micro_batch", "step_time_s", "tokens_per_s_per_gpu", "mfu", "memory_gb", "fits", "dominated", "error", "cluster", "gpus", "score"})
		for _, r := range sorted {
			c := file.parsed[int(r.GetIndex())]
			l, e := c.GetLayout(), r.GetEstimate()
			if e.GetLayout() != nil {
				l = e.GetLayout() // as it ran: pp and cp left out are 1, not the request's 0
			}
			errMsg := ""
			if r.GetError() != nil {
				errMsg = r.GetError().GetMessage()
			}
			// A config that failed has its error and no numbers (empty cells), not
			// zeros to be sorted with the others'; its rank is 0, as the API's.
			numbers := []string{"", "", "", "", "", ""}
			gpus, score := "", ""
			if e != nil {
				numbers = []string{fmt.Sprintf("%g", e.GetStepTimeS()), fmt.Sprintf("%g", e.GetThroughput().GetTokensPerSPerGpu()),
					fmt.Sprintf("%g", e.GetThroughput().GetMfu()), fmt.Sprintf("%g", e.GetMemory().GetTotalGb()), fmt.Sprint(e.GetMemory().GetFits()), fmt.Sprint(r.GetDominated())}
				gpus, score = fmt.Sprint(e.GetGpus()), fmt.Sprintf("%g", r.GetScore())
			}
			row := []string{fmt.Sprint(r.GetRank()), fmt.Sprint(file.lines[r.GetIndex()]), modelLabel(c), fmt.Sprint(l.GetTp()), fmt.Sprint(l.GetPp()),
				fmt.Sprint(l.GetDp()), fmt.Sprint(l.GetCp()), fmt.Sprint(l.GetZero()), fmt.Sprint(l.GetMicroBatch())}
			row = append(append(row, numbers...), errMsg, clusterLabel(c), gpus, score)
			cw.Write(row)
		}
		cw.Flush()
		return cw.Error()
	}
	// The cluster tells apart the same layout on two GPU types; under the cost
	// objective the cost ranked by is shown beside the step time.
	head := []string{"rank", "line", "model", "cluster", "layout", "step", "tokens/s/GPU", "MFU", "memory GB", "note"}
	withCost := objective == "cost"
	if withCost {
		head = slices.Insert(head, 6, "cost")
	}
	// Under the throughput objective the tokens/s per GPU is what the configs
	// are ranked by: kept, where a narrow table left it out.
	t := table{head: head, optional: []string{"tokens/s/GPU"}, wrap: "note"}
	if objective == "throughput" {
		t.optional = nil
	}
	// A config given again (a line pasted twice, two sweeps concatenated) is
	// ranked again, and its row names the line it repeats.
	repeats := map[int]int{} // config line → the file line of its first copy
	firstLine := map[string]int{}
	for k := range file.lines {
		c, ok := file.parsed[k]
		if !ok {
			continue
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
		if err != nil {
			continue
		}
		if l, ok := firstLine[string(b)]; ok {
			repeats[k] = l
		} else {
			firstLine[string(b)] = file.lines[k]
		}
	}
	row := func(cells ...string) {
		if !withCost {
			cells = slices.Delete(cells, 6, 7)
		}
		t.add(cells...)
	}
	for _, r := range sorted {
		c := file.parsed[int(r.GetIndex())]
		line := fmt.Sprint(file.lines[r.GetIndex()])
		l := c.GetLayout()
		lay := fmt.Sprintf("tp%d pp%d dp%d cp%d z%d mbs%d", l.GetTp(), l.GetPp(), l.GetDp(), max(1, l.GetCp()), l.GetZero(), l.GetMicroBatch())
		if c == nil {
			lay = "-"
		}
		if r.GetError() != nil {
			row("-", line, modelLabel(c), clusterLabel(c), lay, "-", "-", "-", "-", "-", r.GetError().GetMessage())
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
		if l, ok := repeats[int(r.GetIndex())]; ok {
			notes = append(notes, fmt.Sprintf("same as line %d", l))
		}
		note := strings.Join(notes, ", ")
		// The estimate's layout, as a plan's: its schedule, overlaps and split too.
		if l := layoutOf(e.GetLayout()); l != "?" {
			lay = l
		}
		row(fmt.Sprint(r.GetRank()), line, modelLabel(c), clusterLabel(c), lay, fmtSeconds(e.GetStepTimeS()), fmt.Sprintf("$%.0f", r.GetScore()),
			fmt.Sprintf("%.0f", e.GetThroughput().GetTokensPerSPerGpu()), fmt.Sprintf("%.1f%%", 100*e.GetThroughput().GetMfu()),
			fmt.Sprintf("%.1f", e.GetMemory().GetTotalGb()), note)
	}
	t.write(w)
	return nil
}

// clusterLabel names a config's cluster: its catalog name, or for a cluster
// described in full its name, base system or GPU.
func clusterLabel(c *pb.EstimateStepRequest) string {
	if c == nil {
		return "-"
	}
	switch s := c.GetCluster().GetSource().(type) {
	case *pb.ClusterSpec_Name:
		return s.Name
	case *pb.ClusterSpec_Definition:
		d := s.Definition
		for _, n := range []string{d.GetName(), d.GetBase(), d.GetGpuName(), d.GetGpu().GetName()} {
			if n != "" {
				return n
			}
		}
		return "described"
	}
	return "?"
}

func modelLabel(c *pb.EstimateStepRequest) string {
	if c == nil {
		return "-"
	}
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
