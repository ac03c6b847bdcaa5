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

// --version is an action, not a setting: STEPCOST_VERSION in the environment (a
// deployment recording the version it runs, "2026.11.28" or "true") neither makes
// the daemon print its version and exit 0 at every start (a pod that completes and
// restarts for ever) nor fails it as a bad value; the flag still works.
func TestVersionIsNotReadFromTheEnvironment(t *testing.T) {
	for _, v := range []string{"true", "1", "2026.11.28"} {
		t.Setenv("STEPCOST_VERSION", v)
		if _, err := ParseFlags(nil, io.Discard); err != nil {
			t.Errorf("STEPCOST_VERSION=%s: %v", v, err)
		}
		if _, err := ParseFlags([]string{"--version"}, io.Discard); !errors.Is(err, ErrVersion) {
			t.Errorf("STEPCOST_VERSION=%s --version: %v", v, err)
		}
	}
}
