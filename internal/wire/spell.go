package wire

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/step"
	"github.com/stepcost/stepcost/planner"
	pb "github.com/stepcost/stepcost/proto/stepcost/v1"
)

// APIRule is a field error's rule as the API's caller reads it: each value of an
// enum-valued field written by the name the API takes for it (SCHEDULE_ZB_H1,
// RECOMPUTE_FULL, PRECISION_FP8, OBJECTIVE_COST), not the command line's flag
// value (zb-h1, full, fp8, cost) the domain's rules are written with. A caller
// of the API sent the former, over JSON or as the number over gRPC, and a refusal
// must name what was sent. The values of the collective model (algorithms,
// protocols, launches, operations) are respelled only in the rules of
// rules of fields outside the cluster: a cluster definition's algorithm ranges
// name them as strings (AlgoRange.algo "ring"), as the caller wrote them.
//
// The API's requests whose fields take these values as strings (a calibration
// run's schedule, "1f1b") are read back with the domain's spelling, which is
// theirs: their refusals keep the rule as written (the service core does not
// respell CalibrateCluster's).
func APIRule(e *invalid.Error) string {
	coll := !strings.HasPrefix(e.Field, "cluster.")
	return e.Respell(func(v any) any { return apiSpelling(v, coll) })
}

// apiSpelling is v's name in the API when v is a value of an enum-valued field
// (a list of them, each), and v otherwise.
func apiSpelling(v any, coll bool) any {
	switch x := v.(type) {
	case step.Schedule:
		return apiName(x, schedules)
	case []step.Schedule:
		return apiNames(x, schedules)
	case step.Recompute:
		return apiName(x, recomputes)
	case []step.Recompute:
		return apiNames(x, recomputes)
	case step.BackwardPrefetch:
		return apiName(x, prefetches)
	case step.Precision:
		return apiName(x, precisions)
	case []step.Precision:
		return apiNames(x, precisions)
	case planner.Objective:
		return apiName(x, Objectives)
	case framework.Choices:
		out := make(framework.Choices, len(x))
		for i, c := range x {
			out[i] = apiSpelling(c, coll)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = apiSpelling(c, coll)
		}
		return out
	}
	if !coll {
		return v
	}
	switch x := v.(type) {
	case collective.Op:
		return apiName(x, CollectiveOps)
	case collective.Algorithm:
		return apiName(x, Algorithms)
	case collective.Protocol:
		return apiName(x, Protocols)
	case collective.Launch:
		return apiName(x, Launches)
	}
	return v
}

// precisions is the Precision enum's mapping (PrecisionFromProto's, the
// unspecified value aside).
var precisions = map[pb.Precision]step.Precision{
	pb.Precision_PRECISION_BF16: step.BF16, pb.Precision_PRECISION_FP16: step.FP16, pb.Precision_PRECISION_FP8: step.FP8,
}

// apiName is the name of the enum value m maps to v, the lowest non-zero number
// when several do (LAUNCH_UNSPECIFIED and LAUNCH_PER_PROCESS both launch per
// process: the caller named the second, or left it out); v as it is when none
// does (a value the domain refuses as unknown is the caller's own string).
func apiName[P protoEnum, V comparable](v V, m map[P]V) any {
	var best P
	found := false
	for k, x := range m {
		if x == v && k != 0 && (!found || k < best) {
			best, found = k, true
		}
	}
	if !found {
		if _, ok := m[0]; ok && m[0] == v {
			return string(P(0).Descriptor().Values().ByNumber(0).Name())
		}
		return v
	}
	return string(best.Descriptor().Values().ByNumber(best.Number()).Name())
}

// apiNames is apiName of each of vs, as a list printed as the domain's is ([a b]).
func apiNames[P protoEnum, V comparable](vs []V, m map[P]V) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprint(apiName(v, m))
	}
	return out
}

