package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
	"github.com/stepcost/stepcost/internal/jsonreq"
	"github.com/stepcost/stepcost/internal/wire"
	"github.com/stepcost/stepcost/picture"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// estimateArgs are estimate's flags.
type estimateArgs struct {
	in              *string
	mf              *modelFlags
	clusterName     *string
	clusterFile     *string
	gpus            *int
	tp              *int
	pp              *int
	dp              *int
	cp              *int
	ep              *int
	zero            *int
	mbs             *int
	gbs             *int
	gbt             *int
	gradDType       *string
	moeImb          *float64
	moeCap          *float64
	slowGPU         *float64
	degradedNIC     *float64
	degradedLink    *float64
	split           *string
	overlapEP       *bool
	etp             *int
	offload         *string
	acctEmb         *bool
	acctLoss        *bool
	cpA2A           *bool
	seq             *int
	recompute       *string
	recomputeLayers *int
	recomputeMods   *string
	overlapShared   *bool
	offloadActs     *bool
	sw              *trainingSwitches
	sp              *bool
	schedule        *string
	vpp             *int
	precision       *string
	order           *string
	overlapTP       *bool
	unfused         *bool
	flash2          *bool
	prefetch        *string
	paramGather     *string
	fw              *string
	dpAfter         *bool
	fp8Params       *bool
	fp8Recipe       *string
	onDemand        *bool
	asJSON          *bool
	svgOut          *string
	addr            *string
	sec             *remoteSecurity
}

// estimateQuery is what estimate asks, as the flags and the --in file give it.
type estimateQuery struct {
	req                 step.Request
	file                pb.EstimateStepRequest // the --in file
	arch                model.Arch
	derived             string  // how a shape was derived from a parameter count
	modelName           string  // the model by catalog name, if so
	modelParams         float64 // or by parameter count
	spec                topology.Spec
	clusterLabel, cname string            // the cluster's name, and its catalog name if so
	fileCluster         bool              // the cluster is the --in file's, sent as it is
	flags               map[string]string // the request's fields by what gave them (fieldFlags)
}

