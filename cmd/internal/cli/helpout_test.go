package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// full is a standard output on a full disk.
type full struct{}

func (full) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// Help asked for and not written (a full disk, a closed pipe) exits 1 saying so,
// as every command's output does; it exited 0 with nothing written.
func TestHelpNotWrittenFails(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"plan", "--help"}, {"help", "estimate"}, {"rank", "-h"}} {
		var e bytes.Buffer
		code := Run(context.Background(), args, full{}, &e)
		if code != exitFailure || !strings.Contains(e.String(), "standard output: no space left on device") {
			t.Errorf("%q to a full disk: exit %d, %q", args, code, e.String())
		}
	}
}

// catalog's help says it lists the models too, as its output does (the README:
// "GPUs, systems and models"): it said "list the GPUs and systems of the embedded
// catalog".
func TestCatalogHelpNamesTheModels(t *testing.T) {
	code, out, _ := run("catalog")
	if code != exitOK || !strings.Contains(out, "llama3-70b") {
		t.Fatalf("catalog: exit %d, no models:\n%.300s", code, out)
	}
	for _, args := range [][]string{{"--help"}, {"catalog", "--help"}} {
		code, out, errOut := run(args...)
		var line string
		for l := range strings.Lines(out) {
			if strings.Contains(strings.ToLower(l), "embedded catalog") {
				line = l
			}
		}
		if code != exitOK || !strings.Contains(line, "models") {
			t.Errorf("%v: exit %d %s: catalog's line %q does not name the models", args, code, errOut, line)
		}
	}
}

// load's help describes --server as it works — any daemon's gRPC address, over
// TLS and with a token as that daemon requires — where it said "stepcostd gRPC
// address (loopback)", and its usage line lists --uncached, which its example
// uses and the README's usage gives.
func TestLoadHelpServerAndUncached(t *testing.T) {
	code, out, errOut := run("load", "--help")
	var server, usage string
	for l := range strings.Lines(out) {
		if strings.Contains(l, "--server string") {
			server = l
		}
		if strings.HasPrefix(strings.TrimSpace(l), "stepcost load --server host:port") && usage == "" {
			usage = l
		}
	}
	if code != exitOK || strings.Contains(server, "loopback") || !strings.Contains(server, "gRPC address") || !strings.Contains(usage, "[--uncached]") {
		t.Errorf("exit %d %s: --server line %q, usage %q", code, errOut, server, usage)
	}
}
