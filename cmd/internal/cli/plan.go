package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/picture"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plan", "--model NAME | --model-file F | --params N | --layers L --hidden H --heads A … --cluster NAME --gpus N | --max-gpus N --gbs G --seq S [flags]", stderr)
	mf := addModelFlags(fs)
	clusterName := fs.String("cluster", "", "catalog system, e.g. dgx-h100")
	clusterFile := fs.String("cluster-file", "", "cluster description file (JSON or YAML)")
	gpus := fs.Int("gpus", 0, "job size (exact)")
	minGPUs := fs.Int("min-gpus", 0, "with --max-gpus: the smallest job size to consider")
	maxGPUs := fs.Int("max-gpus", 0, "instead of --gpus: consider every size up to this (whole nodes)")
	gbs := fs.Int("gbs", 0, "global batch (sequences)")
	seq := fs.Int("seq", 0, "sequence length")
	precision := fs.String("precision", "bf16", "matmul precision: bf16, fp16, fp8")
	exclude := fs.String("exclude-nodes", "", "what-if: these nodes (e.g. 3,7) are unavailable — failed or drained; the job uses the others")
	freeMap := fs.String("free-map", "", "JSON file of free GPUs: {\"0\": [0,1,2,3], \"5\": [0,1,2,3,4,5,6,7]} (node → local GPUs)")
	objective := fs.String("objective", "step_time", "step_time, throughput (tokens/s per GPU) or cost")
	price := fs.Float64("price", 0, "price per GPU-hour (for --objective cost)")
	tokens := fs.Float64("tokens", 0, "token budget to train (for --objective cost)")
	top := fs.Int("top", 10, "plans to list")
	tpList := fs.String("tp", "", "allowed TP degrees, e.g. 4,8 (default all valid)")
	ppList := fs.String("pp", "", "allowed PP degrees")
	cpList := fs.String("cp", "", "allowed CP degrees")
	zeroList := fs.String("zero", "", "allowed ZeRO stages, e.g. 1,3")
	mbsList := fs.String("mbs", "", "allowed micro-batch sizes")
	epList := fs.String("ep", "", "allowed expert-parallel degrees (MoE)")
	vppList := fs.String("vpp", "", "allowed interleaving depths (model chunks per pipeline rank)")
	spList := fs.String("sp", "", "sequence parallelism with TP: on, off or on,off (default both)")
	schedList := fs.String("schedule", "", "allowed pipeline schedules: gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe (default all)")
	tpAcross := fs.Bool("tp-across-nodes", false, "allow TP groups larger than a node")
	unevenPP := fs.Bool("uneven-pp", false, "allow pipeline splits that do not divide the layers evenly")
	maxMBS := fs.Int("max-mbs", 0, "largest micro-batch size when --mbs is not given (default 16)")
	rcList := fs.String("recompute", "", "allowed recompute modes: none, selective, ops, full (default none,selective,full)")
	headroom := fs.Float64("min-headroom", 0, "memory (GB) each GPU must keep free")
	onDemand := fs.Bool("zero3-on-demand", false, "ZeRO-3 gathers each module's weights when it runs, without prefetching (DeepSpeed ZeRO-3 of 2021)")
	unfused := fs.Bool("unfused-attention", false, "materialised attention scores (no flash attention)")
	prefetch := fs.String("zero3-backward-prefetch", "", "when ZeRO-3 gathers the next layer's weights backward: pre (FSDP default), post (Composer default), none (default: the framework's)")
	dpAfter := fs.Bool("dp-reduce-after-backward", false, "data-parallel gradients reduced after the backward pass, none hidden (DeepSpeed's engine; default: the framework's)")
	fp8Recipe := fs.String("fp8-recipe", "", "with --precision fp8: delayed (Transformer Engine's default: scales from the amax history, weights cast once per step) or current (torchao tensorwise: an amax pass before every cast, weights cast every forward); default: the framework's")
	moeImb := fs.Float64("moe-imbalance", 0, "MoE router imbalance: the busiest expert-parallel rank's tokens over the mean (≥ 1; 0: balanced)")
	moeCap := fs.Float64("moe-capacity", 0, "MoE capacity factor: tokens an expert takes over the mean, the rest dropped (0: dropless)")
	slowGPU := fs.Float64("slow-gpu", 0, "what-if: one GPU computes at this fraction of its speed, e.g. 0.8 (0: none)")
	placeTol := fs.Float64("placement-tolerance", 0, "with --free-map: how much faster (a share, e.g. 0.05) a placement breaking into more whole free nodes must be (0: 0.02)")
	offload := fs.String("offload", "", "search layouts that keep state in host memory: optimizer (zero ≥ 1) or params (zero 3)")
	degradedNIC := fs.Float64("degraded-nic", 0, "what-if: one node's NICs run at this fraction of their bandwidth, e.g. 0.5 (0: none)")
	degradedLink := fs.Float64("degraded-link", 0, "what-if: one GPU's NVLink/PCIe link runs at this fraction of its bandwidth (0: none)")
	includeDominated := fs.Bool("include-dominated", false, "keep dominated plans (no faster on as many GPUs with less memory headroom, or the reverse) in the top plans, flagged")
	fw := fs.String("framework", "", "training framework whose defaults fill what is not given: "+strings.Join(framework.Names(), ", ")+" (default megatron-core)")
	asJSON := fs.Bool("json", false, "print JSON")
	svgOut := fs.String("svg", "", svgFlagHelp+": the Pareto front, then the best plan's pipeline schedule and breakdown")
	addr := fs.String("server", "", "ask a running stepcostd (host:port) instead of searching in process")
	sec := remoteSecurityFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var req planner.Request
	arch, _, err := mf.resolve(set)
	if err != nil {
		return err
	}
	req.Model = arch
	spec, clusterLabel, err := loadCluster(*clusterName, *clusterFile)
	if err != nil {
		return err
	}
	size := max(*gpus, *maxGPUs)
	if size < 1 {
		return errors.New("--gpus or --max-gpus: required")
	}
	if *gpus > 0 && *maxGPUs > 0 {
		return errors.New("--gpus and --max-gpus: give one")
	}
	if g := spec.GPUsPerNode; g > 0 && spec.Nodes*g < size {
		spec.Nodes = (size + g - 1) / g
	}
	if *freeMap != "" {
		data, err := os.ReadFile(*freeMap)
		if err != nil {
			return fmt.Errorf("--free-map: %w", err)
		}
		var raw map[string][]int
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("--free-map %s: want {\"node\": [local GPUs], …}: %w", *freeMap, err)
		}
		req.Free = planner.FreeMap{}
		for k, v := range raw {
			node, err := strconv.Atoi(k)
			if err != nil {
				return fmt.Errorf("--free-map: key %q is not a node index", k)
			}
			req.Free[node] = v
			spec.Nodes = max(spec.Nodes, node+1)
		}
	}
	if *exclude != "" {
		// What-if: these nodes are gone (failed, drained); the planner keeps the others.
		for _, f := range strings.Split(*exclude, ",") {
			node, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || node < 0 || node >= spec.Nodes {
				return fmt.Errorf("--exclude-nodes: %q is not a node of the %d-node cluster", f, spec.Nodes)
			}
			req.ExcludeNodes = append(req.ExcludeNodes, node)
		}
	}
	cl, err := spec.Build()
	if err != nil {
		return fmt.Errorf("cluster %s: %w", clusterLabel, err)
	}
	req.Cluster = cl
	req.GPUs, req.MinGPUs, req.MaxGPUs = *gpus, *minGPUs, *maxGPUs
	req.Training = step.Training{SeqLen: *seq, GlobalBatch: *gbs, Precision: step.Precision(strings.ToLower(*precision)),
		UnfusedAttention: *unfused, OnDemandGathers: *onDemand, BackwardPrefetch: step.BackwardPrefetch(strings.ToLower(*prefetch)),
		Framework: *fw, FP8Recipe: step.FP8Recipe(strings.ToLower(*fp8Recipe)), DPReduceAfterBackward: *dpAfter,
		MoEImbalance: *moeImb, MoECapacityFactor: *moeCap}
	if *seq < 1 || *gbs < 1 {
		return errors.New("--seq and --gbs: required, ≥ 1")
	}
	req.Objective = planner.Objective(strings.ToLower(*objective))
	req.PricePerGPUHour, req.TokenBudget, req.TopK, req.IncludeDominated = *price, *tokens, *top, *includeDominated
	req.SlowGPUSpeed, req.DegradedNICSpeed, req.DegradedLinkSpeed = *slowGPU, *degradedNIC, *degradedLink
	req.PlacementTolerance = *placeTol
	c := &req.Constraints
	c.MinHeadroomGB = *headroom
	c.Offload = step.Offload(strings.ToLower(*offload))
	c.TPAcrossNodes, c.UnevenPP, c.MaxMicroBatch = *tpAcross, *unevenPP, *maxMBS
	for flagName, dst := range map[string]*[]int{"tp": &c.TP, "pp": &c.PP, "cp": &c.CP, "zero": &c.ZeRO, "mbs": &c.MicroBatch, "ep": &c.EP, "vpp": &c.VirtualStages} {
		src := map[string]string{"tp": *tpList, "pp": *ppList, "cp": *cpList, "zero": *zeroList, "mbs": *mbsList, "ep": *epList, "vpp": *vppList}[flagName]
		if src == "" {
			continue
		}
		for _, f := range strings.Split(src, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("--%s: %q is not an integer", flagName, f)
			}
			*dst = append(*dst, v)
		}
	}
	if *rcList != "" {
		for _, f := range strings.Split(*rcList, ",") {
			c.Recompute = append(c.Recompute, step.Recompute(strings.ToLower(strings.TrimSpace(f))))
		}
	}
	if *schedList != "" {
		for _, f := range strings.Split(*schedList, ",") {
			c.Schedules = append(c.Schedules, step.Schedule(strings.ToLower(strings.TrimSpace(f))))
		}
	}
	if *spList != "" {
		for _, f := range strings.Split(*spList, ",") {
			switch strings.ToLower(strings.TrimSpace(f)) {
			case "on", "true":
				c.SP = append(c.SP, true)
			case "off", "false":
				c.SP = append(c.SP, false)
			default:
				return fmt.Errorf("--sp: %q is not on or off", f)
			}
		}
	}
	if *addr != "" && *svgOut != "" {
		return errors.New("--svg: pictures are drawn in process; leave out --server (or ask the daemon's POST /v1/pictures:pareto)")
	}
	if *svgOut == "-" && *asJSON {
		return errors.New("--svg - and --json: both write to standard output; give --svg a file")
	}
	if err := checkNames(req.Training, step.Layout{}, planFlags); err != nil {
		return err
	}
	obj, ok := pbObjectives[req.Objective]
	if !ok {
		return fmt.Errorf("--objective: must be step_time, throughput or cost (got %q)", *objective)
	}
	name, params := "", 0.0
	if set["model"] {
		name = *mf.name
	}
	if set["params"] {
		params = *mf.params
	}
	pr := &pb.EstimatePlanRequest{Model: modelProto(req.Model, name, params), Cluster: clusterProto(*clusterName, spec),
		Training: wire.TrainingToProto(req.Training), Gpus: int32(req.GPUs), MinGpus: int32(req.MinGPUs), MaxGpus: int32(req.MaxGPUs),
		Objective: obj, PricePerGpuHour: req.PricePerGPUHour, TokenBudget: req.TokenBudget, TopK: int32(req.TopK), IncludeDominated: req.IncludeDominated,
		SlowGpuSpeed: req.SlowGPUSpeed, DegradedNicSpeed: req.DegradedNICSpeed, DegradedLinkSpeed: req.DegradedLinkSpeed,
		PlacementTolerance: req.PlacementTolerance, Constraints: wire.ConstraintsToProto(*c)}
	for _, n := range req.ExcludeNodes {
		pr.ExcludeNodes = append(pr.ExcludeNodes, int32(n))
	}
	if *clusterName == "" {
		pr.Cluster.Nodes = int32(spec.Nodes)
	}
	for node, gs := range req.Free {
		pr.Cluster.FreeGpus = append(pr.Cluster.FreeGpus, &pb.NodeFreeGPUs{Node: int32(node), Gpus: int32s(gs)})
	}
	sort.Slice(pr.Cluster.FreeGpus, func(i, j int) bool { return pr.Cluster.FreeGpus[i].Node < pr.Cluster.FreeGpus[j].Node })

	var resp *pb.EstimatePlanResponse
	if *addr != "" {
		svc, done, err := connect(*addr, sec)
		if err != nil {
			return err
		}
		defer done()
		if resp, err = svc.EstimatePlan(ctx, pr); err != nil {
			return err
		}
	} else {
		var res planner.Result
		if resp, res, err = newLocal().plan(ctx, pr); err != nil {
			return flagged(err, planFlags)
		}
		if *svgOut != "" && len(res.Top) > 0 {
			if err := writeSVG(*svgOut, planPicture(res, req.Model.Name+" on "+clusterLabel), stdout); err != nil {
				return err
			}
			if *svgOut == "-" {
				return nil
			}
		}
	}
	if *asJSON {
		if err := printProtoJSON(stdout, resp); err != nil {
			return err
		}
		if len(resp.GetPlans()) == 0 {
			return errNoPlan
		}
		return nil
	}
	printPlans(stdout, resp, fmt.Sprintf("%s on %s: seq %d, global batch %d, %s; objective %s",
		req.Model.Name, clusterLabel, *seq, *gbs, req.Training.Precision, req.Objective), req.TokenBudget)
	if len(resp.GetPlans()) == 0 {
		return errNoPlan
	}
	return nil
}