func newEstimateFlags(fs *pflag.FlagSet) *estimateArgs {
	opt := &estimateArgs{}
	opt.in = fs.String("in", "", "read the whole request from a JSON file, an EstimateStepRequest as the REST API takes it (flags given too override it); - for standard input")
	opt.mf = addModelFlags(fs)
	opt.clusterName = fs.String("cluster", "", "catalog system, e.g. dgx-h100")
	opt.clusterFile = fs.String("cluster-file", "", "cluster description file (JSON or YAML)")
	opt.gpus = fs.Int("gpus", 0, "GPUs of the job (default tp×pp×dp×cp)")
	opt.tp = fs.Int("tp", 1, "tensor parallelism")
	opt.pp = fs.Int("pp", 1, "pipeline parallelism")
	opt.dp = fs.Int("dp", 0, "data parallelism (default gpus/(tp×pp×cp))")
	opt.cp = fs.Int("cp", 1, "context parallelism")
	opt.ep = fs.Int("ep", 1, "expert parallelism (MoE): the experts spread over this many ranks of a stage, folded over its tp×cp×dp ranks, so it may exceed --dp (--etp × --ep divides tp×cp×dp)")
	opt.zero = fs.Int("zero", 0, "ZeRO stage 0–3 (3 = FSDP full shard)")
	opt.mbs = fs.Int("mbs", 1, "micro-batch size (sequences)")
	opt.gbs = fs.Int("gbs", 0, "global batch (sequences)")
	opt.gbt = fs.Int("global-tokens", 0, "global batch in tokens instead of --gbs (a multiple of --seq)")
	opt.gradDType = enumFlag(fs, "grad-dtype", "", "gradient format: bf16 (2 bytes, default) or fp32 (4 bytes, also how they are reduced)", gradDTypeNames)
	opt.moeImb = fs.Float64("moe-imbalance", 0, "MoE router imbalance: the busiest expert-parallel rank's tokens over the mean (≥ 1; 0: balanced)")
	opt.moeCap = fs.Float64("moe-capacity", 0, "MoE capacity factor: tokens an expert takes over the mean, the rest dropped (0: dropless)")
	opt.slowGPU = fs.Float64("slow-gpu", 0, "what-if: one GPU computes at this fraction of its speed, e.g. 0.8 (0: none)")
	opt.degradedNIC = fs.Float64("degraded-nic", 0, "what-if: one node's NICs run at this fraction of their bandwidth, e.g. 0.5 (0: none)")
	opt.degradedLink = fs.Float64("degraded-link", 0, "what-if: one GPU's NVLink/PCIe link runs at this fraction of its bandwidth (0: none)")
	opt.split = fs.String("layer-split", "", "layers of each model chunk (chunk c of pipeline rank s is entry c·pp+s), e.g. 3,4,4,…,3 (default: even, or counting the embedding/loss when that divides)")
	opt.overlapEP = fs.Bool("overlap-ep", false, "hide the expert-parallel all-to-alls under another micro-batch's compute (dualpipe always does)")
	opt.etp = fs.Int("etp", 0, "expert tensor parallelism, 1 to --tp: the ranks splitting each expert (below --tp needs --sp; 1 keeps experts whole); 0 or --tp splits them like the MLP")
	opt.overlapShared = fs.Bool("overlap-shared-expert", false, "run the shared experts under the same micro-batch's dispatch and combine all-to-alls (Megatron-Core's --moe-shared-expert-overlap)")
	opt.offload = enumFlag(fs, "offload", "", "keep state in host memory, optimizer on the CPU: none, optimizer (zero ≥ 1) or params (zero 3)", offloadNames)
	opt.offloadActs = fs.Bool("offload-activations", false, "copy each layer's saved activations to host memory and back under the compute (Megatron-Core's fine-grained activation offloading; 1F1B or interleaved)")
	opt.acctEmb = fs.Bool("account-embedding", false, "pipeline split counts the embedding as a layer of the first chunk (Megatron's --account-for-embedding-in-pipeline-split)")
	opt.acctLoss = fs.Bool("account-loss", false, "pipeline split counts the output layer and loss as a layer of the last chunk (--account-for-loss-in-pipeline-split)")
	opt.cpA2A = fs.Bool("cp-all-to-all", false, "context parallelism with all-to-alls (DeepSpeed-Ulysses) instead of ring attention")
	opt.seq = fs.Int("seq", 0, "sequence length (tokens)")
	opt.recompute = enumFlag(fs, "recompute", "none", "activation recomputation: none, selective (attention core), ops (op-level: every second matmul and the memory-bound ops), full", recomputeNames)
	opt.recomputeLayers = fs.Int("recompute-layers", 0, "with --recompute full: recompute only this many layers per pipeline stage (0: all)")
	opt.recomputeMods = enumListFlag(fs, "recompute-modules", "", "with --recompute selective: the modules recomputed, comma-separated, of "+strings.Join(step.RecomputeModuleNames(), ", ")+" (Megatron-Core's --recompute-modules; default core_attn)", step.RecomputeModuleNames())
	opt.sp = fs.Bool("sp", false, "sequence parallelism (with tp > 1)")
	opt.schedule = enumFlag(fs, "schedule", "", "pipeline schedule: gpipe, 1f1b, interleaved, zb-h1, zb-v or dualpipe (default 1f1b, interleaved with --vpp > 1)", scheduleNames)
	opt.vpp = fs.Int("vpp", 1, "interleaving depth: model chunks per pipeline rank")
	opt.precision = enumFlag(fs, "precision", "bf16", "matmul precision: bf16, fp16, fp8", precisionNames)
	opt.order = fs.String("rank-order", "", "rank order, fastest first (default tp-cp-ep-dp-pp)")
	opt.overlapTP = fs.Bool("overlap-tp", false, "overlap TP communication with compute (async TP)")
	opt.unfused = fs.Bool("unfused-attention", false, "materialised attention scores (no flash attention)")
	opt.flash2 = fs.Bool("flash-attention-2", false, "flash-attn 2 instead of the framework's Hopper-native fused attention (Transformer Engine with NVTE_FUSED_ATTN=0)")
	opt.prefetch = enumFlag(fs, "zero3-backward-prefetch", "", "when ZeRO-3 gathers the next layer's weights backward: pre (FSDP default), post (Composer default), none (default: the framework's)", prefetchNames)
	opt.fw = frameworkFlag(fs, "training framework whose defaults fill what is not given: "+strings.Join(framework.Names(), ", ")+" (default megatron-core)")
	opt.dpAfter = fs.Bool("dp-reduce-after-backward", false, "data-parallel gradients reduced after the backward pass, none hidden (DeepSpeed's engine; default: the framework's)")
	opt.fp8Params = fs.Bool("fp8-params", false, "with --precision fp8: store the layers' matmul weights in fp8 (1 B) instead of 16 bits, with only fp8 transposes besides; ZeRO-3 gathers and the parameter all-gather send fp8 (Transformer Engine fp8_model_init, NeMo fp8_params)")
	opt.fp8Recipe = enumFlag(fs, "fp8-recipe", "", "with --precision fp8: delayed (Transformer Engine's default: scales from the amax history, weights cast once per step), current (torchao tensorwise: an amax pass before every cast, weights cast every forward), rowwise (torchao rowwise: per-row scales along each axis, the column-wise casts at a third of the bandwidth, the backward GEMMs' outputs rescaled in place), mxfp8 (32-element blocks with E8M0 scales; Blackwell only) or blockwise (DeepSeek-V3's 1×128 activation tiles and 128×128 weight blocks, scales found in the cast, weights cast once per step); default: the framework's", fp8RecipeNames)
	opt.sw = addTrainingSwitches(fs)
	opt.paramGather = enumFlag(fs, "param-gather", "", "when ZeRO-1/2 all-gathers the updated parameters: exposed (after the optimizer, waited for; Megatron-LM's default) or overlapped (bucket by bucket under the next forward: Megatron-Core's --overlap-param-gather, NeMo's recipes); default: exposed", paramGatherNames)
	opt.onDemand = fs.Bool("zero3-on-demand", false, "ZeRO-3 gathers each module's weights when it runs, without prefetching (DeepSpeed ZeRO-3 of 2021)")
	opt.asJSON = fs.Bool("json", false, "print JSON")
	opt.svgOut = fs.String("svg", "", svgFlagHelp+": the pipeline schedule above the step's breakdown")
	opt.addr = fs.String("server", "", "ask a running stepcostd (host:port) instead of estimating in process")
	opt.sec = remoteSecurityFlags(fs)
	return opt
}

