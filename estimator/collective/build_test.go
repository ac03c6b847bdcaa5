package collective

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

// testSizes are the group sizes of the property tests: every size up to 16, then a
// spread with primes and powers of two.
var testSizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 31, 32, 37, 48, 61, 64}

type namedShape struct {
	name string
	sh   Shape
}

// uniformShape puts n ranks on nodes of perNode ranks each.
func uniformShape(n, perNode int) Shape {
	sh := Shape{Node: make([]int32, n)}
	for r := range sh.Node {
		sh.Node[r] = int32(r / perNode)
	}
	return sh
}

// testShapes are one node, one rank per node, and 2, 4 or 8 ranks per node where
// that divides n (and differs from the first two), plus an uneven split.
func testShapes(n int) []namedShape {
	out := []namedShape{{"1node", uniformShape(n, n)}}
	if n > 1 {
		out = append(out, namedShape{"1pernode", uniformShape(n, 1)})
	}
	for _, p := range []int{2, 4, 8} {
		if p < n && n%p == 0 {
			out = append(out, namedShape{fmt.Sprintf("%dpernode", p), uniformShape(n, p)})
		}
	}
	if n >= 5 && n <= 16 {
		// Uneven: a first node of 3 ranks, the rest 2 per node (or fewer on the last).
		sh := Shape{Node: make([]int32, n)}
		for r := range sh.Node {
			if r >= 3 {
				sh.Node[r] = int32(1 + (r-3)/2)
			}
		}
		out = append(out, namedShape{"uneven", sh})
	}
	return out
}

// testElems are element counts divisible by n, not divisible, and fewer than n.
func testElems(n int) []int64 {
	out := []int64{int64(5 * n), int64(7*n + 3)}
	if n > 1 {
		out = append(out, int64(n-1))
	} else {
		out = append(out, 0)
	}
	return out
}

// randomInputs fills one buffer per rank with integers in [−1000, 1000], so that
// every sum is exact in float64.
func randomInputs(rng *rand.Rand, n int, bufLen int64) [][]float64 {
	in := make([][]float64, n)
	for r := range in {
		in[r] = make([]float64, bufLen)
		for i := range in[r] {
			in[r][i] = float64(rng.IntN(2001) - 1000)
		}
	}
	return in
}

// checkWellFormed verifies the invariants every built schedule keeps.
func checkWellFormed(s *Schedule) error {
	if want := BufLen(s.Op, s.Shape.N(), s.Elems); s.BufLen != want {
		return fmt.Errorf("BufLen %d, want %d", s.BufLen, want)
	}
	for si, st := range s.Steps {
		if len(st.Transfers) == 0 {
			return fmt.Errorf("step %d is empty", si)
		}
		for ti, t := range st.Transfers {
			if t.Len <= 0 {
				return fmt.Errorf("step %d transfer %d has length %d", si, ti, t.Len)
			}
			if ti > 0 {
				p := st.Transfers[ti-1]
				if p.Src == t.Src && p.Dst == t.Dst && p.Kind == t.Kind && p.SrcOff+p.Len == t.SrcOff && p.DstOff+p.Len == t.DstOff {
					return fmt.Errorf("step %d transfers %d and %d continue each other but were not merged", si, ti-1, ti)
				}
			}
		}
	}
	return nil
}

// TestBuildExecuteCheck is the property test: every supported (op, algorithm) on
// every test shape, size and parameter set builds a schedule that the executor runs
// to the reference result on every rank.
func TestBuildExecuteCheck(t *testing.T) {
	for _, algo := range Algorithms() {
		for _, op := range Ops() {
			t.Run(op.String()+"/"+algo.String(), func(t *testing.T) {
				t.Parallel()
				cases, failures := 0, 0
				for _, n := range testSizes {
					for _, ns := range testShapes(n) {
						if Supports(op, algo, ns.sh, true) != nil {
							continue
						}
						for ei, elems := range testElems(n) {
							for ch := 1; ch <= 3; ch++ {
								for ci, chunks := range []int{1, 4} {
									// Above 16 ranks, half the parameter sets (a different half for
									// each element count) keep the race run short.
									idx := 2*(ch-1) + ci + ei
									if n > 16 && idx%2 == 1 {
										continue
									}
									// Mesh rings and trees on every other case.
									mesh := idx%4 < 2
									p := Params{Channels: ch, Chunks: chunks, Root: (n/2 + ei*ch) % n, Mesh: mesh}
									desc := fmt.Sprintf("n=%d shape=%s elems=%d %+v", n, ns.name, elems, p)
									cases++
									if err := runCase(op, algo, ns.sh, elems, p); err != nil {
										t.Errorf("%s: %v", desc, err)
										if failures++; failures > 10 {
											t.Fatal("too many failures")
										}
									}
								}
							}
						}
					}
				}
				if cases == 0 && Supports(op, algo, uniformShape(2, 1), true) == nil {
					t.Fatal("no case ran")
				}
			})
		}
	}
}

