package step_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/estimator/topology"
)

func cluster(t testing.TB, system string, nodes int) *topology.Cluster {
	t.Helper()
	c, err := catalog.Cluster(system, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func arch(t testing.TB, name string) model.Arch {
	t.Helper()
	a, err := model.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// gpt3Request is the benchmark layout: gpt3-175b on 1024 H100, TP 8 × PP 8 × DP 16.
func gpt3Request(t testing.TB) step.Request {
	return step.Request{
		Model:    arch(t, "gpt3-175b"),
		Cluster:  cluster(t, "dgx-h100", 128),
		Training: step.Training{SeqLen: 2048, GlobalBatch: 1536},
		Layout: step.Layout{TP: 8, PP: 8, DP: 16, MicroBatch: 1, SP: true, ZeRO: 1,
			Recompute: step.RecomputeSelective, Schedule: step.Interleaved, VirtualStages: 4},
	}
}

// The breakdown adds up to the step time, for many layouts.
func TestBreakdownSumsToStepTime(t *testing.T) {
	e := step.New()
	base := gpt3Request(t)
	variants := map[string]func(*step.Request){
		"as is": func(*step.Request) {},
		"1f1b":  func(r *step.Request) { r.Layout.Schedule, r.Layout.VirtualStages = step.OneFOneB, 1 },
		"gpipe": func(r *step.Request) {
			r.Layout.Schedule, r.Layout.VirtualStages, r.Training.Framework = step.GPipe, 1, "fsdp"
		},
		"full recompute":    func(r *step.Request) { r.Layout.Recompute = step.RecomputeFull },
		"half recomputed":   func(r *step.Request) { r.Layout.Recompute, r.Layout.RecomputeLayers = step.RecomputeFull, 6 },
		"op-level":          func(r *step.Request) { r.Layout.Recompute = step.RecomputeOps },
		"no sp":             func(r *step.Request) { r.Layout.SP = false },
		"zero 0":            func(r *step.Request) { r.Layout.ZeRO = 0 },
		"zero 3":            func(r *step.Request) { r.Layout.ZeRO = 3 },
		"overlap tp":        func(r *step.Request) { r.Layout.OverlapTP = true },
		"fp8":               func(r *step.Request) { r.Training.Precision = step.FP8 },
		"cp 2":              func(r *step.Request) { r.Layout.CP, r.Layout.DP = 2, 8 },
		"unfused attention": func(r *step.Request) { r.Training.UnfusedAttention = true },
		"zero 3 on demand":  func(r *step.Request) { r.Layout.ZeRO, r.Training.OnDemandGathers = 3, true },
		"zero 3 post":       func(r *step.Request) { r.Layout.ZeRO, r.Training.BackwardPrefetch = 3, step.PrefetchPost },
	}
	for name, edit := range variants {
		r := base
		edit(&r)
		res, err := e.Estimate(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if sum := res.Breakdown.Sum(); math.Abs(sum-res.StepTime) > 1e-9*res.StepTime || !(res.StepTime > 0) {
			t.Errorf("%s: breakdown %v s, step %v s", name, sum, res.StepTime)
		}
		if th := res.Throughput; !(th.MFU > 0 && th.MFU < 1 && th.HFU >= th.MFU) {
			t.Errorf("%s: MFU %v HFU %v", name, th.MFU, th.HFU)
		}
		if len(res.Comms) == 0 || len(res.Assumptions) == 0 {
			t.Errorf("%s: no communication table or assumptions", name)
		}
	}
}

// Schedules: 1F1B and interleaving shrink the bubble, GPipe holds every micro-batch.
func TestPipelineSchedules(t *testing.T) {
	e := step.New()
	get := func(s step.Schedule, v int) step.Result {
		r := gpt3Request(t)
		r.Layout.Schedule, r.Layout.VirtualStages = s, v
		// Under fsdp, whose profile states no limit: megatron-core runs no GPipe.
		r.Training.Framework = "fsdp"
		res, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	gp, ofob, il := get(step.GPipe, 1), get(step.OneFOneB, 1), get(step.Interleaved, 4)
	// The hops differ by the spine's latency (stages of 16 nodes: every other hop
	// leaves its 32-node unit), and the bubble is the span less the ranks' mean
	// sends: each of the M + P − 1 slots may differ by a forward and a backward
	// send's spread, beyond which the schedules agree.
	spread := 0.0
	for _, x := range ofob.PerMicroBatch.HopSends {
		spread = max(spread, math.Abs(x-ofob.PerMicroBatch.Send))
	}
	tol := 1e-9 + 2*float64(ofob.MicroBatches+7)*spread
	if !(il.Breakdown.Bubble < ofob.Breakdown.Bubble && math.Abs(gp.Breakdown.Bubble-ofob.Breakdown.Bubble) < tol) {
		t.Errorf("bubble: gpipe %v, 1f1b %v, interleaved %v", gp.Breakdown.Bubble, ofob.Breakdown.Bubble, il.Breakdown.Bubble)
	}
	// (P−1)/v of a micro-batch's blocks on a rank (its sends included): the bubble
	// fraction is (P−1)/(v·M+P−1).
	m := float64(ofob.MicroBatches)
	frac := ofob.Breakdown.Bubble / (ofob.Breakdown.Bubble + ofob.Breakdown.Forward + ofob.Breakdown.Backward + ofob.Breakdown.Recompute +
		ofob.Breakdown.Exposed[step.CommTP] + ofob.Breakdown.Exposed[step.CommPP])
	if want := 7 / (m + 7); math.Abs(frac-want) > tol/ofob.StepTime {
		t.Errorf("1f1b bubble fraction %v, want %v", frac, want)
	}
	if !(gp.Memory.InFlight == m && ofob.Memory.InFlight == 8 && il.Memory.InFlight > 8) {
		t.Errorf("in flight: gpipe %v, 1f1b %v, interleaved %v", gp.Memory.InFlight, ofob.Memory.InFlight, il.Memory.InFlight)
	}
}

// The seeds' FSDP example: 7B parameters, 32 layers, 8 GPUs: 1.75 GB of sharded bf16
// weights plus one gathered layer of about 440 MB.
func TestFSDPExample(t *testing.T) {
	w, _, _ := step.ModelStateBytes(7e9, step.Optimizer{WeightBytes: 2}, 3, 8)
	if w != 1.75e9 {
		t.Errorf("sharded weights %v, want 1.75 GB", w)
	}
	r := step.Request{Model: arch(t, "llama2-7b"), Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 8}, Layout: step.Layout{DP: 8, MicroBatch: 1, ZeRO: 3}}
	res, err := step.New().Estimate(r)
	if err != nil {
		t.Fatal(err)
	}
	perLayer := res.Memory.Gathered / 2 // the layer computed and the one prefetched
	if !(math.Abs(res.Memory.Weights-1.75)/1.75 < 0.05 && math.Abs(perLayer-0.44)/0.44 < 0.1) {
		t.Errorf("llama2-7b FSDP on 8: %.3f GB sharded weights, %.3f GB per gathered layer; want ≈1.75 and ≈0.44", res.Memory.Weights, perLayer)
	}
}

// A layout that cannot fit is reported infeasible with a warning.
func TestDoesNotFit(t *testing.T) {
	r := step.Request{Model: arch(t, "llama3-70b"), Cluster: cluster(t, "dgx-a100", 1),
		Training: step.Training{SeqLen: 8192, GlobalBatch: 8}, Layout: step.Layout{DP: 8, MicroBatch: 1}}
	res, err := step.New().Estimate(r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Memory.Fits || res.Memory.Headroom >= 0 || len(res.Warnings) == 0 {
		t.Errorf("70B with plain DP on 8×A100 fits? %+v", res.Memory)
	}
}

func TestValidationNamesFieldAndRule(t *testing.T) {
	ok := gpt3Request(t)
	tests := []struct {
		field string
		edit  func(*step.Request)
	}{
		{"layout.tp", func(r *step.Request) { r.Layout.TP, r.Layout.DP = 7, 16 }},
		{"layout.pp", func(r *step.Request) {
			r.Model.Layers, r.Layout.PP, r.Layout.VirtualStages, r.Layout.Schedule = 4, 5, 1, step.OneFOneB
		}},
		{"layout.layer_split", func(r *step.Request) {
			r.Layout.PP, r.Layout.VirtualStages, r.Layout.Schedule, r.Layout.LayerSplit = 2, 1, step.OneFOneB, []int{40, 40}
		}},
		{"layout.ep", func(r *step.Request) { r.Layout.EP = 2 }},
		{"layout.cp", func(r *step.Request) { r.Layout.CP = 3 }},
		{"layout.zero", func(r *step.Request) { r.Layout.ZeRO = 4 }},
		{"layout.recompute", func(r *step.Request) { r.Layout.Recompute = "some" }},
		{"layout.recompute_layers", func(r *step.Request) { r.Layout.RecomputeLayers = -1 }},
		{"layout.recompute_layers", func(r *step.Request) { r.Layout.RecomputeLayers = 4 }}, // with selective
		{"layout.recompute_layers", func(r *step.Request) { r.Layout.Recompute, r.Layout.RecomputeLayers = step.RecomputeFull, 13 }},
		{"layout.schedule", func(r *step.Request) { r.Layout.Schedule = "zigzag" }},
		{"layout.virtual_stages", func(r *step.Request) { r.Layout.Schedule = step.OneFOneB }},
		{"layout.sp", func(r *step.Request) { r.Layout.TP, r.Layout.DP, r.Layout.PP = 1, 128, 8 }},
		{"layout.micro_batch", func(r *step.Request) { r.Layout.MicroBatch = -1 }},
		{"layout.micro_batch", func(r *step.Request) { r.Training.GlobalBatch = 16 * 7 }},
		{"training.global_batch", func(r *step.Request) { r.Training.GlobalBatch = 1000 }},
		{"training.seq_len", func(r *step.Request) { r.Training.SeqLen = 0 }},
		{"training.precision", func(r *step.Request) { r.Training.Precision = "int4" }},
		{"training.zero3_backward_prefetch", func(r *step.Request) { r.Training.BackwardPrefetch = "early" }},
		{"training.optimizer.state_bytes", func(r *step.Request) { r.Training.Optimizer.StateBytes = -1; r.Training.Optimizer.WeightBytes = 2 }},
		{"layout.rank_order", func(r *step.Request) { r.Layout.RankOrder = "tp-dp-pp" }},
		{"layout.dp", func(r *step.Request) { r.Layout.DP = -3 }},
		{"layout", func(r *step.Request) { r.Layout.DP = 1024 }},
		{"model.heads", func(r *step.Request) { r.Model.Heads = 0 }},
		{"model.kv_heads", func(r *step.Request) { r.Model.KVHeads = 5 }},
		{"cluster", func(r *step.Request) { r.Cluster = nil }},
	}
	e := step.New()
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			r := ok
			r.Model = ok.Model
			tc.edit(&r)
			_, err := e.Estimate(r)
			var fe *invalid.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a field error", err)
			}
			if !strings.Contains(err.Error(), tc.field+":") {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
		})
	}
	if _, err := e.Estimate(ok); err != nil {
		t.Errorf("valid request rejected: %v", err)
	}
}

// MoE: expert parallelism adds all-to-all communication and splits the experts.
func TestMoE(t *testing.T) {
	r := step.Request{Model: arch(t, "mixtral-8x7b"), Cluster: cluster(t, "dgx-h100", 4),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 256},
		Layout:   step.Layout{TP: 2, DP: 16, EP: 8, MicroBatch: 1, ZeRO: 1, Recompute: step.RecomputeFull, SP: true}}
	res, err := step.New().Estimate(r)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.Breakdown.Exposed[step.CommEP] > 0) {
		t.Errorf("no expert-parallel communication: %+v", res.Breakdown)
	}
	r.Layout.EP = 1
	one, err := step.New().Estimate(r)
	if err != nil {
		t.Fatal(err)
	}
	if !(one.Memory.Weights > 2*res.Memory.Weights) {
		t.Errorf("EP 8 holds %.1f GB of weights, EP 1 %.1f GB: experts not split", res.Memory.Weights, one.Memory.Weights)
	}
}