func estimateCommand(fs *pflag.FlagSet) runFunc {
	opt := newEstimateFlags(fs)
	return func(ctx context.Context, _ []string, stdout, _ io.Writer) error {
		return opt.run(ctx, changed(fs), stdout)
	}
}

func (opt *estimateArgs) run(ctx context.Context, set map[string]bool, stdout io.Writer) error {
	q := &estimateQuery{}
	for _, fill := range []func(map[string]bool, *estimateQuery) error{opt.readFile, opt.model, opt.cluster, opt.override, opt.size} {
		if err := fill(set, q); err != nil {
			return err
		}
	}
	pr, err := opt.request(set, q)
	if err != nil {
		return err
	}
	return opt.answer(ctx, pr, q, stdout)
}

// readFile reads the --in file, the API's EstimateStepRequest.
func (opt *estimateArgs) readFile(_ map[string]bool, q *estimateQuery) error {
	if *opt.in != "" {
		data, err := readFileOrStdin(*opt.in)
		if err != nil {
			return fmt.Errorf("--in: %w", err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return emptyInput(*opt.in, "an EstimateStepRequest as JSON")
		}
		// Decoded as the REST gateway decodes a body: an error names the field
		// at fault by its path in the request.
		if err := jsonreq.Unmarshal(protojson.UnmarshalOptions{}, data, &q.file); err != nil {
			return fmt.Errorf("--in %s: want an EstimateStepRequest as JSON: %w", *opt.in, err)
		}
		// The service's bound on every string, before a name is looked up (an
		// unknown one is quoted whole): the answer with --server or without.
		if err := wire.CheckText(&q.file); err != nil {
			return fmt.Errorf("--in: %w", err)
		}
		if q.file.GetTraining() != nil {
			if q.req.Training, err = wire.TrainingFromProto(q.file.GetTraining()); err != nil {
				return fmt.Errorf("--in: %w", err)
			}
		}
		if q.file.GetLayout() != nil {
			if q.req.Layout, err = wire.LayoutFromProto(q.file.GetLayout()); err != nil {
				return fmt.Errorf("--in: %w", err)
			}
		}
		q.req.SlowGPUSpeed, q.req.DegradedNICSpeed, q.req.DegradedLinkSpeed = q.file.GetSlowGpuSpeed(), q.file.GetDegradedNicSpeed(), q.file.GetDegradedLinkSpeed()
	}

	return nil
}

// model is the model: a name, a file, an architecture or a parameter count,
// exactly one; else the --in file's.
func (opt *estimateArgs) model(set map[string]bool, q *estimateQuery) error {
	q.modelName, q.modelParams = "", 0.0
	a, why, err := opt.mf.resolve(set)
	switch {
	case err == nil:
		q.arch, q.derived = a, why
		q.modelName, q.modelParams = opt.mf.source(set)
	case !errors.Is(err, errNoModel):
		return err
	case q.file.GetModel() != nil:
		a, why, err := wire.ResolveModel("model", q.file.GetModel())
		if err != nil {
			return fmt.Errorf("--in: %w", err)
		}
		q.arch, q.derived = a, why
		q.modelName, q.modelParams = q.file.GetModel().GetName(), q.file.GetModel().GetParams()
	default:
		return err
	}

	return nil
}

// cluster is the cluster: --cluster or --cluster-file, else the --in file's.
func (opt *estimateArgs) cluster(set map[string]bool, q *estimateQuery) error {
	switch {
	case set["cluster"] || set["cluster-file"]:
		s, name, err := loadCluster(*opt.clusterName, *opt.clusterFile)
		if err != nil {
			return err
		}
		q.spec, q.clusterLabel = s, name
		if set["cluster"] {
			q.cname = *opt.clusterName
		}
	case q.file.GetCluster() != nil:
		s, err := wire.ClusterSpec("cluster", q.file.GetCluster())
		if err != nil {
			return fmt.Errorf("--in: %w", err)
		}
		if n := int(q.file.GetCluster().GetNodes()); n > 0 {
			s.Nodes = n
		}
		q.spec, q.clusterLabel, q.cname = s, s.Name, q.file.GetCluster().GetName()
		q.fileCluster = true
	default:
		return errors.New("--cluster or --cluster-file: required (see 'stepcost catalog')")
	}

	return nil
}

// override sets the training and the layout from the flags given, over the
// --in file's.
func (opt *estimateArgs) override(set map[string]bool, q *estimateQuery) error {
	// Training and layout: flags override the q.file.
	t, l := &q.req.Training, &q.req.Layout
	overrideInt := func(name string, dst *int, v int) {
		if set[name] || *dst == 0 {
			*dst = v
		}
	}
	overrideInt("seq", &t.SeqLen, *opt.seq)
	overrideInt("gbs", &t.GlobalBatch, *opt.gbs)
	overrideInt("tp", &l.TP, *opt.tp)
	overrideInt("pp", &l.PP, *opt.pp)
	overrideInt("cp", &l.CP, *opt.cp)
	overrideInt("ep", &l.EP, *opt.ep)
	overrideInt("mbs", &l.MicroBatch, *opt.mbs)
	overrideInt("vpp", &l.VirtualStages, *opt.vpp)
	if set["dp"] || l.DP == 0 {
		l.DP = *opt.dp
	}
	if set["zero"] {
		l.ZeRO = *opt.zero
	}
	if set["recompute"] || l.Recompute == "" {
		l.Recompute = step.Recompute(strings.ToLower(*opt.recompute))
	}
	if set["recompute-layers"] {
		l.RecomputeLayers = *opt.recomputeLayers
	}
	if set["recompute-modules"] {
		l.RecomputeModules = splitList(*opt.recomputeMods)
	}
	if set["overlap-shared-expert"] {
		l.OverlapSharedExpert = *opt.overlapShared
	}
	if err := opt.sw.apply(set, t); err != nil {
		return err
	}
	if set["sp"] {
		l.SP = *opt.sp
	}
	if set["schedule"] {
		l.Schedule = step.Schedule(strings.ToLower(*opt.schedule))
	}
	if set["precision"] || t.Precision == "" {
		t.Precision = step.Precision(strings.ToLower(*opt.precision))
	}
	if set["rank-order"] {
		l.RankOrder = *opt.order
	}
	if set["overlap-tp"] {
		l.OverlapTP = *opt.overlapTP
	}
	if set["unfused-attention"] {
		t.UnfusedAttention = *opt.unfused
	}
	if set["flash-attention-2"] {
		t.FlashAttention2 = *opt.flash2
	}
	if set["zero3-on-demand"] {
		t.OnDemandGathers = *opt.onDemand
	}
	if set["framework"] {
		t.Framework = *opt.fw
	}
	if set["moe-imbalance"] {
		t.MoEImbalance = *opt.moeImb
	}
	if set["moe-capacity"] {
		t.MoECapacityFactor = *opt.moeCap
	}
	if set["dp-reduce-after-backward"] {
		t.DPReduceAfterBackward = *opt.dpAfter
	}
	if set["fp8-params"] {
		t.FP8Params = *opt.fp8Params
	}
	if set["fp8-recipe"] {
		t.FP8Recipe = step.FP8Recipe(strings.ToLower(*opt.fp8Recipe))
	}
	if set["param-gather"] {
		t.ParamGather = step.ParamGather(strings.ToLower(*opt.paramGather))
	}
	if set["zero3-backward-prefetch"] {
		t.BackwardPrefetch = step.BackwardPrefetch(strings.ToLower(*opt.prefetch))
	}
	if set["cp-all-to-all"] {
		l.CPAllToAll = *opt.cpA2A
	}
	if set["layer-split"] {
		l.LayerSplit = nil
		for _, f := range strings.Split(*opt.split, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return usagef("--layer-split: %q is not an integer", f)
			}
			l.LayerSplit = append(l.LayerSplit, v)
		}
	}
	if set["overlap-ep"] {
		l.OverlapEP = *opt.overlapEP
	}
	if set["etp"] {
		l.ETP = *opt.etp
	}
	if set["offload"] {
		l.Offload = step.Offload(strings.ToLower(*opt.offload))
	}
	if set["offload-activations"] {
		l.OffloadActivations = *opt.offloadActs
	}
	if set["account-embedding"] {
		l.AccountForEmbedding = *opt.acctEmb
	}
	if set["account-loss"] {
		l.AccountForLoss = *opt.acctLoss
	}
	if set["global-tokens"] {
		if set["gbs"] {
			return errors.New("--gbs and --global-tokens: give the batch one way")
		}
		t.GlobalTokens, t.GlobalBatch = *opt.gbt, 0
		if *opt.gbt > 0 && t.SeqLen > 0 {
			if *opt.gbt%t.SeqLen != 0 {
				return fmt.Errorf("--global-tokens %d: must be a multiple of --seq %d", *opt.gbt, t.SeqLen)
			}
			t.GlobalBatch = *opt.gbt / t.SeqLen
		}
	}
	if set["grad-dtype"] {
		if t.Optimizer == (step.Optimizer{}) {
			t.Optimizer = step.AdamMixed()
		}
		switch strings.ToLower(*opt.gradDType) {
		case "bf16", "fp16":
			t.Optimizer.GradBytes = 2
		case "fp32":
			t.Optimizer.GradBytes = 4
		default:
			return fmt.Errorf("--grad-dtype: must be bf16, fp16 or fp32 (got %q)", *opt.gradDType)
		}
	}
	return nil
}