func runCase(op Op, algo Algorithm, sh Shape, elems int64, p Params) error {
	s, err := Build(op, algo, sh, elems, p)
	if err != nil {
		return fmt.Errorf("build: %v", err)
	}
	if err := checkWellFormed(s); err != nil {
		return err
	}
	seed := uint64(sh.N())<<32 ^ uint64(elems)<<8 ^ uint64(p.Channels)<<4 ^ uint64(p.Chunks)
	rng := rand.New(rand.NewPCG(seed, uint64(op)<<8|uint64(algo)))
	in := randomInputs(rng, sh.N(), s.BufLen)
	out, err := Execute(s, in)
	if err != nil {
		return fmt.Errorf("execute: %v", err)
	}
	return Check(s, in, out)
}

// sentBy counts the elements rank r sends over links (local copies excluded).
func sentBy(s *Schedule, r int) int64 {
	var total int64
	for _, st := range s.Steps {
		for _, t := range st.Transfers {
			if int(t.Src) == r && t.Dst != t.Src {
				total += t.Len
			}
		}
	}
	return total
}

func TestRingAllReduceVolume(t *testing.T) {
	for _, n := range []int{2, 3, 4, 5, 8, 13, 16} {
		for _, ns := range testShapes(n) {
			for ch := 1; ch <= 3; ch++ {
				for _, d := range []int64{int64(n * 12), int64(n*12 + 5), int64(n - 1)} {
					mesh := ch == 3
					s, err := Build(AllReduce, Ring, ns.sh, d, Params{Channels: ch, Chunks: 1, Mesh: mesh})
					if err != nil {
						t.Fatal(err)
					}
					blocks := span{0, d}.blocks(n)
					for r := range n {
						// 2D minus, per channel, the pieces of the block it keeps (never
						// forwarded in reduce-scatter) and of its successor's block (never
						// forwarded in all-gather).
						want := 2 * d
						for c := range ch {
							order := channelRing(ns.sh, c, mesh)
							pos := 0
							for i, x := range order {
								if int(x) == r {
									pos = i
								}
							}
							succ := order[(pos+1)%n]
							want -= blocks[r].part(ch, c).len + blocks[succ].part(ch, c).len
						}
						if d%int64(n) == 0 && want != 2*int64(n-1)*d/int64(n) {
							t.Fatalf("n=%d d=%d: expectation %d is not 2(n−1)/n·D", n, d, want)
						}
						if got := sentBy(s, r); got != want {
							t.Errorf("n=%d %s channels=%d D=%d rank %d sends %d elements, want %d", n, ns.name, ch, d, r, got, want)
						}
					}
				}
			}
		}
	}
}

