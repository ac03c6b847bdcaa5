package step

import (
	"math"
	"testing"
)

// One dense layer at TP 8 on a GPU of 132 SMs, no recomputation: the all-gather
// and reduce-scatter take 4 each (2 and 4 with the framework's fp8 buffers), the
// attention's GEMMs 2 (input projections) and 4 (output projection), the MLP's 32
// (up) and 16 (down). Every figure below is derived by hand from the methods.
func TestTPOverlapMethods(t *testing.T) {
	cp := computeParts{stageLayers: 1, nDense: 1}
	cp.lc.tpGEMM = [4]float64{2, 4, 32, 16}
	l := Layout{TP: 8, SP: true, OverlapTP: true}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: %.6f, want %.6f", what, got, want)
		}
	}

	// Async TP: every collective a ring exchange beside its forward GEMM, forward
	// and backward alike. The attention's all-gather exposes 4 − 7/8·2 = 2.25, its
	// reduce-scatter 4 − 7/8·4 = 0.5, twice (forward, backward); the MLP's GEMMs
	// outlast theirs. All 8 collectives move 32, the rest hidden, a quarter of the
	// SMs taken while they run.
	e, h, c := tpOverlap(&l, &cp, tpOverlapIn{ag: 4, rs: 4, ag8: 2, rs8: 2, sms: 132, smShare: 0.25})
	near("async TP exposed", e, 2*(2.25+0.5))
	near("async TP hidden", h, 32-5.5)
	near("async TP contention", c, 0.25*(32-5.5))

	// Under torchao's rowwise recipe torchtitan all-gathers in 16 bits and quantises
	// after the gather, so Inductor's micro-pipeline pass finds no matmul on the
	// gathered tensor: the forward all-gathers run whole (the attention's 1.75 and
	// the MLP's 4 that the ring hid), the reduce-scatters and the backward as before.
	// Tensorwise gathers in fp8 straight into _scaled_mm; userbuffers overlap by
	// their own methods.
	if !fp8AllGatherUnfused(false, true, FP8Rowwise) || fp8AllGatherUnfused(false, true, FP8Current) ||
		fp8AllGatherUnfused(true, true, FP8Rowwise) || fp8AllGatherUnfused(false, false, FP8Rowwise) {
		t.Error("fp8AllGatherUnfused: want true only for rowwise fp8 without userbuffers")
	}
	e, h, c = tpOverlap(&l, &cp, tpOverlapIn{ag: 4, rs: 4, ag8: 2, rs8: 2, sms: 132, smShare: 0.25, agFwdUnfused: true})
	near("async TP, rowwise, exposed", e, 2*(2.25+0.5)+1.75+4)
	near("async TP, rowwise, hidden", h, 32-5.5-5.75)
	near("async TP, rowwise, contention", c, 0.25*(32-5.5-5.75))

	// Transformer Engine's userbuffers. Attention: the forward all-gather in fp8 by
	// ring exchange exposes 2 − 7/8·2 = 0.25; the forward reduce-scatter, pipelined
	// in 4 chunks of 1 beside 4 chunks of the output projection slowed to 116 of
	// 132 SMs (4·132/116 = 4.55, chunks of 1.14), exposes its last chunk, 1; the
	// backward all-gather of the output gradient (2, fp8) hides under 7/8 of the
	// output projection's data gradient (3.5); the backward reduce-scatter in bulk
	// beside the input projections' weight gradient (2) exposes 4 − 2 = 2; the
	// backward re-gather of the input (2, fp8) in bulk beside the input projections'
	// data gradient (2) exposes nothing. MLP: only the pipelined reduce-scatter's
	// last chunk, 1; its re-gather (2) hides under the up projection's data gradient
	// (32). Hidden: 2·(2 + 4 + 2 + 4 + 2) = 28 moved, less 4.25 exposed. Contention:
	// the GEMMs beside the pipelined reduce-scatters run 132/116 as long (4 and 16 →
	// +(4 + 16)·16/116), the bulk reduce-scatters' hidden 2 and 4 and the bulk
	// re-gathers' 2 and 2 take 16 of 132 SMs, the ring exchange none.
	in := tpOverlapIn{ag: 4, rs: 4, ag8: 2, rs8: 4, sms: 132, userbuffers: true, smShare: 0.25}
	e, h, c = tpOverlap(&l, &cp, in)
	near("userbuffers exposed", e, 0.25+1+2+1)
	near("userbuffers hidden", h, 28-4.25)
	near("userbuffers contention", c, 20*16.0/116+10*16.0/132)

	// A re-gather that outlasts its data gradient exposes the rest: with 16-bit
	// all-gather buffers (4) the attention's re-gather beside the input projections'
	// data gradient (2) exposes 2, its forward all-gather 4 − 7/8·2 = 2.25 and its
	// output gradient's 4 − 7/8·4 = 0.5; the MLP's GEMMs still outlast theirs.
	in.ag8 = 4
	e, _, _ = tpOverlap(&l, &cp, in)
	near("userbuffers, 16-bit all-gathers, exposed", e, (4-1.75)+(4-3.5)+1+2+2+1)
	in.ag8 = 2

	// fp8 reduce-scatter buffers halve the pipelined chunks: 0.5 exposed per
	// forward reduce-scatter instead of 1; the backward one stays 16-bit.
	in.rs8 = 2
	e, _, _ = tpOverlap(&l, &cp, in)
	near("userbuffers, fp8 pipelined reduce-scatter, exposed", e, 0.25+0.5+2+0.5)

	// Full recomputation runs each forward twice: the forward's exposure doubles,
	// the backward's stays.
	l.Recompute = RecomputeFull
	in.rs8 = 4
	e, _, _ = tpOverlap(&l, &cp, in)
	near("userbuffers, full recompute, exposed", e, 2*(0.25+1+1)+2)
}
