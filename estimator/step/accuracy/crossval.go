package accuracy

import (
	"sort"
	"strings"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/step"
)

// SourceOf names the publication a run comes from: the prefix of its id before the
// first underscore (narayanan21, mosaic, torchtitan, …). A source is one paper,
// README or log collection; its runs share a framework, a cluster and a way of
// measuring, so they are left out together.
func SourceOf(r Run) string {
	if r.Publication != "" {
		return r.Publication
	}
	if i := strings.IndexByte(r.ID, '_'); i > 0 {
		return r.ID[:i]
	}
	return r.ID
}

// Sources lists the sources of the cases in first-seen order.
func Sources(cases []Case) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cases {
		if s := SourceOf(c.Run); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Prior is where every fit starts: the model's constants with the fitted ones at
// values read off hardware measurements rather than training runs. A constant that
// the runs of a fold do not exercise stays at its prior, so a source whose runs are
// the only ones to move a constant is scored with the prior, not with a value fitted
// to itself.
//
//   - GEMM efficiency 0.70 of the dense bf16 peak: large cuBLAS GEMMs on A100 and
//     H100 reach 70–80 % of peak (NVIDIA's Deep Learning Performance guide, "Matrix
//     multiplication background", and the H100 whitepaper's measured GEMM rates).
//   - fp8 GEMM efficiency 0.60 of the dense fp8 peak: Transformer Engine's fp8 GEMMs
//     on H100 run at 1.2–1.3 PFLOP/s of 1.98 for large shapes. Blackwell's is not
//     fitted and keeps its measured value (Setters).
//   - attention 0.35 of the bf16 peak: FlashAttention-2 forward + backward (Dao 2023,
//     Fig. 6–7) runs causal head-dim-128 attention at 50–70 % on A100 and 35 % on
//     H100; the prior takes the lower figure for both.
func Prior() step.Constants {
	k := step.DefaultConstants()
	for a := range k.GEMMEfficiency {
		k.GEMMEfficiency[a] = priorGEMMEfficiency
	}
	for a := range k.FP8GEMMEfficiency {
		if a != hardware.Blackwell {
			// Blackwell's is a kernel measurement, not fitted: kept.
			k.FP8GEMMEfficiency[a] = priorFP8GEMMEfficiency
		}
	}
	for a := range k.AttentionEfficiency {
		k.AttentionEfficiency[a] = priorAttentionEfficiency
	}
	for a := range k.TEExpertFP8Efficiency {
		k.TEExpertFP8Efficiency[a] = priorFP8GEMMEfficiency
	}
	return k
}

const (
	priorGEMMEfficiency      = 0.70
	priorFP8GEMMEfficiency   = 0.60
	priorAttentionEfficiency = 0.35
)

// FitRounds bounds the coordinate descent of a fit; the fits here converge in fewer.
const FitRounds = 40

// Fold is one round of leave-one-source-out cross-validation: the constants fitted
// on every other source, and the left-out source's runs priced with them.
type Fold struct {
	Source    string
	Constants step.Constants
	Held      []Result
}

// CrossValidate fits the constants (from prior) once per source on every other
// source's runs and prices the left-out source with them. The results of all folds
// together are the out-of-sample predictions of every run.
func CrossValidate(cases []Case, prior step.Constants, set []Setter, rounds int) []Fold {
	var folds []Fold
	for _, src := range Sources(cases) {
		var train, held []Case
		for _, c := range cases {
			if SourceOf(c.Run) == src {
				held = append(held, c)
			} else if c.Err == nil && !c.ScoreOnly {
				train = append(train, c)
			}
		}
		k, _ := Fit(train, prior, set, rounds)
		folds = append(folds, Fold{Source: src, Constants: k, Held: Evaluate(step.NewWith(k, collective.Default()), held)})
	}
	return folds
}

// OutOfSample joins the folds' held-out results in the order of cases.
func OutOfSample(folds []Fold) []Result {
	var out []Result
	for _, f := range folds {
		out = append(out, f.Held...)
	}
	return out
}

// BySource splits results by source, sources sorted by name.
func BySource(rs []Result) (names []string, groups map[string][]Result) {
	groups = map[string][]Result{}
	for _, r := range rs {
		s := SourceOf(r.Run)
		if groups[s] == nil {
			names = append(names, s)
		}
		groups[s] = append(groups[s], r)
	}
	sort.Strings(names)
	return names, groups
}

// FittedValues reads the fitted constants of k by setter name.
func FittedValues(k step.Constants, set []Setter) map[string]float64 {
	out := map[string]float64{}
	for _, p := range set {
		out[p.Name] = p.Get(&k)
	}
	return out
}
