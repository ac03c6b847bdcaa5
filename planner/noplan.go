package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
)

// noPlanReason says why a search found no plan, from what pruned its layouts and
// the request: the free GPUs that cannot host the job, memory, divisibility, or
// constraints that leave nothing to search. r is the normalised request (its free
// map without the excluded nodes).
func noPlanReason(r *Request, st Stats, given map[string]bool) string {
	var why []string
	size := r.GPUs
	if size == 0 {
		size = r.MinGPUs
	}
	if st.Pruned[PrunedPlacement] > 0 || r.Free != nil {
		free, nodes := r.Cluster.GPUs(), r.Cluster.Spec.Nodes
		if r.Free != nil {
			free, nodes = 0, 0
			for _, gs := range r.Free {
				free += len(gs)
				if len(gs) > 0 {
					nodes++ // a node listed with no GPU free hosts nothing
				}
			}
		}
		if free < size || st.Pruned[PrunedPlacement] > 0 {
			s := fmt.Sprintf("the job needs %d GPUs; %d are free on %d of the cluster's %d nodes", size, free, nodes, r.Cluster.Spec.Nodes)
			if len(r.ExcludeNodes) > 0 {
				ex := slices.Clone(r.ExcludeNodes)
				slices.Sort(ex)
				s += fmt.Sprintf(" (%s %s excluded)", plural(len(ex), "node", "nodes"), joinInts(ex))
			}
			if r.Free != nil && free >= size {
				s += ", not in whole TP groups of a node"
			}
			why = append(why, s+": give a larger cluster (cluster.nodes, --nodes) or free more GPUs")
		}
	}
	if n := st.Pruned[PrunedMemoryBound] + st.Pruned[PrunedMemory]; n > 0 && n >= st.Enumerated/2 {
		why = append(why, fmt.Sprintf("%d of the %d layouts do not fit in the GPUs' memory%s", n, st.Enumerated, memoryRemedy(r, given)))
	}
	if n := st.Pruned[PrunedDivisibility]; n > 0 && st.Enumerated == 0 && st.refused == 0 {
		s := fmt.Sprintf("no parallel degrees divide the job (%d pipeline depths or batch splits refused): the global batch %d, the %d layers and the GPU count must share divisors", n, r.Training.GlobalBatch, r.Model.Layers)
		if r.Constraints.EvenSplit {
			s += " (constraints.even_split: the pipeline depth must divide the layers)"
		}
		why = append(why, s)
	}
	if n := st.Pruned[PrunedInvalid]; n > 0 {
		why = append(why, fmt.Sprintf("%d layouts were refused by the step model's rules", n))
	}
	if len(why) == 0 && st.Enumerated == 0 {
		s := "the constraints leave no layout to search"
		if lists := givenConstraints(r.Constraints, given, frameworkName(r)); lists != "" {
			s += fmt.Sprintf(": %s on %d GPUs (%d heads, %d layers, global batch %d)", lists, size, r.Model.Heads, r.Model.Layers, r.Training.GlobalBatch)
			if r.Model.MoE == nil && len(r.Constraints.EP) > 0 && !slices.Contains(r.Constraints.EP, 1) {
				s += "; the model has no experts, so ep can only be 1"
			}
			// The framework's rule (Validate's interleaveOver2): its interleaved
			// schedule alone on pipelines of 2 stages or fewer leaves nothing.
			if cs := r.Constraints; cs.interleaveOver2 && len(cs.Schedules) == 1 && cs.Schedules[0] == step.Interleaved &&
				len(cs.PP) > 0 && !slices.ContainsFunc(cs.PP, func(pp int) bool { return pp > 2 }) {
				s += fmt.Sprintf("; %s interleaves only pipelines of more than 2 stages", frameworkName(r))
			}
		}
		if st.refused > 0 {
			s += "; " + scheduleRefusal(r, st.firstRefused)
		}
		// Ulysses alone: layouts with cp > 1 run it only where tp × cp divides
		// the heads (enumerate), so tp and cp pins that ring attention runs leave
		// nothing.
		if cs := r.Constraints; slices.Contains(cs.CPAllToAll, true) && !slices.Contains(cs.CPAllToAll, false) {
			s += fmt.Sprintf("; constraints.cp_all_to_all asks only for Ulysses' all-to-alls, which wherever cp > 1 need tp × cp to divide the %d heads", r.Model.Heads)
			if kv := r.Model.KVHeads; kv > 1 {
				s += fmt.Sprintf(" (and cp the %d KV heads, or they it)", kv)
			}
		}
		// fp8 weights pinned where the framework keeps them only under a sharded
		// optimizer (searched: no ZeRO-0 layout with them).
		if cs := r.Constraints; cs.fp8Sharded && len(cs.ZeRO) > 0 && !slices.ContainsFunc(cs.ZeRO, func(z int) bool { return z >= 1 }) {
			field := ""
			switch {
			case r.Training.FP8Params:
				field = "training.fp8_params"
			case slices.Contains(cs.FP8Params, true) && !slices.Contains(cs.FP8Params, false):
				field = "constraints.fp8_params"
			}
			if field != "" && r.Training.Precision == step.FP8 {
				s += fmt.Sprintf("; %s asks only for fp8 weights, which %s keeps only under a sharded optimizer, ZeRO 1 or more", field, frameworkName(r))
			}
		}
		why = append(why, s)
	}
	if len(why) == 0 {
		why = append(why, fmt.Sprintf("every layout was pruned: %s", prunedSummary(st)))
	}
	return "no feasible plan: " + strings.Join(why, "; ")
}

