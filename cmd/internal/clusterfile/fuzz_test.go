package clusterfile_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stepcost/stepcost/cmd/internal/clusterfile"
	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/invalid"
)

// FuzzParse reads arbitrary cluster files as YAML, as JSON and by content. A file is
// either refused with an error that says where (a field, a line) or gives a spec
// that builds and reads back the same from its own JSON; JSON read as YAML (a JSON
// object is a YAML flow mapping) gives the same spec as read as JSON.
//
//	go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 5m ./cmd/internal/clusterfile/
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		name := []string{"c.yaml", "c.json", "-"}[format%3]
		start := time.Now()
		spec, err := clusterfile.Parse(data, name)
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("took %v", took)
		}
		if err != nil {
			msg := err.Error()
			switch {
			case !strings.HasPrefix(msg, name+": "):
				t.Fatalf("error does not name the file: %v", err)
			case invalid.Is(err), errors.Is(err, catalog.ErrSyntax), errors.Is(err, clusterfile.ErrTooLarge),
				strings.HasPrefix(msg, name+": invalid YAML: "), strings.HasSuffix(msg, "more than one YAML document"):
			default:
				t.Fatalf("error is neither a field error nor a syntax error: %v", err)
			}
			return
		}
		if _, err := spec.Build(); err != nil {
			t.Fatalf("accepted spec does not build: %v", err)
		}
		j, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("accepted spec does not marshal: %v", err)
		}
		// Specs are compared by their JSON, where an empty list and none are the same.
		back, err := clusterfile.Parse(j, "back.json")
		if jb, _ := json.Marshal(back); err != nil || !bytes.Equal(jb, j) {
			t.Fatalf("spec does not read back from its JSON:\n got %s, %v\nwant %s", jb, err, j)
		}
		if name != "c.yaml" && json.Valid(data) {
			y, err := clusterfile.Parse(data, "c.yaml")
			if jy, _ := json.Marshal(y); err != nil || !bytes.Equal(jy, j) {
				t.Fatalf("JSON read as YAML:\n got %s, %v\nwant %s", jy, err, j)
			}
		}
	})
}
