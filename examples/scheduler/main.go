// Command scheduler is what a cluster scheduler's admission step does with
// stepcostd: ask for the best plan of a training job on the GPUs that are free
// right now, and learn which nodes and GPUs to give it.
//
//	go run ./examples/scheduler --server localhost:8081 --model llama3-70b --max-gpus 64 \
//	    --nodes 16 --free-map free.json
//
// free.json maps a node to its free local GPUs, {"4": [4,5,6,7], "5": [0,1,2,3,4,5,6,7]};
// without it the example uses a 16-node cluster whose first four nodes are busy and
// whose fifth has half its GPUs taken.
//
// Errors are handled by gRPC status code, as a scheduler must:
//   - INVALID_ARGUMENT, NOT_FOUND: the job as described cannot be planned; the
//     daemon names the field (google.rpc.BadRequest). Retrying cannot help, so the
//     job is rejected with that field (exit 2).
//   - UNAVAILABLE: the daemon is overloaded, restarting or unreachable. Retried
//     with exponential backoff and jitter, no sooner than its RetryInfo asks.
//   - DEADLINE_EXCEEDED: the whole decision has a budget (--timeout); admission
//     must not hang on a planner, so when it runs out the job waits for the next
//     scheduling cycle (exit 1).
//   - RESOURCE_EXHAUSTED: this service uses it for a request over its size limit,
//     which is not transient (docs/operating.md), so it is not retried either.
//
// Copy run and plan into a scheduler; the flags stand in for its job and
// inventory.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes: the job is admitted with a plan, must wait (try again later), or
// is rejected as described.
const (
	exitAdmitted = 0
	exitWait     = 1
	exitRejected = 2
)

// run parses the flags, asks for the plan and prints it; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "localhost:8081", "stepcostd's gRPC address")
	model := fs.String("model", "llama3-70b", "catalog model of the job")
	cluster := fs.String("cluster", "dgx-h100", "catalog system of the cluster")
	nodes := fs.Int("nodes", 16, "nodes in the cluster")
	freeMap := fs.String("free-map", "", `JSON file of free GPUs, {"node": [local GPUs]} (default: a built-in example)`)
	maxGPUs := fs.Int("max-gpus", 64, "the most GPUs the job may get; the planner picks how many")
	gbs := fs.Int64("gbs", 512, "global batch, sequences")
	seq := fs.Int("seq", 8192, "sequence length")
	timeout := fs.Duration("timeout", 10*time.Second, "budget of the whole decision, retries included")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitAdmitted
		}
		return exitRejected
	}

	free := exampleFreeGPUs()
	if *freeMap != "" {
		var err error
		if free, err = readFreeMap(*freeMap); err != nil {
			fmt.Fprintln(stderr, "scheduler:", err)
			return exitRejected
		}
	}

	// grpc.NewClient connects lazily: an unreachable daemon shows up as
	// UNAVAILABLE on the call, and is retried like an overloaded one. Answers
	// up to 64 MiB, as the CLI and the REST gateway take: gRPC's default 4 MiB
	// is less than one plan answer may be (each plan lists its GPUs; the
	// daemon's --max-answer-gpus, about 2 M GPUs, is 4 MB of protobuf).
	conn, err := grpc.NewClient(*server, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		fmt.Fprintln(stderr, "scheduler:", err)
		return exitRejected
	}
	defer conn.Close()

	req := &pb.EstimatePlanRequest{
		Model: &pb.ModelSpec{Source: &pb.ModelSpec_Name{Name: *model}},
		Cluster: &pb.ClusterSpec{
			Source:   &pb.ClusterSpec_Name{Name: *cluster},
			Nodes:    int32(*nodes),
			FreeGpus: free,
		},
		Training: &pb.Training{SeqLen: int32(*seq), GlobalBatch: *gbs},
		MaxGpus:  int32(*maxGPUs),
		TopK:     1,
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	resp, err := plan(ctx, pb.NewStepcostServiceClient(conn), req, defaultBackoff)
	if err != nil {
		return reportError(stderr, err)
	}
	if len(resp.GetPlans()) == 0 {
		// Valid, but nothing fits on the free GPUs now: wait for more to free up.
		fmt.Fprintf(stderr, "scheduler: no plan of %s fits on the free GPUs (%d layouts evaluated)\n", *model, resp.GetStats().GetEvaluated())
		return exitWait
	}
	printPlan(stdout, *model, resp)
	return exitAdmitted
}

// backoff is the retry policy for UNAVAILABLE.
type backoff struct {
	base, max time.Duration
	attempts  int
}

// defaultBackoff starts at 100 ms, well under the daemon's 1 s RetryInfo when
// overloaded, so a restart (connection refused) is caught quickly too.
var defaultBackoff = backoff{base: 100 * time.Millisecond, max: 2 * time.Second, attempts: 6}