// scheduleRefusal says why the schedules searched run no pipeline the job divides
// into, for f, the one with the most micro-batches per replica: what each schedule's framework requires of it
// (step.ScheduleRule, as estimate refuses the same layout), or that no
// interleaving depth searched splits the layers over its stages.
func scheduleRefusal(r *Request, f refusal) string {
	cs, layers := &r.Constraints, r.Model.Layers
	scheds := cs.Schedules
	if len(scheds) == 0 {
		scheds = []step.Schedule{step.GPipe, step.OneFOneB, step.Interleaved, step.ZeroBubble, step.ZeroBubbleV, step.DualPipe}
	}
	var needs []string
	for _, s := range scheds {
		rule, ok := step.RuleOf(s)
		if !ok {
			continue
		}
		var need string
		switch {
		case f.pp < rule.MinPP:
			need = fmt.Sprintf("pp ≥ %d", rule.MinPP)
		case rule.EvenPP && f.pp%2 != 0:
			need = "an even pp"
		case rule.MicroBatchesMultipleOfPP && f.m%f.pp != 0:
			need = fmt.Sprintf("them a multiple of pp %d", f.pp)
		case rule.EvenMicroBatches && f.m%2 != 0:
			need = "an even number of them"
		case f.m < rule.MinMicroBatchesPerPP*f.pp:
			need = fmt.Sprintf("at least %d × pp = %d of them", rule.MinMicroBatchesPerPP, rule.MinMicroBatchesPerPP*f.pp)
		case rule.EvenChunkSplit && layers%(max(1, rule.Chunks)*f.pp) != 0:
			needs = append(needs, fmt.Sprintf("%s splits the %d layers evenly over %d × pp = %d chunks, which must divide them", named(s), layers, max(1, rule.Chunks), max(1, rule.Chunks)*f.pp))
			continue
		case s == step.Interleaved && cs.interleaveOver2 && f.pp <= 2:
			continue // said with the framework's lists
		case s == step.Interleaved:
			// schedules: a depth v ≥ 2 whose pp × v chunks split the layers
			// evenly or counting the embedding and loss, or, on layers pp does
			// not divide and with uneven_pp, any v up to maxBalancedChunks.
			v := "an interleaving depth"
			if len(cs.VirtualStages) > 0 {
				v = fmt.Sprintf("constraints.virtual_stages %v", cs.VirtualStages)
			}
			how := "evenly or counting the embedding and loss as layers"
			switch {
			case cs.EvenSplit:
				how = "evenly (constraints.even_split)"
			case layers%f.pp != 0 && cs.UnevenPP:
				how = fmt.Sprintf("with at most %d chunks a stage", maxBalancedChunks(cs))
			case layers%f.pp != 0:
				how += fmt.Sprintf(" (constraints.uneven_pp interleaves any split of up to %d chunks a stage)", maxBalancedChunks(&Constraints{UnevenPP: true}))
			}
			needs = append(needs, fmt.Sprintf("%s needs %s of at least 2 chunks a stage whose pp × chunks split the %d layers %s", named(s), v, layers, how))
			continue
		default:
			continue
		}
		needs = append(needs, fmt.Sprintf("%s needs %s", named(s), need))
	}
	return fmt.Sprintf("no schedule searched runs a pipeline the job divides into: at most, on pp %d with dp %d and micro-batches of %d, a replica runs %d micro-batches (global batch %d), and %s",
		f.pp, f.dp, f.mbs, f.m, r.Training.GlobalBatch, strings.Join(needs, "; "))
}

