package step

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/framework"
	"github.com/stepcost/stepcost/estimator/hardware"
	"github.com/stepcost/stepcost/estimator/invalid"
	"github.com/stepcost/stepcost/estimator/model"
	"github.com/stepcost/stepcost/estimator/topology"
)

// Estimator prices training steps. It caches the placements of communication
// groups (their contention coefficients), so that estimating many layouts on one
// cluster stays cheap. It is safe for concurrent use.
type Estimator struct {
	coll *collective.Model
	k    Constants
	*groupCache

	mu    sync.RWMutex
	notes map[assumptionKey][]string
	// timedLayers is the current generation of layers timed without a
	// BoundsCache (layerMemoised), nil until the first; it depends on k, so it
	// is the estimator's own, not its groupCache's.
	timedLayers atomic.Pointer[layerMemo]
}

// groupCache holds what does not depend on the compute constants: the placements of
// communication groups and the memoised collective costs on them. Estimators made
// by WithConstants share it, so that a fit trying many constants places and prices
// each group once.
type groupCache struct {
	// places maps a placeKey to its placement; costs memoises collective estimates
	// (see collCost). Both are read far more than written and are shared by a
	// search's workers, so they are typed maps under read-write locks: a sync.Map
	// hashes its keys as interfaces (their type's hash function, then an interface
	// comparison), which cost more than the read lock a warm search takes instead.
	placesMu sync.RWMutex
	places   map[placeKey]*collective.Placement
	costs    atomic.Pointer[costMemo]
	// degraded maps a degradeKey to the *topology.Cluster of a link what-if, so that
	// repeated what-ifs reuse one cluster (and its placements and costs); at most
	// maxDegraded are kept.
	degraded  sync.Map
	nDegraded atomic.Int64
	// pipes holds the compiled schedules (PipelineSpan, PipelineTable): the
	// estimator's own, or one its owner shares between estimators
	// (ShareSchedules).
	pipes *pipeTables
	// spans is the current generation of executed spans (PipelineSpan without
	// blocks), nil until the first.
	spans atomic.Pointer[spanMemo]
	// hops is the current generation of priced pipeline hops (pricing.hopSends),
	// nil until the first.
	hops atomic.Pointer[hopMemo]
	// runs is the current generation of the pipeline's runs (pricing.pipeRun),
	// nil until the first.
	runs atomic.Pointer[pipeRunMemo]
	// byGrid maps a gridPlaceKey to the placement places holds for it, so that an
	// estimate finds its groups' placements without building and canonicalising
	// their placeKeys; under placesMu, emptied once it holds maxByGrid.
	byGrid map[gridPlaceKey]*collective.Placement
	// placing holds the placements being built, under placesMu: a search's workers
	// price layouts that share groups, and on a fresh estimator several would place
	// the same group at once (100 000 ranks' siblings, their rail images) where one
	// builds it and the others wait (placeOnce).
	placing map[placeKey]*placing
}

// placing is a placement one worker is building; done closes when p and err are set.
type placing struct {
	done chan struct{}
	p    *collective.Placement
	err  error
}

// errPlacingStopped is what the workers waiting for a placement get if its build
// stopped without an answer (a panic, which the builder's goroutine goes on with).
var errPlacingStopped = errors.New("step: a communication group's placement stopped before it was built")

// placeOnce returns key's placement: the one kept, the one another worker is
// building (waiting for it), or the one build makes, which it keeps.
func (e *Estimator) placeOnce(key placeKey, build func() (*collective.Placement, error)) (*collective.Placement, error) {
	e.placesMu.Lock()
	if p, ok := e.places[key]; ok {
		e.placesMu.Unlock()
		return p, nil
	}
	if b, ok := e.placing[key]; ok {
		e.placesMu.Unlock()
		<-b.done
		return b.p, b.err
	}
	if e.placing == nil {
		e.placing = map[placeKey]*placing{}
	}
	b := &placing{done: make(chan struct{}), err: errPlacingStopped}
	e.placing[key] = b
	e.placesMu.Unlock()
	defer func() {
		e.placesMu.Lock()
		if b.err == nil {
			e.places[key] = b.p
		}
		delete(e.placing, key)
		e.placesMu.Unlock()
		close(b.done)
	}()
	b.p, b.err = build()
	return b.p, b.err
}

// hopMemo is one generation of pipeline hops priced (hopKey → []float64, nil
// where every hop costs hop 0's), replaced once it holds maxHopSets.
type hopMemo struct {
	m sync.Map
	n atomic.Int64
}

// hopKey is what a pipeline's hop prices depend on: hop 0's placement (which
// stands for the cluster, the rank map and the grid's extents), the depth, the
// bytes of one send and whether the wrap-around is a hop.
type hopKey struct {
	pl    *collective.Placement
	p     int
	bytes float64
	wrap  bool
}

const maxHopSets = 1 << 12

// hopMemo is the current generation of priced hops.
func (c *groupCache) hopMemo() *hopMemo {
	return currentGeneration(&c.hops, func() *hopMemo { return &hopMemo{} })
}

// currentGeneration is the memo generation g holds, installing fresh() when it holds
// none; when two workers race, both get the one stored first.
func currentGeneration[T any](g *atomic.Pointer[T], fresh func() *T) *T {
	if m := g.Load(); m != nil {
		return m
	}
	g.CompareAndSwap(nil, fresh())
	return g.Load()
}

// maxDegraded bounds the cached what-if clusters; beyond it they are built per call.
const maxDegraded = 256

type degradeKey struct {
	cl        *topology.Cluster
	gpu       int
	nic, link float64
}

// degradedCluster applies the request's link what-ifs to its cluster at rank 0's
// GPU and node, which lie in every group the estimate prices.
func (e *Estimator) degradedCluster(req Request) (*topology.Cluster, error) {
	gpu := 0
	if req.Ranks != nil {
		gpu = req.Ranks.GPU(0)
	}
	k := degradeKey{req.Cluster, gpu, req.DegradedNICSpeed, req.DegradedLinkSpeed}
	if v, ok := e.degraded.Load(k); ok {
		return v.(*topology.Cluster), nil
	}
	cl := req.Cluster
	var err error
	if s := req.DegradedNICSpeed; s > 0 && s < 1 {
		if cl, err = cl.WithDegradedNICs(cl.Node(gpu), s); err != nil {
			return nil, invalid.Field("degraded_nic_speed", "%v", err)
		}
	}
	if s := req.DegradedLinkSpeed; s > 0 && s < 1 {
		if cl, err = cl.WithDegradedGPULink(gpu, s); err != nil {
			return nil, invalid.Field("degraded_link_speed", "%v", err)
		}
	}
	if e.nDegraded.Add(1) <= maxDegraded {
		v, _ := e.degraded.LoadOrStore(k, cl)
		cl = v.(*topology.Cluster)
	}
	return cl, nil
}

// loadKey is a cluster with its leaves' shares left by other jobs (WithLeafShares).
type loadKey struct {
	cl     *topology.Cluster
	shares string
}

// LoadedCluster is cl.WithLeafShares(shares, what), one cluster per cluster and
// shares (at most maxDegraded of them with the link what-ifs), so that a scheduler
// asking again about the same busy leaves reuses its placements and costs instead
// of adding new ones.
func (e *Estimator) LoadedCluster(cl *topology.Cluster, shares map[int]float64, what string) (*topology.Cluster, error) {
	var b strings.Builder
	for _, leaf := range slices.Sorted(maps.Keys(shares)) {
		fmt.Fprintf(&b, "%d:%x;", leaf, math.Float64bits(shares[leaf]))
	}
	b.WriteString(what)
	k := loadKey{cl, b.String()}
	if v, ok := e.degraded.Load(k); ok {
		return v.(*topology.Cluster), nil
	}
	lc, err := cl.WithLeafShares(shares, what)
	if err != nil {
		return nil, err
	}
	if e.nDegraded.Add(1) <= maxDegraded {
		v, _ := e.degraded.LoadOrStore(k, lc)
		lc = v.(*topology.Cluster)
	}
	return lc, nil
}

// costMemo is one generation of memoised collective estimates. A search prices
// the same collective on the same group for many layouts (every micro-batch size
// and schedule of one TP group shares its TP all-reduce); once a generation holds
// maxMemoCosts entries a fresh one replaces it, so that a long-lived estimator
// serving many models stays bounded.
type costMemo = boundedMemo[costKey, collective.Estimate]

func newCostMemo() *costMemo { return newBoundedMemo[costKey, collective.Estimate]() }

// boundedMemo is one generation of a memo read under a read-write lock; put
// replaces a full generation with a fresh one holding the newest entry.
type boundedMemo[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

func newBoundedMemo[K comparable, V any]() *boundedMemo[K, V] {
	return &boundedMemo[K, V]{m: map[K]V{}}
}

func (b *boundedMemo[K, V]) get(k K) (V, bool) {
	b.mu.RLock()
	v, ok := b.m[k]
	b.mu.RUnlock()
	return v, ok
}

// put stores k → v in b, the generation g held when it was read, or, once b holds
// limit entries, installs in g a fresh generation holding it (unless another
// worker replaced b first).
func (b *boundedMemo[K, V]) put(g *atomic.Pointer[boundedMemo[K, V]], limit int, k K, v V) {
	b.mu.Lock()
	full := len(b.m) >= limit
	if !full {
		b.m[k] = v
	}
	b.mu.Unlock()
	if full {
		fresh := newBoundedMemo[K, V]()
		fresh.m[k] = v
		g.CompareAndSwap(b, fresh)
	}
}

// maxMemoCosts bounds a memo generation: about 200 bytes an entry, so ~13 MB.
const maxMemoCosts = 1 << 16

type costKey struct {
	p     *collective.Placement
	op    uint64 // the collective.Op, and its collective.Reduction shifted by 8, widened: no padding, so that the key hashes and compares as one block
	bytes uint64 // math.Float64bits, for the same reason
	ctas  uint64 // the communicator's maxCTAs (collective.Options.MaxCTAs), widened alike
}

// collCost is e.coll.Estimate with the default options, memoised by (placement,
// operation, bytes). A placement is a group shape on one cluster with the groups
// that share its links, so the key is the operation, the size and the group shape.
func (e *Estimator) collCost(p *collective.Placement, op collective.Op, bytes float64) (collective.Estimate, error) {
	return e.collCostCTAs(p, op, bytes, 0)
}

// collCostCTAs is collCost on a communicator whose NCCL maxCTAs is ctas (0: NCCL's
// default).
func (e *Estimator) collCostCTAs(p *collective.Placement, op collective.Op, bytes float64, ctas int) (collective.Estimate, error) {
	return e.collCostReducing(p, op, bytes, ctas, collective.Sum)
}

// collCostReducing is collCostCTAs for a call that reduces with red
// (collective.Options.Reduction): a maximum of fp32 values runs without NVLS.
func (e *Estimator) collCostReducing(p *collective.Placement, op collective.Op, bytes float64, ctas int, red collective.Reduction) (collective.Estimate, error) {
	memo := e.costs.Load()
	k := costKey{p, uint64(op) | uint64(red)<<8, math.Float64bits(bytes), uint64(ctas)}
	if est, ok := memo.get(k); ok {
		return est, nil
	}
	est, err := e.coll.Estimate(p, op, bytes, collective.Options{MaxCTAs: ctas, Reduction: red})
	if err != nil {
		return est, err
	}
	memo.put(&e.costs, maxMemoCosts, k, est)
	return est, nil
}

// New returns an estimator with the fitted constants.
func New() *Estimator { return NewWith(DefaultConstants(), collective.Default()) }

// NewWith returns an estimator with the given constants.
func NewWith(k Constants, ck collective.Constants) *Estimator {
	e := &Estimator{coll: collective.NewModel(ck), k: k, groupCache: &groupCache{places: map[placeKey]*collective.Placement{}, pipes: NewSchedules()}, notes: map[assumptionKey][]string{}}
	e.costs.Store(newCostMemo())
	return e
}

// Placements is how many communication groups the estimator has placed and keeps
// (a warm-up's work, which later searches on the cluster reuse).
func (e *Estimator) Placements() int {
	e.placesMu.RLock()
	defer e.placesMu.RUnlock()
	return len(e.places)
}

// ShareSchedules makes the estimator compile its pipeline schedules into s, which
// other estimators may share (a service's estimators of different clusters: the
// tables depend on no cluster), instead of its own memo; call it before the
// estimator's first use. It returns e.
func (e *Estimator) ShareSchedules(s *Schedules) *Estimator {
	if s != nil {
		e.groupCache.pipes = s
	}
	return e
}

// WithConstants returns an estimator with other compute constants that shares this
// one's collective model, group placements and collective costs (none of which
// depend on the compute constants).
func (e *Estimator) WithConstants(k Constants) *Estimator {
	return &Estimator{coll: e.coll, k: k, groupCache: e.groupCache, notes: map[assumptionKey][]string{}}
}

// cpMergeBytes is the HBM traffic per output element of one ring-attention step's
// merge of its partial result into the running one: the fp32 accumulator read and
// written (8 B) and the step's bf16 output read (2 B).
const cpMergeBytes = 10

// commExpertData is the placement key of the expert-data-parallel group (the ranks
// that hold the same experts, on the expert grid); its communication is reported as
// DP or ZeRO-3.
const commExpertData = NumComms

// commExpertTP is the placement key of the expert-tensor-parallel group (the ranks
// that split the same experts, on the expert grid); its communication is reported
// as TP.
const commExpertTP = NumComms + 1

// onExpertGrid says the group of placement key c is cut from the expert grid.
func onExpertGrid(c Comm) bool { return c == CommEP || c == commExpertData || c == commExpertTP }

// commAmax is the placement key of Transformer Engine's fp8 amax reduction group
// under Megatron-Core (parallel_state.get_amax_reduction_group with context
// parallelism: the TP × CP × DP ranks of a pipeline stage, fp8AmaxReduce); its
// communication is reported as DP.
const commAmax = NumComms + 2

// placeKey identifies a communication group by what decides it: the ranks the group
// spans and the other ranks of its pipeline stage, whose translates of the group are
// the groups running at the same time — each set as its extents (size and stride),
// canonical (see canonicalExtents) — and, for the pipeline's pairs, the peer's rank
// offset. Layouts that differ only in the pipeline depth, in dimensions of size 1, in
// how a set of ranks is split into dimensions (CP 2 × DP 4096 and DP 8192 with the
// same stride are one group), or in which communication uses the group (ZeRO-3 and
// DP gradients; a TP group and a CP group of the same ranks) share one placement.
type placeKey struct {
	cl    *topology.Cluster
	ranks *RankMap
	group [numDims]extent
	other [numDims]extent
	peer  int // CommPP, CommEmbed: stage 0's peer is rank r + peer
	// from is the rank offset of the sending stage of a pipeline hop
	// (Estimator.hopPlacement): hop h's pairs are stage h's ranks r + from and
	// their peers r + from + peer; 0 for stage 0 and every other group.
	from int
}

// extent is one dimension of a rank grid.
type extent struct{ size, stride int32 }

// groupDims are the grid dimensions of rank 0's group of communication c (none for
// the pipeline's pairs).
func groupDims(c Comm) []Dim {
	switch c {
	case CommTP:
		return []Dim{DimTP}
	case CommCP:
		return []Dim{DimCP}
	case CommEP:
		return []Dim{DimEP} // on the expert grid
	case CommDP, CommZeRO3:
		return []Dim{DimCP, DimEP, DimDP}
	case commExpertData:
		// On the expert grid: the expert-data-parallel ranks of rank 0's expert slot.
		return []Dim{DimDP}
	case commExpertTP:
		return []Dim{DimTP} // on the expert grid
	case commAmax:
		return []Dim{DimTP, DimCP, DimEP, DimDP}
	}
	return nil
}

func (g grid) placeKey(cl *topology.Cluster, rm *RankMap, c Comm) placeKey {
	k := placeKey{cl: cl, ranks: rm}
	dims := groupDims(c)
	i := 0
	for _, d := range dims {
		if g.size[d] > 1 {
			k.group[i] = extent{int32(g.size[d]), int32(g.stride[d])}
			i++
		}
	}
	j := 0
	for _, d := range g.order { // fastest first: a canonical order
		if d != DimPP && g.size[d] > 1 && !slices.Contains(dims, d) {
			k.other[j] = extent{int32(g.size[d]), int32(g.stride[d])}
			j++
		}
	}
	canonicalExtents(k.group[:i])
	canonicalExtents(k.other[:j])
	switch c {
	case CommPP:
		k.peer = g.stride[DimPP]
	case CommEmbed:
		k.peer = (g.size[DimPP] - 1) * g.stride[DimPP]
	}
	return k
}

// canonicalExtents rewrites a list of extents — the ranks Σ cᵢ·strideᵢ, 0 ≤ cᵢ <
// sizeᵢ — in one canonical form of the same set: by stride, each extent that continues
// the one before it (its stride is that one's size × stride) merged into it, the rest
// zeroed. Grid dimensions are nested (a stride is the product of the sizes before it),
// so two lists of one set have the same form. The lists hold at most numDims
// extents of distinct strides: sorted by insertion, which slices.SortFunc also
// does below 12 elements, without its setup and its closure calls (which were
// about half of placeKey's instructions).
func canonicalExtents(es []extent) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].stride < es[j-1].stride; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
	n := 0
	for _, e := range es {
		if n > 0 && es[n-1].size*es[n-1].stride == e.stride {
			es[n-1].size *= e.size
			continue
		}
		es[n] = e
		n++
	}
	clear(es[n:])
}

// domainImages tells whether the groups of key — ranks in grid order on the first
// GPUs — each stay inside one scale-up domain of dom GPUs and repeat from domain to
// domain (collective.PlaceDomainImages): the group's extents lie inside a domain,
// and each other extent of its stage moves a group inside its domain, by whole
// domains, or both (a stride dividing the domain, whole domains in all). Grid
// extents are nested, so those inside a domain together span at most one.
func (k placeKey) domainImages(dom int) bool {
	if k.ranks != nil || k.peer != 0 || k.from != 0 {
		return false
	}
	for _, x := range k.group {
		if x.size > 1 && int(x.size)*int(x.stride) > dom {
			return false
		}
	}
	for _, x := range k.other {
		d, s := int(x.stride), int(x.size)
		switch {
		case s <= 1, d*s <= dom, d%dom == 0:
		case dom%d == 0 && d*s%dom == 0:
		default:
			return false
		}
	}
	return true
}

// gridPlaceKey is what placement's answer is a function of: the cluster, the rank
// map, the grid's sizes and order, and the communication. It is plain memory (no
// strings, floats or padding to speak of), which the map hashes as one block.
type gridPlaceKey struct {
	cl    *topology.Cluster
	ranks *RankMap
	size  [numDims]int
	order [numDims]Dim
	c     Comm
}

// maxByGrid bounds groupCache.byGrid (about 130 bytes an entry).
const maxByGrid = 1 << 16