// size checks the batch and sizes the job: --gpus, or tp×pp×dp×cp.
func (opt *estimateArgs) size(set map[string]bool, q *estimateQuery) error {
	t, l := &q.req.Training, &q.req.Layout
	if t.SeqLen == 0 {
		return errors.New("--seq: required (tokens per sequence)")
	}
	if t.GlobalBatch == 0 {
		return errors.New("--gbs or --global-tokens: required (the batch per step)")
	}
	n := *opt.gpus
	if set["gpus"] && n < 1 {
		// A job size of 0 given is a value given, not the flag left out (plan
		// refuses it so).
		return fmt.Errorf("--gpus: must be at least 1 (got %d)", n)
	}
	if l.TP < 1 || l.PP < 1 || l.CP < 1 {
		return fmt.Errorf("--tp, --pp, --cp: must be ≥ 1 (got %d, %d, %d)", l.TP, l.PP, l.CP)
	}
	mp := l.TP * l.PP * l.CP
	switch {
	case n == 0 && l.DP == 0:
		return errors.New("--gpus or --dp: give the job's size")
	case l.DP == 0:
		if n%mp != 0 {
			return fmt.Errorf("--gpus %d: must be a multiple of tp×pp×cp = %d", n, mp)
		}
		l.DP = n / mp
	case n == 0:
		n = l.DP * mp
	case n != l.DP*mp:
		return fmt.Errorf("--gpus %d: tp×pp×dp×cp = %d×%d×%d×%d = %d", n, l.TP, l.PP, l.DP, l.CP, l.DP*mp)
	}
	if n < 1 || n > topology.MaxNodes*q.spec.GPUsPerNode {
		return fmt.Errorf("--gpus: must be between 1 and %d (got %d)", topology.MaxNodes*q.spec.GPUsPerNode, n)
	}
	if g := q.spec.GPUsPerNode; g > 0 {
		job := fmt.Sprintf("the job's %d GPUs (tp×pp×dp×cp = %d)", n, n)
		if set["gpus"] {
			job = fmt.Sprintf("the job's %d GPUs (--gpus %d)", n, n)
		}
		if err := fileHolds(*opt.clusterFile, set["cluster-file"], q.spec.Nodes, g, n, job, "give a file with more nodes"); err != nil {
			return err
		}
		q.spec.Nodes = max(q.spec.Nodes, (n+g-1)/g)
	}
	return nil
}