// plan calls EstimatePlan, retrying UNAVAILABLE within ctx's deadline. Any other
// error is returned at once: the answers are deterministic, so a request that
// failed for any other reason would fail again.
func plan(ctx context.Context, c pb.StepcostServiceClient, req *pb.EstimatePlanRequest, b backoff) (*pb.EstimatePlanResponse, error) {
	delay := b.base
	for attempt := 1; ; attempt++ {
		resp, err := c.EstimatePlan(ctx, req)
		if status.Code(err) != codes.Unavailable || attempt >= b.attempts {
			return resp, err
		}
		// Full jitter: schedulers refused together must not come back together.
		wait := rand.N(delay) + 1
		if hint := retryDelay(err); hint > wait {
			wait = hint
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, err // the budget ends before the next attempt could start
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		delay = min(2*delay, b.max)
	}
}

// retryDelay is the wait the daemon suggests (google.rpc.RetryInfo), or 0.
func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// reportError prints a failed call the way a scheduler would record it on the
// job, and returns the exit code: rejected when the request is at fault, wait
// otherwise.
func reportError(w io.Writer, err error) int {
	st := status.Convert(err)
	switch st.Code() {
	case codes.InvalidArgument, codes.NotFound, codes.ResourceExhausted:
		fmt.Fprintf(w, "scheduler: job rejected: %s: %s\n", st.Code(), st.Message())
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					fmt.Fprintf(w, "  field %s: %s\n", v.GetField(), v.GetDescription())
				}
			}
		}
		return exitRejected
	case codes.DeadlineExceeded, codes.Unavailable, codes.Canceled:
		fmt.Fprintf(w, "scheduler: no decision, job stays queued: %s: %s\n", st.Code(), st.Message())
		return exitWait
	default:
		fmt.Fprintf(w, "scheduler: planner failed: %s: %s\n", st.Code(), st.Message())
		return exitWait
	}
}

// printPlan prints the chosen plan and the GPUs to bind the job's ranks to.
func printPlan(w io.Writer, model string, resp *pb.EstimatePlanResponse) {
	p := resp.GetPlans()[0]
	l, e := p.GetLayout(), p.GetEstimate()
	fmt.Fprintf(w, "admit %s on %d GPUs: tp=%d pp=%d dp=%d cp=%d ep=%d zero=%d micro_batch=%d\n",
		model, p.GetGpus(), l.GetTp(), l.GetPp(), l.GetDp(), l.GetCp(), l.GetEp(), l.GetZero(), l.GetMicroBatch())
	fmt.Fprintf(w, "step %.3f s, %.0f tokens/s, MFU %.1f %%, memory %.1f of %.1f GB per GPU\n",
		e.GetStepTimeS(), e.GetThroughput().GetTokensPerS(), 100*e.GetThroughput().GetMfu(),
		e.GetMemory().GetTotalGb(), e.GetMemory().GetCapacityGb())
	pl := p.GetPlacement()
	fmt.Fprintf(w, "nodes (%d whole, %d partial, %d whole nodes left free):\n", pl.GetWholeNodes(), pl.GetPartialNodes(), pl.GetFreeWholeNodesLeft())
	for _, n := range pl.GetNodes() {
		fmt.Fprintf(w, "  node %d gpus %s\n", n.GetNode(), ranges(n.GetGpus()))
	}
}

// ranges writes GPU indices compactly: [0 1 2 3 6] → "0-3,6".
func ranges(gpus []int32) string {
	var parts []string
	for i := 0; i < len(gpus); {
		j := i
		for j+1 < len(gpus) && gpus[j+1] == gpus[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(int(gpus[i])))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", gpus[i], gpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// exampleFreeGPUs is a cluster in use: nodes 0-3 busy, node 4 with GPUs 4-7
// free, nodes 5-15 idle.
func exampleFreeGPUs() []*pb.NodeFreeGPUs {
	free := []*pb.NodeFreeGPUs{{Node: 4, Gpus: []int32{4, 5, 6, 7}}}
	for n := int32(5); n < 16; n++ {
		free = append(free, &pb.NodeFreeGPUs{Node: n, Gpus: []int32{0, 1, 2, 3, 4, 5, 6, 7}})
	}
	return free
}

// readFreeMap reads {"node": [local GPUs]} (the CLI's --free-map format), in
// node order so that the request, and the daemon's cache key, do not depend on
// map iteration.
func readFreeMap(path string) ([]*pb.NodeFreeGPUs, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string][]int32
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: want {\"node\": [local GPUs], …}: %w", path, err)
	}
	var free []*pb.NodeFreeGPUs
	for k, gpus := range m {
		node, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: key %q is not a node index", path, k)
		}
		free = append(free, &pb.NodeFreeGPUs{Node: int32(node), Gpus: gpus})
	}
	slices.SortFunc(free, func(a, b *pb.NodeFreeGPUs) int { return int(a.GetNode() - b.GetNode()) })
	if len(free) == 0 {
		return nil, errors.New(path + ": no free GPUs")
	}
	return free, nil
}
