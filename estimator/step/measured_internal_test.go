package step

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// loadMeasured reads testdata/<name>, one published measurement a line (JSON
// Lines), refusing unknown fields and any row its own check refuses, so a
// mistyped field name fails the test instead of reading as zero.
func loadMeasured[T interface{ validate() error }](t *testing.T, name string) []T {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var m T
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s line %d: %v", name, line, err)
		}
		if err := m.validate(); err != nil {
			t.Fatalf("%s line %d: %v", name, line, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
