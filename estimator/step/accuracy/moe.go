package accuracy

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/internal/jsonl"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
)

// testdata/published_runs_moe.jsonl holds published runs of mixture-of-experts
// models, fp8 dense training and Blackwell GPUs, with the layout and the figures
// each source states (testdata/README.md gives the provenance). They are not part
// of Runs (the original 127 runs' tests keep their own figures); AllCases joins
// them for the cross-validation of every run.
//
//go:embed testdata/published_runs_moe.jsonl
var publishedMoE []byte

// StatedMeasure is one published figure: its value and the text the source prints
// (Stated), from which the rounding of the figure is read.
type StatedMeasure struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Stated *string `json:"stated"`
	Unit   string  `json:"unit"`
}

// MoESpec is a row's mixture-of-experts block. Null fields are not stated by the
// source.
type MoESpec struct {
	Experts        int      `json:"num_experts"`
	TopK           int      `json:"top_k"`
	ExpertFFN      int      `json:"expert_ffn_hidden_size"`
	Shared         int      `json:"shared_experts"`
	LayerFreq      int      `json:"layer_freq"`
	FirstDense     int      `json:"first_dense_layers"`
	CapacityFactor *float64 `json:"capacity_factor"`
	// PadToCapacity: every expert's tokens padded up to its capacity
	// (Megatron-Core's moe_pad_expert_input_to_capacity); null: not stated.
	PadToCapacity *bool   `json:"pad_to_capacity"`
	Dispatcher    *string `json:"token_dispatcher"`
	GroupedGEMM   *bool   `json:"grouped_gemm"`
	MTPLayers     *int    `json:"mtp_layers"`
	// PermuteFusion: the token permutation runs as fused kernels (Megatron-Core's
	// moe_permute_fusion); null: not stated.
	PermuteFusion *bool `json:"permute_fusion"`
	// RouterDType: the router's scores' precision (Megatron-Core's
	// moe_router_dtype: "fp32", "fp64"); null: not stated, the model's 16 bits.
	RouterDType *string `json:"router_dtype"`
	// SharedExpertOverlap: the shared experts run while the dispatch and combine
	// all-to-alls of the same micro-batch are in flight (Megatron-Core's
	// moe_shared_expert_overlap); null: not stated.
	SharedExpertOverlap *bool `json:"shared_expert_overlap"`
	// Bias: the routed experts' linear layers carry biases (model.MoE.Bias;
	// gpt-oss, Megatron-Core's add_bias_linear); null: not stated, none.
	Bias *bool `json:"bias"`
}

// MLASpec is a row's multi-head latent attention ranks (DeepSeek-V3).
type MLASpec struct {
	QLoRARank  int `json:"q_lora_rank"`
	KVLoRARank int `json:"kv_lora_rank"`
	QKNopeDim  int `json:"qk_nope_head_dim"`
	QKRopeDim  int `json:"qk_rope_head_dim"`
	VDim       int `json:"v_head_dim"`
}

