package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/service"
	"github.com/stepcost/stepcost/internal/strictjson"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/picture"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// planArgs are plan's flags.
type planArgs struct {
	fs               *pflag.FlagSet // to tell a flag given as 0 from one left out
	mf               *modelFlags
	clusterName      *string
	clusterFile      *string
	gpus             *int
	minGPUs          *int
	maxGPUs          *int
	gbs              *int
	seq              *int
	precision        *string
	exclude          *string
	degradedNodes    *[]string
	nodes            *int
	freeMap          *string
	objective        *string
	price            *float64
	tokens           *float64
	top              *int
	tpList           *string
	ppList           *string
	cpList           *string
	zeroList         *string
	mbsList          *string
	epList           *string
	vppList          *string
	spList           *string
	overlapTPList    *string
	overlapEPList    *string
	cpVariantList    *string
	fp8WeightsList   *string
	offloadActsList  *string
	expertsWhole     *string
	schedList        *string
	tpAcross         *bool
	unevenPP         *bool
	evenSplit        *bool
	maxMBS           *int
	rcList           *string
	headroom         *float64
	onDemand         *bool
	unfused          *bool
	flash2           *bool
	prefetch         *string
	paramGather      *string
	dpAfter          *bool
	fp8Params        *bool
	fp8Recipe        *string
	moeImb           *float64
	moeCap           *float64
	sw               *trainingSwitches
	slowGPU          *float64
	placeTol         *float64
	offload          *string
	degradedNIC      *float64
	degradedLink     *float64
	includeDominated *bool
	fw               *string
	asJSON           *bool
	svgOut           *string
	addr             *string
	sec              *remoteSecurity
}

// planQuery is what plan asks, as the flags give it.
type planQuery struct {
	req          planner.Request
	spec         topology.Spec
	clusterLabel string
}

