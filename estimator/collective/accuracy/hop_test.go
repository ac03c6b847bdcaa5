package accuracy_test

import (
	"testing"

	"github.com/stepcost/stepcost/estimator/collective/accuracy"
	"github.com/stepcost/stepcost/estimator/topology"
)

// The fit's scale-up hop is NVSwitch's: an override moves the NVSwitch systems' hop and
// leaves an AMD GPU's Infinity Fabric hop (topology.MeshHopLatencyUs) as it is.
func TestFittedHopIsNVSwitchs(t *testing.T) {
	rows, err := accuracy.Rows()
	if err != nil {
		t.Fatal(err)
	}
	var cases []accuracy.Case
	for _, c := range accuracy.Cases(rows) {
		if c.Spec.Name != "" && c.Spec.Nodes == 1 && (c.Spec.Intra.Kind == topology.Mesh || c.Spec.Intra.Kind == topology.NVSwitch && c.Spec.Intra.DomainNodes <= 1) {
			cases = append(cases, c)
		}
	}
	const hop = 2.5
	kinds := map[topology.IntraKind]int{}
	for _, p := range accuracy.PrepareWith(cases, accuracy.Links{IntraLatencyUs: hop}) {
		if p.Err != nil {
			t.Fatalf("%s: %v", p.Row.ID, p.Err)
		}
		kind := p.Spec.Intra.Kind
		kinds[kind]++
		want := hop
		if kind == topology.Mesh {
			want = topology.MeshHopLatencyUs
		}
		if got := p.Placement.Cluster.IntraLatUs; got != want {
			t.Errorf("%s (%s): scale-up hop %g µs, want %g", p.Row.ID, kind, got, want)
		}
	}
	if kinds[topology.Mesh] == 0 || kinds[topology.NVSwitch] == 0 {
		t.Errorf("one-node rows by fabric %v, want both", kinds)
	}
}