// MoERun is one row of published_runs_moe.jsonl: the fields of Run's schema plus
// the ones MoE, fp8 and Blackwell runs need (testdata/README.md documents each).
type MoERun struct {
	ID           string   `json:"id"`
	Kind         []string `json:"kind"`
	Source       string   `json:"source"`
	SourceKind   string   `json:"source_kind"`
	Repository   string   `json:"repository"`
	File         *string  `json:"file"`
	Release      *string  `json:"release"`
	Commit       *string  `json:"commit"`
	Table        string   `json:"table"`
	Model        string   `json:"model"`
	CatalogModel *string  `json:"catalog_model"`
	ParamsB      *float64 `json:"params_b"`
	Layers       int      `json:"num_layers"`
	Hidden       int      `json:"hidden_size"`
	Heads        int      `json:"num_heads"`
	KVHeads      *int     `json:"num_kv_heads"`
	HeadDim      *int     `json:"head_dim"`
	FFN          int      `json:"ffn_hidden_size"`
	Gated        bool     `json:"gated_mlp"`
	Vocab        int      `json:"vocab_size"`
	Tied         bool     `json:"tie_word_embeddings"`
	MoE          *MoESpec `json:"moe"`
	MLA          *MLASpec `json:"mla"`
	// SlidingWindow and GlobalEvery: the attention window of the windowed layers
	// and every how many layers one attends to the whole sequence (model.Arch's
	// fields); null: every layer attends to the whole sequence.
	SlidingWindow *int `json:"sliding_window"`
	// GLUClamp is the limit the gated MLP clamps its inputs to before the
	// activation (model.Arch.GLUClamp; gpt-oss: 7); null: no clamp.
	GLUClamp    *float64 `json:"glu_clamp"`
	GlobalEvery *int     `json:"global_every"`
	SeqLen      int      `json:"seq_len"`
	GPU         string   `json:"gpu"`
	GPUMemGB    float64  `json:"gpu_mem_gb"`
	GPUs        int      `json:"num_gpus"`
	GPUsPerNode int      `json:"gpus_per_node"`
	System      string   `json:"system"`
	TP          int      `json:"tp"`
	PP          int      `json:"pp"`
	DP          int      `json:"dp"`
	CP          int      `json:"cp"`
	EP          *int     `json:"ep"`
	ETP         *int     `json:"etp"`
	SP          *bool    `json:"sequence_parallel"`
	OverlapTP   *bool    `json:"tp_comm_overlap"`
	// OverlapEP: the expert-parallel all-to-alls are overlapped with another
	// micro-batch's compute (Megatron-Core's overlap_moe_expert_parallel_comm);
	// null: not stated.
	OverlapEP *bool `json:"ep_comm_overlap"`
	// CPCommType is how context parallelism exchanges the sequence
	// (Megatron-Core's cp_comm_type): "p2p" the ring of K/V blocks, "a2a" the
	// all-to-alls that trade the sequence split for a head split (DeepSpeed-Ulysses);
	// null: not stated (the ring, Megatron-Core's default).
	CPCommType *string `json:"cp_comm_type,omitempty"`
	VPP        *int    `json:"virtual_pipeline_stages"`
	Schedule   *string `json:"pipeline_schedule"`
	// LayerSplit is the transformer layers of each pipeline stage, first to last,
	// when the source's scripts set them; null: not stated.
	LayerSplit   []int   `json:"layer_split"`
	MicroBatch   *int    `json:"micro_batch_size"`
	GlobalBatch  int     `json:"global_batch_size"`
	GradAccum    *int    `json:"grad_accum"`
	Recompute    string  `json:"recompute"`
	RecomputeMod *string `json:"recompute_modules"`
	ZeRO         any     `json:"zero_stage"`
	Precision    string  `json:"precision"`
	FP8Recipe    *string `json:"fp8_recipe"`
	FP8Params    *bool   `json:"fp8_params"`
	// FP8FilterFQNs are the linears the source's fp8 conversion leaves in 16 bits
	// (torchao's filter_fqns, as torchtitan passes them to module_filter_fn);
	// null: not stated. "attention.wk" and "attention.wv" together set
	// step.Training.FP8KVIn16Bits.
	FP8FilterFQNs []string `json:"fp8_filter_fqns,omitempty"`
	CUDAGraphs    *bool    `json:"cuda_graphs"`
	// FlashAttention2: the source's scripts turn the framework's Hopper-native
	// fused attention off, so flash-attn 2 runs (Transformer Engine's
	// NVTE_FUSED_ATTN=0); null: not stated (the framework's kernel).
	FlashAttention2 *bool           `json:"flash_attention_2,omitempty"`
	Framework       string          `json:"framework"`
	FrameworkVer    string          `json:"framework_version"`
	Dataset         *string         `json:"dataset"`
	Measured        []StatedMeasure `json:"measured"`
	DerivedStepS    float64         `json:"derived_step_time_s"`
	Derivation      string          `json:"derivation"`
	// DDPBucketSize is the parameters per data-parallel gradient bucket the
	// source's scripts set (Megatron-Core's bucket_size); null: not stated.
	DDPBucketSize *float64 `json:"ddp_bucket_size"`
	// GradReduceDType is the width data parallelism reduces the gradients in, and
	// Megatron-Core's DDP accumulates them in (its main_grad buffer), as the source's
	// scripts set it: "bf16" where they turn NeMo's grad_reduce_in_fp32 off (NeMo's
	// performance recipes), "fp32" where it stays on; null: not stated, the
	// framework profile's (framework.Profile.GradReduceBytes).
	GradReduceDType *string `json:"grad_reduce_dtype,omitempty"`
	// CPNCCLMaxCTAs is the NCCL maxCTAs the source's configuration gives the
	// context-parallel process group (Megatron-Core's nccl_communicator_config_path,
	// its "cp" entry's max_ctas); null: not set, NCCL's default.
	CPNCCLMaxCTAs *int `json:"cp_nccl_max_ctas,omitempty"`
	// TEOpFuserExperts: the source's configuration runs the routed experts through
	// Transformer Engine's op fuser (Megatron-Core's use_transformer_engine_op_fuser;
	// USE_TE_OPS with NVTE_CUTEDSL_FUSED_GROUPED_MLP in MLPerf v6.0's gpt-oss
	// configs): priced with the nemo-te-ops profile.
	TEOpFuserExperts bool `json:"te_op_fuser_experts,omitempty"`
	// DPNCCLMaxCTAs and TPNCCLMaxCTAs are the NCCL maxCTAs the same configuration
	// gives the data-parallel groups ("dp" and "dp_cp") and the tensor-parallel group
	// ("tp"); absent: NCCL's default.
	DPNCCLMaxCTAs *int `json:"dp_nccl_max_ctas,omitempty"`
	TPNCCLMaxCTAs *int `json:"tp_nccl_max_ctas,omitempty"`
	// CUDADeviceMaxConnections is the CUDA_DEVICE_MAX_CONNECTIONS the run's
	// configuration exports (the hardware queues its streams share); absent: the
	// framework's launch, as a request leaves it (step.Training.DeviceMaxConnections).
	CUDADeviceMaxConnections *int `json:"cuda_device_max_connections,omitempty"`
	// NCCLNVLSEnable is NCCL_NVLS_ENABLE as the run's launch environment set it:
	// false where the source's scripts export NCCL_NVLS_ENABLE=0 (the
	// NVIDIA-derived MLPerf implementations' config_common.sh: "needed to save
	// memory. nvbug 4264087"), so NCCL builds no NVLink SHARP communicators and the
	// run is priced on its system with in-switch reduction off; absent: not set, the
	// system's own. true on a system without NVLS is refused.
	NCCLNVLSEnable *bool `json:"nccl_nvls_enable,omitempty"`
	// ThroughputBatch is the batch (sequences) the stated tokens/s corresponds to
	// when the source computed it with another batch than the layout's (a
	// transcription slip of the source, explained in ConsistencyNotes); null: GBS.
	ThroughputBatch  *int    `json:"throughput_batch"`
	ConsistencyNotes *string `json:"consistency_notes"`
	Confidence       string  `json:"confidence"`
	Notes            string  `json:"notes"`
	// SupersededBy names a later row of the same publisher's recipe that measured
	// the same model on the same GPU with the same tokens per GPU and step on a
	// newer software stack, faster (TestMoERunsLoad checks it); null: none. Such a
	// row is scored but not fitted (Case.ScoreOnly): what separates the two step
	// times is in the stack, which the framework profiles describe only in part,
	// not in the GPU's efficiencies.
	SupersededBy *string `json:"superseded_by,omitempty"`
}