func newPlanFlags(fs *pflag.FlagSet) *planArgs {
	opt := &planArgs{fs: fs}
	opt.mf = addModelFlags(fs)
	opt.clusterName = fs.String("cluster", "", "catalog system, e.g. dgx-h100")
	opt.clusterFile = fs.String("cluster-file", "", "cluster description file (JSON or YAML)")
	opt.gpus = fs.Int("gpus", 0, "job size (exact)")
	opt.minGPUs = fs.Int("min-gpus", 0, "with --max-gpus: the smallest job size to consider")
	opt.maxGPUs = fs.Int("max-gpus", 0, "instead of --gpus: consider every size up to this that fills whole nodes or divides one (1, 2, 4, 8, 16, 24, … on 8-GPU nodes)")
	opt.gbs = fs.Int("gbs", 0, "global batch (sequences)")
	opt.seq = fs.Int("seq", 0, "sequence length")
	opt.precision = enumFlag(fs, "precision", "bf16", "matmul precision: bf16, fp16, fp8", precisionNames)
	opt.nodes = fs.Int("nodes", 0, "cluster size in nodes (default: the nodes the job needs): excluded nodes, a free map and degraded parts are what-ifs on a cluster larger than the job")
	opt.exclude = fs.String("exclude-nodes", "", "what-if: these nodes (e.g. 3,7) are unavailable — failed or drained; the job uses the others")
	_ = fs.SetAnnotation("exclude-nodes", commaList, []string{"true"})
	opt.degradedNodes = fs.StringArray("degraded-node", nil, "what-if: a node with a degraded part, NODE:PART=SPEED[,PART=SPEED] with PART gpu (one GPU computes at SPEED of its speed), nic (its NICs at SPEED of their bandwidth) or link (one GPU's NVLink/PCIe link at SPEED), e.g. 5:nic=0.25; repeat for more nodes. Each job size runs on the other nodes when their free GPUs host it, else on this one priced with its degradation; the plan says which")
	opt.freeMap = fs.String("free-map", "", "JSON file of free GPUs: {\"0\": [0,1,2,3], \"5\": [0,1,2,3,4,5,6,7]} (node → local GPUs)")
	opt.objective = enumFlag(fs, "objective", "step_time", "step_time, throughput (tokens/s per GPU) or cost", objectiveNames)
	opt.price = fs.Float64("price", 0, "price per GPU-hour (for --objective cost)")
	opt.tokens = fs.Float64("tokens", 0, "token budget to train (for --objective cost)")
	opt.top = fs.Int("top", 10, "plans to list")
	opt.tpList = fs.String("tp", "", "allowed TP degrees, e.g. 4,8 (default all valid)")
	opt.ppList = fs.String("pp", "", "allowed PP degrees")
	opt.cpList = fs.String("cp", "", "allowed CP degrees")
	opt.zeroList = fs.String("zero", "", "allowed ZeRO stages, e.g. 1,3")
	opt.mbsList = fs.String("mbs", "", "allowed micro-batch sizes")
	opt.epList = fs.String("ep", "", "allowed expert-parallel degrees (MoE)")
	opt.vppList = fs.String("vpp", "", "allowed interleaving depths (model chunks per pipeline rank)")
	opt.spList = onOffFlag(fs, "sp", "sequence parallelism with TP: on, off or on,off (default both)")
	opt.cpVariantList = cpVariantFlag(fs, "cp-variant", "context parallelism: ring (default), ulysses or ring,ulysses (Ulysses where tp × cp divides the heads)")
	opt.overlapEPList = onOffFlag(fs, "overlap-ep", "MoE: overlap the expert-parallel all-to-alls where the framework runs it (ep > 1, no pipeline or interleaved, no full recomputation): on (default) or off")
	opt.overlapTPList = onOffFlag(fs, "overlap-tp", "TP communication overlapping the GEMMs, with TP and SP (Megatron --tp-comm-overlap, torch async TP): on, off or on,off (default both)")
	opt.fp8WeightsList = onOffFlag(fs, "fp8-weights", "with --precision fp8, matmul weights stored in fp8: on, off or on,off (default on where the framework stores them: megatron-core, nemo); --fp8-params pins on")
	opt.offloadActsList = onOffFlag(fs, "offload-activations", "activations saved for the backward pass in host memory (Megatron-Core's fine-grained activation offloading, 1F1B or interleaved): on, off or on,off (default: tried where the framework runs it for layouts that fit no other way)")
	opt.expertsWhole = onOffFlag(fs, "experts-whole", "MoE with TP and SP: each expert whole on every TP rank (expert TP 1, Megatron-Core's --expert-tensor-parallel-size 1) or split over TP like the dense MLP: on, off or on,off (default both); off for a framework without the setting (NeMo 24.12)")
	opt.schedList = enumListFlag(fs, "schedule", "", "allowed pipeline schedules: gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe (default all)", scheduleNames)
	opt.tpAcross = fs.Bool("tp-across-nodes", false, "allow TP groups larger than a node")
	opt.unevenPP = fs.Bool("uneven-pp", false, "allow pipeline splits that do not divide the layers evenly")
	opt.evenSplit = fs.Bool("even-split", false, "only layouts whose pipeline stages and model chunks hold the same number of layers, for a framework that splits no other way (Megatron-LM of 2021; implied by --framework megatron-lm-2021)")
	opt.maxMBS = fs.Int("max-mbs", 0, "largest micro-batch size when --mbs is not given (default 16)")
	opt.rcList = enumListFlag(fs, "recompute", "", "allowed recompute modes: none, selective, ops, full (default none,selective,full)", recomputeNames)
	opt.headroom = fs.Float64("min-headroom", 0, "memory (GB) each GPU must keep free")
	opt.onDemand = fs.Bool("zero3-on-demand", false, "ZeRO-3 gathers each module's weights when it runs, without prefetching (DeepSpeed ZeRO-3 of 2021)")
	opt.unfused = fs.Bool("unfused-attention", false, "materialised attention scores (no flash attention)")
	opt.flash2 = fs.Bool("flash-attention-2", false, "flash-attn 2 instead of the framework's Hopper-native fused attention (Transformer Engine with NVTE_FUSED_ATTN=0)")
	opt.paramGather = enumFlag(fs, "param-gather", "", "when ZeRO-1/2 all-gathers the updated parameters: exposed (after the optimizer, waited for; Megatron-LM's default) or overlapped (bucket by bucket under the next forward: Megatron-Core's --overlap-param-gather, NeMo's recipes); default: exposed", paramGatherNames)
	opt.prefetch = enumFlag(fs, "zero3-backward-prefetch", "", "when ZeRO-3 gathers the next layer's weights backward: pre (FSDP default), post (Composer default), none (default: the framework's)", prefetchNames)
	opt.dpAfter = fs.Bool("dp-reduce-after-backward", false, "data-parallel gradients reduced after the backward pass, none hidden (DeepSpeed's engine; default: the framework's)")
	opt.fp8Params = fs.Bool("fp8-params", false, "with --precision fp8: store the layers' matmul weights in fp8 (1 B) instead of 16 bits, with only fp8 transposes besides; ZeRO-3 gathers and the parameter all-gather send fp8 (Transformer Engine fp8_model_init, NeMo fp8_params)")
	opt.fp8Recipe = enumFlag(fs, "fp8-recipe", "", "with --precision fp8: delayed (Transformer Engine's default: scales from the amax history, weights cast once per step), current (torchao tensorwise: an amax pass before every cast, weights cast every forward), rowwise (torchao rowwise: per-row scales along each axis, the column-wise casts at a third of the bandwidth, the backward GEMMs' outputs rescaled in place), mxfp8 (32-element blocks with E8M0 scales; Blackwell only) or blockwise (DeepSeek-V3's 1×128 activation tiles and 128×128 weight blocks, scales found in the cast, weights cast once per step); default: the framework's", fp8RecipeNames)
	opt.moeImb = fs.Float64("moe-imbalance", 0, "MoE router imbalance: the busiest expert-parallel rank's tokens over the mean (≥ 1; 0: balanced)")
	opt.moeCap = fs.Float64("moe-capacity", 0, "MoE capacity factor: tokens an expert takes over the mean, the rest dropped (0: dropless)")
	opt.sw = addTrainingSwitches(fs)
	opt.slowGPU = fs.Float64("slow-gpu", 0, "what-if: one GPU computes at this fraction of its speed, e.g. 0.8 (0: none)")
	opt.placeTol = fs.Float64("placement-tolerance", 0, "with --free-map: how much faster (a share, e.g. 0.05) a placement breaking into more whole free nodes must be (unset: 0.02; 0: whichever is faster)")
	opt.offload = enumFlag(fs, "offload", "", "search layouts that keep state in host memory: optimizer (zero ≥ 1) or params (zero 3)", offloadNames)
	opt.degradedNIC = fs.Float64("degraded-nic", 0, "what-if: one node's NICs run at this fraction of their bandwidth, e.g. 0.5 (0: none)")
	opt.degradedLink = fs.Float64("degraded-link", 0, "what-if: one GPU's NVLink/PCIe link runs at this fraction of its bandwidth (0: none)")
	opt.includeDominated = fs.Bool("include-dominated", false, "keep dominated plans (no faster on as many GPUs with less memory headroom, or the reverse) in the top plans, flagged")
	opt.fw = frameworkFlag(fs, "training framework whose defaults fill what is not given: "+strings.Join(framework.Names(), ", ")+" (default megatron-core)")
	opt.asJSON = fs.Bool("json", false, "print JSON")
	opt.svgOut = fs.String("svg", "", svgFlagHelp+": the Pareto front, then the best plan's pipeline schedule and breakdown")
	opt.addr = fs.String("server", "", "ask a running stepcostd (host:port) instead of searching in process")
	opt.sec = remoteSecurityFlags(fs)
	return opt
}

func planCommand(fs *pflag.FlagSet) runFunc {
	opt := newPlanFlags(fs)
	return func(ctx context.Context, _ []string, stdout, _ io.Writer) error {
		return opt.run(ctx, changed(fs), stdout)
	}
}

func (opt *planArgs) run(ctx context.Context, set map[string]bool, stdout io.Writer) error {
	q := &planQuery{}
	if err := opt.cluster(set, q); err != nil {
		return err
	}
	if err := opt.workload(q); err != nil {
		return err
	}
	pr, err := opt.request(set, q)
	if err != nil {
		return err
	}
	return opt.answer(ctx, pr, q, stdout)
}

