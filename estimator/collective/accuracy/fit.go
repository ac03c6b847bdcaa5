package accuracy

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/internal/descent"
)

// Loss is the fit objective over scored rows: the mean absolute log error
// |ln(predicted/measured)| (symmetric in over- and under-prediction), plus the
// medians of the size classes the accuracy targets are stated for, so that no class
// is sacrificed to another.
func Loss(rs []Result) float64 {
	var sum float64
	n := 0
	for _, r := range rs {
		if !r.Scored || r.Err != nil || r.Predicted.TimeUs <= 0 || r.MeasuredUs <= 0 {
			continue
		}
		sum += math.Abs(math.Log(r.Predicted.TimeUs / r.MeasuredUs))
		n++
	}
	if n == 0 {
		return math.Inf(1)
	}
	loss := sum / float64(n)
	for _, b := range Buckets() {
		loss += Summarise(b.Label, rs, b.Keep).MedianAbs
	}
	// Where the source says which algorithm NCCL chose, choosing another costs as
	// much as a 30 % error on that row would.
	for _, r := range rs {
		if r.Err == nil && r.Chosen != collective.Auto && r.Predicted.Algo != r.Chosen {
			loss += 0.3 / float64(n)
		}
	}
	return loss
}

// Knobs are everything the fit adjusts: the collective constants and the scale-up
// and network hop latencies (topology defaults, applied as overrides while fitting).
type Knobs struct {
	K     collective.Constants
	Links Links
}

// Param is one fitted constant: a name and a pointer into a Knobs value.
type Param struct {
	Name     string
	Get      func(*Knobs) *float64
	Min, Max float64
}

// FitParams are the constants the fit adjusts; the protocol bandwidth factors stay
// at NCCL's values and the link properties at topology's defaults.
func FitParams() []Param {
	var ps []Param
	add := func(name string, min, max float64, get func(*collective.Constants) *float64) {
		ps = append(ps, Param{name, func(k *Knobs) *float64 { return get(&k.K) }, min, max})
	}
	ps = append(ps,
		Param{"IntraLatencyUs", func(k *Knobs) *float64 { return &k.Links.IntraLatencyUs }, 0.05, 5},
		Param{"RackLatencyUs", func(k *Knobs) *float64 { return &k.Links.RackLatencyUs }, 0.05, 5},
		Param{"NetLatencyUs", func(k *Knobs) *float64 { return &k.Links.NetLatencyUs }, 0.5, 30},
		Param{"EFALatencyUs", func(k *Knobs) *float64 { return &k.Links.EFALatencyUs }, 0.5, 60})
	for _, pr := range []collective.Protocol{collective.Simple, collective.LL128, collective.LL} {
		add("StepUs."+pr.String(), 0, 20, func(k *collective.Constants) *float64 { return &k.StepUs[pr] })
		add("BaseUs."+pr.String(), 0, 80, func(k *collective.Constants) *float64 { return &k.BaseUs[pr] })
		// Simple's network step cost is 0 by definition: the network hop latency is
		// what a Simple step pays to cross the network, and a measurement sees a hop
		// and a protocol's network step cost only as their sum (TestNetworkHopGauge).
		// LL and LL128 pay their difference from Simple's, which may be negative
		// (NCCL's own network figures for them are below Simple's: ring NET hwLat
		// LL 2.7, LL128 4.0, Simple 14 µs); their range holds NCCL's differences
		// (−11.3, −10 µs) with room on both sides.
		if pr != collective.Simple {
			add("NetStepUs."+pr.String(), -20, 40, func(k *collective.Constants) *float64 { return &k.NetStepUs[pr] })
		}
	}
	// A tree's or chain's chunk is at most one of a connection's NCCL_STEPS (8) slots
	// of NCCL_BUFFSIZE (4 MiB): NCCL's calcCollChunking (enqueue.cc) takes stepSize ×
	// 1 for them and only ever lowers it.
	add("ChunkBytes", 16<<10, 512<<10,
		func(k *collective.Constants) *float64 { return &k.ChunkBytes })
	// The p2p kernel's fixed cost beyond the launch: fitted after the rest, on the
	// small send/recv and all-to-all rows only (fitP2P). NCCL's LL base latency,
	// 6.6 µs, holds a launch (about 5 µs); the range leaves room for a kernel that
	// costs what a launch does and for one that costs nothing measurable.
	add("P2PBaseUs", 0, 20, func(k *collective.Constants) *float64 { return &k.P2PBaseUs })
	add("NVLSChunkBytes", 4<<10, 4<<20, func(k *collective.Constants) *float64 { return &k.NVLSChunkBytes })
	add("NVLSStepUs", 0, 40, func(k *collective.Constants) *float64 { return &k.NVLSStepUs })
	add("NVLSBaseUs", 0, 60, func(k *collective.Constants) *float64 { return &k.NVLSBaseUs })
	// A call replayed from a CUDA graph has no host launch of its own: LaunchUs.graph
	// is 0 by definition, not fitted.
	for _, l := range []collective.Launch{collective.PerProcess, collective.SingleProcess, collective.Eager} {
		add("LaunchUs."+l.String(), 0, 80, func(k *collective.Constants) *float64 { return &k.LaunchUs[l] })
	}
	return ps
}

