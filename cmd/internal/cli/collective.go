package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/stepcost/stepcost/cmd/internal/clusterfile"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// collectiveReport is the JSON output of `stepcost collective`.
type collectiveReport struct {
	Cluster     string          `json:"cluster"`
	Nodes       int             `json:"nodes"`
	GPUsPerNode int             `json:"gpus_per_node"`
	Ranks       int             `json:"ranks"`
	Concurrent  int             `json:"concurrent_groups"`
	Op          string          `json:"op"`
	SizeBytes   int64           `json:"size_bytes"`
	Launch      string          `json:"launch"`
	Chosen      estimateJSON    `json:"chosen"`
	Considered  []estimateJSON  `json:"considered"`
	Unsupported []unsupportJSON `json:"not_applicable"`
	Schedule    *scheduleJSON   `json:"schedule,omitempty"`
}

type estimateJSON struct {
	Algorithm string  `json:"algorithm"`
	Protocol  string  `json:"protocol"`
	Auto      bool    `json:"auto_candidate"`
	TimeUs    float64 `json:"time_us"`
	LatencyUs float64 `json:"latency_us"`
	AlgBWGBps float64 `json:"algbw_gbps"`
	BusBWGBps float64 `json:"busbw_gbps"`
	Steps     int     `json:"steps"`
	Channels  int     `json:"channels"`
	Chunks    int     `json:"chunks,omitempty"`
}

type unsupportJSON struct {
	Algorithm string `json:"algorithm"`
	Reason    string `json:"reason"`
}

func toJSON(e collective.Estimate) estimateJSON {
	return estimateJSON{
		Algorithm: e.Algo.String(), Protocol: e.Protocol.String(), Auto: collective.AutoChoice(e.Op, e.Algo), TimeUs: e.TimeUs,
		LatencyUs: e.LatencyUs, AlgBWGBps: e.AlgBWGBps, BusBWGBps: e.BusBWGBps,
		Steps: e.Steps, Channels: e.Channels, Chunks: e.Chunks,
	}
}

