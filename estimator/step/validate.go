package step

import (
	"fmt"
	"slices"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Request is one step estimate to make.
type Request struct {
	Model    model.Arch
	Training Training
	Cluster  *topology.Cluster
	Layout   Layout
	// Ranks places the job's ranks on the cluster's GPUs; nil puts rank r on GPU r
	// (the first nodes, in order).
	Ranks *RankMap
	// SlowGPUSpeed, a what-if: one GPU of the job computes at this fraction of its
	// speed (throttled, degraded); 0 means none. Its TP group and pipeline stage
	// wait for it and every data-parallel replica waits at the gradient reduction,
	// so that stage paces the steady state; the pipeline's fill and drain pass the
	// other stages at their own speed.
	SlowGPUSpeed float64
	// DegradedNICSpeed, a what-if: the NICs of one node of the job (rank 0's, which
	// is in every group the estimate prices) run at this fraction of their bandwidth;
	// 0 means none. Every collective through that node runs at its pace, and the
	// step waits for the slowest group.
	DegradedNICSpeed float64
	// DegradedLinkSpeed, a what-if: one GPU's (rank 0's) scale-up link (NVLink,
	// PCIe) runs at this fraction of its bandwidth; 0 means none.
	DegradedLinkSpeed float64
}

// RankMap is a validated, immutable assignment of ranks to GPUs of one cluster.
// Estimates cache communication groups per RankMap, so reuse one for many layouts
// of the same job size.
type RankMap struct {
	cluster *topology.Cluster
	gpus    []int
}

// NewRankMap checks that gpus are distinct GPUs of c; rank r runs on gpus[r].
func NewRankMap(c *topology.Cluster, gpus []int) (*RankMap, error) {
	if c == nil {
		return nil, invalid.Field("cluster", "is required")
	}
	seen := make(map[int]bool, len(gpus))
	for i, g := range gpus {
		if g < 0 || g >= c.GPUs() {
			return nil, invalid.Field(fmt.Sprintf("ranks[%d]", i), "GPU %d is not in the cluster's %d GPUs", g, c.GPUs())
		}
		if seen[g] {
			return nil, invalid.Field(fmt.Sprintf("ranks[%d]", i), "GPU %d is used twice", g)
		}
		seen[g] = true
	}
	return &RankMap{cluster: c.Base(), gpus: append([]int(nil), gpus...)}, nil
}

// Len is the number of ranks.
func (m *RankMap) Len() int { return len(m.gpus) }

// GPU of rank r.
func (m *RankMap) GPU(r int) int { return m.gpus[r] }

// Limits that keep the arithmetic finite and the tables small.
const (
	MaxParallel   = 1 << 16
	MaxSeqLen     = 1 << 24
	MaxBatch      = 1 << 26
	MaxMicroBatch = 1 << 16
	// MaxGlobalTokens bounds training.global_tokens: MaxBatch sequences of
	// MaxSeqLen tokens (2^50, within int64 and a 64-bit int).
	MaxGlobalTokens = MaxBatch * MaxSeqLen
)

// CheckBatchBounds is the range of training.global_batch and
// training.global_tokens, on the int64 values a request carries, to be checked
// before they are narrowed to Training's int: neither negative, at most MaxBatch
// sequences and MaxGlobalTokens tokens. 0 is let through (global_tokens may give
// the batch); Validate checks the rest of the rule with the same words.
func CheckBatchBounds(globalBatch, globalTokens int64) error {
	if globalBatch < 0 || globalBatch > MaxBatch {
		return batchError(globalBatch)
	}
	if globalTokens < 0 || globalTokens > MaxGlobalTokens {
		return invalid.Field("training.global_tokens", "must be between 0 and %d (got %d)", int64(MaxGlobalTokens), globalTokens)
	}
	return nil
}

// batchError is the words of training.global_batch's range, for Validate and
// CheckBatchBounds alike.
func batchError(b int64) *invalid.Error {
	return invalid.Field("training.global_batch", "must be between 1 and %d sequences (got %d)", MaxBatch, b)
}

// normalise fills defaults: CP, EP, PP, TP 1; schedule 1F1B (GPipe irrelevant without
// PP); virtual stages 1; precision bf16; optimizer mixed Adam; recompute none.
func normalise(r Request) Request {
	normaliseIn(&r)
	return r
}

// normaliseIn is normalise in place.
func normaliseIn(r *Request) {
	r.Training.normalise()
	normaliseLayout(r, sequenceParallelWithTP(r.Training))
}

// normaliseLayout fills the layout's defaults for a request whose training is
// normalised, in place; spWithTP says the framework turns sequence parallelism on with TP.
func normaliseLayout(r *Request, spWithTP bool) {
	l := &r.Layout
	for _, v := range []*int{&l.TP, &l.PP, &l.CP, &l.EP, &l.VirtualStages} {
		if *v == 0 {
			*v = 1
		}
	}
	if l.Schedule == ZeroBubbleV && l.VirtualStages == 1 {
		l.VirtualStages = 2 // the V's two chunks
	}
	if l.Schedule == "" {
		l.Schedule = OneFOneB
		if l.VirtualStages > 1 {
			l.Schedule = Interleaved
		}
	}
	if l.Recompute == "" {
		l.Recompute = RecomputeNone
	}
	accountSplit(l, r.Model.Layers)
	balanceSplit(l, &r.Model, r.Training.SeqLen)
	if l.TP > 1 && !l.SP && spWithTP {
		l.SP = true
	}
	// fp8 weights are one setting, given by the training or the layout.
	if r.Training.Precision == FP8 && (l.FP8Params || r.Training.FP8Params) {
		l.FP8Params, r.Training.FP8Params = true, true
	}
	// (The GPU's architecture first: unfusedOnGPU takes the model and the GPU by
	// value, and the planner normalises every layout it bounds.)
	if !r.Training.UnfusedAttention && r.Cluster != nil && r.Cluster.Spec.GPU.Arch == hardware.Blackwell && unfusedOnGPU(r.Training.Framework, r.Model, r.Cluster.GPU()) {
		r.Training.UnfusedAttention = true
	}
}

// unfusedOnGPU says the framework's fused attention does not take the model's heads
// on gpu, so that its attention runs unfused (framework.Profile.BlackwellFusedHeadDim).
func unfusedOnGPU(fw string, a model.Arch, gpu hardware.GPU) bool {
	if gpu.Arch != hardware.Blackwell {
		return false // before the profile's lookup: this runs for every layout priced
	}
	p, err := framework.Get(fw)
	if err != nil || p.BlackwellFusedHeadDim == 0 {
		return false
	}
	qk, v := a.HeadDim(), a.HeadDim()
	if m := a.MLA; m != nil {
		qk, v = m.QKNopeDim+m.QKRopeDim, m.VDim
	}
	if qk <= p.BlackwellFusedHeadDim && v <= p.BlackwellFusedHeadDim {
		return false
	}
	// flash-attn 2 takes equal query and value heads up to 256 wide on sm100.
	return qk != v || qk > flashAttn2MaxHeadDim
}

// flashAttn2MaxHeadDim is the widest head flash-attn 2 runs (Transformer Engine's
// dot_product_attention/utils.py: head_dim_qk <= 256, equal to head_dim_v).
const flashAttn2MaxHeadDim = 256

// sequenceParallelWithTP says t's framework turns sequence parallelism on with TP.
func sequenceParallelWithTP(t Training) bool {
	if t.Framework == framework.Default {
		return false
	}
	fw, err := framework.Get(t.Framework)
	return err == nil && fw.SequenceParallelWithTP
}

// accountSplit writes out the layer split of a layout that accounts for the embedding
// or the loss (Layout.AccountForEmbedding/AccountForLoss), turning them on when the
// pipeline does not divide the layers otherwise. A split that cannot be made is left
// for validate to report.
func accountSplit(l *Layout, layers int) {
	stages := l.PP * l.VirtualStages
	if len(l.LayerSplit) > 0 || l.PP < 2 || layers < 1 || stages < 1 || l.Schedule == ZeroBubbleV {
		return
	}
	if !l.AccountForEmbedding && !l.AccountForLoss && layers%stages != 0 {
		l.AccountForEmbedding, l.AccountForLoss = autoAccount(layers, stages)
	}
	if l.AccountForEmbedding || l.AccountForLoss {
		l.LayerSplit = AccountedSplit(layers, stages, l.AccountForEmbedding, l.AccountForLoss)
	}
}

// balanceSplit gives a layout whose pipeline does not divide the layers, even
// counting the embedding and loss, the cost-balanced split (BalancedSplit); ZB-V
// runs even splits only, and a pipeline of more chunks than layers is left for
// validate to report. (The model by address: the planner normalises every layout it
// bounds, nearly all with their split given.)
func balanceSplit(l *Layout, a *model.Arch, seq int) {
	stages := l.PP * l.VirtualStages
	if len(l.LayerSplit) > 0 || l.PP < 2 || stages < 1 || a.Layers < 1 || a.Layers%stages == 0 || l.Schedule == ZeroBubbleV {
		return
	}
	l.LayerSplit = BalancedSplit(*a, seq, stages)
}

// autoAccount says what a pipeline of stages that does not divide layers counts as
// layers to divide them: the loss, or else the embedding and the loss.
func autoAccount(layers, stages int) (embedding, loss bool) {
	switch {
	case accountable(layers, stages, false, true):
		return false, true
	case accountable(layers, stages, true, true):
		return true, true
	}
	return false, false
}

// accountable says AccountedSplit has a split for these (without building it).
func accountable(layers, stages int, embedding, loss bool) bool {
	e, o := b2i(embedding), b2i(loss)
	total := layers + e + o
	if stages < 2 || total%stages != 0 {
		return false
	}
	per := total / stages
	return per-e >= 1 && per-o >= 1
}

// AccountedSplit is the layer split over stages (pp × virtual stages, model chunk c
// of pipeline rank s at c·pp + s) that counts the embedding and/or the loss as one
// layer of the first and last chunk (Megatron-LM's account-for-embedding/loss
// options), or nil when stages do not divide the layers so counted or a chunk would
// hold no layer.
func AccountedSplit(layers, stages int, embedding, loss bool) []int {
	if !accountable(layers, stages, embedding, loss) {
		return nil
	}
	e, o := b2i(embedding), b2i(loss)
	per := (layers + e + o) / stages
	split := make([]int, stages)
	for i := range split {
		split[i] = per
	}
	split[0] -= e
	split[stages-1] -= o
	return split
}

// PipelineSplit is the split a search uses for layers over stages that do not divide
// them: Megatron's accounting for the loss (and embedding) when that divides them,
// nil otherwise.
func PipelineSplit(layers, stages int) []int {
	if stages < 2 || layers%stages == 0 {
		return nil
	}
	e, o := autoAccount(layers, stages)
	if !e && !o {
		return nil
	}
	return AccountedSplit(layers, stages, e, o)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Normalise returns the training with its defaults written out: the global batch
// from global tokens when only those are given, precision bf16, mixed-precision
// Adam. It does not validate.
func (t Training) Normalise() Training {
	t.normalise()
	return t
}

// normalise is Normalise in place (a training is 240 bytes; an estimate
// normalises its request's).
func (t *Training) normalise() {
	if t.GlobalBatch == 0 && t.GlobalTokens > 0 && t.SeqLen > 0 && t.GlobalTokens%t.SeqLen == 0 {
		t.GlobalBatch = t.GlobalTokens / t.SeqLen
	}
	if t.Precision == "" {
		t.Precision = BF16
	}
	// The framework's profile fills what the request leaves open; an unknown name is
	// left for validate to report.
	fw, known := framework.Get(t.Framework)
	if known == nil {
		t.Framework = fw.Name
		t.UnfusedAttention = t.UnfusedAttention || fw.UnfusedAttention
		t.OnDemandGathers = t.OnDemandGathers || fw.ZeRO3OnDemand
		if t.BackwardPrefetch == "" && fw.BackwardPrefetch != "" {
			t.BackwardPrefetch = BackwardPrefetch(fw.BackwardPrefetch)
		}
		t.DPReduceAfterBackward = t.DPReduceAfterBackward || fw.DPReduceAfterBackward
		t.withMoEProfile(fw)
		if t.FP8Recipe == "" && t.Precision == FP8 && fw.FP8Recipe != "" {
			t.FP8Recipe = FP8Recipe(fw.FP8Recipe)
		}
	}
	if t.FP8Recipe == "" && t.Precision == FP8 {
		t.FP8Recipe = FP8Delayed
	}
	if t.BackwardPrefetch == "" {
		t.BackwardPrefetch = PrefetchPre
	}
	if t.Optimizer == (Optimizer{}) {
		t.Optimizer = AdamMixed()
		// Megatron-LM's fp32 gradients are bf16's (and fp8's, on bf16 parameters):
		// under fp16 they stay 16-bit (framework.Profile.GradReduceBF16Only).
		if known == nil && fw.GradReduceBytes > 0 && !(fw.GradReduceBF16Only && t.Precision == FP16) {
			t.Optimizer.GradBytes = fw.GradReduceBytes
		}
		if known == nil && fw.HeldFP32GradCopies {
			switch t.Precision {
			case FP16:
				t.Optimizer.StateBytes += 4 // the fp32 copies, held with the fp32 states
			case BF16:
				t.Optimizer.GradBytes = 4 // accumulated and reduced in fp32
			}
		}
	}
}

// Validate checks a training setup with its defaults (see Normalise), naming every
// bad field under "training.".
func (t Training) Validate() error { return t.Normalise().validate() }

func (t Training) validate() error {
	c := invalid.Collector{}
	if t.SeqLen < 1 || t.SeqLen > MaxSeqLen {
		c.Add("training.seq_len", "must be between 1 and %d (got %d)", MaxSeqLen, t.SeqLen)
	}
	if t.GlobalTokens != 0 && (t.SeqLen < 1 || t.GlobalTokens%t.SeqLen != 0 || t.GlobalBatch*t.SeqLen != t.GlobalTokens) {
		c.Add("training.global_tokens", "must be a whole number of sequences of seq_len %d, and agree with global_batch if both are given (got %d)", t.SeqLen, t.GlobalTokens)
	}
	if (t.GlobalBatch < 1 || t.GlobalBatch > MaxBatch) && !(t.GlobalBatch == 0 && t.GlobalTokens != 0) {
		c.Join(batchError(int64(t.GlobalBatch)))
	}
	switch t.Precision {
	case BF16, FP16, FP8:
	default:
		c.Add("training.precision", "must be bf16, fp16 or fp8 (got %q)", t.Precision)
	}
	if _, err := framework.Get(t.Framework); err != nil {
		c.Add("training.framework", "%v", err)
	}
	switch t.ParamGather {
	case "", ParamGatherExposed, ParamGatherOverlapped:
	default:
		c.Add("training.param_gather", "must be exposed or overlapped, or empty for the framework's (got %q)", t.ParamGather)
	}
	if v := t.DPBucketParams; !(v == 0 || v >= 1 && v <= 1e13) {
		c.Add("training.dp_bucket_params", "must be a number of parameters in [1, 1e13], or 0 for the framework's (got %v)", v)
	}
	for _, g := range []struct {
		field string
		v     int
	}{{"training.cp_nccl_max_ctas", t.CPMaxCTAs}, {"training.dp_nccl_max_ctas", t.DPMaxCTAs}, {"training.tp_nccl_max_ctas", t.TPMaxCTAs}} {
		if g.v < 0 || g.v > collective.MaxChannels {
			c.Add(g.field, "must be a number of thread blocks in [1, %d], or 0 for NCCL's default (got %d)", collective.MaxChannels, g.v)
		}
	}
	if v := t.DeviceMaxConnections; v < 0 || v > framework.MaxDeviceConnections {
		c.Add("training.cuda_device_max_connections", "must be a number of hardware queues in [1, %d] (CUDA_DEVICE_MAX_CONNECTIONS), or 0 for the framework's launch (got %d)", framework.MaxDeviceConnections, v)
	}
	if v := t.MoEImbalance; !(v == 0 || v >= 1 && v <= 1e4) {
		c.Add("training.moe_imbalance", "must be at least 1 (the busiest rank's tokens over the mean) and at most 10000, or 0 for balanced (got %v)", v)
	}
	if v := t.MoECapacityFactor; !(v == 0 || v > 0 && v <= 1e4) {
		c.Add("training.moe_capacity_factor", "must be in (0, 10000], or 0 for dropless (got %v)", v)
	}
	t.validateMoE(&c)
	switch {
	case t.FP8Recipe == "":
	case t.Precision != FP8:
		c.Add("training.fp8_recipe", "applies to precision %s only (precision is %s)", FP8, t.Precision)
	case t.FP8Recipe != FP8Delayed && t.FP8Recipe != FP8Current && t.FP8Recipe != FP8Rowwise && t.FP8Recipe != FP8MXFP8 && t.FP8Recipe != FP8Blockwise:
		c.Add("training.fp8_recipe", "must be delayed, current, rowwise, mxfp8 or blockwise (got %q)", t.FP8Recipe)
	}
	if t.FlashAttention2 && t.UnfusedAttention {
		c.Add("training.flash_attention_2", "names a fused attention kernel, but the attention runs unfused (unfused_attention, or the framework %s's)", t.Framework)
	}
	if t.FP8Params && t.Precision != FP8 {
		c.Add("training.fp8_params", "applies to precision %s only (precision is %s)", FP8, t.Precision)
	}
	switch t.BackwardPrefetch {
	case PrefetchPre, PrefetchPost, PrefetchNone:
	default:
		c.Add("training.zero3_backward_prefetch", "must be pre, post or none (got %q)", t.BackwardPrefetch)
	}
	// Every parameter has a weight and a gradient, each stored in at least one bit
	// (minOptimizerElementBytes); optimizer state may be absent (SGD), or shared
	// between parameters (Adafactor's factored second moment: a few bytes a row and
	// a column), so any amount of it is taken.
	o := t.Optimizer
	for _, f := range []struct {
		name string
		v    float64
	}{{"weight_bytes", o.WeightBytes}, {"grad_bytes", o.GradBytes}} {
		if !(f.v >= minOptimizerElementBytes && f.v <= 64) {
			c.Add("training.optimizer."+f.name, "must be from %v (one bit) to 64 bytes per parameter (got %v)", minOptimizerElementBytes, f.v)
		}
	}
	if !(o.StateBytes >= 0 && o.StateBytes <= 64) {
		c.Add("training.optimizer.state_bytes", "must be between 0 and 64 bytes per parameter (got %v)", o.StateBytes)
	}
	return c.Err()
}

// minOptimizerElementBytes is the least a parameter's weight or gradient takes: one
// bit, the least any stored value takes (the narrowest format trained with is 4
// bits, NVFP4's elements). Below it, 1e-300 bytes a parameter priced the model's
// weights at nothing.
const minOptimizerElementBytes = 1.0 / 8

// validate checks every rule and names the field and the rule it broke.
func validate(r *Request) error {
	c := invalid.Collector{}
	if err := r.Model.Validate(); err != nil {
		c.Join(prefix("model.", err))
	}
	if r.Cluster == nil {
		c.Add("cluster", "is required")
	}
	c.Join(CheckWhatIfs(r.SlowGPUSpeed, r.DegradedNICSpeed, r.DegradedLinkSpeed, r.Cluster))
	t, l, a := &r.Training, &r.Layout, &r.Model
	c.Join(t.validate())
	validateOffload(&c, l, r.Cluster)
	validateActivationOffload(&c, l, t, r.Cluster)
	for _, f := range []struct {
		name string
		v    int
	}{{"tp", l.TP}, {"pp", l.PP}, {"dp", l.DP}, {"cp", l.CP}, {"ep", l.EP}, {"virtual_stages", l.VirtualStages}} {
		if f.v < 1 || f.v > MaxParallel {
			c.Add("layout."+f.name, "must be between 1 and %d (got %d)", MaxParallel, f.v)
		}
	}
	if err := c.Err(); err != nil {
		return err // the rules below divide by these
	}
	if l.ZeRO < 0 || l.ZeRO > 3 {
		c.Add("layout.zero", "must be 0, 1, 2 or 3 (got %d)", l.ZeRO)
	}
	switch l.Recompute {
	case RecomputeNone, RecomputeSelective, RecomputeOps, RecomputeFull:
	default:
		c.Add("layout.recompute", "must be none, selective, ops or full (got %q)", l.Recompute)
	}
	switch {
	case l.RecomputeLayers < 0:
		c.Add("layout.recompute_layers", "must be ≥ 0 (got %d)", l.RecomputeLayers)
	case l.RecomputeLayers > 0 && l.Recompute != RecomputeFull:
		c.Add("layout.recompute_layers", "recomputes whole layers, so needs recompute %s (got %q)", RecomputeFull, l.Recompute)
	case l.RecomputeLayers > a.Layers/l.PP:
		c.Add("layout.recompute_layers", "must be at most the %d layers of a pipeline stage (got %d)", a.Layers/l.PP, l.RecomputeLayers)
	}
	validateRecomputeModules(&c, l, a)
	validateMoELayout(&c, l, a)
	if a.Heads%l.TP != 0 {
		c.Add("layout.tp", "must divide the %d attention heads (got %d)", a.Heads, l.TP)
	} else if kv := max(1, a.KVHeads); kv%l.TP != 0 && l.TP%kv != 0 {
		c.Add("layout.tp", "must divide the %d KV heads or be a multiple of them (got %d)", kv, l.TP)
	}
	if a.FFN%l.TP != 0 {
		c.Add("layout.tp", "must divide the FFN size %d (got %d)", a.FFN, l.TP)
	}
	if l.CPAllToAll && l.CP > 1 && (a.Heads%(l.TP*l.CP) != 0 || max(1, a.KVHeads)%l.CP != 0 && l.CP%max(1, a.KVHeads) != 0) {
		c.Add("layout.cp", "the all-to-all (Ulysses) variant needs tp × cp to divide the %d heads (got tp %d, cp %d)", a.Heads, l.TP, l.CP)
	}
	if l.SP && l.TP == 1 {
		c.Add("layout.sp", "sequence parallelism needs tp > 1")
	}
	// The variant of a parallelism the layout does not use would change nothing
	// and be echoed back as if it had.
	if l.CPAllToAll && l.CP <= 1 {
		c.Add("layout.cp_all_to_all", "chooses the context-parallel variant (Ulysses all-to-alls): needs cp > 1 (got cp %d)", l.CP)
	}
	if l.OverlapTP && l.TP <= 1 {
		c.Add("layout.overlap_tp", "overlaps TP communication with the GEMMs: needs tp > 1")
	}
	stages := l.PP * l.VirtualStages
	if len(l.LayerSplit) > 0 {
		if len(l.LayerSplit) != stages {
			c.Add("layout.layer_split", "must give %d stages (pp × virtual stages), got %d", stages, len(l.LayerSplit))
		} else {
			sum := 0
			for i, n := range l.LayerSplit {
				if n < 1 {
					c.Add(fmt.Sprintf("layout.layer_split[%d]", i), "every stage needs at least one layer (got %d)", n)
				}
				sum += n
			}
			if sum != a.Layers {
				c.Add("layout.layer_split", "must sum to the %d layers (got %d)", a.Layers, sum)
			}
		}
	} else if a.Layers%stages != 0 && (stages > a.Layers || l.PP > 1 && l.Schedule != ZeroBubbleV) {
		// Not for fewer chunks than layers under ZB-V (its even split, which no
		// layer_split helps) or without a pipeline (chunks of pp 1, which the
		// schedules' rules refuse): a pipeline of fewer chunks than layers is
		// split cost-balanced under every other schedule (balanceSplit).
		c.Add("layout.pp", "pp × virtual stages (%d) must be at most the %d layers (a stage holds at least one; the split is cost-balanced when it does not divide them), or give layout.layer_split", stages, a.Layers)
	}
	validateRuns(&c, l, a, t)
	// MoE parallel folding (Megatron-Core parallel_state.py): the expert groups are
	// cut from the TP × CP × DP ranks of a stage, ETP × EP of them per expert copy.
	stageRanks := l.TP * l.CP * l.DP
	if e := l.ETP; e != 0 && e != l.TP {
		switch {
		case e < 0 || e > l.TP:
			c.Add("layout.etp", "expert tensor parallelism must be between 1 and tp %d, or 0 for tp (got %d)", l.TP, e)
		case a.MoE == nil:
			c.Add("layout.etp", "expert tensor parallelism needs an MoE model")
		case !l.SP:
			c.Add("layout.etp", "with etp %d < tp each TP rank routes its sequence-parallel share of the tokens: needs sp", e)
		case a.MoE.ExpertFFN > 0 && a.MoE.ExpertFFN%e != 0:
			c.Add("layout.etp", "must divide the expert FFN size %d (got %d)", a.MoE.ExpertFFN, e)
		}
	}
	if l.EP > 1 {
		switch {
		case a.MoE == nil:
			c.Add("layout.ep", "expert parallelism needs an MoE model (got ep %d)", l.EP)
		case a.MoE.Experts%l.EP != 0:
			c.Add("layout.ep", "must divide the %d experts (got %d)", a.MoE.Experts, l.EP)
		case stageRanks%(l.etp()*l.EP) != 0:
			c.Add("layout.ep", "etp × ep = %d × %d must divide the tp × cp × dp = %d ranks of a pipeline stage, over which the expert groups fold (got ep %d)", l.etp(), l.EP, stageRanks, l.EP)
		}
	}
	if t.SeqLen%l.CP != 0 {
		c.Add("layout.cp", "must divide the sequence length %d (got %d)", t.SeqLen, l.CP)
	} else if l.TP > 1 && l.SP && (t.SeqLen/l.CP)%l.TP != 0 {
		c.Add("layout.tp", "with sequence parallelism must divide the %d tokens per CP rank (got %d)", t.SeqLen/l.CP, l.TP)
	}
	if l.MicroBatch < 1 || l.MicroBatch > MaxMicroBatch {
		c.Add("layout.micro_batch", "must be between 1 and %d (got %d)", MaxMicroBatch, l.MicroBatch)
	} else if t.GlobalBatch%(l.DP*l.MicroBatch) != 0 {
		c.Add("training.global_batch", "must be a multiple of dp × micro_batch = %d×%d (got %d)", l.DP, l.MicroBatch, t.GlobalBatch)
	}
	m := 0 // micro-batches per replica, when the batch divides
	if l.MicroBatch >= 1 && t.GlobalBatch%(l.DP*l.MicroBatch) == 0 {
		m = t.GlobalBatch / (l.DP * l.MicroBatch)
	}
	validateSchedule(&c, l, m, a.Layers)
	validateOverlapTP(&c, l)
	validateOverlapEP(&c, l)
	if r.Ranks != nil {
		n := l.TP * l.PP * l.DP * l.CP
		if r.Ranks.cluster != r.Cluster.Base() {
			c.Add("ranks", "were placed on another cluster")
		} else if r.Ranks.Len() != n {
			c.Add("ranks", "place %d ranks, the layout has tp×pp×dp×cp = %d", r.Ranks.Len(), n)
		}
	}
	if r.Cluster != nil {
		n := l.TP * l.PP * l.DP * l.CP
		if n > r.Cluster.GPUs() {
			c.Add("layout", "tp×pp×dp×cp = %d GPUs, more than the cluster's %d", n, r.Cluster.GPUs())
		}
		if g := r.Cluster.Spec.GPUsPerNode; l.TP > g && l.TP%g != 0 {
			c.Add("layout.tp", "a TP group larger than a node (%d GPUs) must span whole nodes (got %d)", g, l.TP)
		}
	}
	if g, err := newGrid(l); err != nil {
		c.Join(err)
	} else if eg := g.expertGrid(l); a.MoE != nil && l.PP > 1 && eg.stride[DimPP] != g.stride[DimPP] && c.Err() == nil {
		// Megatron-Core asserts that both grids give the same pipeline groups (with
		// a rank order not ending in pp, the same data-parallel size).
		c.Add("layout.rank_order", "%q puts pp inside the stage's ranks, so the expert grid (etp %d × ep %d) must cut the same pipeline groups as the dense one (tp %d × cp %d): give an order ending in pp", l.RankOrder, l.etp(), max(1, l.EP), l.TP, l.CP)
	}
	return c.Err()
}

// validateOverlapTP checks TP comm-GEMM overlap's framework rule: Megatron-LM's
// arguments assert sequence parallelism with --tp-comm-overlap (the overlap splits
// the all-gather and reduce-scatter of sequence parallelism), as torch's async TP
// works on sequence-parallel all-gathers and reduce-scatters.
func validateOverlapTP(c *invalid.Collector, l *Layout) {
	if l.OverlapTP && l.TP > 1 && !l.SP {
		c.Add("layout.overlap_tp", "TP communication overlap needs sequence parallelism (sp), as Megatron-LM's --tp-comm-overlap and torch async TP do")
	}
}

// validateOverlapEP checks the expert-parallel all-to-all overlap's framework
// rules, Megatron-Core's for --overlap-moe-expert-parallel-comm (TransformerConfig:
// expert parallelism, virtual pipeline stages when pp > 1 — its combined 1F1B
// schedule exists without a pipeline and interleaved —, no full recomputation, no
// recomputation of the MoE layer and no shared-expert overlap beside it).
// DualPipe overlaps the all-to-alls by itself.
//
// The last two, megatron/core/transformer/transformer_config.py
// (TransformerConfig.__post_init__): "disable moe_shared_expert_overlap when
// enabling overlap_moe_expert_parallel_comm" from the overlap's first release
// (core_v0.14.0) to d98e8a6 (2026-08), through 2436e3d (MLPerf Training v6.0);
// "disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm"
// from 45b8eac (2026-03-20, "Missing Assertion for moe layer recompute in A2A
// Overlap": the combined 1F1B's per-layer callables never checkpointed the MoE
// layer) to d98e8a6. Megatron-Bridge 4b4b5c9 asserts the same
// (src/megatron/bridge/training/comm_overlap.py, shared-expert overlap).
func validateOverlapEP(c *invalid.Collector, l *Layout) {
	if !l.OverlapEP {
		return
	}
	if l.Schedule == DualPipe {
		// DualPipe overlaps the all-to-alls itself, whatever the other rules;
		// with ep 1 there are none to overlap.
		if l.EP < 2 {
			c.Add("layout.overlap_ep", "overlapping the expert-parallel all-to-alls needs ep > 1: with ep %d there are none (%s overlaps them itself where there are)", max(1, l.EP), DualPipe)
		}
		return
	}
	switch {
	case l.EP < 2:
		c.Add("layout.overlap_ep", "overlapping the expert-parallel all-to-alls needs ep > 1 (Megatron-Core asserts it)")
	case l.PP > 1 && l.Schedule != Interleaved:
		c.Add("layout.overlap_ep", "with pp > 1 the all-to-all overlap runs on the %s schedule only (Megatron-Core's combined 1F1B; got %s)", Interleaved, l.Schedule)
	case l.Recompute == RecomputeFull:
		c.Add("layout.overlap_ep", "the all-to-all overlap does not run with full recomputation (Megatron-Core asserts recompute_granularity != full)")
	case l.Recompute == RecomputeSelective && slices.Contains(l.RecomputeModules, "moe"):
		c.Add("layout.overlap_ep", "the all-to-all overlap does not run with the MoE layer recomputed (recompute_modules moe: Megatron-Core asserts \"moe\" not in recompute_modules)")
	case l.OverlapSharedExpert:
		c.Add("layout.overlap_ep", "the all-to-all overlap does not run beside the shared-expert overlap (overlap_shared_expert: Megatron-Core asserts not moe_shared_expert_overlap)")
	}
}

// prefix re-roots field errors under p.
func prefix(p string, err error) error {
	var out invalid.Collector
	for _, e := range unwrap(err) {
		if fe, ok := e.(*invalid.Error); ok {
			out.Join(fe.Under(p + fe.Field))
		} else {
			out.Join(e)
		}
	}
	return out.Err()
}

func unwrap(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unwrap(e)...)
		}
		return out
	}
	return []error{err}
}

