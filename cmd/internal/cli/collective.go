package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stepcost/stepcost/cmd/internal/clusterfile"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/wire"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

func collectiveCommand(fs *pflag.FlagSet) runFunc {
	clusterName := fs.String("cluster", "", "catalog system (see 'stepcost catalog'), e.g. dgx-h100")
	clusterFile := fs.String("cluster-file", "", "cluster description file (JSON or YAML, see deploy/clusters)")
	nodes := fs.Int("nodes", 1, "nodes the group spans")
	perNode := fs.Int("gpus-per-node", 0, "GPUs of each node in the group (default: all); the first ones of each node")
	concurrent := fs.Bool("concurrent", false, "the node's other GPUs run the same collective at the same time, in groups of the same shape (e.g. the DP groups of a TP job)")
	opName := enumFlagFunc(fs, "op", "allreduce", "allreduce, allgather, reducescatter, alltoall, broadcast, reduce, sendrecv", opNames(), parses(collective.ParseOp))
	sizeStr := fs.String("size", "", "message size, nccl-tests convention (total buffer for allgather/reducescatter); e.g. 1GiB, 64M, 4096")
	algoFlag := enumFlagFunc(fs, "algo", "auto", "force an algorithm: ring, tree, dbtree, hierarchical, nvls, nvlstree, direct, pat, pairwise (auto: the cheapest, as NCCL chooses)", algoNames(), parses(collective.ParseAlgorithm))
	protoName := enumFlagFunc(fs, "protocol", "", "force a protocol for ring/tree: simple, ll128, ll", []string{collective.Simple.String(), collective.LL128.String(), collective.LL.String()}, parses(collective.ParseProtocol))
	launchName := enumFlagFunc(fs, "launch", "per-process", "how calls are issued: per-process, single-process, eager, graph", []string{collective.PerProcess.String(), collective.SingleProcess.String(), collective.Eager.String(), collective.Graph.String()}, parses(collective.ParseLaunch))
	steps := fs.Bool("steps", false, "also show the chosen algorithm's per-step schedule, verified by executing it and priced link by link next to the closed form")
	stepRows := fs.Int("step-rows", 0, fmt.Sprintf("with --steps, rows of the schedule to print at most (0: %d, at most %d); the time and the verification cover every step", collective.DefaultReplayRows, collective.MaxReplayRows))
	asJSON := fs.Bool("json", false, "print JSON")
	addr := fs.String("server", "", "ask a running stepcostd (host:port) instead of pricing in process")
	sec := remoteSecurityFlags(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {

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
			return fmt.Errorf("%s: %w", clusterSource(name, *clusterFile), err)
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
		algo, err := collective.ParseAlgorithm(*algoFlag)
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
		if *stepRows != 0 && !*steps {
			return fmt.Errorf("--step-rows: applies only with --steps")
		}
		if msg := collective.CheckReplayRows(*stepRows); msg != "" {
			return fmt.Errorf("--step-rows: %s", msg)
		}
		k := *perNode
		if k == 0 {
			k = cl.Spec.GPUsPerNode
		}
		req := &pb.SimulateCollectiveRequest{Cluster: clusterProto(*clusterName, spec), Nodes: int32(*nodes), GpusPerNode: int32(k),
			Concurrent: *concurrent, Collective: pbCollective[op], SizeBytes: size, Algorithm: pbAlgorithm[algo], Launch: pbLaunch[opts.Launch],
			Steps: *steps, MaxStepRows: int32(*stepRows)}
		if opts.ForceProtocol {
			req.Protocol = pbProtocol[opts.Protocol]
		}
		svc, done, err := connect(*addr, sec)
		if err != nil {
			return err
		}
		defer done()
		resp, err := svc.SimulateCollective(ctx, req)
		if err != nil {
			return flagged(err, collectiveFlags)
		}
		sched := scheduleFromProto(resp.GetSchedule())
		if *asJSON {
			if err := printProtoJSON(stdout, resp); err != nil {
				return err
			}
			return sched.failed()
		}
		fmt.Fprintf(stdout, "%s of %s on %d GPUs (%d node(s) × %d) of %s", op, FormatSize(float64(size)), resp.GetRanks(), *nodes, k, name)
		if g := resp.GetConcurrentGroups(); g > 1 {
			fmt.Fprintf(stdout, ", %d groups at once", g)
		}
		fmt.Fprintf(stdout, ", %s launch\n%s\n\n", opts.Launch, resp.GetNcclRelease())
		chosen := resp.GetChosen()
		fmt.Fprintf(stdout, "chosen:  %s/%s  time %s  algbw %.1f GB/s  busbw %.1f GB/s\n\n",
			algoName(chosen.GetAlgorithm()), protocolName(chosen.GetProtocol()), fmtUs(chosen.GetTimeUs()), chosen.GetAlgbwGbps(), chosen.GetBusbwGbps())
		t := table{head: []string{"algorithm", "protocol", "time", "latency", "algbw GB/s", "busbw GB/s", "steps", "channels", "chunks"},
			optional: []string{"chunks", "channels", "steps", "latency"}}
		rows := resp.GetConsidered()
		listed := false
		for _, e := range rows {
			listed = listed || e.GetAlgorithm() == chosen.GetAlgorithm() && e.GetProtocol() == chosen.GetProtocol()
		}
		if !listed { // chosen with another protocol than its algorithm's cheapest (AWS's EFA tuner): list it first
			rows = append([]*pb.CollectiveEstimate{chosen}, rows...)
		}
		for _, e := range rows {
			mark := algoName(e.GetAlgorithm())
			switch {
			case e.GetAlgorithm() == chosen.GetAlgorithm() && e.GetProtocol() == chosen.GetProtocol():
				mark += " *"
			case !e.GetAutoCandidate():
				mark += " (forced only)"
			}
			chunks := "-"
			if e.GetChunks() > 0 {
				chunks = fmt.Sprint(e.GetChunks())
			}
			t.add(mark, protocolName(e.GetProtocol()), fmtUs(e.GetTimeUs()), fmtUs(e.GetLatencyUs()), fmt.Sprintf("%.1f", e.GetAlgbwGbps()),
				fmt.Sprintf("%.1f", e.GetBusbwGbps()), fmt.Sprint(e.GetSteps()), fmt.Sprint(e.GetChannels()), chunks)
		}
		t.write(stdout)
		cheapest := true
		for _, e := range resp.GetConsidered() {
			if e.GetAutoCandidate() && e.GetTimeUs() < chosen.GetTimeUs()*(1-1e-9) {
				cheapest = false
			}
		}
		switch {
		case algo != collective.Auto:
			// The algorithm asked for, whether or not NCCL would pick it (it
			// never picks tree or hierarchical all-reduce by itself): the note
			// said "what NCCL picks by itself, here the cheapest".
			fmt.Fprintf(stdout, "\n* chosen: forced with --algo %s (NCCL_ALGO), whatever NCCL would pick by itself;\n  \"forced only\" algorithms are those NCCL never picks by itself\n", algo)
		case cheapest:
			fmt.Fprintln(stdout, "\n* chosen: what NCCL picks by itself, here the cheapest of the algorithms it picks from;\n  \"forced only\" algorithms are priced for --algo")
		default:
			fmt.Fprintln(stdout, "\n* chosen, though not the cheapest: NCCL's own tuning model picks it (by its figures, not these times),\n  or the cluster's measured algorithms or, on AWS EFA, the OFI plugin's tuner regions name it;\n  \"forced only\" algorithms are priced for --algo")
		}
		if na := resp.GetNotApplicable(); len(na) > 0 {
			fmt.Fprintln(stdout, "\nnot applicable:")
			for _, u := range na {
				msg := wire.CommandLineSpelling(u.GetReason()) // the API names algorithms ALGORITHM_PAIRWISE; the flags pairwise
				// "algorithm not applicable: <algorithm> <op>: why": why may hold a
				// colon of its own.
				if parts := strings.SplitN(msg, ": ", 3); len(parts) == 3 {
					msg = parts[2]
				}
				fmt.Fprintf(stdout, "  %-12s %s\n", algoName(u.GetAlgorithm()), msg)
			}
		}
		for _, x := range resp.GetWarnings() {
			fmt.Fprintln(stdout)
			printWrapped(stdout, "warning: ", flaggedWarning(x, collectiveFlags), true)
		}
		if sched != nil {
			fmt.Fprintln(stdout)
			sched.write(stdout, k)
			return sched.failed()
		}
		return nil
	}
}

// collectiveFlags names the flag of each request field of collective.
var collectiveFlags = map[string]string{"collective": "--op", "size_bytes": "--size", "nodes": "--nodes", "gpus_per_node": "--gpus-per-node",
	"algorithm": "--algo", "protocol": "--protocol", "launch": "--launch", "concurrent": "--concurrent", "steps": "--steps", "max_step_rows": "--step-rows"}

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

// clusterSource names where a cluster that does not build came from, for its
// error: the file the user wrote (its base system's name said nothing of it),
// or the catalog system by name.
func clusterSource(name, file string) string {
	if file != "" {
		return "--cluster-file " + file
	}
	return "cluster " + name
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
