package calibrate_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stepcost/stepcost/estimator/calibrate"
	"github.com/stepcost/stepcost/estimator/topology"
)

// checkReader is what every fuzz target of a reader checks beyond its own
// properties: a refusal is a *calibrate.FileError naming the file read and
// saying why, and the same bytes read twice give the same answer or the same
// refusal (a reader keeps no state between files).
func checkReader[T any](t *testing.T, name string, read func() (T, error)) (T, error) {
	t.Helper()
	v, err := read()
	again, errAgain := read()
	if (err == nil) != (errAgain == nil) || err != nil && err.Error() != errAgain.Error() {
		t.Fatalf("read twice: %v, then %v", err, errAgain)
	}
	if err == nil && !reflect.DeepEqual(v, again) {
		t.Fatalf("read twice: %+v, then %+v", v, again)
	}
	if err != nil {
		var fe *calibrate.FileError
		if !errors.As(err, &fe) || fe.File != name || strings.TrimSpace(fe.Msg) == "" || fe.Line < 0 {
			t.Fatalf("a refusal that does not name the file %s and say why: %T %v", name, err, err)
		}
	}
	return v, err
}

// checkRelease asserts that the NCCL release a reader kept is one
// topology.ParseNCCLRelease takes, or none.
func checkRelease(t *testing.T, s calibrate.Sweep) {
	t.Helper()
	if s.NCCL == "" {
		return
	}
	if _, _, err := topology.ParseNCCLRelease(s.NCCL); err != nil {
		t.Fatalf("kept NCCL release %q: %v", s.NCCL, err)
	}
}