// validateEvenSplit refuses, under a framework that splits the layers only evenly
// (framework.Runs.EvenLayerSplit, Megatron-LM of 2021), a pipeline whose stages
// or model chunks would hold different numbers of layers, a split accounting for
// the embedding or the loss, and interleaving over 2 stages or fewer.
func validateEvenSplit(c *invalid.Collector, l *Layout, a *model.Arch, p *framework.Profile) {
	if !p.Runs.EvenLayerSplit || l.PP < 2 {
		return
	}
	stages := l.PP * l.VirtualStages
	switch {
	case a.Layers%stages != 0:
		c.Add("layout.pp", "%s splits the layers evenly: pp × virtual stages (%d) must divide the %d layers", p.Name, stages, a.Layers)
	case l.AccountForEmbedding:
		c.Add("layout.account_for_embedding", "%s splits the layers evenly and cannot count the embedding as a layer", p.Name)
	case l.AccountForLoss:
		c.Add("layout.account_for_loss", "%s splits the layers evenly and cannot count the loss as a layer", p.Name)
	case len(l.LayerSplit) == stages && slices.ContainsFunc(l.LayerSplit, func(n int) bool { return n != a.Layers/stages }):
		c.Add("layout.layer_split", "%s splits the layers evenly: every stage holds %d layers (got %v)", p.Name, a.Layers/stages, l.LayerSplit)
	}
	if l.Schedule == Interleaved && l.PP <= 2 {
		c.Add("layout.virtual_stages", "%s interleaves only pipelines of more than 2 stages (pp %d)", p.Name, l.PP)
	}
}

