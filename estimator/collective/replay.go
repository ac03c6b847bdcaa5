package collective

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/topology"
)

// A replay makes the explicit schedule behind an estimate visible: the schedule of
// the estimate's algorithm with its channels and chunks is built on the placement's
// shape, executed on test vectors to verify what every rank ends with, priced link
// by link with PriceSchedule, and summarised step by step next to the closed form.

// Limits of a replay. A replay builds a whole schedule twice (as priced, and as
// executed on fewer elements), executes it and prices it, so its cost grows with the
// ranks, the channels and the chunks, not with the message: about 1 µs per transfer,
// so the limits keep one replay within a few hundred milliseconds and tens of
// megabytes (BenchmarkReplay).
const (
	// MaxReplayTransfers bounds the transfers priced: the schedule's transfers (as
	// patternTransfers counts them) times the concurrent groups, each of which is
	// placed on the links too.
	MaxReplayTransfers = 1 << 18
	// MaxReplayCells bounds ranks × buffer elements of the copy that is executed.
	MaxReplayCells = 1 << 21
	// DefaultReplayRows is how many rows a replay returns unless asked otherwise.
	DefaultReplayRows = 64
	// MaxReplayRows is the most rows a replay can be asked to return.
	MaxReplayRows = 1024
	// ReplayExamples is how many (source, destination) pairs a flow class lists.
	ReplayExamples = 4
	// directCells: a schedule whose buffers (ranks × elements) are at most this is
	// executed as it is; a larger one on a copy with fewer elements (verifyCopy),
	// which costs a second build but far less executing.
	directCells = 1 << 16
)

// ErrReplayTooLarge says a schedule is over the replay limits.
var ErrReplayTooLarge = errors.New("schedule too large to replay")

// ErrNoSchedule says the estimate's algorithm has no explicit schedule.
var ErrNoSchedule = errors.New("no explicit schedule")

// CheckReplayRows is the rule of ReplayOptions.MaxRows, 0 (for DefaultReplayRows)
// to MaxReplayRows: why rows breaks it, or "". Callers name their own field.
func CheckReplayRows(rows int) string {
	if rows < 0 || rows > MaxReplayRows {
		return fmt.Sprintf("must be between 0 (for %d) and %d (got %d)", DefaultReplayRows, MaxReplayRows, rows)
	}
	return ""
}

// ReplayOptions tune a replay.
type ReplayOptions struct {
	// Launch is the launch mode the estimate was priced with (it sets the fixed
	// cost both levels add).
	Launch Launch
	// MaxRows bounds Replay.Rows (0: DefaultReplayRows); further rows are counted
	// in Replay.OmittedRows. At most MaxReplayRows.
	MaxRows int
}

// Replay is the explicit schedule behind an estimate, verified and priced.
type Replay struct {
	Op       Op
	Algo     Algorithm
	Protocol Protocol
	Channels int
	Chunks   int // pipeline chunks per channel (1 for the algorithms that do not pipeline)
	// Bytes is the message size; the schedule moves it in one-byte elements, so
	// every transfer length below is in bytes.
	Bytes     int64
	Steps     int // steps of the schedule
	Transfers int // transfers of the schedule, all steps (one group)
	// TimeUs is the schedule priced step by step (PriceSchedule), µs; LatencyUs the
	// part of it that does not move data (launch, base, per-step latencies).
	TimeUs    float64
	LatencyUs float64
	// Analytical is the closed-form estimate the schedule is compared with.
	Analytical Estimate
	// DifferencePct is 100 × (TimeUs / Analytical.TimeUs − 1); Difference says
	// where the difference comes from.
	DifferencePct float64
	Difference    string
	Verification  Verification
	// Rows summarise the steps: consecutive steps with the same phase and the same
	// pattern (kinds, routes and pair counts of their flows) share a row.
	Rows        []ReplayRow
	OmittedRows int // rows beyond ReplayOptions.MaxRows, not returned
}

// Verification is the outcome of executing a schedule on test vectors.
type Verification struct {
	Verified bool
	// Result says what was checked on every rank ("every rank ends with the
	// element-wise sum of all 16 ranks' inputs").
	Result string
	// Error is the first wrong rank and element (or the execution error) when the
	// schedule is not verified.
	Error string
	// Elems is the buffer length of every rank in the executed copy.
	Elems int64
	// Scaled says the executed copy has fewer elements than the schedule: the same
	// steps, kinds, sources and destinations (checked transfer by transfer), with
	// every piece of data one or two elements long.
	Scaled bool
}

