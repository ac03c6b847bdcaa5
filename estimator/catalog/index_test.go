package catalog

import "testing"

// Every name and alias resolves to its own entry: no alias is shadowed by another
// entry's name or alias.
func TestIndexesHaveNoCollisions(t *testing.T) {
	for i, e := range gpuTable {
		for _, k := range append([]string{e.gpu.Name}, e.aliases...) {
			if j := gpuIndex[normalise(k)]; j != i {
				t.Errorf("GPU alias %q resolves to %s, want %s", k, gpuTable[j].gpu.Name, e.gpu.Name)
			}
		}
	}
	for i, e := range systemTable {
		for _, k := range append([]string{e.spec.Name}, e.aliases...) {
			if j := systemIndex[normalise(k)]; j != i {
				t.Errorf("system alias %q resolves to %s, want %s", k, systemTable[j].spec.Name, e.spec.Name)
			}
		}
		if e.spec.Name != normalise(e.spec.Name) {
			t.Errorf("system name %q is not in normal form", e.spec.Name)
		}
	}
}