// MoERuns parses the embedded MoE, fp8 and Blackwell runs. Unlike Runs it refuses
// a field MoERun does not have: a misspelt setting would otherwise be priced as
// unset.
func MoERuns() ([]MoERun, error) {
	return jsonl.DecodeStrict[MoERun]("published_runs_moe.jsonl", publishedMoE)
}

// Has reports whether the row is of the kind ("moe", "fp8", "blackwell").
func (r MoERun) Has(kind string) bool {
	for _, k := range r.Kind {
		if k == kind {
			return true
		}
	}
	return false
}

func (r MoERun) ep() int {
	if r.EP == nil {
		return 1
	}
	return *r.EP
}

func (r MoERun) measure(metric string) (StatedMeasure, bool) {
	for _, m := range r.Measured {
		if m.Metric == metric {
			return m, true
		}
	}
	return StatedMeasure{}, false
}

// roundingOf is half a unit of the last digit printed in s ("24.00" → 0.005,
// "180K" → 500, "5078.1" → 0.05).
func roundingOf(s string) float64 {
	s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
	scale := 1.0
	if strings.HasSuffix(s, "K") {
		s, scale = strings.TrimSuffix(s, "K"), 1e3
	}
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return 0.5 * math.Pow(10, -float64(len(s)-i-1)) * scale
	}
	return 0.5 * scale
}

func statedValue(s string) (float64, error) {
	// A log's thousands separators ("tps: 12,211", torchtitan's metrics line) are
	// not part of the number.
	t := strings.ReplaceAll(strings.TrimSpace(strings.TrimSuffix(s, "%")), ",", "")
	scale := 1.0
	if strings.HasSuffix(t, "K") {
		t, scale = strings.TrimSuffix(t, "K"), 1e3
	}
	v, err := strconv.ParseFloat(t, 64)
	return v * scale, err
}

// StepFromMeasure converts the primary measurement into seconds per step: the step
// time as stated (or the median of a run log's step times), seq × GBS / (tokens/s/GPU × GPUs), or GPU-hours per trillion
// tokens × 3600 / GPUs × tokens per step. It also returns the step-time band the
// figure's rounding allows.
func (r MoERun) StepFromMeasure() (s, lo, hi float64, err error) {
	if len(r.Measured) == 0 {
		return 0, 0, 0, errors.New("measured: empty")
	}
	m := r.Measured[0]
	if m.Stated == nil {
		return 0, 0, 0, fmt.Errorf("measured[0].stated: the figure as printed is missing")
	}
	half := roundingOf(*m.Stated)
	tokens := float64(r.SeqLen) * float64(r.GlobalBatch)
	n := float64(r.GPUs)
	switch m.Metric {
	case "step_time", "step_time_median":
		return m.Value, m.Value - half, m.Value + half, nil
	case "tokens_per_sec_per_gpu":
		f := func(v float64) float64 { return tokens / (v * n) }
		return f(m.Value), f(m.Value + half), f(m.Value - half), nil
	case "gpu_hours_per_trillion_tokens":
		f := func(v float64) float64 { return v * 3600 / n * tokens / 1e12 }
		return f(m.Value), f(m.Value - half), f(m.Value + half), nil
	case "megatron_tflops_per_gpu":
		flops, err := r.megatronFLOPsPerSequence()
		if err != nil {
			return 0, 0, 0, err
		}
		f := func(v float64) float64 { return flops * float64(r.GlobalBatch) / (v * 1e12 * n) }
		return f(m.Value), f(m.Value + half), f(m.Value - half), nil
	}
	return 0, 0, 0, fmt.Errorf("measured[0].metric: unknown %q", m.Metric)
}

// megatronFLOPsPerSequence is the model FLOPs of one sequence as Megatron-LM counts
// them for its logged "throughput per GPU (TFLOP/s/GPU)" (megatron/training/
// training.py, num_floating_point_operations, at core_r0.8.0 and core_r0.9.0):
// 12·s·L·h²·((1 + g/a + s/h)·q/h + f/h·k·(3/2 if gated) + V/(2·L·h)), with q the
// query projection width (heads × head size), g/a the query groups over the heads,
// f the FFN width, k the experts a token is routed to (1 without MoE) and V the
// padded vocabulary. Attention is counted over the whole s × s score matrix and the
// router not at all. Multi-head latent attention has another formula there, so such
// rows are refused.
func (r MoERun) megatronFLOPsPerSequence() (float64, error) {
	if r.MLA != nil {
		return 0, errors.New("measured[0].metric: megatron_tflops_per_gpu is defined here for attention without MLA")
	}
	if r.Hidden <= 0 || r.Heads <= 0 || r.Layers <= 0 {
		return 0, errors.New("megatron_tflops_per_gpu needs num_layers, hidden_size and num_heads")
	}
	h, s, L := float64(r.Hidden), float64(r.SeqLen), float64(r.Layers)
	q := h
	if r.HeadDim != nil {
		q = float64(*r.HeadDim * r.Heads)
	}
	groups := 1.0
	if r.KVHeads != nil {
		groups = float64(*r.KVHeads) / float64(r.Heads)
	}
	k, gated := 1.0, 1.0
	if r.MoE != nil {
		k = float64(r.MoE.TopK)
	}
	if r.Gated {
		gated = 1.5
	}
	return 12 * s * L * h * h * ((1+groups+s/h)*q/h + float64(r.FFN)/h*k*gated + float64(r.Vocab)/(2*L*h)), nil
}