// Fit adjusts the parameters by coordinate descent with shrinking multiplicative
// steps, starting from start, and returns the constants and their loss.
//
// The descent searches in a gauge of its own (searchParams): Simple's network step
// cost is one of its coordinates, the move that changes what a Simple step pays to
// cross the network and nothing else, and every protocol's network step cost stays
// at 0 or more. The constants it returns are in the shipped gauge, Simple's network
// step cost 0 (toShipped), which prices every row the same.
//
// Send/recv and all-to-all rows are left out of the loss: they could only move the
// collectives' constants they share (the launch cost, the hop latencies) away from
// what the collectives measure. The p2p kernel's own fixed cost (P2PBaseUs, the one
// constant only p2p calls pay) is fitted after the descent, on the small send/recv
// and all-to-all rows alone, everything else held (fitP2P); the collectives' loss
// returned does not include them.
//
// One descent stops in the first minimum its path leads to, and the loss has
// several of about the same height (FitFrom, Starts, docs/calibration.md "A fit
// from several starts"): the start decides which.
func Fit(cases []Case, start Knobs, params []Param, rounds int) (Knobs, float64) {
	return FitFrom(cases, []Knobs{start}, params, rounds)
}

// FitFrom is Fit from several starts: one descent from each, run concurrently, and
// the constants with the lowest loss any of them reached (the earliest start's on a
// tie, so the result does not depend on the scheduling).
func FitFrom(cases []Case, starts []Knobs, params []Param, rounds int) (Knobs, float64) {
	all := cases
	cases = FitCases(cases)
	ks := make([]Knobs, len(starts))
	losses := make([]float64, len(starts))
	var wg sync.WaitGroup
	for i, s := range starts {
		wg.Go(func() { ks[i], losses[i] = descend(cases, s, params, rounds) })
	}
	wg.Wait()
	best := 0
	for i := range losses {
		if losses[i] < losses[best] {
			best = i
		}
	}
	return fitP2P(all, ks[best], params, rounds), losses[best]
}

// descend is one coordinate descent from start over the fit's cases.
func descend(cases []Case, start Knobs, params []Param, rounds int) (Knobs, float64) {
	prepared := map[Links][]Prepared{}
	cache := placements{}
	eval := func(k Knobs) float64 {
		ps, ok := prepared[k.Links]
		if !ok {
			// Every hop latency tried builds the systems that have that hop anew;
			// keep a few sets, not every one the descent ever tried.
			if len(prepared) >= 16 {
				clear(prepared)
			}
			if len(cache) >= 4096 {
				clear(cache)
			}
			ps = prepareCached(cases, k.Links, cache)
			prepared[k.Links] = ps
		}
		return Loss(Price(collective.NewModel(k.K), ps))
	}
	search := searchParams(params)
	ps := make([]descent.Param[Knobs], len(search))
	for i, p := range search {
		ps[i] = descent.Param[Knobs]{Name: p.Name, Min: p.Min, Max: p.Max,
			Get: func(k *Knobs) float64 { return *p.Get(k) },
			Set: func(k *Knobs, v float64) { *p.Get(k) = v }}
	}
	// Large steps too: the loss is piecewise (the chosen algorithm switches), so
	// small steps alone stall.
	k, loss := descent.Minimise(toSearch(start), clone, ps, []float64{4, 2, 1.3, 1.1, 1.03, 1 / 1.03, 1 / 1.1, 1 / 1.3, 0.5, 0.25, 0}, rounds, eval)
	return toShipped(k), loss
}

