package accuracy_test

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/step/accuracy"
)

// Every row of testdata/published_runs_moe.jsonl parses and is internally
// consistent (accuracy.MoERun.Check), every row's layout is expressible, and each
// is estimated with its error printed with -v (the accuracy bounds are
// TestAllRunsInSample's and TestCrossValidatedAllRuns').
func TestMoERunsLoad(t *testing.T) {
	runs, err := accuracy.MoERuns()
	if err != nil {
		t.Fatal(err)
	}
	// The data's counts, by kind and by source (testdata/README.md).
	count := map[string]int{}
	sources := map[string]bool{}
	moeSources := map[string]bool{}
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.ID] {
			t.Errorf("%s: duplicate id", r.ID)
		}
		seen[r.ID] = true
		if err := r.Check(); err != nil {
			t.Errorf("%s: %v", r.ID, err)
		}
		for _, k := range r.Kind {
			count[k]++
		}
		// GB200 NVL72 runs are priced in 16-tray (64-GPU) NVLink segments
		// (accuracy.NVL72SegmentTrays), or in whole 18-tray racks where the job
		// takes whole racks (MLPerf Training v5.1's 72-GPU Llama 3.1 8B run:
		// config_GB200_18x4x1xtp1pp1cp2_8b.sh sets SEGMENT=18): every one uses a
		// multiple of 64 or of 72 GPUs.
		if r.System == "gb200-nvl72" && r.GPUs%(accuracy.NVL72SegmentTrays*r.GPUsPerNode) != 0 &&
			r.GPUs%(accuracy.NVL72Trays*r.GPUsPerNode) != 0 {
			t.Errorf("%s: %d GB200 GPUs, neither whole 16-tray segments nor whole racks", r.ID, r.GPUs)
		}
		sources[r.Repository] = true
		if r.Has("moe") {
			moeSources[r.Repository] = true
		}
	}
	t.Logf("%d runs: %d MoE (from %d sources), %d fp8, %d Blackwell; %d sources", len(runs), count["moe"], len(moeSources), count["fp8"], count["blackwell"], len(sources))
	if len(runs) != 142 || count["moe"] != 65 || count["fp8"] != 99 || count["blackwell"] != 84 {
		t.Errorf("want the data's 142 runs, 65 MoE, 99 fp8, 84 Blackwell")
	}
	if len(moeSources) < 5 {
		t.Errorf("MoE runs from %d sources, want 5 or more", len(moeSources))
	}
	// A superseded row names a row of the same repository that measured the same
	// model on the same GPU with the same tokens per GPU and step, faster.
	byID := moeRunsByID(runs)
	for _, r := range runs {
		if r.SupersededBy == nil {
			continue
		}
		n, ok := byID[*r.SupersededBy]
		switch {
		case !ok:
			t.Errorf("%s: superseded_by %q: no such row", r.ID, *r.SupersededBy)
			continue
		case n.Repository != r.Repository || n.GPU != r.GPU || n.CatalogModel == nil || r.CatalogModel == nil || *n.CatalogModel != *r.CatalogModel:
			t.Errorf("%s: superseded_by %s: not the same repository, GPU and model", r.ID, n.ID)
		case n.SeqLen*n.GlobalBatch*r.GPUs != r.SeqLen*r.GlobalBatch*n.GPUs:
			t.Errorf("%s: superseded_by %s: tokens per GPU and step differ", r.ID, n.ID)
		}
		old, _, _, err1 := r.StepFromMeasure()
		now, _, _, err2 := n.StepFromMeasure()
		if err1 != nil || err2 != nil || !(now < old) {
			t.Errorf("%s: superseded_by %s: %.3f s is not faster than %.3f s", r.ID, n.ID, now, old)
		}
		t.Logf("%s: superseded by %s, the same work per GPU %.2f× faster", r.ID, n.ID, old/now)
	}

	e := step.New()
	type row struct {
		id   string
		err  float64
		note string
	}
	var priced []row
	var inexpressible []string
	for _, r := range runs {
		s, _, _, err := r.StepFromMeasure()
		if err != nil {
			t.Errorf("%s: %v", r.ID, err)
			continue
		}
		req, filled, err := accuracy.MoECase(r)
		if errors.Is(err, accuracy.ErrInexpressible) {
			inexpressible = append(inexpressible, fmt.Sprintf("%s: %v", r.ID, err))
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", r.ID, err)
			continue
		}
		res, err := e.Estimate(req)
		if err != nil {
			t.Errorf("%s: %v", r.ID, err)
			continue
		}
		note := ""
		if !res.Memory.Fits {
			note = fmt.Sprintf(" [judged not to fit: %.1f of %.1f GB]", res.Memory.Total, res.Memory.Capacity)
		}
		if len(filled) > 0 {
			note += " (" + strings.Join(filled, "; ") + ")"
		}
		priced = append(priced, row{r.ID, res.StepTime/s - 1, fmt.Sprintf("measured %.3f s, estimated %.3f s, MFU %.1f%%%s", s, res.StepTime, 100*res.Throughput.MFU, note)})
	}
	sort.SliceStable(priced, func(i, j int) bool { return priced[i].id < priced[j].id })
	by := map[string][]float64{}
	for _, p := range priced {
		t.Logf("%-52s %+6.1f%%  %s", p.id, 100*p.err, p.note)
		for _, r := range runs {
			if r.ID != p.id {
				continue
			}
			for _, k := range append([]string{"all"}, r.Kind...) {
				by[k] = append(by[k], p.err)
			}
		}
	}
	for _, k := range []string{"all", "moe", "fp8", "blackwell"} {
		var sum, bias float64
		for _, x := range by[k] {
			if x < 0 {
				sum -= x
			} else {
				sum += x
			}
			bias += x
		}
		if n := len(by[k]); n > 0 {
			t.Logf("%-9s n=%2d mean |err| %.1f%%, bias %+.1f%%", k, n, 100*sum/float64(n), 100*bias/float64(n))
		}
	}
	// Every published layout is expressible (MoE parallel folding lets EP exceed
	// DP, as Megatron-Core's DeepSeek-V3 recipes run it).
	for _, s := range inexpressible {
		t.Errorf("not expressible: %s", s)
	}
}