// ReplayRow is a run of consecutive steps.
type ReplayRow struct {
	First, Count int // first step (0-based) and how many steps the row stands for
	Phase        string
	TimeUs       float64 // all the row's steps, µs
	LatencyUs    float64 // part of TimeUs that is per-step latency
	MaxStepUs    float64 // the slowest step of the row
	// Bottleneck names the most loaded link of the row's slowest step, with the
	// bytes it carries in that step (every concurrent group) and its achievable
	// bandwidth in GB/s; empty for a step that moves nothing over a link.
	Bottleneck      string
	BottleneckBytes float64
	BottleneckGBps  float64
	Flows           []FlowClass
}

// FlowClass groups the (source, destination) pairs of a step that move data the
// same way: same kind of transfer over the same kinds of links.
type FlowClass struct {
	Kind Kind
	// Route lists the links a pair's data crosses: the scale-up fabric ("nvlink",
	// "pcie", "mesh link"), "nic→nic" across the network, "spine" between leaf
	// groups, "nvls switch" for in-switch reduction and multicast, "local" for a
	// copy inside one GPU.
	Route string
	// Pairs is the number of pairs of this class in each step of the row.
	Pairs int
	// MinBytes and MaxBytes bound what one pair moves in one step (all channels);
	// Bytes is what all pairs of the class move in the whole row.
	MinBytes, MaxBytes int64
	Bytes              int64
	// Examples are up to ReplayExamples pairs of the row's first step, as group
	// ranks (rank r of a group of k GPUs per node is GPU r mod k of its ⌊r/k⌋-th
	// node); −1 stands for every rank of the group (the switch's side of NVLS).
	Examples [][2]int32
}

// Replay builds, verifies and prices the explicit schedule of estimate e, which m
// computed for op e.Op on placement p with launch mode o.Launch. It fails with
// ErrNoSchedule when e's algorithm has no explicit schedule and ErrReplayTooLarge
// when the schedule is over the replay limits.
func (m *Model) Replay(p *Placement, e Estimate, o ReplayOptions) (*Replay, error) {
	switch {
	case p == nil:
		return nil, invalid.Field("placement", "is required")
	case e.Op >= numOps:
		return nil, invalid.Field("op", "unknown operation %d", e.Op)
	case !(e.Bytes >= 0) || e.Bytes > maxBytes || e.Bytes != math.Trunc(e.Bytes):
		return nil, invalid.Field("size", "must be a whole number of bytes between 0 and 2^50 (got %v)", e.Bytes)
	case o.Launch >= numLaunch:
		return nil, invalid.Field("launch", "unknown launch mode %d", o.Launch)
	case CheckReplayRows(o.MaxRows) != "":
		return nil, invalid.Field("max_rows", "%s", CheckReplayRows(o.MaxRows))
	}
	maxRows := cmp.Or(o.MaxRows, DefaultReplayRows)
	out := &Replay{Op: e.Op, Algo: e.Algo, Protocol: e.Protocol, Channels: e.Channels, Chunks: max(1, e.Chunks),
		Bytes: int64(e.Bytes), Analytical: e}
	if p.N() == 1 || e.Bytes == 0 {
		// The model prices these at zero without an algorithm: nothing moves.
		out.Verification = Verification{Verified: true, Result: "nothing to move: a group of one rank or an empty message"}
		out.Difference = "both are zero"
		return out, nil
	}
	if e.Algo < numAlgos && len(algoOps[e.Algo]) == 0 {
		return nil, fmt.Errorf("%w: %v is priced by its closed form only", ErrNoSchedule, e.Algo)
	}
	if err := Supports(e.Op, e.Algo, p.Shape, true); err != nil {
		return nil, fmt.Errorf("%w for %v %v: %v", ErrNoSchedule, e.Algo, e.Op, err)
	}
	params := Params{Channels: max(1, e.Channels), Chunks: out.Chunks, Mesh: p.Cluster.Spec.Intra.Kind == topology.Mesh}
	if t := patternTransfers(e.Op, e.Algo, p.Shape, params) * float64(len(p.Siblings)); t > MaxReplayTransfers {
		return nil, fmt.Errorf("%w: %v %v on %d ranks with %d channels and %d chunks (%d concurrent groups) places about %.3g transfers, over the limit of %d; use fewer nodes or a smaller size",
			ErrReplayTooLarge, e.Algo, e.Op, p.N(), params.Channels, params.Chunks, len(p.Siblings), t, MaxReplayTransfers)
	}
	s, err := Build(e.Op, e.Algo, p.Shape, out.Bytes, params)
	if err != nil {
		return nil, err
	}
	vs, err := verifyCopy(s)
	if err != nil {
		return nil, err
	}
	out.Verification = verify(vs)
	if vs != s {
		out.Verification.Scaled = true
		if err := sameStructure(s, vs); err != nil && out.Verification.Verified {
			out.Verification.Verified = false
			out.Verification.Error = "the executed copy does not match the schedule: " + err.Error()
		}
	}

	sc, err := m.PriceSchedule(p, s, 1, e.Protocol, o.Launch)
	if err != nil {
		return nil, err
	}
	out.Steps = len(s.Steps)
	// PriceSchedule's fixed part (launch and base cost), then every step's latency.
	out.TimeUs, out.LatencyUs = sc.TimeUs, m.fixedUs(p, s.Op, s.Algo, e.Protocol, o.Launch)
	for i, st := range s.Steps {
		out.Transfers += len(st.Transfers)
		out.LatencyUs += sc.Steps[i].LatencyUs
	}
	if e.TimeUs > 0 {
		out.DifferencePct = 100 * (out.TimeUs/e.TimeUs - 1)
	}
	out.Difference = explain(s, out, e)
	out.Rows = replayRows(p, s, sc)
	if len(out.Rows) > maxRows {
		out.OmittedRows = len(out.Rows) - maxRows
		out.Rows = out.Rows[:maxRows]
	}
	return out, nil
}

