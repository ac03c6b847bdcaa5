package collective

import (
	"slices"
	"sync"

	"github.com/stepcost/stepcost/estimator/topology"
)

// A pattern coefficient says how long one step of a communication pattern takes per
// byte, with contention: every flow of the step — in every channel and every
// concurrent group — is placed on the links it crosses, and the step is as slow as
// its most loaded link. m is in µs per byte of the unit the pattern states; lat is
// the largest hardware path latency of the step in µs.
type coef struct {
	m   float64
	lat float64
	net float64 // 1 if a flow of the step leaves the scale-up domain (a sum for multi-step coefficients)
}

// pipe is a pipelined algorithm: D stages that every chunk passes in order, one
// stage per step, with k chunks in flight (chunk j is in stage σ at step j+σ).
// With c bytes per chunk-flow, the transfer time is c·Σ_s M(window(s)), where
// window(s) are the stages active at step s; the sums over steps are precomputed so
// that the total for any k is O(1).
type pipe struct {
	D int
	// For k ≥ D: fill (steps 0…D−2), full window times (k−D+1), drain (last D−1 steps).
	fill, full, drain winSum
	// For k < D: the whole sums, indexed by k (index 0 unused).
	small []winSum
	// path is what the first chunk meets on its way through the stages: the sum of
	// the hop latencies (lat) and network crossings (net) of each stage's slowest
	// hop (for chains, of the slowest channel's chain).
	path winSum
	ok   bool
}

// winSum is a sum over steps of: the step's µs per byte of chunk (m), its hardware
// latency (lat) and whether it crosses the network (net, 0 or 1).
type winSum struct{ m, lat, net float64 }

func (a winSum) plus(b winSum) winSum { return winSum{a.m + b.m, a.lat + b.lat, a.net + b.net} }
func (a winSum) times(k float64) winSum {
	return winSum{a.m * k, a.lat * k, a.net * k}
}

// steps is the number of steps with k chunks.
func (p *pipe) steps(k int) int { return k + p.D - 1 }

// sums returns the sums over all steps for k chunks.
func (p *pipe) sums(k int) winSum {
	if k >= p.D {
		return p.fill.plus(p.full.times(float64(k - p.D + 1))).plus(p.drain)
	}
	return p.small[k]
}

// coefficients are everything the closed form needs about one placement.
type coefficients struct {
	channels int // ring/tree channels
	ring     coef
	intra    coef              // ring inside each domain (hierarchical phases 1 and 3)
	rail     coef              // ring across domains among ranks of equal local index (hierarchical phase 2)
	allPairs coef              // every rank to every other rank, one block each
	toRoot   coef              // every rank to rank 0 (direct reduce), unit: one whole buffer per flow
	fromRoot coef              // rank 0 to every rank (direct broadcast)
	pairwise coef              // Σ over the n−1 pairwise steps; lat is the sum too
	pat      [maxPATSteps]coef // per PAT step; unit: one block per flow
	neighbor coef              // rank i to rank i+1 of the group order (send/recv)
	tree     pipe
	dtree    pipe
	nvlsAR   pipe // stage 0 switch-reduce, stage 1 multicast; unit: one block-chunk
	nvlsRed  coef // switch-reduce alone (NVLS reduce-scatter), unit: one block-chunk
	nvlsMC   coef // multicast alone (NVLS all-gather)
	// NVLS tree (several domains of equal size): switch-reduce and multicast inside
	// every domain at once (unit: one block-chunk of a domain's S/PerDomain blocks),
	// and the exchange of each reduced block across the domains on its rail (unit:
	// one whole block per flow).
	nvlsTreeIntra pipe
	nvlsTreeNet   coef
	chain         pipe // ring broadcast: every channel's ring from rank 0
	rchain        pipe // ring reduce: the same chains reversed, ending at rank 0
}