// Check rejects rows whose figures disagree: each broken copy of a consistent row
// must fail.
func TestMoERunCheckRejects(t *testing.T) {
	runs, err := accuracy.MoERuns()
	if err != nil {
		t.Fatal(err)
	}
	var base accuracy.MoERun
	for _, r := range runs {
		if r.ID == "dgxc_gb200_grok1_128gpu_bf16" {
			base = r
		}
	}
	if base.ID == "" {
		t.Fatal("dgxc_gb200_grok1_128gpu_bf16 not in the data")
	}
	if err := base.Check(); err != nil {
		t.Fatalf("the base row: %v", err)
	}
	for name, broken := range map[string]func(r *accuracy.MoERun){
		"gpus":         func(r *accuracy.MoERun) { r.GPUs *= 2 },
		"batch":        func(r *accuracy.MoERun) { r.GlobalBatch += 32 },
		"ep":           func(r *accuracy.MoERun) { ep := 3; r.EP = &ep },
		"derived step": func(r *accuracy.MoERun) { r.DerivedStepS *= 1.002 },
		"tokens/s": func(r *accuracy.MoERun) {
			m := r.Measured[1]
			m.Value *= 1.002
			s := fmt.Sprint(m.Value)
			m.Stated = &s
			r.Measured = []accuracy.StatedMeasure{r.Measured[0], m}
		},
		"stated figure": func(r *accuracy.MoERun) {
			m := r.Measured[0]
			m.Value += 0.01
			r.Measured = append([]accuracy.StatedMeasure{m}, r.Measured[1:]...)
		},
	} {
		r := base
		broken(&r)
		if err := r.Check(); err == nil {
			t.Errorf("%s: a broken row passes the check", name)
		}
	}
}