// cluster is the model, the cluster sized for the job, its free GPUs and the
// nodes left out.
func (opt *planArgs) cluster(set map[string]bool, q *planQuery) error {
	arch, _, err := opt.mf.resolve(set)
	if err != nil {
		return err
	}
	q.req.Model = arch
	q.spec, q.clusterLabel, err = loadCluster(*opt.clusterName, *opt.clusterFile)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"gpus", *opt.gpus}, {"max-gpus", *opt.maxGPUs}, {"nodes", *opt.nodes}} {
		// A job size of 0 given is a value given, not the flag left out
		// (--nodes 0 is its default: the nodes the job needs).
		if f.v < 0 || f.v == 0 && f.name != "nodes" && opt.fs.Changed(f.name) {
			return fmt.Errorf("--%s: must be at least 1 (got %d)", f.name, f.v)
		}
	}
	if *opt.minGPUs != 0 && *opt.gpus == 0 && *opt.maxGPUs == 0 {
		return errors.New("--min-gpus: goes with --max-gpus (the largest job size to consider); for one size give --gpus")
	}
	// The API reads an unset top_k (0) as the default; on the command line the flag's
	// default is that value, so an explicit 0 or less is a mistake, not a request for it.
	if *opt.top < 1 || *opt.top > planner.MaxTopK {
		return fmt.Errorf("--top: must be between 1 and %d (got %d)", planner.MaxTopK, *opt.top)
	}
	size := max(*opt.gpus, *opt.maxGPUs)
	if size < 1 {
		return errors.New("--gpus or --max-gpus: required")
	}
	if *opt.gpus > 0 && *opt.maxGPUs > 0 {
		return errors.New("--gpus and --max-gpus: give one")
	}
	if *opt.gpus > 0 && *opt.minGPUs != 0 {
		return errors.New("--gpus and --min-gpus: give --gpus, or --min-gpus with --max-gpus")
	}
	// Checked here, before the cluster is sized for the job: past it the
	// refusal named the cluster's node count, a value the user never gave.
	// In process only: a daemon may be started with a larger --max-gpus.
	if limit := service.DefaultLimits().MaxGPUs; *opt.addr == "" && size > limit {
		name := "--gpus"
		if *opt.maxGPUs > 0 {
			name = "--max-gpus"
		}
		return fmt.Errorf("%s: %d GPUs exceed the limit of %d the command line takes in process (a daemon's is its --max-gpus)", name, size, limit)
	}
	if g := q.spec.GPUsPerNode; g > 0 && q.spec.Nodes*g < size {
		if *opt.nodes == 0 {
			job := fmt.Sprintf("the job's %d GPUs (--gpus %d)", size, size)
			if *opt.maxGPUs > 0 {
				job = fmt.Sprintf("jobs of up to %d GPUs (--max-gpus %d)", size, size)
			}
			if err := fileHolds(*opt.clusterFile, *opt.clusterFile != "", q.spec.Nodes, g, size, job,
				"give --nodes to size the cluster, or a file with more nodes"); err != nil {
				return err
			}
		}
		q.spec.Nodes = (size + g - 1) / g
	}
	if n := *opt.nodes; n != 0 {
		g := max(1, q.spec.GPUsPerNode)
		if n < 0 || n*g < size {
			// --gpus is the job's size; --max-gpus only the top of the sizes searched.
			if *opt.maxGPUs > 0 {
				return fmt.Errorf("--nodes: %d nodes of %d GPUs cannot hold jobs of up to %d GPUs (--max-gpus %d)", n, g, size, size)
			}
			return fmt.Errorf("--nodes: %d nodes of %d GPUs cannot hold the job's %d GPUs (--gpus %d)", n, g, size, size)
		}
		q.spec.Nodes = n
	}
	if *opt.freeMap != "" {
		data, err := readFile(*opt.freeMap)
		if err != nil {
			return fmt.Errorf("--free-map: %w", err)
		}
		var raw map[string][]int
		if err := strictjson.Check(data); err != nil {
			return fmt.Errorf("--free-map %s: %w", *opt.freeMap, err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("--free-map %s: %w", *opt.freeMap, freeMapTypeError(data, err))
		}
		if len(raw) == 0 {
			// Not the API's empty list (no map): a scheduler's map with no free
			// GPU, which no job fits.
			return fmt.Errorf("--free-map %s: lists no node: a free map names the nodes with free GPUs (leave the flag out when every GPU is free)", *opt.freeMap)
		}
		q.req.Free = planner.FreeMap{}
		keys := map[int]string{}
		for _, k := range slices.Sorted(maps.Keys(raw)) {
			v := raw[k]
			node, err := strconv.Atoi(k)
			if err != nil {
				return fmt.Errorf("--free-map: key %q is not a node index", k)
			}
			if other, ok := keys[node]; ok {
				return fmt.Errorf("--free-map: node %d is given twice (%q and %q)", node, other, k)
			}
			keys[node] = k
			// By the node named: the request's list is in another order.
			if node < 0 || node >= topology.MaxNodes {
				return fmt.Errorf("--free-map: node %d: must be between 0 and %d", node, topology.MaxNodes-1)
			}
			for i, g := range v {
				if g < 0 || g >= q.spec.GPUsPerNode {
					return fmt.Errorf("--free-map: node %d: GPU %d is not one of the node's %d GPUs (0 to %d)", node, g, q.spec.GPUsPerNode, q.spec.GPUsPerNode-1)
				}
				if slices.Contains(v[:i], g) {
					return fmt.Errorf("--free-map: node %d: GPU %d is listed twice", node, g)
				}
			}
			q.req.Free[node] = v
			if *opt.nodes > 0 && node >= *opt.nodes {
				return fmt.Errorf("--free-map: node %d is not in the %d-node cluster (--nodes)", node, *opt.nodes)
			}
			q.spec.Nodes = max(q.spec.Nodes, node+1)
		}
	}
	if *opt.exclude != "" {
		// What-if: these nodes are gone (failed, drained); the planner keeps the others.
		for _, f := range strings.Split(*opt.exclude, ",") {
			node, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return usagef("--exclude-nodes: %q is not a node index (an integer)", f)
			}
			if node < 0 || node >= q.spec.Nodes {
				return fmt.Errorf("--exclude-nodes: %q is not a node of the %d-node cluster", f, q.spec.Nodes)
			}
			// Refused here, by the flag, rather than by the API's exclude_nodes[i].
			if slices.Contains(q.req.ExcludeNodes, node) {
				return fmt.Errorf("--exclude-nodes: node %d is listed twice", node)
			}
			q.req.ExcludeNodes = append(q.req.ExcludeNodes, node)
		}
	}
	for _, v := range *opt.degradedNodes {
		d, err := parseDegradedNode(v, q.spec.Nodes)
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(q.req.DegradedNodes, func(o planner.DegradedNode) bool { return o.Node == d.Node }); i >= 0 {
			return fmt.Errorf("--degraded-node %q: node %d is also given by --degraded-node %q; give its parts in one, e.g. %d:nic=0.5,gpu=0.8",
				v, d.Node, (*opt.degradedNodes)[i], d.Node)
		}
		if slices.Contains(q.req.ExcludeNodes, d.Node) {
			return fmt.Errorf("--degraded-node %q: node %d is also excluded by --exclude-nodes: the job runs on no excluded node, so its degradation would change nothing", v, d.Node)
		}
		q.req.DegradedNodes = append(q.req.DegradedNodes, d)
	}
	cl, err := q.spec.Build()
	if err != nil {
		return fmt.Errorf("%s: %w", clusterSource(q.clusterLabel, *opt.clusterFile), err)
	}
	q.req.Cluster = cl
	return nil
}