// placement returns (and caches) the placement of rank 0's group of the given
// communication, with the groups that run at the same time in its pipeline stage.
// A grid and communication seen before find it by gridPlaceKey; others build
// the placeKey, which layouts that place alike share.
func (e *Estimator) placement(cl *topology.Cluster, rm *RankMap, g grid, c Comm) (*collective.Placement, error) {
	gk := gridPlaceKey{cl: cl, ranks: rm, size: g.size, order: g.order, c: c}
	e.placesMu.RLock()
	p, ok := e.byGrid[gk]
	e.placesMu.RUnlock()
	if ok {
		return p, nil
	}
	p, err := e.placementOf(cl, rm, g, c)
	if err != nil {
		return nil, err
	}
	e.placesMu.Lock()
	if e.byGrid == nil || len(e.byGrid) >= maxByGrid {
		e.byGrid = map[gridPlaceKey]*collective.Placement{}
	}
	e.byGrid[gk] = p
	e.placesMu.Unlock()
	return p, nil
}

// placementOf is placement by the group's placeKey.
func (e *Estimator) placementOf(cl *topology.Cluster, rm *RankMap, g grid, c Comm) (*collective.Placement, error) {
	key := g.placeKey(cl, rm, c)
	e.placesMu.RLock()
	p, ok := e.places[key]
	e.placesMu.RUnlock()
	if ok {
		return p, nil
	}
	return e.placeOnce(key, func() (*collective.Placement, error) {
		var sib [][]int
		switch c {
		case CommTP, CommCP, CommEP, CommDP, CommZeRO3, commExpertData, commExpertTP, commAmax:
			dom := cl.DomainGPUs()
			if stage := g.n / g.size[DimPP]; stage > dom && key.domainImages(dom) {
				// Only the groups of the first domain: the others are their images.
				sib = g.siblingsBelow(dom, groupDims(c))
				return collective.PlaceDomainImages(cl, sib[0], sib[1:], stage/len(sib[0]))
			}
			sib = g.siblings(0, groupDims(c), DimPP)
		case CommPP:
			// Stage 0 → stage 1: every rank of stage 0 sends to its peer at once.
			sib = g.stagePairs(0, g.stride[DimPP])
		case CommEmbed:
			sib = g.stagePairs(0, (g.size[DimPP]-1)*g.stride[DimPP])
		}
		return placeGroups(cl, rm, sib)
	})
}

// hopPlacement returns (and caches) the placement of the pipeline's hop h, of
// p = g.size[DimPP]: every rank of stage h sending to its peer in stage h + 1 at
// once, each pair on the links its two GPUs are placed on (a hop inside a scale-up
// domain on NVLink, one across domains on the scale-out fabric). Hop 0 is
// CommPP's placement; hop p − 1, the interleaved schedule's wrap-around from the
// last stage to the first, pairs the ranks CommEmbed pairs (a send/recv exchange
// is one step both ways: collective.SendRecv).
func (e *Estimator) hopPlacement(cl *topology.Cluster, rm *RankMap, g grid, h int) (*collective.Placement, error) {
	p := g.size[DimPP]
	switch {
	case h == 0:
		return e.placement(cl, rm, g, CommPP)
	case h == p-1:
		return e.placement(cl, rm, g, CommEmbed)
	}
	key := g.placeKey(cl, rm, CommPP)
	key.from = h * g.stride[DimPP]
	e.placesMu.RLock()
	pl, ok := e.places[key]
	e.placesMu.RUnlock()
	if ok {
		return pl, nil
	}
	return e.placeOnce(key, func() (*collective.Placement, error) {
		return placeGroups(cl, rm, g.stagePairs(key.from, key.peer))
	})
}

// placeGroups places the grid's groups sib (ranks, mapped to GPUs by rm).
func placeGroups(cl *topology.Cluster, rm *RankMap, sib [][]int) (*collective.Placement, error) {
	if rm != nil {
		for _, grp := range sib {
			for i, r := range grp {
				grp[i] = rm.GPU(r)
			}
		}
	}
	return collective.PlaceGroups(cl, sib) // the grid's groups: disjoint, of one size
}

// stagePairs pairs every rank of the pipeline stage that starts at rank from (0:
// stage 0; a multiple of the pipeline's stride) with the rank peer ranks on, in
// rank order; the pairs share one array (50 000 of them on 100 000 GPUs). Stage 0's
// ranks are walked in ascending order over the other dimensions (grid.next), none
// of the other stages' visited, and moved to the stage by from.
func (g grid) stagePairs(from, peer int) [][]int {
	stage := g.n / g.size[DimPP]
	var free [numDims]Dim
	nf := 0
	for _, d := range g.order {
		if d != DimPP && g.size[d] > 1 {
			free[nf] = d
			nf++
		}
	}
	flat := make([]int, 2*stage)
	out := make([][]int, stage)
	if g.stride[DimPP] == stage {
		// The pipeline is the slowest dimension: stage 0 is ranks 0 … stage−1, in the
		// order grid.next walks them.
		for i := range out {
			a := flat[2*i : 2*i+2 : 2*i+2]
			a[0], a[1] = from+i, from+i+peer
			out[i] = a
		}
		return out
	}
	var c [numDims]int
	r := 0
	for i := range out {
		a := flat[2*i : 2*i+2 : 2*i+2]
		a[0], a[1] = from+r, from+r+peer
		out[i] = a
		r = g.next(r, free[:nf], &c)
	}
	return out
}

// Estimate prices one training step.
func (e *Estimator) Estimate(req Request) (Result, error) { return e.estimateCached(&req, true, nil) }

// Quick is Estimate without the communication table, warnings and assumptions: the
// same step time, breakdown, memory and throughput, for searches that rank many
// layouts and describe only a few.
func (e *Estimator) Quick(req Request) (Result, error) { return e.estimateCached(&req, false, nil) }

// Memory is the peak per-GPU memory of a layout, as Estimate reports it, without
// timing the step: a search can set aside the layouts that do not fit, or that a
// plan in hand beats on both time and memory, before pricing them.
func (e *Estimator) Memory(req Request) (Memory, error) {
	req = normalise(req)
	if err := validate(&req); err != nil {
		return Memory{}, err
	}
	return e.memoryOfValid(req), nil
}

// MemoryOfValid is Memory for a request its caller vouches for: one that Memory
// would accept (a search that validated its request once and builds its layouts by
// the rules validate checks). It skips validate, a third of Memory's work; a
// request that breaks a rule gives a meaningless figure, not an error, so anything
// priced after must still go through Estimate or Quick, which validate.
func (e *Estimator) MemoryOfValid(req Request) Memory { return e.memoryOfValid(normalise(req)) }

// MemoryBasis is what MemoryOfValidWith needs of a model and training that are the
// same for all their layouts: the training normalised and the model's parameter
// counts (a walk over its layers). It is read only once made, so the goroutines
// of a search may share it.
type MemoryBasis struct {
	training, normalised Training
	spWithTP             bool
	params               model.Params
}

// NewMemoryBasis is the MemoryBasis of req's model and training.
func NewMemoryBasis(req Request) *MemoryBasis {
	t := req.Training.Normalise()
	return &MemoryBasis{training: req.Training, normalised: t, spWithTP: sequenceParallelWithTP(t), params: req.Model.Params()}
}

// MemoryOfValidWith is MemoryOfValid with the model's and training's part
// computed once: b is NewMemoryBasis of a request of the same model (the caller
// vouches for it) and training (checked: another training, or a nil b, gives
// MemoryOfValid).
func (e *Estimator) MemoryOfValidWith(req Request, b *MemoryBasis) Memory {
	if b == nil || b.training != req.Training {
		return e.MemoryOfValid(req)
	}
	req.Training = b.normalised
	normaliseLayout(&req, b.spWithTP)
	return e.memoryOfValidWith(&req, &b.params)
}

// memoryOfValid is Memory of a normalised, valid request.
func (e *Estimator) memoryOfValid(req Request) Memory { return e.memoryOfValidWith(&req, nil) }

// memoryOfValidWith is memoryOfValid with the model's parameter counts p (nil:
// counted here). It only reads *req (by address: a search checks the memory of
// thousands of layouts, and a request is 648 bytes).
func (e *Estimator) memoryOfValidWith(req *Request, p *model.Params) Memory {
	l := &req.Layout
	stageLayers := stageLayerCount(req.Model.Layers, &req.Layout)
	var dense, expert float64
	if p == nil {
		dense, expert = e.stageParams(req, stageLayers)
	} else {
		dense, expert = stageParamsOf(req, p, stageLayers)
	}
	return e.memoryWith(req, p, stageLayers, dense, expert, req.Training.GlobalBatch/(l.DP*l.MicroBatch))
}

// QuickCached is Quick with the layers' and the output layer's compute times taken
// from c, and kept there, when c holds the times of this estimator, model,
// training and cluster (BoundsCache.ResetFor, as a search's enumeration leaves its
// caches); otherwise c is not used. The times are the same function of the same
// inputs (the cache's keys), so the answer is Quick's (TestQuickCachedIsQuick); a
// search that bounded its layouts with c prices them without timing their layers
// again. c must not be used by another goroutine meanwhile.
func (e *Estimator) QuickCached(req Request, c *BoundsCache) (Result, error) {
	return e.estimateCached(&req, false, c)
}

// estimateCached runs the step model's phases in order, with the compute times of c
// (see QuickCached; nil: none), the request read by address (Estimate and Quick
// pass their own copy's: a request is about 1 kB). Each phase reads what the
// earlier ones settled, and the order matters: the slow-GPU what-if stretches the
// compute only once the pipeline's fill and drain are priced, and the contention
// adds up the communication that every earlier phase hid under compute.
func (e *Estimator) estimateCached(req *Request, detail bool, c *BoundsCache) (Result, error) {
	p := pricing{e: e, detail: detail}
	if c != nil && !c.holdsLayersOf(e, req) {
		c = nil
	}
	if err := p.resolve(req); err != nil {
		return Result{}, err
	}
	if c != nil && p.req.Cluster == req.Cluster { // not a degraded copy of it
		p.cache = c
	}
	p.computeMicroBatch()
	if err := p.microBatchComm(); err != nil {
		return Result{}, err
	}
	if err := p.pipeline(); err != nil {
		return Result{}, err
	}
	p.slowStage()
	p.holdParams()
	if err := p.dataParallel(); err != nil {
		return Result{}, err
	}
	if err := p.tiedEmbedding(); err != nil {
		return Result{}, err
	}
	if err := p.mlaGradSync(); err != nil {
		return Result{}, err
	}
	if err := p.fp8AmaxReduce(); err != nil {
		return Result{}, err
	}
	p.optimizer()
	p.assemble()
	p.memory()
	p.throughput()
	if detail {
		p.explain()
	}
	return p.res, nil
}

// pricing is one estimate in progress: what its phases share, and the result they
// fill in. It lives on estimate's stack, so that a search's many estimates
// allocate nothing beyond a detailed answer's communication table.
type pricing struct {
	e      *Estimator
	req    Request // normalised, validated, link what-ifs applied
	rates  gpuRates
	detail bool // list the communications, warnings and assumptions
	g      grid // the dense rank grid
	eg     grid // the expert rank grid (MoE parallel folding)
	res    Result

	// cache holds the layers' compute times of this estimator, model, training
	// and cluster (QuickCached), or is nil.
	cache *BoundsCache
	// placed are the placements commOn found, by the communication placed (its
	// grid, cluster and rank map are the pricing's): an estimate prices several
	// collectives on one group (ZeRO-3's gather and reduce-scatter, TP's pair,
	// the ring's passes), and each lookup in the estimator's map builds and hashes
	// a key and takes its lock.
	placed [commAmax + 1]*collective.Placement

	// One micro-batch on one GPU: the compute of the slowest stage, micro-batches
	// per replica (mf), the stage's layers, the sequence length, the tokens of the
	// micro-batch on this GPU, the hidden size and the TP degree.
	parts                        computeParts
	mf, layers, s, tokens, h, tf float64
	// fwd, bwd and rc are the micro-batch's forward, backward and recomputation
	// through the slowest stage; slowStage stretches them.
	fwd, bwd, rc float64

	// Communication of one micro-batch that no compute hides (TP, CP, EP), and the
	// communication that runs under compute, whose kernels slow it (contention).
	tpPerMB, cpPerMB, epPerMB float64
	// commFwd and commRc are the forward pass's and the recomputed forward's part
	// of tpPerMB + cpPerMB + epPerMB (passShare); the backward's is the rest.
	// ZeRO-3's windows take each pass's own (zero3Overlap).
	commFwd, commRc float64
	hiddenPerMB     float64
	// sharedSidePerMB are the TP collectives of overlapped shared experts
	// (Layout.OverlapSharedExpert) in one micro-batch: inside tpPerMB, on the
	// shared experts' own stream, which expertParallel runs under the all-to-alls.
	sharedSidePerMB float64
	// stepCopyFwd and stepCopyBwd are FSDP2's copies on the compute stream where it
	// gathers and reduces outside the per-layer ZeRO-3 pattern (fsdp2StepCopies).
	stepCopyFwd, stepCopyBwd float64
	// tpContPerMB is what TP comm-GEMM overlap slows one micro-batch's compute by
	// (tpOverlap): its kernels' SMs, and the GEMMs run beside a pipelined
	// reduce-scatter on the SMs left to them.
	tpContPerMB float64
	// tpSlackUsed is the host's slack the overlapped TP collectives take per
	// layer and pass (tpOverlapSlack), which the ring's sends cannot take again.
	tpSlackUsed [2][2]float64

	// The pipeline's exposed sends and its bubble, per step.
	ppExposed, bubble float64

	// The slowest stage's dense and expert parameters, the ranks that hold a copy
	// of each, and the group the expert copies reduce over.
	stageParams, expertParams float64
	denseShard, expertShard   int
	// matmulDense and matmulExpert are stageParams' and expertParams' matmul
	// weights, set with fp8 weights only (weightBytes).
	matmulDense, matmulExpert float64
	expertGroup               Comm

	// Exposed data-parallel and ZeRO-3 communication, per step.
	dpExposed, z3Exposed float64
	// tpPerStep is TP communication once a step (mlaGradSync).
	tpPerStep float64
}

// resolve fills the request's defaults, checks it, applies its link what-ifs to the
// cluster and finds the GPU's compute rates, so that every later phase can trust
// the request and price on the cluster as the what-if has it. It copies the request
// once, into p.req, and works on the copy there (a request is about 1 kB).
func (p *pricing) resolve(in *Request) error {
	e := p.e
	p.req = *in
	req := &p.req
	normaliseIn(req)
	if err := validate(req); err != nil {
		return err
	}
	if (req.DegradedNICSpeed > 0 && req.DegradedNICSpeed < 1 || req.DegradedLinkSpeed > 0 && req.DegradedLinkSpeed < 1) && req.Cluster.Degraded == "" {
		dc, err := e.degradedCluster(*req)
		if err != nil {
			return err
		}
		req.Cluster = dc
	}
	gpu := req.Cluster.GPU()
	rates, ok := e.k.rates(gpu, req.Training.Precision)
	if !ok {
		return e.Supports(gpu, req.Training.Precision)
	}
	if rates.fp8 {
		if err := SupportsFP8Recipe(gpu, req.Training.FP8Recipe); err != nil {
			return err
		}
	}
	p.rates = rates
	return nil
}

// computeMicroBatch sets the shape of one micro-batch on one GPU and times the
// slowest pipeline stage's compute for it: the communication phases price their
// messages from that shape and hide what they can under that compute.
func (p *pricing) computeMicroBatch() {
	a, t, l := &p.req.Model, &p.req.Training, &p.req.Layout
	p.g, _ = newGrid(l)
	p.eg = p.g.expertGrid(l)
	p.res.Layout, p.res.Training = *l, *t
	if p.detail {
		p.res.Comms = make([]CommCall, 0, 8)
	}
	p.res.GPUs = p.g.n
	m := t.GlobalBatch / (l.DP * l.MicroBatch) // micro-batches per replica
	p.res.MicroBatches = m
	p.mf = float64(m)
	b := float64(l.MicroBatch)
	p.s = float64(t.SeqLen)
	sLocal := p.s / float64(l.CP)
	p.tokens = b * sLocal // tokens of one micro-batch on one GPU
	p.tf = float64(l.TP)
	p.h = float64(a.Hidden)

	p.e.computeInto(&p.parts, &p.req, &p.rates, p.tokens, sLocal, p.s, p.cache)
	p.fwd, p.bwd, p.rc = p.parts.fwd, p.parts.bwd, p.parts.rc
	p.layers = float64(p.parts.stageLayers)
	p.res.StageLayers = p.parts.stageLayers
}

// comm prices a communication of kind c on its own group; see commOn.
func (p *pricing) comm(c Comm, op collective.Op, bytes float64, perStep float64, when string) (float64, error) {
	return p.commOn(c, c, op, bytes, perStep, when)
}

// commOn prices a communication of kind c on the group that place names (the
// kind's own group, or commExpertData for expert parameters): the seconds of one
// call, which the detailed answer also lists with how often the step runs it.
func (p *pricing) commOn(c, place Comm, op collective.Op, bytes float64, perStep float64, when string) (float64, error) {
	return p.commOnCTAs(c, place, op, bytes, perStep, when, p.groupMaxCTAs(place))
}

// groupMaxCTAs is the NCCL maxCTAs of the process group place names, 0 for NCCL's
// default: the data-parallel group's (Training.DPMaxCTAs, Megatron-Core's "dp" and
// "dp_cp" communicators, which also carry ZeRO-3's gathers), and the
// tensor-parallel group's (Training.TPMaxCTAs) where NCCL runs the TP collectives —
// not under TP overlap, whose transfers userbuffers or symmetric memory move.
func (p *pricing) groupMaxCTAs(place Comm) int {
	switch place {
	case CommDP, CommZeRO3:
		return p.req.Training.DPMaxCTAs
	case CommTP:
		if !p.req.Layout.OverlapTP {
			return p.req.Training.TPMaxCTAs
		}
	}
	return 0
}

// commOnCTAs is commOn on a communicator whose NCCL maxCTAs is ctas (0: NCCL's
// default).
func (p *pricing) commOnCTAs(c, place Comm, op collective.Op, bytes float64, perStep float64, when string, ctas int) (float64, error) {
	return p.commReducing(c, place, op, bytes, perStep, when, ctas, collective.Sum)
}

// commReducing is commOnCTAs for a call that reduces with red: Transformer
// Engine's amax all-reduces take the maximum of fp32 amaxes
// (collective.MaxFloat32), which NCCL runs without NVLS.
func (p *pricing) commReducing(c, place Comm, op collective.Op, bytes float64, perStep float64, when string, ctas int, red collective.Reduction) (float64, error) {
	if err := messageFits(c, op, bytes); err != nil {
		return 0, err
	}
	pl := p.placed[place]
	if pl == nil {
		g := p.g
		if onExpertGrid(place) {
			g = p.eg
		}
		var err error
		if pl, err = p.e.placement(p.req.Cluster, p.req.Ranks, g, place); err != nil {
			return 0, err
		}
		p.placed[place] = pl
	}
	est, err := p.e.collCostReducing(pl, op, bytes, ctas, red)
	if err != nil {
		return 0, err
	}
	if !p.detail {
		return est.TimeUs * 1e-6, nil
	}
	p.res.Comms = append(p.res.Comms, CommCall{
		Kind: c, KindName: c.String(), Op: op.String(), Group: pl.N(), Nodes: pl.Domains, Concurrent: pl.Concurrent,
		Bytes: bytes, Algorithm: est.Algo.String(), Protocol: est.Protocol.String(), TimeUs: est.TimeUs,
		PerStep: perStep, When: when,
	})
	return est.TimeUs * 1e-6, nil
}

