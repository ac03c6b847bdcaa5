package wire

import (
	"fmt"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
)

// NoEffect warns of the training fields given (t as sent, before the framework's
// defaults) that cannot change the answer: the MoE settings of a dense model,
// and, for one layout (l; nil for a search, whose layouts vary), the ZeRO-3
// settings of a layout without ZeRO-3 and the NCCL thread blocks of a group it
// does not run collectives on. The request is valid; it asks something the model
// or the layout leaves out, which the echo of the training would otherwise hide.
//
// A value the framework's profile fills in when the field is left out is not a
// setting of the caller's: the answer echoes it (its training, "defaults filled
// in"), so a plan's or an estimate's training sent back is the same question, and
// warned of nothing (TestPlanSentBackWarnsOfNothingNew).
func NoEffect(a model.Arch, t step.Training, l *step.Layout) []string {
	var out []string
	def := step.Training{Framework: t.Framework, Precision: t.Precision}.Normalise()
	if t.MoEDispatcher == def.MoEDispatcher {
		t.MoEDispatcher = ""
	}
	if t.BackwardPrefetch == def.BackwardPrefetch {
		t.BackwardPrefetch = ""
	}
	t.MoEPermuteFusion = t.MoEPermuteFusion && !def.MoEPermuteFusion
	t.OnDemandGathers = t.OnDemandGathers && !def.OnDemandGathers
	warn := func(given bool, field, why string, args ...any) {
		if given {
			out = append(out, field+": no effect: "+fmt.Sprintf(why, args...))
		}
	}
	if a.MoE == nil {
		dense := "the model has no MoE layers"
		warn(t.MoEImbalance != 0, "training.moe_imbalance", "%s", dense)
		warn(t.MoECapacityFactor != 0, "training.moe_capacity_factor", "%s", dense)
		warn(t.MoEPadToCapacity, "training.moe_pad_to_capacity", "%s", dense)
		warn(t.MoEDispatcher != "", "training.moe_dispatcher", "%s", dense)
		warn(t.MoEPermuteFusion, "training.moe_permute_fusion", "%s", dense)
		// The hardware queues are priced only under the EP all-to-all overlap (step's
		// epOverlapLayerOneQueue).
		warn(t.DeviceMaxConnections != 0, "training.cuda_device_max_connections", "%s", dense)
		warn(t.MoERouterFP32, "training.moe_router_fp32", "%s", dense)
		warn(t.MoEGroupedGEMM, "training.moe_grouped_gemm", "%s", dense)
	}
	// The key and value projections are priced apart only where the framework
	// runs each projection as its own linear and the attention has no MLA (step's
	// fp8KVIn16Bits); with another precision the field is refused, not warned of.
	if t.FP8KVIn16Bits && t.Precision == step.FP8 {
		switch fw, err := framework.Get(def.Framework); {
		case a.MLA != nil:
			warn(true, "training.fp8_kv_projections_16bit", "the model's attention is MLA, whose key and value come from one latent projection")
		case err == nil && !fw.FP8CastPerProjection:
			warn(true, "training.fp8_kv_projections_16bit", "framework %s's fp8 linears are priced as one query-key-value linear, not per projection (the torchtitan profiles run them apart)", def.Framework)
		}
	}
	if l == nil {
		return out
	}
	if a.MoE != nil && (!l.OverlapEP || l.EP <= 1 || l.Schedule == step.DualPipe) {
		warn(t.DeviceMaxConnections != 0, "training.cuda_device_max_connections", "the layout runs no Megatron-Core EP all-to-all overlap (overlap_ep), the one thing the queues are priced in")
	}
	if l.ZeRO != 3 {
		warn(t.OnDemandGathers, "training.zero3_on_demand_gathers", "the layout runs ZeRO %d, not ZeRO-3", l.ZeRO)
		warn(t.BackwardPrefetch != "", "training.zero3_backward_prefetch", "the layout runs ZeRO %d, not ZeRO-3", l.ZeRO)
	}
	// The ring attention's sends run on the context-parallel group's thread
	// blocks; without context parallelism there are none (step's commOnCTAs).
	warn(t.CPMaxCTAs != 0 && l.CP <= 1, "training.cp_nccl_max_ctas", "the layout has no context parallelism (cp %d)", max(1, l.CP))
	// The TP collectives NCCL runs (step's groupMaxCTAs): none with tp 1, and
	// TP overlap's transfers are not NCCL's.
	switch {
	case t.TPMaxCTAs != 0 && l.TP <= 1:
		warn(true, "training.tp_nccl_max_ctas", "the layout has no tensor parallelism (tp %d)", max(1, l.TP))
	case t.TPMaxCTAs != 0 && l.OverlapTP:
		warn(true, "training.tp_nccl_max_ctas", "under overlap_tp the TP transfers run outside NCCL")
	}
	return out
}

// WhatIfNoEffect warns of the what-ifs given at 1: the part at its healthy speed
// (0 is none), which prices as if the what-if were not given.
func WhatIfNoEffect(slow, nic, link float64) []string {
	var out []string
	for _, w := range []struct {
		field, part string
		v           float64
	}{{"slow_gpu_speed", "the GPU", slow}, {"degraded_nic_speed", "the node's NICs", nic}, {"degraded_link_speed", "the GPU's link", link}} {
		if w.v == 1 {
			out = append(out, fmt.Sprintf("%s: no effect: 1 is %s at full speed (give a fraction below 1, or 0 for none)", w.field, w.part))
		}
	}
	return out
}

// PlanNoEffect is NoEffect for a search (the model's fields; its layouts vary),
// and placement_tolerance where every job size has one placement: without a free
// map, excluded or degraded nodes the planner places a job on the first nodes
// (planner's placements), so there is nothing to choose between.
func PlanNoEffect(pr planner.Request) []string {
	out := NoEffect(pr.Model, pr.Training, nil)
	out = append(out, WhatIfNoEffect(pr.SlowGPUSpeed, pr.DegradedNICSpeed, pr.DegradedLinkSpeed)...)
	if pr.PlacementTolerance != nil && len(pr.Free) == 0 && len(pr.ExcludeNodes) == 0 && len(pr.DegradedNodes) == 0 {
		out = append(out, "placement_tolerance: no effect: without cluster.free_gpus, exclude_nodes or degraded_nodes each job size has one placement, the first nodes")
	}
	return out
}
