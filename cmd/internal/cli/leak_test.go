package cli

import (
	"context"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind: the daemons the
// tests run in process and the commands' gRPC clients must all be shut down.
// Nothing is ignored.
func TestMain(m *testing.M) {
	if os.Getenv("STEPCOST_TEST_AS_CLI") == "1" { // the test binary standing in for stepcost (TestBashCompletes)
		os.Exit(Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}
