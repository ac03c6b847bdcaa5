// Command stepcost estimates LLM training communication and step time on GPU
// clusters, in-process, from the embedded catalog or a cluster file.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/stepcost/stepcost/cmd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal cancels the command; once it has, the signals' default
	// comes back, so a second ends the process even where the command cannot
	// see the cancellation (a read of a standard input that never comes).
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
