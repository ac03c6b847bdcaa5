package cli

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind: the daemons the
// tests run in process and the commands' gRPC clients must all be shut down.
// Nothing is ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