// loads accumulates flow bytes per link.
type loads struct {
	c       *topology.Cluster
	load    []float64
	touched []int32
	lat     float64
	net     bool
	path    []int32
	// For rings: the byte-weighted mean latency and network share over the step's
	// flows (weighted by bytes so that splitting or merging a flow changes nothing).
	latSum, netSum, flows float64
	// images, for groups placed by their rail images (Placement.railImages): for
	// every group, which of the groups placed it is the image of. The sums above
	// then wait: rec keeps the placed groups' terms (the flows of group j from
	// starts[j] on, mark) until repeat adds them in the order of every group.
	images []int32
	rec    []ringTerm
	starts []int
	win    winScratch // buildPipe's
	// pend are the flows queued (queue) and not yet placed (flush), and units the
	// space flush's classes of translation units reuse.
	pend      []queuedFlow
	deferHops bool // the queued flows' latencies and crossings are taken as they are placed (queue)
	direct    bool // queue and queueRing are flow (queueing)
	units     unitScratch
}

// queuedFlow is one flow of queue: w bytes from GPU src to GPU dst.
type queuedFlow struct {
	src, dst int32
	w        float64
}

// ringTerm is one flow's terms of a ring's byte-weighted sums.
type ringTerm struct{ lat, net, w float64 }

// mark starts the next placed group's flows.
func (l *loads) mark() {
	if l.images != nil {
		l.starts = append(l.starts, len(l.rec))
	}
}

// repeat adds to the ring sums the recorded terms of every group's flows — those
// of the placed group it is the image of — in the order the groups and their flows
// would have added them, and forgets them: the sums are bit for bit those of
// placing every group.
func (l *loads) repeat() {
	if l.images == nil {
		return
	}
	l.starts = append(l.starts, len(l.rec))
	for _, j := range l.images {
		for _, t := range l.rec[l.starts[j]:l.starts[j+1]] {
			l.latSum += t.lat
			l.netSum += t.net
			l.flows += t.w
		}
	}
	l.rec, l.starts = l.rec[:0], l.starts[:0]
}

func newLoads(c *topology.Cluster) *loads {
	return &loads{c: c, load: make([]float64, c.Resources())}
}

// loadsPool recycles the per-link arrays: a cluster of 16 384 GPUs has about 100 000
// link directions, and every family of every placement needs one array, all zeros.
var loadsPool sync.Pool

// getLoads returns a zeroed loads for c, recycled when one is big enough.
func getLoads(c *topology.Cluster) *loads {
	if l, ok := loadsPool.Get().(*loads); ok && cap(l.load) >= c.Resources() {
		l.c, l.load = c, l.load[:c.Resources()]
		return l
	}
	return newLoads(c)
}

// putLoads gives l back; every pattern ends with a take, which zeroes what it
// touched, so l is all zeros again after reset.
func putLoads(l *loads) {
	l.reset()
	l.c, l.images, l.rec, l.starts, l.pend = nil, nil, l.rec[:0], l.starts[:0], l.pend[:0]
	loadsPool.Put(l)
}

func (l *loads) add(r int32, w float64) {
	p := &l.load[r] // one bounds check and one load for the test and the sum
	if *p == 0 {
		l.touched = append(l.touched, r)
	}
	*p += w
}

// flow places w bytes from GPU src to GPU dst.
func (l *loads) flow(src, dst int, w float64) {
	if src == dst || w == 0 {
		return
	}
	var lat float64
	var cross bool
	l.path, lat, cross = l.c.Path(src, dst, l.path[:0])
	for _, r := range l.path {
		l.add(r, w)
	}
	l.hop(lat, cross, w)
}

// hop is flow's account of a flow's latency and network crossing, w bytes.
func (l *loads) hop(lat float64, cross bool, w float64) {
	if lat > l.lat { // max: latencies are finite and not negative, no NaN or −0 to order
		l.lat = lat
	}
	l.net = l.net || cross
	if l.images != nil {
		l.rec = append(l.rec, ringTerm{lat * w, b2f(cross) * w, w})
		return
	}
	l.latSum += lat * w
	l.netSum += b2f(cross) * w
	l.flows += w
}

// switchReduce is an NVLS load-reduce of w bytes issued by dst over group.
func (l *loads) switchReduce(group []int, dst int, w float64) {
	for _, g := range group {
		l.add(l.c.SwitchOut(g), w)
	}
	l.add(l.c.SwitchIn(dst), w)
	l.lat = max(l.lat, l.c.IntraLatUs)
}

