package step

// BackwardOnlyCasts is the part of one micro-batch's forward pass through the
// largest pipeline stage (Result.PerMicroBatch.Forward) that fp8 training spends
// quantizing operands the backward pass alone reads: the column-wise copies of the
// matmul inputs — the transpose a per-tensor cast writes, MXFP8's column-scaled
// axis — and, where the forward casts the weights, theirs. A forward pass without
// gradients, an evaluation step, does not make them: Transformer Engine asks its
// quantizers for column-wise data only when the backward needs the operand
// (NVIDIA/TransformerEngine d0067d0, transformer_engine/pytorch/module/linear.py:
// backward_needs_input = is_grad_enabled and weight.requires_grad for the input,
// columnwise_usage = is_grad_enabled and inp.requires_grad for the weight;
// ops/fused/grouped_mlp.py, the op fuser's grouped MLP: the weights' column-wise
// usage from input_requires_grad, the inputs' from weight_requires_grad). 0 in
// 16 bits and where the forward casts along the rows only.
func (e *Estimator) BackwardOnlyCasts(req Request) (float64, error) {
	req = normalise(req)
	if err := validate(&req); err != nil {
		return 0, err
	}
	t, l := &req.Training, &req.Layout
	gpu := req.Cluster.GPU()
	r, ok := e.k.rates(gpu, t.Precision)
	if !ok {
		return 0, e.Supports(gpu, t.Precision)
	}
	if !r.fp8 {
		return 0, nil
	}
	s := float64(t.SeqLen)
	sLocal := s / float64(l.CP)
	var cp computeParts
	e.computeInto(&cp, &req, &r, float64(l.MicroBatch)*sLocal, sLocal, s, nil)
	return cp.nDense*cp.lc.castCols + cp.nMoE*cp.lcMoE.castCols, nil
}