func TestStepCounts(t *testing.T) {
	ceilLog2 := func(n int) int { return bits.Len(uint(n - 1)) }
	for _, n := range []int{2, 3, 5, 8, 12, 16, 17, 32} {
		d := int64(n * 64)
		p := Params{Channels: 2, Chunks: 4}
		count := func(op Op, algo Algorithm, sh Shape, p Params) int {
			t.Helper()
			s, err := Build(op, algo, sh, d, p)
			if err != nil {
				t.Fatalf("%v/%v n=%d: %v", op, algo, n, err)
			}
			return len(s.Steps)
		}
		flat, spread := uniformShape(n, n), uniformShape(n, 1)
		if got, want := count(AllReduce, Ring, spread, p), 2*(n-1); got != want {
			t.Errorf("ring all-reduce n=%d: %d steps, want %d", n, got, want)
		}
		if got, want := count(AllGather, Ring, flat, p), n-1; got != want {
			t.Errorf("ring all-gather n=%d: %d steps, want %d", n, got, want)
		}
		if got, want := count(Broadcast, Ring, flat, p), p.Chunks+n-2; got != want {
			t.Errorf("ring broadcast n=%d: %d steps, want %d", n, got, want)
		}
		for _, op := range []Op{AllGather, ReduceScatter} {
			if got, want := count(op, PAT, spread, p), ceilLog2(n); got != want {
				t.Errorf("pat %v n=%d: %d steps, want %d", op, n, got, want)
			}
		}
		if got, want := count(AllToAll, Pairwise, flat, p), n-1; got != want {
			t.Errorf("pairwise n=%d: %d steps, want %d", n, got, want)
		}
		for _, chunks := range []int{1, 3, 8} {
			q := Params{Channels: 2, Chunks: chunks}
			if got, want := count(AllReduce, NVLS, flat, q), chunks+1; got != want {
				t.Errorf("nvls all-reduce n=%d chunks=%d: %d steps, want %d", n, chunks, got, want)
			}
		}
		if got := count(ReduceScatter, NVLS, flat, p); got != 1 {
			t.Errorf("nvls reduce-scatter n=%d: %d steps, want 1", n, got)
		}
		if got := count(AllReduce, Direct, spread, p); got != 2 {
			t.Errorf("direct all-reduce n=%d: %d steps, want 2", n, got)
		}
		for _, per := range []int{1, 2, 4, n} {
			if n%per != 0 {
				continue
			}
			m := n / per
			if got, want := count(AllReduce, Hierarchical, uniformShape(n, per), p), 2*(per-1)+2*(m-1); got != want {
				t.Errorf("hierarchical n=%d p=%d m=%d: %d steps, want %d", n, per, m, got, want)
			}
		}
		for _, ns := range testShapes(n) {
			for _, algo := range []Algorithm{Tree, DoubleTree} {
				trees := 1
				if algo == DoubleTree {
					trees = 2
				}
				H := 0
				for w := range trees {
					h := TreeHeights(TreeParents(ns.sh, w))
					for r, par := range TreeParents(ns.sh, w) {
						if par < 0 {
							H = max(H, h[r])
						}
					}
				}
				// Channel 1's tree is rotated inside each node; its height can differ.
				q := Params{Channels: 1, Chunks: 4}
				if got, want := count(AllReduce, algo, ns.sh, q), q.Chunks+2*H-1; got != want {
					t.Errorf("%v all-reduce n=%d %s: %d steps, want %d", algo, n, ns.name, got, want)
				}
			}
		}
	}
}

// TestTreeAllReduceTiming checks the documented step of every tree transfer.
func TestTreeAllReduceTiming(t *testing.T) {
	sh := uniformShape(12, 4)
	const chunks = 3
	s, err := Build(AllReduce, Tree, sh, 12*chunks*10, Params{Channels: 1, Chunks: chunks})
	if err != nil {
		t.Fatal(err)
	}
	parent := TreeParents(sh, 0)
	h, d := TreeHeights(parent), TreeDepths(parent)
	H := 0
	for r, p := range parent {
		if p < 0 {
			H = h[r]
		}
	}
	seen := 0
	for si, st := range s.Steps {
		for _, tr := range st.Transfers {
			j := int(tr.SrcOff / 10 / 12) // chunk index: chunks of 120 elements
			switch tr.Kind {
			case Add:
				if parent[tr.Src] != tr.Dst || si != j+h[tr.Src] {
					t.Errorf("step %d: up transfer %+v, want parent %d at step %d", si, tr, parent[tr.Src], j+h[tr.Src])
				}
			case Copy:
				if parent[tr.Dst] != tr.Src || si != j+H+d[tr.Src] {
					t.Errorf("step %d: down transfer %+v, want step %d", si, tr, j+H+d[tr.Src])
				}
			default:
				t.Errorf("unexpected %v", tr.Kind)
			}
			seen++
		}
	}
	if want := 2 * (sh.N() - 1) * chunks; seen != want {
		t.Errorf("%d transfers, want %d", seen, want)
	}
}

func TestTreeStructure(t *testing.T) {
	for _, n := range testSizes {
		for _, ns := range testShapes(n) {
			for w := range 2 {
				parent := TreeParents(ns.sh, w)
				if len(parent) != n {
					t.Fatalf("n=%d %s tree %d: %d parents", n, ns.name, w, len(parent))
				}
				d, h := TreeDepths(parent), TreeHeights(parent)
				if d == nil || h == nil {
					t.Fatalf("n=%d %s tree %d: not a tree: %v", n, ns.name, w, parent)
				}
				for r, p := range parent {
					if p >= 0 && (d[r] != d[p]+1 || h[p] < h[r]+1) {
						t.Fatalf("n=%d %s tree %d: inconsistent levels at rank %d", n, ns.name, w, r)
					}
				}
			}
		}
	}
	if TreeParents(uniformShape(4, 2), 2) != nil || TreeParents(Shape{}, 0) != nil || TreeParents(Shape{Node: []int32{1, 0}}, 0) != nil {
		t.Error("TreeParents accepted bad input")
	}
	// A chain 3→2→1→0 and a star.
	if got := TreeHeights([]int32{-1, 0, 1, 2}); fmt.Sprint(got) != "[3 2 1 0]" {
		t.Errorf("chain heights %v", got)
	}
	if got := TreeDepths([]int32{1, -1, 1, 1}); fmt.Sprint(got) != "[1 0 1 1]" {
		t.Errorf("star depths %v", got)
	}
	for _, bad := range [][]int32{{}, {0}, {-1, -1}, {1, 0}, {-1, 2, 1}, {-1, 5}, {-1, -3}, {1, 2, 0, -1}} {
		if TreeDepths(bad) != nil || TreeHeights(bad) != nil {
			t.Errorf("%v accepted as a tree", bad)
		}
	}
}