// Check verifies a row is internally consistent: every stated figure parses to its
// value, GPUs = TP × PP × DP × CP, GBS = MBS × DP × gradient accumulation, the
// expert layout divides the experts and the TP × CP × DP ranks it folds over, the
// derived step time is the arithmetic its derivation shows, a log's median step time
// lies between its minimum and maximum, and a stated tokens/s
// agrees with seq × GBS / step time within the printed figures' rounding.
func (r MoERun) Check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if r.ID == "" || r.Source == "" || r.Table == "" || r.Repository == "" {
		bad("id, source, repository and table are required")
	}
	if r.GPUs <= 0 || r.TP < 1 || r.PP < 1 || r.DP < 1 || r.CP < 1 || r.SeqLen <= 0 || r.GlobalBatch <= 0 {
		bad("num_gpus, tp, pp, dp, cp, seq_len and global_batch_size must be positive")
		return errors.Join(errs...)
	}
	if p := r.TP * r.PP * r.DP * r.CP; p != r.GPUs {
		bad("num_gpus %d != tp %d × pp %d × dp %d × cp %d = %d", r.GPUs, r.TP, r.PP, r.DP, r.CP, p)
	}
	if r.MicroBatch != nil && r.GradAccum != nil {
		if g := *r.MicroBatch * r.DP * *r.GradAccum; g != r.GlobalBatch {
			bad("global_batch_size %d != micro_batch_size %d × dp %d × grad_accum %d = %d", r.GlobalBatch, *r.MicroBatch, r.DP, *r.GradAccum, g)
		}
	}
	switch c := deref(r.CPCommType, "p2p"); {
	case c != "p2p" && c != "a2a":
		bad("cp_comm_type %q: want p2p or a2a", c)
	case c == "a2a" && r.CP < 2:
		bad("cp_comm_type a2a with cp %d", r.CP)
	}
	if r.MoE != nil {
		etp := 1
		if r.ETP != nil {
			etp = *r.ETP
		} else {
			etp = r.TP // experts split like the dense MLP
		}
		if r.MoE.Experts%r.ep() != 0 {
			bad("ep %d does not divide the %d experts", r.ep(), r.MoE.Experts)
		}
		if ranks := r.TP * r.CP * r.DP; ranks%(r.ep()*etp) != 0 {
			bad("ep %d × etp %d does not divide the tp × cp × dp = %d ranks of a pipeline stage", r.ep(), etp, ranks)
		}
	} else if r.ep() > 1 || r.Has("moe") {
		bad("ep or kind moe without a moe block")
	}
	for i, m := range r.Measured {
		if m.Stated == nil {
			continue
		}
		v, err := statedValue(*m.Stated)
		if err != nil || math.Abs(v-m.Value) > 1e-9*math.Max(1, math.Abs(v)) {
			bad("measured[%d] (%s): value %v is not the stated %q", i, m.Metric, m.Value, *m.Stated)
		}
	}
	s, lo, hi, err := r.StepFromMeasure()
	if err != nil {
		bad("%v", err)
		return errors.Join(errs...)
	}
	if math.Abs(r.DerivedStepS-s) > 1e-5*s {
		bad("derived_step_time_s %.6f, but the measurement gives %.6f (%s)", r.DerivedStepS, s, r.Derivation)
	}
	if med, ok := r.measure("step_time_median"); ok {
		lo, okLo := r.measure("step_time_min")
		hi, okHi := r.measure("step_time_max")
		if !okLo || !okHi || lo.Value > med.Value || med.Value > hi.Value {
			bad("step_time_median %v needs step_time_min ≤ it ≤ step_time_max", med.Value)
		}
	}
	if tps, ok := r.measure("tokens_per_sec"); ok && r.Measured[0].Metric == "step_time" {
		b := r.GlobalBatch
		if r.ThroughputBatch != nil {
			if r.ConsistencyNotes == nil {
				bad("throughput_batch without consistency_notes")
			}
			b = *r.ThroughputBatch
		}
		tok := float64(r.SeqLen) * float64(b)
		// The stated tokens/s, rounded, must fall within what the step time's
		// rounding allows, widened by ThroughputTolerance: the tables' tokens/s come
		// from the unrounded mean step time.
		tol := ThroughputTolerance
		if r.ConsistencyNotes != nil && r.ThroughputBatch == nil {
			tol = ExplainedTolerance
		}
		half := roundingOf(*tps.Stated)
		if tps.Value+half < tok/hi*(1-tol) || tps.Value-half > tok/lo*(1+tol) {
			bad("tokens/s %s is not seq %d × %d / step %.4g s = %.1f (within rounding %.4g–%.4g s and %.1f%%)", *tps.Stated, r.SeqLen, b, s, tok/s, lo, hi, 100*tol)
		}
	}
	return errors.Join(errs...)
}

// ThroughputTolerance is how far a table's tokens/s may stand from seq × GBS / the
// printed step time: the DGX Cloud tables print tokens/s computed from the mean
// step time before it was rounded, and disagree with the printed step time by up to
// 0.07 % (Llama 4 Maverick on 512 GB200 with fp8: 5306935 against 8192 × 4096 /
// 6.327 = 5303372).
const ThroughputTolerance = 0.001

// ExplainedTolerance bounds a disagreement the row explains in consistency_notes
// (Grok-1 fp8 on 1024 H100: 981295 tokens/s against 8192 × 2048 / 17.01 = 986315,
// 0.5 %).
const ExplainedTolerance = 0.01

// NVL72Trays is the compute trays of one GB200 NVL72 rack (one NVLink domain: 72
// GPUs, 4 a tray), and NVL72SegmentTrays the trays of the segments jobs are
// allocated in on such racks — inferred from the runs (every published GB200 run
// is a multiple of 64 GPUs, none of 72): docs/step-model.md, "MoE, fp8 and
// Blackwell runs".
const (
	NVL72Trays        = 18
	NVL72SegmentTrays = 16
)

// ErrInexpressible marks a published layout the step model cannot state.
var ErrInexpressible = errors.New("not expressible in the step model")