var pbObjectives = map[planner.Objective]pb.Objective{planner.FastestStep: pb.Objective_OBJECTIVE_STEP_TIME,
	planner.Throughput: pb.Objective_OBJECTIVE_THROUGHPUT, planner.Cost: pb.Objective_OBJECTIVE_COST}

// planFlags names the flag of each request field of plan.
var planFlags = map[string]string{"gpus": "--gpus", "min_gpus": "--min-gpus", "max_gpus": "--max-gpus", "objective": "--objective",
	"price_per_gpu_hour": "--price", "token_budget": "--tokens", "top_k": "--top", "training.seq_len": "--seq", "training.global_batch": "--gbs",
	"training.precision": "--precision", "training.zero3_backward_prefetch": "--zero3-backward-prefetch", "training.fp8_recipe": "--fp8-recipe", "constraints.recompute": "--recompute", "constraints.schedules": "--schedule", "constraints.sp": "--sp", "constraints.tp": "--tp", "constraints.pp": "--pp", "constraints.cp": "--cp", "constraints.ep": "--ep",
	"constraints.zero": "--zero", "constraints.micro_batch": "--mbs", "constraints.virtual_stages": "--vpp", "constraints.min_headroom_gb": "--min-headroom",
	"constraints.max_micro_batch": "--max-mbs", "constraints.offload": "--offload", "exclude_nodes": "--exclude-nodes", "cluster.free_gpus": "--free-map",
	"slow_gpu_speed": "--slow-gpu", "degraded_nic_speed": "--degraded-nic", "degraded_link_speed": "--degraded-link", "placement_tolerance": "--placement-tolerance"}