// workload is the job's sizes, training, objective, what-ifs and constraints.
func (opt *planArgs) workload(q *planQuery) error {
	q.req.GPUs, q.req.MinGPUs, q.req.MaxGPUs = *opt.gpus, *opt.minGPUs, *opt.maxGPUs
	q.req.Training = step.Training{SeqLen: *opt.seq, GlobalBatch: *opt.gbs, Precision: step.Precision(strings.ToLower(*opt.precision)),
		UnfusedAttention: *opt.unfused, FlashAttention2: *opt.flash2, OnDemandGathers: *opt.onDemand, BackwardPrefetch: step.BackwardPrefetch(strings.ToLower(*opt.prefetch)), ParamGather: step.ParamGather(strings.ToLower(*opt.paramGather)),
		Framework: *opt.fw, FP8Recipe: step.FP8Recipe(strings.ToLower(*opt.fp8Recipe)), FP8Params: *opt.fp8Params, DPReduceAfterBackward: *opt.dpAfter,
		MoEImbalance: *opt.moeImb, MoECapacityFactor: *opt.moeCap}
	if err := opt.sw.apply(changed(opt.fs), &q.req.Training); err != nil {
		return err
	}
	if err := batchFlags(*opt.seq, *opt.gbs); err != nil {
		return err
	}
	q.req.Objective = planner.Objective(strings.ToLower(*opt.objective))
	if err := costFlags(string(q.req.Objective), *opt.price, *opt.tokens); err != nil {
		return err
	}
	q.req.PricePerGPUHour, q.req.TokenBudget, q.req.TopK, q.req.IncludeDominated = *opt.price, *opt.tokens, *opt.top, *opt.includeDominated
	q.req.SlowGPUSpeed, q.req.DegradedNICSpeed, q.req.DegradedLinkSpeed = *opt.slowGPU, *opt.degradedNIC, *opt.degradedLink
	if opt.fs.Changed("placement-tolerance") { // 0 given is a tolerance of 0, not the default
		q.req.PlacementTolerance = opt.placeTol
	}
	c := &q.req.Constraints
	c.MinHeadroomGB = *opt.headroom
	c.Offload = step.Offload(strings.ToLower(*opt.offload))
	c.TPAcrossNodes, c.UnevenPP, c.EvenSplit, c.MaxMicroBatch = *opt.tpAcross, *opt.unevenPP, *opt.evenSplit, *opt.maxMBS
	for flagName, dst := range map[string]*[]int{"tp": &c.TP, "pp": &c.PP, "cp": &c.CP, "zero": &c.ZeRO, "mbs": &c.MicroBatch, "ep": &c.EP, "vpp": &c.VirtualStages} {
		src := map[string]string{"tp": *opt.tpList, "pp": *opt.ppList, "cp": *opt.cpList, "zero": *opt.zeroList, "mbs": *opt.mbsList, "ep": *opt.epList, "vpp": *opt.vppList}[flagName]
		if src == "" {
			continue
		}
		for _, f := range strings.Split(src, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return usagef("--%s: %q is not an integer", flagName, f)
			}
			*dst = append(*dst, v)
		}
	}
	if *opt.rcList != "" {
		for _, f := range strings.Split(*opt.rcList, ",") {
			c.Recompute = append(c.Recompute, step.Recompute(strings.ToLower(strings.TrimSpace(f))))
		}
	}
	if *opt.schedList != "" {
		for _, f := range strings.Split(*opt.schedList, ",") {
			c.Schedules = append(c.Schedules, step.Schedule(strings.ToLower(strings.TrimSpace(f))))
		}
	}
	if err := onOffList("--sp", *opt.spList, &c.SP); err != nil {
		return err
	}
	if *opt.cpVariantList != "" {
		for _, f := range strings.Split(*opt.cpVariantList, ",") {
			switch strings.ToLower(strings.TrimSpace(f)) {
			case "ring":
				c.CPAllToAll = append(c.CPAllToAll, false)
			case "ulysses", "all-to-all":
				c.CPAllToAll = append(c.CPAllToAll, true)
			default:
				return fmt.Errorf("--cp-variant: %q is not ring or ulysses", f)
			}
		}
	}
	for _, l := range []struct {
		flag string
		list *string
		out  *[]bool
	}{{"--overlap-ep", opt.overlapEPList, &c.OverlapEP}, {"--fp8-weights", opt.fp8WeightsList, &c.FP8Params},
		{"--offload-activations", opt.offloadActsList, &c.OffloadActivations}, {"--experts-whole", opt.expertsWhole, &c.ExpertsWhole},
		{"--overlap-tp", opt.overlapTPList, &c.OverlapTP}} {
		if err := onOffList(l.flag, *l.list, l.out); err != nil {
			return err
		}
	}
	return nil
}