// multicast is an NVLS multicast store of w bytes issued by src to group.
func (l *loads) multicast(group []int, src int, w float64) {
	l.add(l.c.SwitchOut(src), w)
	for _, g := range group {
		l.add(l.c.SwitchIn(g), w)
	}
	l.lat = max(l.lat, l.c.IntraLatUs)
}

// take returns the coefficient of what was accumulated and resets. The latency is
// the slowest flow's: every flow of the step must land before the next step.
func (l *loads) take() coef {
	l.flush()
	out := coef{lat: l.lat, net: b2f(l.net), m: l.c.MaxUtilisation(l.load, l.touched)}
	l.reset()
	return out
}

// takeRing is take for ring steps, whose latency is the mean over the step's flows:
// a ring forwards each piece as soon as it arrives, so a piece's path around the
// ring pays each hop's latency once — the intra-node hops and the few inter-node
// ones — rather than the slowest hop at every step (NCCL's ring latency,
// tuning.cc: nInterSteps inter-node hops, the rest intra-node).
func (l *loads) takeRing() coef {
	l.flush()
	lat, net, flows := l.latSum, l.netSum, l.flows
	out := l.take()
	if flows > 0 {
		out.lat, out.net = lat/flows, net/flows
	}
	return out
}

func (l *loads) reset() {
	for _, r := range l.touched {
		l.load[r] = 0
	}
	l.touched = l.touched[:0]
	l.lat, l.net = 0, false
	l.latSum, l.netSum, l.flows = 0, 0, 0
}

// stageLoads is the per-link load of one pipeline stage.
type stageLoads struct {
	res []int32
	w   []float64
	lat float64
	net bool
}

func (l *loads) takeStage() stageLoads {
	s := l.peekStage()
	l.reset()
	return s
}