// fileHolds refuses a job larger than the cluster a --cluster-file describes when
// the file gives more than one node: that count is the cluster's size, as
// cluster.nodes is over the API (which refuses such a job naming it), and the job
// was priced on a cluster grown past it without a word. A file of one node (a
// node's description, as calibrate --out writes one) is sized to the job, as a
// catalog system is.
func fileHolds(file string, given bool, nodes, perNode, gpus int, job, hint string) error {
	if !given || nodes <= 1 || nodes*perNode >= gpus {
		return nil
	}
	return fmt.Errorf("--cluster-file %s: its %d nodes of %d GPUs cannot hold %s: %s", file, nodes, perNode, job, hint)
}

// request is the API's request for q, checked.
func (opt *estimateArgs) request(set map[string]bool, q *estimateQuery) (*pb.EstimateStepRequest, error) {
	cl, err := q.spec.Build()
	if err != nil {
		file := *opt.clusterFile
		if q.fileCluster {
			file = "" // the --in file's cluster
		}
		return nil, fmt.Errorf("%s: %w", clusterSource(q.clusterLabel, file), err)
	}
	q.req.Model, q.req.Cluster = q.arch, cl
	for name, v := range map[string]struct {
		dst *float64
		v   float64
	}{"slow-gpu": {&q.req.SlowGPUSpeed, *opt.slowGPU}, "degraded-nic": {&q.req.DegradedNICSpeed, *opt.degradedNIC}, "degraded-link": {&q.req.DegradedLinkSpeed, *opt.degradedLink}} {
		if set[name] {
			*v.dst = v.v
		}
	}
	if *opt.addr != "" && *opt.svgOut != "" {
		return nil, errors.New("--svg: pictures are drawn in process; leave out --server (or ask the daemon's POST /v1/pictures:schedule)")
	}
	if *opt.svgOut == "-" && *opt.asJSON {
		return nil, errSVGAndJSON
	}
	q.flags = opt.fieldFlags(set, q)
	if err := checkNames(q.req.Training, q.req.Layout, q.flags); err != nil {
		return nil, err
	}
	pr := &pb.EstimateStepRequest{Model: modelProto(q.arch, q.modelName, q.modelParams), Cluster: clusterProto(q.cname, q.spec),
		Training: wire.TrainingToProto(q.req.Training), Layout: wire.LayoutToProto(q.req.Layout),
		SlowGpuSpeed: q.req.SlowGPUSpeed, DegradedNicSpeed: q.req.DegradedNICSpeed, DegradedLinkSpeed: q.req.DegradedLinkSpeed}
	if q.fileCluster {
		// The API's cluster as the file gives it: its nodes are the cluster's size
		// and its free map must hold the layout's GPUs, as the daemon reads them
		// (the job's size above grows only a cluster file's nodes, a minimum).
		pr.Cluster = proto.Clone(q.file.GetCluster()).(*pb.ClusterSpec)
	}
	return pr, nil
}