// Megatron-LM's logged TFLOP/s per GPU (metric megatron_tflops_per_gpu) counts
// 12·s·L·h²·(…) FLOPs per sequence: forward and backward without recomputation. For
// a GPT-3-shaped model (no GQA, FFN 4h, no gating, no MoE) its layers are three
// quarters of those of Narayanan et al.'s 96·s·L·h²·(1 + s/6h + V/16Lh), which
// counts the recomputed forward too, and its logits, 6·s·h·V, the same: GPT-3 175B
// at 2048 tokens, vocabulary 51200, 140 TFLOP/s per GPU on 1024 GPUs with batch 1536.
func TestMegatronTFLOPsMetric(t *testing.T) {
	stated := "140"
	r := accuracy.MoERun{ID: "x", Layers: 96, Hidden: 12288, Heads: 96, FFN: 4 * 12288, Vocab: 51200, SeqLen: 2048,
		GPUs: 1024, GlobalBatch: 1536, Measured: []accuracy.StatedMeasure{{Metric: "megatron_tflops_per_gpu", Value: 140, Stated: &stated}}}
	s, lo, hi, err := r.StepFromMeasure()
	if err != nil {
		t.Fatal(err)
	}
	h, L, seq, v := 12288.0, 96.0, 2048.0, 51200.0
	narayanan := 96 * seq * L * h * h * (1 + seq/(6*h) + v/(16*L*h))
	logits := 6 * seq * h * v
	if want := (0.75*(narayanan-logits) + logits) * 1536 / (140e12 * 1024); math.Abs(s/want-1) > 1e-9 {
		t.Errorf("step %.6f s, want %.6f s (Narayanan's count without the recomputed forward)", s, want)
	}
	if !(lo < s && s < hi) {
		t.Errorf("rounding band %.4f–%.4f s does not hold %.4f s", lo, hi, s)
	}
	// MLA rows are refused: Megatron counts them with another formula.
	r.MLA = &accuracy.MLASpec{QLoRARank: 1536, KVLoRARank: 512, QKNopeDim: 128, QKRopeDim: 64, VDim: 128}
	if _, _, _, err := r.StepFromMeasure(); err == nil {
		t.Error("an MLA row converted with the non-MLA formula")
	}
}

// A row is priced with what it states: the stage split its source's scripts set (NeMo's
// 7, 8, …, 8, 6 for DeepSeek-V3's 61 layers over 8 stages, which an even split would
// replace by 8, …, 8, 7, 7, 7), and gpt-oss-20b's sliding windows, fused permutation
// and overlapped expert-parallel all-to-all.
func TestMoERowsPricedAsStated(t *testing.T) {
	byID := casesByID(t)
	ds, ok := byID["dgxc_h100_deepseekv3_512gpu_bf16"]
	if !ok {
		t.Fatal("dgxc_h100_deepseekv3_512gpu_bf16 not in the data")
	}
	r := accuracy.Evaluate(step.New(), []accuracy.Case{ds})[0]
	if want := []int{7, 8, 8, 8, 8, 8, 8, 6}; r.Err != nil || fmt.Sprint(r.Layout.LayerSplit) != fmt.Sprint(want) {
		t.Errorf("DeepSeek-V3 on 512 H100 priced on split %v (%v), want the recipe's %v", r.Layout.LayerSplit, r.Err, want)
	}
	g, ok := byID["mlperf60_h100_gptoss20b_128gpu_fp8"]
	if !ok {
		t.Fatal("mlperf60_h100_gptoss20b_128gpu_fp8 not in the data")
	}
	a, tr, l := g.Request.Model, g.Request.Training, g.Request.Layout
	if a.SlidingWindow != 128 || a.GlobalEvery != 2 || !tr.MoEPermuteFusion || !l.OverlapEP || !tr.CUDAGraphs || tr.MoEDispatcher != step.DispatchDeepEP {
		t.Errorf("gpt-oss-20b: window %d every %d, permute fusion %v, EP overlap %v, CUDA graphs %v, dispatcher %q; want 128, 2, true, true, true, deepep",
			a.SlidingWindow, a.GlobalEvery, tr.MoEPermuteFusion, l.OverlapEP, tr.CUDAGraphs, tr.MoEDispatcher)
	}
}

// MLPerf v6.0's gpt-oss-20b logs, besides its block means, the step right after
// each evaluation, which Megatron-Bridge starts with its parameters already
// gathered (the forced parameter sync before evaluating): it runs 57–58 ms
// faster than the block's mean (medians of the blocks transcribed in
// testdata/README.md). The model charges the distributed optimizer's fp8
// parameter all-gathers, dense and expert, exposed after the optimizer: their
// price is that difference.
func TestGptOssParameterGatherAsLogged(t *testing.T) {
	runs, err := accuracy.MoERuns()
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]float64{ // ms, medians of testdata/README.md's blocks
		"mlperf60_h100_gptoss20b_64gpu_fp8":  57.3,
		"mlperf60_h100_gptoss20b_128gpu_fp8": 58.5,
	}
	e := step.New()
	seen := 0
	for _, r := range runs {
		want, ok := logged[r.ID]
		if !ok {
			continue
		}
		seen++
		req, _, err := accuracy.MoECase(r)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		var ag float64
		for _, c := range res.Comms {
			if c.Kind == step.CommDP && c.Op == "allgather" {
				ag += c.TimeUs * c.PerStep / 1e3
			}
		}
		t.Logf("%s: parameter all-gathers %.1f ms, logged %.1f ms", r.ID, ag, want)
		if math.Abs(ag-want) > 0.15*want {
			t.Errorf("%s: the parameter all-gathers cost %.1f ms, the logs %.1f ms; want within 15 %%", r.ID, ag, want)
		}
	}
	if seen != len(logged) {
		t.Fatalf("found %d of the %d gpt-oss-20b rows", seen, len(logged))
	}
}

