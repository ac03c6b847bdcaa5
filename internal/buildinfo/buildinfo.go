// Package buildinfo says which build of stepcost is running: the module version and
// the commit it was built from, as the Go toolchain records them in the binary.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Info identifies a build.
type Info struct {
	// Version is the main module's version: a release tag, a pseudo-version, or
	// "(devel)" for a build from a checkout.
	Version string
	// Commit is the VCS revision (12 hex digits), Time its commit time (RFC 3339),
	// Modified whether the work tree had uncommitted changes; empty when the build
	// did not record them (go run, tests).
	Commit, Time string
	Modified     bool
	// Go is the toolchain version.
	Go string
}

// Read returns the running binary's build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	in := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value[:min(12, len(s.Value))]
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	return in
}

// String is one line: version, commit (marked when modified) and its time, Go.
func (i Info) String() string {
	s := i.Version
	if i.Commit != "" {
		s += " commit " + i.Commit
		if i.Modified {
			s += " (modified)"
		}
	}
	if i.Time != "" {
		s += " " + i.Time
	}
	if i.Go != "" {
		s += fmt.Sprintf(" %s", i.Go)
	}
	return s
}

// EstimatorVersion identifies the models behind the answers; it changes whenever a
// formula or a calibrated constant does, so that clients can tell answers apart.
const EstimatorVersion = "stepcost-2026.11.29.1"

// Version is the one-line answer to --version of the stepcost binaries: the build
// (module version, commit, Go) and the estimator version.
func Version(program string) string {
	return program + " " + Read().String() + ", estimator " + EstimatorVersion
}