// validateRuns refuses a layout the framework cannot run (framework.Profile.Runs),
// naming the layout field and the framework.
func validateRuns(c *invalid.Collector, l *Layout, a *model.Arch, t *Training) {
	p, err := framework.Get(t.Framework)
	if err != nil || !p.Runs.Limited() {
		return
	}
	validateEvenSplit(c, l, a, p)
	r := p.Runs
	if l.PP > 1 && r.NoPipeline {
		c.Add("layout.pp", "%s runs no pipeline parallelism (pp %d)", p.Name, l.PP)
	}
	if l.PP > 1 && len(r.Schedules) > 0 && !slices.Contains(r.Schedules, string(l.Schedule)) {
		c.Add("layout.schedule", "%s runs %s (got %s)", p.Name, framework.Or(asNames[Schedule](r.Schedules)), l.Schedule)
	}
	if !r.ZeROAllowed(l.ZeRO, l.PP > 1) {
		if l.PP > 1 && len(r.ZeROWithPipeline) > 0 {
			c.Add("layout.zero", "%s runs ZeRO %s with a pipeline (got %d with pp %d)", p.Name, framework.Or(r.ZeROWithPipeline), l.ZeRO, l.PP)
		} else {
			c.Add("layout.zero", "%s runs ZeRO %s (got %d)", p.Name, framework.Or(r.ZeRO), l.ZeRO)
		}
	}
	if len(r.Recompute) > 0 && l.Recompute != "" && !slices.Contains(r.Recompute, string(l.Recompute)) {
		c.Add("layout.recompute", "%s recomputes %s (got %s)", p.Name, framework.Or(asNames[Recompute](r.Recompute)), l.Recompute)
	}
	if l.SP && r.NoSequenceParallel {
		c.Add("layout.sp", "%s runs tensor parallelism without sequence parallelism", p.Name)
	}
	// Megatron-Core's fine-grained activation offloading (of 2026): the profiles
	// that run it say so (framework.Profile.ActivationOffload).
	if l.OffloadActivations && !p.ActivationOffload {
		c.Add("layout.offload_activations", "%s does not offload activations to host memory (Megatron-Core's fine-grained activation offloading, of 2026; the search tries it only where the framework runs it)", p.Name)
	}
	if l.CP > 1 && r.NoContextParallel {
		c.Add("layout.cp", "%s runs no context parallelism (cp %d)", p.Name, l.CP)
	} else if l.CP > 1 && a.MLA != nil && r.NoMLAContextParallel {
		c.Add("layout.cp", "%s runs no context parallelism for latent attention (cp %d): its Transformer Engine has no attention "+
			"backend for queries and keys wider than the values under context parallelism", p.Name, l.CP)
	}
	if l.CP > 1 && !l.CPAllToAll && a.SlidingWindow > 0 && r.NoSlidingWindowRingCP && !r.NoContextParallel {
		c.Add("layout.cp_all_to_all", "%s runs context parallelism for sliding-window attention only by all-to-alls (cp_all_to_all; cp %d): "+
			"its Transformer Engine asserts that the ring (cp_comm_type p2p) does not support a sliding window", p.Name, l.CP)
	}
	switch {
	case !l.OverlapTP:
	case r.NoTPOverlap:
		c.Add("layout.overlap_tp", "%s does not overlap TP communication with the GEMMs", p.Name)
	case a.MLA != nil && r.NoMLATPOverlap:
		c.Add("layout.overlap_tp", "%s does not overlap TP communication with the GEMMs of a model with latent attention (mla): "+
			"Megatron-Core's MLA projections take no userbuffers (0.12 refuses to build the model; later versions switch the overlap off "+
			"for every module built after the first layer's q down-projection)", p.Name)
	}
	if l.OverlapEP && r.NoEPOverlap {
		c.Add("layout.overlap_ep", "%s does not overlap the expert-parallel all-to-alls", p.Name)
	}
	if r.NoGradAccumulation && l.PP <= 1 && l.DP > 0 && l.MicroBatch > 0 && t.GlobalBatch%l.DP == 0 && l.MicroBatch != t.GlobalBatch/l.DP {
		c.Add("layout.micro_batch", "%s has no gradient accumulation: without a pipeline a step is one micro-batch of the local batch "+
			"(global batch %d / dp %d = %d; got %d)", p.Name, t.GlobalBatch, l.DP, t.GlobalBatch/l.DP, l.MicroBatch)
	}
	if r.FP8ParamsSharded && l.ZeRO == 0 && t.Precision == FP8 && (l.FP8Params || t.FP8Params) {
		c.Add("layout.zero", "%s keeps fp8 weights only under a sharded optimizer, zero 1 or more: no other optimizer quantises the updated weights into them (got zero 0)", p.Name)
	}
	if r.DDPAlone && l.ZeRO == 0 && l.DP > 1 && (l.TP > 1 || l.PP > 1 || l.CP > 1) {
		c.Add("layout.zero", "%s replicates data parallelism (zero 0) only without TP, PP or CP beside it (tp %d, pp %d, cp %d)", p.Name, l.TP, l.PP, l.CP)
	}
	if r.ExpertTPIsTP && a.MoE != nil && l.ETP != 0 && l.ETP != l.TP {
		c.Add("layout.etp", "%s splits the experts over the tensor-parallel ranks like the dense MLP: etp must be tp %d (got %d)", p.Name, l.TP, l.ETP)
	}
}

// asNames is a framework's list of schedules or recomputations (strings) as the
// values they name, so that an error listing them keeps their type
// (invalid.Error.Respell spells them as the API does).
func asNames[T ~string](vs []string) []T {
	out := make([]T, len(vs))
	for i, v := range vs {
		out[i] = T(v)
	}
	return out
}