// microBatchComm prices the tensor-, context- and expert-parallel communication of
// one micro-batch: it runs inside every micro-batch's pass through a stage, so what
// compute does not hide lengthens each of them, and the bubble with them.
func (p *pricing) microBatchComm() error {
	var err error
	if p.tpPerMB, err = p.tensorParallel(); err != nil {
		return err
	}
	if p.cpPerMB, err = p.contextParallel(); err != nil {
		return err
	}
	p.epPerMB, err = p.expertParallel()
	return err
}

// tensorParallel is the exposed time of one micro-batch's TP collectives: two per
// layer forward and two backward, around the attention and the MLP, and the forward
// ones again where the layer is recomputed.
func (p *pricing) tensorParallel() (float64, error) {
	l := &p.req.Layout
	if l.TP <= 1 {
		return 0, nil
	}
	layers, mf := p.layers, p.mf
	act := p.tokens * p.h * 2
	nFwd := 2 + l.tpRepeats(p.parts.stageLayers)
	var per float64
	var overlapAG, overlapRS, overlapAG8, overlapRS8 float64 // with TP overlap: the collectives the GEMMs hide (tpOverlap)
	overlapped := false
	var denseAG, denseRS, denseAR float64 // one dense collective of s·b·h (mlaTensorParallel)
	if l.SP {
		agBytes, agWhen := act, "per layer: 2 forward, 2 backward, and forward ones again where recomputed"
		if !l.OverlapTP {
			if fw, err := framework.Get(p.req.Training.Framework); tpFP8AllGathers(fw, err, p.rates.fp8) {
				agBytes, agWhen = act/2, "per layer: 2 forward, 2 backward, and forward ones again where recomputed, in fp8 (Transformer Engine gathers the quantized norm output and output gradient)"
			}
		}
		ag, err := p.comm(CommTP, collective.AllGather, agBytes, layers*(nFwd+2)*mf, agWhen)
		if err != nil {
			return 0, err
		}
		rs, err := p.comm(CommTP, collective.ReduceScatter, act, layers*(nFwd+2)*mf, "per layer: 2 forward, 2 backward, and forward ones again where recomputed")
		if err != nil {
			return 0, err
		}
		if l.OverlapTP {
			overlapAG, overlapRS, overlapped = ag, rs, true
			overlapAG8, overlapRS8 = ag, rs
			if ub, rsFP8 := tpUserbuffers(p.req.Training.Framework); ub && p.rates.fp8 {
				// Transformer Engine's userbuffers all-gather fp8 under fp8 training
				// (initialize_ub: fp8_buf for every all-gather overlap).
				if overlapAG8, err = p.comm(CommTP, collective.AllGather, act/2, layers*(nFwd+2)*mf, "the same all-gathers in fp8 (Transformer Engine's userbuffers, TP overlap)"); err != nil {
					return 0, err
				}
				if rsFP8 {
					if overlapRS8, err = p.comm(CommTP, collective.ReduceScatter, act/2, layers*(1+nFwd/2)*mf, "the forward reduce-scatters in fp8 (the framework's pipelined userbuffers, TP overlap)"); err != nil {
						return 0, err
					}
				}
			}
		}
		if l.OverlapTP && userbuffersOn(p.req.Training.Framework) {
			// Backward, Transformer Engine gathers the input and up projections'
			// inputs again for their weight gradients, in bulk beside their data
			// gradients (ub_bulk_dgrad: layernorm_linear.py and layernorm_mlp.py,
			// _LayerNormLinear.backward, copy_into_buffer(ln_out, ..., local_chunk=True)
			// then the data-gradient GEMM with bulk_overlap, TransformerEngine v2.2
			// c55e425; Megatron-Core passes tp_comm_bulk_dgrad, default true,
			// extensions/transformer_engine.py at 7094270); the buffer holds the
			// quantized input, fp8 under fp8. Priced in tpOverlap at overlapAG8.
			b, when := act, "per layer: the input and up projections' inputs gathered again for their weight gradients, backward (Transformer Engine's bulk userbuffers overlap, TP overlap)"
			if p.rates.fp8 {
				b, when = act/2, when+", in fp8"
			}
			// Two a dense layer, one a MoE layer's attention under the token
			// dispatcher (and one its shared experts' MLP without their overlap):
			// the dense collectives' share (tpMoEShare).
			if _, err := p.comm(CommTP, collective.AllGather, b, layers*2*mf*tpMoEShare(&p.req, p.parts.nDense, p.parts.nMoE), when); err != nil {
				return 0, err
			}
		}
		// Each all-reduce becomes an all-gather and a reduce-scatter of the same total.
		per = (ag + rs) * (nFwd + 2)
		denseAG, denseRS = ag, rs
	} else {
		ar, err := p.comm(CommTP, collective.AllReduce, act, layers*(nFwd+2)*mf, "per layer: 2 forward, 2 backward, and forward ones again where recomputed")
		if err != nil {
			return 0, err
		}
		per = ar * (nFwd + 2)
		denseAR = ar
	}
	// Multi-head latent attention's collectives as the framework runs them.
	mla, err := p.mlaTensorParallel(denseAG, denseRS, denseAR)
	if err != nil {
		return 0, err
	}
	tpPerMB := per * layers
	var expertTP float64 // the dispatcher's expert-TP collectives and the overlapped shared experts' gathers, which async TP does not overlap
	if nDense, nMoE := p.parts.nDense, p.parts.nMoE; l.moeDispatcher() && nMoE > 0 {
		// The MoE layers' MLP half has no TP collectives of its own: each rank
		// routes its own sequence-parallel share of the tokens (Megatron-Core's
		// all-to-all dispatcher); the expert-TP group gathers them below. Shared
		// experts split over TP are a dense MLP on the whole sequence and gather
		// it (sharedExpertsTP): without their overlap, those of a dense MLP half.
		tpPerMB *= tpMoEShare(&p.req, nDense, nMoE)
		if side, err := p.sharedExpertSideTP(); err != nil {
			return 0, err
		} else if side > 0 {
			p.sharedSidePerMB = side
			expertTP += side
		}
		if et := l.etp(); et > 1 {
			// megatron/core/transformer/moe/token_dispatcher.py (MoEAlltoAllTokenDispatcher):
			// after the all-to-all the expert-TP group all-gathers the dispatched
			// tokens and reduce-scatters the experts' output before the combine;
			// backward the reverse. The gathered tensor is ETP × this rank's routed
			// tokens (its share, k copies, the busiest rank's load).
			t := &p.req.Training
			x := p.tokens / p.tf * float64(p.req.Model.MoE.TopK) * p.h * 2 * t.moeLoad(l.EP) * float64(et)
			n := 2 + p.moeRepeats()
			ag, err := p.commOn(CommTP, commExpertTP, collective.AllGather, x, nMoE*n*mf, "per MoE layer: expert-TP all-gather of the dispatched tokens forward (again where recomputed), and of the output gradient backward")
			if err != nil {
				return 0, err
			}
			rs, err := p.commOn(CommTP, commExpertTP, collective.ReduceScatter, x, nMoE*n*mf, "per MoE layer: expert-TP reduce-scatter of the experts' output forward (again where recomputed), and of the input gradient backward")
			if err != nil {
				return 0, err
			}
			expertTP += n * (ag + rs) * nMoE
		}
	}
	if overlapped {
		// Comm-GEMM overlap (Megatron-LM/NeMo --tp-comm-overlap with Transformer
		// Engine's userbuffers, torch async TP): each all-gather feeds, and each
		// reduce-scatter follows, one GEMM split into tp chunks along the tokens, and
		// the ring exchange moves one chunk while the GEMM computes on another, so a
		// collective of time C beside a GEMM of time G exposes max(0, C − (t−1)/t·G)
		// (tpOverlap); what is hidden still takes SMs (the contention). The token
		// dispatcher's expert-TP gathers feed the permutation, not a GEMM
		// that could overlap them (Transformer Engine's userbuffers overlap the
		// linear layers' collectives): they stay exposed, as do the overlapped
		// shared experts' explicit gathers (their modules' userbuffers are off,
		// shared_experts.py). tpOverlap prices a MoE layer's attention half, and
		// the shared experts' MLP without their overlap, itself: what it exposes,
		// hides and slows is not scaled by the MoE share again.
		ub, _ := tpUserbuffers(p.req.Training.Framework)
		exposed, passExposed, hid, cont, used := tpOverlapSlack(&p.req.Layout, &p.parts, tpOverlapIn{ag: overlapAG, rs: overlapRS, ag8: overlapAG8, rs8: overlapRS8,
			sms: p.rates.sms, userbuffers: ub,
			smShare:      commSMs(p.req.Training.Framework) / max(1, p.rates.sms),
			agFwdUnfused: fp8AllGatherUnfused(ub, p.rates.fp8, p.req.Training.FP8Recipe),
			sharedHalf:   newSharedHalf(&p.req)})
		p.res.Breakdown.Hidden[CommTP] = hid * mf
		p.tpContPerMB, p.tpSlackUsed = cont, used
		// MLA's own collectives stay exposed (the overlap above is the dense
		// layer's); a collective MLA does not run is not taken from it.
		amax, err := p.tpAmaxReduce()
		if err != nil {
			return 0, err
		}
		f, r := passShare(2, nFwd-2, 2)
		ef, er := passShare(1, p.moeRepeats(), 1)
		other := max(0, mla) + amax
		p.commFwd += passExposed[0] + expertTP*ef + other*f
		p.commRc += passExposed[1] + expertTP*er + other*r
		return exposed + expertTP + max(0, mla) + amax, nil
	}
	amax, err := p.tpAmaxReduce()
	if err != nil {
		return 0, err
	}
	// Each forward collective has its backward counterpart (an all-gather's is a
	// reduce-scatter of the same size, an all-reduce's an all-reduce): two a layer
	// each way, the recomputed forward's nFwd − 2.
	f, r := passShare(2, nFwd-2, 2)
	ef, er := passShare(1, p.moeRepeats(), 1)
	p.commFwd += (tpPerMB+mla+amax)*f + expertTP*ef
	p.commRc += (tpPerMB+mla+amax)*r + expertTP*er
	return tpPerMB + expertTP + mla + amax, nil
}

// passShare is the forward pass's share f and the recomputed forward's r of
// communication run nf times in the forward, nr in the recomputed forward and nb
// in the backward, each time alike.
func passShare(nf, nr, nb float64) (f, r float64) {
	if n := nf + nr + nb; n > 0 {
		return nf / n, nr / n
	}
	return 0, 0
}

// tpAmaxReduce is the exposed time of one micro-batch's amax all-reduces under
// Transformer Engine's per-tensor current scaling with sequence parallelism. A
// sequence-parallel rank holds only its share of the tokens, so the scale of a
// tensor that is gathered over the TP group must come from the amax of the whole
// tensor: Transformer Engine sets with_amax_reduction over the TP group on the
// input quantizer of every column-parallel linear module and on the output-gradient
// quantizer of every row-parallel one (module/linear.py, layernorm_linear.py,
// layernorm_mlp.py at v2.8: _customize_quantizers_float8_current_scaling, "if
// self.sequence_parallel and self.parallel_mode == \"column\"" forward, "== \"row\""
// backward). The quantizer computes the amax, all-reduces it (MAX) and only then
// computes the scale and casts (csrc/quantizer.cpp, Float8CurrentScalingQuantizer::
// quantize_impl: amax kernel, amax_reduction_group->allreduce(...)->wait(), scale,
// cast): one all-reduce of one fp32 per such module, forward and backward, between
// two kernels of the compute stream, which waits for it. Per layer: the attention's
// fused QKV projection (the two up-projections under multi-head latent attention)
// and the dense MLP's first linear forward, the attention's output projection and
// the MLP's second linear backward; an MoE layer's routed experts run without TP
// (their grouped linear modules have no parallel mode), its shared experts as a
// dense MLP. Forward ones again where the layer is recomputed. The delayed recipe
// reduces its amaxes once per micro-batch instead (fp8AmaxReduce); the block-scaled
// recipes find their scales inside the cast.
func (p *pricing) tpAmaxReduce() (float64, error) {
	l, t, a := &p.req.Layout, &p.req.Training, &p.req.Model
	if !p.rates.fp8 || t.FP8Recipe != FP8Current || !l.SP || l.TP <= 1 {
		return 0, nil
	}
	if fw, err := framework.Get(t.Framework); err != nil || !fw.TELayers {
		return 0, nil
	}
	attnCol := 1.0
	if a.MLA != nil {
		attnCol = 2
	}
	mlp := 1.0 // the MLP's column-parallel (forward) and row-parallel (backward) modules
	moeMLP := 0.0
	if a.MoE != nil && a.MoE.SharedExperts > 0 && !l.OverlapSharedExpert {
		// Overlapped shared experts' modules run with parallel_mode None
		// (shared_experts.py): no amax reduction of theirs.
		moeMLP = 1
	}
	nDense, nMoE := p.parts.nDense, p.parts.nMoE
	fwd := nDense*(attnCol+mlp) + nMoE*(attnCol+moeMLP)
	bwd := nDense*(1+mlp) + nMoE*(1+moeMLP)
	fwd *= 1 + l.tpRepeats(p.parts.stageLayers)/2
	n := fwd + bwd
	if n == 0 {
		return 0, nil
	}
	// Transformer Engine's Float8CurrentScalingQuantizer all-reduces its fp32 amax
	// with c10d::ReduceOp::MAX (transformer_engine/pytorch/csrc/quantizer.cpp at
	// ad3f651): a call NCCL has no NVLS kernel for.
	ar, err := p.commReducing(CommTP, CommTP, collective.AllReduce, fp32Bytes, n*p.mf, "per layer: Transformer Engine's amax all-reduce under current scaling with sequence parallelism, one per column-parallel module forward and per row-parallel module backward", p.groupMaxCTAs(CommTP), collective.MaxFloat32)
	if err != nil {
		return 0, err
	}
	return ar * n, nil
}

// contextParallel is the exposed time of one micro-batch's CP communication: the
// all-to-alls of Ulysses wait on the critical path, while ring attention passes
// K/V blocks under the attention steps they feed.
func (p *pricing) contextParallel() (float64, error) {
	a, l := &p.req.Model, &p.req.Layout
	if l.CP <= 1 {
		return 0, nil
	}
	h, tf, layers, mf := p.h, p.tf, p.layers, p.mf
	// Attention widths relative to the hidden size: queries, keys and values
	// together, the attention output.
	qw, kvw, vw := float64(a.QDim())/h, float64(a.KVSavedDim())/h, float64(a.VOutDim())/h
	if l.CPAllToAll {
		// Ulysses: before and after attention, all-to-alls re-split Q, K, V and the
		// output from sequence to heads — 4 per layer forward, 4 backward, exposed.
		x := p.tokens * h * (qw + kvw + vw) / (ulyssesAllToAllsPerPass * tf) * 2 // Q, K, V and the output in 16 bits: the mean per call
		a2a, err := p.comm(CommCP, collective.AllToAll, x, layers*ulyssesAllToAllsPerLayer*mf, "per layer: 4 all-to-alls forward, 4 backward (Ulysses)")
		if err != nil {
			return 0, err
		}
		p.commFwd += a2a * ulyssesAllToAllsPerPass * layers
		return a2a * ulyssesAllToAllsPerLayer * layers, nil
	}
	ring := ringAttention(*l, &p.parts, p.tokens, h, kvw, qw+vw, tf, p.rates.hbm, p.req.Training.Framework)
	ring.withSlack(&p.parts, p.tpSlackUsed)
	var c ringPrices
	var err error
	if ring.gather {
		if c.gather, err = p.comm(CommCP, collective.AllGather, ring.cp*ring.block, layers*(2+ring.rc)*mf, "per layer: the K/V blocks of every rank gathered forward (again where recomputed) and backward (PyTorch's context_parallel)"); err != nil {
			return 0, err
		}
		c.grad, err = p.comm(CommCP, collective.SendRecv, ring.gradBlock, layers*ring.cp*mf, "per layer: CP fp32 dK/dV block passes backward (PyTorch's context_parallel)")
	} else {
		c.p2p, err = p.commOnCTAs(CommCP, CommCP, collective.SendRecv, ring.block, layers*ring.passes*mf, "per layer: CP−1 K/V block passes forward (again where recomputed), CP−1 K/V and CP−1 dK/dV passes backward (the last dK/dV one home under the last step)", p.req.Training.CPMaxCTAs)
	}
	if err != nil {
		return 0, err
	}
	exp, hid, idle, pass := ring.perMBSplit(c)
	p.commFwd, p.commRc = p.commFwd+pass[0], p.commRc+pass[1]
	share := 1.0
	if !ring.gather {
		share = cpSMShare(p.req.Training)
	}
	// What runs while the GPU waits for the host takes no SMs from compute.
	p.hiddenPerMB += hid * share
	p.res.Breakdown.Hidden[CommCP] = (hid + idle) * mf
	return exp, nil
}

// cpSMShare is the share of the framework's communication SMs (commSMs) the ring
// attention's K/V sends take: all of them, or their maxCTAs' worth where the CP
// group caps its thread blocks below them (Training.CPMaxCTAs) — the contention a
// hidden send adds to the compute under it is counted in those SMs. (The capped
// sends are Transformer Engine's ring; PyTorch's gathers its blocks instead.)
func cpSMShare(t Training) float64 {
	sms := commSMs(t.Framework)
	if t.CPMaxCTAs <= 0 || float64(t.CPMaxCTAs) >= sms {
		return 1
	}
	return float64(t.CPMaxCTAs) / sms
}