func runCollective(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("collective", "--cluster NAME | --cluster-file FILE --op OP --size SIZE [flags]", stderr)
	clusterName := fs.String("cluster", "", "catalog system (see 'stepcost catalog'), e.g. dgx-h100")
	clusterFile := fs.String("cluster-file", "", "cluster description file (JSON or YAML, see deploy/clusters)")
	nodes := fs.Int("nodes", 1, "nodes the group spans")
	perNode := fs.Int("gpus-per-node", 0, "GPUs of each node in the group (default: all); the first ones of each node")
	concurrent := fs.Bool("concurrent", false, "the node's other GPUs run the same collective at the same time, in groups of the same shape (e.g. the DP groups of a TP job)")
	opName := fs.String("op", "allreduce", "allreduce, allgather, reducescatter, alltoall, broadcast, reduce, sendrecv")
	sizeStr := fs.String("size", "", "message size, nccl-tests convention (total buffer for allgather/reducescatter); e.g. 1GiB, 64M, 4096")
	algoName := fs.String("algo", "auto", "force an algorithm: ring, tree, dbtree, hierarchical, nvls, direct, pat, pairwise")
	protoName := fs.String("protocol", "", "force a protocol for ring/tree: simple, ll128, ll")
	launchName := fs.String("launch", "per-process", "how calls are issued: per-process, single-process, eager, graph")
	steps := fs.Bool("steps", false, "also show the chosen algorithm's per-step schedule, verified by executing it and priced link by link next to the closed form")
	stepRows := fs.Int("step-rows", 0, fmt.Sprintf("with --steps, rows of the schedule to print at most (0: %d, at most %d); the time and the verification cover every step", collective.DefaultReplayRows, collective.MaxReplayRows))
	asJSON := fs.Bool("json", false, "print JSON")
	addr := fs.String("server", "", "ask a running stepcostd (host:port) instead of pricing in process")
	sec := remoteSecurityFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}

	spec, name, err := loadCluster(*clusterName, *clusterFile)
	if err != nil {
		return err
	}
	if *nodes < 1 || *nodes > topology.MaxNodes {
		return fmt.Errorf("--nodes: must be between 1 and %d (got %d)", topology.MaxNodes, *nodes)
	}
	if spec.Nodes < *nodes {
		spec.Nodes = *nodes
	}
	cl, err := spec.Build()
	if err != nil {
		return fmt.Errorf("cluster %s: %w", name, err)
	}
	op, err := collective.ParseOp(*opName)
	if err != nil {
		return fmt.Errorf("--op: %w", err)
	}
	if *sizeStr == "" {
		return fmt.Errorf("--size: required (e.g. --size 1GiB)")
	}
	size, err := ParseSize(*sizeStr)
	if err != nil {
		return fmt.Errorf("--size: %w", err)
	}
	algo, err := collective.ParseAlgorithm(*algoName)
	if err != nil {
		return fmt.Errorf("--algo: %w", err)
	}
	opts := collective.Options{Algo: algo}
	if opts.Launch, err = collective.ParseLaunch(*launchName); err != nil {
		return fmt.Errorf("--launch: %w", err)
	}
	if *protoName != "" {
		if opts.Protocol, err = collective.ParseProtocol(*protoName); err != nil {
			return fmt.Errorf("--protocol: %w", err)
		}
		opts.ForceProtocol = true
	}
	switch {
	case *stepRows != 0 && !*steps:
		return fmt.Errorf("--step-rows: applies only with --steps")
	case *stepRows < 0 || *stepRows > collective.MaxReplayRows:
		return fmt.Errorf("--step-rows: must be between 0 (for %d) and %d (got %d)", collective.DefaultReplayRows, collective.MaxReplayRows, *stepRows)
	}
	k := *perNode
	if k == 0 {
		k = cl.Spec.GPUsPerNode
	}
	if *addr != "" {
		req := &pb.SimulateCollectiveRequest{Cluster: clusterProto(*clusterName, spec), Nodes: int32(*nodes), GpusPerNode: int32(k),
			Concurrent: *concurrent, Collective: pbCollective[op], SizeBytes: size, Algorithm: pbAlgorithm[algo], Launch: pbLaunch[opts.Launch],
			Steps: *steps, MaxStepRows: int32(*stepRows)}
		if opts.ForceProtocol {
			req.Protocol = pbProtocol[opts.Protocol]
		}
		return remoteCollective(context.Background(), *addr, sec, req, k, *asJSON, stdout)
	}
	group, siblings, err := collective.NodeGroups(cl, *nodes, k, *concurrent)
	if err != nil {
		return fmt.Errorf("--nodes/--gpus-per-node: %w", err)
	}
	p, err := collective.Place(cl, group, siblings)
	if err != nil {
		return err
	}
	m := collective.NewModel(collective.Default())
	chosen, err := m.Estimate(p, op, float64(size), opts)
	if err != nil {
		return fmt.Errorf("--algo %s: %w", algo, err)
	}
	all := m.Candidates(p, op, float64(size), collective.Options{Launch: opts.Launch, ForceProtocol: opts.ForceProtocol, Protocol: opts.Protocol}, nil)
	collective.ByTime(all)
	rep := collectiveReport{
		Cluster: name, Nodes: *nodes, GPUsPerNode: k, Ranks: p.N(), Concurrent: len(p.Siblings),
		Op: op.String(), SizeBytes: size, Launch: opts.Launch.String(), Chosen: toJSON(chosen),
	}
	for _, e := range all {
		rep.Considered = append(rep.Considered, toJSON(e))
	}
	for _, a := range collective.Algorithms() {
		if err := m.Supports(p, op, a); err != nil {
			msg := err.Error()
			if i := strings.LastIndex(msg, ": "); i >= 0 {
				msg = msg[i+2:]
			}
			rep.Unsupported = append(rep.Unsupported, unsupportJSON{a.String(), msg})
		}
	}
	if *steps && p.N() > 1 {
		r, err := m.Replay(p, chosen, collective.ReplayOptions{Launch: opts.Launch, MaxRows: *stepRows})
		if errors.Is(err, collective.ErrNoSchedule) {
			return fmt.Errorf("--steps: %w; force another algorithm with --algo", err)
		}
		if err != nil {
			return fmt.Errorf("--steps: %w", err)
		}
		rep.Schedule = replayJSON(r)
	}
	if *asJSON {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
		return rep.Schedule.failed()
	}
	fmt.Fprintf(stdout, "%s of %s on %d GPUs (%d node(s) × %d) of %s", op, FormatSize(float64(size)), p.N(), *nodes, k, name)
	if len(p.Siblings) > 1 {
		fmt.Fprintf(stdout, ", %d groups at once", len(p.Siblings))
	}
	fmt.Fprintf(stdout, ", %s launch\n\n", opts.Launch)
	if p.N() == 1 {
		fmt.Fprintln(stdout, "A group of one GPU does not communicate: time 0.")
		return nil
	}
	fmt.Fprintf(stdout, "chosen:  %s/%s  time %s  algbw %.1f GB/s  busbw %.1f GB/s\n\n",
		chosen.Algo, chosen.Protocol, fmtUs(chosen.TimeUs), chosen.AlgBWGBps, chosen.BusBWGBps)
	t := table{head: []string{"algorithm", "protocol", "time", "latency", "algbw GB/s", "busbw GB/s", "steps", "channels", "chunks"}}
	for _, e := range all {
		mark := e.Algo.String()
		switch {
		case e.Algo == chosen.Algo && e.Protocol == chosen.Protocol:
			mark += " *"
		case !collective.AutoChoice(op, e.Algo):
			mark += " (forced only)"
		}
		chunks := "-"
		if e.Chunks > 0 {
			chunks = fmt.Sprint(e.Chunks)
		}
		t.add(mark, e.Protocol.String(), fmtUs(e.TimeUs), fmtUs(e.LatencyUs), fmt.Sprintf("%.1f", e.AlgBWGBps),
			fmt.Sprintf("%.1f", e.BusBWGBps), fmt.Sprint(e.Steps), fmt.Sprint(e.Channels), chunks)
	}
	t.write(stdout)
	fmt.Fprintln(stdout, "\n* chosen (the cheapest of the algorithms NCCL picks from by itself); \"forced only\" algorithms are priced for --algo")
	if len(rep.Unsupported) > 0 {
		fmt.Fprintln(stdout, "\nnot applicable:")
		for _, u := range rep.Unsupported {
			fmt.Fprintf(stdout, "  %-12s %s\n", u.Algorithm, u.Reason)
		}
	}
	if rep.Schedule != nil {
		fmt.Fprintln(stdout)
		rep.Schedule.write(stdout, k)
		return rep.Schedule.failed()
	}
	return nil
}