// onOffList appends to out each value of a flag's comma-separated list of on
// and off (true, false), in order; "" appends none.
func onOffList(flag, list string, out *[]bool) error {
	if list == "" {
		return nil
	}
	for _, f := range strings.Split(list, ",") {
		switch strings.ToLower(strings.TrimSpace(f)) {
		case "on", "true":
			*out = append(*out, true)
		case "off", "false":
			*out = append(*out, false)
		default:
			return fmt.Errorf("%s: %q is not on or off", flag, f)
		}
	}
	return nil
}

// request is the API's request for q, checked.
func (opt *planArgs) request(set map[string]bool, q *planQuery) (*pb.EstimatePlanRequest, error) {
	if *opt.addr != "" && *opt.svgOut != "" {
		return nil, errors.New("--svg: pictures are drawn in process; leave out --server (or ask the daemon's POST /v1/pictures:pareto)")
	}
	if *opt.svgOut == "-" && *opt.asJSON {
		return nil, errSVGAndJSON
	}
	if err := checkNames(q.req.Training, step.Layout{}, planFlags); err != nil {
		return nil, err
	}
	obj, ok := pbObjectives[q.req.Objective]
	if !ok {
		return nil, fmt.Errorf("--objective: must be step_time, throughput or cost (got %q)", *opt.objective)
	}
	name, params := opt.mf.source(set)
	pr := &pb.EstimatePlanRequest{Model: modelProto(q.req.Model, name, params), Cluster: clusterProto(*opt.clusterName, q.spec),
		Training: wire.TrainingToProto(q.req.Training), Gpus: int32(q.req.GPUs), MinGpus: int32(q.req.MinGPUs), MaxGpus: int32(q.req.MaxGPUs),
		Objective: obj, PricePerGpuHour: q.req.PricePerGPUHour, TokenBudget: q.req.TokenBudget, TopK: int32(q.req.TopK), IncludeDominated: q.req.IncludeDominated,
		SlowGpuSpeed: q.req.SlowGPUSpeed, DegradedNicSpeed: q.req.DegradedNICSpeed, DegradedLinkSpeed: q.req.DegradedLinkSpeed,
		PlacementTolerance: wire.PlacementToleranceToProto(q.req.PlacementTolerance), Constraints: wire.ConstraintsToProto(q.req.Constraints)}
	for _, n := range q.req.ExcludeNodes {
		pr.ExcludeNodes = append(pr.ExcludeNodes, int32(n))
	}
	pr.DegradedNodes = wire.DegradedNodesToProto(q.req.DegradedNodes)
	if *opt.clusterName == "" || *opt.nodes > 0 {
		pr.Cluster.Nodes = int32(q.spec.Nodes)
	}
	for node, gs := range q.req.Free {
		pr.Cluster.FreeGpus = append(pr.Cluster.FreeGpus, &pb.NodeFreeGPUs{Node: int32(node), Gpus: int32s(gs)})
	}
	sort.Slice(pr.Cluster.FreeGpus, func(i, j int) bool { return pr.Cluster.FreeGpus[i].Node < pr.Cluster.FreeGpus[j].Node })

	return pr, nil
}

// answer asks in process or the --server daemon, and prints the answer.
func (opt *planArgs) answer(ctx context.Context, pr *pb.EstimatePlanRequest, q *planQuery, stdout io.Writer) error {
	var resp *pb.EstimatePlanResponse
	if *opt.addr != "" {
		svc, done, err := connect(*opt.addr, opt.sec)
		if err != nil {
			return err
		}
		defer done()
		if resp, err = svc.EstimatePlan(ctx, pr); err != nil {
			return flagged(err, planFlags)
		}
	} else {
		var res planner.Result
		var err error
		if resp, res, err = newLocal().plan(ctx, pr); err != nil {
			return flagged(err, planFlags)
		}
		if *opt.svgOut != "" && len(res.Top) > 0 {
			if err := writeSVG(*opt.svgOut, planPicture(res, q.req.Model.Name+" on "+q.clusterLabel), stdout); err != nil {
				return err
			}
			if *opt.svgOut == "-" {
				return nil
			}
		}
	}
	if *opt.asJSON {
		if err := printProtoJSON(stdout, resp); err != nil {
			return err
		}
		if len(resp.GetPlans()) == 0 {
			return noPlan(resp)
		}
		return nil
	}
	printPlans(stdout, resp, fmt.Sprintf("%s on %s: seq %d, global batch %d, %s; objective %s",
		q.req.Model.Name, q.clusterLabel, *opt.seq, *opt.gbs, q.req.Training.Precision, q.req.Objective), q.req.TokenBudget, q.req.Objective == planner.Throughput)
	if len(resp.GetPlans()) == 0 {
		return noPlan(resp)
	}
	return nil
}

var pbObjectives = map[planner.Objective]pb.Objective{planner.FastestStep: pb.Objective_OBJECTIVE_STEP_TIME,
	planner.Throughput: pb.Objective_OBJECTIVE_THROUGHPUT, planner.Cost: pb.Objective_OBJECTIVE_COST}