// verifyCopy returns the schedule to execute: s itself when its buffers are small
// (directCells), otherwise the same schedule rebuilt on fewer elements. Every
// schedule splits the data into pieces (blocks, channel pieces, chunks: see
// dataPieces); with at least one element per piece the transfers are the same
// ones, only shorter, and the element count is chosen congruent to the schedule's
// modulo the pieces so that the uneven splits (Part) fall the same way at the top
// level. sameStructure checks the result transfer by transfer.
func verifyCopy(s *Schedule) (*Schedule, error) {
	n := s.Shape.N()
	if cells(s.Op, n, s.Elems) <= directCells {
		return s, nil
	}
	pieces := dataPieces(s.Op, s.Algo, s.Shape, s.Params)
	// A multiple of the ranks, so that the top-level blocks of every rank split alike.
	pieces = (pieces + int64(n) - 1) / int64(n) * int64(n)
	small := pieces + s.Elems%pieces
	switch {
	case small >= s.Elems && cells(s.Op, n, s.Elems) <= MaxReplayCells:
		return s, nil // no smaller copy keeps every transfer, and s is small enough
	case small >= s.Elems || cells(s.Op, n, small) > MaxReplayCells:
		return nil, fmt.Errorf("%w: executing %v %v on %d ranks needs %d pieces of data per rank, over the limit of %d elements in all; use fewer nodes or a smaller size",
			ErrReplayTooLarge, s.Algo, s.Op, n, pieces, MaxReplayCells)
	}
	return Build(s.Op, s.Algo, s.Shape, small, s.Params)
}

// cells is ranks × buffer length, or MaxInt64 when it does not fit.
func cells(op Op, n int, elems int64) int64 {
	b := BufLen(op, n, elems)
	if b < 0 || b > math.MaxInt64/int64(n) {
		return math.MaxInt64
	}
	return b * int64(n)
}

// dataPieces is the number of pieces the builder of algo splits op's data into:
// the finest split, so that one element per piece keeps every transfer of the
// schedule, and a size that is a multiple of it splits into equal pieces.
func dataPieces(op Op, algo Algorithm, sh Shape, p Params) int64 {
	n, ch, k := int64(sh.N()), int64(p.Channels), int64(p.Chunks)
	var pieces int64
	switch algo {
	case Ring:
		switch op {
		case Broadcast, Reduce:
			pieces = ch * k
		case SendRecv:
			pieces = 1
		default:
			pieces = n * ch
		}
	case Tree:
		pieces = ch * k
	case DoubleTree:
		pieces = 2 * ch * k
	case Hierarchical:
		// p blocks, each split into channel pieces and each piece into m rail blocks.
		pieces = n * ch
	case NVLS:
		pieces = n
		if op == AllReduce {
			pieces = n * ch * k
		}
	case Direct:
		pieces = n
		if op == Broadcast || op == Reduce || op == SendRecv {
			pieces = 1
		}
	case PAT, Pairwise:
		pieces = n
	default:
		// An algorithm without its own case: blocks × both trees' halves × channels ×
		// chunks bounds the split of every builder above, so every transfer is kept
		// (at some cost in execution) and sameStructure still checks it.
		pieces = 2 * n * ch * k
	}
	return pieces
}