// expertParallel is the exposed time of one micro-batch's MoE dispatch and combine
// all-to-alls, which the busiest expert-parallel rank paces.
func (p *pricing) expertParallel() (float64, error) {
	a, t, l := &p.req.Model, &p.req.Training, &p.req.Layout
	nMoE := p.parts.nMoE
	if l.EP <= 1 || nMoE <= 0 {
		return 0, nil
	}
	// The busiest rank receives (and returns) moeLoad × the mean routed tokens.
	k := float64(a.MoE.TopK)
	x := p.tokens * k * p.h * 2 * t.moeLoad(l.EP)
	if l.moeDispatcher() {
		x /= p.tf // each TP rank routes its sequence-parallel share
	}
	dispatch, combine := x, x
	fw, _ := framework.Get(t.Framework)
	if t.MoEDispatcher == DispatchDeepEP {
		pl, err := p.e.placement(p.req.Cluster, p.req.Ranks, p.eg, CommEP)
		if err != nil {
			return 0, err
		}
		// One copy per node a token reaches crosses the network, and the node
		// forwards it to its experts over NVLink: the network carries
		// reach/k of the per-expert copies.
		if nodes := pl.Domains; nodes > 1 {
			f := moeNodeReach(a.MoE.TopK, nodes, a.MoE.Groups, a.MoE.TopKGroups) / k
			dispatch, combine = x*f, x*f
		}
		if p.rates.fp8 && fw.FP8Dispatch {
			dispatch *= fp8DispatchBytes / 2
		}
	}
	n := 2 + p.moeRepeats()
	var d, c float64
	var err error
	if combine == dispatch {
		if d, err = p.comm(CommEP, collective.AllToAll, dispatch, 2*nMoE*n*p.mf, "per MoE layer: dispatch and combine forward (again where recomputed) and backward"); err != nil {
			return 0, err
		}
		c = d
	} else {
		if d, err = p.comm(CommEP, collective.AllToAll, dispatch, nMoE*n*p.mf, "per MoE layer: dispatch forward (again where recomputed), and the output gradient's backward"); err != nil {
			return 0, err
		}
		if c, err = p.comm(CommEP, collective.AllToAll, combine, nMoE*n*p.mf, "per MoE layer: combine forward (again where recomputed), and the input gradient's backward"); err != nil {
			return 0, err
		}
	}
	epPerMB := n * (d + c) * nMoE
	if l.OverlapEP || l.Schedule == DualPipe {
		// A micro-batch's all-to-alls run under the compute of the chunk paired with
		// it — one micro-batch's forward with another's backward (Megatron-Core's
		// overlapped MoE all-to-all merges them; DualPipe's F&B chunks, DeepSeek-V3
		// Fig. 4) —; what outlasts that compute stays exposed. The forward chunks of
		// the warm-up and the backward chunks of the cool-down have no partner: on
		// the first stage P − 1 of each under 1F1B (one with PP 1), P − 2 under
		// DualPipe (its step 1, deepseek-ai/DualPipe), out of the M micro-batches;
		// under the interleaved schedule the first stage's warm-up chunks
		// (interleavedOverlapWarmup), a v-th of a micro-batch each.
		unpaired := max(1, float64(l.PP-1))
		switch {
		case l.Schedule == DualPipe:
			unpaired = max(1, float64(l.PP-2))
		case l.Schedule == Interleaved && l.PP > 1:
			v := max(1, l.VirtualStages)
			unpaired = float64(interleavedOverlapWarmup(l.PP, v)) / float64(v)
		}
		u := min(1, unpaired/p.mf)
		paired := epPerMB
		if l.Schedule != DualPipe {
			// Megatron-Core pairs the two micro-batches layer by layer, each
			// all-to-all behind one node of the other's compute
			// (epOverlapLayer): what outlasts its node stays exposed even in
			// the steady state.
			lm := &p.parts.lcMoE
			layers := max(1, int(math.Round(nMoE/float64(max(1, l.VirtualStages)))))
			a2a := 2 * (d + c)
			preF, preB, mlpB, mlpBW, preBW := lm.fwd-lm.mlpFwd, lm.bwd-lm.mlpBwd, lm.mlpBwd-lm.mlpBwdW, lm.mlpBwdW, lm.bwdW-lm.mlpBwdW
			var exp float64
			if q, _ := deviceMaxConnections(&p.req); q == 1 {
				exp = epOverlapLayerOneQueue(preF, lm.mlpFwd, preB, mlpB+mlpBW, d, c, layers)
			} else {
				exp = epOverlapLayer(preF, lm.mlpFwd, preB, mlpB, mlpBW, preBW, d, c, layers)
			}
			if a2a > 0 {
				paired *= 1 - min(1, exp/a2a)
			}
		}
		hid := (1 - u) * min(paired, p.fwd+p.bwd)
		epPerMB -= hid
		// DeepEP's kernels hold their own SMs while they run under the compute:
		// deepEPSMs of them, where other overlapped communication takes the
		// framework's commSMs (assemble prices the contention on those).
		smScale := 1.0
		if t.MoEDispatcher == DispatchDeepEP {
			smScale = deepEPSMs / commSMs(t.Framework)
		}
		p.hiddenPerMB += hid * smScale
		p.res.Breakdown.Hidden[CommEP] = hid * p.mf
	}
	if l.OverlapSharedExpert && epPerMB > 0 {
		// The shared experts' GEMMs of the same micro-batch, and their own TP
		// gathers (sharedExpertSideTP), run on their stream under its
		// all-to-alls (forward and backward alike): the two streams take the
		// longer of the two. Only the GEMMs are compute the all-to-alls' kernels
		// slow (contention); beside the gathers one collective runs beside another.
		gemms := nMoE * p.parts.lcMoE.shared
		hid := min(epPerMB, gemms+p.sharedSidePerMB)
		epPerMB -= hid
		p.hiddenPerMB += min(hid, gemms)
		p.res.Breakdown.Hidden[CommEP] += hid * p.mf
	}
	// Dispatch and combine run once forward, again where recomputed, and once
	// backward (their gradients' all-to-alls): what is hidden is taken from each
	// alike.
	f, r := passShare(1, p.moeRepeats(), 1)
	p.commFwd, p.commRc = p.commFwd+epPerMB*f, p.commRc+epPerMB*r
	return epPerMB, nil
}

// deepEPSMs is how many SMs DeepEP's normal (high-throughput) kernels run on:
// DeepEP's Buffer.num_sms, 20 by default (deepseek-ai/DeepEP deep_ep/buffer.py),
// which Megatron-Core sets from moe_deepep_num_sms, also 20
// (megatron/core/transformer/transformer_config.py and moe/token_dispatcher.py's
// set_deepep_num_sms at ae1c882), and the 20 SMs DeepSeek-V3 §3.2.2 gives its
// all-to-all kernels.
const deepEPSMs = 20

// epOverlapLayer is the exposed all-to-all time per MoE layer of one micro-batch
// (its dispatch d and combine c forward and backward) when Megatron-Core's EP
// all-to-all overlap runs one chunk's forward beside another micro-batch's
// backward, layers paired in turn over a chunk of layers MoE layers
// (TransformerLayerSchedulePlan.run, megatron/core/models/common/
// model_chunk_schedule_plan.py at ae1c882, the overlap's first public version, and
// d98e8a6): the forward's layer is split into pre_dispatch_computation (attention,
// norm, router: preF) and mlp (the experts between the all-to-alls: mlpF), the
// backward's alike (preB, its weight gradients preBW run last; mlpB and the
// experts' weight gradients mlpBW), and the two streams run
//
//	comm: combine_bwd      | dispatch_fwd → dispatch_bwd  | combine_fwd
//	comp: pre_dispatch_fwd | mlp_bwd → mlp_bwd_dw → mlp_fwd | pre_dispatch_bwd
//
// each all-to-all waiting for the node that makes its input and each node for the
// all-to-all that makes its own; the next layer's combine_bwd waits for this
// one's pre_dispatch_bwd, its pre_dispatch_fwd for this one's combine_fwd. An
// all-to-all is hidden only behind the nodes that run beside it: the layer's two
// micro-batches' spans less their compute, over the chunk, per layer.
func epOverlapLayer(preF, mlpF, preB, mlpB, mlpBW, preBW, d, c float64, layers int) float64 {
	preBD := max(0, preB-preBW) // pre_dispatch_bwd before its delayed weight gradients
	var comp, comm, readyF, readyB float64
	for range max(1, layers) {
		cbE := max(comm, readyB) + c   // combine_bwd
		aE := max(comp, readyF) + preF // pre_dispatch_fwd
		mbE := max(aE, cbE) + mlpB     // mlp_bwd
		wE := mbE + mlpBW              // mlp_bwd_dw
		dfE := max(cbE, aE) + d        // dispatch_fwd
		dbE := max(dfE, mbE) + d       // dispatch_bwd
		mfE := max(wE, dfE) + mlpF     // mlp_fwd
		cfE := max(dbE, mfE) + c       // combine_fwd
		pbE := max(mfE, dbE) + preBD   // pre_dispatch_bwd
		comp, comm = pbE+preBW, cfE
		readyF, readyB = cfE, pbE
	}
	span := max(comp, comm)
	work := float64(max(1, layers)) * (preF + mlpF + preB + mlpB + mlpBW)
	return max(0, span-work) / float64(max(1, layers))
}

// epOverlapLayerOneQueue is epOverlapLayer on one hardware queue
// (CUDA_DEVICE_MAX_CONNECTIONS=1): the kernels of both streams start in the order
// the host launched them (pytorch/pytorch#143890, NVIDIA's reply; Megatron-LM#533;
// Megatron-LM#2719 and #2730 find the pairing "completely disrupted" under it and
// reorder the launches), so a node starts no earlier than the one launched before
// it. TransformerLayerSchedulePlan.run (model_chunk_schedule_plan.py at ae1c882,
// unchanged at d98e8a6) launches
//
//	combine_bwd, pre_dispatch_fwd, mlp_bwd, dispatch_fwd, mlp_bwd_dw,
//	dispatch_bwd, mlp_fwd, combine_fwd, pre_dispatch_bwd, its weight gradients
//
// An all-to-all is one kernel (NCCL's, or DeepEP's), so what is launched after it
// may start as soon as it has; a compute node is a chain of kernels on one stream,
// and what is launched after it starts when its last kernel does, taken as its
// end. Without delayed weight gradients (Megatron-Core's delay_wgrad_compute, off
// by default; the request has no field for it) backward_dw does nothing
// (fine_grained_callables.py TransformerLayerNode.backward_dw at ae1c882): the
// weight gradients run inside mlp_bwd (mlpB here holds the experts' data and
// weight gradients) and inside pre_dispatch_bwd (preB, the attention's whole
// backward), and the next layer's combine_bwd waits for all of it. So the
// forward's dispatch, launched after mlp_bwd, starts when it ends and runs beside
// nothing: mlp_fwd needs its tokens. (With delayed weight gradients it would run
// beside mlp_bwd_dw, launched after it.) The rest pairs as with more queues:
// combine_bwd under pre_dispatch_fwd, dispatch_bwd under mlp_fwd, combine_fwd
// under pre_dispatch_bwd.
func epOverlapLayerOneQueue(preF, mlpF, preB, mlpB, d, c float64, layers int) float64 {
	var comp, comm, readyF, readyB, gate float64
	for range max(1, layers) {
		s := max(comm, readyB, gate) // combine_bwd
		cbE := s + c
		gate = s
		aE := max(comp, readyF, gate) + preF // pre_dispatch_fwd
		gate = aE
		mbE := max(aE, cbE, gate) + mlpB // mlp_bwd, its weight gradients inside
		gate = mbE
		s = max(cbE, aE, gate) // dispatch_fwd
		dfE := s + d
		gate = s
		s = max(dfE, mbE, gate) // dispatch_bwd
		dbE := s + d
		gate = s
		mfE := max(mbE, dfE, gate) + mlpF // mlp_fwd
		gate = mfE
		s = max(dbE, mfE, gate) // combine_fwd
		cfE := s + c
		gate = s
		pbE := max(mfE, dbE, gate) + preB // pre_dispatch_bwd with its weight gradients
		gate = pbE
		comp, comm = pbE, cfE
		readyF, readyB = cfE, pbE
	}
	span := max(comp, comm)
	work := float64(max(1, layers)) * (preF + mlpF + preB + mlpB)
	return max(0, span-work) / float64(max(1, layers))
}

// deviceMaxConnections is the hardware queues (CUDA_DEVICE_MAX_CONNECTIONS) the
// step runs with, and what sets them: the request's, else what the framework's
// launch sets for the layout (framework.Profile.DeviceMaxConnections).
func deviceMaxConnections(req *Request) (int, string) {
	t, l := &req.Training, &req.Layout
	if t.DeviceMaxConnections > 0 {
		return t.DeviceMaxConnections, "the request's"
	}
	fw, err := framework.Get(t.Framework)
	if err != nil {
		return framework.DefaultDeviceConnections, "CUDA's default"
	}
	return fw.DeviceMaxConnections(framework.QueueLayout{TP: l.TP, CP: l.CP, Blackwell: req.Cluster.GPU().Arch == hardware.Blackwell,
		EPOverlap: l.OverlapEP, FSDP: l.ZeRO == 3, DeepEP: t.MoEDispatcher == DispatchDeepEP})
}

// interleavedOverlapWarmup is how many model chunks of micro-batches the first
// pipeline stage runs forward alone before the steady state, and backward alone
// after it, under Megatron-Core's interleaved schedule with the expert-parallel
// all-to-all overlap (megatron/core/pipeline_parallel/schedules.py at 2436e3d, the
// code of MLPerf Training v6.0, and d98e8a6, get_pp_rank_microbatches): (P − rank −
// 1) · 2 + (v − 1) · microbatch_group_size_per_vp_stage, whose default is P
// (model_parallel_config.py), plus "one extra micro-batch forward step before the
// 1f1b stages" that the overlap schedules "to ensure the forward and backward
// computations are independent in all 1f1b steps". Only the steady state's steps
// pair one chunk's forward with another's backward
// (combined_1f1b_schedule_for_interleaved_pipelining); the warm-up's forward steps
// and the cool-down's backward steps run alone.
func interleavedOverlapWarmup(pp, v int) int {
	return (pp-1)*2 + (v-1)*pp + 1
}

// sharedExpertSideTP is the time of one micro-batch's TP collectives of shared
// experts overlapped with the dispatcher (sharedExpertsTP,
// Layout.OverlapSharedExpert): per MoE layer the input's all-gather and the
// output's reduce-scatter forward (again where the MoE layer is recomputed), the
// output gradient's all-gather and the input gradient's reduce-scatter backward,
// each of the micro-batch's activations in 16 bits (Megatron-Core's mappings
// move the layer's own dtype; the modules quantize after them under fp8).
// Megatron-Core issues them on the shared experts' stream beside the dispatcher
// (MoEAlltoAllTokenDispatcher.token_permutation calls pre_forward_comm before
// the permutation, token_unpermutation post_forward_comm after the combine's
// all-to-all; token_dispatcher.py at 7094270), so expertParallel hides them under
// the all-to-alls with the shared experts' GEMMs.
func (p *pricing) sharedExpertSideTP() (float64, error) {
	if !sharedExpertsTP(&p.req) || !p.req.Layout.OverlapSharedExpert || p.parts.nMoE <= 0 {
		return 0, nil
	}
	n := 2 + p.moeRepeats()
	x := p.tokens * p.h * 2
	when := "per MoE layer: the overlapped shared experts' input all-gather forward (again where recomputed) and output-gradient all-gather backward, on their own stream (shared_experts.py)"
	ag, err := p.comm(CommTP, collective.AllGather, x, p.parts.nMoE*n*p.mf, when)
	if err != nil {
		return 0, err
	}
	when = "per MoE layer: the overlapped shared experts' output reduce-scatter forward (again where recomputed) and input-gradient reduce-scatter backward, on their own stream (shared_experts.py)"
	rs, err := p.comm(CommTP, collective.ReduceScatter, x, p.parts.nMoE*n*p.mf, when)
	if err != nil {
		return 0, err
	}
	return n * (ag + rs) * p.parts.nMoE, nil
}

// moeRepeats is how many times, on average over the stage's MoE layers, the
// forward dispatch and combine run again in the backward pass: where the layer is
// fully recomputed, or its MoE module is (recompute module moe).
func (p *pricing) moeRepeats() float64 {
	l := &p.req.Layout
	if l.recomputeMask()&rmMoE != 0 {
		return 1
	}
	return l.recomputeShare(p.parts.stageLayers)
}

// commSMs is how many SMs the framework's overlapped communication occupies: 16
// by default, NCCL's channels of one collective.
// tpUserbuffers says whether the framework overlaps TP communication with
// Transformer Engine's userbuffers (framework.Profile.TPUserbuffers) and whether
// its pipelined reduce-scatters run fp8 buffers under fp8 (TPPipelinedRSFP8); an
// unknown name is the default framework's.
func tpUserbuffers(name string) (userbuffers, pipelinedRSFP8 bool) {
	fw, err := framework.Get(name)
	return tpUserbuffersOf(fw, err)
}

// userbuffersOn is tpUserbuffers' first answer alone.
func userbuffersOn(name string) bool {
	ub, _ := tpUserbuffers(name)
	return ub
}

// tpUserbuffersOf is tpUserbuffers of the profile fw looked up (err its lookup's
// error: the default framework's then).
func tpUserbuffersOf(fw *framework.Profile, err error) (userbuffers, pipelinedRSFP8 bool) {
	if err != nil {
		fw, _ = framework.Get("")
	}
	return fw.TPUserbuffers, fw.TPUserbuffers && fw.TPPipelinedRSFP8
}

// tpFP8AllGathers says whether, under fp8 matmuls (fp8), the sequence-parallel
// all-gathers run in fp8 without TP overlap: Transformer Engine's linear layers
// (the frameworks with userbuffers, framework.Profile.TPUserbuffers) gather the
// quantized norm output forward (module/layernorm_linear.py: gather_along_first_dim
// of ln_out with the input quantizer; distributed.py _all_gather_fp8 for delayed and
// current scaling, v2.2–v2.8) and the quantized output gradient of the row-parallel
// layers backward (base.py grad_output_preprocess: "cast, transpose for efficient
// gather" in v1.13, gather_along_first_dim with the gradient's quantizer from v2.0),
// 1 B per element; the reduce-scatters stay in 16 bits. With TP overlap the
// userbuffers' own fp8 buffers price it (tpOverlapIn.ag8).
func tpFP8AllGathers(fw *framework.Profile, err error, fp8 bool) bool {
	ub, _ := tpUserbuffersOf(fw, err)
	return fp8 && ub
}

func commSMs(name string) float64 {
	fw, err := framework.Get(name)
	return commSMsOf(fw, err)
}

// commSMsOf is commSMs of the profile fw looked up (err its lookup's error).
func commSMsOf(fw *framework.Profile, err error) float64 {
	if err == nil && fw.CommSMs > 0 {
		return fw.CommSMs
	}
	return defaultCommSMs
}

// defaultCommSMs is the SMs overlapped communication's kernels take when the
// framework states none (framework.Profile.CommSMs): taken as 16, one NCCL channel
// (thread block) each, from the first version of the contention model (26ff11b)
// with no published measurement of the SMs a framework's overlapped collectives
// hold: docs/step-model.md, "Constants without a published source".
const defaultCommSMs = 16

// Ulysses context parallelism (Jacobs et al. 2023, "DeepSpeed Ulysses",
// arXiv 2309.14509, §3.1): all-to-alls re-split the query, key and value before the
// attention and its output after, from sequence to heads and back — four a layer
// forward, four backward.
const (
	ulyssesAllToAllsPerPass  = 4
	ulyssesAllToAllsPerLayer = 2 * ulyssesAllToAllsPerPass
)

// moeNote says how the MoE layers were priced: the expert groups, the dispatcher,
// the load of the busiest rank and what of the all-to-all hides.
func (p *pricing) moeNote() string {
	t, l := &p.req.Training, &p.req.Layout
	perm := "unfused permutation"
	if t.MoEPermuteFusion {
		perm = "fused permutation"
	}
	load := "dropless, balanced"
	switch {
	case t.MoECapacityFactor > 0 && t.MoEPadToCapacity:
		load = fmt.Sprintf("padded to capacity %.2g× the mean tokens", t.MoECapacityFactor)
	case t.MoECapacityFactor > 0 || (t.MoEImbalance > 1 && l.EP > 1):
		load = fmt.Sprintf("busiest rank at %.2g× the mean tokens", t.moeLoad(l.EP))
	}
	hide := "exposed"
	if l.OverlapEP || l.Schedule == DualPipe {
		hide = "hidden under the paired micro-batch's compute but for the unpaired warm-up and cool-down chunks"
	}
	holders := "each expert copy held by one rank"
	if n := l.expertShard(); n > 1 {
		holders = fmt.Sprintf("expert gradients reduced over %d ranks", n)
	}
	host := "split sizes fixed by the padding, no host sync"
	if !t.MoEPadToCapacity {
		host = "the token counts copied to the host before the all-to-all (the GPU's queue drains there)"
	}
	return fmt.Sprintf("MoE: expert groups folded over the stage's ranks (expert TP %d × EP %d, %s); %s dispatcher, %s; %s; %s; all-to-all %s",
		l.etp(), max(1, l.EP), holders, t.MoEDispatcher, perm, load, host, hide)
}

