package calibrate

import (
	"fmt"
	"math"
	"slices"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Measured algorithm choices. Where the rows of a collective on one group shape
// show NCCL running another algorithm than the model picks (Mismatch) over a run
// of consecutive sizes, the calibrated cluster carries that choice as a size range
// (topology.AlgoRange), which the collective model's automatic choice honours:
// plan and estimate on the calibrated cluster then price what the cluster's NCCL
// runs. A range is fitted, not copied: at every measured size the algorithm that
// prices the rows of that size best (the model's own, or one the rows show) is
// chosen, so files that disagree at a size are weighed by their errors.

// minChoiceRows is the fewest rows a range needs: a single row may be a one-off
// stall (nccltests.go sets aside only those over 3×), two rows are a repetition.
const minChoiceRows = 2

// treeTableTop is the largest size NCCL's tree correction factor covers (tuning.cc
// treeCorrectionFactor: powers of two from 64 B, 23–24 entries, up to 256–512 MiB),
// rounded up to a power of two: above it NCCL's cost model prices every Simple
// algorithm as latency + size / bandwidth with size-independent factors, so the
// algorithm it picks at 1 GiB it picks at every larger size.
const treeTableTop = 1 << 30

// sameBandwidthFrom is the fewest nodes from which NCCL's cost model prices
// every algorithm's bandwidth alike whatever the node count (tuning.cc: ring and
// tree take bwIntra on up to two nodes and bwInter beyond; the NVLS tree bwInter,
// halved beyond two nodes). Above treeTableTop, where no size-dependent
// correction is left and latency is a small part of the time, NCCL's choice
// among Simple algorithms is then a comparison of bandwidths that do not depend
// on the node count, so the choice the rows show on one node count of three or
// more is the one NCCL makes on every other: a range fitted there covers all
// node counts from sameBandwidthFrom up (topology.AlgoRange.MinNodes).
const sameBandwidthFrom = 3

// tailKey is a collective on groups of perNd ranks per node on sameBandwidthFrom
// nodes or more, at sizes of treeTableTop and up: the rows of every node count
// decide the one choice there together.
type tailKey struct {
	op    collective.Op
	perNd int
}

// inTail says whether a row of bytes on nodes nodes is decided with the others of
// its tailKey.
func inTail(nodes int, bytes float64) bool {
	return nodes >= sameBandwidthFrom && bytes >= treeTableTop
}

// shapeKey is a collective on one group shape.
type shapeKey struct {
	op           collective.Op
	nodes, perNd int
}

// fitChoices fits the measured algorithm ranges from the sweeps with knobs k
// (the base's), the rows in forced being those NCCL ran with another algorithm.
// Sweeps that forced their algorithm (NCCL_ALGO) say nothing of NCCL's choice and
// are not used.
func fitChoices(pc *placer, spec topology.Spec, k Knobs, sweeps []Sweep, forced map[pointID]collective.Options) ([]topology.AlgoRange, error) {
	if len(forced) == 0 {
		return nil, nil
	}
	ck := pc.clusterKey(spec, k)
	m := collective.NewModel(collective.Default())
	type cand struct {
		loss float64
		n    int
	}
	// per shape: per size, per algorithm, the rows' summed |ln error|.
	losses := map[shapeKey]map[float64]map[collective.Algorithm]*cand{}
	model := map[shapeKey]map[float64]collective.Algorithm{}
	places := map[shapeKey]*placement{}
	// flagged: per shape and size, the algorithms the mismatched rows of that size show.
	flagged := map[shapeKey]map[float64][]collective.Algorithm{}
	var keys []shapeKey
	// The algorithms the rows of each shape show, priced on every row of it; and
	// those the rows of a tail's shapes show (at any size: NCCL's table runs the
	// same algorithms below the tail as in it), priced on every row of the tail.
	shownBy := map[shapeKey][]collective.Algorithm{}
	tailShown := map[tailKey][]collective.Algorithm{}
	for _, s := range sweeps {
		key := shapeKey{s.Op, s.Nodes, s.GPUsPerNode}
		tk := tailKey{s.Op, s.GPUsPerNode}
		for _, p := range s.Points {
			o, ok := forced[pointID{s.File, p.Line}]
			if !ok || s.Algo != collective.Auto {
				continue
			}
			if !slices.Contains(shownBy[key], o.Algo) {
				shownBy[key] = append(shownBy[key], o.Algo)
			}
			if s.Nodes < sameBandwidthFrom {
				continue
			}
			// A tail's candidates are every algorithm the mismatched row is
			// consistent with (matchChoices' rule: within half the model's error),
			// not only the closest: one row cannot tell two of them apart (8 nodes,
			// 512 MiB: ring/LL128 +2 %, the NVLS tree −5 %), the tail's own rows
			// decide between them.
			pl, err := placeSweep(pc, ck, spec, k, s)
			if err != nil {
				return nil, err
			}
			shows, err := consistent(m, pl, s, p)
			if err != nil {
				return nil, err
			}
			for _, a := range append(shows, o.Algo) {
				if !slices.Contains(tailShown[tk], a) {
					tailShown[tk] = append(tailShown[tk], a)
				}
			}
		}
	}
	// per tail: per algorithm (collective.Auto: the model's own choice on each
	// row), the summed |ln error| of its rows.
	tailLoss := map[tailKey]map[collective.Algorithm]*cand{}
	tailRows := map[tailKey]int{}
	var tails []tailKey
	for _, s := range sweeps {
		if s.Algo != collective.Auto || s.ForceProtocol {
			continue
		}
		key := shapeKey{s.Op, s.Nodes, s.GPUsPerNode}
		tk := tailKey{s.Op, s.GPUsPerNode}
		shown := shownBy[key]
		if len(shown) == 0 && len(tailShown[tk]) == 0 {
			continue
		}
		pl, err := placeSweep(pc, ck, spec, k, s)
		if err != nil {
			return nil, err
		}
		for _, p := range s.Points {
			auto, err := pl.price(m, s.Op, p.Bytes, collective.Options{Launch: s.Launch})
			if err != nil {
				return nil, rowErr(pc, s, p, err)
			}
			if inTail(s.Nodes, p.Bytes) {
				if len(tailShown[tk]) == 0 {
					continue
				}
				if tailLoss[tk] == nil {
					tailLoss[tk] = map[collective.Algorithm]*cand{}
					tails = append(tails, tk)
				}
				add := func(a collective.Algorithm, us float64) {
					c := tailLoss[tk][a]
					if c == nil {
						c = &cand{}
						tailLoss[tk][a] = c
					}
					c.loss += math.Abs(math.Log(us / p.TimeUs))
					c.n++
				}
				tailRows[tk]++
				add(collective.Auto, auto.TimeUs)
				for _, a := range tailShown[tk] {
					if a == auto.Algo {
						add(a, auto.TimeUs)
						continue
					}
					e, err := pl.price(m, s.Op, p.Bytes, collective.Options{Algo: a, Launch: s.Launch})
					if err != nil || !(e.TimeUs > 0) {
						continue
					}
					add(a, e.TimeUs)
				}
				continue
			}
			if len(shown) == 0 {
				continue
			}
			if losses[key] == nil {
				losses[key], model[key] = map[float64]map[collective.Algorithm]*cand{}, map[float64]collective.Algorithm{}
				places[key] = pl
				keys = append(keys, key)
			}
			model[key][p.Bytes] = auto.Algo
			if losses[key][p.Bytes] == nil {
				losses[key][p.Bytes] = map[collective.Algorithm]*cand{}
			}
			add := func(a collective.Algorithm, us float64) {
				c := losses[key][p.Bytes][a]
				if c == nil {
					c = &cand{}
					losses[key][p.Bytes][a] = c
				}
				c.loss += math.Abs(math.Log(us / p.TimeUs))
				c.n++
			}
			add(auto.Algo, auto.TimeUs)
			if o, ok := forced[pointID{s.File, p.Line}]; ok {
				if flagged[key] == nil {
					flagged[key] = map[float64][]collective.Algorithm{}
				}
				flagged[key][p.Bytes] = append(flagged[key][p.Bytes], o.Algo)
			}
			for _, a := range shown {
				if a == auto.Algo {
					continue
				}
				e, err := pl.price(m, s.Op, p.Bytes, collective.Options{Algo: a, Launch: s.Launch})
				if err != nil || !(e.TimeUs > 0) {
					continue
				}
				add(a, e.TimeUs)
			}
		}
	}
	var out []topology.AlgoRange
	for _, key := range keys {
		sizes := make([]float64, 0, len(losses[key]))
		for b := range losses[key] {
			sizes = append(sizes, b)
		}
		slices.Sort(sizes)
		// The chosen algorithm at each size: where a row of that size is a
		// mismatch, the algorithm with the lowest summed error over all the rows of
		// that size (files that disagree there are weighed by their errors), among
		// the model's own and those the mismatched rows show; elsewhere the model's.
		chosen := make([]collective.Algorithm, len(sizes))
		rows := make([]int, len(sizes))
		for i, b := range sizes {
			own := model[key][b]
			best, bestLoss := own, math.Inf(1)
			if c := losses[key][b][own]; c != nil {
				bestLoss, rows[i] = c.loss, c.n
			}
			for _, a := range flagged[key][b] {
				if c := losses[key][b][a]; a != own && c != nil && c.n == rows[i] && c.loss < bestLoss {
					best, bestLoss = a, c.loss
				}
			}
			chosen[i] = best
		}
		// Ranges: runs of consecutive sizes with the same choice, not the model's.
		for i := 0; i < len(sizes); {
			a := chosen[i]
			if a == model[key][sizes[i]] {
				i++
				continue
			}
			j, n := i, 0
			for j < len(sizes) && chosen[j] == a && a != model[key][sizes[j]] {
				n += rows[j]
				j++
			}
			if n < minChoiceRows {
				i = j
				continue
			}
			lo, hi := sizes[i], sizes[j-1]
			below := 0.0 // the largest measured size below with another choice
			if i > 0 {
				below = sizes[i-1]
			}
			lo = extendDown(m, places[key], key.op, a, lo, below)
			r := topology.AlgoRange{Op: key.op.String(), Nodes: key.nodes, GPUsPerNode: key.perNd, MinBytes: lo, Algo: a.String()}
			switch {
			case j < len(sizes):
				r.MaxBytes = sizes[j]
			case key.nodes >= sameBandwidthFrom:
				r.MaxBytes = min(2*hi, treeTableTop) // the tail decides from there
			case hi < treeTableTop:
				r.MaxBytes = 2 * hi
			}
			out = append(out, r)
			i = j
		}
	}
	// The tails: the algorithm the rows show that prices all of the tail's rows,
	// every node count together, better than the model's own choices.
	for _, tk := range tails {
		n := tailRows[tk]
		best, bestLoss := collective.Auto, tailLoss[tk][collective.Auto].loss
		for _, a := range tailShown[tk] {
			if c := tailLoss[tk][a]; c != nil && c.n == n && c.loss < bestLoss {
				best, bestLoss = a, c.loss
			}
		}
		if best == collective.Auto || n < minChoiceRows {
			continue
		}
		out = append(out, topology.AlgoRange{Op: tk.op.String(), MinNodes: sameBandwidthFrom, GPUsPerNode: tk.perNd, MinBytes: treeTableTop, Algo: best.String()})
	}
	return out, nil
}

// consistent lists the algorithms NCCL runs by itself, other than the model's
// own choice, that price row p of sweep s (on placement pl) within half the
// model's own error: those matchChoices would take the row to show.
func consistent(m *collective.Model, pl *placement, s Sweep, p Point) ([]collective.Algorithm, error) {
	auto, err := pl.price(m, s.Op, p.Bytes, collective.Options{Launch: s.Launch})
	if err != nil {
		return nil, rowErr(pl.pc, s, p, err)
	}
	autoErr := math.Abs(math.Log(auto.TimeUs / p.TimeUs))
	var out []collective.Algorithm
	for _, a := range collective.Algorithms() {
		if !collective.AutoChoice(s.Op, a) || a == auto.Algo {
			continue
		}
		e, err := pl.price(m, s.Op, p.Bytes, collective.Options{Algo: a, Launch: s.Launch})
		if err != nil || !(e.TimeUs > 0) {
			continue
		}
		if math.Abs(math.Log(e.TimeUs/p.TimeUs)) < autoErr/2 {
			out = append(out, a)
		}
	}
	return out, nil
}

// latencyShare bounds the part of a call's time that does not depend on its size
// for extendDown: below a tenth, the algorithms' different latencies move their
// comparison by less than NCCL's own tree correction steps (0.1, tuning.cc).
const latencyShare = 0.1

// extendDown lowers a range's bottom lo (a size whose rows NCCL ran with
// algorithm a) by halving, above the largest measured size below with another
// choice, while both the model's own choice and a stay bandwidth-bound (their
// size-independent part under latencyShare of their time) and NCCL's own cost
// model favours a at least as much against the others as it does at lo.
//
// NCCL prices a call as latency + bytes / bandwidth, each algorithm's bandwidth
// its graph's speed times fixed factors per protocol and, for the tree, a factor
// by size (tuning.cc treeCorrectionFactor). Where the cluster's NCCL runs a and
// the table as reproduced (collective.NCCLTable) picks another, the table has a's
// graph speed too low against the others' (the topology search found other
// channels or speeds). Where latency is a small part of the time the choice is a
// comparison of transfer terms, and an error in a graph's speed scales every
// protocol of it alike; so wherever the ratio of the best other transfer term to
// a's best is at least what it is at lo, NCCL picks a there too. Going down, the
// ratio follows NCCL's own factors: a double tree's Simple bandwidth falls with
// its size correction (0.9 at 128–256 MiB, 1 from 512 MiB), its LL128 one holds
// 120/128 of the Simple tree's uncorrected figure, and the range stops where one
// of them gains on a. Without NCCL's table (AMD GPUs) the range is lowered only
// between Simple algorithms, whose comparison NCCL's tree correction for Simple
// (0.5–0.9 from 4 KiB to 512 MiB, 1 above) never tips toward the tree at a
// smaller size than at a larger one.
func extendDown(m *collective.Model, pl *placement, op collective.Op, a collective.Algorithm, lo, below float64) float64 {
	r0, ok := transferRatio(m.NCCLTable(pl.pl, op, lo), a)
	bandwidthBound := func(e collective.Estimate, err error) bool {
		return err == nil && (ok || e.Protocol == collective.Simple) && e.LatencyUs < latencyShare*e.TimeUs
	}
	for lo/2 > below && lo/2 >= 1 {
		if !bandwidthBound(pl.price(m, op, lo/2, collective.Options{})) || !bandwidthBound(pl.price(m, op, lo/2, collective.Options{Algo: a})) {
			break
		}
		if ok {
			if r, _ := transferRatio(m.NCCLTable(pl.pl, op, lo/2), a); !(r >= r0) {
				break
			}
		}
		lo /= 2
	}
	return lo
}

// transferRatio is, in NCCL's table, the best transfer term of the algorithms
// other than a over a's best (above 1 where a moves the bytes fastest); ok is
// false without a table or without an entry for a.
func transferRatio(tab []collective.NCCLTime, a collective.Algorithm) (r float64, ok bool) {
	own, other := math.Inf(1), math.Inf(1)
	for _, t := range tab {
		if t.Algo == a {
			own = min(own, t.TransferUs)
		} else {
			other = min(other, t.TransferUs)
		}
	}
	if math.IsInf(own, 1) || !(own > 0) {
		return 0, false
	}
	return other / own, true
}

// withChoices returns spec with the measured ranges first (the first range that
// covers a call wins, so they take precedence over ranges the base carried).
func withChoices(spec topology.Spec, rs []topology.AlgoRange) topology.Spec {
	if len(rs) == 0 {
		return spec
	}
	s := spec
	s.Algorithms = append(slices.Clone(rs), spec.Algorithms...)
	return s
}

// FormatRange describes a measured range for reports: "allreduce on 2 nodes × 8
// GPUs, 64 MiB and up: ring".
func FormatRange(r topology.AlgoRange) string {
	shape := "any group"
	switch {
	case r.Nodes > 0:
		shape = fmt.Sprintf("%d node(s)", r.Nodes)
	case r.MinNodes > 0 && r.MaxNodes > 0:
		shape = fmt.Sprintf("%d–%d nodes", r.MinNodes, r.MaxNodes)
	case r.MinNodes > 0:
		shape = fmt.Sprintf("%d nodes or more", r.MinNodes)
	case r.MaxNodes > 0:
		shape = fmt.Sprintf("up to %d nodes", r.MaxNodes)
	}
	if r.GPUsPerNode > 0 {
		if shape == "any group" {
			shape = "any nodes"
		}
		shape += fmt.Sprintf(" × %d GPUs", r.GPUsPerNode)
	}
	size := FormatBytes(r.MinBytes) + " and up"
	if r.MaxBytes > 0 {
		size = FormatBytes(r.MinBytes) + " to below " + FormatBytes(r.MaxBytes)
	}
	return fmt.Sprintf("%s on %s, %s: %s", r.Op, shape, size, r.Algo)
}