func TestGlobalTokensAndUlysses(t *testing.T) {
	e := step.New()
	r := gpt3Request(t)
	r.Training.GlobalBatch, r.Training.GlobalTokens = 0, 1536*2048
	a, err := e.Estimate(r)
	if err != nil || a.Training.GlobalBatch != 1536 {
		t.Fatalf("global tokens: %v, batch %d", err, a.Training.GlobalBatch)
	}
	r.Training.GlobalTokens = 1536*2048 + 1
	if _, err := e.Estimate(r); !invalid.Is(err) || !strings.Contains(err.Error(), "training.global_tokens") {
		t.Errorf("tokens not a multiple of the sequence: %v", err)
	}
	u := step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-h100", 1),
		Training: step.Training{SeqLen: 65536, GlobalBatch: 4}, Layout: step.Layout{DP: 4, CP: 2, MicroBatch: 1, ZeRO: 3, Recompute: step.RecomputeFull}}
	ring, err := e.Estimate(u)
	if err != nil {
		t.Fatal(err)
	}
	u.Layout.CPAllToAll = true
	uly, err := e.Estimate(u)
	if err != nil {
		t.Fatal(err)
	}
	if ring.Comms[0].Op == uly.Comms[0].Op || !(uly.Breakdown.Exposed[step.CommCP] > 0) {
		t.Errorf("ring %s vs Ulysses %s; exposed CP %v", ring.Comms[0].Op, uly.Comms[0].Op, uly.Breakdown.Exposed[step.CommCP])
	}
	u.Layout.CP, u.Layout.DP = 8, 1 // 32 heads and 8 KV heads split over 8 ranks
	u.Training.GlobalBatch = 1
	if _, err := e.Estimate(u); err != nil {
		t.Errorf("Ulysses CP 8 on 32 heads: %v", err)
	}
}