// printPlans prints a search's answer for people: the top plans and the Pareto front.
func printPlans(w io.Writer, resp *pb.EstimatePlanResponse, title string, tokens float64) {
	fmt.Fprintln(w, title)
	st := resp.GetStats()
	pruned := map[string]int{}
	for k, v := range st.GetPruned() {
		pruned[k] = int(v)
	}
	fmt.Fprintf(w, "searched %d layouts over %d job size(s): %d estimated, %d feasible; pruned: %s\n\n",
		st.GetEnumerated(), len(st.GetGpuCounts()), st.GetEvaluated(), st.GetFeasible(), prunedSummary(pruned))
	if len(resp.GetPlans()) == 0 {
		return
	}
	t := table{head: []string{"#", "gpus", "layout", "nodes", "step", "compute", "exposed comm", "bubble", "memory GB", "MFU"}}
	for _, p := range resp.GetPlans() {
		e := p.GetEstimate()
		b := e.GetBreakdown()
		x := b.GetExposedCommS()
		exposed := 0.0
		for _, v := range []float64{x.GetTp(), x.GetCp(), x.GetEp(), x.GetPp(), x.GetDp(), x.GetZero3(), x.GetEmbedding()} {
			exposed += v
		}
		rank := fmt.Sprint(p.GetRank())
		if p.GetDominated() {
			rank += " (dominated)"
		}
		t.add(rank, fmt.Sprint(p.GetGpus()), layoutOf(p.GetLayout()), nodesString(placementOf(p.GetPlacement())),
			fmtSeconds(e.GetStepTimeS()), fmtSeconds(b.GetForwardS()+b.GetBackwardS()+b.GetRecomputeS()), fmtSeconds(exposed), fmtSeconds(b.GetBubbleS()),
			fmt.Sprintf("%.1f/%.0f", e.GetMemory().GetTotalGb(), e.GetMemory().GetCapacityGb()), fmt.Sprintf("%.1f%%", 100*e.GetThroughput().GetMfu()))
	}
	t.write(w)
	if c := resp.GetPlans()[0].GetCostUsd(); c > 0 {
		fmt.Fprintf(w, "\nbest plan trains %.3g tokens for $%.0f\n", tokens, c)
	}
	fmt.Fprintf(w, "\nPareto front (GPUs × step time × memory headroom): %d plans\n", len(resp.GetPareto()))
	pt := table{head: []string{"gpus", "layout", "step", "headroom GB"}}
	for _, p := range resp.GetPareto() {
		pt.add(fmt.Sprint(p.GetGpus()), layoutOf(p.GetLayout()), fmtSeconds(p.GetEstimate().GetStepTimeS()), fmt.Sprintf("%.1f", p.GetEstimate().GetMemory().GetHeadroomGb()))
	}
	pt.write(w)
}