// moeRunsByID indexes the MoE, fp8 and Blackwell runs by their id.
func moeRunsByID(runs []accuracy.MoERun) map[string]accuracy.MoERun {
	byID := make(map[string]accuracy.MoERun, len(runs))
	for _, r := range runs {
		byID[r.ID] = r
	}
	return byID
}

// A run whose launch environment exports NCCL_NVLS_ENABLE=0 is priced on its
// system with NVLink SHARP off (testdata/README.md, "NCCL settings the runs'
// scripts export"): NVIDIA's MLPerf v5.1 Llama 3.1 8B on 72 GB200 keeps its rack
// but loses the in-switch reduction, and its step is priced no slower than on NVLS:
// its 72-rank reduce-scatter and all-gather of 1.5 GB buckets run as a ring either
// way, since NCCL's own choice, with the NVLS graph's 32 heads on the rack's NICs
// (docs/calibration.md, "What NCCL's graphs see of an NVL72 rack"), takes the ring
// from 1 GiB on one rack; a run that sets nothing
// (Nebius' MLPerf v5.0 405B on H200) keeps its system's NVLS; a row claiming NVLS on
// a system without it is refused naming the field.
func TestNVLSAsTheRunSetIt(t *testing.T) {
	byID := casesByID(t)
	off, ok := byID["mlperf51_gb200_llama31_8b_72gpu_fp8"]
	if !ok {
		t.Fatal("mlperf51_gb200_llama31_8b_72gpu_fp8 not in the data")
	}
	if cl := off.Request.Cluster; cl.NVLS() || cl.Spec.Intra.DomainNodes != 18 {
		t.Fatalf("72 GB200 with NCCL_NVLS_ENABLE=0 priced with NVLS %v on domains of %d trays, want false on 18", cl.NVLS(), cl.Spec.Intra.DomainNodes)
	}
	if on := byID["mlperf50_h200_llama31_405b_512gpu_fp8_nebius"]; on.Request.Cluster == nil || !on.Request.Cluster.NVLS() {
		t.Error("Nebius' 405B (no NCCL_NVLS_ENABLE in its scripts) lost its system's NVLS")
	}
	runs, err := accuracy.MoERuns()
	if err != nil {
		t.Fatal(err)
	}
	var row accuracy.MoERun
	for _, r := range runs {
		if r.ID == off.Run.ID {
			row = r
		}
	}
	nvls := true
	row.NCCLNVLSEnable = &nvls
	req, _, err := accuracy.MoECase(row)
	if err != nil {
		t.Fatal(err)
	}
	e := step.New()
	withNVLS, err := e.Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	without, err := e.Estimate(off.Request)
	if err != nil {
		t.Fatal(err)
	}
	if !(without.StepTime <= withNVLS.StepTime) {
		t.Errorf("72 GB200 8B: %.4f s with NVLS off, %.4f s on; want the ring no slower (docs/step-model.md)", without.StepTime, withNVLS.StepTime)
	}
	row.System = "oci-bm-gpu-a100"
	row.GPUsPerNode = 8
	if _, _, err := accuracy.MoECase(row); err == nil || !strings.Contains(err.Error(), "nccl_nvls_enable") {
		t.Errorf("nccl_nvls_enable true on a system without NVLS: %v, want an error naming the field", err)
	}
}

// casesByID is every published run's case, by its id.
func casesByID(t *testing.T) map[string]accuracy.Case {
	t.Helper()
	cases, err := accuracy.AllCases()
	if err != nil {
		t.Fatal(err)
	}
	byID := make(map[string]accuracy.Case, len(cases))
	for _, c := range cases {
		byID[c.Run.ID] = c
	}
	return byID
}