// MoECase turns a row into an estimate request. Settings the row leaves open and
// approximations are listed in filled. A layout the model cannot express returns an
// error wrapping ErrInexpressible with the reason.
func MoECase(r MoERun) (req step.Request, filled []string, err error) {
	fill := func(format string, a ...any) { filled = append(filled, fmt.Sprintf(format, a...)) }
	var a model.Arch
	if r.CatalogModel != nil {
		if a, err = model.Lookup(*r.CatalogModel); err != nil {
			return req, nil, fmt.Errorf("catalog_model: %w", err)
		}
	}
	a.Name = r.Model
	a.Layers, a.Hidden, a.Heads, a.FFN, a.Vocab = r.Layers, r.Hidden, r.Heads, r.FFN, r.Vocab
	a.GatedMLP, a.TiedEmbeddings = r.Gated, r.Tied
	a.KVHeads = r.Heads
	if r.KVHeads != nil {
		a.KVHeads = *r.KVHeads
	}
	if r.HeadDim != nil {
		a.HeadSize = *r.HeadDim
	}
	catalogMoE := a.MoE
	a.MoE, a.MLA = nil, nil
	if m := r.MoE; m != nil {
		moe := &model.MoE{Experts: m.Experts, TopK: m.TopK, ExpertFFN: m.ExpertFFN, Frequency: m.LayerFreq,
			SharedExperts: m.Shared, FirstDense: m.FirstDense, Bias: m.Bias != nil && *m.Bias}
		if c := catalogMoE; c != nil && c.Experts == m.Experts && c.TopK == m.TopK {
			// Group-limited routing is the model's (DeepSeek-V3's n_group 8 /
			// topk_group 4 in its config.json), not the run's: kept from the catalog.
			moe.Groups, moe.TopKGroups = c.Groups, c.TopKGroups
		}
		a.MoE = moe
		switch {
		case m.MTPLayers != nil:
			a.MTPLayers = *m.MTPLayers
		case a.MTPLayers > 0:
			fill("multi-token prediction not stated: none (the recipe does not set it)")
			a.MTPLayers = 0
		}
	}
	if r.SlidingWindow != nil {
		a.SlidingWindow = *r.SlidingWindow
	}
	if r.GlobalEvery != nil {
		a.GlobalEvery = *r.GlobalEvery
	}
	if r.GLUClamp != nil {
		if *r.GLUClamp <= 0 {
			return req, nil, fmt.Errorf("glu_clamp: must be positive (got %g)", *r.GLUClamp)
		}
		a.GLUClamp = true
	}
	if m := r.MLA; m != nil {
		a.MLA = &model.MLA{QLoRARank: m.QLoRARank, KVLoRARank: m.KVLoRARank, QKNopeDim: m.QKNopeDim, QKRopeDim: m.QKRopeDim, VDim: m.VDim}
	}

	spec, err := catalog.System(r.System)
	if err != nil {
		return req, nil, fmt.Errorf("system: %w", err)
	}
	if strings.Contains(r.GPU, "HBM2e") {
		note, err := h100HBM2e500W(&spec, r.GPUMemGB)
		if err != nil {
			return req, nil, err
		}
		fill("%s", note)
	}
	switch gl := strings.ToLower(r.GPU); {
	case strings.HasPrefix(gl, "b200") && strings.Contains(gl, "750 w"):
		g, err := catalog.GPU("B200-750W")
		if err != nil {
			return req, nil, err
		}
		spec.GPU = g
		fill("B200 at 750 W: B200-750W rates")
	case strings.Contains(gl, "power limited"):
		fill("power limit not stated: the catalog %s rates", spec.GPU.Name)
	}
	if spec.GPUsPerNode != r.GPUsPerNode {
		return req, nil, fmt.Errorf("gpus_per_node %d but system %s has %d", r.GPUsPerNode, r.System, spec.GPUsPerNode)
	}
	spec.Nodes = (r.GPUs + spec.GPUsPerNode - 1) / spec.GPUsPerNode
	if spec.Intra.DomainNodes == NVL72Trays && r.GPUs%(NVL72SegmentTrays*spec.GPUsPerNode) == 0 {
		// GB200 NVL72 jobs run in segments of 16 of a rack's 18 trays: every
		// published GB200 run uses a multiple of 64 GPUs (128–512, 1024, 1536, 2048,
		// 2496 = 39 × 64, not a multiple of 72), consistent with Slurm segments of 16
		// trays (--segment=16 under the block topology plugin), and their weak-scaling
		// series are flat where a 64-GPU expert group straddling two racks would not be.
		spec.Intra.DomainNodes = NVL72SegmentTrays
		fill("NVLink domains of %d trays (%d GPUs): the job's segments of an NVL72 rack", NVL72SegmentTrays, NVL72SegmentTrays*spec.GPUsPerNode)
	}
	if note, err := nvlsAsRunSet(&spec.Intra.NVLS, r.NCCLNVLSEnable, r.System); err != nil {
		return req, nil, err
	} else if note != "" {
		fill("%s", note)
	}
	cl, err := spec.Build()
	if err != nil {
		return req, nil, err
	}

	l := step.Layout{TP: r.TP, PP: r.PP, DP: r.DP, CP: r.CP, EP: r.ep(), MicroBatch: 1}
	switch c := deref(r.CPCommType, "p2p"); c {
	case "a2a":
		l.CPAllToAll = true
	case "p2p":
	default:
		return req, filled, fmt.Errorf("cp_comm_type: unknown %q", c)
	}
	if r.MicroBatch != nil {
		l.MicroBatch = *r.MicroBatch
	} else {
		fill("micro-batch size not stated: 1")
	}
	if r.ETP != nil && *r.ETP == 1 && r.TP > 1 {
		l.ETP = 1
	}
	if r.ETP != nil && *r.ETP > 1 {
		l.ETP = *r.ETP
	}
	switch {
	case r.SP != nil:
		l.SP = *r.SP && r.TP > 1
	case r.TP > 1:
		l.SP = true
		fill("sequence parallelism with TP (not stated; Megatron-Core's and torchtitan's TP plans use it)")
	}
	if r.OverlapTP != nil {
		l.OverlapTP = *r.OverlapTP && r.TP > 1
	}
	if r.OverlapEP != nil {
		l.OverlapEP = *r.OverlapEP && r.ep() > 1
	}
	if m := r.MoE; m != nil && m.SharedExpertOverlap != nil {
		l.OverlapSharedExpert = *m.SharedExpertOverlap && m.Shared > 0
	}
	l.ZeRO = zeroStage(r.ZeRO, l.ZeRO)
	switch rc := r.Recompute; {
	case rc == "none":
		l.Recompute = step.RecomputeNone
	case rc == "full":
		l.Recompute = step.RecomputeFull
	case rc == "selective op":
		l.Recompute = step.RecomputeOps
	case rc == "selective modules":
		l.Recompute = step.RecomputeSelective
		mods, err := recomputeModules(deref(r.RecomputeMod, ""))
		if err != nil {
			return req, filled, err
		}
		l.RecomputeModules = mods
	default:
		return req, filled, fmt.Errorf("recompute: unknown %q", rc)
	}
	sched := deref(r.Schedule, "")
	switch {
	case sched == "dualpipe":
		l.Schedule = step.DualPipe
		l.OverlapEP = true
	case sched == "interleaved" && r.PP > 1:
		l.Schedule = step.Interleaved
		l.VirtualStages = deref(r.VPP, 1)
	case r.PP > 1:
		l.Schedule = step.OneFOneB
	}
	// A split the model cannot infer (it adds the embedding and the loss as a
	// layer each, as Megatron-LM's account-for flags do, where that makes the stages
	// even) is spread evenly, earlier stages one layer more.
	if st := r.PP * max(1, l.VirtualStages); len(r.LayerSplit) > 0 {
		l.LayerSplit = append([]int(nil), r.LayerSplit...)
	} else if r.PP > 1 && r.Layers%st != 0 && sched == "dualpipe" {
		l.LayerSplit = endsLighter(r.Layers, st)
		fill("layers split %v over the %d stages: the first and last stages, which also hold the embedding and the output layer (DeepSeek-V3 §3.2.3), one layer fewer", l.LayerSplit, st)
	} else if r.PP > 1 && r.Layers%st != 0 && (r.Layers+1)%st != 0 && (r.Layers+2)%st != 0 {
		l.LayerSplit = step.EvenSplit(r.Layers, st)
		fill("layers split %v over the %d stages (not stated)", l.LayerSplit, st)
	}

	t := step.Training{SeqLen: r.SeqLen, GlobalBatch: r.GlobalBatch, Precision: step.BF16}
	fwl := strings.ToLower(r.Framework)
	switch {
	case strings.Contains(fwl, "torchtitan") && midTorchtitan(r.FrameworkVer):
		// torchtitan between v0.1.0's era and the attention refactor of 2025-10-09:
		// cuDNN attention first on Blackwell, left out of per-op SAC's save list
		// (the torchtitan-0.1 profile).
		t.Framework = "torchtitan-0.1"
	case strings.Contains(fwl, "torchtitan") && strings.Contains(r.FrameworkVer, "torch 2.10 nightly"):
		// torchtitan on the torch 2.10 nightlies of October–November 2025, whose
		// grouped GEMMs torchao measured on B200 then (the torchtitan-2025-11
		// profile).
		t.Framework = "torchtitan-2025-11"
	case strings.Contains(fwl, "torchtitan"):
		t.Framework = "torchtitan"
	case strings.Contains(fwl, "nemo") && strings.Contains(strings.ToLower(r.FrameworkVer), "nemo 25.04"):
		// NeMo 25.04 ships a Transformer Engine before 2.5, whose fused attention on Blackwell
		// takes heads up to 128 wide only (the nemo-25.04 profile).
		t.Framework = "nemo-25.04"
	case strings.Contains(fwl, "nemo") && strings.Contains(strings.ToLower(r.FrameworkVer), "nemo 24.12"):
		// NeMo 24.12 passes no expert tensor-parallel size: the experts split like
		// the dense MLP (the nemo-24.12 profile).
		t.Framework = "nemo-24.12"
	case strings.Contains(fwl, "nemo") && mcore012Container(r.FrameworkVer):
		// The MLPerf implementation on the 24.09–25.04 containers (Megatron-Core
		// 0.8–0.12), with its own precision settings: the nemo-24 profile.
		t.Framework = "nemo-24"
	case strings.Contains(fwl, "nemo") && r.TEOpFuserExperts:
		// The experts in Transformer Engine's op fuser: their clamp and bias inside
		// its grouped MLP (the nemo-te-ops profile).
		t.Framework = "nemo-te-ops"
	case strings.Contains(fwl, "nemo"):
		t.Framework = "nemo"
	case strings.Contains(strings.ToLower(r.FrameworkVer), "megatron-core v0.8"), strings.Contains(strings.ToLower(r.FrameworkVer), "megatron-core v0.9"):
		t.Framework = "megatron-core-0.12"
	case strings.Contains(fwl, "hai-llm"):
		// DeepSeek's HAI-LLM (DeepSeek-V3 report §3.2–3.3): its profile carries the
		// node-limited fp8 dispatch, fused permutation and fp8 activation caching;
		// the report's AdamW keeps BF16 moments with FP32 master weights and FP32
		// gradients for the batch accumulation (§3.3.3): 2 + 4 + 8 B per parameter;
		// it trains without dropout (config.json attention_dropout 0.0).
		t.Framework = "hai-llm"
		t.Optimizer = step.Optimizer{Name: "adamw-bf16-moments", WeightBytes: 2, GradBytes: 4, StateBytes: 8}
		t.NoDropout = true
	default:
		t.Framework = "megatron-core"
		fill("framework %q priced with the megatron-core profile", r.Framework)
	}
	if r.Precision == "fp8" {
		t.Precision = step.FP8
		t.FP8Params = r.FP8Params != nil && *r.FP8Params
		switch rec := deref(r.FP8Recipe, ""); {
		case rec == "delayed":
			t.FP8Recipe = step.FP8Delayed
		case rec == "current":
			t.FP8Recipe = step.FP8Current
		case rec == "rowwise":
			t.FP8Recipe = step.FP8Rowwise
		case rec == "mxfp8":
			t.FP8Recipe = step.FP8MXFP8
		case strings.HasPrefix(rec, "blockwise"):
			t.FP8Recipe = step.FP8Blockwise
		case rec == "":
			fill("fp8 recipe not stated: the %s profile's", t.Framework)
		default:
			t.FP8Recipe = step.FP8Current
			fill("fp8 recipe %q priced as per-tensor current scaling (the model has no 1×128 / 128×128 block scaling)", rec)
		}
		t.FP8KVIn16Bits = slices.Contains(r.FP8FilterFQNs, "attention.wk") && slices.Contains(r.FP8FilterFQNs, "attention.wv")
	}
	if m := r.MoE; m != nil && m.CapacityFactor != nil {
		t.MoECapacityFactor = *m.CapacityFactor
		t.MoEPadToCapacity = m.PadToCapacity != nil && *m.PadToCapacity
	}
	if m := r.MoE; m != nil && m.Dispatcher != nil {
		switch d := strings.ToLower(*m.Dispatcher); {
		case d == "alltoall":
			t.MoEDispatcher = step.DispatchAllToAll
		case strings.Contains(d, "flex"), strings.Contains(d, "deepep"):
			t.MoEDispatcher = step.DispatchDeepEP
		case t.Framework == "hai-llm":
			// The report's own node-limited all-to-all: the hai-llm profile's.
		default:
			return req, filled, fmt.Errorf("moe.token_dispatcher: unknown %q", *m.Dispatcher)
		}
	}
	if m := r.MoE; m != nil && m.PermuteFusion != nil {
		t.MoEPermuteFusion = *m.PermuteFusion
	}
	if m := r.MoE; m != nil && m.GroupedGEMM != nil {
		t.MoEGroupedGEMM = *m.GroupedGEMM
	}
	if m := r.MoE; m != nil && m.RouterDType != nil {
		switch d := strings.ToLower(*m.RouterDType); d {
		case "fp32":
			t.MoERouterFP32 = true
		default:
			return req, filled, fmt.Errorf("moe.router_dtype: unknown %q (want fp32)", *m.RouterDType)
		}
	}
	t.CUDAGraphs = r.CUDAGraphs != nil && *r.CUDAGraphs
	t.FlashAttention2 = r.FlashAttention2 != nil && *r.FlashAttention2
	if r.DDPBucketSize != nil {
		t.DPBucketParams = *r.DDPBucketSize
	}
	if r.GradReduceDType != nil {
		// Megatron-Core's DistributedDataParallel allocates its gradient buffers in
		// fp32 when grad_reduce_in_fp32 is set and in the parameters' dtype otherwise
		// (megatron/core/distributed/distributed_data_parallel.py: grad_dtype =
		// torch.float if self.ddp_config.grad_reduce_in_fp32 else param.dtype):
		// the gradient bytes the request's optimizer carries.
		var b float64
		switch d := strings.ToLower(*r.GradReduceDType); d {
		case "bf16":
			b = 2
		case "fp32":
			b = 4
		default:
			return req, filled, fmt.Errorf("grad_reduce_dtype: unknown %q (want bf16 or fp32)", *r.GradReduceDType)
		}
		if t.Optimizer == (step.Optimizer{}) {
			t.Optimizer = step.AdamMixed()
		}
		t.Optimizer.GradBytes = b
	}
	if r.CPNCCLMaxCTAs != nil {
		t.CPMaxCTAs = *r.CPNCCLMaxCTAs
	}
	if r.DPNCCLMaxCTAs != nil {
		t.DPMaxCTAs = *r.DPNCCLMaxCTAs
	}
	if r.TPNCCLMaxCTAs != nil {
		t.TPMaxCTAs = *r.TPNCCLMaxCTAs
	}
	if r.CUDADeviceMaxConnections != nil {
		t.DeviceMaxConnections = *r.CUDADeviceMaxConnections
	}
	return step.Request{Model: a, Training: t, Cluster: cl, Layout: l}, filled, nil
}