// fp8DispatchBytes is the width of a token element dispatched in fp8: one byte and
// a 4-byte fp32 scale per 128 elements (DeepSeek-V3 §3.3.2's 1×128 activation tiles;
// DeepEP's fp8 dispatch).
const fp8DispatchBytes = 1 + 4.0/128

// moeNodeReach is how many distinct nodes a token's top-k experts lie on, on
// average, when the expert-parallel group spans nodes nodes and routing limits a
// token to topKGroups of groups groups laid out on them (DeepSeek-V3's node-limited
// routing): k experts spread uniformly over the R nodes a token may reach reach
// R·(1 − (1 − 1/R)^k) of them.
func moeNodeReach(k, nodes, groups, topKGroups int) float64 {
	r := float64(nodes)
	if groups > 0 && topKGroups > 0 && groups >= nodes {
		r = min(r, float64(topKGroups))
	}
	if r <= 1 {
		return 1
	}
	return r * (1 - math.Pow(1-1/r, float64(k)))
}

// pipeline prices the pipeline's sends between stages and its bubble by executing
// the schedule's block table (PipelineSpan) at the pace of one micro-batch
// (compute and exposed communication) through the slowest stage, and records that
// micro-batch's blocks. Each block ends with its share of the micro-batch's exposed
// TP, CP and EP communication (split in proportion to the compute of the passes)
// and one pipeline send; the bubble is what the busiest rank waits, the span less
// its blocks.
func (p *pricing) pipeline() error {
	l := &p.req.Layout
	mf := p.mf
	perMB := p.fwd + p.bwd + p.rc + p.tpPerMB + p.cpPerMB + p.epPerMB
	var send float64
	var hops []float64
	bt := blockTimes(l.Schedule, l.VirtualStages, p.fwd, p.bwd, p.rc, p.parts.bwdW, p.tpPerMB+p.cpPerMB+p.epPerMB, 0)
	if l.PP > 1 {
		act := p.tokens * p.h * 2
		if l.SP || pipelineScatterGather(p.req.Training.Framework) {
			act /= p.tf // each TP rank sends its slice
		}
		v := float64(bt.chunks)
		x, err := p.comm(CommPP, collective.SendRecv, act, 2*v*mf, "per micro-batch and model chunk: activation forward, gradient backward")
		if err != nil {
			return err
		}
		send = x
		overlap := PipelineSendsOverlap(p.req.Training.Framework, l.Schedule)
		switch {
		case overlap:
			bt.S, bt.SB = x, x // the steady state's sends in flight (below)
		case l.Schedule == DualPipe: // the sends hidden (below)
		default:
			bt.F += x
			bt.B += x
		}
		run, err := p.pipeRun(bt.BlockTimes, act, x, overlap)
		if err != nil {
			return err
		}
		hops = run.hops
		// xm is the mean send over the ranks' blocks, what the breakdown
		// reports as exposed per send (x where every hop costs the same).
		xm := run.xm
		p.ppExposed = 2 * xm * v * mf
		if overlap {
			// Megatron-Core's overlap_p2p_comm: the steady state's sends travel
			// while the rank computes its next chunk (the receiving block starts
			// when the send arrives: BlockTimes.S); only the warm-up's forward and
			// the cool-down's backward sends hold their rank up — on the first
			// rank, which warms up longest, (p − 1)·2 + (v − 1)·p of each, all of
			// them if the step has no more chunks.
			blocking := 2 * min(float64(interleavedWarmUp(l.PP, bt.chunks, 0)), v*mf)
			p.ppExposed = blocking * xm
			p.res.Breakdown.Hidden[CommPP] = (2*v*mf - blocking) * xm
		} else if l.Schedule == DualPipe {
			// DualPipe sends a chunk's activations while the paired forward and
			// backward chunks compute (DeepSeek-V3 report §3.2.1: "both all-to-all
			// and PP communication can be fully hidden"): the sends are not in its
			// blocks (the fill and drain's few are neglected).
			hid := p.ppExposed
			p.ppExposed, send = 0, 0
			p.hiddenPerMB += hid / mf
			p.res.Breakdown.Hidden[CommPP] = hid
		}
		p.bubble = max(0, run.span-mf*perMB-p.ppExposed)
	}
	p.res.PerMicroBatch = MicroBatch{Forward: p.fwd, Backward: p.bwd, WeightGrad: p.parts.bwdW, Recompute: p.rc,
		ExposedComm: p.tpPerMB + p.cpPerMB + p.epPerMB, Send: send, HopSends: hops, SendOverlapped: bt.S > 0}
	return nil
}

// pipeRunKey is what the pipeline's span and its ranks' sends depend on: the
// schedule (scheduleCode), depth, chunks and micro-batches, the blocks every rank
// shares (with hop 0's send x in them, or in S and SB where the sends overlap:
// the flag overlap), x, and the hops: hop 0's placement and the bytes of a send
// (hopKey, by which hopSends memoises their prices), whether the wrap-around is
// a hop; pl is nil where the sends are not priced hop by hop. Floats are kept as
// their bits and the flags in one word, so that the key compares as one block.
type pipeRunKey struct {
	pl                *collective.Placement
	flags             uint64 // scheduleCode, overlap<<8, wrap<<9
	p, v, m           uint64
	f, b, w, s, sb, x uint64
	bytes             uint64
}

// scheduleCode numbers the schedules for pipeRunKey; 0 for any other.
func scheduleCode(s Schedule) uint64 {
	switch s {
	case GPipe:
		return 1
	case OneFOneB:
		return 2
	case Interleaved:
		return 3
	case ZeroBubble:
		return 4
	case DualPipe:
		return 5
	case ZeroBubbleV:
		return 6
	}
	return 0
}

// hash folds the key but pl into one word, word by word as FNV-1a folds bytes
// (Fowler, Noll and Vo; offset basis and prime of 64 bits): each step is a
// bijection of the running hash, so keys differing in one word never collide.
// The memo compares whole keys: a collision only costs a run.
func (k *pipeRunKey) hash() uint64 {
	const prime = 1099511628211
	h := (14695981039346656037 ^ k.flags) * prime
	h = (h ^ k.p) * prime
	h = (h ^ k.v) * prime
	h = (h ^ k.m) * prime
	h = (h ^ k.f) * prime
	h = (h ^ k.b) * prime
	h = (h ^ k.w) * prime
	h = (h ^ k.s) * prime
	h = (h ^ k.sb) * prime
	h = (h ^ k.x) * prime
	return (h ^ k.bytes) * prime
}

// pipeRun is what pricing.pipeRun returns for a pipeRunKey.
type pipeRun struct {
	span float64   // the schedule executed with each rank's own sends
	xm   float64   // the mean send over the ranks' blocks (meanRankSend)
	hops []float64 // hopSends' prices: nil where every hop costs x
}

// pipeRunMemo is one generation of memoised pipeline runs: a search prices the
// layouts it returns again in full, and layouts that differ only in what the
// blocks do not depend on (often the ZeRO stage) have the same blocks. A map
// under a read-write lock, as costMemo, by the key's hash (pipeRunKey.hash: a
// word the map hashes and compares at a fraction of the cost of the 104-byte
// key), each run with its key, of fixed size whatever the depth (spanKey encodes
// every rank's block lengths). Once a generation holds maxPipeRuns runs a fresh one replaces it
// (about 200 bytes a run and its key).
type pipeRunMemo = boundedMemo[uint64, *keyedPipeRun]

type keyedPipeRun struct {
	key pipeRunKey
	run pipeRun
}

const maxPipeRuns = 1 << 12

// pipeRunMemo is the current generation of pipeline runs.
func (c *groupCache) pipeRunMemo() *pipeRunMemo {
	return currentGeneration(&c.runs, newBoundedMemo[uint64, *keyedPipeRun])
}

// pipeRun prices the pipeline's hops (hopSends, for sends of bytes; x is hop 0's)
// and executes its schedule with bt, every rank's blocks, each rank's carrying
// its own hops' sends (rankBlockTimes), memoised by pipeRunKey. The hops are
// shared by every result that prices them: not to be modified.
func (p *pricing) pipeRun(bt BlockTimes, bytes, x float64, overlap bool) (pipeRun, error) {
	l := &p.req.Layout
	code := scheduleCode(l.Schedule)
	bits := math.Float64bits
	key := pipeRunKey{flags: code, p: uint64(l.PP), v: uint64(l.VirtualStages), m: uint64(p.res.MicroBatches),
		f: bits(bt.F), b: bits(bt.B), w: bits(bt.W), s: bits(bt.S), sb: bits(bt.SB), x: bits(x), bytes: bits(bytes)}
	if overlap {
		key.flags |= 1 << 8
	}
	var hk hopKey
	n := 0
	if perHopSends(l.Schedule) {
		n = l.PP - 1 // hops 0 … p − 2; the wrap-around only under interleaving
		if l.Schedule == Interleaved {
			n = l.PP
		}
		hk = hopKey{p.placed[CommPP], l.PP, bytes, n == l.PP}
		key.pl = hk.pl
		if hk.wrap {
			key.flags |= 1 << 9
		}
	}
	if code == 0 {
		return p.runPipe(bt, hk, n, x, overlap)
	}
	h := key.hash()
	memo := p.e.pipeRunMemo()
	if kr, ok := memo.get(h); ok && kr.key == key {
		return kr.run, nil
	}
	run, err := p.runPipe(bt, hk, n, x, overlap)
	if err != nil {
		return run, err
	}
	memo.put(&p.e.runs, maxPipeRuns, h, &keyedPipeRun{key, run})
	return run, nil
}

// runPipe is pipeRun without the memo: the n hops (none where the sends are not
// priced hop by hop) priced by hk.
func (p *pricing) runPipe(bt BlockTimes, hk hopKey, n int, x float64, overlap bool) (pipeRun, error) {
	l := &p.req.Layout
	run := pipeRun{xm: x}
	if n > 0 {
		hops, err := p.hopSends(hk, n, x)
		if err != nil {
			return run, err
		}
		run.hops = slices.Clip(hops)
	}
	var buf [16]BlockTimes
	buf[0] = bt
	times := buf[:1]
	if run.hops != nil {
		run.xm = meanRankSend(l.Schedule, l.PP, run.hops)
		times = rankBlockTimes(l.Schedule, l.PP, bt, x, run.hops, overlap, buf[:])
	}
	span, _, err := pipelineSpan(p.e.groupCache, l.Schedule, l.PP, l.VirtualStages, p.res.MicroBatches, times, nil, false)
	if err != nil {
		return run, err
	}
	run.span = span
	return run, nil
}

// hopSends prices one send of key.bytes on each of the n hops of the pipeline (hop
// h: stage h to stage h + 1; hop p − 1, under interleaving only, the wrap-around
// from the last stage to the first), each on its own pairs' placement
// (Estimator.hopPlacement), for the schedules whose chunk k runs on rank k mod p
// (GPipe, 1F1B, ZB-H1, interleaving: perHopSends); x is hop 0's. It returns nil
// where every hop costs x. ZB-V and DualPipe's sends stay priced on hop 0.
func (p *pricing) hopSends(key hopKey, n int, x float64) ([]float64, error) {
	memo := p.e.hopMemo()
	if h, ok := memo.m.Load(key); ok {
		return h.([]float64), nil
	}
	hops, err := p.priceHops(n, key.bytes, x)
	if err != nil {
		return nil, err
	}
	if memo.n.Add(1) > maxHopSets {
		p.e.hops.CompareAndSwap(memo, &hopMemo{})
		memo = p.e.hopMemo()
		memo.n.Add(1)
	}
	memo.m.Store(key, hops)
	return hops, nil
}

// priceHops prices n hops (hopSends); nil where every hop costs x.
func (p *pricing) priceHops(n int, bytes, x float64) ([]float64, error) {
	hops := make([]float64, n)
	hops[0] = x
	same := true
	for h := 1; h < n; h++ {
		pl, err := p.e.hopPlacement(p.req.Cluster, p.req.Ranks, p.g, h)
		if err != nil {
			return nil, err
		}
		est, err := p.e.collCost(pl, collective.SendRecv, bytes)
		if err != nil {
			return nil, err
		}
		hops[h] = est.TimeUs * 1e-6
		same = same && hops[h] == x
	}
	if same {
		return nil, nil
	}
	return hops, nil
}

// perHopSends says the schedule's sends are priced hop by hop (hopSends): those
// whose chunk k runs on rank k mod p, so that a forward's send leaves rank r on hop
// r and a backward's on hop r − 1.
func perHopSends(s Schedule) bool {
	return s == GPipe || s == OneFOneB || s == ZeroBubble || s == Interleaved
}

// rankHops are the hops rank r of p sends on under schedule s: its forwards' (to
// rank r + 1; the last rank's wrap to the first under interleaving) and its
// backwards' (to rank r − 1; the first rank's wrap to the last). Megatron-Core
// core_v0.12.0 (d580efc) p2p_communication.py sends activations to
// parallel_state.get_pipeline_model_parallel_next_rank and gradients to
// get_pipeline_model_parallel_prev_rank, the ranks (r ± 1) mod p, and schedules.py
// forward_backward_pipelining_with_interleaving has the first stage receive
// chunk k + 1's input from the last (recv_tensor_from_previous_stage). Where the
// schedule has no such send — the last rank's forwards and the first rank's
// backwards without interleaving — the block keeps the send of the rank's other
// hop: the model charges every block one send, as with one price for every hop.
func rankHops(s Schedule, p, r int) (fwd, bwd int) {
	fwd, bwd = r, r-1
	if s != Interleaved {
		fwd = min(r, p-2)
		bwd = max(r-1, 0)
	} else if r == 0 {
		bwd = p - 1
	}
	return fwd, bwd
}

// rankBlockTimes are each rank's block lengths with its own hops' sends (hops as
// hopSends returns them), from the blocks bt every rank shares, which hold (or,
// with overlap, carry in S) one send of x.
func rankBlockTimes(s Schedule, p int, bt BlockTimes, x float64, hops []float64, overlap bool, buf []BlockTimes) []BlockTimes {
	out := buf[:0]
	if cap(out) < p {
		out = make([]BlockTimes, p)
	}
	out = out[:p]
	for r := range p {
		f, b := rankHops(s, p, r)
		d := bt
		if overlap {
			d.S, d.SB = hops[f], hops[b]
		} else {
			d.F += hops[f] - x
			d.B += hops[b] - x
		}
		out[r] = d
	}
	return out
}

// meanRankSend is the mean of the ranks' forward and backward sends (rankHops).
func meanRankSend(s Schedule, p int, hops []float64) float64 {
	t := 0.0
	for r := range p {
		f, b := rankHops(s, p, r)
		t += hops[f] + hops[b]
	}
	return t / float64(2*p)
}

// PipelineSendsOverlap says the framework's schedule s runs its steady state's
// pipeline sends asynchronously, under the next chunk's compute
// (framework.PipelineSendOverlap: Megatron-Core's interleaved schedule).
func PipelineSendsOverlap(fw string, s Schedule) bool {
	if s != Interleaved {
		return false
	}
	f, err := framework.Get(fw)
	return err == nil && f.PipelineSendOverlap
}

// interleavedWarmUp is how many forwards rank r of p runs with v chunks before
// its first backward under 1F1B (v = 1) and interleaving (interleavedOrder;
// Megatron-Core's get_pp_rank_microbatches), before capping at the step's chunks.
func interleavedWarmUp(p, v, r int) int {
	if v > 1 {
		return (p-r-1)*2 + (v-1)*p
	}
	return p - r - 1
}

// chunkTimes are the block lengths of one model chunk and the chunks per rank.
type chunkTimes struct {
	BlockTimes
	chunks int
}

// blockTimes splits one micro-batch's time through a rank over its model chunks
// (the interleaving depth, the V's two legs, else one): forward, backward with the
// recomputation, and — under the schedules that run them apart (ZB-H1, ZB-V,
// DualPipe) — the weight-gradient GEMMs w; the exposed communication comm goes with
// the passes in proportion to their compute, and each forward and backward block
// ends with one pipeline send.
func blockTimes(s Schedule, v int, fwd, bwd, rc, w, comm, send float64) chunkTimes {
	v = chunksPerRank(s, v)
	fShare := 0.5
	if tot := fwd + bwd + rc; tot > 0 {
		fShare = fwd / tot
	}
	vf := float64(v)
	t := chunkTimes{chunks: v}
	t.F = fwd/vf + comm*fShare/vf + send
	t.B = (bwd+rc)/vf + comm*(1-fShare)/vf + send
	if SplitsWeightGrad(s) {
		w = min(w, bwd)
		t.B -= w / vf
		t.W = w / vf
	}
	return t
}

// SplitsWeightGrad says the schedule runs the weight-gradient GEMMs as blocks of
// their own (ZB-H1, ZB-V, DualPipe).
func SplitsWeightGrad(s Schedule) bool {
	return s == ZeroBubble || s == ZeroBubbleV || s == DualPipe
}

// MicroBatchBlocks are the block lengths of one model chunk of a result's
// micro-batch, as its estimate executed its schedule, and the chunks per rank:
// every rank's, with one send of PerMicroBatch.Send (RankSends: each rank's own).
func MicroBatchBlocks(r Result) (BlockTimes, int) {
	m, l := r.PerMicroBatch, r.Layout
	send := m.Send
	if m.SendOverlapped {
		send = 0
	}
	t := blockTimes(l.Schedule, l.VirtualStages, m.Forward, m.Backward, m.Recompute, m.WeightGrad, m.ExposedComm, send)
	if m.SendOverlapped {
		t.S, t.SB = m.Send, m.Send
	}
	return t.BlockTimes, t.chunks
}

// RankSends are the sends that end rank r's forward and backward blocks under a
// result's schedule: the hops it sends on (PerMicroBatch.HopSends), else Send.
func RankSends(res Result, r int) (fwd, bwd float64) {
	m, l := res.PerMicroBatch, res.Layout
	if m.HopSends == nil || l.PP < 2 {
		return m.Send, m.Send
	}
	f, b := rankHops(l.Schedule, l.PP, r)
	return m.HopSends[f], m.HopSends[b]
}

// pipelineScatterGather says the framework sends each TP rank's slice of the
// activations between pipeline stages, with or without sequence parallelism.
func pipelineScatterGather(name string) bool {
	fw, err := framework.Get(name)
	return err == nil && fw.PipelineScatterGather
}

// slowStage applies the slow-GPU what-if to the compute of every phase after the
// pipeline's: the bubble is priced at the other stages' speed, everything else at
// the slow GPU's.
func (p *pricing) slowStage() {
	if s := p.req.SlowGPUSpeed; s > 0 && s < 1 {
		p.res.PerMicroBatch.SlowGPUSpeed = s
		// One slow GPU: its stage paces every micro-batch (its TP group and the
		// data-parallel replicas wait for it); the fill and drain above pass the
		// other stages at their own speed.
		p.fwd, p.bwd, p.rc = p.fwd/s, p.bwd/s, p.rc/s
	}
}