// named is a schedule as a no-plan reason names it: a constraint list of one, which
// each transport spells its way (the API's SCHEDULE_INTERLEAVED, the command line's
// --schedule [interleaved]).
func named(s step.Schedule) string { return fmt.Sprintf("constraints.schedules [%s]", s) }

// memoryRemedy says what of the request left the layouts no room (the memory
// min_headroom_gb keeps free) and what would make some: a higher ZeRO stage or
// full recomputation only where the search had not tried them for the pin that
// left them out (given; not for a framework that runs neither); an offload only
// where one is left to ask for (params after optimizer, none after params) and the node's host
// memory is described (Validate's cluster.host rule).
func memoryRemedy(r *Request, given map[string]bool) string {
	var s string
	if h := r.Constraints.MinHeadroomGB; h > 0 {
		s = fmt.Sprintf(" with constraints.min_headroom_gb %g GB kept free of each GPU's %.3g GB", h, r.Cluster.GPU().MemoryGB)
	}
	// The lists searched: empty is every stage and mode (newSpace); a list the
	// request did not give is the framework's, which runs nothing else.
	ways := []string{"more GPUs"}
	if zs := r.Constraints.ZeRO; len(zs) > 0 && !slices.Contains(zs, 3) && given["zero"] {
		ways = append(ways, fmt.Sprintf("a higher ZeRO stage than constraints.zero %v", zs))
	}
	if rs := r.Constraints.Recompute; len(rs) > 0 && !slices.Contains(rs, step.RecomputeFull) && given["recompute"] {
		ways = append(ways, fmt.Sprintf("full recomputation (constraints.recompute %v)", rs))
	}
	switch {
	case !r.Cluster.Spec.Host.Described() || r.Constraints.Offload == step.OffloadParams:
	case r.Constraints.Offload == step.OffloadOptimizer:
		ways = append(ways, "offloading the parameters too (constraints.offload params)")
	default:
		ways = append(ways, "offload (constraints.offload)")
	}
	last := len(ways) - 1
	if last == 0 {
		return s + ": more GPUs would make room"
	}
	return s + ": " + strings.Join(ways[:last], ", ") + " or " + ways[last] + " would make room"
}