// Starts spreads start, without looking at any data, along the split the loss's
// minima differ in: a call's latency is a fixed cost plus steps × a per-step cost,
// and the minima trade one for the other (Simple's fixed cost near 20 µs with a
// per-step cost near 7 µs, or at 80 µs with one near 1.6 µs). It returns start,
// start with the fixed part × f and the per-step part ÷ f, and the reverse, for
// every factor given (clamped to the fit's ranges). The fixed part: the protocols'
// and NVLS's per-call costs and the launch costs; the per-step part: the protocols'
// and NVLS's step costs, the network step costs and the hop latencies.
func Starts(start Knobs, params []Param, factors ...float64) []Knobs {
	spread := func(fixed, step float64) Knobs {
		k := clone(start)
		for i := range k.K.BaseUs {
			k.K.BaseUs[i] *= fixed
			k.K.StepUs[i] *= step
			k.K.NetStepUs[i] *= step
		}
		for i := range k.K.LaunchUs {
			k.K.LaunchUs[i] *= fixed
		}
		k.K.NVLSBaseUs *= fixed
		k.K.NVLSStepUs *= step
		k.Links.IntraLatencyUs *= step
		k.Links.RackLatencyUs *= step
		k.Links.NetLatencyUs *= step
		k.Links.EFALatencyUs *= step
		for _, p := range params {
			v := p.Get(&k)
			*v = math.Max(p.Min, math.Min(p.Max, *v))
		}
		return k
	}
	out := []Knobs{clone(start)}
	for _, f := range factors {
		out = append(out, spread(f, 1/f), spread(1/f, f))
	}
	return out
}

// searchParams are the coordinates the descent moves: params, with every network
// step cost at 0 or more and, when the network hop is among them, Simple's network
// step cost as a coordinate of its own. A descent that moves one constant at a time
// has no other way to change Simple's network cost apart from LL's and LL128's
// (the hop moves all three). Searched in the shipped gauge instead, with that move
// as a direction through the hops and LL's and LL128's costs and each round's net
// move as another (Powell's and Hooke and Jeeves's methods), the
// leave-one-source-out folds stopped in worse places (docs/calibration.md).
func searchParams(params []Param) []Param {
	hop := slices.ContainsFunc(params, func(p Param) bool { return p.Name == "NetLatencyUs" })
	var out []Param
	for _, p := range params {
		if p.Name == "P2PBaseUs" {
			continue // no collective prices it: fitted after, on the p2p rows (fitP2P)
		}
		if strings.HasPrefix(p.Name, "NetStepUs.") {
			p.Min = 0
		}
		out = append(out, p)
		if hop && p.Name == "BaseUs.simple" {
			out = append(out, Param{"NetStepUs.simple", func(k *Knobs) *float64 { return &k.K.NetStepUs[collective.Simple] }, 0, 40})
		}
	}
	return out
}

// toSearch moves k along the network gauge (TestNetworkHopGauge: the hops up by c
// and every protocol's network step cost down by c, or the reverse, price every row
// the same) until no network step cost is below 0; toShipped moves it until
// Simple's is 0.
func toSearch(k Knobs) Knobs {
	return gauge(k, min(0, k.K.NetStepUs[collective.Simple], k.K.NetStepUs[collective.LL128], k.K.NetStepUs[collective.LL]))
}

func toShipped(k Knobs) Knobs { return gauge(k, k.K.NetStepUs[collective.Simple]) }

// gauge raises the hops by c and lowers every network step cost by c.
func gauge(k Knobs, c float64) Knobs {
	k = clone(k)
	k.Links.NetLatencyUs += c
	k.Links.EFALatencyUs += c
	for i := range k.K.NetStepUs {
		k.K.NetStepUs[i] -= c
	}
	return k
}

func clone(k Knobs) Knobs {
	c := k
	c.K.NVLSEfficiency = maps.Clone(k.K.NVLSEfficiency)
	c.K.P2PChannelGBps = maps.Clone(k.K.P2PChannelGBps)
	return c
}

// AtBound lists the parameters whose value in k lies on a bound of its fit, or
// within a hair of one (1 % of the bound, or 0.1 % of the range for a bound of 0): a
// fitted constant the data would push past its physical range is a sign of
// missing physics, not a value.
func AtBound(k Knobs, params []Param) []Param {
	var out []Param
	for _, p := range params {
		v := *p.Get(&k)
		if nearBound(v, p.Min, p.Max) {
			out = append(out, p)
		}
	}
	return out
}

func nearBound(v, lo, hi float64) bool {
	hair := func(b float64) float64 {
		if b == 0 {
			return 1e-3 * (hi - lo)
		}
		return 0.01 * math.Abs(b)
	}
	return v <= lo+hair(lo) || v >= hi-hair(hi)
}

// FitCases are the cases the fit scores: all but the point-to-point rows
// (send/recv, all-to-all; see Fit) and the rows kept out of the fit (Case.Unfitted).
func FitCases(cases []Case) []Case {
	out := make([]Case, 0, len(cases))
	for _, c := range cases {
		if c.Op != collective.SendRecv && c.Op != collective.AllToAll && c.Unfitted == "" {
			out = append(out, c)
		}
	}
	return out
}
