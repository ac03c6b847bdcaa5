package server

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind. Nothing is
// ignored: whatever the daemon starts (gRPC servers and the gateway's connection,
// the cache's ristretto workers, the telemetry providers) must end when Run returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