// fieldFlags names each request field by what gave it: its flag when the flag is
// given (or there is no --in file), else the --in file's field ("--in:
// training.cuda_device_max_connections"): a value the file gives is refused or
// warned of as the file's, not as a flag the command line does not hold. So too
// the --in file's cluster fields the service checks (cluster.nodes,
// cluster.free_gpus) when the cluster is the file's.
func (opt *estimateArgs) fieldFlags(set map[string]bool, q *estimateQuery) map[string]string {
	if *opt.in == "" {
		if set["vpp"] && !set["schedule"] {
			// The interleaved schedule is --vpp's doing: name the flag given.
			m := maps.Clone(estimateFlags)
			m["layout.schedule"] = "--vpp"
			return m
		}
		return estimateFlags
	}
	m := maps.Clone(estimateFlags)
	for field, flag := range m {
		if !set[strings.TrimPrefix(flag, "--")] {
			m[field] = "--in: " + field
		}
	}
	if q.fileCluster {
		for _, f := range []string{"cluster.nodes", "cluster.free_gpus"} {
			m[f] = "--in: " + f
		}
	}
	return m
}

// answer asks in process or the --server daemon, and prints the answer.
func (opt *estimateArgs) answer(ctx context.Context, pr *pb.EstimateStepRequest, q *estimateQuery, stdout io.Writer) error {
	var resp *pb.EstimateStepResponse
	if *opt.addr != "" {
		svc, done, err := connect(*opt.addr, opt.sec)
		if err != nil {
			return err
		}
		defer done()
		if resp, err = svc.EstimateStep(ctx, pr); err != nil {
			return flagged(err, q.flags)
		}
	} else {
		var res step.Result
		var err error
		if resp, res, err = newLocal().step(ctx, pr); err != nil {
			return flagged(err, q.flags)
		}
		if *opt.svgOut != "" {
			if q.derived != "" {
				res.Assumptions = append([]string{q.derived}, res.Assumptions...)
			}
			title := q.arch.Name + " on " + q.clusterLabel
			sched, err := picture.Schedule(res, title)
			if err != nil {
				return fmt.Errorf("--svg: %w", err)
			}
			if err := writeSVG(*opt.svgOut, picture.Stack(sched, picture.Breakdown(res, title)), stdout); err != nil {
				return err
			}
			if *opt.svgOut == "-" {
				return nil
			}
		}
	}
	if *opt.asJSON {
		return printProtoJSON(stdout, resp)
	}
	printEstimate(stdout, resp, q.clusterLabel, q.flags)
	return nil
}

// estimateFlags names the flag of each request field of estimate.
var estimateFlags = map[string]string{"layout.tp": "--tp", "layout.pp": "--pp", "layout.dp": "--dp", "layout.cp": "--cp", "layout.ep": "--ep",
	"layout.etp": "--etp", "layout.zero": "--zero", "layout.micro_batch": "--mbs", "layout.recompute": "--recompute",
	"layout.recompute_layers": "--recompute-layers", "layout.recompute_modules": "--recompute-modules", "layout.overlap_shared_expert": "--overlap-shared-expert", "layout.overlap_ep": "--overlap-ep",
	"layout.overlap_tp": "--overlap-tp", "layout.cp_all_to_all": "--cp-all-to-all", "layout.account_for_embedding": "--account-embedding",
	"layout.account_for_loss": "--account-loss", "training.unfused_attention": "--unfused-attention",
	"training.flash_attention_2": "--flash-attention-2", "training.zero3_on_demand_gathers": "--zero3-on-demand", "training.dp_reduce_after_backward": "--dp-reduce-after-backward",
	"training.fp8_activations": "--fp8-activations", "training.fp8_kv_projections_16bit": "--fp8-kv-16bit", "training.no_dropout": "--no-dropout", "training.moe_pad_to_capacity": "--moe-pad-to-capacity",
	"training.moe_dispatcher": "--moe-dispatcher", "training.moe_permute_fusion": "--moe-permute-fusion", "training.moe_router_fp32": "--moe-router-fp32", "training.moe_grouped_gemm": "--moe-grouped-gemm", "training.cuda_graphs": "--cuda-graphs", "training.cp_nccl_max_ctas": "--cp-nccl-max-ctas", "training.dp_nccl_max_ctas": "--dp-nccl-max-ctas", "training.tp_nccl_max_ctas": "--tp-nccl-max-ctas", "training.cuda_device_max_connections": "--cuda-device-max-connections", "training.dp_bucket_params": "--dp-bucket-params", "layout.sp": "--sp", "layout.schedule": "--schedule", "layout.virtual_stages": "--vpp",
	"layout.rank_order": "--rank-order", "layout.layer_split": "--layer-split", "layout.offload": "--offload",
	"layout.offload_activations": "--offload-activations", "layout.fp8_params": "--fp8-params",
	"training.seq_len": "--seq", "training.global_batch": "--gbs", "training.global_tokens": "--global-tokens", "training.precision": "--precision",
	"training.framework": "--framework", "training.zero3_backward_prefetch": "--zero3-backward-prefetch", "training.param_gather": "--param-gather", "training.fp8_recipe": "--fp8-recipe", "training.fp8_params": "--fp8-params", "training.moe_imbalance": "--moe-imbalance",
	"training.moe_capacity_factor": "--moe-capacity",
	"slow_gpu_speed":               "--slow-gpu", "degraded_nic_speed": "--degraded-nic", "degraded_link_speed": "--degraded-link"}

