package model

import "testing"

func TestCatalogKeysAreUnique(t *testing.T) {
	seen := map[string]string{}
	for _, e := range entries() {
		for _, n := range append([]string{e.arch.Name}, e.aliases...) {
			k := lookupKey(n)
			if other, dup := seen[k]; dup {
				t.Errorf("%q of %s normalises to %q, already used by %s", n, e.arch.Name, k, other)
			}
			seen[k] = e.arch.Name
		}
	}
}
