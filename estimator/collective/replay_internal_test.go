package collective

import (
	"strings"
	"testing"
)

// The executed copy of a large schedule must be the same schedule on fewer
// elements; sameStructure is what makes that claim checked rather than assumed.
func TestVerifyCopyHasTheSameTransfers(t *testing.T) {
	sh := Shape{Node: []int32{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}}
	for _, c := range []struct {
		op   Op
		algo Algorithm
		p    Params
	}{
		{AllReduce, Ring, Params{Channels: 12, Chunks: 1}},
		{AllReduce, DoubleTree, Params{Channels: 12, Chunks: 40}},
		{AllReduce, Tree, Params{Channels: 4, Chunks: 7}},
		{AllReduce, Hierarchical, Params{Channels: 4, Chunks: 1}},
		{Broadcast, Ring, Params{Channels: 12, Chunks: 30}},
		{Reduce, Ring, Params{Channels: 12, Chunks: 30}},
		{AllToAll, Pairwise, Params{Channels: 1, Chunks: 1}},
		{AllGather, Ring, Params{Channels: 5, Chunks: 1, Mesh: true}},
	} {
		for _, elems := range []int64{1 << 30, 1<<30 + 12345} {
			s, err := Build(c.op, c.algo, sh, elems, c.p)
			if err != nil {
				t.Fatal(err)
			}
			small, err := verifyCopy(s)
			if err != nil {
				t.Fatalf("%v/%v: %v", c.op, c.algo, err)
			}
			if small == s || small.Elems >= s.Elems || cells(small.Op, sh.N(), small.Elems) > MaxReplayCells {
				t.Fatalf("%v/%v: copy of %d elements for %d", c.op, c.algo, small.Elems, s.Elems)
			}
			if err := sameStructure(s, small); err != nil {
				t.Errorf("%v/%v %d elements: %v", c.op, c.algo, elems, err)
			}
			if v := verify(small); !v.Verified {
				t.Errorf("%v/%v: %+v", c.op, c.algo, v)
			}
		}
	}

	// A copy with a step less, or a transfer going elsewhere, is caught.
	s, err := Build(AllReduce, Ring, sh, 1<<20, Params{Channels: 2, Chunks: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(AllReduce, Ring, sh, 1000, Params{Channels: 2, Chunks: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameStructure(s, b); err != nil {
		t.Fatalf("equal structures differ: %v", err)
	}
	b.Steps = b.Steps[1:]
	if err := sameStructure(s, b); err == nil || !strings.Contains(err.Error(), "steps") {
		t.Errorf("step dropped: %v", err)
	}
	b, _ = Build(AllReduce, Ring, sh, 1000, Params{Channels: 2, Chunks: 1})
	b.Steps[3].Transfers[2].Dst++
	if err := sameStructure(s, b); err == nil || !strings.Contains(err.Error(), "step 3 transfer 2") {
		t.Errorf("transfer redirected: %v", err)
	}
}
