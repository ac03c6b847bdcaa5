package step

import (
	"fmt"
	"strings"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
)

// withMoEProfile fills the MoE and activation-storage settings a request leaves
// open from the framework's profile, in place.
func (t *Training) withMoEProfile(fw *framework.Profile) {
	t.FP8Activations = t.FP8Activations || fw.FP8Activations && t.Precision == FP8
	t.MoEPermuteFusion = t.MoEPermuteFusion || fw.FusedPermute
	if t.MoEDispatcher == "" {
		t.MoEDispatcher = DispatchAllToAll
		if fw.DedupDispatch {
			t.MoEDispatcher = DispatchDeepEP
		}
	}
}

// validateMoE checks the MoE and activation-storage settings of a training setup.
func (t Training) validateMoE(c *invalid.Collector) {
	switch t.MoEDispatcher {
	case "", DispatchAllToAll, DispatchDeepEP:
	default:
		c.Add("training.moe_dispatcher", "must be alltoall or deepep (got %q)", t.MoEDispatcher)
	}
	if t.MoEPadToCapacity && t.MoECapacityFactor == 0 {
		c.Add("training.moe_pad_to_capacity", "pads to the capacity of moe_capacity_factor, which is 0 (dropless)")
	}
	if t.FP8Activations && t.Precision != FP8 {
		c.Add("training.fp8_activations", "applies to precision %s only (precision is %s)", FP8, t.Precision)
	}
	if t.FP8KVIn16Bits && t.Precision != FP8 {
		c.Add("training.fp8_kv_projections_16bit", "applies to precision %s only (precision is %s)", FP8, t.Precision)
	}
}

// validateMoELayout checks the MoE overlaps of a layout.
func validateMoELayout(c *invalid.Collector, l *Layout, a *model.Arch) {
	if l.OverlapSharedExpert && (a.MoE == nil || a.MoE.SharedExperts == 0) {
		c.Add("layout.overlap_shared_expert", "overlaps the shared experts with the all-to-alls: needs an MoE model with shared experts")
	}
}

// validateRecomputeModules checks Layout.RecomputeModules against the recompute
// policy and the model.
func validateRecomputeModules(c *invalid.Collector, l *Layout, a *model.Arch) {
	if len(l.RecomputeModules) == 0 {
		return
	}
	if l.Recompute != RecomputeSelective {
		c.Add("layout.recompute_modules", "names the modules of selective recomputation: needs recompute %s (got %q)", RecomputeSelective, l.Recompute)
	}
	for i, n := range l.RecomputeModules {
		ok := false
		for _, r := range recomputeModuleNames {
			ok = ok || r.name == n
		}
		field := fmt.Sprintf("layout.recompute_modules[%d]", i)
		switch {
		case !ok:
			names := RecomputeModuleNames()
			c.Add(field, "must be %s or %s (got %q)", strings.Join(names[:len(names)-1], ", "), names[len(names)-1], n)
		case (n == "moe" || n == "moe_act" || n == "shared_experts") && a.MoE == nil:
			c.Add(field, "%s needs an MoE model", n)
		case n == "mla_up_proj" && a.MLA == nil:
			c.Add(field, "mla_up_proj needs multi-head latent attention")
		}
	}
}
