package step_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/step"
)

// Each pipeline hop is priced on its own pairs' links: on GB200 NVL72 trays in
// 64-GPU NVLink domains, TP 8 × DP 4 stages of 32 GPUs put stages 0 and 1 in one
// domain and 2 and 3 in the next, so hops 0 → 1 and 2 → 3 stay on NVLink while
// 1 → 2 and the interleaved schedule's wrap-around 3 → 0 cross InfiniBand: those
// two cannot beat a GPU's share of its tray's NICs, the in-domain two come in
// under it.
func TestPipelineHopsCrossingTheDomainPayInfiniBand(t *testing.T) {
	spec, err := catalog.System("gb200-nvl72")
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes, spec.Intra.DomainNodes = 32, 16
	cl, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	a := arch(t, "gpt3-175b")
	req := step.Request{
		Model:    a,
		Cluster:  cl,
		Training: step.Training{SeqLen: 2048, GlobalBatch: 64},
		Layout: step.Layout{TP: 8, PP: 4, DP: 4, MicroBatch: 1, SP: true, ZeRO: 1,
			Schedule: step.Interleaved, VirtualStages: 2},
	}
	res, err := step.New().Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	hops := res.PerMicroBatch.HopSends
	if len(hops) != 4 {
		t.Fatalf("hop sends %v, want 4 (three hops and the wrap-around)", hops)
	}
	// One send: each TP rank's slice of a micro-batch's activations, 2-byte.
	bytes := float64(2048*a.Hidden*2) / 8
	gpuNIC := float64(spec.NICs.PerNode) / float64(spec.GPUsPerNode) * spec.NICs.Gbps / 8 * 1e9 // bytes/s
	ib := bytes / gpuNIC
	for h, x := range hops {
		cross := h == 1 || h == 3
		if cross && !(x >= ib) || !cross && !(x < ib) {
			t.Errorf("hop %d: %.1f µs, a GPU's NIC share moves the %.2f MB in %.1f µs (crossing the domain: %v)", h, x*1e6, bytes/1e6, ib*1e6, cross)
		}
	}
	if hops[0] != hops[2] || hops[1] != hops[3] || res.PerMicroBatch.Send != hops[0] {
		t.Errorf("hops %v, send %v: the two in-domain hops and the two crossing ones should cost alike", hops, res.PerMicroBatch.Send)
	}
	// A rank's forwards send on its hop, its backwards on the one before (the
	// first rank's on the wrap-around).
	for r, want := range [][2]float64{{hops[0], hops[3]}, {hops[1], hops[0]}, {hops[2], hops[1]}, {hops[3], hops[2]}} {
		if f, b := step.RankSends(res, r); f != want[0] || b != want[1] {
			t.Errorf("rank %d sends %v / %v, want %v", r, f, b, want)
		}
	}

	// The same job in one 128-GPU NVLink domain: every hop in the domain, the
	// step no slower.
	spec.Intra.DomainNodes = 32
	one, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	req.Cluster = one
	in, err := step.New().Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	if in.PerMicroBatch.HopSends != nil || !(in.StepTime <= res.StepTime) {
		t.Errorf("one domain: hops %v, step %.4f s; two domains %.4f s", in.PerMicroBatch.HopSends, in.StepTime, res.StepTime)
	}
}

// The interleaved schedule's sends in flight hold up a rank only where Megatron-Core
// blocks on them (core_v0.12.0 schedules.py forward_backward_pipelining_with_interleaving,
// overlap_p2p_comm without overlap_p2p_comm_warmup_flush): its warm-up forwards,
// (p − r − 1)·2 + (v − 1)·p of them on rank r (get_pp_rank_microbatches), and as
// many cool-down backwards; in the steady state a send delays only the block that
// receives it. One hop is slow — rank 1's forwards to rank 2 and rank 2's
// backwards to rank 1 — the others free.
func TestInFlightSendsBlockOnlyWarmUpAndCoolDown(t *testing.T) {
	const p, v, m = 4, 2, 8
	const f, b, s = 1.0, 2.0, 0.5
	times := make([]step.BlockTimes, p)
	for r := range times {
		times[r] = step.BlockTimes{F: f, B: b}
	}
	times[1].S, times[2].SB = s, s
	var blocks []step.PipelineBlock
	if _, _, err := step.ExecutePipeline(step.Interleaved, p, v, m, times, &blocks); err != nil {
		t.Fatal(err)
	}
	warm := func(r int) int { return (p-r-1)*2 + (v-1)*p }
	long := map[[2]int]int{} // rank, pass → blocks lengthened by the send
	type key struct {
		mb, chunk int
		pass      step.Pass
	}
	at := map[key]step.PipelineBlock{}
	for _, x := range blocks {
		at[key{int(x.Op.MB), int(x.Op.Chunk), x.Op.Pass}] = x
		want := f
		if x.Op.Pass == step.PassBackward {
			want = b
		}
		switch d := x.End - x.Start; {
		case d == want+s:
			long[[2]int{x.Rank, int(x.Op.Pass)}]++
		case d != want:
			t.Errorf("rank %d %v mb %d chunk %d lasts %v", x.Rank, x.Op.Pass, x.Op.MB, x.Op.Chunk, d)
		}
	}
	for k, n := range long {
		if rank, pass := k[0], step.Pass(k[1]); !(rank == 1 && pass == step.PassForward || rank == 2 && pass == step.PassBackward) || n != warm(rank) {
			t.Errorf("rank %d: %d %v blocks hold their send, want %d on rank 1's forwards and rank 2's backwards only", rank, n, pass, warm(rank))
		}
	}
	if len(long) != 2 {
		t.Errorf("blocks held by their sends: %v", long)
	}
	// Every block that receives across the slow hop starts after the send
	// arrives: a forward of chunk 2 or 6 after chunk 1 or 5 on rank 1, a
	// backward of chunk 1 or 5 after chunk 2 or 6 on rank 2.
	for k, x := range at {
		var from key
		switch {
		case k.pass == step.PassForward && k.chunk%p == 2:
			from = key{k.mb, k.chunk - 1, step.PassForward}
		case k.pass == step.PassBackward && k.chunk%p == 1:
			from = key{k.mb, k.chunk + 1, step.PassBackward}
		default:
			continue
		}
		src := at[from]
		arrives := src.End
		if src.End-src.Start == f+s && k.pass == step.PassForward || src.End-src.Start == b+s && k.pass == step.PassBackward {
			arrives = src.End // a blocking send: done when its block ends
		} else {
			arrives += s
		}
		if x.Start < arrives-1e-12 {
			t.Errorf("%+v starts at %v, its input arrives at %v", k, x.Start, arrives)
		}
	}
}