// printEstimate prints an estimate for people.
func printEstimate(w io.Writer, resp *pb.EstimateStepResponse, cluster string, flags map[string]string) {
	e := resp.GetEstimate()
	l, _ := wire.LayoutFromProto(e.GetLayout())
	t, _ := wire.TrainingFromProto(e.GetTraining())
	title := &strings.Builder{}
	gpus := fmt.Sprintf("%d GPUs", e.GetGpus())
	if e.GetGpus() == 1 {
		gpus = "1 GPU"
	}
	fmt.Fprintf(title, "%s on %s of %s: tp %d × pp %d × dp %d × cp %d", resp.GetModel().GetName(), gpus, cluster, l.TP, l.PP, l.DP, l.CP)
	if l.EP > 1 {
		fmt.Fprintf(title, ", ep %d", l.EP)
	}
	switch {
	case l.ETP == 1 && l.TP > 1:
		fmt.Fprint(title, ", etp 1 (experts whole on each TP rank)")
	case l.ETP > 1 && l.ETP < l.TP:
		fmt.Fprintf(title, ", etp %d", l.ETP)
	}
	fmt.Fprintf(title, ", ZeRO-%d, micro-batch %d × %d, seq %d, global batch %d, recompute %s",
		l.ZeRO, l.MicroBatch, e.GetMicroBatches(), t.SeqLen, t.GlobalBatch, l.Recompute)
	// recompute_layers counts a pipeline stage's layers, all its model chunks
	// together (step.Layout.RecomputeLayers); layer_split lists one entry a model
	// chunk, pp × v of them, chunk c of stage s at c × pp + s (the API's
	// layout.layer_split): one a stage only without interleaving.
	if l.RecomputeLayers > 0 {
		fmt.Fprintf(title, " (%d layers per stage", l.RecomputeLayers)
		if l.PP > 1 && l.VirtualStages > 1 {
			fmt.Fprintf(title, ", its %d chunks together", l.VirtualStages)
		}
		fmt.Fprint(title, ")")
	}
	if len(l.RecomputeModules) > 0 {
		fmt.Fprintf(title, " (%s)", strings.Join(l.RecomputeModules, ", "))
	}
	if l.SP {
		fmt.Fprint(title, ", SP")
	}
	// The overlaps and variants a layout runs, as plan's layout says them
	// (layoutString): two estimates told apart only by one had the same title.
	if l.OverlapTP && l.TP > 1 {
		fmt.Fprint(title, ", TP overlap")
	}
	if l.OverlapEP && l.EP > 1 {
		fmt.Fprint(title, ", EP overlap")
	}
	if l.OverlapSharedExpert {
		fmt.Fprint(title, ", shared-expert overlap")
	}
	if l.CPAllToAll && l.CP > 1 {
		fmt.Fprint(title, ", Ulysses CP")
	}
	if l.PP > 1 {
		fmt.Fprintf(title, ", %s", l.Schedule)
		switch {
		case l.Schedule == step.ZeroBubbleV:
			// Not an interleaving depth: the V's two chunks a stage (Qi et al.
			// 2024 §6; step.Layout.VirtualStages 2).
			fmt.Fprintf(title, " (a V of %d chunks a stage)", l.VirtualStages)
		case l.VirtualStages > 1:
			fmt.Fprintf(title, " v=%d", l.VirtualStages)
		}
		if r := splitRuns(l.LayerSplit, ", "); r != "" && l.VirtualStages > 1 {
			fmt.Fprintf(title, ", layers per model chunk %s (chunk c of stage s at c × pp + s)", r)
		} else if r != "" {
			fmt.Fprintf(title, ", layers per stage %s", r)
		}
	}
	if l.Offload != "" && l.Offload != step.OffloadNone {
		fmt.Fprintf(title, ", %s offloaded to the host", l.Offload)
	}
	if l.OffloadActivations {
		fmt.Fprint(title, ", activations offloaded to the host")
	}
	fmt.Fprintf(title, ", %s", t.Precision)
	if l.FP8Params {
		fmt.Fprint(title, " (fp8 weights)")
	}
	printWrapped(w, "", title.String(), false)
	fmt.Fprintln(w)
	th := e.GetThroughput()
	fmt.Fprintf(w, "step time  %s   tokens/s %.0f   per GPU %.0f   MFU %.1f%%   HFU %.1f%%\n\n",
		fmtSeconds(e.GetStepTimeS()), th.GetTokensPerS(), th.GetTokensPerSPerGpu(), 100*th.GetMfu(), 100*th.GetHfu())
	b := e.GetBreakdown()
	bt := table{head: []string{"where the time goes", "time", "share", "hidden under compute"}}
	row := func(name string, v, hidden float64) {
		if v == 0 && hidden == 0 {
			return
		}
		h := ""
		if hidden > 0 {
			h = fmtSeconds(hidden)
		}
		bt.add(name, fmtSeconds(v), fmt.Sprintf("%.1f%%", 100*v/e.GetStepTimeS()), h)
	}
	row("forward", b.GetForwardS(), 0)
	row("backward", b.GetBackwardS(), 0)
	row("recompute", b.GetRecomputeS(), 0)
	for _, c := range step.Comms() {
		row("exposed "+c.String()+" comm", commTime(b.GetExposedCommS(), c), commTime(b.GetHiddenCommS(), c))
	}
	row("pipeline bubble", b.GetBubbleS(), 0)
	row("optimizer step", b.GetOptimizerS(), 0)
	row("comm/compute contention", b.GetContentionS(), 0)
	bt.add("total", fmtSeconds(b.GetTotalS()), "100.0%", "")
	bt.write(w)

	m := e.GetMemory()
	// The GPU's verdict is its own numbers': fits is false too when only the
	// offloaded host part does not fit (said on the host line below), and the
	// line said "DOES NOT FIT: -69.5 GB over" of a GPU with 69.5 GB free.
	verdict := fmt.Sprintf("fits, %.1f GB headroom", m.GetHeadroomGb())
	if m.GetHeadroomGb() < 0 {
		verdict = fmt.Sprintf("DOES NOT FIT: %.1f GB over", -m.GetHeadroomGb())
	}
	fmt.Fprintf(w, "\nmemory per GPU (stage %d): %.1f of %.1f GB — %s\n", m.GetStage(), m.GetTotalGb(), m.GetCapacityGb(), verdict)
	mt := table{head: []string{"", "GB"}}
	inFlight := fmt.Sprintf("activations (%.3g micro-batches in flight)", m.GetInFlightMicroBatches())
	if m.GetInFlightMicroBatches() == 1 {
		inFlight = "activations (1 micro-batch in flight)"
	}
	for _, x := range []struct {
		n string
		v float64
	}{{"weights", m.GetWeightsGb()}, {"gradients", m.GetGradientsGb()}, {"optimizer states", m.GetOptimizerGb()}, {"gathered weights (ZeRO-3)", m.GetGatheredWeightsGb()},
		{inFlight, m.GetActivationsGb()}, {"embeddings / logits", m.GetEmbeddingsLogitsGb()},
		{"fp8 weight copies", m.GetFp8WeightCopiesGb()}, {"communication buffers", m.GetCommBuffersGb()}, {"runtime reserve", m.GetRuntimeReserveGb()}} {
		if x.v > 0 {
			mt.add(x.n, fmt.Sprintf("%.2f", x.v))
		}
	}
	mt.write(w)
	if m.GetHostGb() > 0 {
		verdict := "fits"
		if m.GetHostGb() > m.GetHostCapacityGb() {
			verdict = "DOES NOT FIT"
		}
		fmt.Fprintf(w, "host memory per GPU (offload): %.1f of its %.1f GB share — %s\n", m.GetHostGb(), m.GetHostCapacityGb(), verdict)
	}

	if len(e.GetCommunication()) > 0 {
		fmt.Fprintln(w, "\ncommunication")
		ct := table{head: []string{"kind", "collective", "group", "nodes", "bytes", "algorithm", "one call", "calls/step", "when"}, wrap: "when"}
		for _, c := range e.GetCommunication() {
			ct.add(c.GetKind(), c.GetCollective(), fmt.Sprint(c.GetGroupSize()), fmt.Sprint(c.GetGroupNodes()), FormatSize(c.GetBytes()), c.GetAlgorithm()+"/"+c.GetProtocol(),
				fmtUs(c.GetTimeUs()), fmt.Sprintf("%.0f", c.GetCallsPerStep()), c.GetWhen())
		}
		ct.write(w)
	}
	for _, x := range e.GetWarnings() {
		fmt.Fprintln(w)
		printWrapped(w, "warning: ", flaggedWarning(x, flags), true)
	}
	fmt.Fprintln(w, "\nassumptions:")
	for _, x := range e.GetAssumptions() {
		printWrapped(w, "  - ", x, true)
	}
}