// torchtitanMid lists the torchtitan commits the rows name that lie between
// 3b85aa31f (PR #1196, 2025-05-14: cuDNN attention first on sm100) and 6a3a9da95
// (2025-10-09: cuDNN first everywhere), before the save list took the cuDNN kernel
// (b39377f9f, 2025-12-01): 3b85aa31f itself (PR #1196's measurement after the
// change), e7c0cae (2025-06-13, the H200 benchmark of Trainy on WhiteFiber), 820504e
// (2025-06, the async-TP benchmark) and 6fc499f (2025-08-14, torchao's B200 table).
var torchtitanMid = []string{"torchtitan 3b85aa31f", "torchtitan e7c0cae", "torchtitan 820504e", "torchtitan 6fc499f"}

// midTorchtitan tells whether a row's framework_version names a torchtitan of
// the torchtitan-0.1 profile.
func midTorchtitan(ver string) bool {
	for _, c := range torchtitanMid {
		if strings.Contains(ver, c) {
			return true
		}
	}
	return false
}

// recomputeModules maps a row's recompute_modules to Megatron-Core's module names
// (Layout.RecomputeModules). The DeepSeek-V3 report names them in prose: RMSNorm
// and the MLA up-projections (§3.2.3) and the SwiGLU output of the MoE (§3.3.3,
// "we cache the inputs of the SwiGLU operator and recompute its output").
func recomputeModules(s string) ([]string, error) {
	if strings.Contains(s, "RMSNorm and MLA up-projections") {
		return []string{"layernorm", "mla_up_proj", "moe_act"}, nil
	}
	out := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
	if len(out) == 0 {
		return nil, errors.New("recompute_modules: recompute selective modules names none")
	}
	return out, nil
}