// The lower bounds never exceed the estimate, across many layouts, in bf16 and in
// fp8 with fp8 weights (which hold and gather 1 B per matmul weight).
func TestLowerBoundsHold(t *testing.T) {
	e := step.New()
	checked := 0
	for _, name := range []string{"gpt3-175b", "llama3-8b", "mixtral-8x7b"} {
		for _, training := range []step.Training{{SeqLen: 4096, GlobalBatch: 256}, {SeqLen: 4096, GlobalBatch: 256, Precision: step.FP8, FP8Params: true}} {
			a := arch(t, name)
			var cache step.BoundsCache      // shared by the model's layouts, as a search shares it
			var memo step.ExposureMemo      // likewise: kept over the layouts of a grid, renewed on the next
			cl := cluster(t, "dgx-h100", 8) // one cluster: the memo is of a cluster's grids
			for _, tp := range []int{1, 2, 8} {
				for _, pp := range []int{1, 2, 4} {
					for _, cp := range []int{1, 2} {
						for _, z := range []int{0, 1, 3} {
							for _, rc := range []step.Recompute{step.RecomputeNone, step.RecomputeFull, step.RecomputeOps} {
								for _, sched := range []step.Schedule{step.OneFOneB, step.Interleaved, step.ZeroBubble, step.DualPipe, step.ZeroBubbleV} {
									for _, variant := range []int{0, 1, 2} { // etp 0, etp 1, etp 0 with activation offload
										etp, offload := variant%2, variant == 2
										dp := 64 / (tp * pp * cp)
										r := step.Request{Model: a, Cluster: cl,
											Training: training,
											Layout: step.Layout{TP: tp, PP: pp, DP: dp, CP: cp, MicroBatch: 1, ZeRO: z, Recompute: rc,
												Schedule: sched, SP: tp > 1, ETP: etp, OffloadActivations: offload}}
										v := 1
										if sched == step.Interleaved {
											v = 2
											r.Layout.VirtualStages = v
										}
										if a.MoE != nil && (tp*cp*dp)%8 == 0 {
											r.Layout.EP = 8 // folded over TP and CP ranks where dp < 8
										}
										res, err := e.Estimate(r)
										if err != nil {
											continue // not a valid layout for this model
										}
										// The bound the planner takes: the shape's compute with 1F1B, the
										// schedule's bubble, and ZeRO-3's exposure for a ZeRO-3 layout, the
										// parameter all-gather for ZeRO 1 and 2.
										base := r
										base.Layout.Schedule, base.Layout.VirtualStages = step.OneFOneB, 1
										b, ok := e.LowerBounds(base)
										if !ok {
											t.Fatalf("%+v: no bound", res.Layout)
										}
										if bc, _ := e.LowerBoundsCached(base, &cache); bc != b {
											t.Errorf("%+v: bounds with the layer cache %+v, without %+v", res.Layout, bc, b)
										}
										x := e.ExposedBounds(base, b)
										if xm := e.ExposedBoundsMemo(&base, &b, &memo); xm != x {
											t.Errorf("%+v: exposure with the memo %+v, without %+v", res.Layout, xm, x)
										}
										b.PerMicroBatch += x.PerMicroBatch
										b.StepTime += (float64(res.MicroBatches) + float64(pp-1)) * x.PerMicroBatch
										lb := b.StepTime
										// The pipeline sends: 2 a chunk slot for 1F1B, 2·c·M (c chunks a
										// rank) for ZB-H1 and ZB-V, none for DualPipe.
										m := float64(res.MicroBatches)
										if bubble, zb := step.PipelineFillBound(sched, pp, b.Forward); zb && !(sched == step.ZeroBubbleV && a.MoE != nil) {
											c := 1.0
											switch sched {
											case step.ZeroBubbleV:
												c = 2
											case step.DualPipe:
												c = 0 // hidden under the paired chunks (pricing.pipeline)
											}
											lb = m*b.PerMicroBatch + bubble + 2*c*m*x.Send
										} else if zb {
											lb = m * b.PerMicroBatch
										} else {
											// v·M + pp − 1 slots of a chunk's forward and backward, their
											// sends unless they overlap the next chunk's compute.
											lb -= float64(pp-1) * (1 - 1/float64(v)) * b.PerMicroBatch
											if !step.PipelineSendsOverlap(base.Training.Framework, sched) {
												lb += 2 * (float64(v)*m + float64(pp-1)) * x.Send
											}
										}
										switch z {
										case 3:
											lb += x.ZeRO3
										case 1, 2:
											lb += x.ParamGather
										}
										if offload {
											// The search's bound of an offloaded shape: its bounds without
											// offload and a bound of the copies' waits.
											plain := base
											plain.Layout.OffloadActivations = false
											bp, _ := e.LowerBounds(plain)
											w := step.OffloadWaitBound(r.Cluster, a, bp)
											if lw := (m + float64(pp-1)/float64(v)) * (bp.PerMicroBatch + w); lw > res.StepTime*(1+1e-12) {
												t.Errorf("%s %+v: bound without offload and its waits %.4g s, estimate %.4g s", name, r.Layout, lw, res.StepTime)
											}
										}
										checked++
										if lb > res.StepTime*(1+1e-12) || b.StatesGB > res.Memory.Total+1e-9 {
											t.Errorf("%s %+v: bound %.4g s / %.3g GB, estimate %.4g s / %.3g GB", name, r.Layout, lb, b.StatesGB, res.StepTime, res.Memory.Total)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if checked < 1000 {
		t.Errorf("only %d layouts checked", checked)
	}
}

// On-demand ZeRO-3 gathers hide nothing: what the communication table lists for
// ZeRO-3, plus two eager operators of host work per peer rank and call, plus the
// list collectives' copies (each gather's bytes zeroed, read and written; each
// reduce-scatter's read and written, at the GPU's achievable HBM bandwidth), is
// exactly the exposed ZeRO-3 time; and it is never faster than prefetched flat
// gathers.
func TestOnDemandGathers(t *testing.T) {
	e := step.New()
	k := step.DefaultConstants()
	for _, n := range []int{16, 64} {
		r := step.Request{Model: arch(t, "llama2-13b"), Cluster: cluster(t, "dgx-a100", n/8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 2 * n, Precision: step.BF16},
			Layout:   step.Layout{TP: 1, PP: 1, DP: n, CP: 1, ZeRO: 3, MicroBatch: 1, Recompute: step.RecomputeFull}}
		flat, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		r.Training.OnDemandGathers = true
		od, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		var comm, calls, copied float64
		for _, c := range od.Comms {
			if c.Kind == step.CommZeRO3 {
				comm += c.TimeUs * 1e-6 * c.PerStep
				calls += c.PerStep
				passes := 2.0 // reduce-scatter: the views copied into the flat input
				if c.Op == "allgather" {
					passes = 3 // zeroed, then the flat output copied out into the views
				}
				copied += passes * c.Bytes * c.PerStep
			}
		}
		hbm := r.Cluster.GPU().MemoryBandwidthGBps * 1e9 * k.HBMEfficiency
		// 40 layers × 6 modules × 2 micro-batches × (3 gathers + 1 reduce-scatter).
		if want := 40.0 * k.ModulesPerLayer * 2 * 4; calls != want {
			t.Errorf("%d GPUs: %v ZeRO-3 calls per step, want %v", n, calls, want)
		}
		want := comm + calls*2*k.EagerOpHostUs*1e-6*float64(n) + copied/hbm
		if got := od.Breakdown.Exposed[step.CommZeRO3]; math.Abs(got-want) > 1e-9*want {
			t.Errorf("%d GPUs: exposed ZeRO-3 %v s, want %v s", n, got, want)
		}
		if h := od.Breakdown.Hidden[step.CommZeRO3]; h != 0 {
			t.Errorf("%d GPUs: %v s of on-demand gathers hidden", n, h)
		}
		if !(od.StepTime > flat.StepTime) {
			t.Errorf("%d GPUs: on demand %v s, not slower than prefetched %v s", n, od.StepTime, flat.StepTime)
		}
	}
}

// The recomputation policies on torchtitan's Llama 3 8B setup (64 A100, FSDP, one
// sequence of 8192 per GPU): what each recomputes and keeps.
func TestRecomputePolicies(t *testing.T) {
	e := step.New()
	base := step.Request{Model: arch(t, "llama3-8b"), Cluster: cluster(t, "dgx-a100", 8),
		Training: step.Training{SeqLen: 8192, GlobalBatch: 64},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 64, ZeRO: 3, MicroBatch: 1}}
	run := func(rc step.Recompute, layers int) step.Result {
		t.Helper()
		r := base
		r.Layout.Recompute, r.Layout.RecomputeLayers = rc, layers
		res, err := e.Estimate(r)
		if err != nil {
			t.Fatalf("%s/%d: %v", rc, layers, err)
		}
		return res
	}
	none, sel, ops, full := run(step.RecomputeNone, 0), run(step.RecomputeSelective, 0), run(step.RecomputeOps, 0), run(step.RecomputeFull, 0)
	half := run(step.RecomputeFull, 16)
	rc := func(r step.Result) float64 { return r.Breakdown.Recompute }
	// Selective recomputes the attention core, ops the memory-bound ops and every
	// second matmul, full everything.
	if !(rc(none) == 0 && rc(sel) > 0 && rc(ops) > 0 && rc(full) > rc(ops) && rc(full) > rc(sel)) {
		t.Errorf("recompute time: none %v, selective %v, ops %v, full %v", rc(none), rc(sel), rc(ops), rc(full))
	}
	// Which of the two selective policies costs more depends on the sequence: the
	// attention core grows with it, the matmuls do not. At 1024 tokens op-level
	// recomputation costs more, at 32768 the attention core.
	for _, c := range []struct {
		seq     int
		opsMore bool
	}{{1024, true}, {32768, false}} {
		r := base
		r.Training.SeqLen = c.seq
		r.Layout.Recompute = step.RecomputeSelective
		s, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		r.Layout.Recompute = step.RecomputeOps
		o, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		if (rc(o) > rc(s)) != c.opsMore {
			t.Errorf("seq %d: recompute selective %v s, ops %v s", c.seq, rc(s), rc(o))
		}
	}
	if got, want := rc(half), rc(full)/2; math.Abs(got-want) > 1e-12*want {
		t.Errorf("16 of 32 layers recomputed: %v s, want half of full's %v s", got, want)
	}
	// Activations kept: the half-recomputed stage keeps the mean of both per layer.
	act := func(r step.Result) float64 { return r.Memory.ActivationBytesPerLayer }
	if got, want := act(half), (act(none)+act(full))/2; math.Abs(got-want) > 1e-12*want {
		t.Errorf("half recomputed: %v B per layer, want %v", got, want)
	}
	if !(act(none) >= act(sel) && act(sel) > act(ops) && act(ops) > act(full)) {
		t.Errorf("activations per layer: none %v, selective %v, ops %v, full %v", act(none), act(sel), act(ops), act(full))
	}
	// HFU counts what runs again: a third more with full recomputation.
	hm := func(r step.Result) float64 { return r.Throughput.HFU / r.Throughput.MFU }
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{{"none", hm(none), 1}, {"full", hm(full), 4.0 / 3}, {"half", hm(half), 1 + 0.5/3}} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s: HFU/MFU %v, want %v", c.name, c.got, c.want)
		}
	}
	if !(hm(sel) > 1 && hm(ops) > hm(sel) && hm(ops) < hm(full)) {
		t.Errorf("HFU/MFU: selective %v, ops %v, full %v", hm(sel), hm(ops), hm(full))
	}

	// With TP, the recomputed output projection repeats the attention block's
	// collective: 2 forward + 1 again + 2 backward per layer.
	r := base
	r.Cluster = cluster(t, "dgx-h100", 8)
	r.Layout = step.Layout{TP: 8, PP: 1, DP: 8, ZeRO: 1, MicroBatch: 1, SP: true, Recompute: step.RecomputeOps}
	res, err := e.Estimate(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Comms {
		if c.Kind == step.CommTP && c.PerStep != 32*5*8 {
			t.Errorf("ops with tp 8: %s %v calls per step, want 32 layers × 5 × 8 micro-batches", c.Op, c.PerStep)
		}
	}
}

// torchtitan's docs/performance.md (Llama 2 on 64 A100 80GB with FSDP2, sequence
// 4096): 70B ran with local batch 2 under full checkpointing and with local batch 1
// under op-level checkpointing, and ran out of memory with local batch 2 under either
// selective policy (every second layer, or op-level).
func TestTorchtitanMemoryOutcomes(t *testing.T) {
	e := step.New()
	for _, c := range []struct {
		mbs    int
		rc     step.Recompute
		layers int
		fits   bool
	}{
		{2, step.RecomputeFull, 0, true},
		{1, step.RecomputeOps, 0, true},
		{2, step.RecomputeOps, 0, false},
		{2, step.RecomputeFull, 40, false},
	} {
		r := step.Request{Model: arch(t, "llama2-70b"), Cluster: cluster(t, "dgx-a100", 8),
			Training: step.Training{SeqLen: 4096, GlobalBatch: 64 * c.mbs},
			Layout:   step.Layout{TP: 1, PP: 1, DP: 64, ZeRO: 3, MicroBatch: c.mbs, Recompute: c.rc, RecomputeLayers: c.layers}}
		res, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		if res.Memory.Fits != c.fits {
			t.Errorf("local batch %d, %s (%d layers): fits %v (%.1f of %.1f GB), published %v", c.mbs, c.rc, c.layers, res.Memory.Fits, res.Memory.Total, res.Memory.Capacity, c.fits)
		}
	}
}

// FSDP's backward prefetch: issued after a layer's gradients (post) or only when
// needed (none), the next layer's gather overlaps no compute, so every backward
// gather of every micro-batch is waited for; issued before (pre) it hides under the
// layer's backward.
func TestBackwardPrefetch(t *testing.T) {
	e := step.New()
	r := step.Request{Model: arch(t, "llama2-70b"), Cluster: cluster(t, "dgx-a100", 8),
		Training: step.Training{SeqLen: 4096, GlobalBatch: 128},
		Layout:   step.Layout{TP: 1, PP: 1, DP: 64, ZeRO: 3, MicroBatch: 1, Recompute: step.RecomputeFull}}
	got := map[step.BackwardPrefetch]step.Result{}
	for _, p := range []step.BackwardPrefetch{step.PrefetchPre, step.PrefetchPost, step.PrefetchNone} {
		r.Training.BackwardPrefetch = p
		res, err := e.Estimate(r)
		if err != nil {
			t.Fatal(err)
		}
		got[p] = res
	}
	pre, post := got[step.PrefetchPre], got[step.PrefetchPost]
	var ag float64
	for _, c := range post.Comms {
		if c.Kind == step.CommZeRO3 && c.Op == "allgather" {
			ag = c.TimeUs * 1e-6
		}
	}
	// 80 layers × 2 micro-batches of waited-for gathers, beyond what pre exposes.
	waited := 80 * 2 * ag
	if d := post.Breakdown.Exposed[step.CommZeRO3] - pre.Breakdown.Exposed[step.CommZeRO3]; !(ag > 0) || math.Abs(d-waited) > 1e-9*waited+1e-12 {
		t.Errorf("post exposes %v s more ZeRO-3 than pre, want 160 gathers of %v s = %v s", d, ag, waited)
	}
	if got[step.PrefetchNone].StepTime != post.StepTime || !(post.StepTime > pre.StepTime) {
		t.Errorf("step: pre %v s, post %v s, none %v s", pre.StepTime, post.StepTime, got[step.PrefetchNone].StepTime)
	}
	if post.Training.BackwardPrefetch != step.PrefetchPost {
		t.Errorf("result reports backward prefetch %q", post.Training.BackwardPrefetch)
	}
}

// On a job over 4096 GPUs the exposure bounds come from the fabric's cuts, not from
// placed groups: the bound the planner takes for a ZeRO-3 or context-parallel layout
// still never exceeds the estimate.
func TestExposedBoundsHoldAtScale(t *testing.T) {
	e := step.New()
	checked := 0
	for _, name := range []string{"llama3-70b", "llama3-8b"} {
		a := arch(t, name)
		for _, l := range []step.Layout{
			{TP: 8, PP: 1, DP: 1024, CP: 1},
			{TP: 1, PP: 1, DP: 8192, CP: 1},
			{TP: 2, PP: 2, DP: 512, CP: 4},
			{TP: 4, PP: 4, DP: 256, CP: 2},
			{TP: 8, PP: 2, DP: 64, CP: 8},
			{TP: 1, PP: 1, DP: 1024, CP: 8, CPAllToAll: true},
		} {
			for _, z := range []int{1, 3} {
				r := step.Request{Model: a, Cluster: cluster(t, "dgx-h100", 1024),
					Training: step.Training{SeqLen: 32768, GlobalBatch: 8192}}
				r.Layout = l
				r.Layout.MicroBatch, r.Layout.ZeRO, r.Layout.SP = 1, z, l.TP > 1
				res, err := e.Estimate(r)
				if err != nil {
					continue
				}
				b, ok := e.LowerBounds(r)
				if !ok {
					t.Fatalf("%+v: no bound", res.Layout)
				}
				x := e.ExposedBounds(r, b)
				if x.PerMicroBatch == 0 && x.ZeRO3 == 0 && x.ParamGather == 0 {
					t.Errorf("%+v: no exposure bounded", res.Layout)
				}
				lb := b.StepTime + (float64(res.MicroBatches)+float64(l.PP-1))*x.PerMicroBatch
				switch z {
				case 3:
					lb += x.ZeRO3
				case 1:
					lb += x.ParamGather
				}
				checked++
				if !(lb <= res.StepTime*(1+1e-9)) {
					t.Errorf("%+v: bound %.4g s > estimate %.4g s", res.Layout, lb, res.StepTime)
				}
				t.Logf("%s tp%d pp%d cp%d dp%d ZeRO %d: bound %.3g s (exposure %.3g s per micro-batch, ZeRO-3 %.3g s), estimate %.3g s", name, l.TP, l.PP, l.CP, l.DP, z, lb, x.PerMicroBatch, x.ZeRO3, res.StepTime)
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d layouts checked", checked)
	}
}
