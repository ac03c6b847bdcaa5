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
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
