package server

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// stepcostd --version: ParseFlags says so, and Version names the program, the build
// and the estimator.
func TestVersionFlag(t *testing.T) {
	if _, err := ParseFlags([]string{"--version"}, io.Discard); !errors.Is(err, ErrVersion) {
		t.Errorf("--version: %v", err)
	}
	if v := Version("stepcostd"); !strings.HasPrefix(v, "stepcostd ") || !strings.HasSuffix(v, "estimator "+EstimatorVersion) {
		t.Errorf("Version = %q", v)
	}
}
