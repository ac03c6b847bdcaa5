// Package accuracy compares the step-cost model with published training runs: it
// turns every run of testdata/published_runs.jsonl into an estimate request, converts
// the primary measurement into a step time and reports the error, per run and per
// ranking set. testdata/README.md gives the provenance.
package accuracy

import (
	_ "embed"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/internal/jsonl"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

//go:embed testdata/published_runs.jsonl
var published []byte

// Measured is one published measurement of a run.
type Measured struct {
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
}

// Run is one published training run (the fields the comparison uses).
type Run struct {
	ID          string     `json:"id"`
	Source      string     `json:"source"`
	Model       string     `json:"model"`
	Layers      int        `json:"num_layers"`
	Hidden      int        `json:"hidden_size"`
	Heads       int        `json:"num_heads"`
	KVHeads     *int       `json:"num_kv_heads"`
	FFN         *int       `json:"ffn_hidden_size"`
	SeqLen      *int       `json:"seq_len"`
	Vocab       *int       `json:"vocab_size"`
	Tied        *bool      `json:"tie_word_embeddings"`
	FP8Params   *bool      `json:"fp8_params"`
	GPU         string     `json:"gpu"`
	GPUMemGB    float64    `json:"gpu_mem_gb"`
	GPUs        int        `json:"num_gpus"`
	GPUsPerNode *int       `json:"gpus_per_node"`
	InterNode   *string    `json:"inter_node_network"`
	RawTP       *int       `json:"tp"`
	RawPP       *int       `json:"pp"`
	RawDP       *int       `json:"dp"`
	RawCP       *int       `json:"cp"`
	SP          *bool      `json:"sequence_parallel"`
	VPP         *int       `json:"virtual_pipeline_stages"`
	Schedule    *string    `json:"pipeline_schedule"`
	MicroBatch  *int       `json:"micro_batch_size"`
	GlobalBatch int        `json:"global_batch_size"`
	Recompute   *string    `json:"recompute"`
	ZeRO        any        `json:"zero_stage"`
	Precision   string     `json:"precision"`
	Framework   string     `json:"framework"`
	Measured    []Measured `json:"measured"`
	RankingSet  *string    `json:"ranking_set"`
	Outcome     string     `json:"outcome"`
	Notes       string     `json:"notes"`
	// FlashAttention2: the source's scripts turn the framework's Hopper-native
	// fused attention off (Transformer Engine's NVTE_FUSED_ATTN=0), so flash-attn 2
	// runs; null: not stated (the framework's kernel).
	FlashAttention2 *bool `json:"flash_attention_2"`
	// NCCLNVLSEnable is NCCL_NVLS_ENABLE as the source's launch scripts set it:
	// false where they export NCCL_NVLS_ENABLE=0 (dgxc-benchmarking's
	// llama3.1/configure.sh and nemo_megatron/launch.sh), so the run is priced on
	// its system with NVLink SHARP off; absent: not set, the system's own.
	NCCLNVLSEnable *bool `json:"nccl_nvls_enable,omitempty"`
	// Publication names the source of a run of published_runs_moe.jsonl (MoECases);
	// empty for published_runs.jsonl, whose source is the prefix of the id.
	Publication string `json:"-"`
	// Kind lists what a run of published_runs_moe.jsonl exercises: "moe", "fp8",
	// "blackwell".
	Kind []string `json:"-"`
}

// Runs parses the embedded data set.
func Runs() ([]Run, error) {
	return jsonl.Decode[Run]("published_runs.jsonl", published)
}

// Case is a run turned into an estimate request.
type Case struct {
	Run     Run
	Request step.Request
	// MeasuredS is the measured step time in seconds.
	MeasuredS float64
	// Filled lists the settings the source does not state and how they were filled.
	Filled []string
	// Search marks settings left open for the estimator to choose (micro-batch size,
	// interleaving depth), as the planner would.
	SearchMicroBatch, SearchVirtual bool
	// PublishedOOM: the source reports the run ran out of memory; it has no step
	// time, and the estimate must come out infeasible.
	PublishedOOM bool
	// ScoreOnly: the run is priced and scored but the fit does not train on it —
	// its GPUs ran at a power limit the source does not state, so their clocks, and
	// with them every efficiency the run would calibrate, are unknown; or its row
	// is of low confidence or superseded (MoECases).
	ScoreOnly bool
	Err       error
}

// Cases maps every run.
func Cases(runs []Run) []Case {
	out := make([]Case, 0, len(runs))
	for _, r := range runs {
		out = append(out, toCase(r))
	}
	return out
}

func deref[T any](p *T, d T) T {
	if p == nil {
		return d
	}
	return *p
}

// zeroStage reads a row's zero_stage (Run.ZeRO, MoERun.ZeRO): a number is the
// stage, a text naming FSDP is stage 3 (fully sharded); anything else leaves stage.
func zeroStage(z any, stage int) int {
	switch z := z.(type) {
	case float64:
		return int(z)
	case string:
		if strings.Contains(z, "FSDP") {
			return 3
		}
	}
	return stage
}

// h100HBM2e500W puts the catalog's H100 SXM with HBM2e at a 500 W power limit, with
// the row's memory (gpu_mem_gb), on spec, and says so for the case's filled list.
func h100HBM2e500W(spec *topology.Spec, memGB float64) (string, error) {
	g, err := catalog.GPU("H100-SXM-HBM2e-500W")
	if err != nil {
		return "", err
	}
	g.MemoryGB = memGB
	spec.GPU = g
	return fmt.Sprintf("H100 HBM2e at 500 W: H100-SXM-HBM2e-500W rates with %v GB", memGB), nil
}

// catalogName maps the data's model names to catalog entries for what the row does not
// state (FFN size and vocabulary of Llama 2, gating, tying).
func catalogName(m string) string {
	l := strings.ToLower(m)
	switch {
	case strings.Contains(l, "llama 2 13b"):
		return "llama2-13b"
	case strings.Contains(l, "llama 2 70b"):
		return "llama2-70b"
	case strings.Contains(l, "llama 3") && strings.Contains(l, "405b"):
		return "llama3-405b"
	case strings.Contains(l, "llama 3") && strings.Contains(l, "70b"):
		return "llama3-70b"
	case strings.Contains(l, "llama 3") && strings.Contains(l, "8b"):
		return "llama3-8b"
	case strings.Contains(l, "mpt-70b"):
		return "mpt-70b"
	case strings.Contains(l, "mpt-30b"):
		return "mpt-30b"
	case strings.Contains(l, "mpt-13b"), strings.Contains(l, "mpt-7b"):
		return "mpt-7b" // the family's conventions (MHA, 4h, tied); sizes come from the row
	case strings.Contains(l, "tinyllama"):
		return "llama2-7b" // TinyLlama: the Llama 2 architecture (gated MLP, untied); sizes from the row
	case strings.Contains(l, "nanotron llama"):
		// nanotron's Llama benchmark shapes: gated (SiLU) MLP; sizes, heads, vocabulary
		// and tying come from the row.
		return "llama3-8b"
	}
	return "gpt3-175b" // Megatron GPT: MHA, 4h, tied embeddings
}

func toCase(r Run) Case {
	c := Case{Run: r}
	fill := func(format string, args ...any) { c.Filled = append(c.Filled, fmt.Sprintf(format, args...)) }

	base, err := model.Lookup(catalogName(r.Model))
	if err != nil {
		c.Err = err
		return c
	}
	a := base
	a.Name = r.Model
	a.Layers, a.Hidden, a.Heads = r.Layers, r.Hidden, r.Heads
	a.KVHeads = deref(r.KVHeads, r.Heads)
	if r.FFN != nil {
		a.FFN = *r.FFN
	} else if !strings.HasPrefix(base.Name, "llama") {
		a.FFN = 4 * r.Hidden
	} else {
		fill("ffn %d from the %s config", a.FFN, base.Name)
	}
	if r.Vocab != nil {
		a.Vocab = *r.Vocab
	} else {
		fill("vocab %d from the %s config", a.Vocab, base.Name)
	}
	if r.Tied != nil {
		// The row states whether the output projection shares the input embedding
		// (nanotron's benchmark ties it below 4B parameters, NeMo's GPT-3 shares it).
		a.TiedEmbeddings = *r.Tied
	}
	seq := deref(r.SeqLen, 0)
	if seq == 0 {
		seq = 8192
		fill("seq_len 8192 (torchtitan's Llama 3 default)")
	}

	// Cluster.
	sys := "dgx-a100"
	inter := strings.ToLower(deref(r.InterNode, ""))
	switch {
	case strings.HasPrefix(r.GPU, "H100"):
		sys = "dgx-h100"
	case strings.Contains(inter, "roce"):
		sys = "oci-bm-gpu-a100"
	}
	spec, err := catalog.System(sys)
	if err != nil {
		c.Err = err
		return c
	}
	if strings.Contains(r.GPU, "40GB") {
		g, _ := catalog.GPU("A100-40GB")
		spec.GPU = g
	} else if strings.HasPrefix(r.GPU, "A100") {
		g, _ := catalog.GPU("A100-80GB")
		spec.GPU = g
	}
	if strings.HasPrefix(r.GPU, "H100") && strings.Contains(r.GPU, "HBM2e") {
		// The row states a power-limited HBM2e H100 ("500W power limit", "lower TDP").
		note, err := h100HBM2e500W(&spec, r.GPUMemGB)
		if err != nil {
			c.Err = err
			return c
		}
		fill("%s", note)
	}
	if note, err := nvlsAsRunSet(&spec.Intra.NVLS, r.NCCLNVLSEnable, sys); err != nil {
		c.Err = err
		return c
	} else if note != "" {
		fill("%s", note)
	}
	per := deref(r.GPUsPerNode, 8)
	spec.Nodes = (r.GPUs + per - 1) / per
	cl, err := spec.Build()
	if err != nil {
		c.Err = err
		return c
	}

	// Layout.
	l := step.Layout{
		TP: deref(r.RawTP, 0), PP: deref(r.RawPP, 0), DP: deref(r.RawDP, 0), CP: deref(r.RawCP, 1),
		SP: deref(r.SP, false),
	}
	if l.TP == 0 && l.PP == 0 {
		// Narayanan Table 2 PTD-P 175B: (t, p) = (8, 12) per the paper's text.
		l.TP, l.PP = 8, r.GPUs/(l.DP*8)
		fill("tp 8, pp %d (the paper's PTD-P configuration for 175B)", l.PP)
	}
	if l.DP == 0 {
		l.DP = r.GPUs / (l.TP * l.PP * l.CP)
	}
	if fwl := strings.ToLower(r.Framework); strings.Contains(fwl, "async tp") || strings.HasSuffix(r.ID, "_asynctp") ||
		strings.Contains(fwl, "tp comm overlap") {
		// torchtitan's async TP and NeMo's userbuffer TP communication overlap
		// (ub_tp_comm_overlap) both hide TP communication behind the GEMMs.
		l.OverlapTP = true
	}
	fw := frameworkOf(r)
	if strings.HasPrefix(fw, "torchtitan") && l.TP > 1 {
		fill("sequence parallelism with TP (framework torchtitan: its TP plan)")
	}
	l.ZeRO = zeroStage(r.ZeRO, l.ZeRO)
	rc := strings.ToLower(deref(r.Recompute, ""))
	switch {
	case strings.HasPrefix(rc, "full"), strings.Contains(rc, "assumed full"):
		l.Recompute = step.RecomputeFull
	case rc == "selective op":
		l.Recompute = step.RecomputeOps
	case rc == "selective" && strings.Contains(strings.ToLower(r.Framework), "torchtitan"):
		l.Recompute = step.RecomputeOps
		fill("selective: op-level (torchtitan's Llama 3 8B preset, train_configs/llama3_8b.toml: selective_ac_option = 'op')")
	case rc == "selective layer":
		// torchtitan's layer-wise selective checkpointing, at its default of every
		// second layer.
		l.Recompute, l.RecomputeLayers = step.RecomputeFull, r.Layers/2
		fill("selective layer: every second layer fully recomputed (torchtitan's selective_ac_option default \"2\")")
	case strings.HasPrefix(rc, "selective"):
		l.Recompute = step.RecomputeSelective
	default:
		l.Recompute = step.RecomputeNone
	}
	sched := strings.ToLower(deref(r.Schedule, ""))
	switch {
	case strings.Contains(sched, "interleaved"):
		l.Schedule = step.Interleaved
		if r.VPP != nil {
			l.VirtualStages = *r.VPP
		} else {
			c.SearchVirtual = true
			fill("interleaving depth not stated: the fastest valid one")
		}
	case l.PP > 1:
		l.Schedule = step.OneFOneB
	}
	if stages := l.PP * max(1, l.VirtualStages); l.PP > 1 && r.Layers%stages != 0 && !c.SearchVirtual {
		l.LayerSplit = step.EvenSplit(r.Layers, stages)
		fill("layers split %v over the %d pipeline stages (not divisible; earlier stages one more)", l.LayerSplit, stages)
	}
	if r.MicroBatch != nil {
		l.MicroBatch = *r.MicroBatch
	} else {
		c.SearchMicroBatch = true
		fill("micro-batch size not stated: the fastest valid one")
	}
	t := step.Training{SeqLen: seq, GlobalBatch: r.GlobalBatch, Precision: step.BF16, Framework: fw}
	t.FlashAttention2 = r.FlashAttention2 != nil && *r.FlashAttention2
	if p := strings.ToLower(r.Precision); strings.Contains(p, "float8") || strings.HasPrefix(p, "fp8") {
		t.Precision = step.FP8
		t.FP8Params = r.FP8Params != nil && *r.FP8Params
	}
	if fw == "megatron-lm-2021" {
		// "Mixed precision (16-bit)" in Megatron-LM of 2021 is fp16: its GPT-3 175B
		// script of that time (examples/pretrain_gpt3_175B.sh at 42c1cf4, May 2021,
		// Narayanan et al.'s (t, p) = (8, 16)) trains with --fp16.
		t.Precision = step.FP16
		fill("fp16 (Megatron-LM 2021's GPT-3 175B script trains with --fp16)")
	}
	switch {
	case fw == "lightning":
		fill("gradients reduced in fp32 (Lightning bf16 autocast: fp32 weights and gradients)")
	case fw == "composer" && strings.Contains(r.Precision, "mode DEFAULT"):
		fill("gradients reduced in fp32 (framework composer: FSDP mixed precision DEFAULT)")
	case fw == "composer":
		// Mixed precision PURE keeps gradients in bf16.
		t.Optimizer = step.AdamMixed()
	}
	if fw == "composer" && l.ZeRO == 3 {
		fill("FSDP backward prefetch BACKWARD_POST (framework composer: its FSDPConfig default)")
	}
	c.Request = step.Request{Model: a, Training: t, Cluster: cl, Layout: l}

	// Measured step time.
	if strings.EqualFold(r.Outcome, "OOM") {
		c.PublishedOOM = true
		return c
	}
	if len(r.Measured) == 0 {
		c.Err = fmt.Errorf("no measurement")
		return c
	}
	m := r.Measured[0]
	tokens := float64(r.GlobalBatch) * float64(seq)
	switch m.Metric {
	case "achieved_tflops_per_gpu":
		// Narayanan eq. 3: F = 96·B·s·l·h²·(1 + s/6h + V/16lh), recompute included.
		B, s, L, h, V := float64(r.GlobalBatch), float64(seq), float64(r.Layers), float64(r.Hidden), float64(a.Vocab)
		F := 96 * B * s * L * h * h * (1 + s/(6*h) + V/(16*L*h))
		c.MeasuredS = F / (m.Value * 1e12 * float64(r.GPUs))
	case "tokens_per_sec":
		c.MeasuredS = tokens / m.Value
	case "tokens_per_sec_per_gpu":
		c.MeasuredS = tokens / (m.Value * float64(r.GPUs))
	default:
		c.Err = fmt.Errorf("unknown metric %q", m.Metric)
	}
	return c
}

// frameworkOf names the framework profile (estimator/framework) of a run from the
// framework its source states.
func frameworkOf(r Run) string {
	f := strings.ToLower(r.Framework)
	switch {
	case strings.Contains(f, "deepspeed zero-3"):
		return "deepspeed-2021"
	case strings.Contains(f, "megatron-lm (2021)"):
		return "megatron-lm-2021"
	case strings.Contains(f, "composer"), strings.Contains(f, "llm-foundry"):
		return "composer"
	case strings.Contains(f, "torchtitan") && strings.Contains(f, "2024-04"):
		return "torchtitan-2024-04"
	case strings.Contains(f, "torchtitan"):
		// The August 2024 (3faaa1a0d) and December 2024 (9dec370) runs: torchtitan
		// of 2024, without gradient accumulation.
		return "torchtitan-2024"
	case strings.Contains(f, "nemo 24."):
		// NeMo 24.05 and 24.09 (Megatron-Core 0.7–0.9).
		return "nemo-24"
	case strings.Contains(f, "nemo"):
		return "nemo"
	case strings.Contains(f, "megatron-deepspeed"):
		return "megatron-deepspeed"
	case strings.Contains(f, "deepspeed"):
		return "deepspeed"
	case strings.Contains(f, "fsdp"):
		return "fsdp"
	case strings.Contains(f, "flash-attention training"):
		// The flash-attention repository's training scripts: PyTorch Lightning's bf16
		// autocast keeps fp32 weights, so DDP reduces fp32 gradients, the loss is
		// Apex's fused 16-bit cross entropy and the optimizer Apex's FusedAdam.
		return "lightning"
	case strings.Contains(f, "nanotron"):
		// nanotron: flash attention, Megatron-style TP with reduce-scatter sequence
		// parallelism and a vocab-parallel loss, ZeRO-1 — the default profile's mechanisms.
		return "megatron-core"
	}
	return "megatron-core"
}

// Result is one priced run.
type Result struct {
	Case
	Estimate step.Result
	Layout   step.Layout // as estimated (with searched settings filled)
	RelErr   float64     // (predicted − measured) / measured step time
	Err      error
}

// Evaluate prices every case; open micro-batch sizes and interleaving depths are
// chosen as the fastest that fits, as the planner would.
func Evaluate(e *step.Estimator, cases []Case) []Result {
	out := make([]Result, 0, len(cases))
	for _, c := range cases {
		res := Result{Case: c, Err: c.Err}
		if c.Err == nil {
			res.Estimate, res.Layout, res.Err = best(e, c)
			if res.Err == nil && !c.PublishedOOM {
				res.RelErr = (res.Estimate.StepTime - c.MeasuredS) / c.MeasuredS
			}
		}
		out = append(out, res)
	}
	return out
}

func best(e *step.Estimator, c Case) (step.Result, step.Layout, error) {
	req := c.Request
	mbs := []int{req.Layout.MicroBatch}
	if c.SearchMicroBatch {
		mbs = nil
		per := req.Training.GlobalBatch / req.Layout.DP
		for b := 1; b <= min(per, 16); b++ {
			if per%b == 0 {
				mbs = append(mbs, b)
			}
		}
	}
	vs := []int{req.Layout.VirtualStages}
	if c.SearchVirtual {
		vs = nil
		for v := 1; v <= 8; v++ {
			vs = append(vs, v)
		}
	}
	var bestRes step.Result
	var bestL step.Layout
	var firstErr error
	found := false
	for _, b := range mbs {
		for _, v := range vs {
			r := req
			r.Layout.MicroBatch = b
			r.Layout.VirtualStages = v
			// A split the source states is priced as it ran; otherwise layers that do
			// not divide evenly go to the first chunks.
			if st := r.Layout.PP * max(1, v); r.Layout.PP > 1 && r.Model.Layers%st != 0 && len(req.Layout.LayerSplit) != st {
				r.Layout.LayerSplit = step.EvenSplit(r.Model.Layers, st)
			}
			if v > 1 {
				r.Layout.Schedule = step.Interleaved
			} else if r.Layout.Schedule == step.Interleaved {
				r.Layout.Schedule = step.OneFOneB
			}
			res, err := e.Estimate(r)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			better := !found || (res.Memory.Fits && !bestRes.Memory.Fits) ||
				(res.Memory.Fits == bestRes.Memory.Fits && res.StepTime < bestRes.StepTime)
			if better {
				bestRes, bestL, found = res, r.Layout, true
			}
		}
	}
	if !found {
		if firstErr == nil {
			firstErr = fmt.Errorf("no valid micro-batch size and interleaving depth")
		}
		return step.Result{}, step.Layout{}, firstErr
	}
	return bestRes, bestL, nil
}

// Summary of errors.
type Summary struct {
	N         int     `json:"runs"`
	MeanAbs   float64 `json:"mean_abs_err"`
	MedianAbs float64 `json:"median_abs_err"`
	Max       float64 `json:"max_abs_err"`
	Bias      float64 `json:"bias"`
	Worst     string  `json:"worst"`
}

// Summarise computes |error| statistics over the results without errors.
func Summarise(rs []Result) Summary {
	var errs []float64
	var s Summary
	for _, r := range rs {
		if r.Err != nil || r.PublishedOOM {
			continue
		}
		e := math.Abs(r.RelErr)
		errs = append(errs, e)
		s.MeanAbs += e
		s.Bias += r.RelErr
		if e > s.Max {
			s.Max, s.Worst = e, r.Run.ID
		}
	}
	s.N = len(errs)
	if s.N == 0 {
		return s
	}
	s.MeanAbs /= float64(s.N)
	s.Bias /= float64(s.N)
	sort.Float64s(errs)
	s.MedianAbs = errs[s.N/2]
	if s.N%2 == 0 {
		s.MedianAbs = (errs[s.N/2-1] + errs[s.N/2]) / 2
	}
	return s
}

// MissedOOM lists the runs published as out of memory that the estimate says fit
// (with any open micro-batch size or interleaving depth chosen to fit if one does),
// and how many runs were published as out of memory.
func MissedOOM(rs []Result) (missed []string, oom int) {
	for _, r := range rs {
		if !r.PublishedOOM {
			continue
		}
		oom++
		if r.Err == nil && r.Estimate.Memory.Fits {
			missed = append(missed, r.Run.ID)
		}
	}
	return missed, oom
}

// RepeatabilityTolerance is how far apart two published throughputs must be for
// their order to count: torchtitan's docs/performance.md published the same runs
// twice, re-measured — Llama 3 8B with selective layer checkpointing at 2876 and
// later 2904 tokens/s/GPU (1.0 %), Llama 3 70B with full checkpointing at 323 and 331
// (2.4 %). Runs closer than the smaller spread are a measured tie.
const RepeatabilityTolerance = 0.01

// Ranking is the agreement of predicted and measured order inside one ranking set.
type Ranking struct {
	Set string `json:"set"`
	N   int    `json:"runs"`
	// Tau is Kendall's τ-b of predicted vs measured throughput; TauRepeatable
	// counts measured pairs within RepeatabilityTolerance as ties. Ordered is false
	// when every pair ties: the set then has no measured order to keep.
	Tau           float64   `json:"tau"`
	TauRepeatable float64   `json:"tau_repeatable"`
	Ordered       bool      `json:"ordered"`
	IDs           []string  `json:"ids"`
	Pred          []float64 `json:"predicted"`
	Meas          []float64 `json:"measured"`
}

// Rankings computes Kendall τ for every ranking set with at least two runs.
func Rankings(rs []Result) []Ranking {
	sets := map[string]*Ranking{}
	var names []string
	for _, r := range rs {
		if r.Err != nil || r.PublishedOOM || r.Run.RankingSet == nil {
			continue
		}
		k := *r.Run.RankingSet
		if sets[k] == nil {
			sets[k] = &Ranking{Set: k}
			names = append(names, k)
		}
		s := sets[k]
		s.IDs = append(s.IDs, r.Run.ID)
		// Throughput (tokens per second per GPU) orders the layouts.
		tok := float64(r.Request.Training.GlobalBatch) * float64(r.Request.Training.SeqLen) / float64(r.Run.GPUs)
		s.Pred = append(s.Pred, tok/r.Estimate.StepTime)
		s.Meas = append(s.Meas, tok/r.MeasuredS)
	}
	sort.Strings(names)
	var out []Ranking
	for _, k := range names {
		s := sets[k]
		s.N = len(s.IDs)
		if s.N >= 2 {
			s.Tau, _ = kendall(s.Pred, s.Meas, 0)
			s.TauRepeatable, s.Ordered = kendall(s.Pred, s.Meas, RepeatabilityTolerance)
			out = append(out, *s)
		}
	}
	return out
}

// kendall is Kendall's τ-b; y values within a relative tol of each other tie.
// ordered is false when every pair of y ties (τ is then 0 and means nothing).
func kendall(x, y []float64, tol float64) (tau float64, ordered bool) {
	var conc, disc, tx, ty float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			dx, dy := x[i]-x[j], y[i]-y[j]
			if math.Abs(dy) <= tol*math.Max(math.Abs(y[i]), math.Abs(y[j])) {
				dy = 0
			}
			switch {
			case dx == 0 && dy == 0:
			case dx == 0:
				tx++
			case dy == 0:
				ty++
			case dx*dy > 0:
				conc++
			default:
				disc++
			}
		}
	}
	if conc+disc+tx == 0 {
		return 0, false
	}
	den := math.Sqrt((conc + disc + tx) * (conc + disc + ty))
	if den == 0 {
		return 0, true
	}
	return (conc - disc) / den, true
}

// MemoryReading is a published peak-memory reading beside the estimate's.
type MemoryReading struct {
	ID                      string
	MeasuredGB, PredictedGB float64
	// RelErr is (predicted − measured) / measured.
	RelErr float64
}

// MemoryReadings pairs every published peak-memory reading (PyTorch's peak reserved
// memory, in GiB) with the estimate's total, for the runs whose micro-batch size the
// source states (the peak depends on it; where the harness chooses it, it is not the
// run's).
func MemoryReadings(rs []Result) []MemoryReading {
	var out []MemoryReading
	for _, r := range rs {
		if r.Err != nil || r.Run.MicroBatch == nil {
			continue
		}
		for _, m := range r.Run.Measured {
			if m.Metric != "peak_memory" || !strings.HasPrefix(m.Unit, "GiB") {
				continue
			}
			gb := m.Value * (1 << 30) / 1e9
			out = append(out, MemoryReading{r.Run.ID, gb, r.Estimate.Memory.Total, r.Estimate.Memory.Total/gb - 1})
		}
	}
	return out
}