// VerifySchedule executes s on test vectors (integers drawn from a fixed seed, so
// that every sum is exact) and checks every rank's result with Check.
func VerifySchedule(s *Schedule) Verification {
	if s == nil {
		return Verification{Error: "no schedule"}
	}
	return verify(s)
}

func verify(s *Schedule) Verification {
	n := s.Shape.N()
	v := Verification{Result: expectation(s.Op, n, s.Params.Root), Elems: s.BufLen}
	rng := rand.New(rand.NewPCG(uint64(n), uint64(s.Elems)))
	in := make([][]float64, n)
	for r := range in {
		in[r] = make([]float64, max(0, s.BufLen))
		for i := range in[r] {
			in[r][i] = float64(rng.IntN(2001) - 1000)
		}
	}
	got, err := Execute(s, in)
	if err == nil {
		err = Check(s, in, got)
	}
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Verified = true
	return v
}

// expectation says what Check requires of op's result on n ranks.
func expectation(op Op, n, root int) string {
	switch op {
	case AllReduce:
		return fmt.Sprintf("every rank ends with the element-wise sum of all %d ranks' inputs", n)
	case AllGather:
		return fmt.Sprintf("every rank ends with all %d ranks' blocks, each at its rank's position", n)
	case ReduceScatter:
		return fmt.Sprintf("every rank r ends with block r of the element-wise sum of all %d ranks' inputs", n)
	case AllToAll:
		return fmt.Sprintf("every rank j ends with block j of each of the %d ranks' send buffers, in rank order", n)
	case Broadcast:
		return fmt.Sprintf("every one of the %d ranks ends with the root's (rank %d) buffer", n, root)
	case Reduce:
		return fmt.Sprintf("the root (rank %d) ends with the element-wise sum of all %d ranks' inputs", root, n)
	case SendRecv:
		return fmt.Sprintf("every rank r receives rank r−1's send buffer (mod %d)", n)
	}
	return "unknown operation"
}

// sameStructure checks that b has a's steps with the same transfers (kind, source
// and destination, in order); only lengths and offsets may differ.
func sameStructure(a, b *Schedule) error {
	if len(a.Steps) != len(b.Steps) {
		return fmt.Errorf("%d steps, the schedule has %d", len(b.Steps), len(a.Steps))
	}
	for i := range a.Steps {
		ta, tb := a.Steps[i].Transfers, b.Steps[i].Transfers
		if len(ta) != len(tb) {
			return fmt.Errorf("step %d has %d transfers, the schedule's %d", i, len(tb), len(ta))
		}
		for j := range ta {
			if ta[j].Kind != tb[j].Kind || ta[j].Src != tb[j].Src || ta[j].Dst != tb[j].Dst {
				return fmt.Errorf("step %d transfer %d is %s, the schedule's %s", i, j, describe(tb[j]), describe(ta[j]))
			}
		}
	}
	return nil
}