// peekStage is takeStage without the reset: the flows placed so far stay.
func (l *loads) peekStage() stageLoads {
	l.placeQueued() // a stage's loads are listed link by link: every flow's
	// Sized once: a stage of a 100 000-GPU group's tree touches as many links.
	s := stageLoads{lat: l.lat, net: l.net, res: make([]int32, len(l.touched)), w: make([]float64, len(l.touched))}
	copy(s.res, l.touched)
	for i, r := range l.touched {
		s.w[i] = l.load[r] / l.c.Capacity(r)
	}
	return s
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// maxPATSteps bounds log2 of a PAT group (2^24 ranks).
const maxPATSteps = 24

// maxPipeDepth bounds the stages of a pipelined algorithm whose tables are built
// (O(D²)); deeper chains are not offered.
const maxPipeDepth = 512

// buildPipe precomputes the window sums of a pipeline from its stages.
//
// acc is scratch space of one float per link, all zeros, and left all zeros (the
// caller's loads array between patterns).
func buildPipe(stages []stageLoads, l *loads) pipe {
	acc := l.load
	D := len(stages)
	if D == 0 || D > maxPipeDepth {
		return pipe{}
	}
	W := windows(stages, acc, &l.win)
	p := pipe{D: D, ok: true, full: W[0][D-1]}
	for s := range D {
		p.path = p.path.plus(W[s][s]) // every stage's slowest hop; chains refine it per channel
	}
	for s := 0; s <= D-2; s++ {
		p.fill = p.fill.plus(W[0][s])
	}
	for lo := 1; lo <= D-1; lo++ {
		p.drain = p.drain.plus(W[lo][D-1])
	}
	p.small = make([]winSum, D)
	for k := 1; k < D; k++ {
		for s := 0; s <= k+D-2; s++ {
			p.small[k] = p.small[k].plus(W[max(0, s-k+1)][min(s, D-1)])
		}
	}
	return p
}

// winScratch is the space windows reuses from pipeline to pipeline.
type winScratch struct {
	links, count, off, stage []int32
	load                     []float64
}

// windows returns W[lo][hi] for every window of stages lo…hi: the largest load of a
// link summed over the window's stages (in stage order), and the largest latency
// and network crossing of its stages.
//
// A link's sum over a window is that over the run of its own stages the window
// holds, and adding a stage's nonnegative load never lowers a sum (rounding is
// monotone), so W[lo][hi] is the largest over every run of a link's stages that
// lies within lo…hi: each run's sum is put at its first and last stage, and the
// windows take the largest of what lies within them, W[lo][hi] = max(own,
// W[lo+1][hi], W[lo][hi−1]). Every sum is added in stage order from zero, as
// extending each window one stage at a time would, so the window sums are bit for
// bit those; the work is the square of each link's stage count rather than of the
// depth times every link.
//
// acc is scratch space of one float per link, all zeros, and left all zeros: it
// holds each link's index (plus one) while the stages are read.
func windows(stages []stageLoads, acc []float64, sc *winScratch) [][]winSum {
	D := len(stages)
	W := make([][]winSum, D)
	cells := make([]winSum, D*D)
	for lo := range D {
		W[lo] = cells[lo*D : (lo+1)*D : (lo+1)*D]
	}
	// Every link's loads by stage, in stage order: links[i] is its resource, its
	// entries from off[i] to off[i+1].
	entries := 0
	for _, st := range stages {
		entries += len(st.res)
	}
	links, count := sc.links[:0], sc.count[:0]
	for _, st := range stages {
		for _, r := range st.res {
			if acc[r] == 0 {
				links = append(links, r)
				count = append(count, 0)
				acc[r] = float64(len(links))
			}
			count[int(acc[r])-1]++
		}
	}
	off := append(sc.off[:0], 0)
	for _, k := range count {
		off = append(off, off[len(off)-1]+k)
	}
	at := append(count[:0], off[:len(links)]...) // count is read; it becomes each link's next entry
	stage := slices.Grow(sc.stage[:0], entries)[:entries]
	load := slices.Grow(sc.load[:0], entries)[:entries]
	for s, st := range stages {
		for i, r := range st.res {
			j := int(acc[r]) - 1
			stage[at[j]], load[at[j]] = int32(s), st.w[i]
			at[j]++
		}
	}
	sc.links, sc.count, sc.off, sc.stage, sc.load = links, at, off, stage, load
	for _, r := range links {
		acc[r] = 0
	}
	for i := range links {
		for a := off[i]; a < off[i+1]; a++ {
			var sum float64
			row := W[stage[a]]
			for b := a; b < off[i+1]; b++ {
				sum += load[b]
				row[stage[b]].m = max(row[stage[b]].m, sum)
			}
		}
	}
	for s, st := range stages {
		W[s][s].lat, W[s][s].net = st.lat, b2f(st.net)
	}
	for lo := D - 1; lo >= 0; lo-- {
		for hi := lo + 1; hi < D; hi++ {
			w, in, left := W[lo][hi], W[lo+1][hi], W[lo][hi-1]
			W[lo][hi] = winSum{max(w.m, in.m, left.m), max(w.lat, in.lat, left.lat), max(w.net, in.net, left.net)}
		}
	}
	return W
}

// Families of coefficients, computed on first use (a placement that is only ever
// asked for all-reduce never builds the O(n²) all-to-all patterns).
type family uint8

const (
	famBase     family = iota // the ring of every channel
	famHier                   // intra-node rings and rails (hierarchical all-reduce)
	famNeighbor               // rank i to rank i+1 (send/recv)
	famDirect                 // all pairs, to and from rank 0
	famPairwise               // pairwise all-to-all steps
	famPAT                    // PAT steps
	famTrees                  // tree and double tree pipelines
	famNVLS                   // in-switch reduce and multicast
	famChain                  // broadcast/reduce chain
	numFamilies
)

// ensure computes a family's coefficients once.
func (p *Placement) ensure(f family) {
	p.once[f].Do(func() { computeFamily(p, f) })
}

// computeFamily places the patterns of one family on the cluster.
func computeFamily(p *Placement, f family) {
	c := p.Cluster
	l := getLoads(c)
	defer putLoads(l)
	l.direct = !queueing(c)
	n := p.N()
	co := &p.coef
	nch := co.channels
	perCh := 1 / float64(nch)
	mesh := c.Spec.Intra.Kind == topology.Mesh
	loaded := p.placed()
	var images []int32
	if p.railImages {
		images = p.imageOf
	}
	switch f {
	case famBase:
		// Ring: every rank to its successor in each channel's ring; unit: the bytes
		// one rank sends in one step, spread over the channels.
		l.images = images
		spans := domainSpans(p.Shape)
		period := spansPeriod(spans, mesh, nch)
		order := make([]int32, 0, n) // one channel's ring, rebuilt in place for each
		for ch := range period {
			order = appendChannelRing(order[:0], spans, ch, mesh)
			w := perCh * float64(channelsLike(ch, period, nch))
			for _, g := range loaded {
				l.mark()
				for i := range n - 1 { // rank i to i+1, and the last to the first
					l.queueRing(g[order[i]], g[order[i+1]], w)
				}
				l.queueRing(g[order[n-1]], g[order[0]], w)
			}
			l.repeat()
		}
		co.ring = l.takeRing()
	case famHier:
		// Hierarchical: intra-domain rings and rail rings.
		l.images = images
		spans := domainSpans(p.Shape)
		period := spansPeriod(spans, mesh, nch)
		order := make([]int32, 0, n) // one channel's ring, rebuilt in place for each
		for ch := range period {
			order = appendChannelRing(order[:0], spans, ch, mesh)
			w := perCh * float64(channelsLike(ch, period, nch))
			for _, g := range loaded {
				l.mark()
				for _, sp := range spans {
					k := sp[1] - sp[0]
					for j := range k {
						l.queueRing(g[order[sp[0]+j]], g[order[sp[0]+(j+1)%k]], w)
					}
				}
			}
			l.repeat()
		}
		co.intra = l.takeRing()
		if p.Uniform {
			m := len(spans)
			for _, g := range loaded {
				l.mark()
				for loc := range p.PerDomain {
					for d := range m {
						l.queueRing(g[spans[d][0]+loc], g[spans[(d+1)%m][0]+loc], 1)
					}
				}
			}
			l.repeat()
			co.rail = l.takeRing()
		}
	case famNeighbor:
		for _, g := range loaded {
			for i := range n - 1 {
				l.queue(g[i], g[i+1], 1)
			}
			l.queue(g[n-1], g[0], 1)
		}
		co.neighbor = l.take()
	case famDirect:
		// One block from every rank to every other rank.
		for _, g := range loaded {
			for i := range n {
				for j := range n {
					l.flow(g[i], g[j], 1)
				}
			}
		}
		co.allPairs = l.take()
		for _, g := range loaded {
			for i := 1; i < n; i++ {
				l.flow(g[i], g[0], 1)
			}
		}
		co.toRoot = l.take()
		for _, g := range loaded {
			for i := 1; i < n; i++ {
				l.flow(g[0], g[i], 1)
			}
		}
		co.fromRoot = l.take()
	case famPairwise:
		// Step k pairs i with i+k.
		for k := 1; k < n; k++ {
			for _, g := range loaded {
				for i := range n {
					l.flow(g[i], g[(i+k)%n], 1)
				}
			}
			s := l.take()
			co.pairwise.m += s.m
			co.pairwise.lat += s.lat
			co.pairwise.net += s.net
		}
	case famPAT:
		// Step k sends patBlocks(n,k) blocks to rank i−2^k.
		for k := range min(patSteps(n), maxPATSteps) {
			b := float64(patBlocks(n, k))
			for _, g := range loaded {
				for i := range n {
					l.queue(g[i], g[((i-(1<<k))%n+n)%n], b)
				}
			}
			co.pat[k] = l.take()
		}
	case famTrees:
		// Unit: one chunk of one channel of one tree.
		co.tree, co.dtree = treePipes(p, l, nch)
	case famNVLS:
		// Inside one domain: rank k owns block k; unit: one block-chunk.
		if p.Domains == 1 && c.NVLS() && n >= 2 {
			var st [2]stageLoads
			for _, g := range loaded {
				for k := range n {
					l.switchReduce(g, g[k], 1)
				}
			}
			st[0] = l.takeStage()
			for _, g := range loaded {
				for k := range n {
					l.multicast(g, g[k], 1)
				}
			}
			st[1] = l.takeStage()
			co.nvlsAR = buildPipe(st[:], l)
			co.nvlsRed = stageCoef(st[0])
			co.nvlsMC = stageCoef(st[1])
		}
		if p.Domains >= 2 && p.Uniform && p.PerDomain >= 2 && c.NVLS() {
			// NCCL's NVLS_TREE: each domain reduces its local rank k's block in the
			// switch, the reduced blocks of equal local index meet across the domains
			// in a tree on their rail, and the switch multicasts the result back.
			spans := domainSpans(p.Shape)
			var st [2]stageLoads
			for _, g := range loaded {
				for _, sp := range spans {
					dom := g[sp[0]:sp[1]]
					for _, dst := range dom {
						l.switchReduce(dom, dst, 1)
					}
				}
			}
			st[0] = l.takeStage()
			for _, g := range loaded {
				for _, sp := range spans {
					dom := g[sp[0]:sp[1]]
					for _, src := range dom {
						l.multicast(dom, src, 1)
					}
				}
			}
			st[1] = l.takeStage()
			co.nvlsTreeIntra = buildPipe(st[:], l)
			// Across the domains every block goes up a tree and comes back down. In
			// NCCL's two complementary binary trees each node is inner in one tree
			// and a leaf in the other, so each rail's NIC sends and receives the block
			// twice in all (half the data per tree: 3 halves as an inner node, 1 as
			// a leaf); with two domains the tree is one exchange, once each way
			// (NCCL's tuning takes NVLS_TREE's network bandwidth whole on ≤ 2 nodes
			// and halved beyond for this reason: src/graph/tuning.cc at v2.27.7-1,
			// ncclTopoTuneModel, bwInter : bwInter/2 by nNodes <= 2). A ring of the domains on each rail
			// with that weight puts the same bytes on every NIC.
			w := 1.0
			if len(spans) > 2 {
				w = 2
			}
			m := len(spans)
			for _, g := range loaded {
				for loc := range p.PerDomain {
					for d := range m {
						l.flow(g[spans[d][0]+loc], g[spans[(d+1)%m][0]+loc], w)
					}
				}
			}
			co.nvlsTreeNet = l.take()
		}
	case famChain:
		// From rank 0 along each channel's ring (ring broadcast and reduce): NCCL
		// rotates every channel's ring to start at the root, so the channels leave
		// and enter the nodes through different GPUs and NICs, each carrying its
		// 1/channels of every chunk. (One chain for all channels would put the whole
		// message through a single NIC per node boundary.)
		if n >= 2 && n-1 <= maxPipeDepth {
			co.chain = chainPipe(p, l, nch, mesh, false)
			co.rchain = chainPipe(p, l, nch, mesh, true)
		}
	}
}

// chainPipe builds the pipeline of a ring broadcast (or, reversed, reduce) rooted
// at rank 0, every channel on its own ring, and the first chunk's path down the
// slowest channel's chain.
func chainPipe(p *Placement, l *loads, nch int, mesh, reverse bool) pipe {
	n := p.N()
	c := p.Cluster
	perCh := 1 / float64(nch)
	period := channelPeriod(p.Shape, mesh, nch)
	chains := make([][]int32, period)
	for ch := range period {
		order := channelRing(p.Shape, ch, mesh)
		start := slices.Index(order, 0)
		chain := make([]int32, n)
		for i := range chain {
			if reverse {
				chain[i] = order[(start+n-1-i)%n]
			} else {
				chain[i] = order[(start+i)%n]
			}
		}
		chains[ch] = chain
	}
	loaded := p.placed()
	stages := make([]stageLoads, 0, n-1)
	for e := 0; e+1 < n; e++ {
		for ch, chain := range chains {
			w := perCh * float64(channelsLike(ch, period, nch))
			for _, g := range loaded {
				l.flow(g[chain[e]], g[chain[e+1]], w)
			}
		}
		stages = append(stages, l.takeStage())
	}
	pp := buildPipe(stages, l)
	pp.path = winSum{}
	g := p.Siblings[0] // sibling groups are congruent: one walk is enough
	for _, chain := range chains {
		var path winSum
		for e := 0; e+1 < n; e++ {
			var lat float64
			var cross bool
			l.path, lat, cross = c.Path(g[chain[e]], g[chain[e+1]], l.path[:0])
			path.lat += lat
			path.net += b2f(cross)
		}
		if path.lat+path.net > pp.path.lat+pp.path.net {
			pp.path = path
		}
	}
	return pp
}

func stageCoef(s stageLoads) coef {
	out := coef{lat: s.lat, net: b2f(s.net)}
	for _, w := range s.w {
		out.m = max(out.m, w)
	}
	return out
}

// treePipes builds the pipelines of the tree and the double tree all-reduce:
// up-stages by height, then down-stages by depth, over every channel and
// concurrent group. The double tree's first tree is the single tree, so each stage
// places the first tree's flows once: the single tree's stage is read off the
// loads (peekStage), and the second tree's flows are added to them for the double
// tree's. The loads are sums of whole channel counts, exact in any order, so every
// stage is bit for bit that of placing the double tree's flows on their own.
func treePipes(p *Placement, l *loads, nch int) (tree, dtree pipe) {
	mesh := p.Cluster.Spec.Intra.Kind == topology.Mesh
	n := p.N()
	if n < 2 {
		return pipe{}, pipe{}
	}
	// Flows by tree and stage: tree t sends up from a rank of height h at stage h
	// and down from a rank of depth d at stage H_t+d, H_t being its root's height.
	type flowAt struct {
		src, dst int32
		w        float64 // channels that take this flow
	}
	var stageFlows [2][][]flowAt
	at := func(t, s int, f flowAt) {
		for len(stageFlows[t]) <= s {
			stageFlows[t] = append(stageFlows[t], nil)
		}
		stageFlows[t][s] = append(stageFlows[t][s], f)
	}
	period := channelPeriod(p.Shape, mesh, nch)
	double := true // false once the second tree is too deep
	for ch := range period {
		w := float64(channelsLike(ch, period, nch))
		for t := range 2 {
			if t == 1 && !double {
				continue
			}
			parent := channelTree(p.Shape, t, ch, mesh)
			height, depth, H, maxD := treeLevels(parent)
			if H+maxD > maxPipeDepth {
				if t == 0 {
					return pipe{}, pipe{}
				}
				double = false
				continue
			}
			for r, pr := range parent {
				if pr < 0 {
					continue
				}
				at(t, height[r], flowAt{int32(r), pr, w})
				at(t, H+depth[pr], flowAt{pr, int32(r), w})
			}
		}
	}
	loaded := p.placed()
	D := len(stageFlows[0])
	if double {
		D = max(D, len(stageFlows[1]))
	}
	stages := make([]stageLoads, 0, len(stageFlows[0]))
	var dstages []stageLoads
	if double {
		dstages = make([]stageLoads, 0, D)
	}
	for s := range D {
		if s < len(stageFlows[0]) {
			for _, g := range loaded {
				for _, f := range stageFlows[0][s] {
					l.flow(g[f.src], g[f.dst], f.w)
				}
			}
			if !double {
				stages = append(stages, l.takeStage())
				continue
			}
			stages = append(stages, l.peekStage())
		}
		if s < len(stageFlows[1]) {
			for _, g := range loaded {
				for _, f := range stageFlows[1][s] {
					l.flow(g[f.src], g[f.dst], f.w)
				}
			}
		}
		dstages = append(dstages, l.takeStage())
	}
	tree = buildPipe(stages, l)
	if double {
		dtree = buildPipe(dstages, l)
	}
	return tree, dtree
}

// channelPeriod is after how many channels the rings (and the trees built on them)
// repeat: channelRing rotates each domain's ranks by the channel, so channel ch and
// ch + k order a domain of k ranks alike (on a mesh the cycle chosen repeats too).
// Channels that order every domain alike load the same links, so the coefficients
// place one of each kind, weighted by how many there are: a group of one GPU per
// node places one ring instead of one per channel. At most nch.
func channelPeriod(sh Shape, mesh bool, nch int) int { return spansPeriod(domainSpans(sh), mesh, nch) }

// spansPeriod is channelPeriod of a shape's domainSpans.
func spansPeriod(spans [][2]int, mesh bool, nch int) int {
	period := 1
	for _, sp := range spans {
		k := sp[1] - sp[0]
		if mesh && k > 2 {
			k = lcm(k, len(meshCycles(k)))
		}
		period = lcm(period, k)
		if period >= nch {
			return nch
		}
	}
	return period
}

// channelsLike counts the channels of nch that order the ranks as channel ch does
// (ch, ch + period, …).
func channelsLike(ch, period, nch int) int { return (nch - ch + period - 1) / period }