// endsLighter splits layers over stages as DualPipe runs do: the stages that also
// hold the embedding (first) and the output layer (last) take one layer fewer, then
// the stages before the last, so that the per-rank pairs (r, P−1−r) stay balanced.
func endsLighter(layers, stages int) []int {
	per := (layers + stages - 1) / stages
	out := make([]int, stages)
	for i := range out {
		out[i] = per
	}
	short := per*stages - layers
	order := []int{stages - 1, 0}
	for j := stages - 2; j > 0; j-- {
		order = append(order, j)
	}
	for _, j := range order[:min(short, len(order))] {
		out[j]--
	}
	return out
}

// Publication names the publication a row comes from, the unit the
// cross-validation leaves out: each release of NVIDIA's DGX Cloud benchmarking
// recipes (v25.02, v25.05; v24.11.1's runs are in published_runs.jsonl as "dgxc"),
// each MLPerf Training round, the torchao README and the DeepSeek-V3 report.
// torchtitan's fp8 benchmarks (its async-TP file and its mxfp8 Llama 4 table) join
// torchtitan's docs/performance.md runs of published_runs.jsonl: one framework, the
// same Grand Teton H100 clusters and the same throughput metric (SourceOf's rule),
// so they are left out together.
func (r MoERun) Publication() string {
	p := r.ID
	if i := strings.IndexByte(p, '_'); i > 0 {
		p = p[:i]
	}
	switch p {
	case "dgxc":
		return "dgxc2505"
	case "torchtitan":
		return "torchtitan"
	case "deepseekv3":
		return "deepseekv3"
	}
	return p
}