// A row's grad_reduce_dtype is the width its request's optimizer carries: the NeMo
// 25.04 performance-recipe rows reduce in bf16 (NeMo 6f2c6fd
// recipes/llama31_405b.py:253, grad_reduce_in_fp32 = False), 2 B a parameter,
// where the nemo-25.04 profile, which the row gets when it says nothing, reduces in
// fp32; an unknown width is refused naming the field.
func TestGradReduceAsTheScriptsSetIt(t *testing.T) {
	runs, err := accuracy.MoERuns()
	if err != nil {
		t.Fatal(err)
	}
	var row accuracy.MoERun
	for _, r := range runs {
		if r.ID == "dgxc_gb200_llama31_405b_128gpu_bf16" {
			row = r
		}
	}
	if row.GradReduceDType == nil || *row.GradReduceDType != "bf16" {
		t.Fatalf("dgxc_gb200_llama31_405b_128gpu_bf16: grad_reduce_dtype %v, want bf16 (the performance recipe's)", row.GradReduceDType)
	}
	gradBytes := func(r accuracy.MoERun) (float64, bool) {
		req, _, err := accuracy.MoECase(r)
		if err != nil {
			t.Fatal(err)
		}
		e, err := step.New().Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		return req.Training.Normalise().Optimizer.GradBytes, e.Memory.Fits
	}
	if b, fits := gradBytes(row); b != 2 || !fits {
		t.Errorf("stated bf16: %g B of gradients a parameter, fits %v; want 2 and a run that fits (it ran)", b, fits)
	}
	unstated := row
	unstated.GradReduceDType = nil
	if b, _ := gradBytes(unstated); b != 4 {
		t.Errorf("unstated: %g B of gradients a parameter, want the nemo-25.04 profile's 4", b)
	}
	bad, fp16 := row, "fp16"
	bad.GradReduceDType = &fp16
	if _, _, err := accuracy.MoECase(bad); err == nil || !strings.Contains(err.Error(), "grad_reduce_dtype") {
		t.Errorf("grad_reduce_dtype %q: error %v, want one naming the field", fp16, err)
	}
}