// layoutOf is layoutString of the API's layout.
func layoutOf(l *pb.Layout) string {
	d, err := wire.LayoutFromProto(l)
	if err != nil {
		return "?"
	}
	return layoutString(d)
}

func placementOf(p *pb.Placement) planner.Placement {
	var out planner.Placement
	for _, u := range p.GetNodes() {
		out.Nodes = append(out.Nodes, planner.NodeUse{Node: int(u.GetNode()), GPUs: wire.ToInts(u.GetGpus())})
	}
	return out
}

func layoutString(l step.Layout) string {
	s := fmt.Sprintf("tp%d pp%d dp%d", l.TP, l.PP, l.DP)
	if l.CP > 1 {
		s += fmt.Sprintf(" cp%d", l.CP)
	}
	if l.EP > 1 {
		s += fmt.Sprintf(" ep%d", l.EP)
	}
	s += fmt.Sprintf(" z%d mbs%d %s", l.ZeRO, l.MicroBatch, l.Recompute)
	if l.SP {
		s += " sp"
	}
	if l.PP > 1 {
		s += " " + string(l.Schedule)
		if l.VirtualStages > 1 && l.Schedule != step.ZeroBubbleV {
			s += fmt.Sprintf("×%d", l.VirtualStages)
		}
	}
	if l.ETP == 1 && l.TP > 1 {
		s += " etp1"
	}
	if l.Offload != "" && l.Offload != step.OffloadNone {
		s += " offload-" + string(l.Offload)
	}
	return s
}