// loadCluster reads --cluster or --cluster-file (exactly one).
func loadCluster(name, file string) (topology.Spec, string, error) {
	switch {
	case name != "" && file != "":
		return topology.Spec{}, "", fmt.Errorf("--cluster and --cluster-file: give one, not both")
	case file != "":
		s, err := clusterfile.Load(file)
		if err != nil {
			return topology.Spec{}, "", fmt.Errorf("--cluster-file: %w", err)
		}
		return s, s.Name, nil
	case name != "":
		s, err := catalog.System(name)
		if err != nil {
			return topology.Spec{}, "", fmt.Errorf("--cluster: %w", err)
		}
		return s, s.Name, nil
	}
	return topology.Spec{}, "", fmt.Errorf("--cluster or --cluster-file: required (see 'stepcost catalog' for names)")
}

func fmtUs(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.3g s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.4g ms", us/1e3)
	}
	return fmt.Sprintf("%.4g µs", us)
}

var (
	pbCollective = map[collective.Op]pb.Collective{collective.AllReduce: pb.Collective_COLLECTIVE_ALL_REDUCE, collective.AllGather: pb.Collective_COLLECTIVE_ALL_GATHER,
		collective.ReduceScatter: pb.Collective_COLLECTIVE_REDUCE_SCATTER, collective.AllToAll: pb.Collective_COLLECTIVE_ALL_TO_ALL,
		collective.Broadcast: pb.Collective_COLLECTIVE_BROADCAST, collective.Reduce: pb.Collective_COLLECTIVE_REDUCE, collective.SendRecv: pb.Collective_COLLECTIVE_SEND_RECV}
	pbAlgorithm = map[collective.Algorithm]pb.Algorithm{collective.Auto: pb.Algorithm_ALGORITHM_UNSPECIFIED, collective.Ring: pb.Algorithm_ALGORITHM_RING,
		collective.Tree: pb.Algorithm_ALGORITHM_TREE, collective.DoubleTree: pb.Algorithm_ALGORITHM_DOUBLE_TREE, collective.Hierarchical: pb.Algorithm_ALGORITHM_HIERARCHICAL,
		collective.NVLS: pb.Algorithm_ALGORITHM_NVLS, collective.Direct: pb.Algorithm_ALGORITHM_DIRECT, collective.PAT: pb.Algorithm_ALGORITHM_PAT, collective.Pairwise: pb.Algorithm_ALGORITHM_PAIRWISE,
		collective.NVLSTree: pb.Algorithm_ALGORITHM_NVLS_TREE}
	pbProtocol = map[collective.Protocol]pb.Protocol{collective.Simple: pb.Protocol_PROTOCOL_SIMPLE, collective.LL128: pb.Protocol_PROTOCOL_LL128, collective.LL: pb.Protocol_PROTOCOL_LL}
	pbLaunch   = map[collective.Launch]pb.Launch{collective.PerProcess: pb.Launch_LAUNCH_PER_PROCESS, collective.SingleProcess: pb.Launch_LAUNCH_SINGLE_PROCESS,
		collective.Eager: pb.Launch_LAUNCH_EAGER, collective.Graph: pb.Launch_LAUNCH_GRAPH}
)
