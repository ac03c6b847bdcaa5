package server

import (
	"os"
	"strings"
	"testing"
)

// docStates fails unless the doc (a path from the repository's root) states
// figures, the text a test computed from the answers, line breaks aside: a figure
// docs/service.md quotes for a request is what the service answers for it.
func docStates(t *testing.T, doc, figures string) {
	t.Helper()
	data, err := os.ReadFile("../" + doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(data)), " "), figures) {
		t.Errorf("%s does not state %q, what the service answers", doc, figures)
	}
}