// holdParams counts the slowest stage's parameters and the ranks that hold a copy
// of each: gradients reduce over those ranks, and under ZeRO the states shard over
// them, which both the data-parallel communication and the optimizer price.
func (p *pricing) holdParams() {
	l := &p.req.Layout
	p.stageParams, p.expertParams = p.e.stageParams(&p.req, p.parts.stageLayers)
	if p.req.Training.FP8Params {
		counts := p.req.Model.Params()
		p.matmulDense, p.matmulExpert = matmulParams(&p.req, &counts, p.parts.stageLayers)
	}
	p.denseShard = l.DP * l.CP
	// Expert parameters are split over ETP × EP, so each is held by the
	// TP·CP·DP/(ETP·EP) expert-data-parallel ranks: their gradients reduce, and
	// under ZeRO their states shard, over that group.
	p.expertShard = l.expertShard()
	p.expertGroup = Comm(commExpertData)
	if p.expertParams == 0 {
		p.expertShard = 1
	}
}

// dataParallel prices the communication among the replicas of the stage's
// parameters: ZeRO-3's per-layer gathers and reduce-scatters, on demand or
// prefetched, or the end-of-step gradient reduction (and ZeRO-1/2's parameter
// all-gather). Each overlaps the compute differently, so each has its own phase.
func (p *pricing) dataParallel() error {
	l := &p.req.Layout
	if p.denseShard <= 1 {
		return nil
	}
	var err error
	switch {
	case l.ZeRO == 3 && p.req.Training.OnDemandGathers:
		p.z3Exposed, err = p.zero3OnDemand()
	case l.ZeRO == 3:
		p.z3Exposed, err = p.zero3Prefetched()
	default:
		p.dpExposed, err = p.gradientSync()
	}
	return err
}

// weightBytes is the size of params weights of which matmul are the transformer
// layers' matmul weights: 16 bits each (the optimizer's weight bytes), except that
// with fp8 weights (Training.FP8Params) the matmul weights are stored, gathered and
// sent in fp8.
func (p *pricing) weightBytes(params, matmul float64) float64 {
	o := &p.req.Training.Optimizer
	if !p.req.Training.FP8Params {
		return params * o.WeightBytes
	}
	return params*o.WeightBytes - matmul*(o.WeightBytes-fp8ElementBytes)
}

// paramGatherBytes is what ZeRO-1/2's all-gather of the updated parameters moves
// for params weights of which matmul are the transformer layers' matmul weights:
// weightBytes, except that MXFP8 weights are gathered in 16 bits. Megatron-Core's
// distributed optimizer gives a buffer holding MXFP8 parameters no fp8 parameter
// buffer: the all-gather fills a bf16 view of the gradient buffer, from which each
// MXFP8 weight is quantised by the copy that follows it
// (megatron/core/distributed/param_and_grad_buffer.py, _ParamAndGradBuffer: "For
// MXFP8 param: Create a shared buffer for param AG and grad RS", param_data a bf16
// view of shared_buffer; distributed_data_parallel.py start_param_sync: "The
// paramaters are cast from bf16 to MXFP8 during copy"; the same from core_v0.13.1
// through 26.04-alpha.rc2, 99a1081).
func (p *pricing) paramGatherBytes(params, matmul float64) float64 {
	if p.req.Training.FP8Recipe == FP8MXFP8 {
		return params * p.req.Training.Optimizer.WeightBytes
	}
	return p.weightBytes(params, matmul)
}

// zero3OnDemand is the exposed time of ZeRO-3 gathering each module's weights when
// it runs (DeepSpeed's ZeRO-3 of 2021).
func (p *pricing) zero3OnDemand() (float64, error) {
	l, o := &p.req.Layout, &p.req.Training.Optimizer
	k := &p.e.k
	layers, mf := p.layers, p.mf
	stageParams, expertParams := p.stageParams, p.expertParams
	// Each module gathers its weights when it runs and waits for them: forward,
	// again for a fully recomputed forward, and backward; its gradients
	// reduce-scatter as the backward leaves it. Nothing is prefetched, so none
	// of it hides: DeepSpeed v0.3.14–v0.5.10 registers its reset_step pre-forward
	// hook on the model after the model's own module hook has advanced the trace
	// step, so every later module's prefetch and reuse checks
	// (deepspeed/runtime/zero/stage3.py get_params_to_prefetch,
	// get_reuse_distance_in_numel) find the trace one module off and give up:
	// no prefetch, and each module gathered again for the backward. Every call passes one output tensor per rank, which the
	// framework slices (a Python narrow per rank) and the process group fills
	// (one copy per rank, torch c10d ProcessGroupNCCL::allgather): host work
	// that grows with the group and stalls the stream.
	mods := k.ModulesPerLayer
	modW := p.weightBytes(stageParams, p.matmulDense) / layers / mods
	gathers := 2 + l.recomputeShare(p.parts.stageLayers)
	if l.Recompute == RecomputeOps {
		gathers = 3 // every layer recomputes some of its modules
	}
	ag, err := p.comm(CommZeRO3, collective.AllGather, modW, layers*mods*gathers*mf, "per module and micro-batch, on demand: forward, recomputed forward, backward all-gathers of the weights")
	if err != nil {
		return 0, err
	}
	rs, err := p.comm(CommZeRO3, collective.ReduceScatter, (stageParams/layers/mods)*o.GradBytes, layers*mods*mf, "per module and micro-batch, on demand: gradient reduce-scatter")
	if err != nil {
		return 0, err
	}
	host := 2 * k.EagerOpHostUs * 1e-6 * hostOpScale(p.req.Cluster.Spec) * float64(p.denseShard)
	if l.Offload == OffloadParams {
		// Each module's shard is copied from host memory before its gather and
		// its gradient back after its reduce-scatter, waited for.
		_, link := hostRates(p.req.Cluster)
		modShard := stageParams / layers / mods / float64(p.denseShard)
		ag += modW / float64(p.denseShard) / link
		rs += modShard * o.GradBytes / link
	}
	// The list collectives also copy what they move, on the GPU, waited for like the
	// collective: DeepSpeed zeroes each gather's whole buffer before gathering into
	// its N views (deepspeed/runtime/zero/partition_parameters.py _allgather_param,
	// torch.zeros, v0.3.13–v0.4.x); PyTorch's process group, handed N output views,
	// gathers into a flat tensor of its own and copies it out into them, and handed
	// N input views for a reduce-scatter, copies them into a flat tensor first
	// (torch/lib/c10d/ProcessGroupNCCL.cpp allgather / reduce_scatter,
	// flatten_for_scatter_gather, PyTorch 1.8). Beyond the collective a gather
	// writes its bytes, reads them and writes them again (zeroing, copy out), a
	// reduce-scatter reads and writes its gradient bytes (copy in): at the
	// elementwise share of HBM bandwidth (onDemandCopies).
	gCopy, sCopy := onDemandCopies(modW, (stageParams/layers/mods)*o.GradBytes, p.slowHBM())
	exposed := (gathers*(ag+host+gCopy) + rs + host + sCopy) * mods * layers * mf
	if p.expertShard > 1 {
		// The MoE layers' experts gather and reduce on their own group.
		eag, err := p.commOn(CommZeRO3, p.expertGroup, collective.AllGather, p.weightBytes(expertParams, p.matmulExpert)/layers, layers*gathers*mf, "per layer and micro-batch, on demand: expert weight all-gathers over the expert-data-parallel group")
		if err != nil {
			return 0, err
		}
		ers, err := p.commOn(CommZeRO3, p.expertGroup, collective.ReduceScatter, expertParams/layers*o.GradBytes, layers*mf, "per layer and micro-batch, on demand: expert gradient reduce-scatter")
		if err != nil {
			return 0, err
		}
		egCopy, esCopy := onDemandCopies(p.weightBytes(expertParams, p.matmulExpert)/layers, expertParams/layers*o.GradBytes, p.slowHBM())
		exposed += (gathers*(eag+egCopy) + ers + esCopy) * layers * mf
	}
	return exposed, nil
}

// onDemandCopies is the GPU time of the copies around one on-demand ZeRO-3 gather of
// gather bytes and one reduce-scatter of scatter bytes (zero3OnDemand), at hbm
// bytes/s: the gathered buffer zeroed (written), the process group's flat output
// copied out into the views (read and written); the gradient views copied into the
// process group's flat input (read and written).
func onDemandCopies(gather, scatter, hbm float64) (g, s float64) {
	return 3 * gather / hbm, 2 * scatter / hbm
}

// zero3Prefetched is the exposed time of flat ZeRO-3 (FSDP), whose per-layer
// gathers are prefetched under the compute of the layer before.
func (p *pricing) zero3Prefetched() (float64, error) {
	l, t, o := &p.req.Layout, &p.req.Training, &p.req.Training.Optimizer
	layers, mf := p.layers, p.mf
	stageParams, expertParams := p.stageParams, p.expertParams
	// Per layer and micro-batch: gather the weights forward and again backward,
	// reduce-scatter the gradients; prefetching hides what fits under the
	// layer's compute.
	layerW := p.weightBytes(stageParams, p.matmulDense) / layers
	ag, err := p.comm(CommZeRO3, collective.AllGather, layerW, layers*2*mf, "per layer and micro-batch: forward and backward all-gather of the weights")
	if err != nil {
		return 0, err
	}
	rs, err := p.comm(CommZeRO3, collective.ReduceScatter, (stageParams/layers)*o.GradBytes, layers*mf, "per layer and micro-batch: gradient reduce-scatter")
	if err != nil {
		return 0, err
	}
	if p.expertShard > 1 {
		// A MoE layer also gathers its experts' shards, and reduce-scatters their
		// gradients, over the expert-data-parallel group, on the same stream.
		eag, err := p.commOn(CommZeRO3, p.expertGroup, collective.AllGather, p.weightBytes(expertParams, p.matmulExpert)/layers, layers*2*mf, "per layer and micro-batch: forward and backward all-gather of the expert weights (expert-data-parallel group)")
		if err != nil {
			return 0, err
		}
		ers, err := p.commOn(CommZeRO3, p.expertGroup, collective.ReduceScatter, expertParams/layers*o.GradBytes, layers*mf, "per layer and micro-batch: expert gradient reduce-scatter (expert-data-parallel group)")
		if err != nil {
			return 0, err
		}
		ag, rs = ag+eag, rs+ers
	}
	if l.Offload == OffloadParams {
		// The shard comes from host memory before each gather and its
		// gradient goes back after each reduce-scatter, in line with them.
		_, link := hostRates(p.req.Cluster)
		shardLayer := (stageParams/float64(p.denseShard) + expertParams/float64(max(1, p.expertShard))) / layers
		ag += (p.weightBytes(stageParams, p.matmulDense)/float64(p.denseShard) + p.weightBytes(expertParams, p.matmulExpert)/float64(max(1, p.expertShard))) / layers / link
		rs += shardLayer * o.GradBytes / link
	}
	if fw, err := framework.Get(t.Framework); err == nil && fw.FSDP2Copies {
		// FSDP2 copies each layer's gathered weights out of the all-gather buffer
		// (forward, and again for the backward's gather) and its gradients into the
		// reduce-scatter buffer, on the compute stream: the layer's compute grows
		// by them, and the next layer's gather hides under them too.
		cf, cb := p.fsdp2Copies(fw)
		p.fwd += layers * cf
		p.bwd += layers * cb
		p.res.PerMicroBatch.Forward, p.res.PerMicroBatch.Backward = p.fwd, p.bwd
	}
	// The recomputed forward runs in the backward pass, its communication with it
	// (zero3Overlap).
	xF := p.commFwd
	xB := p.tpPerMB + p.cpPerMB + p.epPerMB - xF
	exposed, hidden, hiddenMB := zero3Overlap(ag, rs, p.fwd, p.bwd, p.rc, xF, xB, layers, mf, t.BackwardPrefetch == PrefetchPre)
	p.res.Breakdown.Hidden[CommZeRO3] = hidden
	p.hiddenPerMB += hiddenMB
	return exposed, nil
}

// fsdp2Copies is the time FSDP2 spends per layer and micro-batch copying on the
// compute stream (framework.Profile.FSDP2Copies): forward (cf) the all-gather
// output read and the unsharded weights written; backward (cb) the same for the
// backward's gather, and the unsharded gradients (in the weights' 16-bit compute
// dtype) read and written into the reduce-scatter input in the reduce dtype (the
// optimizer's gradient bytes). Routed experts sharded on dim 1 — torchtitan's
// apply_fsdp when the expert-data-parallel group times EP exceeds the experts —
// go through a temporary and a concatenation: their copies move twice the bytes.
// All at the elementwise share of HBM bandwidth; a slow GPU is slower at them too.
func (p *pricing) fsdp2Copies(fw *framework.Profile) (cf, cb float64) {
	l, o := &p.req.Layout, &p.req.Training.Optimizer
	layers := p.layers
	gathered := p.weightBytes(p.stageParams, p.matmulDense) / layers
	grads := p.stageParams / layers
	var extraIn float64
	if p.expertShard > 1 {
		ew := p.weightBytes(p.expertParams, p.matmulExpert) / layers
		eg := p.expertParams / layers
		if m := p.req.Model.MoE; m != nil && p.expertShard*max(1, l.EP) > m.Experts {
			// Shard(1): split into a temporary, then torch.cat of its chunks into the
			// parameter; the gradient chunked on dim 1 and concatenated on dim 0
			// (read and written in the compute dtype) before the copy-in.
			ew *= 2
			extraIn = 2 * eg * o.WeightBytes
		}
		gathered += ew
		grads += eg
	}
	out := 2 * gathered // read the all-gather output, write the parameters
	in := grads*(o.WeightBytes+o.GradBytes) + extraIn
	hbm := p.slowHBM()
	cf, cb = out/hbm, out/hbm
	if !fw.FSDP2CopyInOwnStream {
		cb += in / hbm
	}
	return cf, cb
}

// slowHBM is the HBM rate of the GPU that paces the step: the slow GPU's under the
// slow-GPU what-if (its copies run at its speed too).
func (p *pricing) slowHBM() float64 {
	if s := p.req.SlowGPUSpeed; s > 0 && s < 1 {
		return p.rates.hbm * s
	}
	return p.rates.hbm
}

// fsdp2StepCopies is FSDP2's copying on the compute stream where it does not
// reshard between a micro-batch's forward and backward (framework.Profile.
// FSDP2Copies): the stage's weights copied out of the all-gather output (fwd) and
// its gradients into the reduce-scatter input (bwd). Under a pipeline (ZeRO-1)
// torch's pipeline stage keeps the weights gathered and the gradients whole until
// the last micro-batch: once a step, the gradients read in the reduce dtype when
// several micro-batches accumulated them (FSDP2 accumulates an unsharded gradient
// it does not reduce in the reduce dtype, _fsdp_param.py
// to_accumulated_grad_if_needed). Without one (ZeRO-2: reshard_after_forward off)
// FSDP2 still reshards after each backward and reduces each micro-batch's
// gradients: once per micro-batch, read in the 16-bit compute dtype.
func (p *pricing) fsdp2StepCopies(fw *framework.Profile) (fwd, bwd float64) {
	o := &p.req.Training.Optimizer
	gathered := p.weightBytes(p.stageParams, p.matmulDense)
	grads := p.stageParams
	if p.expertShard > 1 {
		gathered += p.weightBytes(p.expertParams, p.matmulExpert)
		grads += p.expertParams
	}
	times, read := p.mf, o.WeightBytes
	if p.req.Layout.PP > 1 {
		times = 1
		if p.mf > 1 {
			read = o.GradBytes
		}
	}
	hbm := p.slowHBM()
	fwd = times * 2 * gathered / hbm
	if !fw.FSDP2CopyInOwnStream {
		bwd = times * grads * (read + o.GradBytes) / hbm
	}
	return fwd, bwd
}

// gradientSync is the exposed time of the end-of-step gradient reduction over the
// data-parallel replicas (all-reduce, or under ZeRO-1/2 reduce-scatter and then the
// updated parameters' all-gather), which only the last backward can hide.
func (p *pricing) gradientSync() (float64, error) {
	l, t, o := &p.req.Layout, &p.req.Training, &p.req.Training.Optimizer
	stageParams, expertParams := p.stageParams, p.expertParams
	var exposed float64
	grad := stageParams * o.GradBytes
	// The last bucket of each gradient buffer (the dense one and the experts')
	// is complete only when the backward pass ends.
	bucket := p.dpBucketBytes()
	var tdp, last float64
	var agW []paramGatherBuf // ZeRO-1/2: the updated parameters gathered under the next forward
	fw, fwErr := framework.Get(t.Framework)
	// fallback: the engine all-reduces the whole gradients through its flatten,
	// average and copy-back passes (framework.Profile.PipelineGradAllReduce).
	fallback := fwErr == nil && fw.PipelineGradAllReduce && l.PP > 1 && l.ZeRO <= 1
	switch {
	case l.ZeRO == 0 || fallback:
		when := "end of step: gradient all-reduce (bucketed, overlapped with the last backward)"
		if fallback {
			when = "end of step: gradient all-reduce of the whole gradients after the pipeline flush (DeepSpeed's buffered_allreduce_fallback), each bucket flattened, averaged and copied back"
		}
		x, err := p.comm(CommDP, collective.AllReduce, grad, 1, when)
		if err != nil {
			return 0, err
		}
		tdp = x
		if fallback {
			tdp += stageParams * framework.PipelineFallbackPassBytes / p.rates.hbm
		}
		if l.ZeRO == 1 {
			// The stage-1 optimizer updates its shard and all-gathers the parameters.
			ag, err := p.paramGatherAfterOptimizer(paramGatherBuf{CommDP, p.paramGatherBytes(stageParams, p.matmulDense), stageParams, "parameter"}, &agW)
			if err != nil {
				return 0, err
			}
			exposed += ag
		}
	default:
		rs, err := p.comm(CommDP, collective.ReduceScatter, grad, 1, "end of step: gradient reduce-scatter (bucketed, overlapped with the last backward)")
		if err != nil {
			return 0, err
		}
		ag, err := p.paramGatherAfterOptimizer(paramGatherBuf{CommDP, p.paramGatherBytes(stageParams, p.matmulDense), stageParams, "parameter"}, &agW)
		if err != nil {
			return 0, err
		}
		tdp = rs
		exposed += ag // the updated weights are needed before the next forward
	}
	last = tdp * min(1, bucket/max(grad, 1))
	if p.expertShard > 1 {
		// Expert gradients reduce over the ranks that hold the same experts.
		eg := expertParams * o.GradBytes
		if l.ZeRO == 0 {
			x, err := p.commOn(CommDP, p.expertGroup, collective.AllReduce, eg, 1, "end of step: expert gradient all-reduce over the expert-data-parallel group (bucketed, overlapped with the last backward)")
			if err != nil {
				return 0, err
			}
			tdp += x
			last += x * min(1, bucket/max(eg, 1))
		} else {
			rs, err := p.commOn(CommDP, p.expertGroup, collective.ReduceScatter, eg, 1, "end of step: expert gradient reduce-scatter over the expert-data-parallel group (bucketed, overlapped with the last backward)")
			if err != nil {
				return 0, err
			}
			ag, err := p.paramGatherAfterOptimizer(paramGatherBuf{p.expertGroup, p.paramGatherBytes(expertParams, p.matmulExpert), expertParams, "expert parameter"}, &agW)
			if err != nil {
				return 0, err
			}
			tdp += rs
			last += rs * min(1, bucket/max(eg, 1))
			exposed += ag
		}
		grad += eg
	}
	if l.Schedule == DualPipe && l.PP > 1 {
		// DualPipe: ranks r and P−1−r each hold a copy of stages r and P−1−r
		// (deepseek-ai/DualPipe), trained by the micro-batches of opposite
		// directions, so after the data-parallel reduction each rank sums its
		// shard of both stages' gradients with its mirror's (rank 0's mirror is
		// the last pipeline rank).
		mirror := (stageParams + expertParams) * o.GradBytes
		if l.ZeRO >= 1 {
			mirror = (stageParams/float64(p.denseShard) + expertParams/float64(max(1, p.expertShard))) * o.GradBytes
		}
		x, err := p.commOn(CommDP, CommEmbed, collective.AllReduce, mirror, 1, "end of step: DualPipe's two copies of each stage sum their gradient shards (rank r with rank P−1−r)")
		if err != nil {
			return 0, err
		}
		tdp += x
		last += x * min(1, bucket/max(grad, 1))
	}
	if l.ZeRO >= 1 {
		if fw, err := framework.Get(t.Framework); err == nil && fw.FSDP2Copies {
			p.stepCopyFwd, p.stepCopyBwd = p.fsdp2StepCopies(fw)
		}
	}
	// Gradient buckets reduce while the last micro-batch's backward runs; the
	// last bucket of each buffer waits for the end of it. Under PyTorch DDP the
	// first reduction starts when the first bucket (1 MiB, the last layers'
	// gradients: framework.TorchDDPFirstBucketBytes) is complete, so the part of
	// the backward that produces it hides nothing.
	window := p.bwd
	if torchDDP(&p.req) && !fallback {
		window = p.bwd * max(0, 1-framework.TorchDDPFirstBucketBytes/max(grad, 1))
	}
	hid := max(0, min(tdp-last, window))
	if t.DPReduceAfterBackward {
		hid = 0 // reduced after the backward pass (the framework's engine)
	}
	exposed += tdp - hid
	if len(agW) > 0 {
		agExp, agHid, err := p.overlappedParamGather(agW)
		if err != nil {
			return 0, err
		}
		exposed += agExp
		hid += agHid
	}
	p.res.Breakdown.Hidden[CommDP] = hid
	p.hiddenPerMB += hid / p.mf
	return exposed, nil
}

