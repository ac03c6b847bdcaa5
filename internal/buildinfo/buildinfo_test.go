package buildinfo

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	i := Info{Version: "v1.2.3", Commit: "0123456789ab", Time: "2026-11-24T15:00:00Z", Modified: true, Go: "go1.26.8"}
	if got, want := i.String(), "v1.2.3 commit 0123456789ab (modified) 2026-11-24T15:00:00Z go1.26.8"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	// A test binary has build information: at least a version and the toolchain.
	r := Read()
	if r.Version == "" || !strings.HasPrefix(r.Go, "go") {
		t.Errorf("Read() = %+v", r)
	}
}