// givenConstraints lists the request's parallel-degree, micro-batch and schedule
// constraints, with their values ("constraints.tp [3], constraints.schedules
// [dualpipe]"): the ones that can leave nothing to search. A list the request did
// not give (given, from Constraints.given before the search) is the framework's
// (restrictToRuns), and says so: "constraints.zero [0] (megatron-lm-2021's)".
func givenConstraints(c Constraints, given map[string]bool, fw string) string {
	var out []string
	add := func(name string, v any) {
		s := fmt.Sprintf("constraints.%s %v", name, v)
		if !given[name] {
			s += fmt.Sprintf(" (%s's)", fw)
		}
		out = append(out, s)
	}
	for _, l := range []struct {
		name string
		v    []int
	}{{"tp", c.TP}, {"pp", c.PP}, {"cp", c.CP}, {"ep", c.EP}, {"zero", c.ZeRO}, {"micro_batch", c.MicroBatch}, {"virtual_stages", c.VirtualStages}} {
		if len(l.v) > 0 {
			add(l.name, l.v)
		}
	}
	if len(c.Schedules) > 0 {
		add("schedules", c.Schedules)
	}
	if len(c.Recompute) > 0 {
		add("recompute", c.Recompute)
	}
	// The switches the request pinned (a framework's own, filled in by
	// restrictToRuns, search both values or what it runs and are not said):
	// each as the API's field takes it ([true], [false]); a transport that
	// takes them otherwise respells them (the command line's --sp off,
	// --cp-variant ulysses).
	for _, l := range boolPins(c) {
		if len(l.v) > 0 && given[l.name] {
			add(l.name, l.v)
		}
	}
	return strings.Join(out, ", ")
}

// boolPins are the constraint lists of switches, by their API name.
func boolPins(c Constraints) []struct {
	name string
	v    []bool
} {
	return []struct {
		name string
		v    []bool
	}{{"sp", c.SP}, {"overlap_tp", c.OverlapTP}, {"overlap_ep", c.OverlapEP}, {"cp_all_to_all", c.CPAllToAll},
		{"experts_whole", c.ExpertsWhole}, {"fp8_params", c.FP8Params}, {"offload_activations", c.OffloadActivations}}
}

// given names the lists of c that are given (not empty), before the search fills
// the empty ones in from the framework.
func (c Constraints) given() map[string]bool {
	g := map[string]bool{"tp": len(c.TP) > 0, "pp": len(c.PP) > 0, "cp": len(c.CP) > 0, "ep": len(c.EP) > 0, "zero": len(c.ZeRO) > 0,
		"micro_batch": len(c.MicroBatch) > 0, "virtual_stages": len(c.VirtualStages) > 0, "schedules": len(c.Schedules) > 0, "recompute": len(c.Recompute) > 0}
	for _, l := range boolPins(c) {
		g[l.name] = len(l.v) > 0
	}
	return g
}

// frameworkName is the framework the request names, as its profile spells it.
func frameworkName(r *Request) string {
	if p, err := framework.Get(r.Training.Framework); err == nil {
		return p.Name
	}
	return r.Training.Framework
}

// excludedAll is the refusal of exclude_nodes that leave the job no free GPU:
// every node of the cluster, or (with a free map listing listed nodes) every
// node the map lists, the others having none free.
func excludedAll(r *Request, mapped bool, listed int) error {
	n, total := len(r.ExcludeNodes), r.Cluster.Spec.Nodes
	nodes := fmt.Sprintf("%s %s", plural(n, "node", "nodes"), joinInts(r.ExcludeNodes))
	if !mapped || n == total {
		return invalid.Field("exclude_nodes", "excludes %s, every node of the cluster's %d (cluster.nodes): no GPU is left for the job", nodes, total)
	}
	return invalid.Field("exclude_nodes", "excludes %s, every node cluster.free_gpus lists (%d); the cluster's %d other %s no free GPU: no GPU is left for the job",
		nodes, listed, total-n, plural(total-n, "node has", "nodes have"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func prunedSummary(st Stats) string {
	keys := make([]string, 0, len(st.Pruned))
	for k := range st.Pruned {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	s := make([]string, 0, len(keys))
	for _, k := range keys {
		s = append(s, fmt.Sprintf("%s %d", k, st.Pruned[k]))
	}
	return strings.Join(s, ", ")
}