// fp8AmaxReduce prices Transformer Engine's amax reduction under delayed scaling
// in Megatron-Core's layers. Megatron-Core wraps each model chunk's forward in one
// fp8_autocast under the delayed recipe (transformer/transformer_block.py at
// 25.09-alpha.rc1 and core_v0.13.1: use_outer_fp8_context, fp8_utils.py
// get_fp8_context with fp8_group = get_amax_reduction_group(with_context_parallel=
// True): the TP × CP × DP ranks). Transformer Engine all-reduces (MAX) the amaxes
// of every fp8 tensor of the forward when that context exits, and those of the
// backward when the backward of its first fp8 module ends
// (FP8GlobalStateManager.reduce_and_update_fp8_tensors, all_reduce with
// async_op=False): two blocking all-reduces per micro-batch and model chunk,
// between the forward and the loss and at the end of the backward, with nothing
// beside them on the compute stream. The buffers hold one fp32 per fp8 tensor:
// three per GEMM forward (input, weight, output) and two backward (the gradients),
// as Transformer Engine's modules size their fp8 metadata (num_gemms × 3 and × 2),
// one GEMM per fp8 weight tensor (fp8WeightTensors). The current-scaling and
// block-scaled recipes keep no amax history and reduce nothing here.
func (p *pricing) fp8AmaxReduce() error {
	t, l := &p.req.Training, &p.req.Layout
	if !p.rates.fp8 || t.FP8Recipe != FP8Delayed || p.g.n/max(1, l.PP) <= 1 {
		return nil
	}
	if fw, err := framework.Get(t.Framework); err != nil || !fw.TELayers {
		return nil
	}
	v := 1.0
	if l.PP > 1 && l.VirtualStages > 1 {
		v = float64(l.VirtualStages)
	}
	gemms := fp8WeightTensors(p.req, p.parts.nDense, p.parts.nMoE) / v
	calls := 2 * p.mf * v // per micro-batch and chunk: forward, backward
	// The maximum of the fp32 amaxes (FP8GlobalStateManager.reduce_tensor_across_group_op_max,
	// torch.distributed.ReduceOp.MAX; transformer_engine/pytorch/fp8.py at 62a84b3):
	// NCCL has no NVLS kernel for it, so it runs on a ring or the trees whether or
	// not the communicator has NVLS (collective.MaxFloat32).
	ctas := p.groupMaxCTAs(commAmax)
	fwd, err := p.commReducing(CommDP, commAmax, collective.AllReduce, 3*gemms*fp32Bytes, p.mf*v, "per micro-batch and model chunk: Transformer Engine's forward amax reduction under delayed scaling (TP x CP x DP)", ctas, collective.MaxFloat32)
	if err != nil {
		return err
	}
	bwd, err := p.commReducing(CommDP, commAmax, collective.AllReduce, 2*gemms*fp32Bytes, p.mf*v, "per micro-batch and model chunk: Transformer Engine's backward amax reduction under delayed scaling (TP x CP x DP)", ctas, collective.MaxFloat32)
	if err != nil {
		return err
	}
	p.dpExposed += (fwd + bwd) * calls / 2
	return nil
}

// fp32Bytes is the width of an fp32 value.
const fp32Bytes = 4

// paramGatherBuf is one buffer of updated parameters ZeRO-1/2 all-gathers: over
// the group place names, weights bytes holding params parameters.
type paramGatherBuf struct {
	place           Comm
	weights, params float64
	what            string
}

// paramGatherAfterOptimizer prices the all-gather of one buffer of updated
// parameters after the optimizer, waited for (ParamGatherExposed); with
// ParamGatherOverlapped it adds the buffer to over, for overlappedParamGather,
// and returns 0.
func (p *pricing) paramGatherAfterOptimizer(b paramGatherBuf, over *[]paramGatherBuf) (float64, error) {
	if p.req.Training.ParamGather == ParamGatherOverlapped {
		*over = append(*over, b)
		return 0, nil
	}
	return p.commOn(CommDP, b.place, collective.AllGather, b.weights, 1, paramGatherWhen(b.what))
}

// paramGatherWhen is when the communication table says the all-gather of
// paramGatherBuf.what runs: the buffers the estimate prices are spelt out, so
// that an estimate does not concatenate (and allocate) the string.
func paramGatherWhen(what string) string {
	switch what {
	case "parameter":
		return "after the optimizer: parameter all-gather"
	case "expert parameter":
		return "after the optimizer: expert parameter all-gather"
	}
	return "after the optimizer: " + what + " all-gather"
}

// overlappedParamGather prices the all-gather of the updated parameters bucket
// by bucket under the next step's first forward (ParamGatherOverlapped), in the
// data-parallel buckets (dpBucketBytes; Megatron-Core's parameter and gradient
// buffers share their buckets, param_and_grad_buffer.py), per model chunk with
// interleaving. It returns the exposed seconds and those that run under the
// forward.
func (p *pricing) overlappedParamGather(bufs []paramGatherBuf) (exposed, hidden float64, err error) {
	l, t := &p.req.Layout, &p.req.Training
	v := 1
	if l.PP > 1 && l.VirtualStages > 1 {
		v = l.VirtualStages
	}
	bucketParams := p.dpBucketBytes() / t.Optimizer.GradBytes
	var pb []paramBuffer
	for _, b := range bufs {
		n := max(1, int(math.Ceil(b.params/float64(v)/bucketParams)))
		g, err := p.commOn(CommDP, b.place, collective.AllGather, b.weights/float64(v*n), float64(v*n), "under the first forward: "+b.what+" all-gather, bucket by bucket (overlap_param_gather)")
		if err != nil {
			return 0, 0, err
		}
		pb = append(pb, paramBuffer{g, n})
	}
	exposed, hidden = paramGatherTimeline(pb, v, p.fwd)
	return exposed, hidden, nil
}

// dpBucketBytes is the size of one data-parallel gradient bucket: the stated
// number of parameters (training.dp_bucket_params) in the width the gradients are
// reduced in, or the framework's — Megatron-Core's max(40e6, 1e6 × DP) parameters
// in that width, PyTorch DDP's 25 MiB (framework.TorchDDPBucketBytes) where the
// framework's data parallelism is DDP, Constants.DPBucketBytes otherwise.
func (p *pricing) dpBucketBytes() float64 { return dpBucketBytes(&p.req, &p.e.k) }

// torchDDP tells whether the request's data parallelism is PyTorch's
// DistributedDataParallel (framework.Profile.TorchDDP): its buckets are 25 MiB
// unless the request states them, and its first bucket 1 MiB whatever the others
// (dist._DEFAULT_FIRST_BUCKET_BYTES, passed to the Reducer whatever bucket_cap_mb
// is in the 1.x sources; PyTorch 2.x's DDP drops the 1 MiB bucket from its
// initial buckets when bucket_cap_mb is set, bucket_bytes_cap_default: not
// modelled).
func torchDDP(req *Request) bool {
	fw, err := framework.Get(req.Training.Framework)
	return err == nil && slices.Contains(fw.TorchDDP, req.Layout.ZeRO)
}

// Megatron-Core's default gradient bucket, max(40000000, 1000000 × dp_size)
// parameters (megatron/core/distributed/distributed_data_parallel_config.py,
// bucket_size; DistributedDataParallel.__init__).
const (
	megatronMinBucketParams   = 40e6
	megatronBucketParamsPerDP = 1e6
)

func dpBucketBytes(req *Request, k *Constants) float64 {
	t := &req.Training
	params := t.DPBucketParams
	if params == 0 {
		if fw, err := framework.Get(t.Framework); err == nil && fw.MegatronDDPBuckets {
			params = max(megatronMinBucketParams, megatronBucketParamsPerDP*float64(req.Layout.DP))
		} else if torchDDP(req) {
			return framework.TorchDDPBucketBytes
		} else {
			return k.DPBucketBytes
		}
	}
	return params * t.Optimizer.GradBytes
}

// tiedEmbedding prices the sum of a tied embedding's gradients at the end of the
// step: with pipeline parallelism the first stage (embedding) and the last (output
// layer) each hold a copy of the one matrix.
func (p *pricing) tiedEmbedding() error {
	a, l := &p.req.Model, &p.req.Layout
	if !a.TiedEmbeddings || l.PP <= 1 {
		return nil
	}
	x, err := p.comm(CommEmbed, collective.AllReduce, float64(a.Vocab)*p.h/p.tf*p.req.Training.Optimizer.GradBytes, 1, "end of step: tied embedding gradient, first and last stage")
	if err != nil {
		return err
	}
	p.res.Breakdown.Exposed[CommEmbed] = x
	return nil
}

// optimizer times the update of the parameters this rank owns (its ZeRO shard),
// bound by HBM bandwidth on the GPU, or by host memory on the CPU with offload,
// where the gradients and the updated weights also cross the host link.
func (p *pricing) optimizer() {
	l, t, o := &p.req.Layout, &p.req.Training, &p.req.Training.Optimizer
	stageParams, expertParams := p.stageParams, p.expertParams
	bd := &p.res.Breakdown
	shard, eshard := 1.0, 1.0
	if l.ZeRO >= 1 {
		shard, eshard = float64(p.denseShard), float64(max(1, p.expertShard))
	}
	bytes := p.e.k.OptimizerBytes
	fw, fwErr := framework.Get(t.Framework)
	if fwErr == nil && fw.OptimizerUpdateBytes > 0 {
		// The framework's own update is not a fused multi-tensor Adam (Composer's
		// DecoupledAdamW: eight elementwise kernels per tensor).
		bytes = fw.OptimizerUpdateBytes
	}
	bd.Optimizer = (stageParams/shard + expertParams/eshard) * bytes / p.rates.hbm
	if fwErr == nil && fw.FP16GradCheckBytes > 0 && l.ZeRO == 1 {
		// The stage-1 optimizer's overflow check and gradient norm read every
		// gradient the rank holds, before it frees those it does not own.
		bd.Optimizer += (stageParams + expertParams) * fw.FP16GradCheckBytes / p.rates.hbm
	}
	if p.megatronGradBuffers() {
		// Megatron-Core's DistributedDataParallel zeroes its whole gradient
		// buffers, dense and expert, at the start of every step
		// (distributed_data_parallel.py zero_grad_buffer → param_and_grad_buffer.py
		// reset: grad_data.zero_(), Megatron-Core 2436e3d): one write of every
		// gradient this rank holds, at HBM speed.
		zero := (stageParams + expertParams) * o.GradBytes / p.rates.hbm
		// The fp8 primary weights' cast loop runs on the host while the GPU runs
		// the update issued before it, and nothing else is queued: the grad-norm's
		// .item() has just synchronised the host with the GPU.
		cast := max(0, p.fp8MasterCastHost()-bd.Optimizer)
		bd.Optimizer += zero + cast
	} else if p.megatronFSDP() {
		// Megatron-FSDP steps with the same DistributedOptimizer, whose grad norm
		// synchronises the host (clip_grads.py get_grad_norm_fp32: .item()), and
		// then casts through Transformer Engine's cast_master_weights_to_fp8 every
		// fp8 parameter of each chunk, owned shard or not
		// (distrib_optimizer.py → megatron_fsdp/param_and_grad_buffer.py
		// copy_main_weights_to_model_weights: every is_float8tensor param of every
		// parameter group appended, empty shards as None; Megatron-LM d98e8a6): the
		// same host loop as the distributed optimizer's.
		bd.Optimizer += max(0, p.fp8MasterCastHost()-bd.Optimizer)
	}
	if l.Offload == OffloadOptimizer || l.Offload == OffloadParams {
		// The CPU updates this rank's shard, bound by host memory bandwidth.
		hostMem, link := hostRates(p.req.Cluster)
		owned := stageParams/shard + expertParams/eshard
		bd.Optimizer = owned * HostAdamBytesPerParam / hostMem
		if l.Offload == OffloadOptimizer {
			// The reduced gradient shard goes to the host as its buckets finish under
			// the last backward (none of it hides when the framework reduces after the
			// backward); the updated 16-bit weights come back before the parameter
			// all-gather.
			d2h := owned * o.GradBytes / link
			hid := min(d2h, p.bwd)
			if t.DPReduceAfterBackward {
				hid = 0
			}
			bd.Optimizer += d2h - hid + owned*o.WeightBytes/link
		}
	}
}

// megatronGradBuffers: the framework keeps its gradients in Megatron-Core's
// DistributedDataParallel buffers (whole on every rank up to ZeRO-1: the
// distributed optimizer shards only its own states) and steps them with
// Megatron-Core's optimizers.
func (p *pricing) megatronGradBuffers() bool {
	fw, err := framework.Get(p.req.Training.Framework)
	return err == nil && fw.MegatronDDPBuckets && p.req.Layout.ZeRO <= 1 &&
		p.req.Layout.Offload != OffloadOptimizer && p.req.Layout.Offload != OffloadParams
}

// megatronFSDP: the framework shards its gradients (ZeRO-2) or also its weights
// (ZeRO-3) with Megatron-FSDP, Megatron-Core's fully sharded data parallelism, and
// steps them with Megatron-Core's distributed optimizer (use_megatron_fsdp).
func (p *pricing) megatronFSDP() bool {
	fw, err := framework.Get(p.req.Training.Framework)
	return err == nil && fw.MegatronDDPBuckets && p.req.Layout.ZeRO >= 2 &&
		p.req.Layout.Offload != OffloadOptimizer && p.req.Layout.Offload != OffloadParams
}

// Eager operators per fp8 weight tensor in Transformer Engine's cast of the
// updated master weights into the fp8 primary weights, which Megatron-Core's
// optimizers call every step for every fp8 weight of the model chunk, whether or
// not this rank owns a shard of it (distrib_optimizer.py
// _copy_main_params_to_model_params → quantize_param_shard over
// _get_fp8_params_and_shard_fp32_from_fp8, which lists every quantized parameter
// of the buffers; Megatron-Core 2436e3d). Transformer Engine
// (transformer_engine/pytorch/tensor/utils.py at 9ad2e7b, April 2026):
//   - delayed scaling (_cast_master_weights_to_fp8_delayed_scaling): the amax,
//     scale and scale_inv of each weight viewed as one-element tensors (3 views),
//     and one element of the packed amax and scale buffers selected and viewed for
//     each (2 × 2): 7;
//   - current scaling (_cast_master_weights_to_fp8_current_scaling): a slice of the
//     packed amaxes, an empty scale and a view of scale_inv: 3.
//
// The casts of the owned shards are kernels the GPU runs inside the update; the
// block-scaled recipes' loops are not counted.
const (
	fp8MasterCastOpsDelayed = 7
	fp8MasterCastOpsCurrent = 3
)

// fp8MasterCastHost is the host time of the step's fp8 primary-weight cast loop:
// the operators per fp8 weight tensor of the stage (fp8MasterCastOps*) at
// Constants.EagerOpHostUs each on this node's CPU (hostOpScale). Zero without fp8
// weights.
func (p *pricing) fp8MasterCastHost() float64 {
	t := &p.req.Training
	if !t.FP8Params || !p.rates.fp8 {
		return 0
	}
	var ops float64
	switch t.FP8Recipe {
	case FP8Delayed:
		ops = fp8MasterCastOpsDelayed
	case FP8Current:
		ops = fp8MasterCastOpsCurrent
	default:
		return 0
	}
	return fp8WeightTensors(p.req, p.parts.nDense, p.parts.nMoE) * ops * p.e.k.EagerOpHostUs * 1e-6 * hostOpScale(p.req.Cluster.Spec)
}

// fp8WeightTensors counts the fp8 matmul weight tensors of a stage of nDense dense
// and nMoE MoE layers, as Megatron-Core builds them with Transformer Engine: the
// fused QKV and the output projection (multi-head latent attention: the query
// down and up projections when queries are compressed, else one query
// projection, the key-value down and up projections, the output projection); a
// dense MLP's two (the fused up and gate, the down); an MoE layer's two per local
// expert (TEGroupedLinear keeps one weight per GEMM, the sequential MLP one
// Linear pair per expert) and the shared experts' two. The router stays in 16 or
// 32 bits.
func fp8WeightTensors(req Request, nDense, nMoE float64) float64 {
	a := &req.Model
	attn := 2.0
	if m := a.MLA; m != nil {
		attn = 4
		if m.QLoRARank > 0 {
			attn = 5
		}
	}
	n := nDense * (attn + 2)
	if m := a.MoE; m != nil && nMoE > 0 {
		per := attn + 2*float64(m.Experts/max(1, req.Layout.EP))
		if m.SharedExperts > 0 {
			per += 2
		}
		n += nMoE * per
	}
	return n
}