// planFlags names the flag of each request field of plan.
var planFlags = map[string]string{"gpus": "--gpus", "min_gpus": "--min-gpus", "max_gpus": "--max-gpus", "objective": "--objective",
	"price_per_gpu_hour": "--price", "token_budget": "--tokens", "top_k": "--top", "training.seq_len": "--seq", "training.global_batch": "--gbs",
	"training.precision": "--precision", "training.zero3_backward_prefetch": "--zero3-backward-prefetch", "training.param_gather": "--param-gather", "training.fp8_recipe": "--fp8-recipe", "training.fp8_params": "--fp8-params",
	"training.moe_imbalance": "--moe-imbalance", "training.moe_capacity_factor": "--moe-capacity", "training.framework": "--framework",
	"training.fp8_activations": "--fp8-activations", "training.fp8_kv_projections_16bit": "--fp8-kv-16bit", "training.no_dropout": "--no-dropout", "training.moe_pad_to_capacity": "--moe-pad-to-capacity",
	"training.moe_dispatcher": "--moe-dispatcher", "training.moe_permute_fusion": "--moe-permute-fusion", "training.moe_router_fp32": "--moe-router-fp32", "training.moe_grouped_gemm": "--moe-grouped-gemm", "training.cuda_graphs": "--cuda-graphs", "training.cp_nccl_max_ctas": "--cp-nccl-max-ctas", "training.dp_nccl_max_ctas": "--dp-nccl-max-ctas", "training.tp_nccl_max_ctas": "--tp-nccl-max-ctas", "training.cuda_device_max_connections": "--cuda-device-max-connections", "training.dp_bucket_params": "--dp-bucket-params",
	"training.unfused_attention": "--unfused-attention", "training.flash_attention_2": "--flash-attention-2", "training.zero3_on_demand_gathers": "--zero3-on-demand",
	"training.dp_reduce_after_backward": "--dp-reduce-after-backward", "constraints.recompute": "--recompute", "constraints.schedules": "--schedule", "constraints.sp": "--sp", "constraints.overlap_tp": "--overlap-tp", "constraints.overlap_ep": "--overlap-ep", "constraints.cp_all_to_all": "--cp-variant", "constraints.fp8_params": "--fp8-weights", "constraints.offload_activations": "--offload-activations", "constraints.experts_whole": "--experts-whole", "constraints.even_split": "--even-split", "constraints.uneven_pp": "--uneven-pp", "constraints.tp_across_nodes": "--tp-across-nodes", "constraints.tp": "--tp", "constraints.pp": "--pp", "constraints.cp": "--cp", "constraints.ep": "--ep",
	"constraints.zero": "--zero", "constraints.micro_batch": "--mbs", "constraints.virtual_stages": "--vpp", "constraints.min_headroom_gb": "--min-headroom",
	"constraints.max_micro_batch": "--max-mbs", "constraints.offload": "--offload", "exclude_nodes": "--exclude-nodes", "degraded_nodes": "--degraded-node", "cluster.free_gpus": "--free-map", "cluster.nodes": "--nodes",
	"slow_gpu_speed": "--slow-gpu", "degraded_nic_speed": "--degraded-nic", "degraded_link_speed": "--degraded-link", "placement_tolerance": "--placement-tolerance"}

// pinValues are the values of the switch flags of plan by the API's (a
// constraint list of booleans): what each flag takes for true and for false
// (onOffFlag's on and off, cpVariantFlag's ulysses and ring).
var pinValues = map[string]map[string]string{
	"constraints.sp": onOff, "constraints.overlap_tp": onOff, "constraints.overlap_ep": onOff, "constraints.fp8_params": onOff,
	"constraints.offload_activations": onOff, "constraints.experts_whole": onOff,
	"constraints.cp_all_to_all": {"true": "ulysses", "false": "ring"},
}

var onOff = map[string]string{"true": "on", "false": "off"}

// boolPinList is a switch's constraint list as a no-plan reason quotes it
// ("constraints.cp_all_to_all [true]"), the API's values.
var boolPinList = regexp.MustCompile(`constraints\.(sp|overlap_tp|overlap_ep|cp_all_to_all|experts_whole|fp8_params|offload_activations) \[((?:true|false)(?: (?:true|false))*)\]`)

// printPlans prints a search's answer for people: the top plans and the Pareto front.
func printPlans(w io.Writer, resp *pb.EstimatePlanResponse, title string, tokens float64, throughput bool) {
	fmt.Fprintln(w, title)
	st := resp.GetStats()
	pruned := map[string]int{}
	for k, v := range st.GetPruned() {
		pruned[k] = int(v)
	}
	printWrapped(w, "", fmt.Sprintf("searched %d layouts over %d job size(s): %d estimated, %d feasible; pruned: %s",
		st.GetEnumerated(), len(st.GetGpuCounts()), st.GetEvaluated(), st.GetFeasible(), prunedSummary(pruned)), false)
	fmt.Fprintln(w)
	if len(resp.GetPlans()) == 0 {
		return
	}
	// The step's parts, as estimate's breakdown has them, so that they add up to
	// the step: the optimizer step and the comm/compute contention were missing,
	// 0.76 s of a 7.69 s step with the optimizer offloaded.
	t := table{head: []string{"#", "gpus", "layout", "nodes", "step", "compute", "exposed comm", "bubble", "optimizer", "contention", "memory GB", "MFU"},
		optional: []string{"contention", "optimizer", "compute", "bubble", "exposed comm", "nodes"}, wrap: "layout"}
	// With a token budget: how long each plan takes to train it, and with a price
	// what it costs (the service's cost_usd: GPUs × hours × price).
	withCost := false
	for _, p := range resp.GetPlans() {
		withCost = withCost || p.GetCostUsd() > 0
	}
	// Under the throughput objective, the tokens/s per GPU ranked by, as the
	// cost objective shows the cost: the table showed only the step time, which
	// a plan on more GPUs ranked below may beat.
	if throughput {
		t.head = slices.Insert(t.head, 5, "tokens/s/GPU")
	}
	if tokens > 0 {
		t.head = append(t.head, "duration")
	}
	if withCost {
		t.head = append(t.head, "cost")
	}
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
			fmtSeconds(b.GetOptimizerS()), fmtSeconds(b.GetContentionS()),
			fmt.Sprintf("%.1f/%.0f", e.GetMemory().GetTotalGb(), e.GetMemory().GetCapacityGb()), fmt.Sprintf("%.1f%%", 100*e.GetThroughput().GetMfu()))
		row := &t.rows[len(t.rows)-1]
		if throughput {
			*row = slices.Insert(*row, 5, fmt.Sprintf("%.0f", e.GetThroughput().GetTokensPerSPerGpu()))
		}
		if tokens > 0 {
			d := "-"
			if tps := e.GetThroughput().GetTokensPerS(); tps > 0 {
				d = fmtDuration(tokens / tps)
			}
			*row = append(*row, d)
		}
		if withCost {
			*row = append(*row, fmt.Sprintf("$%.0f", p.GetCostUsd()))
		}
	}
	t.write(w)
	// The warnings of the search as a whole: those every plan carries.
	for _, x := range resp.GetPlans()[0].GetEstimate().GetWarnings() {
		if !slices.ContainsFunc(resp.GetPlans(), func(p *pb.Plan) bool { return !slices.Contains(p.GetEstimate().GetWarnings(), x) }) {
			fmt.Fprintln(w)
			// In the flags' words, as a no-plan reason is: "--schedule:
			// [interleaved] pinned: … --pp above 1 …".
			printWrapped(w, "warning: ", flaggedWarning(reasonAsFlags(wire.CommandLineSpelling(x)), planFlags), true)
		}
	}
	if c := resp.GetPlans()[0].GetCostUsd(); c > 0 {
		fmt.Fprintf(w, "\nbest plan trains %.3g tokens for $%.0f\n", tokens, c)
	}
	fmt.Fprintf(w, "\nPareto front (GPUs × step time × memory headroom): %d plans\n", len(resp.GetPareto()))
	pt := table{head: []string{"gpus", "layout", "step", "headroom GB"}, wrap: "layout"}
	for _, p := range resp.GetPareto() {
		pt.add(fmt.Sprint(p.GetGpus()), layoutOf(p.GetLayout()), fmtSeconds(p.GetEstimate().GetStepTimeS()), fmt.Sprintf("%.1f", p.GetEstimate().GetMemory().GetHeadroomGb()))
	}
	pt.write(w)
}