// CommandLineSpelling is text written by APIRule with each enum value's API name
// read back as the domain's spelling (SCHEDULE_ZB_H1 as zb-h1): a command line
// that takes its values as flags and reads a daemon's refusals names them as its
// flags take them. The API's names are upper case and prefixed by their type, so
// no other word of a rule is one of them.
func CommandLineSpelling(text string) string {
	return apiWord.ReplaceAllStringFunc(text, func(w string) string {
		if s, ok := domainSpellings[w]; ok {
			return s
		}
		return w
	})
}

var apiWord = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(_[A-Z0-9]+)+\b`)

// domainSpellings are the domain's spellings of the API's enum values by name
// (the unspecified values aside: they name no value).
var domainSpellings = func() map[string]string {
	out := map[string]string{}
	addSpellings(out, schedules)
	addSpellings(out, recomputes)
	addSpellings(out, prefetches)
	addSpellings(out, precisions)
	addSpellings(out, Objectives)
	addSpellings(out, CollectiveOps)
	addSpellings(out, Algorithms)
	addSpellings(out, Protocols)
	addSpellings(out, Launches)
	return out
}()

// addSpellings adds to out the domain's spelling of each value m maps, by the
// enum value's API name, the unspecified value aside.
func addSpellings[P protoEnum, V any](out map[string]string, m map[P]V) {
	for k, v := range m {
		if k != 0 {
			out[string(k.Descriptor().Values().ByNumber(k.Number()).Name())] = fmt.Sprint(v)
		}
	}
}

// APINoPlanReason is a search's reason for finding no plan (planner.Result.NoPlan)
// as the API's caller reads it: the schedules and recomputations of the
// constraint lists it quotes ("constraints.schedules [interleaved]") named as the
// API names them (SCHEDULE_INTERLEAVED), as the caller sent them.
func APINoPlanReason(reason string) string {
	return noPlanLists.ReplaceAllStringFunc(reason, func(m string) string {
		sub := noPlanLists.FindStringSubmatch(m)
		names := strings.Fields(sub[2])
		for i, n := range names {
			var s any = n
			switch sub[1] {
			case "schedules":
				s = apiName(step.Schedule(n), schedules)
			case "recompute":
				s = apiName(step.Recompute(n), recomputes)
			}
			names[i] = fmt.Sprint(s)
		}
		return "constraints." + sub[1] + " [" + strings.Join(names, " ") + "]"
	})
}

// noPlanLists are the constraint lists of enum values a no-plan reason quotes, as
// planner's givenConstraints writes them (a list printed by fmt: [a b]).
var noPlanLists = regexp.MustCompile(`constraints\.(schedules|recompute) \[([^\]]*)\]`)

// APINotApplicable is the collective model's reason why algo cannot run op
// (collective.Model.Supports: "algorithm not applicable: ring alltoall: ring does
// not do all-to-all (use pairwise or direct)") as the API's caller reads it: the
// algorithm and the operation, and the algorithms the reason advises instead,
// named as the API names them ("ALGORITHM_RING COLLECTIVE_ALL_TO_ALL: … (use
// ALGORITHM_PAIRWISE or ALGORITHM_DIRECT)"), as a refusal of a forced algorithm
// names them (collectiveApplies) and a request sends them. The rest is prose and
// kept; CommandLineSpelling reads it back as the model wrote it.
func APINotApplicable(err error, algo collective.Algorithm, op collective.Op) string {
	text := err.Error()
	why, ok := strings.CutPrefix(text, fmt.Sprintf("%v: %s %s: ", collective.ErrUnsupported, algo, op))
	if !ok || !errors.Is(err, collective.ErrUnsupported) {
		return text
	}
	if rest, use, ok := algorithmsAdvised(why); ok {
		why = fmt.Sprintf("%s (use %s)", rest, apiSpelling(use, true))
	}
	return fmt.Sprintf("%v: %v %v: %s", collective.ErrUnsupported, apiName(algo, Algorithms), apiName(op, CollectiveOps), why)
}