// assemble completes the breakdown, whose parts add up to the step time: every
// micro-batch through the slowest stage, the bubble, the exposed communication,
// the optimizer, and the contention of the communication that ran under compute.
func (p *pricing) assemble() {
	bd := &p.res.Breakdown
	mf := p.mf
	// Contention: overlapped communication occupies SMs, the framework's share.
	smShare := commSMs(p.req.Training.Framework) / max(1, p.rates.sms)
	contPerMB := p.hiddenPerMB*smShare + p.tpContPerMB

	bd.Forward = mf * p.fwd
	if p.rates.fp8 && p.req.Training.fp8WeightsCastOncePerStep() {
		bd.Forward += p.parts.weightCast // once per step, reused by every micro-batch
	}
	bd.Backward = mf * p.bwd
	// FSDP2's copies around a once-a-step gather and reduce-scatter (ZeRO-1/2).
	bd.Forward += p.stepCopyFwd
	bd.Backward += p.stepCopyBwd
	bd.Recompute = mf * p.rc
	bd.Exposed[CommTP] = mf*p.tpPerMB + p.tpPerStep
	bd.Exposed[CommCP] = mf * p.cpPerMB
	bd.Exposed[CommEP] = mf * p.epPerMB
	bd.Exposed[CommPP] = p.ppExposed
	bd.Exposed[CommDP] = p.dpExposed
	bd.Exposed[CommZeRO3] = p.z3Exposed
	bd.Bubble = p.bubble
	bd.Contention = mf * contPerMB
	p.res.Pipeline = mf*(p.fwd+p.bwd+p.rc+p.tpPerMB+p.cpPerMB+p.epPerMB) + p.bubble + p.ppExposed
	p.res.StepTime = bd.Sum()
}

// memory prices the peak per-GPU memory of the slowest stage and, in the detailed
// answer, says what a layout that does not fit runs out of.
func (p *pricing) memory() {
	res := &p.res
	res.Memory = p.e.memory(&p.req, p.parts.stageLayers, p.stageParams, p.expertParams, res.MicroBatches)
	if !res.Memory.Fits && p.detail {
		if mm := res.Memory; mm.Host > mm.HostCapacity {
			res.Warnings = append(res.Warnings, fmt.Sprintf("does not fit in host memory: offload needs %.1f GB per GPU of its %.1f GB share", mm.Host, mm.HostCapacity))
		}
		if res.Memory.Headroom < 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("does not fit: needs %.1f GB per GPU of %.1f GB", res.Memory.Total, res.Memory.Capacity))
		}
	}
}

// throughput turns the step time into tokens per second and FLOP utilisation, the
// figures published runs report.
func (p *pricing) throughput() {
	t, res := &p.req.Training, &p.res
	stepTokens := float64(t.GlobalBatch) * p.s
	res.Throughput.TokensPerSec = stepTokens / res.StepTime
	res.Throughput.TokensPerSecPerGPU = res.Throughput.TokensPerSec / float64(p.g.n)
	model := 3 * p.e.modelForwardFLOPs(&p.req) * float64(t.GlobalBatch)
	hw := model * (1 + p.parts.rcShare/3) // the forward FLOPs run again
	peak := p.rates.peak16 * float64(p.g.n)
	res.Throughput.MFU = model / res.StepTime / peak
	res.Throughput.HFU = hw / res.StepTime / peak
}

// explain lists, for the detailed answer, the assumptions behind the estimate and
// the what-ifs and offload it priced, so that a reader can tell what it rests on.
func (p *pricing) explain() {
	l, cl, res := &p.req.Layout, p.req.Cluster, &p.res
	res.Assumptions = p.e.assumptions(&p.req, &p.rates)
	if s := p.req.SlowGPUSpeed; s > 0 && s < 1 {
		res.Assumptions = append(slices.Clip(res.Assumptions), fmt.Sprintf(
			"what-if: one GPU at %.0f%% of its speed; its pipeline stage paces every micro-batch and every data-parallel replica waits for it", 100*s))
	}
	if l.Offload == OffloadOptimizer || l.Offload == OffloadParams {
		res.Assumptions = append(slices.Clip(res.Assumptions), offloadNote(*l, cl))
	}
	if l.OffloadActivations {
		res.Assumptions = append(slices.Clip(res.Assumptions), activationOffloadNote(cl, res.Memory.ActivationBytesPerLayer))
	}
	if m := p.req.Model.MoE; m != nil {
		res.Assumptions = append(slices.Clip(res.Assumptions), p.moeNote())
	}
	if d := cl.Degraded; d != "" {
		res.Assumptions = append(slices.Clip(res.Assumptions), p.degradedNote(d))
	}
	if d := cl.Loaded; d != "" {
		res.Assumptions = append(slices.Clip(res.Assumptions), "other jobs: "+d)
	}
}

// queuesNote states the hardware queues the step runs with, what sets them, and
// what one queue does to the EP all-to-all overlap (epOverlapLayerOneQueue).
func queuesNote(q int, from string, oneQueueEP bool) string {
	note := fmt.Sprintf("hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): %d, %s", q, from)
	if oneQueueEP {
		note += "; on one queue the kernels start in launch order, so the EP overlap's forward dispatch, launched after the expert backward, runs beside no compute"
	}
	return note
}

// oneQueueSerialisesEP says whether one hardware queue holds back the EP
// all-to-all overlap's forward dispatch (epOverlapLayerOneQueue): the overlap
// on an MoE model outside DualPipe.
func oneQueueSerialisesEP(req *Request, q int) bool {
	l := &req.Layout
	return q == 1 && l.OverlapEP && l.Schedule != DualPipe && req.Model.MoE != nil
}

// degradedNote states the link what-ifs d applied at rank 0's GPU and node, and
// what they slow: a job whose ranks all lie on rank 0's node sends no collective
// through its NICs (the cluster routes a node's own GPUs over its scale-up fabric),
// so a degraded NIC changes nothing there and the note says so.
func (p *pricing) degradedNote(d string) string {
	const paced = "runs at its pace and the step waits for the slowest group"
	if !(p.req.DegradedNICSpeed > 0 && p.req.DegradedNICSpeed < 1) || !p.oneNode() {
		return fmt.Sprintf("what-if: %s (rank 0's); every collective through it %s", d, paced)
	}
	if p.req.DegradedLinkSpeed > 0 && p.req.DegradedLinkSpeed < 1 {
		return fmt.Sprintf("what-if: %s (rank 0's); the job's ranks all lie on that node, so no collective goes through its NICs; every collective through the link %s", d, paced)
	}
	return fmt.Sprintf("what-if: %s (rank 0's); the job's ranks all lie on that node, so no collective goes through its NICs and they change nothing", d)
}

// oneNode is whether every rank of the job runs on rank 0's node.
func (p *pricing) oneNode() bool {
	cl, rm := p.req.Cluster, p.req.Ranks
	gpu := func(r int) int {
		if rm != nil {
			return rm.GPU(r)
		}
		return r
	}
	node := cl.Node(gpu(0))
	for r := 1; r < p.g.n; r++ {
		if cl.Node(gpu(r)) != node {
			return false
		}
	}
	return true
}

// ring is ring attention's communication for one micro-batch through a stage (Liu et
// al. 2023; Megatron-Core / Transformer Engine's P2P context parallelism): the
// sequence is split in 2·CP chunks, rank i holding chunks i and 2·CP−1−i, so that
// causal attention does the same work on every rank. A layer's forward runs CP
// steps: each computes the local queries against one K/V block while the next block
// arrives from the ring neighbour. The backward runs CP steps again, each launching
// its send/recv before its attention and waiting for it after
// (Transformer Engine's AttnFuncWithCPAndKVP2P.backward,
// transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py at
// 9c61cd7: "wait until dKV is received" closes every step): the first step sends
// the K/V block alone, the middle ones the K/V block with the dK/dV partial sum
// behind it, and the last the dK/dV partial sum alone, home to its owner under the
// last step's attention — 2·(CP − 1) blocks. A step whose transfer outlasts its
// attention exposes the difference; every step also merges its partial
// output into the running one (online softmax: the fp32 accumulator read and
// written, the step's bf16 output read; dQ accumulates in fp32 the same way
// backward), a memory-bound kernel of its own.
//
// PyTorch's context_parallel (gather; framework.Profile.TorchRingAttention) moves
// the same blocks otherwise: one all-gather of every rank's K/V per attention call
// (forward, again where recomputed, and backward), which the first step's attention
// has to hide; the dK/dV partial sums in fp32, one block per step by a permuting
// all-to-all, waited for after the next step's attention, the last one after the
// loop with nothing to hide it. Its merges (_SDPAMerger, fp32) are priced as the
// fused ones above: the source writes them as separate elementwise operators (about
// 38 B per output element per step forward, 46 B backward), which torch.compile
// fuses where it traces the ring; the published torchtitan runs compiled their
// blocks, and whether the ring was traced is not stated.
type ring struct {
	block  float64 // bytes of one K/V block
	passes float64 // block transfers per layer (the send/recv ring): CP − 1 forward (again where recomputed), 2·(CP − 1) backward
	cp, rc float64 // CP degree, recomputed share of the layers
	layers float64
	// stepF, stepB: one ring step's attention forward and backward; merge: the
	// stage's partial-output merges.
	stepF, stepB, merge float64
	// gather: PyTorch's context_parallel; gradBlock: the bytes of one fp32 dK/dV
	// block it sends per step.
	gather    bool
	gradBlock float64
	// n are the stage's dense and MoE layers, slackF and slackB the host's slack
	// in one of each kind's forward and backward passes that the overlapped TP
	// collectives left (withSlack).
	n, slackF, slackB [2]float64
}

// withSlack gives r the host's slack of cp's layers (layerTimes.hostFwd,
// hostBwd) less what the overlapped TP collectives take of it (used,
// tpOverlapSlack). A layer the host binds leaves the GPU idle between its kernels
// for that long: a kernel launch returns before the kernel runs (CUDA C++
// Programming Guide, "Asynchronous Concurrent Execution"), and the ring's sends
// the attention steps leave exposed run then — the next step's attention waits
// for its block, and for the host's launch of it too — before they lengthen the
// layer, which takes max(host issue, GPU work + exposed sends) (perMB).
func (r *ring) withSlack(cp *computeParts, used [2][2]float64) {
	r.n = [2]float64{cp.nDense, cp.nMoE}
	for k, lt := range [2]*layerTimes{&cp.lc, &cp.lcMoE} {
		r.slackF[k] = max(0, lt.hostFwd-used[k][0])
		r.slackB[k] = max(0, lt.hostBwd-used[k][1])
	}
}

// ringAttention describes the ring of layout l for a micro-batch of tokens tokens
// per GPU of hidden size h, keys and values kvw × h wide (qvw × h where the
// framework repeats the K/V heads to the queries' before the attention call), TP
// tf, on a GPU of HBM bandwidth hbm, under framework fw.
func ringAttention(l Layout, cp *computeParts, tokens, h, kvw, qvw, tf, hbm float64, fw string) ring {
	p, err := framework.Get(fw)
	return ringAttentionOf(&l, cp, tokens, h, kvw, qvw, tf, hbm, err == nil && p.TorchRingAttention)
}

// ringAttentionOf is ringAttention with the framework's choice given: torchRing for
// PyTorch's ring attention (framework.Profile.TorchRingAttention).
func ringAttentionOf(l *Layout, cp *computeParts, tokens, h, kvw, qvw, tf, hbm float64, torchRing bool) ring {
	cpf := float64(l.CP)
	layers := float64(cp.stageLayers)
	rcF := l.recomputeShare(cp.stageLayers)
	attnF := (cp.nDense*cp.lc.attnFwd + cp.nMoE*cp.lcMoE.attnFwd) / layers
	attnB := (cp.nDense*cp.lc.attnBwd + cp.nMoE*cp.lcMoE.attnBwd) / layers
	r := ring{
		block:  tokens * h * kvw / tf * 2, // keys and values in 16 bits
		passes: (cpf-1)*(1+rcF) + 2*(cpf-1),
		cp:     cpf, rc: rcF, layers: layers,
		stepF: attnF / cpf, stepB: attnB / cpf,
		merge: cpf * (1 + rcF + 1) * tokens * h / tf * cpMergeBytes / hbm,
	}
	if torchRing {
		r.gather = true
		r.block = tokens * h * qvw / tf * 2
		r.gradBlock = 2 * r.block // fp32
	}
	return r
}

// ringPrices are the times of one K/V block send (p2p), of the all-gather of every
// rank's block (gather) and of one dK/dV block send (grad).
type ringPrices struct{ p2p, gather, grad float64 }

// perMB is the ring's exposed and hidden time per micro-batch at prices c, and
// idle what of the sends the attention leaves exposed runs while the GPU waits for
// the host (withSlack): hidden by the host, not by compute, so taking no SMs from
// it. A slower attention step hides more of its send and lengthens the GPU's work
// by as much, so a layer the host binds never gets shorter with it.
func (r ring) perMB(c ringPrices) (exposed, hidden, idle float64) {
	exposed, hidden, idle, _ = r.perMBSplit(c)
	return exposed, hidden, idle
}

// perMBSplit is perMB, and pass the forward pass's part of exposed and the
// recomputed forward's (passShare): their sends less what of them their slack
// runs, and their share of the merges (one a step forward, again where
// recomputed, and backward).
func (r ring) perMBSplit(c ringPrices) (exposed, hidden, idle float64, pass [2]float64) {
	var expF, expB, total float64
	if r.gather {
		expF = max(0, c.gather-r.stepF) * (1 + r.rc)
		expB = max(0, c.gather-r.stepB) + (r.cp-1)*max(0, c.grad-r.stepB) + c.grad
		total = c.gather*(2+r.rc) + r.cp*c.grad
	} else {
		expF = (r.cp - 1) * max(0, c.p2p-r.stepF) * (1 + r.rc)
		// Backward: the first step's K/V block and the last step's dK/dV block each
		// under one step's attention, the CP − 2 middle steps' K/V and dK/dV blocks
		// back to back under theirs.
		expB = 2*max(0, c.p2p-r.stepB) + (r.cp-2)*max(0, 2*c.p2p-r.stepB)
		total = r.passes * c.p2p
	}
	// One pass's exposed sends (the recomputed forward is the forward again, its
	// host time too), run in each kind of layer's slack.
	ef := expF / (1 + r.rc)
	var idleF float64 // what of one forward's sends runs in the host's slack
	for k, n := range r.n {
		idle += n * (min(ef, r.slackF[k])*(1+r.rc) + min(expB, r.slackB[k]))
		idleF += n * min(ef, r.slackF[k])
	}
	mf, mr := passShare(1, r.rc, 1)
	pass = [2]float64{(ef+r.merge*mf)*r.layers - idleF, (ef*r.rc+r.merge*mr)*r.layers - idleF*r.rc}
	return (expF+expB+r.merge)*r.layers - idle, (total - expF - expB) * r.layers, idle, pass
}

// zero3Overlap is what flat ZeRO-3 exposes and hides over a step: per layer and
// micro-batch the weights are gathered forward and again backward and the gradients
// reduce-scattered (ag and rs seconds per layer), prefetching hiding what fits under
// the layer's compute (fwd, bwd and rc seconds per micro-batch over the stage's
// layers, m micro-batches). With backward prefetch other than pre the next layer's
// gather starts only once this layer's gradients are computed, and that layer waits
// for it; the reduce-scatter behind it on the communicator runs under that layer's
// compute. The gathers run on their own stream for the layer's whole length, its
// exposed communication included: xF and xB are the micro-batch's TP, CP and EP
// communication exposed on the compute stream by the forward pass and by the
// backward pass (seconds per micro-batch, the recomputed forward's in the
// backward's), each widening its own pass's window: the forward's gathers run
// under the forward's layers, the backward's gathers and reduce-scatters under the
// backward's. A recomputed forward runs in the backward pass, just before its
// layer's backward, on the weights the backward's gather brought
// (torch.utils.checkpoint reruns the forward when autograd reaches it; Megatron-FSDP
// unshards once for the recomputed forward and the backward: its pre-forward hook
// skips the gather and the forward prefetch of a module in PRE_BACKWARD,
// megatron/core/distributed/custom_fsdp/fully_sharded_data_parallel.py
// _pre_forward_param_unshard and docs/source/api-guide/custom_fsdp.md §4.1,
// NVIDIA/Megatron-LM at 1e057005): so rc widens the backward's window, not the
// forward's. DeepSpeed gathers a sub-module's weights, and prefetches the next
// ones in the recorded trace, from the hook of the pass that runs it
// (pre_sub_module_forward_function and pre_sub_module_backward_function call
// PartitionedParameterCoordinator.fetch_sub_module with forward true and false,
// deepspeed/runtime/zero/parameter_offload.py and partitioned_param_coordinator.py,
// microsoft/DeepSpeed at 03aecee); FSDP unshards and prefetches for the forward in
// its pre-forward hook and for the backward in _pre_backward_hook and
// _post_backward_hook, which also reduce-scatters the layer's gradients on the
// post-backward stream once the backward's compute has made them
// (torch/distributed/fsdp/_runtime_utils.py, pytorch/pytorch at 00ae0bc). A layer then
// takes max(its compute + exposed communication, its gathers) in each pass: its
// length less its communication never shrinks as either pass's window grows, and
// (exposed + m·layers·window) never decreases in either window. hiddenMB is the
// hidden time of one micro-batch.
func zero3Overlap(ag, rs, fwd, bwd, rc, xF, xB, layers, m float64, prefetchPre bool) (exposed, hidden, hiddenMB float64) {
	perLayerF := (fwd + xF) / layers
	perLayerB := (bwd + rc + xB) / layers
	expF := max(0, ag-perLayerF)
	expB := max(0, ag+rs-perLayerB)
	if !prefetchPre {
		expB = ag + max(0, rs-perLayerB)
	}
	exposed = (expF + expB) * layers * m
	// The first gather of the step and the last reduce-scatter cannot hide: what of
	// them the per-layer overlap counted as hidden is exposed too (no more, or a
	// gather already exposed would be counted twice).
	first, last := ag-expF, min(rs, ag+rs-expB)
	exposed += first + last
	hidden = ((ag-expF)+(ag+rs-expB))*layers*m - first - last
	return exposed, hidden, ((ag - expF) + (ag + rs - expB)) * layers
}

// assumptionKey identifies a cached assumptions list.
type assumptionKey struct {
	arch      string
	gpuArch   hardware.Arch
	precision Precision
	unfused   bool
	flash2    bool
	onDemand  bool
	prefetch  BackwardPrefetch
	framework string
	fp8       FP8Recipe
	fp8Params bool
	dpAfter   bool
	peak, sms float64
	// What describe reads of the model, the node and the layout (hostNote,
	// dpBucketBytes).
	cudaGraphs bool
	mla        int8 // 0 none, 1 MLA, 2 MLA with a compressed query
	hostScale  float64
	dpBucket   float64
	// What queuesNote reads: the hardware queues, what sets them, and whether
	// one queue serialises the EP overlap's forward dispatch.
	queues     int
	queuesFrom string
	oneQueueEP bool
	// Whether the fp8 note names the key and value projections among what runs in
	// 16 bits (fp8KVIn16Bits).
	kv16 bool
}

// ErrUnsupported says the estimator lacks calibration for a request.
var ErrUnsupported = errors.New("not supported")
