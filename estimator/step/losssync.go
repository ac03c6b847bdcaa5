package step

// The loss reduction's host sync (framework.Profile.LossReductionHostSync: NeMo
// 2.3). Once a micro-batch, where the loss is computed, NeMo's
// MaskedTokenLossReduction.forward (nemo/lightning/megatron_parallel.py at
// 7a8f1cc, line 1798) tests `num_valid_tokens_in_ub < 0.5` in Python on the loss
// mask's sum, a GPU tensor: the host waits until the GPU has run everything it
// was given, so the lead the host had built is gone and the GPU idles while the
// host issues what follows — the rest of the reduction, Megatron-Core's scaling
// of the loss and the backward pass's first, small operators — until the output
// layer's backward, whose GEMMs give the host its lead back. Counted from the
// code (eager operators, each Constants.EagerOpHostUs on an x86 host):
//   - megatron_parallel.py line 1800: clone, detach, cast to int (3); line 1813:
//     the loss over the token count (1);
//   - average_losses_across_data_parallel_group
//     (nemo/collections/nlp/modules/common/megatron/utils.py at 7a8f1cc, lines
//     197–201): clone, detach, view, cat, and the division by the group's size
//     after the all-reduce (5), the all-reduce a torch.distributed call
//     (c10dCallHostUs);
//   - Megatron-Core forward_step (pipeline_parallel/schedules.py at core_v0.12.0,
//     7094270; NeMo leaves calculate_per_token_loss off): the loss divided by the
//     token count, multiplied by the context-parallel size and divided by the
//     micro-batch count, in place (3);
//   - the backward pass up to Transformer Engine's cross-entropy backward: the
//     backward of those three, of masked_token_loss's product with the mask and
//     sum, and of its cast to fp32 (6).
const (
	lossSyncOps   = 3 + 1 + 5 + 3 + 6
	lossSyncCalls = 1
)

// lossSyncGap is the GPU's idle time after the loss reduction's host sync, once a
// micro-batch on the stage that computes the loss, under framework profiles with
// LossReductionHostSync; zero otherwise. The host's operators and call are priced
// as the layers' are, on the node's CPU (hostOpScale: Grace 2.75× an x86 host).
func (e *Estimator) lossSyncGap(req *Request, c *BoundsCache) float64 {
	fw, err := c.profile(req.Training.Framework)
	if err != nil || !fw.LossReductionHostSync {
		return 0
	}
	us := lossSyncOps*e.k.EagerOpHostUs + lossSyncCalls*c10dCallHostUs
	return us * 1e-6 * hostOpScale(req.Cluster.Spec)
}