// fmtDuration prints a training run's length: minutes, hours or days.
func fmtDuration(s float64) string {
	switch {
	case s >= 86400:
		return fmt.Sprintf("%.1f days", s/86400)
	case s >= 3600:
		return fmt.Sprintf("%.1f h", s/3600)
	}
	return fmt.Sprintf("%.1f min", s/60)
}

// costFlags refuses the cost objective without a price and a token budget, and a
// price without a budget (it prices the budget), by the flags that give them (the request's rule names its fields, price_per_gpu_hour
// and token_budget, which no flag is called).
func costFlags(objective string, price, tokens float64) error {
	if strings.EqualFold(objective, string(planner.Cost)) && (!(price > 0) || !(tokens > 0)) {
		return fmt.Errorf("--objective cost: needs --price (per GPU-hour) and --tokens (the budget to train) above 0 (got --price %v, --tokens %v)", price, tokens)
	}
	if price > 0 && !(tokens > 0) {
		return fmt.Errorf("--price %v: prices the token budget, and --tokens is 0: give the tokens to train", price)
	}
	return nil
}

// batchFlags refuses a sequence length or global batch below 1 by its flag: 0
// (not given) as required, a negative one with its value.
func batchFlags(seq, gbs int) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"seq", seq}, {"gbs", gbs}} {
		switch {
		case f.v == 0:
			return fmt.Errorf("--%s: required, at least 1 (got 0)", f.name)
		case f.v < 0:
			return fmt.Errorf("--%s: must be at least 1 (got %d)", f.name, f.v)
		}
	}
	return nil
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
	if d := p.GetDegradedNodesUsed(); len(d) > 0 {
		out.DegradedUsed = wire.ToInts(d)
	}
	if d := p.GetDegradedNodesAvoided(); len(d) > 0 {
		out.DegradedAvoided = wire.ToInts(d)
	}
	return out
}

// parseDegradedNode reads one --degraded-node, NODE:PART=SPEED[,PART=SPEED], on a
// cluster of nodes nodes; the speeds' ranges are the planner's to check. A value
// not of the flag's form is a usage error (exit 2), a node outside the cluster a
// failure (exit 1).
func parseDegradedNode(v string, nodes int) (planner.DegradedNode, error) {
	bad := func(format string, args ...any) (planner.DegradedNode, error) {
		return planner.DegradedNode{}, usagef("--degraded-node %q: "+format, append([]any{v}, args...)...)
	}
	head, parts, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(parts) == "" {
		return bad("give NODE:PART=SPEED, e.g. 5:nic=0.25 (PART gpu, nic or link)")
	}
	var d planner.DegradedNode
	var err error
	if d.Node, err = strconv.Atoi(strings.TrimSpace(head)); err != nil {
		return bad("%q is not a node index (an integer)", head)
	}
	if d.Node < 0 || d.Node >= nodes {
		return planner.DegradedNode{}, fmt.Errorf("--degraded-node %q: %q is not a node of the %d-node cluster", v, head, nodes)
	}
	seen := map[string]bool{}
	for _, f := range strings.Split(parts, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(f), "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok {
			return bad("%q is not PART=SPEED", f)
		}
		speed, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return bad("%s: %q is not a number", name, val)
		}
		var dst *float64
		switch name {
		case "gpu":
			dst = &d.GPUSpeed
		case "nic":
			dst = &d.NICSpeed
		case "link":
			dst = &d.LinkSpeed
		default:
			return bad("%q is not a part: gpu, nic or link", name)
		}
		if seen[name] {
			return bad("%s is given twice", name)
		}
		seen[name] = true
		*dst = speed
	}
	return d, nil
}