func TestBuildRejects(t *testing.T) {
	good := uniformShape(4, 2)
	ok := Params{Channels: 1, Chunks: 1}
	cases := []struct {
		name string
		op   Op
		algo Algorithm
		sh   Shape
		d    int64
		p    Params
		want string
	}{
		{"no ranks", AllReduce, Ring, Shape{}, 8, ok, "no ranks"},
		{"decreasing nodes", AllReduce, Ring, Shape{Node: []int32{0, 1, 0}}, 8, ok, "must not decrease"},
		{"negative elems", AllReduce, Ring, good, -1, ok, "elements"},
		{"huge elems", AllReduce, Ring, good, 1 << 62, ok, "elements"},
		{"zero channels", AllReduce, Ring, good, 8, Params{Chunks: 1}, "channels"},
		{"too many channels", AllReduce, Ring, good, 8, Params{Channels: MaxChannels + 1, Chunks: 1}, "channels"},
		{"zero chunks", AllReduce, Tree, good, 8, Params{Channels: 1}, "chunks"},
		{"too many chunks", AllReduce, Tree, good, 8, Params{Channels: 1, Chunks: MaxChunks + 1}, "chunks"},
		{"negative root", Broadcast, Ring, good, 8, Params{Channels: 1, Chunks: 1, Root: -1}, "root"},
		{"root out of range", Reduce, Tree, good, 8, Params{Channels: 1, Chunks: 1, Root: 4}, "root"},
		{"unknown op", Op(99), Ring, good, 8, ok, "unknown collective"},
		{"unknown algo", AllReduce, Algorithm(99), good, 8, ok, "unknown algorithm"},
		{"auto", AllReduce, Auto, good, 8, ok, "auto"},
		{"ring alltoall", AllToAll, Ring, good, 8, ok, "ring cannot run alltoall"},
		{"pairwise allreduce", AllReduce, Pairwise, good, 8, ok, "pairwise cannot run allreduce"},
		{"tree allgather", AllGather, DoubleTree, good, 8, ok, "dbtree cannot run allgather"},
		{"pat shared node", AllGather, PAT, good, 8, ok, "pat needs exactly one rank per node"},
		{"nvls across nodes", AllReduce, NVLS, good, 8, ok, "one scale-up domain"},
		{"nvls one rank", AllReduce, NVLS, uniformShape(1, 1), 8, ok, "at least 2 ranks"},
		{"hierarchical uneven", AllReduce, Hierarchical, Shape{Node: []int32{0, 0, 0, 1}}, 8, ok, "same number of ranks"},
		{"too many transfers", AllToAll, Direct, uniformShape(2048, 8), 1 << 20, ok, "transfers"},
		{"too many tree chunks", AllReduce, DoubleTree, uniformShape(512, 8), 1 << 30, Params{Channels: 64, Chunks: MaxChunks}, "transfers"},
	}
	for _, c := range cases {
		s, err := Build(c.op, c.algo, c.sh, c.d, c.p)
		if err == nil || s != nil {
			t.Errorf("%s: Build succeeded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
	}
	if err := Supports(AllReduce, NVLS, uniformShape(8, 8), false); err == nil || !strings.Contains(err.Error(), "NVLink SHARP") {
		t.Errorf("nvls without the hardware: %v", err)
	}
	if err := Supports(AllReduce, NVLS, uniformShape(8, 8), true); err != nil {
		t.Errorf("nvls on one node: %v", err)
	}
	// Hierarchical on one node degrades to the ring all-reduce.
	h, err := Build(AllReduce, Hierarchical, uniformShape(6, 6), 60, ok)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(AllReduce, Ring, uniformShape(6, 6), 60, ok)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(h.Steps) != fmt.Sprint(r.Steps) {
		t.Error("hierarchical on one node differs from the ring")
	}
}

// TestSupportsTable pins which (op, algorithm) pairs exist at all.
func TestSupportsTable(t *testing.T) {
	sh := uniformShape(8, 1)  // one rank per node: everything but NVLS
	one := uniformShape(8, 8) // one node: everything but PAT
	want := map[string]bool{}
	for a, ops := range algoOps {
		for _, o := range ops {
			want[o.String()+"/"+Algorithm(a).String()] = true
		}
	}
	for _, algo := range Algorithms() {
		for _, op := range Ops() {
			got := Supports(op, algo, sh, true) == nil || Supports(op, algo, one, true) == nil
			if k := op.String() + "/" + algo.String(); got != want[k] {
				t.Errorf("%s: supported=%v, want %v", k, got, want[k])
			}
		}
	}
	if len(want) != 26 {
		t.Errorf("%d supported pairs, want 26", len(want))
	}
}

// TestSmallCases covers one rank and zero elements for every algorithm.
func TestSmallCases(t *testing.T) {
	for _, algo := range Algorithms() {
		for _, op := range Ops() {
			for _, n := range []int{1, 2, 3} {
				for _, sh := range []Shape{uniformShape(n, n), uniformShape(n, 1)} {
					if Supports(op, algo, sh, true) != nil {
						continue
					}
					for _, d := range []int64{0, 1, 2} {
						for _, p := range []Params{{Channels: 1, Chunks: 1}, {Channels: 3, Chunks: 5, Root: n - 1}} {
							if err := runCase(op, algo, sh, d, p); err != nil {
								t.Errorf("%v/%v n=%d d=%d %+v: %v", op, algo, n, d, p, err)
							}
							s, _ := Build(op, algo, sh, d, p)
							if d == 0 && len(s.Steps) != 0 {
								t.Errorf("%v/%v n=%d: %d steps for no data", op, algo, n, len(s.Steps))
							}
						}
					}
				}
			}
		}
	}
}

// FuzzBuild builds and runs arbitrary parameter combinations: Build must return an
// error or a schedule that executes correctly, and never panic.
func FuzzBuild(f *testing.F) {
	f.Add(uint8(0), uint8(1), uint8(4), uint8(2), int64(37), 2, 3, 1)
	f.Add(uint8(1), uint8(7), uint8(5), uint8(1), int64(9), 1, 1, 0)
	f.Add(uint8(6), uint8(6), uint8(3), uint8(3), int64(0), 0, 1, 0)
	f.Add(uint8(4), uint8(3), uint8(9), uint8(4), int64(100), 3, 4, 7)
	f.Add(uint8(3), uint8(8), uint8(6), uint8(2), int64(-5), 1, -1, 2)
	f.Fuzz(func(t *testing.T, op, algo, n, per uint8, d int64, ch, chunks, root int) {
		if n > 40 || d > 2000 || ch > 8 || chunks > 8 {
			return
		}
		sh := uniformShape(int(n), max(1, int(per)))
		p := Params{Channels: ch, Chunks: chunks, Root: root}
		s, err := Build(Op(op), Algorithm(algo), sh, d, p)
		if err != nil {
			return
		}
		if err := runCase(s.Op, s.Algo, sh, d, p); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCompact(t *testing.T) {
	got := compact([]Transfer{
		{Kind: Copy, Src: 0, Dst: 1, SrcOff: 4, DstOff: 14, Len: 4},
		{Kind: Copy, Src: 0, Dst: 1, SrcOff: 0, DstOff: 10, Len: 4},  // continues into the first: merged
		{Kind: Copy, Src: 0, Dst: 1, SrcOff: 8, DstOff: 30, Len: 2},  // source continues, destination does not
		{Kind: Add, Src: 0, Dst: 1, SrcOff: 10, DstOff: 10, Len: 2},  // other kind
		{Kind: Copy, Src: 0, Dst: 2, SrcOff: 10, DstOff: 32, Len: 1}, // other destination
		{Kind: Copy, Src: 1, Dst: 2, SrcOff: 0, DstOff: 0, Len: 0},   // empty: dropped
	})
	want := []Transfer{
		{Kind: Copy, Src: 0, Dst: 1, SrcOff: 0, DstOff: 10, Len: 8},
		{Kind: Copy, Src: 0, Dst: 1, SrcOff: 8, DstOff: 30, Len: 2},
		{Kind: Add, Src: 0, Dst: 1, SrcOff: 10, DstOff: 10, Len: 2},
		{Kind: Copy, Src: 0, Dst: 2, SrcOff: 10, DstOff: 32, Len: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("compact:\n got %v\nwant %v", got, want)
	}
}