// MLPerf v6.0's gpt-oss-20b result files log each evaluation's wall time as
// tracked_stats validation_time (callback_logging.py line 297 of the
// implementations: the MLPerfLoggingCallback's timer, reset in on_eval_start and
// read in on_eval_end): eval_iters = ceil(1024 / GBS) forward-only steps
// (conf/gpt_oss.yaml: eval_iters from VAL_SAMPLES, default 1024, as every log's
// eval_samples states), each one micro-batch a GPU on the training layout, the
// parameters already gathered (Megatron-Bridge syncs them before evaluating). On
// the EP-1 Blackwell rows (TP 1, CP 1, EP 1, full-iteration CUDA graphs, which
// capture the validation step too: "Capture CUDA graph for validation" in HPE's
// and Dell's logs) the forward has no collective: it is the layers' forward pass
// and the loss, what the model prices as the micro-batch's forward less the
// fp8 casts only the backward reads (Estimator.BackwardOnlyCasts: an evaluation
// quantizes along the rows alone). The rows with CP, EP or TP > 1 are logged
// with the forward's collectives added as evaluation runs them, exposed (the
// dispatch and combine, the CP all-to-alls,
// the TP all-gathers and reduce-scatters of the forward: half of each layer's),
// and not held to a bound: their forward is where the model's miss on those
// layouts lies (docs/step-model.md, "gpt-oss's evaluation steps: where the miss
// is"). The times are the validation_time entries of the result file each row
// cites (Richardyu114/training_results_v6.0 at eabf23a), the first evaluation
// of a run left out where a later one was read (5–8 % longer on the EP-1 rows).
func TestGptOssEvaluationForwardAsLogged(t *testing.T) {
	runs, err := accuracy.MoERuns()
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]struct {
		evals []float64 // s, validation_time of the evaluations read
		ep1   bool      // no collective in the forward: held within 10 %
	}{
		// Cisco's H100 rows: the lowest and highest evaluation after the first of
		// result_1.txt, as docs/step-model.md read them ("MLPerf v6.0's gpt-oss-20b
		// on 64 / 128 H100"); eager evaluations of partially graphed steps.
		"mlperf60_h100_gptoss20b_64gpu_fp8":           {[]float64{3.54, 3.59}, false},
		"mlperf60_h100_gptoss20b_128gpu_fp8":          {[]float64{1.78, 1.98}, false},
		"mlperf60_b200_gptoss20b_8gpu_mxfp8_lambda":   {[]float64{7.131038}, true},                                                              // step 4608
		"mlperf60_b300_gptoss20b_8gpu_mxfp8_dell":     {[]float64{7.118056, 7.121145}, true},                                                    // steps 1024, 1536
		"mlperf60_b300_gptoss20b_16gpu_mxfp8_dell":    {[]float64{3.753658}, true},                                                              // step 1024
		"mlperf60_b300_gptoss20b_8gpu_mxfp8_nebius":   {[]float64{7.068077, 7.065378}, true},                                                    // steps 4608, 5120
		"mlperf60_gb300_gptoss20b_16gpu_mxfp8_hpe":    {[]float64{3.346902, 3.347355, 3.345796}, true},                                          // steps 3072, 3584, 4096
		"mlperf60_gb300_gptoss20b_32gpu_mxfp8_hpe":    {[]float64{1.737113, 1.739304}, true},                                                    // steps 2048, 2560
		"mlperf60_gb300_gptoss20b_8gpu_mxfp8_dell":    {[]float64{6.419312, 6.397224, 6.416619, 6.430466, 6.412119}, false},                     // steps 1024–2048, 4608, 5120
		"mlperf60_gb300_gptoss20b_72gpu_mxfp8":        {[]float64{1.382193, 1.387430, 1.389815}, false},                                         // steps 3751, 4092, 4433
		"mlperf60_gb300_gptoss20b_72gpu_mxfp8_lambda": {[]float64{1.394422, 1.397492, 1.395837, 1.394809}, false},                               // steps 2387–3410
		"mlperf60_gb300_gptoss20b_72gpu_mxfp8_nebius": {[]float64{1.377548, 1.378771, 1.378068}, false},                                         // steps 4092, 4433, 4774
		"mlperf60_gb200_gptoss20b_72gpu_mxfp8":        {[]float64{1.549329, 1.549753, 1.549106}, false},                                         // steps 4092, 4433, 4774
		"mlperf60_b300_gptoss20b_64gpu_mxfp8_nebius":  {[]float64{1.626756, 1.630811, 1.631025}, false},                                         // steps 4224, 4608, 4992
		"mlperf60_gb300_gptoss20b_512gpu_mxfp8":       {[]float64{0.427106, 0.423022, 0.424918, 0.424947, 0.423535, 0.425411, 0.427648}, false}, // steps 384–1536
	}
	e := step.New()
	seen := 0
	for _, r := range runs {
		l, ok := logged[r.ID]
		if !ok {
			continue
		}
		seen++
		req, _, err := accuracy.MoECase(r)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.MicroBatches != 1 {
			t.Fatalf("%s: %d micro-batches a step, want the one an evaluation step runs", r.ID, res.MicroBatches)
		}
		evals := append([]float64(nil), l.evals...)
		sort.Float64s(evals)
		iters := (1024 + r.GlobalBatch - 1) / r.GlobalBatch
		n := len(evals)
		measured := (evals[(n-1)/2] + evals[n/2]) / 2 / float64(iters) // the median
		var coll float64                                               // the forward's collectives, exposed
		for _, c := range res.Comms {
			ms := c.TimeUs * c.PerStep / 1e6
			switch {
			case c.Kind == step.CommTP && strings.HasPrefix(c.When, "per layer: 2 forward"), c.Kind == step.CommCP, c.Kind == step.CommEP:
				coll += ms / 2
			}
		}
		cols, err := e.BackwardOnlyCasts(req)
		if err != nil {
			t.Fatal(err)
		}
		priced := res.PerMicroBatch.Forward - cols + coll
		t.Logf("%-45s forward measured %6.1f ms (%d steps), priced %6.1f ms (collectives %4.1f, less %4.1f of casts for the backward): %.2f×; step measured %6.1f, priced %6.1f ms (%+.1f %%): training over forward %.2f measured, %.2f priced",
			r.ID, measured*1e3, iters, priced*1e3, coll*1e3, cols*1e3, measured/priced, r.DerivedStepS*1e3, res.StepTime*1e3, 100*(res.StepTime/r.DerivedStepS-1), r.DerivedStepS/measured, res.StepTime/priced)
		if l.ep1 && (coll > 0 || math.Abs(priced/measured-1) > 0.1) {
			t.Errorf("%s: the forward of an evaluation step priced %.1f ms (collectives %.1f), logged %.1f ms; want within 10 %% and no collective", r.ID, priced*1e3, coll*1e3, measured*1e3)
		}
	}
	if seen != len(logged) {
		t.Fatalf("found %d of the %d gpt-oss-20b rows", seen, len(logged))
	}
}