// nodesString summarises a placement: "nodes 0-15" or "n0:0-3 n5:0-7 …".
func nodesString(p planner.Placement) string {
	if len(p.Nodes) == 0 {
		return "-"
	}
	whole := true
	for i, u := range p.Nodes {
		if u.Node != p.Nodes[0].Node+i || len(u.GPUs) != len(p.Nodes[0].GPUs) || u.GPUs[0] != 0 {
			whole = false
		}
	}
	if whole {
		if len(p.Nodes) == 1 {
			return fmt.Sprintf("node %d (%d GPUs)", p.Nodes[0].Node, len(p.Nodes[0].GPUs))
		}
		return fmt.Sprintf("nodes %d–%d", p.Nodes[0].Node, p.Nodes[len(p.Nodes)-1].Node)
	}
	var parts []string
	for i, u := range p.Nodes {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("+%d nodes", len(p.Nodes)-4))
			break
		}
		parts = append(parts, fmt.Sprintf("n%d:%d-%d", u.Node, u.GPUs[0], u.GPUs[len(u.GPUs)-1]))
	}
	return strings.Join(parts, " ")
}

func prunedSummary(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func int32s(v []int) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// planPicture is the Pareto front of a search above its best plan's schedule and
// breakdown.
func planPicture(res planner.Result, title string) picture.Figure {
	figs := []picture.Figure{}
	if f, err := picture.Pareto(picture.FrontOf(res, title)); err == nil {
		figs = append(figs, f)
	}
	best := res.Top[0].Estimate
	label := fmt.Sprintf("%s — best plan, %d GPUs", title, res.Top[0].GPUs)
	if s, err := picture.Schedule(best, label); err == nil {
		figs = append(figs, s)
	}
	return picture.Stack(append(figs, picture.Breakdown(best, label))...)
}

// errNoPlan is the failure of a search that found no feasible plan (exit code 1).
var errNoPlan = errors.New("no feasible plan: every layout was pruned (see the counts above)")
