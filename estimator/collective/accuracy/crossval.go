package accuracy

import (
	"regexp"
	"runtime"
	"slices"
	"sync"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/hardware"
)

// Leave-one-source-out cross-validation: the constants are refitted without every
// row of one source and that source is scored with them. A source is a publication —
// one GitHub issue or pull-request thread, one repository's result files, one web
// page — not a measured system: the four Azure sweeps of one benchmarking guide are
// one source, so a fold cannot learn a publisher's harness from its other tables.

var sourceURL = regexp.MustCompile(`^https://github\.com/([^/]+/[^/]+)(?:/(?:issues|pull)/(\d+))?`)

// SourceOf names the publication a row comes from: owner/repo#N for an issue or
// pull-request thread, owner/repo for files of a repository, otherwise the row's
// source_id.
func SourceOf(r Row) string {
	if m := sourceURL.FindStringSubmatch(deref(r.SourceURL)); m != nil {
		if m[2] != "" {
			return m[1] + "#" + m[2]
		}
		return m[1]
	}
	return r.SourceID
}

// Sources lists the sources with at least one scored, priceable case, sorted.
func Sources(cases []Case) []string {
	var out []string
	for _, c := range cases {
		if c.Scored && c.Spec.Name != "" && !slices.Contains(out, SourceOf(c.Row)) {
			out = append(out, SourceOf(c.Row))
		}
	}
	slices.Sort(out)
	return out
}

// Prior is where every fold's fit starts: NCCL's own tuning constants (src/graph/
// tuning.cc at v2.27.7-1: baseLat, hwLat) mapped onto the model's terms, so that no fold
// starts from constants fitted to the source it scores.
//
//   - per-step cost: NCCL's ring hop latency over NVLink (LL 0.6, LL128 1.9, Simple
//     3.4 µs); per-call base: its ring baseLat (6.6 / 14.0 / 8.4 µs);
//   - network: Simple's NET hop (14 µs) as the hop latency, which is what a Simple
//     step pays by definition (FitParams); LL's and LL128's NET figures of the
//     tree (5.0 and 8.5 µs) as their network step costs, −9 and −5.5 µs from it;
//   - NVLS: NCCL charges a whole NVLS call 25 µs and pipelines 128 KiB chunks;
//   - chunks of trees and chains: one Simple buffer slot, 4 MiB / 8 steps;
//   - launch: a CUDA kernel launch per process (5 µs), per GPU in single-process mode
//     (2 µs), with a Python/torch call around it (10 µs), none under a CUDA graph;
//   - the p2p kernel's fixed cost: NCCL gives p2p no figure; its LL base latency
//     (6.6 µs, a call's whole fixed cost) less that launch, 1.6 µs.
func Prior() Knobs {
	k := collective.Default() // for what the fit does not adjust (bandwidth factors, NVLS efficiency)
	k.StepUs = [3]float64{collective.Simple: 3.4, collective.LL128: 1.9, collective.LL: 0.6}
	k.BaseUs = [3]float64{collective.Simple: 8.4, collective.LL128: 14.0, collective.LL: 6.6}
	k.NetStepUs = [3]float64{collective.Simple: 0, collective.LL128: -5.5, collective.LL: -9.0}
	k.ChunkBytes = 512 << 10
	k.NVLSChunkBytes = 128 << 10
	k.NVLSStepUs = 1
	k.NVLSBaseUs = 25
	k.LaunchUs[collective.PerProcess] = 5
	k.LaunchUs[collective.SingleProcess] = 2
	k.LaunchUs[collective.Eager] = 10
	k.LaunchUs[collective.Graph] = 0
	k.P2PBaseUs = 6.6 - 5
	k.NVLSEfficiency = map[hardware.Arch]float64{hardware.Hopper: 0.85, hardware.Blackwell: 0.74} // NCCL's nvlsEfficiency
	return Knobs{K: k, Links: Links{IntraLatencyUs: 0.6, RackLatencyUs: 0.6, NetLatencyUs: 14.0, EFALatencyUs: 14.0}}
}

// CrossValidateRounds bounds every fold's descent (each round tries every
// parameter at every step factor).
const CrossValidateRounds = 30

// FitAllRows is the fit every fold of the cross-validation runs (CrossValidate with
// Prior, FitParams and CrossValidateRounds), on every row: one descent from Prior
// over FitCases, then the p2p kernel's fixed cost on the small p2p rows (fitP2P).
// It is deterministic (one start, the descent's order fixed). `stepcost accuracy
// --fit --from-prior` prints it beside the shipped constants, which are not its
// result: they were refitted over time from their own values (`stepcost accuracy
// --fit`) and sit in another minimum of the loss (docs/calibration.md, "The shipped
// constants against the fit from Prior").
func FitAllRows(cases []Case) (Knobs, float64) {
	return FitFrom(cases, []Knobs{Prior()}, FitParams(), CrossValidateRounds)
}

// Fold is one left-out source: the constants fitted without it and its results.
type Fold struct {
	Source  string
	Knobs   Knobs
	Results []Result
}

// CrossValidate fits the constants once per source, on every other source's rows,
// and prices the left-out source's rows with them. The folds are independent and
// run in parallel; the result is in source order whatever the scheduling.
func CrossValidate(cases []Case, start Knobs, params []Param, rounds int) []Fold {
	return CrossValidateFrom(cases, []Knobs{start}, params, rounds)
}

// CrossValidateFrom is CrossValidate with every fold fitted from several starts
// (FitFrom).
func CrossValidateFrom(cases []Case, starts []Knobs, params []Param, rounds int) []Fold {
	srcs := Sources(cases)
	folds := make([]Fold, len(srcs))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, src := range srcs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var train, test []Case
			for _, c := range cases {
				if SourceOf(c.Row) == src {
					test = append(test, c)
				} else {
					train = append(train, c)
				}
			}
			k, _ := FitFrom(train, starts, params, rounds)
			folds[i] = Fold{Source: src, Knobs: k, Results: Price(collective.NewModel(k.K), PrepareWith(test, k.Links))}
		}()
	}
	wg.Wait()
	return folds
}

// OutOfSample joins every fold's results: each row priced by constants that never
// saw its source.
func OutOfSample(folds []Fold) []Result {
	var out []Result
	for _, f := range folds {
		out = append(out, f.Results...)
	}
	return out
}

// BySource groups scored results by source.
func BySource(rs []Result) []Summary {
	var names []string
	for _, r := range rs {
		if r.Scored && r.Err == nil && !slices.Contains(names, SourceOf(r.Row)) {
			names = append(names, SourceOf(r.Row))
		}
	}
	slices.Sort(names)
	out := make([]Summary, 0, len(names))
	for _, k := range names {
		out = append(out, Summarise(k, rs, func(r Result) bool { return SourceOf(r.Row) == k }))
	}
	return out
}

// MultiNode keeps results whose group spans more than one scale-up domain's
// network: at least two nodes that talk over NICs.
func MultiNode(r Result) bool { return r.Spec.Nodes > 1 && r.Spec.NICs.PerNode > 0 }