// commTime is the time of one kind of communication.
func commTime(t *pb.CommTimes, c step.Comm) float64 {
	switch c {
	case step.CommTP:
		return t.GetTp()
	case step.CommCP:
		return t.GetCp()
	case step.CommEP:
		return t.GetEp()
	case step.CommPP:
		return t.GetPp()
	case step.CommDP:
		return t.GetDp()
	case step.CommZeRO3:
		return t.GetZero3()
	case step.CommEmbed:
		return t.GetEmbedding()
	}
	return 0
}

func fmtSeconds(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.3f s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.2f ms", s*1e3)
	}
	return fmt.Sprintf("%.1f µs", s*1e6)
}

// splitList is a comma-separated flag's entries, trimmed and lower-cased; an
// empty flag gives none.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		out = append(out, strings.ToLower(strings.TrimSpace(f)))
	}
	return out
}

// wholeParams refuses a --dp-bucket-params that is not a whole number of
// parameters: the request carries it as an integer (training.dp_bucket_params),
// and a fraction would be dropped on the way to a server. The range is the
// estimator's to check, naming the field.
func wholeParams(v float64) error {
	if v != math.Trunc(v) || math.IsInf(v, 0) {
		return fmt.Errorf("--dp-bucket-params: %v is not a whole number of parameters", v)
	}
	return nil
}
