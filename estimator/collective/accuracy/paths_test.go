package accuracy_test

import (
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/collective"
	"github.com/stepcost/stepcost/estimator/collective/accuracy"
)

// ByPath splits a class into groups that cover it exactly once, largest first, and
// every group's rows cross the fabric its name says.
func TestByPathPartitionsAClass(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	rs := accuracy.Evaluate(collective.NewModel(collective.Default()), accuracy.Cases(rows))
	for _, c := range []struct {
		name string
		keep func(accuracy.Result) bool
	}{
		{"1–64 MiB", func(r accuracy.Result) bool { return r.Bytes >= accuracy.MiB && r.Bytes < 64*accuracy.MiB }},
		{"multi-node ≥ 1 MiB", func(r accuracy.Result) bool { return accuracy.MultiNode(r) && r.Bytes >= accuracy.MiB }},
	} {
		groups := accuracy.ByPath(rs, c.keep)
		total := 0
		for i, g := range groups {
			total += g.N
			if i > 0 && g.N > groups[i-1].N {
				t.Errorf("%s: group %q (%d rows) after %q (%d rows)", c.name, g.Label, g.N, groups[i-1].Label, groups[i-1].N)
			}
		}
		if want := accuracy.Summarise(c.name, rs, c.keep).N; total != want || want == 0 {
			t.Errorf("%s: groups hold %d rows, the class %d", c.name, total, want)
		}
		for _, r := range rs {
			if !r.Scored || r.Err != nil || !c.keep(r) {
				continue
			}
			multi, fab := accuracy.MultiNode(r), accuracy.Fabric(r)
			if multi == (fab == "one node") || !strings.HasPrefix(accuracy.PathOf(r), fab+" "+r.Op.String()+" ") {
				t.Errorf("%s: row %s (multi-node %v) in group %q", c.name, r.Row.ID, multi, accuracy.PathOf(r))
			}
		}
	}
	// Rows across p4d/p4de's EFA (no in-order 128-byte delivery) are priced with Simple.
	simpleOnly := func(r accuracy.Result) bool { return accuracy.MultiNode(r) && r.Spec.NICs.SimpleProtocolOnly }
	groups := accuracy.ByPath(rs, simpleOnly)
	if len(groups) == 0 {
		t.Fatal("no multi-node row on a Simple-only network")
	}
	for _, g := range groups {
		if !strings.HasSuffix(g.Label, "/simple") {
			t.Errorf("%d rows on a Simple-only network priced as %q", g.N, g.Label)
		}
	}
}