// freeMapTypeError is err, of decoding a free map from data, in the flag's words
// at the line it is on: a value of the wrong type named by its node ('line 2:
// node "1": 1.5 is not a GPU index'), not by Go's types.
func freeMapTypeError(data []byte, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("want {\"node\": [local GPUs], …}: %w", err)
	}
	lineAt := func(at int64) int { return 1 + bytes.Count(data[:min(max(at, 0), int64(len(data)))], []byte("\n")) }
	what := func(te *json.UnmarshalTypeError) string {
		if n, ok := strings.CutPrefix(te.Value, "number "); ok {
			return n
		}
		if w, ok := map[string]string{"string": "a string", "bool": "a boolean", "array": "an array", "object": "an object"}[te.Value]; ok {
			return w
		}
		return te.Value
	}
	// encoding/json names no map key: find the node by decoding each in turn.
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return fmt.Errorf("line %d: want {\"node\": [local GPUs], …}, not %s", lineAt(te.Offset), what(te))
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			break
		}
		at := dec.InputOffset()
		var v []int
		var e *json.UnmarshalTypeError
		if err := dec.Decode(&v); errors.As(err, &e) {
			if e.Type.Kind() == reflect.Slice {
				return fmt.Errorf("line %d: node %q: %s is not a list of GPU indices, e.g. [0, 1, 2, 3]", lineAt(at), k, what(e))
			}
			return fmt.Errorf("line %d: node %q: %s is not a GPU index (an integer)", lineAt(at), k, what(e))
		} else if err != nil {
			break
		}
	}
	return fmt.Errorf("line %d: want {\"node\": [local GPUs], …}: %s is not of its types", lineAt(te.Offset), what(te))
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
	if len(l.RecomputeModules) > 0 {
		s += "[" + strings.Join(l.RecomputeModules, ",") + "]"
	}
	if l.SP {
		s += " sp"
	}
	if l.PP > 1 {
		s += " " + string(l.Schedule)
		if l.VirtualStages > 1 && l.Schedule != step.ZeroBubbleV {
			s += fmt.Sprintf("×%d", l.VirtualStages)
		}
	}
	if l.ETP >= 1 && l.ETP < l.TP {
		s += fmt.Sprintf(" etp%d", l.ETP)
	}
	if l.OverlapTP && l.TP > 1 {
		s += " tp-overlap"
	}
	if l.OverlapEP && l.EP > 1 {
		s += " ep-overlap"
	}
	if l.CPAllToAll && l.CP > 1 {
		s += " ulysses"
	}
	if l.Offload != "" && l.Offload != step.OffloadNone {
		s += " offload-" + string(l.Offload)
	}
	if l.OffloadActivations {
		s += " offload-activations"
	}
	if l.FP8Params {
		s += " fp8-weights"
	}
	if r := splitRuns(l.LayerSplit, ","); r != "" {
		s += " layers " + r
	}
	return s
}

// splitRuns is an uneven layer split in runs, stage by stage (model chunk by
// chunk when interleaved): [3 4 4 4 3 3] is "3,4×3,3×2"; an even or absent split
// is "", nothing to add to the stages' count.
func splitRuns(split []int, sep string) string {
	if len(split) < 2 || !slices.ContainsFunc(split, func(n int) bool { return n != split[0] }) {
		return ""
	}
	var runs []string
	for i := 0; i < len(split); {
		j := i
		for j < len(split) && split[j] == split[i] {
			j++
		}
		if j-i > 1 {
			runs = append(runs, fmt.Sprintf("%d×%d", split[i], j-i))
		} else {
			runs = append(runs, strconv.Itoa(split[i]))
		}
		i = j
	}
	return strings.Join(runs, sep)
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
	var s string
	switch {
	case whole && len(p.Nodes) == 1:
		s = fmt.Sprintf("node %d (%d GPUs)", p.Nodes[0].Node, len(p.Nodes[0].GPUs))
	case whole:
		s = fmt.Sprintf("nodes %d–%d", p.Nodes[0].Node, p.Nodes[len(p.Nodes)-1].Node)
	default:
		var parts []string
		for i, u := range p.Nodes {
			if i == 4 {
				parts = append(parts, fmt.Sprintf("+%d nodes", len(p.Nodes)-4))
				break
			}
			parts = append(parts, fmt.Sprintf("n%d:%d-%d", u.Node, u.GPUs[0], u.GPUs[len(u.GPUs)-1]))
		}
		s = strings.Join(parts, " ")
	}
	if len(p.DegradedUsed) > 0 {
		s += fmt.Sprintf(" (uses degraded %s)", nodeList(p.DegradedUsed))
	}
	if len(p.DegradedAvoided) > 0 {
		s += fmt.Sprintf(" (avoids degraded %s)", nodeList(p.DegradedAvoided))
	}
	return s
}

// nodeList is "n3" or "n3,n7".
func nodeList(nodes []int) string {
	s := make([]string, len(nodes))
	for i, n := range nodes {
		s[i] = fmt.Sprintf("n%d", n)
	}
	return strings.Join(s, ",")
}

func prunedSummary(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s%c%d", k, glue, m[k])) // wrapped as one word
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

// errNoPlan is the failure of a search that found no feasible plan (exit code 1)
// when the answer does not say why.
var errNoPlan = errors.New("no feasible plan: every layout was pruned (see the counts above)")

// noPlan is the failure of a search that found no feasible plan, with the
// answer's reason.
func noPlan(resp *pb.EstimatePlanResponse) error {
	if r := resp.GetNoPlanReason(); r != "" {
		return errors.New(reasonAsFlags(wire.CommandLineSpelling(r)))
	}
	return errNoPlan
}

// reasonAsFlags is a search's no_plan_reason with the request's paths it names
// ("constraints.tp [3]", "(constraints.offload)") spelled as the flags that set
// them ("--tp [3]"), as the command's other errors are; --json keeps the API's.
// Longer paths first: constraints.tp_across_nodes before constraints.tp.
func reasonAsFlags(r string) string {
	r = boolPinList.ReplaceAllStringFunc(r, func(m string) string {
		sub := boolPinList.FindStringSubmatch(m)
		field := "constraints." + sub[1]
		vals := strings.Fields(sub[2])
		for i, v := range vals {
			if s, ok := pinValues[field][v]; ok {
				vals[i] = s
			}
		}
		return planFlags[field] + " " + strings.Join(vals, ",")
	})
	var paths []string
	for p := range planFlags {
		if strings.Contains(p, ".") {
			paths = append(paths, p)
		}
	}
	slices.SortFunc(paths, func(a, b string) int { return len(b) - len(a) })
	for _, p := range paths {
		f := planFlags[p]
		r = strings.ReplaceAll(r, p+", "+f, f) // "(cluster.nodes, --nodes)"
		r = strings.ReplaceAll(r, p, f)
	}
	return r
}
