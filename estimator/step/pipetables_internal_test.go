package step

import "testing"

// Compiled schedules depend on no model or cluster, so estimators that share a
// Schedules memo compile each schedule once; an estimator's own memo is its own;
// the memo starts again empty past maxSharedBlocks.
func TestPipeTablesShared(t *testing.T) {
	shared := NewSchedules()
	a, err := New().ShareSchedules(shared).pipe(ZeroBubbleV, 4, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New().ShareSchedules(shared).pipe(ZeroBubbleV, 4, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("two estimators sharing a memo compiled the same schedule twice")
	}
	own, err := New().pipe(ZeroBubbleV, 4, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	if own == a {
		t.Error("an estimator without ShareSchedules used another estimator's memo")
	}
	fresh, err := compilePipe(ZeroBubbleV, 4, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.nodes) != len(fresh.nodes) {
		t.Fatalf("shared table has %d blocks, a fresh one %d", len(a.nodes), len(fresh.nodes))
	}
	for i := range a.nodes {
		if a.nodes[i] != fresh.nodes[i] {
			t.Fatalf("block %d: shared %+v, fresh %+v", i, a.nodes[i], fresh.nodes[i])
		}
	}

	tables := NewSchedules()
	if _, err := tables.get(OneFOneB, 4, 1, 8); err != nil {
		t.Fatal(err)
	}
	tables.blocks = maxSharedBlocks - 1 // as if full
	g, err := tables.get(GPipe, 4, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables.m) != 1 || tables.blocks != len(g.nodes) {
		t.Errorf("past the bound: %d tables of %d blocks kept, want only the new one (%d blocks)", len(tables.m), tables.blocks, len(g.nodes))
	}
}