// explain says why the schedule's price differs from the closed form's. Both
// place the same transfers on the same links (TestClosedFormMatchesSchedule holds
// them within 1 %); the known differences are the streamed chains and trees, whose latency
// the step-synchronous schedule pays at every step, and sizes that do not split
// evenly into the schedule's pieces (or do not fill them).
func explain(s *Schedule, r *Replay, e Estimate) string {
	schedX, anaX := r.TimeUs-r.LatencyUs, e.TimeUs-e.LatencyUs
	numbers := fmt.Sprintf("schedule vs closed form: latency %.4g vs %.4g µs, data movement %.4g vs %.4g µs",
		r.LatencyUs, e.LatencyUs, schedX, anaX)
	d := r.DifferencePct
	head := fmt.Sprintf("the schedule priced link by link is %s %% off the closed form", signed(d))
	if math.Abs(d) <= 1 {
		head = fmt.Sprintf("agree within %.2f %%: the closed form places the same per-step patterns on the same links, with the same contention", math.Abs(d))
	}
	var why []string
	if streams(s.Op, s.Algo) {
		why = append(why, fmt.Sprintf("the schedule is priced step by step, so each of its %d steps pays the per-step cost and its slowest hop's latency, "+
			"while NCCL streams the chunks through the %s with 8 slots in flight per connection and the closed form pays its hop latencies once (Model.stream); "+
			"the data movement differs by %s %%", len(s.Steps), streamShape(s.Algo), signed(pct(schedX, anaX))))
	}
	// Uneven pieces move data only: compare the data-movement parts.
	if xd := pct(schedX, anaX); math.Abs(xd) >= 0.01 {
		pieces := dataPieces(s.Op, s.Algo, s.Shape, s.Params)
		switch {
		case s.Elems < pieces:
			why = append(why, fmt.Sprintf("%d B do not fill the schedule's %d pieces: the empty ones move nothing, so its steps carry fewer flows than the whole pattern the closed form prices with size/pieces bytes per piece, and their loads and latencies (for rings the mean over the flows' hops) differ", s.Elems, pieces))
		case s.Elems%pieces != 0:
			why = append(why, fmt.Sprintf("%d B do not split evenly into the schedule's %d pieces: pieces differ by a byte and a step lasts as long as its most loaded link, while the closed form moves exactly size/pieces bytes per piece", s.Elems, pieces))
		}
	}
	if len(s.Steps) != e.Steps {
		why = append(why, fmt.Sprintf("the schedule has %d steps, the closed form counts %d", len(s.Steps), e.Steps))
	}
	if len(why) == 0 && math.Abs(d) > 1 {
		why = append(why, "not explained: the two levels should agree within 1 %")
	}
	why = append(why, numbers)
	return head + "; " + strings.Join(why, "; ")
}

// signed formats a percentage with its sign and two decimals, without "−0.00".
func signed(x float64) string {
	x = math.Round(x*100) / 100
	if x == 0 {
		x = 0 // −0 compares equal to 0: this makes it +0
	}
	return fmt.Sprintf("%+.2f", x)
}

func pct(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * (a/b - 1)
}

// pairKey is one (kind, source, destination) of a step.
type pairKey struct {
	kind     Kind
	src, dst int32
}

// stepFlows sums a step's transfers per pair and groups the pairs by class.
func stepFlows(p *Placement, st Step, routes map[pairKey]string) []FlowClass {
	bytes := map[pairKey]int64{}
	var order []pairKey
	for _, t := range st.Transfers {
		k := pairKey{t.Kind, t.Src, t.Dst}
		if _, ok := bytes[k]; !ok {
			order = append(order, k)
		}
		bytes[k] += t.Len
	}
	slices.SortFunc(order, func(a, b pairKey) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.dst, b.dst), cmp.Compare(a.kind, b.kind))
	})
	type classKey struct {
		kind  Kind
		route string
	}
	idx := map[classKey]int{}
	var out []FlowClass
	for _, k := range order {
		ck := classKey{k.kind, route(p, k, routes)}
		i, ok := idx[ck]
		if !ok {
			i = len(out)
			idx[ck] = i
			out = append(out, FlowClass{Kind: k.kind, Route: ck.route, MinBytes: math.MaxInt64})
		}
		f := &out[i]
		b := bytes[k]
		f.Pairs++
		f.MinBytes, f.MaxBytes = min(f.MinBytes, b), max(f.MaxBytes, b)
		f.Bytes += b
		if len(f.Examples) < ReplayExamples {
			f.Examples = append(f.Examples, [2]int32{k.src, k.dst})
		}
	}
	slices.SortStableFunc(out, func(a, b FlowClass) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), strings.Compare(a.Route, b.Route))
	})
	return out
}

// route names the links of a pair's transfers (see FlowClass.Route).
func route(p *Placement, k pairKey, memo map[pairKey]string) string {
	switch k.kind {
	case SwitchReduce:
		return "nvls switch (reduce)"
	case Multicast:
		return "nvls switch (multicast)"
	}
	if k.src == k.dst {
		return "local"
	}
	key := pairKey{Copy, k.src, k.dst}
	if r, ok := memo[key]; ok {
		return r
	}
	c := p.Cluster
	path, _, _ := c.Path(p.Ranks[k.src], p.Ranks[k.dst], nil)
	var segs []string
	last := ""
	for _, res := range path {
		var seg string
		switch c.Kind(res) {
		case topology.GPUPortOut, topology.GPUPortIn:
			seg = "nvlink"
			if c.Spec.Intra.Kind == topology.PCIe {
				seg = "pcie"
			}
		case topology.PairLink:
			seg = "mesh link"
		case topology.NICOut, topology.NICIn:
			seg = "nic→nic"
		case topology.LeafUp, topology.LeafDown:
			seg = "spine"
		}
		if seg != last {
			segs = append(segs, seg)
			last = seg
		}
	}
	r := strings.Join(segs, " + ")
	memo[key] = r
	return r
}