// MoECases turns every row into a Case of the cross-validation (Run carries the
// id, the publication, the kinds and the batch; Request is MoECase's). A row the
// model cannot express, or whose measurement does not convert, keeps the error.
func MoECases(runs []MoERun) []Case {
	out := make([]Case, 0, len(runs))
	for _, r := range runs {
		mbs := r.MicroBatch
		c := Case{Run: Run{ID: r.ID, Source: r.Source, Model: r.Model, Layers: r.Layers, Hidden: r.Hidden, Heads: r.Heads,
			GPU: r.GPU, GPUMemGB: r.GPUMemGB, GPUs: r.GPUs, MicroBatch: mbs, GlobalBatch: r.GlobalBatch,
			Precision: r.Precision, Framework: r.Framework, Notes: r.Notes,
			Publication: r.Publication(), Kind: r.Kind}}
		c.Request, c.Filled, c.Err = MoECase(r)
		// Scored, not fitted: a run at a power limit the source does not state (its
		// clocks, and so every efficiency it would calibrate, are unknown); a row
		// transcribed with low confidence (its layout is not certainly the one that
		// ran, or its hosts measured the same stack slower than another measurement
		// of it: torchao's B200 table); and a row a later measurement of the same
		// work per GPU supersedes (its step time is its software stack's, not the
		// GPU's efficiencies').
		c.ScoreOnly = strings.Contains(strings.ToLower(r.GPU), "power limited") && !strings.Contains(r.GPU, "W") ||
			r.Confidence == "low" || r.SupersededBy != nil
		if c.Err == nil {
			c.MeasuredS, _, _, c.Err = r.StepFromMeasure()
		}
		out = append(out, c)
	}
	return out
}

// AllCases is every published run: published_runs.jsonl's and
// published_runs_moe.jsonl's.
func AllCases() ([]Case, error) {
	runs, err := Runs()
	if err != nil {
		return nil, err
	}
	moe, err := MoERuns()
	if err != nil {
		return nil, err
	}
	return append(Cases(runs), MoECases(moe)...), nil
}

// HasKind reports whether a run is of the kind ("moe", "fp8", "blackwell").
func (r Run) HasKind(kind string) bool {
	for _, k := range r.Kind {
		if k == kind {
			return true
		}
	}
	return false
}

// mcore012Container tells whether a NeMo container version is one of those
// shipping Megatron-Core 0.7–0.12: NGC/NeMo 24.05 to 25.04, and MLPerf Training
// v4.1's preview container (submitted with ngc24.09's stack).
func mcore012Container(ver string) bool {
	v := strings.ToLower(ver)
	for _, c := range []string{"ngc24.", "ngc25.01", "ngc25.04", "preview container"} {
		if strings.Contains(v, c) {
			return true
		}
	}
	return false
}

// nvlsAsRunSet prices a run with NVLink SHARP as its launch environment set it:
// enable false (NCCL_NVLS_ENABLE=0 in its scripts) turns the system's NVLS off, with
// the note to record; enable true on a system without NVLS is refused naming the
// field; nil leaves the system as it is.
func nvlsAsRunSet(nvls *bool, enable *bool, system string) (note string, err error) {
	switch {
	case enable == nil:
	case !*enable && *nvls:
		*nvls = false
		return "NVLS off: NCCL_NVLS_ENABLE=0 in the run's launch environment", nil
	case *enable && !*nvls:
		return "", fmt.Errorf("nccl_nvls_enable: true but system %s has no NVLS (intra.nvls)", system)
	}
	return "", nil
}