// phase names what a step of s does.
func phase(s *Schedule, st Step) string {
	var add, cp, red, mc, cross bool
	dist := -1
	n := s.Shape.N()
	for _, t := range st.Transfers {
		switch t.Kind {
		case Add:
			add = true
		case Copy:
			cp = true
		case SwitchReduce:
			red = true
		case Multicast:
			mc = true
		}
		if t.Src >= 0 && t.Dst >= 0 && t.Src != t.Dst {
			cross = cross || s.Shape.Node[t.Src] != s.Shape.Node[t.Dst]
			if dist < 0 {
				dist = ((int(t.Dst)-int(t.Src))%n + n) % n
			}
		}
	}
	switch s.Algo {
	case Ring:
		switch s.Op {
		case Broadcast:
			return "chain broadcast from the root, pipelined"
		case Reduce:
			return "chain reduce into the root, pipelined"
		case SendRecv:
			return "send to the next rank"
		}
		if add {
			return "reduce-scatter"
		}
		return "all-gather"
	case Tree, DoubleTree:
		switch {
		case add && cp:
			return "reduce up + broadcast down"
		case add:
			return "reduce up the tree"
		}
		return "broadcast down the tree"
	case Hierarchical:
		where := "intra-node"
		if cross {
			where = "inter-node (rail)"
		}
		if add {
			return where + " reduce-scatter"
		}
		return where + " all-gather"
	case NVLS:
		switch {
		case red && mc:
			return "switch reduce + multicast"
		case red:
			return "switch reduce"
		}
		return "multicast"
	case Direct:
		if s.Op == AllReduce {
			if add {
				return "one-shot reduce-scatter"
			}
			return "one-shot all-gather"
		}
		return "one-shot " + s.Op.String()
	case PAT:
		if s.Op == AllGather {
			return fmt.Sprintf("all-gather, send to rank −%d", (n-dist)%n)
		}
		return fmt.Sprintf("reduce-scatter, send to rank +%d", dist)
	case Pairwise:
		return fmt.Sprintf("exchange, send to rank +%d", dist)
	}
	return s.Algo.String()
}

// sameShape says whether two steps' flows have the same kinds, routes and pair
// counts (their bytes may differ).
func sameShape(a, b []FlowClass) bool {
	return slices.EqualFunc(a, b, func(x, y FlowClass) bool {
		return x.Kind == y.Kind && x.Route == y.Route && x.Pairs == y.Pairs
	})
}

// replayRows summarises the priced schedule, merging runs of alike steps.
func replayRows(p *Placement, s *Schedule, sc ScheduleCost) []ReplayRow {
	var rows []ReplayRow
	routes := map[pairKey]string{}
	for i, st := range s.Steps {
		flows := stepFlows(p, st, routes)
		ph := phase(s, st)
		cost := sc.Steps[i]
		if k := len(rows) - 1; k >= 0 && rows[k].Phase == ph && sameShape(rows[k].Flows, flows) {
			r := &rows[k]
			r.Count++
			for j := range r.Flows {
				f, g := &r.Flows[j], flows[j]
				f.MinBytes, f.MaxBytes = min(f.MinBytes, g.MinBytes), max(f.MaxBytes, g.MaxBytes)
				f.Bytes += g.Bytes
			}
			r.TimeUs += cost.TimeUs
			r.LatencyUs += cost.LatencyUs
			if cost.TimeUs > r.MaxStepUs {
				r.MaxStepUs = cost.TimeUs
				setBottleneck(p, r, cost)
			}
			continue
		}
		r := ReplayRow{First: i, Count: 1, Phase: ph, TimeUs: cost.TimeUs, LatencyUs: cost.LatencyUs, MaxStepUs: cost.TimeUs, Flows: flows}
		setBottleneck(p, &r, cost)
		rows = append(rows, r)
	}
	return rows
}

func setBottleneck(p *Placement, r *ReplayRow, cost StepCost) {
	r.Bottleneck, r.BottleneckBytes, r.BottleneckGBps = "", 0, 0
	if cost.Bottleneck < 0 {
		return
	}
	c := p.Cluster
	capacity := c.Capacity(cost.Bottleneck) // bytes per µs
	r.Bottleneck = c.Describe(cost.Bottleneck)
	r.BottleneckBytes = cost.BottleneckU * capacity
	r.BottleneckGBps = capacity / 1e3
}
